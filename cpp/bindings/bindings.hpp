// Included first by every binding file. Bindings translate types and exceptions; no model arithmetic here.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "roofline/roofline_all.hpp"

namespace py = pybind11;

// A field of a core field table as Python sees it: numbers and flags as they are, a phase's bound by its name.
template <class T>
const T& to_py(const T& v) {
    return v;
}
inline const std::string& to_py(roofline::PhaseBound b) { return roofline::phase_bound_names()[static_cast<std::size_t>(b)]; }

void register_errors(py::module_& m);
void register_format(py::module_& m);
void register_device(py::module_& m);
void register_op(py::module_& m);
void register_ops(py::module_& m);
void register_roofline(py::module_& m);
void register_roofline_functions(py::module_& m);
void register_calibration(py::module_& m);
void register_quant(py::module_& m);
void register_gguf(py::module_& m);
void register_data(py::module_& m);
void register_model(py::module_& m);
void register_weights(py::module_& m);
void register_kv_cache(py::module_& m);
void register_engine(py::module_& m);
void register_estimate(py::module_& m);
void register_plan(py::module_& m);
void register_speculative(py::module_& m);
void register_efficiency_fit(py::module_& m);
void register_engine_fit(py::module_& m);
void register_deployment(py::module_& m);
void register_serving(py::module_& m);
void register_figures(py::module_& m);
void register_validation(py::module_& m);
void register_sweep(py::module_& m);
void register_names(py::module_& m);

/// A measured point from the dict Python's validation loader builds (register_validation.cpp).
roofline::ValidationCase validation_case(const py::dict& row, const roofline::Model* model, const roofline::Device* device);
