// The KV cache: its formats, its bytes per token and layer, its size, and the bytes a decode reads from it over a
// growing context (closed form). The one GQA convention every attention op uses lives here (kv_bytes).
#pragma once

#include "roofline/format.hpp"
#include "roofline/model.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roofline {

/// The KV-cache formats: f16, bf16, f32, fp8, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl.
const std::vector<std::string>& kv_format_names();
/// A KV-cache format by name (case-insensitive). NotFound listing kv_format_names() otherwise.
Format parse_kv_format(std::string_view name);

/// Bytes of K and V for `positions` tokens of `batch` sequences in one layer with `kv_heads` KV heads of `head_dim`:
/// 2 · batch · positions · kv_heads · head_dim elements in `kv`. The GQA convention of every attention op: the query
/// heads of a group share their KV head's K and V, which are read once (by decode and prefill attention alike).
double kv_bytes(double batch, double positions, double kv_heads, double head_dim, const Format& kv);

/// The layers of an architecture grouped by what their cache keeps: a full-attention layer every token, a
/// sliding-window layer at most its window (a chunked-attention layer at most its chunk).
struct KvLayout {
    double full_layers = 0;                            ///< layers without a window
    std::vector<std::pair<double, double>> windows;    ///< (window, layers), ascending by window
    double kv_heads = 0, head_dim = 0;
    double latent = 0;  ///< MLA: elements of the one latent a token keeps per layer (kv_lora_rank + rope); 0: K and V

    /// Bytes of one token in one layer on one of `tensor_parallel` ranks: K and V of its share of the KV heads,
    /// kv_bytes(1, 1, kv_heads / tp, head_dim, kv); more ranks than KV heads replicate them, one head per rank (vLLM
    /// and TensorRT-LLM); MLA: the whole latent on every rank (latent elements in kv), as vLLM and SGLang keep it —
    /// each rank's heads attend the one shared latent, so it is replicated, not split.
    double token_layer_bytes(const Format& kv, double tensor_parallel = 1) const {
        if (latent > 0) return latent * kv.bytes_per_element();
        return kv_bytes(1, 1, kv_heads_per_rank(tensor_parallel), head_dim, kv);
    }
    /// KV heads one of `tensor_parallel` ranks holds: its share, at least one (replicated beyond the KV heads).
    double kv_heads_per_rank(double tensor_parallel) const {
        return tensor_parallel > kv_heads ? 1.0 : kv_heads / tensor_parallel;
    }

    static KvLayout of(const Architecture& arch);
    /// Σ over layers of the tokens each layer's cache holds at `context` tokens.
    double token_layers(double context) const {
        double t = full_layers * context;
        for (const auto& [w, layers] : windows) t += layers * (context < w ? context : w);
        return t;
    }
    /// Σ over the decode steps at contexts prompt + 1 ... prompt + gen of token_layers(context): each step reads the
    /// whole cache, so this grows as gen² (closed form per window group).
    double token_layers_read(double prompt, double gen) const;
};

/// Bytes of one token's K and V in one layer: kv_bytes(1, 1, kv heads, head_dim, kv); MLA: its latent,
/// kv_lora_rank + qk_rope_head_dim elements in kv (KvLayout::token_layer_bytes).
double kv_bytes_per_token_layer(const Architecture& arch, const Format& kv);
/// KV-cache bytes of `batch` sequences of `context` tokens (sliding-window layers keep only their window) on one
/// of `tensor_parallel` ranks (each holds its share of the KV heads, at least one; with MLA every rank holds the whole
/// latent).
double kv_cache_bytes(const Architecture& arch, double batch, double context, const Format& kv, double tensor_parallel = 1);
/// KV-cache bytes read by `gen` decode steps after a prompt of `prompt` tokens: the step at context c reads the
/// whole cache, kv_cache_bytes(c), for c = prompt + 1 ... prompt + gen (summed in closed form; a sliding-window layer
/// reads at most its window). MLA: the latent of each token once per step.
double kv_cache_bytes_read(const Architecture& arch, double batch, double prompt, double gen, const Format& kv);

}  // namespace roofline
