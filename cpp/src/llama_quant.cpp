#include "roofline/llama_quant.hpp"

#include "roofline/errors.hpp"
#include "roofline/quant.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_map>

// Source read: ggml-org/llama.cpp src/llama-quant.cpp at commit 007dbbf3fd17eefe9b47fee45f48f7ba5e62b714
// (llama_tensor_get_type_impl, tensor_type_fallback, tensor_allows_quantization, llama_ftype_get_default_type,
// init_quantize_state_counters, llama_model_quantize_default_params), with src/llama-model-loader.h
// (weight_name_comparer: the order tensors are visited in) and the model-type switches of src/llama-model.cpp /
// src/models/*.cpp (which models count as LLM_TYPE_70B). Cross-checked against the older ggerganov/llama.cpp
// src/llama-quant.cpp at 059325d9b4bf046fc38278c4157d8791333129b1 (same rules; its row-length fallback sent
// Q2_K / Q3_K to IQ4_NL where the newer one sends them to Q4_0) and against llama.cpp's own type-selection
// snapshot tests/snapshots/qwen3-0.6b.schema (tests/cpp/test_llama_quant.cpp reproduces it for every file type).
// The code below is written from those rules, not copied.

namespace roofline {

namespace {

// GGML type ids (ggml.h enum ggml_type); sizes come from quant.hpp's table.
enum T : int {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
    IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

// llama_ftype values we model (our own enum; names as llama-quantize spells them).
enum class Mix {
    F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
    Q2_K, Q2_K_S, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K,
    IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M, IQ4_NL, IQ4_XS,
    TQ1_0, TQ2_0, MXFP4_MOE,
};

struct MixInfo {
    const char* name;
    Mix mix;
    int default_type;  // llama_ftype_get_default_type
};

const std::array<MixInfo, 33> kMixes{{
    {"F32", Mix::F32, F32},           {"F16", Mix::F16, F16},           {"BF16", Mix::BF16, BF16},
    {"Q4_0", Mix::Q4_0, Q4_0},        {"Q4_1", Mix::Q4_1, Q4_1},        {"Q5_0", Mix::Q5_0, Q5_0},
    {"Q5_1", Mix::Q5_1, Q5_1},        {"Q8_0", Mix::Q8_0, Q8_0},        {"Q2_K", Mix::Q2_K, Q2_K},
    {"Q2_K_S", Mix::Q2_K_S, Q2_K},    {"Q3_K_S", Mix::Q3_K_S, Q3_K},    {"Q3_K_M", Mix::Q3_K_M, Q3_K},
    {"Q3_K_L", Mix::Q3_K_L, Q3_K},    {"Q4_K_S", Mix::Q4_K_S, Q4_K},    {"Q4_K_M", Mix::Q4_K_M, Q4_K},
    {"Q5_K_S", Mix::Q5_K_S, Q5_K},    {"Q5_K_M", Mix::Q5_K_M, Q5_K},    {"Q6_K", Mix::Q6_K, Q6_K},
    {"IQ1_S", Mix::IQ1_S, IQ1_S},     {"IQ1_M", Mix::IQ1_M, IQ1_M},     {"IQ2_XXS", Mix::IQ2_XXS, IQ2_XXS},
    {"IQ2_XS", Mix::IQ2_XS, IQ2_XS},  {"IQ2_S", Mix::IQ2_S, IQ2_XS},    {"IQ2_M", Mix::IQ2_M, IQ2_S},
    {"IQ3_XXS", Mix::IQ3_XXS, IQ3_XXS}, {"IQ3_XS", Mix::IQ3_XS, IQ3_S}, {"IQ3_S", Mix::IQ3_S, IQ3_S},
    {"IQ3_M", Mix::IQ3_M, IQ3_S},     {"IQ4_NL", Mix::IQ4_NL, IQ4_NL},  {"IQ4_XS", Mix::IQ4_XS, IQ4_XS},
    {"TQ1_0", Mix::TQ1_0, TQ1_0},     {"TQ2_0", Mix::TQ2_0, TQ2_0},     {"MXFP4_MOE", Mix::MXFP4_MOE, MXFP4},
}};

const MixInfo* find_mix(std::string_view name) {
    std::string lower = to_lower(name);
    // llama-quantize's aliases
    if (lower == "q3_k") lower = "q3_k_m";
    if (lower == "q4_k") lower = "q4_k_m";
    if (lower == "q5_k") lower = "q5_k_m";
    for (const auto& m : kMixes)
        if (to_lower(m.name) == lower) return &m;
    return nullptr;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }
bool ends_with(const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// llama.cpp's broad tensor roles (tensor_get_category): output and token embeddings by exact name, the rest by
// substring, in this order.
enum class Role { token_embd, attn_q, attn_v, attn_k, attn_qkv, attn_kv_b, attn_output, ffn_up, ffn_gate, ffn_down,
                  output, other };

Role role_of(const std::string& name) {
    if (name == "output.weight") return Role::output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Role::token_embd;
    // Every marker below contains "attn_" or "ffn_": a name with neither is 'other' after two scans, not nine.
    if (contains(name, "attn_")) {
        if (contains(name, "attn_qkv.weight")) return Role::attn_qkv;
        if (contains(name, "attn_kv_b.weight")) return Role::attn_kv_b;
        if (contains(name, "attn_v.weight")) return Role::attn_v;
        if (contains(name, "attn_k.weight")) return Role::attn_k;
        if (contains(name, "attn_q.weight")) return Role::attn_q;
        if (contains(name, "attn_output.weight")) return Role::attn_output;
    }
    if (contains(name, "ffn_")) {
        if (contains(name, "ffn_up")) return Role::ffn_up;
        if (contains(name, "ffn_gate")) return Role::ffn_gate;
        if (contains(name, "ffn_down")) return Role::ffn_down;
    }
    return Role::other;
}

// attn_v and the tensors that hold V (fused QKV, MLA's kv_b) share the attn_v rules and counter.
bool is_v_like(Role r) { return r == Role::attn_v || r == Role::attn_qkv || r == Role::attn_kv_b; }

// "blk.N." -> N, else -1 (sscanf("blk.%d.") as llama.cpp uses it).
int layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    std::size_t i = 4;
    const bool negative = i < name.size() && name[i] == '-';
    if (negative || (i < name.size() && name[i] == '+')) ++i;
    if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
    long long v = 0;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && v < 1000000000LL; ++i) v = v * 10 + (name[i] - '0');
    return static_cast<int>(negative ? -v : v);
}

// ggml_n_dims: the number of dimensions up to the last one larger than 1 (at least 1).
int n_dims(const std::vector<double>& shape) {
    int n = 1;
    for (std::size_t i = 1; i < shape.size(); ++i)
        if (shape[i] > 1) n = static_cast<int>(i) + 1;
    return n;
}

// tensor_allows_quantization (with llama-quantize's default params: not only_copy).
// Its rules on the name alone; the tensor must also have two dimensions or more (n_dims, checked by the caller).
bool name_allows_quantization(const std::string& n, const LlamaQuantOptions& opt) {
    if (!ends_with(n, "weight")) return false;
    if (contains(n, "_norm.weight")) return false;
    if (!opt.quantize_output_tensor && n == "output.weight") return false;
    if (n == "position_embd.weight" || n == "token_types.weight") return false;
    static const char* const kKeep[] = {
        "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
        "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
        "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
        "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
        "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
        ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
    };
    for (const char* k : kKeep)
        if (contains(n, k)) return false;
    return true;
}

// A name without its "blk.N" layer prefix (the "." after it kept), or the whole name of a tensor outside the layers:
// role_of and name_allows_quantization look only for markers that lie after the prefix, so names equal here get
// the same answers from them.
std::string_view layer_suffix(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return name;
    std::size_t i = 4;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    // "blk." + at least one digit + ".": a suffix starting with "." never equals a whole name the rules compare with
    if (i == 4 || i >= name.size() || name[i] != '.') return name;
    return std::string_view(name).substr(i);
}

// The type convert_hf_to_gguf.py stores a tensor llama.cpp will not quantize in: F32 for 1-D tensors, norms,
// biases (anything not ending in ".weight"), routers, position embeddings, conv1d and RWKV mixing tensors;
// otherwise the file's float type.
int source_type(const QuantTensor& t, int float_type) {
    const std::string& n = t.name;
    if (n_dims(t.shape) < 2 || ends_with(n, "_norm.weight") || !ends_with(n, ".weight")) return F32;
    static const char* const kF32[] = {
        "ffn_gate_inp", "position_embd", "token_types", "ssm_conv1d", "shortconv.conv", "time_mix_first",
        "time_mix_w1", "time_mix_w2", "time_mix_decay_w1", "time_mix_decay_w2", "time_mix_lerp_fused",
        "posnet", "altup_correct_coef", "altup_predict_coef",
    };
    for (const char* k : kF32)
        if (contains(n, k)) return F32;
    return float_type;
}

int block_size(int type) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info ? info->block_size : 1;
}

bool divisible(double n, int block) { return std::fmod(n, static_cast<double>(block)) == 0; }

std::string type_name(int type) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info ? info->name : std::to_string(type);
}

