// llama.cpp file types ("Q4_K_M", "Q5_K_S", "Q8_0", ...) as per-tensor GGML type assignments, reproducing the
// choices llama.cpp's quantizer (llama-quantize) makes for each tensor so that whole-file sizes and bits per weight
// come out byte-exact. The rules are those of src/llama-quant.cpp; llama_quant.cpp says which version was read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// One weight tensor as llama.cpp names it in GGUF: "token_embd.weight", "output.weight", "blk.3.attn_v.weight",
/// "blk.3.ffn_down_exps.weight", "output_norm.weight", ...; shape ne0 first (ne0 = row length = input features of
/// a Linear; experts stack along ne2).
struct QuantTensor {
    std::string name;
    std::vector<double> shape;
};

/// What of the model header the assignment rules look at.
struct QuantModelInfo {
    std::string arch;  ///< GGUF general.architecture: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, falcon, ...
    int n_layer = 0;   ///< block_count
    int n_head = 0;
    int n_head_kv = 0;
    int n_expert = 0;  ///< 0 for dense
};

/// llama-quantize's switches that change the assignment; the defaults are llama-quantize's defaults.
struct LlamaQuantOptions {
    /// An importance matrix was given (--imatrix). Changes IQ3_XXS, IQ4_NL, IQ4_XS, Q4_0 and Q5_0 assignments.
    /// llama-quantize refuses IQ1_*, IQ2_*, IQ3_XXS and Q2_K_S without one; the assignment is still defined.
    bool imatrix = false;
    /// --pure: every quantizable tensor gets the file type's default type (row-length fallbacks still apply).
    bool pure = false;
    /// --leave-output-tensor sets this false: output.weight then keeps its source (f16/bf16) type.
    bool quantize_output_tensor = true;
};

/// The GGML type id llama.cpp's quantizer gives each tensor for file type `mix` (same order as `tensors`).
/// Tensors llama.cpp does not quantize keep the type convert_hf_to_gguf.py stored them in: F32 for 1-D tensors,
/// norms, biases, MoE routers (ffn_gate_inp) and position embeddings; the file's float type (F16, or BF16 / F32
/// for those mixes) for the few other 2-D tensors llama.cpp leaves alone.
/// NotFound for an unknown mix; InvalidArgument for a bad shape, an unparsable layer in an MoE ffn tensor name, or
/// a row length no type can hold (llama.cpp refuses those files too).
std::vector<int> llama_mix_types(std::string_view mix, const std::vector<QuantTensor>& tensors,
                                 const QuantModelInfo& info, const LlamaQuantOptions& options = {});

/// Every supported file type, as llama-quantize spells it.
std::vector<std::string> llama_mix_names();
/// Case-insensitive; also accepts llama-quantize's aliases Q3_K (= Q3_K_M), Q4_K (= Q4_K_M), Q5_K (= Q5_K_M).
bool is_llama_mix(std::string_view name);

}  // namespace roofline
