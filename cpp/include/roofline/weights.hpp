// A model's weights under a quantization: each tensor's storage format and exact bytes (llama.cpp mixes assign
// formats per tensor role; GPU schemes quantize the linear layers).
#pragma once

#include "roofline/format.hpp"
#include "roofline/model.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// A weight tensor's storage format and bytes under a quantization.
struct TensorFormat {
    Format format;
    double bytes = 0;
    std::string type_name;  ///< "Q6_K", "bf16", "int4-g128", ...
};

/// Formats and bytes of every tensor of `model` under `quant`: a llama.cpp mix (Q4_K_M, Q8_0, BF16, F16, ...), a GPU
/// scheme (fp16, fp8, int8-wo, int4-g32/g64/g128, nvfp4, mxfp4: linear layers in that format, the rest in
/// `unquantized`), or "gguf" (the file's own types, GGUF models only).
std::vector<TensorFormat> tensor_formats(const Model& model, std::string_view quant, const Format& unquantized);
/// Σ bytes of tensor_formats.
double weight_bytes(const Model& model, std::string_view quant, const Format& unquantized);
/// The formats an estimate uses: tensor_formats with the tensors a GPU scheme leaves unquantized kept in the model's
/// training format, bf16 (fp16 for quant "fp16").
std::vector<TensorFormat> estimate_tensor_formats(const Model& model, std::string_view quant);

/// Every quantization name tensor_formats accepts (llama.cpp mixes, then GPU schemes).
std::vector<std::string> quant_names();
/// True for names tensor_formats understands.
bool is_quant_name(std::string_view name);

}  // namespace roofline