// Which models llama.cpp labels LLM_TYPE_70B (the only model type the rules look at): llama with 80 layers and
// GQA (not the 8-expert branch), qwen2 and deci with 80 layers, jais2 with 68.
bool is_70b(const QuantModelInfo& m) {
    if (m.arch == "llama") return m.n_expert != 8 && m.n_layer == 80 && m.n_head != m.n_head_kv;
    if (m.arch == "qwen2" || m.arch == "deci") return m.n_layer == 80;
    if (m.arch == "jais2") return m.n_layer == 68;
    return false;
}

// The quantizer's state: per-role counters, advanced as tensors are visited in loader order.
struct State {
    const QuantModelInfo& model;
    const LlamaQuantOptions& opt;
    Mix mix;
    int n_gqa = 0;
    bool tied = true;  // no output.weight: token_embd doubles as the output projection
    bool type_70b = false;
    int n_attention_wv = 0, n_ffn = 0;
    int i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
};

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool mix_in(Mix m, std::initializer_list<Mix> set) { return std::find(set.begin(), set.end(), m) != set.end(); }

// The layer a ffn tensor belongs to: the running counter for dense models, the name for MoE (experts are not
// stored in layer order in every file).
int ffn_layer(const State& s, int counter, const std::string& name) {
    if (std::max(1, s.model.n_expert) <= 1) return counter;
    const int layer = layer_of(name);
    if (name.rfind("blk.", 0) != 0 || layer < 0 || layer >= s.n_ffn)
        throw InvalidArgument("llama.cpp quantization: MoE tensor '" + name +
                              "' must be named 'blk.N.' with N in [0, " + std::to_string(s.n_ffn) +
                              ") (n_layer), as llama.cpp reads the layer from the name");
    return layer;
}

