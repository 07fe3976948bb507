#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "rooflinepy's C++ core: operator costs, device ceilings, roofline evaluation";
    m.attr("__version__") = roofline::version();
    register_errors(m);
    register_format(m);
    register_device(m);
    register_op(m);
    register_roofline(m);
    register_calibration(m);
    register_quant(m);
    register_gguf(m);
    register_inference(m);
    register_sweep(m);
    register_names(m);
    auto ops = m.def_submodule("ops", "Operator cost builders; each returns an OpCost");
    register_ops(ops);
}
