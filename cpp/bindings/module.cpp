#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "rooflinepy's C++ core: operator costs, device ceilings, roofline evaluation";
    m.attr("__version__") = roofline::version();
    register_errors(m);
    register_format(m);
    register_op(m);         // OpCost, CeilingTimes and Timing before Device, whose methods take and return them
    register_roofline(m);
    register_device(m);
    register_roofline_functions(m);
    register_calibration(m);
    register_quant(m);
    register_gguf(m);
    register_data(m);
    register_model(m);
    register_weights(m);
    register_kv_cache(m);
    register_engine(m);
    register_estimate(m);
    register_plan(m);
    register_speculative(m);
    register_efficiency_fit(m);
    register_engine_fit(m);
    register_deployment(m);
    register_serving(m);
    register_figures(m);
    register_validation(m);
    register_sweep(m);
    register_names(m);
    auto ops = m.def_submodule("ops", "Operator cost builders; each returns an OpCost");
    register_ops(ops);
}