// llama_tensor_get_type_impl: the mix's refinement of the default type for one tensor.
int refine(State& s, int t, const QuantTensor& tensor, Role role) {
    const Mix m = s.mix;
    const std::string& arch = s.model.arch;
    const bool falcon = arch == "falcon";
    const int n_expert = s.model.n_expert;
    const bool iq12 = mix_in(m, {Mix::IQ2_XXS, Mix::IQ2_XS, Mix::IQ1_S, Mix::IQ2_S, Mix::IQ2_M, Mix::IQ1_M});
    const bool iq2_sm = m == Mix::IQ2_S || m == Mix::IQ2_M;
    const double ne0 = tensor.shape.empty() ? 1 : tensor.shape[0];
    const double ne2 = tensor.shape.size() > 2 ? tensor.shape[2] : 1;

    if (role == Role::output || (s.tied && role == Role::token_embd)) {
        // The output projection (or the embeddings that double as it) gets more bits.
        if (m == Mix::MXFP4_MOE || falcon || !divisible(ne0, block_size(t))) return Q8_0;
        if (mix_in(m, {Mix::IQ2_XXS, Mix::IQ2_XS, Mix::IQ3_XXS, Mix::IQ1_S, Mix::IQ2_S, Mix::IQ2_M, Mix::IQ1_M}))
            return Q5_K;
        return t == Q8_0 ? Q8_0 : Q6_K;
    }
    if (m == Mix::MXFP4_MOE) {
        // stacked expert tensors in MXFP4, everything else in Q8_0 (bailingmoe3: only its ffn experts)
        const bool ffn = role == Role::ffn_up || role == Role::ffn_gate || role == Role::ffn_down;
        return ne2 > 1 && (arch != "bailingmoe3" || ffn) ? MXFP4 : Q8_0;
    }
    if (role == Role::token_embd) {
        if (mix_in(m, {Mix::IQ2_XXS, Mix::IQ2_XS, Mix::IQ1_S, Mix::IQ1_M})) return Q2_K;
        if (iq2_sm || m == Mix::IQ3_XXS) return IQ3_S;
        if (m == Mix::TQ1_0 || m == Mix::TQ2_0) return Q4_K;
        return t;
    }
    if (iq12) {
        if (is_v_like(role)) {
            t = s.n_gqa >= 4 || n_expert >= 4 ? Q4_K : (iq2_sm ? IQ3_S : Q2_K);
            ++s.i_attention_wv;
        } else if (n_expert == 8 && role == Role::attn_k) {
            t = Q4_K;
        } else if (role == Role::ffn_down) {
            if (s.i_ffn_down < s.n_ffn / 8) t = iq2_sm ? IQ3_S : Q2_K;
            ++s.i_ffn_down;
        } else if (role == Role::attn_output) {
            if (n_expert == 8) t = Q5_K;
            else if (m == Mix::IQ1_S || m == Mix::IQ1_M) t = IQ2_XXS;
            else if (iq2_sm) t = IQ3_S;
        }
        return t;
    }
    if (is_v_like(role)) {
        const int i = s.i_attention_wv;
        if (m == Mix::Q2_K) t = s.n_gqa >= 4 ? Q4_K : Q3_K;
        else if (m == Mix::Q2_K_S && s.n_gqa >= 4) t = Q4_K;
        else if (m == Mix::IQ3_XXS) t = s.n_gqa >= 4 ? Q4_K : (!s.opt.imatrix ? IQ3_S : IQ3_XXS);
        else if ((m == Mix::IQ3_XS || m == Mix::IQ3_S) && s.n_gqa >= 4) t = Q4_K;
        else if (m == Mix::IQ3_M) t = Q4_K;
        else if (m == Mix::Q3_K_M) t = i < 2 ? Q5_K : Q4_K;
        else if (m == Mix::Q3_K_L) t = Q5_K;
        else if ((m == Mix::IQ4_NL || m == Mix::IQ4_XS) && s.n_gqa >= 4) t = Q5_K;
        else if ((m == Mix::Q4_K_M || m == Mix::Q5_K_M) && use_more_bits(i, s.n_attention_wv)) t = Q6_K;
        else if (m == Mix::Q4_K_S && i < 4) t = Q5_K;
        // 70B-class GQA models: attn_v is 8x smaller than attn_q, so more bits cost little
        if (s.type_70b && (t == Q3_K || t == Q4_K)) t = Q5_K;
        if (n_expert == 8) t = Q8_0;
        ++s.i_attention_wv;
        return t;
    }
    if (role == Role::attn_k) {
        if (n_expert == 8) t = Q8_0;
        else if (m == Mix::IQ3_XS) t = IQ3_XXS;
        else if (m == Mix::IQ3_XXS) t = IQ2_S;
        return t;
    }
    if (role == Role::attn_q) {
        if (m == Mix::IQ3_XS) t = IQ3_XXS;
        else if (m == Mix::IQ3_XXS) t = IQ2_S;
        return t;
    }
    if (role == Role::ffn_down) {
        const int il = ffn_layer(s, s.i_ffn_down, tensor.name);
        const int n = s.n_ffn;
        if (m == Mix::Q2_K) t = Q3_K;
        else if (m == Mix::Q2_K_S) { if (il < n / 8) t = Q4_K; }
        else if (m == Mix::IQ3_XXS && !s.opt.imatrix) t = il < n / 8 ? Q4_K : Q3_K;
        else if (m == Mix::Q3_K_M)
            t = il < n / 16 ? Q5_K : (!falcon || use_more_bits(il, n) ? Q4_K : Q3_K);
        else if (m == Mix::IQ3_M && (il < n / 8 || (n_expert == 8 && use_more_bits(il, n)))) t = Q4_K;
        else if (m == Mix::Q3_K_L) t = falcon ? Q4_K : Q5_K;
        else if (m == Mix::Q4_K_M) {
            if (falcon) t = il < n / 16 ? Q6_K : (use_more_bits(il, n) ? Q5_K : Q4_K);
            else if (use_more_bits(il, n)) t = Q6_K;
        }
        else if (il < n / 8 && (m == Mix::IQ4_NL || m == Mix::IQ4_XS) && !s.opt.imatrix) t = Q5_K;
        else if (m == Mix::Q5_K_M && use_more_bits(il, n)) t = Q6_K;
        else if (m == Mix::Q4_K_S && !falcon && il < n / 8) t = Q5_K;
        else if ((m == Mix::Q4_0 || m == Mix::Q5_0) && s.opt.imatrix && il < n / 8) t = m == Mix::Q4_0 ? Q4_1 : Q5_1;
        ++s.i_ffn_down;
        return t;
    }
    if (role == Role::attn_output) {
        if (!falcon) {
            if (n_expert == 8) {
                if (mix_in(m, {Mix::Q2_K, Mix::IQ3_XS, Mix::IQ3_XXS, Mix::Q3_K_S, Mix::Q3_K_M, Mix::IQ4_NL,
                               Mix::Q4_K_S, Mix::Q4_K_M, Mix::IQ3_S, Mix::IQ3_M, Mix::IQ4_XS}))
                    t = Q5_K;
            } else if (m == Mix::Q2_K) t = Q3_K;
            else if (m == Mix::IQ3_XXS) t = IQ3_S;
            else if (m == Mix::Q3_K_M) t = Q4_K;
            else if (m == Mix::Q3_K_L) t = Q5_K;
            else if (m == Mix::IQ3_M) t = Q4_K;
        } else if (m == Mix::Q3_K_L) {
            t = Q4_K;
        }
        return t;
    }
    if (role == Role::attn_qkv) return t;  // unreachable: fused QKV takes the attn_v rules above
    if (role == Role::ffn_gate || role == Role::ffn_up) {
        int& counter = role == Role::ffn_gate ? s.i_ffn_gate : s.i_ffn_up;
        const int il = ffn_layer(s, counter, tensor.name);
        if (m == Mix::IQ3_XS && il >= s.n_ffn / 8 && il < 7 * s.n_ffn / 8) t = IQ3_XXS;
        ++counter;
        return t;
    }
    return t;
}

