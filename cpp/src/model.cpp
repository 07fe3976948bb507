#include "roofline/model.hpp"

#include "json_reader.hpp"
#include "roofline/errors.hpp"
#include "roofline/gguf.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace roofline {

namespace {

const std::vector<std::string> kModelTypes = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe",
                                              "gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "gpt2", "gpt_oss",
                                              "deepseek_v3", "llama4_text", "glm4_moe"};

double num(const nlohmann::json& j, const std::string& key, const std::string& origin, double fallback = -1) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (fallback >= 0) return fallback;
        throw InvalidArgument(origin + ": field '" + key + "' is required but missing");
    }
    if (!it->is_number()) throw InvalidArgument(origin + ": field '" + key + "' must be a number, got " + it->dump());
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0 || v > 1e12)
        throw InvalidArgument(origin + ": field '" + key + "' must be a finite number in [0, 1e12], got " + it->dump());
    return v;
}

int count_field(const nlohmann::json& j, const std::string& key, const std::string& origin, double fallback = -1) {
    const double v = num(j, key, origin, fallback);
    if (std::floor(v) != v || v > 1e7)
        throw InvalidArgument(origin + ": field '" + key + "' must be a whole number up to 1e7, got " + std::to_string(v));
    return static_cast<int>(v);
}

bool flag(const nlohmann::json& j, const std::string& key, bool fallback, const std::string& origin = "config") {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InvalidArgument(origin + ": field '" + key + "' must be true or false, got " + it->dump());
    return it->get<bool>();
}

// A string field (activation names); absent or null: the fallback.
std::string text(const nlohmann::json& j, const std::string& key, const std::string& origin, const std::string& fallback) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw InvalidArgument(origin + ": field '" + key + "' must be a string, got " + it->dump());
    return it->get<std::string>();
}

// Upper bounds on an architecture's sizes: 10-100x the largest published model, low enough that every count built
// from them (parameters, FLOPs, bytes) stays finite and a hostile config cannot make the readers allocate without
// bound (one tensor record per layer and role).
constexpr int kMaxHeads = 65536;
constexpr double kMaxHidden = 1 << 20, kMaxHeadDim = 65536, kMaxFfn = 1 << 24, kMaxVocab = 1 << 24;
constexpr int kMaxExperts = 65536;

std::string num_text(double v) {
    std::ostringstream os;
    os.precision(10);
    os << v;
    return os.str();
}

void check_architecture(Architecture& a, const std::string& origin) {
    auto bad = [&](const std::string& what) { throw InvalidArgument(origin + ": " + what); };
    // every size of an architecture is a count: a whole number in its range
    auto within = [&](const char* name, double v, double lo, double hi) {
        if (!(v >= lo && v <= hi) || std::floor(v) != v)
            bad(std::string(name) + " must be a whole number within [" + num_text(lo) + ", " + num_text(hi) + "], got " +
                num_text(v));
    };
    if (a.n_layer < 1) bad("num_hidden_layers must be >= 1, got " + std::to_string(a.n_layer));
    within("num_hidden_layers", a.n_layer, 1, kMaxLayers);
    if (a.n_head < 1) bad("num_attention_heads must be >= 1, got " + std::to_string(a.n_head));
    within("num_attention_heads", a.n_head, 1, kMaxHeads);
    if (a.n_kv_head < 1 || a.n_kv_head > a.n_head || a.n_head % a.n_kv_head != 0)
        bad("num_key_value_heads (" + std::to_string(a.n_kv_head) + ") must divide num_attention_heads (" +
            std::to_string(a.n_head) + ")");
    if (a.hidden < 1) bad("hidden_size must be >= 1");
    within("hidden_size", a.hidden, 1, kMaxHidden);
    if (!(a.head_dim >= 1) || std::floor(a.head_dim) != a.head_dim)
        bad("head_dim must be a whole number >= 1 (hidden_size " + num_text(a.hidden) +
            " / num_attention_heads " + std::to_string(a.n_head) + " when the config has no head_dim), got " +
            num_text(a.head_dim));
    within("head_dim", a.head_dim, 1, kMaxHeadDim);
    if (a.vocab < 1) bad("vocab_size must be >= 1");
    within("vocab_size", a.vocab, 1, kMaxVocab);
    if (a.ffn < 1 && a.n_expert == 0) bad("intermediate_size must be >= 1");
    within("intermediate_size", a.ffn, 0, kMaxFfn);
    within("the number of experts", a.n_expert, 0, kMaxExperts);
    within("moe_intermediate_size", a.expert_ffn, 0, kMaxFfn);
    within("shared_expert_intermediate_size", a.shared_ffn, 0, kMaxFfn);
    within("the context length (max_position_embeddings)", a.max_context, 0, 1e12);
    for (double w : a.window) within("sliding_window", w, 0, 1e12);
    if (a.n_expert > 0 && a.expert_ffn < 1) bad("the experts' intermediate size must be >= 1, got " + num_text(a.expert_ffn));
    if (a.n_expert > 0 && (a.n_expert_used < 1 || a.n_expert_used > a.n_expert))
        bad("num_experts_per_tok must be within [1, " + std::to_string(a.n_expert) + "], got " +
            std::to_string(a.n_expert_used));
    if (a.mla()) {
        within("q_lora_rank", a.q_lora_rank, 0, kMaxHidden);
        within("kv_lora_rank", a.kv_lora_rank, 1, kMaxHidden);
        within("qk_rope_head_dim", a.qk_rope_dim, 1, kMaxHeadDim);
        within("v_head_dim", a.v_head_dim, 1, kMaxHeadDim);
        if (a.head_dim <= a.qk_rope_dim) bad("qk_nope_head_dim must be >= 1, got " + num_text(a.head_dim - a.qk_rope_dim));
    }
    if (a.window.empty()) a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    if (a.moe_layer.empty()) a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), a.n_expert > 0);
}

