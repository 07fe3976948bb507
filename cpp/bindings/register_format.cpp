#include "bindings.hpp"

using namespace roofline;

void register_format(py::module_& m) {
    m.def("dtypes", &dtype_names, "Names of the number formats devices have peaks for");
    m.def(
        "format_info",
        [](const std::string& name) {
            const Format f = parse_format(name);
            py::dict d;
            d["name"] = f.name;
            d["bits_per_element"] = f.bits_per_element;
            d["bytes_per_element"] = f.bytes_per_element();
            d["compute"] = std::string(dtype_name(f.compute));
            d["dequant_flops_per_element"] = f.dequant_flops_per_element;
            return d;
        },
        py::arg("name"), "A storage format's bits per element (scales included), compute format and dequantization work");
}

void register_names(py::module_& m) {
    m.def("unknown_name_message", &roofline::unknown_name_message, py::arg("what"), py::arg("bad"), py::arg("candidates"),
          "The core's 'unknown X; did you mean Y? valid: ...' message");
}