// tensor_type_fallback: a row length the chosen type's block does not divide falls back to a type whose does.
int fallback(int t, const QuantTensor& tensor) {
    const double ncols = tensor.shape.empty() ? 1 : tensor.shape[0];
    if (divisible(ncols, block_size(t))) return t;
    int r = 0;
    switch (t) {
        case IQ1_S: case IQ1_M: case IQ2_XXS: case IQ2_XS: case IQ2_S: case IQ3_XXS: case IQ3_S: case IQ4_XS:
            r = IQ4_NL; break;
        case Q2_K: case Q3_K: case TQ1_0: case TQ2_0: r = Q4_0; break;
        case Q4_K: r = Q5_0; break;
        case Q5_K: r = Q5_1; break;
        case Q6_K: r = Q8_0; break;
        default:
            throw InvalidArgument("llama.cpp quantization: tensor '" + tensor.name + "' has rows of " +
                                  std::to_string(static_cast<long long>(ncols)) + " elements, not a multiple of " +
                                  type_name(t) + "'s block of " + std::to_string(block_size(t)) +
                                  ", and llama.cpp defines no fallback for " + type_name(t));
    }
    return divisible(ncols, block_size(r)) ? r : F16;
}

}  // namespace

std::vector<std::string> llama_mix_names() {
    std::vector<std::string> names;
    for (const auto& m : kMixes) names.emplace_back(m.name);
    return names;
}

