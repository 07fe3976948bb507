#include "roofline/weights.hpp"

#include "roofline/errors.hpp"
#include "roofline/llama_quant.hpp"
#include "roofline/quant.hpp"

#include <algorithm>

namespace roofline {

namespace {

// GPU weight schemes accepted by tensor_formats besides llama.cpp's mixes.
const std::vector<std::string> kGpuSchemes = {
    "fp16", "bf16", "fp32", "fp8", "int8", "int8-wo", "int4-g32", "int4-g64", "int4-g128", "nvfp4", "mxfp4",
    "mlx-q2", "mlx-q3", "mlx-q4", "mlx-q5", "mlx-q6", "mlx-q8", "mlx-q2-g32", "mlx-q3-g32", "mlx-q4-g32",
    "mlx-q5-g32", "mlx-q6-g32", "mlx-q8-g32", "mlx-q2-g128", "mlx-q3-g128", "mlx-q4-g128", "mlx-q5-g128",
    "mlx-q6-g128", "mlx-q8-g128", "mlx-mxfp4", "mlx-nvfp4", "mlx-mxfp8"};
// mlx-lm's convert quantizes every nn.Linear and nn.Embedding, the input embedding included (mlx-lm@d78bf58e
// utils.py quantize_model); the other schemes keep the embedding table in 16 bits.
bool quantizes_embedding(const std::string& scheme) { return scheme.rfind("mlx-", 0) == 0; }
}  // namespace

std::vector<std::string> quant_names() {
    std::vector<std::string> names = llama_mix_names();
    for (const auto& s : kGpuSchemes) names.push_back(s);
    return names;
}

bool is_quant_name(std::string_view name) {
    if (is_llama_mix(name)) return true;
    const std::string l = to_lower(name);
    return l == "gguf" || std::find(kGpuSchemes.begin(), kGpuSchemes.end(), l) != kGpuSchemes.end();
}

std::vector<TensorFormat> tensor_formats(const Model& model, std::string_view quant, const Format& unquantized) {
    const auto& tensors = model.tensors;
    const auto& file_types = model.file_types;
    const Architecture& arch = model.arch;
    std::vector<TensorFormat> out;
    out.reserve(tensors.size());
    const std::string q = to_lower(quant);
    if (q == "gguf") {
        if (file_types.size() != tensors.size())
            throw InvalidArgument("quant 'gguf' (the file's own tensor types) needs a model read from a GGUF file");
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const GgmlTypeInfo* t = ggml_type_info(file_types[i]);
            if (!t) throw InvalidArgument("tensor '" + tensors[i].name + "' has unknown ggml type " + std::to_string(file_types[i]));
            out.push_back({format_of(*t), ggml_tensor_bytes(*t, tensors[i].elements(), tensors[i].shape.empty() ? 1 : tensors[i].shape[0]), t->name});
        }
        return out;
    }
    if (is_llama_mix(q)) {
        std::vector<QuantTensor> qt;
        qt.reserve(tensors.size());
        for (const auto& t : tensors) qt.push_back({t.name, t.shape});
        const std::vector<int> types =
            llama_mix_types(quant, qt, QuantModelInfo{arch.gguf_arch, arch.n_layer, arch.n_head, arch.n_kv_head, arch.n_expert});
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const GgmlTypeInfo* t = ggml_type_info(types[i]);
            out.push_back({format_of(*t), ggml_tensor_bytes(*t, tensors[i].elements(), tensors[i].shape.empty() ? 1 : tensors[i].shape[0]), t->name});
        }
        return out;
    }
    if (std::find(kGpuSchemes.begin(), kGpuSchemes.end(), q) == kGpuSchemes.end())
        throw NotFound(unknown_name_message("quantization", quant, quant_names()));
    const Format weight = parse_format(q);
    for (const auto& t : tensors) {
        const bool quantized = (is_linear_role(t.role) || (t.role == "token_embd" && quantizes_embedding(q))) && t.is_matrix();
        const Format& f = quantized ? weight : unquantized;
        out.push_back({f, t.elements() * f.bytes_per_element(), f.name});
    }
    return out;
}

double weight_bytes(const Model& model, std::string_view quant, const Format& unquantized) {
    double total = 0;
    for (const auto& t : tensor_formats(model, quant, unquantized)) total += t.bytes;
    return total;
}

std::vector<TensorFormat> estimate_tensor_formats(const Model& model, std::string_view quant) {
    return tensor_formats(model, quant, to_lower(quant) == "fp16" ? format_of(DType::fp16) : format_of(DType::bf16));
}

}  // namespace roofline
