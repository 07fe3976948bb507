#include "bindings.hpp"

#include "roofline/llama_quant.hpp"
#include "roofline/quant.hpp"

#include <utility>

using namespace roofline;

void register_quant(py::module_& m) {
    m.def("format_names", &format_names,
          "Every storage format name: number formats, GGML tensor types and GPU weight formats");
    m.def(
        "ggml_types",
        []() {
            py::list out;
            for (const auto& name : ggml_type_names()) {
                const GgmlTypeInfo& t = ggml_type_info(name);
                py::dict d;
                d["id"] = t.id;
                d["name"] = std::string(t.name);
                d["block_size"] = t.block_size;
                d["type_size"] = t.type_size;
                d["bits_per_element"] = t.bits_per_element();
                out.append(d);
            }
            return out;
        },
        "GGML tensor types: id, name, block_size (elements), type_size (bytes per block), bits_per_element");
    m.def("llama_mix_names", &llama_mix_names, "llama.cpp file types (quantization mixes) the core reproduces");
    m.def(
        "llama_mix_types",
        [](const std::string& mix, const std::vector<std::pair<std::string, std::vector<double>>>& tensors,
           const std::string& arch, int n_layer, int n_head, int n_head_kv, int n_expert, bool imatrix, bool pure,
           bool quantize_output_tensor) {
            std::vector<QuantTensor> ts;
            ts.reserve(tensors.size());
            for (const auto& [name, shape] : tensors) ts.push_back(QuantTensor{name, shape});
            const QuantModelInfo info{arch, n_layer, n_head, n_head_kv, n_expert};
            LlamaQuantOptions opt;
            opt.imatrix = imatrix;
            opt.pure = pure;
            opt.quantize_output_tensor = quantize_output_tensor;
            std::vector<std::string> names;
            names.reserve(ts.size());
            for (int id : llama_mix_types(mix, ts, info, opt)) names.emplace_back(ggml_type_info(id)->name);
            return names;
        },
        py::arg("mix"), py::arg("tensors"), py::arg("arch"), py::arg("n_layer"), py::arg("n_head"),
        py::arg("n_head_kv"), py::arg("n_expert") = 0, py::kw_only(), py::arg("imatrix") = false,
        py::arg("pure") = false, py::arg("quantize_output_tensor") = true,
        "GGML type name llama.cpp's quantizer gives each (name, shape) tensor for file type `mix` (shape ne0 first), "
        "in the order given");
}