bool is_llama_mix(std::string_view name) { return find_mix(name) != nullptr; }

std::vector<int> llama_mix_types(std::string_view mix, const std::vector<QuantTensor>& tensors,
                                 const QuantModelInfo& info, const LlamaQuantOptions& options) {
    const MixInfo* mi = find_mix(mix);
    if (!mi) throw NotFound(unknown_name_message("llama.cpp quantization mix", mix, llama_mix_names()));
    check_range("n_layer", info.n_layer, 0, 1e6);
    check_range("n_head", info.n_head, 0, 1e6);
    check_range("n_head_kv", info.n_head_kv, 0, 1e6);
    check_range("n_expert", info.n_expert, 0, 1e6);
    for (const auto& t : tensors)
        for (double d : t.shape)
            if (!is_count(d)) check_count("shape of tensor '" + t.name + "'", d);  // the name built only to report

    State s{info, options, mi->mix};
    s.n_gqa = info.n_head_kv > 0 ? info.n_head / info.n_head_kv : 0;
    s.type_70b = is_70b(info);
    s.n_ffn = info.n_layer;
    // each tensor's role and name rules, worked out once per distinct layer_suffix (names repeat in every layer)
    struct NameFacts {
        Role role;
        bool allows;
    };
    std::unordered_map<std::string_view, NameFacts> by_suffix;
    std::vector<NameFacts> facts;
    facts.reserve(tensors.size());
    for (const auto& t : tensors) {
        const std::string_view key = layer_suffix(t.name);
        auto it = by_suffix.find(key);
        if (it == by_suffix.end()) it = by_suffix.emplace(key, NameFacts{role_of(t.name), name_allows_quantization(t.name, options)}).first;
        facts.push_back(it->second);
        const Role r = it->second.role;
        if (is_v_like(r)) ++s.n_attention_wv;
        if (r == Role::output) s.tied = false;
    }

    const int default_type = mi->default_type;
    const bool quantized = default_type != F32 && default_type != F16 && default_type != BF16;
    const int float_type = quantized ? F16 : default_type;

    // Visit in llama_model_loader's order (layer number, then name; non-layer tensors first): the counters that
    // pick "more bits" layers advance in that order.
    std::vector<std::size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::vector<int> layer(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) layer[i] = layer_of(tensors[i].name);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (layer[a] != layer[b]) return layer[a] < layer[b];
        return tensors[a].name < tensors[b].name;
    });

    std::vector<int> types(tensors.size(), F32);
    for (std::size_t i : order) {
        const QuantTensor& t = tensors[i];
        if (n_dims(t.shape) < 2 || !facts[i].allows) {  // tensor_allows_quantization
            types[i] = source_type(t, float_type);
            continue;
        }
        if (!quantized) {
            types[i] = default_type;
            continue;
        }
        int type = default_type;
        if (!options.pure) type = refine(s, type, t, facts[i].role);
        types[i] = fallback(type, t);
    }
    return types;
}

}  // namespace roofline