// Sliding windows from the config: "layer_types" when present, else the model family's pattern.
void read_windows(Architecture& a, const nlohmann::json& c) {
    a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    if (a.model_type == "llama4_text") {
        // iRoPE: the RoPE layers attend within aligned chunks of attention_chunk_size tokens, the NoPE layers (every
        // no_rope_layer_interval-th, or those no_rope_layers marks 0) the whole context. A chunk is modelled as a
        // window of the chunk size (see Architecture::window).
        const double chunk = num(c, "attention_chunk_size", "config", 8192);
        const int interval = count_field(c, "no_rope_layer_interval", "config", 4);
        a.nope_layer.assign(static_cast<std::size_t>(a.n_layer), false);
        const auto it = c.find("no_rope_layers");
        const bool listed = it != c.end() && it->is_array() && it->size() == static_cast<std::size_t>(a.n_layer);
        if (it != c.end() && it->is_array() && !it->empty() && !listed)
            throw InvalidArgument("config: field 'no_rope_layers' must list one 0 or 1 per layer (" +
                                  std::to_string(a.n_layer) + "), got " + std::to_string(it->size()) + " values");
        for (int i = 0; i < a.n_layer; ++i) {
            const auto li = static_cast<std::size_t>(i);
            if (listed) {
                const auto& v = (*it)[li];
                if (!v.is_number_integer() || (v.get<int>() != 0 && v.get<int>() != 1))
                    throw InvalidArgument("config: field 'no_rope_layers'[" + std::to_string(i) +
                                          "] must be 0 (NoPE) or 1 (RoPE), got " + v.dump());
                a.nope_layer[li] = v.get<int>() == 0;
            } else {
                a.nope_layer[li] = interval > 0 && (i + 1) % interval == 0;
            }
            if (!a.nope_layer[li]) a.window[li] = chunk;
        }
        return;
    }
    const double w = num(c, "sliding_window", "config", 0);  // a string or a flag is an error, not "no window"
    if (w <= 0) return;
    if (auto it = c.find("layer_types"); it != c.end() && it->is_array()) {
        for (std::size_t i = 0; i < it->size() && i < a.window.size(); ++i)
            if ((*it)[i].is_string() && (*it)[i].get<std::string>() == "sliding_attention") a.window[i] = w;
        return;
    }
    const std::string& t = a.model_type;
    if (t == "qwen2" || t == "qwen3" || t == "qwen3_moe") {
        if (!flag(c, "use_sliding_window", false)) return;
        // layers from max_window_layers on slide; a value past the last layer leaves every layer global
        const int max_window_layers =
            static_cast<int>(std::min<double>(num(c, "max_window_layers", "config", a.n_layer), a.n_layer));
        for (int i = max_window_layers; i < a.n_layer; ++i) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    if (t == "gemma2") {  // even layers slide
        for (int i = 0; i < a.n_layer; i += 2) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    if (t == "gemma3" || t == "gemma3_text") {  // every pattern-th layer is global
        const int pattern =
            static_cast<int>(std::min<double>(num(c, "sliding_window_pattern", "config", 6), a.n_layer + 1.0));
        for (int i = 0; i < a.n_layer; ++i)
            if (pattern <= 0 || (i + 1) % pattern != 0) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    std::fill(a.window.begin(), a.window.end(), w);  // mistral, mixtral, phi3: every layer
}

Architecture architecture_from_config(const nlohmann::json& c, const std::string& origin) {
    if (!c.is_object()) throw InvalidArgument(origin + ": the config must be a JSON object");
    auto mt = c.find("model_type");
    if (mt == c.end() || !mt->is_string()) throw InvalidArgument(origin + ": field 'model_type' is required (a string)");
    Architecture a;
    a.model_type = mt->get<std::string>();
    if (std::find(kModelTypes.begin(), kModelTypes.end(), a.model_type) == kModelTypes.end()) {
        const std::string hint = closest_match(a.model_type, kModelTypes);
        throw InvalidArgument(origin + ": model_type '" + a.model_type + "' is not supported" +
                              (hint.empty() ? "" : "; did you mean '" + hint + "'?") + "; supported: " + join(kModelTypes));
    }
    const std::string& t = a.model_type;
    if (t == "gpt2") {
        a.gguf_arch = "gpt2";
        a.hidden = num(c, "n_embd", origin);
        a.n_layer = count_field(c, "n_layer", origin);
        a.n_head = count_field(c, "n_head", origin);
        a.n_kv_head = a.n_head;
        a.ffn = num(c, "n_inner", origin, 4 * a.hidden);
        a.vocab = num(c, "vocab_size", origin);
        a.max_context = num(c, "n_positions", origin, 1024);
        a.norm = NormKind::layernorm;
        a.mlp = MlpKind::plain;
        a.position = PositionKind::learned;
        a.activation = text(c, "activation_function", origin, "gelu_new");
        a.tied_embeddings = true;
        a.qkv_bias = a.linear_bias = true;
        a.fused_qkv = true;
    } else {
        a.hidden = num(c, "hidden_size", origin);
        a.n_layer = count_field(c, "num_hidden_layers", origin);
        a.n_head = count_field(c, "num_attention_heads", origin);
        a.n_kv_head = count_field(c, "num_key_value_heads", origin, a.n_head);
        a.vocab = num(c, "vocab_size", origin);
        a.max_context = num(c, "max_position_embeddings", origin, 0);
        a.ffn = num(c, "intermediate_size", origin, 0);
        a.activation = text(c, "hidden_act", origin, text(c, "hidden_activation", origin, "silu"));
        const bool gemma = t.rfind("gemma", 0) == 0;
        a.tied_embeddings = flag(c, "tie_word_embeddings", gemma, origin);
        a.qkv_bias = flag(c, "attention_bias", t == "qwen2", origin);
        // gpt-oss (transformers GptOssAttention, GptOssTopKRouter, GptOssExperts): o_proj takes attention_bias too
        // (Qwen2 has biases on q, k, v only, without the key), the router and the experts' gate_up / down have biases,
        // and each head a learned sink
        if (t == "gpt_oss") {
            a.o_bias = a.qkv_bias;
            a.moe_bias = a.attn_sinks = true;
        }
        a.qk_norm = (t == "qwen3" || t == "qwen3_moe" || t == "gemma3" || t == "gemma3_text") ||
                    (t == "glm4_moe" && flag(c, "use_qk_norm", false, origin));
        a.post_norms = (t == "gemma2" || t == "gemma3" || t == "gemma3_text");
        if (t == "phi3") a.fused_qkv = a.fused_gate_up = true;
        static const std::map<std::string, std::string> gguf = {
            {"llama", "llama"}, {"mistral", "llama"}, {"mixtral", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"},
            {"qwen3_moe", "qwen3moe"}, {"gemma", "gemma"}, {"gemma2", "gemma2"}, {"gemma3", "gemma3"},
            {"gemma3_text", "gemma3"}, {"phi3", "phi3"}, {"gpt_oss", "gpt-oss"}, {"deepseek_v3", "deepseek2"},
            {"glm4_moe", "glm4moe"},
            {"llama4_text", "llama4"}};
        a.gguf_arch = gguf.at(t);
        if (t == "mixtral" || t == "gpt_oss") {
            a.n_expert = count_field(c, "num_local_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = a.ffn;
        } else if (t == "qwen3_moe") {
            a.n_expert = count_field(c, "num_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = num(c, "moe_intermediate_size", origin);
            a.shared_ffn = num(c, "shared_expert_intermediate_size", origin, 0);
            a.n_shared_expert = a.shared_ffn > 0 ? 1 : 0;
        } else if (t == "llama4_text") {
            // intermediate_size: every routed expert and the shared expert; intermediate_size_mlp: the dense layers
            a.n_expert = count_field(c, "num_local_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = a.shared_ffn = a.ffn;
            a.n_shared_expert = 1;
            a.ffn = num(c, "intermediate_size_mlp", origin, 16384);
        } else if (t == "deepseek_v3" || t == "glm4_moe") {
            // routed experts of moe_intermediate_size; the shared experts are one MLP n_shared_experts ×
            // moe_intermediate_size wide (HF DeepseekV3MoE, Glm4MoeMoE); dense MLPs (intermediate_size) in the first
            // first_k_dense_replace layers; a sigmoid router with e_score_correction_bias. GLM-4.5's attention is
            // GQA with biases on q, k, v only (attention_bias; o_proj has none). The MTP layers
            // (num_nextn_predict_layers) are not part of the main model and are not counted
            a.n_expert = count_field(c, "n_routed_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = num(c, "moe_intermediate_size", origin);
            a.n_shared_expert = count_field(c, "n_shared_experts", origin, 0);
            a.shared_ffn = a.n_shared_expert * a.expert_ffn;
        }
        if (t == "deepseek_v3") {  // multi-head latent attention
            a.q_lora_rank = num(c, "q_lora_rank", origin, 0);  // null: q_proj straight from the hidden state
            a.kv_lora_rank = num(c, "kv_lora_rank", origin);
            a.qk_rope_dim = num(c, "qk_rope_head_dim", origin);
            a.v_head_dim = num(c, "v_head_dim", origin);
            a.n_nextn_layer = count_field(c, "num_nextn_predict_layers", origin, 0);
            if (a.n_nextn_layer > 16)
                throw InvalidArgument(origin + ": num_nextn_predict_layers must be within [0, 16], got " +
                                      std::to_string(a.n_nextn_layer));
            if (a.kv_lora_rank < 1 || a.qk_rope_dim < 1 || a.v_head_dim < 1)
                throw InvalidArgument(origin + ": kv_lora_rank, qk_rope_head_dim and v_head_dim must be >= 1, got " +
                                      num_text(a.kv_lora_rank) + ", " + num_text(a.qk_rope_dim) + ", " + num_text(a.v_head_dim));
        }
    }
    a.head_dim = num(c, "head_dim", origin, a.n_head > 0 ? a.hidden / a.n_head : 0.0);  // "256" is an error, not 128
    if (a.mla()) a.head_dim = num(c, "qk_nope_head_dim", origin) + a.qk_rope_dim;  // the query/key head size
    // Before anything is allocated per layer (windows, MoE layers, tensors).
    if (a.n_layer > kMaxLayers)
        throw InvalidArgument(origin + ": " + (t == "gpt2" ? "n_layer" : "num_hidden_layers") + " must be within [1, " +
                              std::to_string(kMaxLayers) + "], got " + std::to_string(a.n_layer));
    if (a.n_layer > 0) read_windows(a, c);
    if (a.n_expert > 0) {
        a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), true);
        const int step = count_field(c, "decoder_sparse_step", origin, 1);
        std::set<int> dense;
        if (auto it = c.find("mlp_only_layers"); it != c.end() && it->is_array())
            for (const auto& v : *it)
                if (v.is_number_integer()) dense.insert(v.get<int>());
        for (int i = 0; i < a.n_layer; ++i)
            if (dense.count(i) || step < 1 || (i + 1) % step != 0) a.moe_layer[static_cast<std::size_t>(i)] = false;
        if (t == "llama4_text") {  // moe_layers, else every interleave_moe_layer_step-th layer from step - 1 on
            const int every = count_field(c, "interleave_moe_layer_step", origin, 1);
            const auto it = c.find("moe_layers");
            const bool listed = it != c.end() && it->is_array();
            std::set<int> moe;
            if (listed)
                for (const auto& v : *it)
                    if (v.is_number_integer()) moe.insert(v.get<int>());
            for (int i = 0; i < a.n_layer; ++i)
                a.moe_layer[static_cast<std::size_t>(i)] = listed ? moe.count(i) > 0 : every >= 1 && (i + 1) % every == 0;
        }
        if (t == "deepseek_v3" || t == "glm4_moe") {  // MoE from layer first_k_dense_replace on, every moe_layer_freq-th
            const int first = count_field(c, "first_k_dense_replace", origin, 0);
            const int freq = t == "deepseek_v3" ? count_field(c, "moe_layer_freq", origin, 1) : 1;  // Glm4MoeConfig has none
            for (int i = 0; i < a.n_layer; ++i) a.moe_layer[static_cast<std::size_t>(i)] = i >= first && freq >= 1 && i % freq == 0;
        }
    }
    check_architecture(a, origin);
    return a;
}

// The weight tensors of an architecture, named and shaped as llama.cpp's converter writes them.
std::vector<WeightTensor> tensors_of(const Architecture& a) {
    std::vector<WeightTensor> out;
    auto add = [&](std::string role, int layer, std::vector<double> shape, const char* suffix = "weight") {
        std::string name = layer < 0 ? role : "blk." + std::to_string(layer) + "." + role;
        out.push_back({name + "." + suffix, role, layer, std::move(shape)});
    };
    const double H = a.hidden;
    add("token_embd", -1, {H, a.vocab});
    if (a.position == PositionKind::learned) add("position_embd", -1, {H, a.max_context});
    for (int l = 0; l < a.n_layer; ++l) {
        const auto li = static_cast<std::size_t>(l);
        if (a.mtp_module) {  // a multi-token-prediction layer: [norm(embedding); norm(hidden)] projected to hidden
            add("mtp_e_norm", l, {H});
            add("mtp_h_norm", l, {H});
            add("mtp_eh_proj", l, {2 * H, H});
        }
        add("attn_norm", l, {H});
        if (a.norm == NormKind::layernorm) add("attn_norm", l, {H}, "bias");
        if (a.mla()) {
            // llama.cpp's deepseek2 tensors: q through a low-rank latent (q_lora_rank 0: attn_q from the hidden
            // state), one K/V latent and the shared RoPE key, kv_b_proj split per head into attn_k_b
            // [qk_nope, kv_lora_rank, heads] and attn_v_b [kv_lora_rank, v_head_dim, heads]
            if (a.q_lora_rank > 0) {
                add("attn_q_a", l, {H, a.q_lora_rank});
                add("attn_q_a_norm", l, {a.q_lora_rank});
                add("attn_q_b", l, {a.q_lora_rank, a.q_dim()});
            } else {
                add("attn_q", l, {H, a.q_dim()});
            }
            add("attn_kv_a_mqa", l, {H, a.kv_lora_rank + a.qk_rope_dim});
            add("attn_kv_a_norm", l, {a.kv_lora_rank});
            add("attn_k_b", l, {a.qk_nope_dim(), a.kv_lora_rank, static_cast<double>(a.n_head)});
            add("attn_v_b", l, {a.kv_lora_rank, a.v_head_dim, static_cast<double>(a.n_head)});
        } else if (a.fused_qkv) {
            add("attn_qkv", l, {H, a.q_dim() + 2 * a.kv_dim()});
            if (a.qkv_bias) add("attn_qkv", l, {a.q_dim() + 2 * a.kv_dim()}, "bias");
        } else {
            add("attn_q", l, {H, a.q_dim()});
            add("attn_k", l, {H, a.kv_dim()});
            add("attn_v", l, {H, a.kv_dim()});
            if (a.qkv_bias) {
                add("attn_q", l, {a.q_dim()}, "bias");
                add("attn_k", l, {a.kv_dim()}, "bias");
                add("attn_v", l, {a.kv_dim()}, "bias");
            }
        }
        if (a.qk_norm) {
            add("attn_q_norm", l, {a.head_dim});
            add("attn_k_norm", l, {a.head_dim});
        }
        if (a.attn_sinks) add("attn_sinks", l, {static_cast<double>(a.n_head)});
        add("attn_output", l, {a.mla() ? a.n_head * a.v_head_dim : a.q_dim(), H});
        if (a.linear_bias || a.o_bias) add("attn_output", l, {H}, "bias");
        if (a.post_norms) add("post_attention_norm", l, {H});
        add("ffn_norm", l, {H});
        if (a.norm == NormKind::layernorm) add("ffn_norm", l, {H}, "bias");
        if (a.n_expert > 0 && a.moe_layer[li]) {
            const double E = a.n_expert, F = a.expert_ffn;
            add("ffn_gate_inp", l, {H, E});
            if (a.moe_bias) add("ffn_gate_inp", l, {E}, "bias");
            add("ffn_gate_exps", l, {H, F, E});
            if (a.moe_bias) add("ffn_gate_exps", l, {F, E}, "bias");
            add("ffn_up_exps", l, {H, F, E});
            if (a.moe_bias) add("ffn_up_exps", l, {F, E}, "bias");
            add("ffn_down_exps", l, {F, H, E});
            if (a.moe_bias) add("ffn_down_exps", l, {H, E}, "bias");
            if (a.n_shared_expert > 0) {
                add("ffn_gate_shexp", l, {H, a.shared_ffn});
                add("ffn_up_shexp", l, {H, a.shared_ffn});
                add("ffn_down_shexp", l, {a.shared_ffn, H});
            }
            if (a.model_type == "deepseek_v3" || a.model_type == "glm4_moe")
                add("exp_probs_b", l, {E}, "bias");  // e_score_correction_bias
        } else if (a.mlp == MlpKind::gated) {
            if (a.fused_gate_up) {
                add("ffn_up", l, {H, 2 * a.ffn});
            } else {
                add("ffn_gate", l, {H, a.ffn});
                add("ffn_up", l, {H, a.ffn});
            }
            add("ffn_down", l, {a.ffn, H});
        } else {
            add("ffn_up", l, {H, a.ffn});
            if (a.linear_bias) add("ffn_up", l, {a.ffn}, "bias");
            add("ffn_down", l, {a.ffn, H});
            if (a.linear_bias) add("ffn_down", l, {H}, "bias");
        }
        if (a.post_norms) add("post_ffw_norm", l, {H});
    }
    add("output_norm", -1, {H});
    if (a.norm == NormKind::layernorm) add("output_norm", -1, {H}, "bias");
    if (!a.tied_embeddings) add("output", -1, {H, a.vocab});
    return out;
}

// "12" -> 12; not a plain decimal number, or above any layer count: -1 (a tensor outside the blocks).
int layer_number(const std::string& digits) {
    if (digits.empty() || digits.size() > 9) return -1;
    int n = 0;
    for (char ch : digits) {
        if (ch < '0' || ch > '9') return -1;
        n = n * 10 + (ch - '0');
    }
    return n;
}

}  // namespace

std::vector<std::string> supported_model_types() { return kModelTypes; }

bool is_linear_role(std::string_view role) {
    static const std::set<std::string, std::less<>> linear = {
        "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_exps",
        "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "output",
        "attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_k_b", "attn_v_b", "mtp_eh_proj"};
    return linear.count(role) > 0;
}

Model mtp_module(const Model& model) {
    const Architecture& a = model.arch;
    if (a.n_nextn_layer < 1)
        throw InvalidArgument("model '" + a.id + "' has no multi-token-prediction module (its config's "
                              "num_nextn_predict_layers is 0 or absent): MTP speculative decoding needs one, as "
                              "deepseek-r1 / deepseek-v3 have");
    Model m;
    m.arch = a;
    m.arch.id = a.id + "-mtp";
    m.arch.name = a.name + " MTP module";
    m.arch.n_layer = a.n_nextn_layer;
    m.arch.n_nextn_layer = 0;
    m.arch.mtp_module = true;
    m.arch.parameters_reported = 0;
    m.arch.moe_layer.assign(static_cast<std::size_t>(a.n_nextn_layer), a.n_expert > 0);
    m.arch.window.assign(static_cast<std::size_t>(a.n_nextn_layer), 0.0);
    m.arch.nope_layer.clear();
    m.tensors = tensors_of(m.arch);
    return m;
}

bool is_norm_role(std::string_view r) { return r.size() > 5 && r.compare(r.size() - 5, 5, "_norm") == 0; }

double WeightTensor::elements() const {
    double n = 1;
    for (double d : shape) n *= d;
    return n;
}

Model Model::from_hf_config(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    Model m;
    // A multimodal config (gemma3) keeps the language model in text_config.
    const nlohmann::json* c = &j;
    if (j.is_object() && j.contains("text_config") && j["text_config"].is_object() && !j.contains("num_hidden_layers")) {
        c = &j["text_config"];
    }
    m.arch = architecture_from_config(*c, std::string(origin));
    if (m.arch.id.empty()) {
        // a name for reprs and tables: the config's _name_or_path, else its folder or file name, else its model_type
        auto last_part = [](std::string s) {
            while (!s.empty() && (s.back() == '/' || s.back() == '\\')) s.pop_back();
            const auto slash = s.find_last_of("/\\");
            return slash == std::string::npos ? s : s.substr(slash + 1);
        };
        std::string id;
        if (j.is_object() && j.contains("_name_or_path") && j["_name_or_path"].is_string()) id = last_part(j["_name_or_path"].get<std::string>());
        const std::string o(origin);
        if (id.empty() && !o.empty() && o.front() != '<') {
            std::string file = last_part(o);
            if (const auto dot = file.rfind('.'); dot != std::string::npos && dot > 0) file.resize(dot);
            if (file == "config") {  // .../<model>/config.json
                const std::string dir = o.substr(0, o.find_last_of("/\\") == std::string::npos ? 0 : o.find_last_of("/\\"));
                file = last_part(dir);
            }
            id = file;
        }
        if (id.empty()) id = m.arch.model_type;
        m.arch.id = id;
        if (m.arch.name.empty()) m.arch.name = id;
    }
    m.tensors = tensors_of(m.arch);
    return m;
}

Model Model::from_catalog_entry(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    detail::JsonObject o(j, "", std::string(origin));
    const std::string id = o.string("id");
    const std::string name = o.string("name");
    const std::string source = o.string("source");
    o.array("aliases", false);
    o.opt_string("hf_repo");
    o.raw("uncertain");
    double reported = 0;
    if (auto p = o.opt_object("parameters_reported")) {
        reported = p->number("value", 0, 1e15, true);
        p->string("source");
        p->finish();
    }
    const auto& config = o.raw("config");
    if (config.is_null()) o.fail("config", "is required but missing");
    o.finish();
    Model m;
    m.arch = architecture_from_config(config, std::string(origin) + " (config)");
    m.arch.id = id;
    m.arch.name = name;
    m.arch.source = source;
    m.arch.parameters_reported = reported;
    m.tensors = tensors_of(m.arch);
    return m;
}

namespace {
// GGUF strings should be UTF-8 but a file may hold anything: each byte that does not start a well-formed sequence
// becomes U+FFFD, as rooflinepy.read_gguf shows them, so that names reach Python (and JSON) intact otherwise.
std::string utf8_or_replaced(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = b[i];
        std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
        for (std::size_t k = 1; ok && k < len; ++k) ok = (b[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) {  // no overlong forms, no surrogates
            const unsigned char d = b[i + 1];
            ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
        }
        if (ok && len == 4) {
            const unsigned char d = b[i + 1];
            ok = !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
        }
        if (ok) {
            out.append(s, i, len);
            i += len;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

// The tensors of a GGUF file against the metadata that describes them: every layer of block_count has tensors
// and none lies beyond it, no dimension is 0, and the projections, norms and experts have the shapes the
// metadata gives (ne0 first: a projection is [inputs, outputs]). A file whose tensors disagree with its metadata
// would be estimated from one and sized from the other.
void check_gguf_tensors(const Model& m, const GgufFile& f, const std::function<std::string(const std::string&)>& key,
                        const std::vector<double>& ffn_of_layer) {
    const Architecture& a = m.arch;
    auto shape_text = [](const WeightTensor& w) {
        std::string t;
        for (double d : w.shape) t += (t.empty() ? "" : ", ") + num_text(d);
        return "[" + t + "]";
    };
    std::vector<char> has_layer(static_cast<std::size_t>(a.n_layer), 0);
    const double q = a.n_head * a.head_dim, kv = a.n_kv_head * a.head_dim;
    for (const WeightTensor& w : m.tensors) {
        for (double d : w.shape)
            if (d < 1)
                throw InvalidArgument(f.origin + ": tensor '" + w.name + "' has shape " + shape_text(w) +
                                      "; every dimension must be at least 1");
        if (w.name.rfind("blk.", 0) == 0) {
            if (w.layer < 0 || w.layer >= a.n_layer)
                throw InvalidArgument(f.origin + ": tensor '" + w.name + "' belongs to layer " +
                                      (w.layer < 0 ? std::string("(none)") : std::to_string(w.layer)) + ", but " +
                                      key("block_count") + " is " + std::to_string(a.n_layer) + " (layers 0 to " +
                                      std::to_string(a.n_layer - 1) + ")");
            has_layer[static_cast<std::size_t>(w.layer)] = 1;
        }
        if (w.is_bias()) continue;
        const double ffn = w.layer >= 0 && w.layer < a.n_layer ? ffn_of_layer[static_cast<std::size_t>(w.layer)] : a.ffn;
        // (dimension, expected, what gives it): 0 = ne0 (inputs), 1 = ne1 (outputs), 2 = experts
        std::vector<std::tuple<std::size_t, double, std::string>> want;
        const std::string H = key("embedding_length") + " " + num_text(a.hidden);
        const std::string heads = key("attention.head_count") + " × head size " + num_text(a.head_dim);
        const std::string F = key("feed_forward_length") + " " + num_text(ffn);
        const std::string EF = key("expert_feed_forward_length") + " " + num_text(a.expert_ffn);
        const std::string& r = w.role;
        if (r == "token_embd" || r == "output" || r == "attn_v" || r == "ffn_gate_inp") want.push_back({0, a.hidden, H});
        if (r == "attn_norm" || r == "ffn_norm" || r == "output_norm") want.push_back({0, a.hidden, H});
        if (r == "attn_q") want = {{0, a.hidden, H}, {1, q, heads}};
        if (r == "attn_k") want = {{0, a.hidden, H}, {1, kv, key("attention.head_count_kv") + " × head size " + num_text(a.head_dim)}};
        if (r == "attn_qkv") want = {{0, a.hidden, H}, {1, q + 2 * kv, "Q, K and V heads × head size " + num_text(a.head_dim)}};
        if (r == "attn_output") want = {{0, q, heads}, {1, a.hidden, H}};
        if (ffn > 0 && (r == "ffn_gate" || r == "ffn_up"))
            want = {{0, a.hidden, H}, {1, r == "ffn_up" && a.fused_gate_up ? 2 * ffn : ffn, F}};
        if (ffn > 0 && r == "ffn_down") want = {{0, ffn, F}, {1, a.hidden, H}};
        if (r == "ffn_gate_exps" || r == "ffn_up_exps" || r == "ffn_down_exps") {
            const bool down = r == "ffn_down_exps";
            if (w.shape.size() != 3)
                throw InvalidArgument(f.origin + ": tensor '" + w.name + "' has shape " + shape_text(w) +
                                      "; expert weights have 3 dimensions [inputs, outputs, experts]");
            want = {{down ? 1u : 0u, a.hidden, H}, {2, static_cast<double>(a.n_expert), key("expert_count") + " " + std::to_string(a.n_expert)}};
            if (a.expert_ffn > 0) want.push_back({down ? 0u : 1u, a.expert_ffn, EF});
        }
        for (const auto& [dim, expected, why] : want)
            if (dim >= w.shape.size() || w.shape[dim] != expected)
                throw InvalidArgument(f.origin + ": tensor '" + w.name + "' has shape " + shape_text(w) + "; its dimension " +
                                      std::to_string(dim) + " must be " + num_text(expected) + " (" + why + ")");
    }
    for (std::size_t l = 0; l < has_layer.size(); ++l)
        if (!has_layer[l])
            throw InvalidArgument(f.origin + ": " + key("block_count") + " is " + std::to_string(a.n_layer) +
                                  ", but no tensor belongs to layer " + std::to_string(l) + " (blk." + std::to_string(l) +
                                  ".*)");
}
}  // namespace

Model Model::from_gguf(const GgufFile& f) {
    const std::string arch = f.architecture();
    auto key = [&](const std::string& k) { return arch + "." + k; };
    // A size from the metadata: a whole number within [0, hi] (per-layer arrays: their first element).
    auto integer = [&](const std::string& k, double fallback, double hi = 1e12) -> double {
        const GgufValue* v = f.find(key(k));
        if (!v) {
            if (fallback >= 0) return fallback;
            throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "' is required for architecture '" + arch + "'");
        }
        double x = 0;
        if (v->is_array()) {
            const std::vector<std::int64_t> xs = v->as_int_array();
            x = xs.empty() ? 0.0 : static_cast<double>(xs.front());
        } else {
            x = v->as_double();
        }
        if (!(x >= 0 && x <= hi) || std::floor(x) != x)
            throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "' is " + v->describe() +
                                  "; it must be a whole number within [0, " + num_text(hi) + "]");
        return x;
    };
    Model m;
    Architecture& a = m.arch;
    a.gguf_arch = arch;
    static const std::map<std::string, std::string> types = {
        {"llama", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"qwen3moe", "qwen3_moe"}, {"gemma", "gemma"},
        {"gemma2", "gemma2"}, {"gemma3", "gemma3_text"}, {"phi3", "phi3"}, {"gpt2", "gpt2"}, {"gpt-oss", "gpt_oss"}};
    auto t = types.find(arch);
    if (t == types.end()) {
        std::vector<std::string> names;
        for (const auto& [k, v] : types) names.push_back(k);
        throw InvalidArgument(f.origin + ": general.architecture '" + arch + "' is not supported; supported: " + join(names));
    }
    a.model_type = t->second;
    if (const GgufValue* v = f.find("general.name"); v && v->is_string()) a.name = utf8_or_replaced(v->as_string());
    a.id = a.name.empty() ? arch : a.name;
    a.source = f.origin;
    constexpr double kInt = 2147483647;
    a.n_layer = static_cast<int>(integer("block_count", -1, kMaxLayers));
    if (a.n_layer < 1 || a.n_layer > kMaxLayers)
        throw InvalidArgument(f.origin + ": " + key("block_count") + " must be within [1, " + std::to_string(kMaxLayers) +
                              "], got " + std::to_string(a.n_layer));
    // A per-layer size: a scalar for every layer, or an array of one whole number per layer.
    auto per_layer = [&](const std::string& k, double fallback, double hi) -> std::vector<double> {
        const GgufValue* v = f.find(key(k));
        if (!v || !v->is_array()) return std::vector<double>(static_cast<std::size_t>(a.n_layer), integer(k, fallback, hi));
        const std::vector<std::int64_t> xs = v->as_int_array();
        if (xs.size() != static_cast<std::size_t>(a.n_layer))
            throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "' is an array of " + std::to_string(xs.size()) +
                                  " values; a per-layer array needs one per layer (" + key("block_count") + " " +
                                  std::to_string(a.n_layer) + ")");
        std::vector<double> out;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            if (xs[i] < 0 || static_cast<double>(xs[i]) > hi)
                throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "'[" + std::to_string(i) + "] is " +
                                      std::to_string(xs[i]) + "; it must be a whole number within [0, " + num_text(hi) + "]");
            out.push_back(static_cast<double>(xs[i]));
        }
        return out;
    };
    // Head counts that differ between layers would change every layer's attention and KV cache: refused, not
    // read as their first element.
    auto uniform = [&](const std::string& k, const std::vector<double>& xs) -> double {
        for (std::size_t i = 1; i < xs.size(); ++i)
            if (xs[i] != xs[0])
                throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "' differs between layers (layer 0: " +
                                      num_text(xs[0]) + ", layer " + std::to_string(i) + ": " + num_text(xs[i]) +
                                      "); per-layer head counts that differ are not supported");
        return xs.empty() ? 0.0 : xs[0];
    };
    a.hidden = integer("embedding_length", -1);
    const std::vector<double> ffn_of_layer = per_layer("feed_forward_length", 0, 1e12);
    a.ffn = *std::max_element(ffn_of_layer.begin(), ffn_of_layer.end());
    a.n_head = static_cast<int>(uniform("attention.head_count", per_layer("attention.head_count", -1, kInt)));
    a.n_kv_head = static_cast<int>(uniform("attention.head_count_kv", per_layer("attention.head_count_kv", a.n_head, kInt)));
    // the counts the rest divides by, named by their GGUF keys (check_architecture names the HF fields)
    if (a.hidden < 1) throw InvalidArgument(f.origin + ": metadata key '" + key("embedding_length") + "' must be >= 1, got 0");
    if (a.n_head < 1)
        throw InvalidArgument(f.origin + ": metadata key '" + key("attention.head_count") + "' must be >= 1, got " +
                              std::to_string(a.n_head));
    if (a.n_kv_head < 1 || a.n_head % a.n_kv_head != 0)
        throw InvalidArgument(f.origin + ": metadata key '" + key("attention.head_count_kv") + "' (" +
                              std::to_string(a.n_kv_head) + ") must be >= 1 and divide '" + key("attention.head_count") +
                              "' (" + std::to_string(a.n_head) + ")");
    a.max_context = integer("context_length", 0);
    a.head_dim = integer("attention.key_length", a.n_head > 0 ? a.hidden / a.n_head : 0);
    a.n_expert = static_cast<int>(integer("expert_count", 0, kInt));
    a.n_expert_used = static_cast<int>(integer("expert_used_count", 0, kInt));
    a.expert_ffn = integer("expert_feed_forward_length", a.ffn);
    const double window = integer("attention.sliding_window", 0);
    if (a.model_type == "gpt2") {
        a.norm = NormKind::layernorm;
        a.mlp = MlpKind::plain;
        a.position = PositionKind::learned;
        a.activation = "gelu";
        a.linear_bias = a.qkv_bias = a.fused_qkv = true;
    }
    a.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
    a.post_norms = f.find_tensor("blk.0.post_ffw_norm.weight") != nullptr;
    a.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    a.fused_gate_up = a.model_type == "phi3";
    a.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr || f.find_tensor("blk.0.attn_qkv.bias") != nullptr;
    a.tied_embeddings = f.find_tensor("output.weight") == nullptr;
    if (const GgufTensor* emb = f.find_tensor("token_embd.weight"); emb && emb->shape.size() >= 2)
        a.vocab = static_cast<double>(emb->shape[1]);
    else
        throw InvalidArgument(f.origin + ": tensor 'token_embd.weight' (2-D) is required");
    a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    if (window > 0) {
        Architecture tmp = a;  // reuse the family patterns of the HF reader
        nlohmann::json c{{"sliding_window", window}, {"use_sliding_window", true}};
        read_windows(tmp, c);
        a.window = tmp.window;
    }
    a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), false);
    for (const auto& tensor : f.tensors) {
        WeightTensor w;
        w.name = utf8_or_replaced(tensor.name);
        std::string base = w.name;
        for (const char* suffix : {".weight", ".bias"}) {
            const std::string s(suffix);
            if (base.size() > s.size() && base.compare(base.size() - s.size(), s.size(), s) == 0) {
                base.resize(base.size() - s.size());
                break;
            }
        }
        if (base.rfind("blk.", 0) == 0) {
            const auto dot = base.find('.', 4);
            w.layer = dot == std::string::npos ? -1 : layer_number(base.substr(4, dot - 4));
            w.role = dot == std::string::npos ? base : base.substr(dot + 1);
            if (w.layer >= 0 && w.layer < a.n_layer && w.role == "ffn_gate_exps")
                a.moe_layer[static_cast<std::size_t>(w.layer)] = true;
        } else {
            w.role = base;
        }
        for (auto d : tensor.shape) w.shape.push_back(static_cast<double>(d));
        const bool bias = base.size() != w.name.size() && w.name.compare(base.size(), 5, ".bias") == 0;
        // MLA's per-head up-projections are stacks of one matrix per head: [rows, columns, heads]
        const bool per_head = w.role == "attn_k_b" || w.role == "attn_v_b";
        const std::size_t dims = per_head ? 3 : 2;
        if (!bias && (is_linear_role(w.role) || w.role == "ffn_gate_inp") && w.shape.size() < dims) {
            std::string shape;
            for (auto d : tensor.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
            throw InvalidArgument(f.origin + ": tensor '" + w.name + "' has shape [" + shape + "]; a '" + w.role +
                                  (per_head ? "' weight must be a stack of per-head matrices (3 dimensions)"
                                            : "' weight must be a matrix (2 or more dimensions)"));
        }
        m.tensors.push_back(std::move(w));
        m.file_types.push_back(tensor.type);
    }
    check_architecture(a, f.origin);
    check_gguf_tensors(m, f, key, ffn_of_layer);
    return m;
}

double Model::parameters() const {
    double n = 0;
    for (const auto& t : tensors) n += t.elements();
    return n;
}

}  // namespace roofline
