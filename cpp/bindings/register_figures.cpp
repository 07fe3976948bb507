#include "bindings.hpp"

#include "roofline/figures.hpp"

using namespace roofline;

void register_figures(py::module_& m) {
    py::class_<RidgeShiftPoint>(m, "RidgeShiftPoint", "One device of a ridge-shift comparison")
        .def_readonly("device", &RidgeShiftPoint::device)
        .def_readonly("release_year", &RidgeShiftPoint::release_year)
        .def_property_readonly("unit", [](const RidgeShiftPoint& p) { return std::string(unit_name(p.unit)); })
        .def_readonly("peak_flops_per_s", &RidgeShiftPoint::peak_flops_per_s)
        .def_readonly("bandwidth_Bps", &RidgeShiftPoint::bandwidth_Bps)
        .def_readonly("ridge_flop_per_byte", &RidgeShiftPoint::ridge_flop_per_byte)
        .def_readonly("ridge_per_element", &RidgeShiftPoint::ridge_per_element)
        .def_readonly("compute_growth", &RidgeShiftPoint::compute_growth)
        .def_readonly("bandwidth_growth", &RidgeShiftPoint::bandwidth_growth);
    m.def(
        "ridge_shift",
        [](const std::vector<const Device*>& devices, const std::string& dtype, const std::string& unit) {
            return ridge_shift(devices, parse_dtype(dtype), parse_unit(unit));
        },
        py::arg("devices"), py::arg("dtype") = "fp16", py::arg("unit") = "matrix",
        "Compute and bandwidth growth relative to the first device, and each device's ridge point");
    m.def("scaling_exponent", &scaling_exponent, py::arg("x"), py::arg("y"),
          "k of y ∝ x^k between the last two points (NaN when undefined)");
}
