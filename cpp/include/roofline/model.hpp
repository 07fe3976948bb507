// Decoder-only transformer architectures, read from a HF config.json, a model_db entry or a GGUF header, and their
// weight tensors (named as llama.cpp names them in GGUF).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// The most layers a model may have (HF num_hidden_layers, GGUF block_count): 10-100x the largest published
/// model; the readers refuse more before allocating anything per layer.
inline constexpr int kMaxLayers = 10000;

struct GgufFile;

enum class NormKind { rmsnorm, layernorm };
enum class MlpKind { gated, plain };  ///< gated: down(act(gate(x)) * up(x)); plain: down(act(up(x)))
enum class PositionKind { rope, learned };

struct Architecture {
    std::string id, name, model_type, source;
    std::string gguf_arch;  ///< llama.cpp's architecture name (llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, gpt2)
    int n_layer = 0, n_head = 0, n_kv_head = 0;
    double hidden = 0, head_dim = 0, ffn = 0, vocab = 0, max_context = 0;
    NormKind norm = NormKind::rmsnorm;
    MlpKind mlp = MlpKind::gated;
    PositionKind position = PositionKind::rope;
    std::string activation = "silu";
    bool tied_embeddings = false;
    bool qkv_bias = false;      ///< biases on the q, k, v projections (qwen2, gpt2)
    bool linear_bias = false;   ///< biases on every linear layer and layer norm (gpt2)
    bool o_bias = false;        ///< a bias on attn_output (HF attention_bias: gpt-oss)
    bool moe_bias = false;      ///< biases on the router and on each expert's three projections (gpt-oss)
    bool attn_sinks = false;    ///< one learned sink logit per query head and layer (gpt-oss)
    bool qk_norm = false;       ///< per-head RMSNorm of q and k (qwen3, gemma3)
    bool post_norms = false;    ///< gemma2/3: norms after attention and after the MLP as well
    bool fused_qkv = false;     ///< one attn_qkv tensor (gpt2, phi3)
    bool fused_gate_up = false; ///< one ffn_up tensor holding gate and up (phi3)
    std::vector<double> window; ///< per layer: sliding-window size, 0 = full attention
    // Mixture of experts (n_expert == 0: dense).
    int n_expert = 0, n_expert_used = 0, n_shared_expert = 0;
    double expert_ffn = 0, shared_ffn = 0;
    std::vector<bool> moe_layer;  ///< per layer: MoE MLP (true) or dense MLP
    std::vector<bool> nope_layer; ///< per layer: no rotary embedding (llama4's global NoPE layers); empty: none
    // Multi-head latent attention (deepseek_v3; kv_lora_rank == 0: K and V per KV head). head_dim is then the
    // query/key head size qk_nope_head_dim + qk_rope_head_dim, and the cache keeps one latent of kv_lora_rank +
    // qk_rope_head_dim elements per token and layer, shared by all heads.
    double q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, v_head_dim = 0;
    /// Multi-token-prediction modules after the main layers (DeepSeek-V3's num_nextn_predict_layers; 0: none).
    int n_nextn_layer = 0;
    bool mtp_module = false;  ///< this model is such a module (mtp_module): each layer starts with mtp_eh_proj
    double parameters_reported = 0;  ///< from the catalogue's source, 0 when unknown

    double q_dim() const { return n_head * head_dim; }
    double kv_dim() const { return n_kv_head * head_dim; }
    bool mla() const { return kv_lora_rank > 0; }
    double qk_nope_dim() const { return head_dim - qk_rope_dim; }
};

/// Every model_type from_hf_config understands.
std::vector<std::string> supported_model_types();

/// Tensor roles, after llama.cpp's GGUF names ("blk.N.<role>.weight").
struct WeightTensor {
    std::string name;            ///< GGUF name: "token_embd.weight", "blk.3.attn_v.weight", ...
    std::string role;            ///< "token_embd", "attn_v", "ffn_down_exps", "attn_norm", ...
    int layer = -1;              ///< -1 for tensors outside the blocks
    std::vector<double> shape;   ///< ne0 (row length = input features) first; experts along ne2
    double elements() const;
    bool is_matrix() const { return shape.size() >= 2 && shape[1] > 1; }
    bool is_bias() const { return name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0; }
};

/// The roles of the weight matrices linear layers multiply by (attn_q ... ffn_down_exps, output).
bool is_linear_role(std::string_view role);
/// Norm weights and biases (roles ending in "_norm").
bool is_norm_role(std::string_view role);

class Model {
public:
    Architecture arch;
    std::vector<WeightTensor> tensors;
    std::vector<int> file_types;  ///< GGUF files: each tensor's ggml type; empty otherwise

    /// From HF config.json text (or the "config" of a model_db entry). Unknown model_type: InvalidArgument
    /// listing the supported ones; inconsistent sizes (heads not dividing, ...) name the field.
    static Model from_hf_config(std::string_view json_text, std::string_view origin = "<config>");
    /// From a model_db entry: {"id", "name", "source", "config": {...}, ...}.
    static Model from_catalog_entry(std::string_view json_text, std::string_view origin);
    /// From a GGUF header: the architecture from general.architecture and its keys, every tensor with its
    /// file type and exact bytes.
    static Model from_gguf(const GgufFile& file);

    /// Σ elements of every weight tensor (a tied output head is the embedding, counted once).
    double parameters() const;
};

/// The multi-token-prediction module of a model with one (arch.n_nextn_layer > 0) as a model of its own, the draft
/// of MTP speculative decoding (DeepSeek-V3 technical report §2.2; HF checkpoint layers num_hidden_layers ...):
/// n_nextn_layer decoder layers like the main model's MoE layers, each first normalising the token's embedding and
/// the previous depth's hidden state (mtp_e_norm, mtp_h_norm) and projecting their concatenation back to the hidden
/// size (mtp_eh_proj, 2·hidden → hidden), with its own embedding and output head as the checkpoint stores them.
/// InvalidArgument when the model has none.
Model mtp_module(const Model& model);

}  // namespace roofline
