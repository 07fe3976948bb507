#include "bindings.hpp"

#include "roofline/weights.hpp"

using namespace roofline;

void register_weights(py::module_& m) {
    m.def("quant_names", &quant_names, "Every quantization: llama.cpp mixes, then GPU schemes");
    m.def(
        "weight_bytes", [](const Model& mod, const std::string& quant) { return weight_bytes(mod, quant, format_of(DType::bf16)); },
        py::arg("model"), py::arg("quant"), "Bytes of every weight tensor under `quant` (unquantized tensors in bf16)");
    m.def(
        "tensor_formats",
        [](const Model& mod, const std::string& quant) {
            py::list out;
            const auto formats = tensor_formats(mod, quant, format_of(DType::bf16));
            for (std::size_t i = 0; i < mod.tensors.size(); ++i) {
                py::dict d;
                d["name"] = mod.tensors[i].name;
                d["role"] = mod.tensors[i].role;
                d["layer"] = mod.tensors[i].layer;
                d["shape"] = mod.tensors[i].shape;
                d["elements"] = mod.tensors[i].elements();
                d["type"] = formats[i].type_name;
                d["bytes"] = formats[i].bytes;
                out.append(d);
            }
            return out;
        },
        py::arg("model"), py::arg("quant"), "Every weight tensor with its format and bytes under `quant`");
}
