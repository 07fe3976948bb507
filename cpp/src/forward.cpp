#include "roofline/forward.hpp"

#include "roofline/errors.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/embedding.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

namespace roofline {

namespace {

// FLOPs per element of an activation function, applied once per element (gated: act(gate) * up adds 1).
double activation_flops(const std::string& act) {
    const std::string a = to_lower(act);
    if (a.find("gelu") != std::string::npos) return 8;  // tanh approximation: x·(1 + tanh(√(2/π)(x + 0.044715x³)))/2
    return 4;                                            // silu: x / (1 + exp(−x))
}

// What forward_slots does with a layer tensor of a role (one hash lookup instead of a chain of comparisons).
enum class Role { other, norm, q_norm, k_norm, latent_norm, projection, latent_up, router, experts, attn_output, ffn_down,
                  shared_down };
Role role_kind(const std::string& role) {
    static const std::unordered_map<std::string, Role> roles = {
        {"attn_norm", Role::norm}, {"ffn_norm", Role::norm}, {"post_attention_norm", Role::norm},
        {"mtp_e_norm", Role::norm}, {"mtp_h_norm", Role::norm}, {"mtp_eh_proj", Role::projection},
        {"post_ffw_norm", Role::norm}, {"attn_q_norm", Role::q_norm}, {"attn_k_norm", Role::k_norm},
        {"attn_q", Role::projection}, {"attn_k", Role::projection}, {"attn_v", Role::projection},
        {"attn_qkv", Role::projection}, {"ffn_gate", Role::projection}, {"ffn_up", Role::projection},
        {"ffn_gate_shexp", Role::projection}, {"ffn_up_shexp", Role::projection}, {"ffn_down_shexp", Role::shared_down},
        {"attn_q_a", Role::projection}, {"attn_q_b", Role::projection}, {"attn_kv_a_mqa", Role::projection},
        {"attn_q_a_norm", Role::latent_norm}, {"attn_kv_a_norm", Role::latent_norm}, {"attn_k_b", Role::latent_up},
        {"attn_v_b", Role::latent_up},
        {"ffn_gate_inp", Role::router}, {"ffn_gate_exps", Role::experts}, {"ffn_up_exps", Role::experts},
        {"ffn_down_exps", Role::experts}, {"attn_output", Role::attn_output}, {"ffn_down", Role::ffn_down}};
    const auto it = roles.find(role);
    return it == roles.end() ? Role::other : it->second;
}

bool same_format(const Format& x, const Format& y) {
    return x.name == y.name && x.bits_per_element == y.bits_per_element && x.compute == y.compute &&
           x.dequant_flops_per_element == y.dequant_flops_per_element;
}

// A hash of what same_slot compares but the kernel paths (which follow from the format under one engine):
// equal slots hash equal, so merging a candidate looks at the slots of its hash only.
std::size_t slot_hash(const OpSlot& s) {
    std::size_t h = std::hash<std::string>{}(s.name);
    auto mix = [&h](double v) { h ^= std::hash<double>{}(v == 0 ? 0.0 : v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (double v : {static_cast<double>(s.kind), static_cast<double>(s.per_sequence), static_cast<double>(s.builder),
                     static_cast<double>(s.fused_at_one_row), static_cast<double>(s.merged_at_one_row),
                     static_cast<double>(s.phase), s.scale, s.a, s.b, s.c, s.k, s.n, s.experts, s.top_k, s.groups, s.heads,
                     s.kv_heads, s.head_dim, s.window, s.latent, s.rope_dim, s.v_dim, s.bytes_per_row,
                     s.format.bits_per_element})
        mix(v);
    h ^= std::hash<std::string>{}(s.format.name) + (h << 6) + (h >> 2);
    return h;
}

// Everything but the count: two slots that compare equal cost the same at every point.
bool same_slot(const OpSlot& x, const OpSlot& y) {
    return x.kind == y.kind && x.per_sequence == y.per_sequence && x.builder == y.builder && x.phase == y.phase &&
           x.scale == y.scale && x.a == y.a && x.b == y.b && x.c == y.c && x.k == y.k && x.n == y.n &&
           x.experts == y.experts && x.top_k == y.top_k && x.groups == y.groups && x.heads == y.heads &&
           x.kv_heads == y.kv_heads && x.head_dim == y.head_dim && x.window == y.window && x.latent == y.latent &&
           x.rope_dim == y.rope_dim && x.v_dim == y.v_dim && x.bytes_per_row == y.bytes_per_row && x.name == y.name && same_format(x.format, y.format) &&
           x.fused_at_one_row == y.fused_at_one_row && x.merged_at_one_row == y.merged_at_one_row && x.paths == y.paths;
}


}  // namespace

std::vector<LinearPath> linear_paths(const Format& f, const PhaseOptions& opt) {
    std::vector<LinearPath> out;
    for (const LinearKernel* kp : kernels_for(*opt.linear_kernels, f, "any", opt.engine_id)) {
        const LinearKernel& k = *kp;
        LinearPath p;
        p.max_rows = k.max_rows;
        p.unit = k.unit;
        p.compute = k.compute == "activation" ? opt.activation.compute
                    : k.compute == "weights"  ? f.compute
                                              : parse_dtype(k.compute);
        p.tile_m = k.tile_m;
        p.tile_n = k.tile_n;
        p.stream_k = k.stream_k;
        p.moe_tile_from_batch = k.moe_tile_from_batch;
        p.row_tile_step = k.row_tile_step;
        p.dequant_every_rows = k.dequant_every_rows;
        p.dequant_overlapped = k.dequant_overlapped;
        p.efficiency = k.efficiency;
        p.tiles_per_unit = k.tiles_per_unit;
        p.split_k = k.split_k;
        if (!k.by_family.empty()) p.family_kernel = std::shared_ptr<const LinearKernel>(opt.linear_kernels, kp);
        p.alu_ops_per_mac = k.alu_ops_for(f);
        p.alu_format = k.alu_format;
        p.alu_on_issue = k.alu_on_issue;
        p.alu_weight_share = k.alu_weight_share;
        p.launches = k.launches;
        p.moe_launches = k.moe_launches > 0 ? k.moe_launches : k.launches;
        p.families = k.families;
        p.max_experts = k.max_experts;
        if (!k.fallback_compute.empty()) {
            p.has_fallback = true;
            p.fallback = k.fallback_compute == "activation" ? opt.activation.compute : parse_dtype(k.fallback_compute);
        }
        out.push_back(p);
    }
    return out;
}

bool same_slots_under(const PhaseOptions& x, const PhaseOptions& y) {
    return same_format(x.activation, y.activation) && same_format(x.kv, y.kv) && x.attention == y.attention &&
           x.logits_last_token_only == y.logits_last_token_only && x.fused_qkv == y.fused_qkv &&
           x.matvec_fused_bias == y.matvec_fused_bias && x.matvec_fused_glu == y.matvec_fused_glu &&
           x.vocab_parallel == y.vocab_parallel && x.tensor_parallel == y.tensor_parallel &&
           x.pipeline_stages == y.pipeline_stages;
}

void assign_paths(std::vector<OpSlot>& slots, const PhaseOptions& options) {
    std::vector<std::pair<std::string, std::vector<LinearPath>>> by_format;
    for (OpSlot& s : slots) {
        if (s.kind != SlotKind::linear && s.kind != SlotKind::moe) continue;
        auto it = std::find_if(by_format.begin(), by_format.end(), [&](const auto& x) { return x.first == s.format.name; });
        if (it == by_format.end()) {
            by_format.emplace_back(s.format.name, linear_paths(s.format, options));
            it = by_format.end() - 1;
        }
        s.paths = it->second;
    }
}

namespace {

// The slots of one forward pass, layer by layer; layers identical to one seen before are merged without a search.
struct SlotBuilder {
    const Model& m;
    const std::vector<TensorFormat>& formats;
    const PhaseOptions& opt;
    std::vector<OpSlot> slots;
    std::vector<OpSlot> layer;  // the current layer's candidates
    std::vector<std::pair<std::string, std::vector<LinearPath>>> paths_by_format;  // the engine's kernels per format

    // The engine's kernels for linear layers of weights in `f`, resolved once per format.
    const std::vector<LinearPath>& paths(const Format& f) {
        for (const auto& [name, p] : paths_by_format)
            if (name == f.name) return p;
        paths_by_format.emplace_back(f.name, linear_paths(f, opt));
        return paths_by_format.back().second;
    }

    double tp() const { return static_cast<double>(opt.tensor_parallel); }

    OpSlot& add(std::string name, SlotKind kind) {
        OpSlot s;
        s.name = std::move(name);
        s.kind = kind;
        s.count = 1;
        s.format = opt.activation;
        layer.push_back(std::move(s));
        return layer.back();
    }
    OpSlot& rows(std::string name, RowsBuilder builder, double scale, double a, double b = 0, double c = 0) {
        OpSlot& s = add(std::move(name), SlotKind::rows);
        s.builder = builder;
        s.scale = scale;
        s.a = a;
        s.b = b;
        s.c = c;
        return s;
    }
    // A projection through weight tensor i: x[rows × ne0] · W → [rows × ne1], its outputs split over the
    // tensor-parallel ranks unless `split` is false (a matrix every rank holds whole).
    OpSlot& linear(std::size_t i, std::string name, bool split = true) {
        const WeightTensor& w = m.tensors[i];
        const std::vector<LinearPath>& p = paths(formats[i].format);
        OpSlot& s = add(std::move(name), SlotKind::linear);
        s.format = formats[i].format;
        s.k = w.shape[0];
        s.n = split ? w.shape[1] / tp() : w.shape[1];
        s.paths = p;
        return s;
    }
    // Q, K and V of the current layer as one "attn_qkv" GEMM over their concatenated outputs, where the three
    // read the same input in the same format (a mix that stores attn_v differently keeps three kernels).
    void fuse_qkv() {
        auto find = [&](const char* name) {
            return std::find_if(layer.begin(), layer.end(),
                                [&](const OpSlot& s) { return s.kind == SlotKind::linear && s.name == name; });
        };
        const auto q = find("attn_q"), k = find("attn_k"), v = find("attn_v");
        if (q == layer.end() || k == layer.end() || v == layer.end()) return;
        if (q->k != k->k || q->k != v->k || !same_format(q->format, k->format) || !same_format(q->format, v->format))
            return;
        q->name = "attn_qkv";
        q->n += k->n + v->n;
        const auto ik = k - layer.begin(), iv = v - layer.begin();
        layer.erase(layer.begin() + std::max(ik, iv));
        layer.erase(layer.begin() + std::min(ik, iv));
    }
    OpSlot& moe(std::size_t i, std::string name) {
        const WeightTensor& w = m.tensors[i];
        const std::vector<LinearPath>& p = paths(formats[i].format);
        OpSlot& s = add(std::move(name), SlotKind::moe);
        s.format = formats[i].format;
        s.paths = p;
        s.k = w.shape[0];
        s.n = w.shape[1] / tp();
        s.experts = w.shape.size() > 2 ? w.shape[2] : 1;
        s.top_k = m.arch.n_expert_used;
        return s;
    }
    // Summing the partial outputs of the tensor-parallel ranks: timed by the estimator on the interconnect.
    void all_reduce() { add("all_reduce", SlotKind::all_reduce).bytes_per_row = m.arch.hidden * opt.activation.bytes_per_element(); }
    void norm(const std::string& name) {
        rows(name, m.arch.norm == NormKind::rmsnorm ? RowsBuilder::rmsnorm : RowsBuilder::layernorm, 1, m.arch.hidden);
    }

    // Merge one candidate into the pass: the index of the slot it joined or started. Expected O(1): only the
    // slots of the same hash are compared, so a pass of L distinct layers builds in O(L), not O(L²).
    std::unordered_multimap<std::size_t, std::size_t> by_hash;
    std::size_t merge(const OpSlot& s) {
        const std::size_t h = slot_hash(s);
        const auto [from, to] = by_hash.equal_range(h);
        for (auto it = from; it != to; ++it)
            if (same_slot(slots[it->second], s)) {
                slots[it->second].count += s.count;
                return it->second;
            }
        slots.push_back(s);
        by_hash.emplace(h, slots.size() - 1);
        return slots.size() - 1;
    }
};

}  // namespace

bool replicated_under_tensor_parallel(const WeightTensor& w, const PhaseOptions& options) {
    const std::string_view r = w.role;  // compared by length first
    if (r == "token_embd" || r == "output") return !options.vocab_parallel;
    // MLA's down-projections to the q and KV latents: every rank computes the whole latent (vLLM ReplicatedLinear),
    // and DeepSeek's router bias
    if (r == "attn_q_a" || r == "attn_kv_a_mqa" || r == "exp_probs_b") return true;
    // the MTP module's projection of [embedding; hidden]: a plain nn.Linear on every rank (vLLM deepseek_mtp.py,
    // SGLang deepseek_nextn.py)
    if (r == "mtp_eh_proj") return true;
    return is_norm_role(r) || r == "position_embd" ||
           (w.is_bias() && (r == "attn_output" || r == "ffn_down" || r == "ffn_down_exps" || r == "ffn_gate_inp"));
}

std::vector<OpSlot> forward_slots(const Model& model, const std::vector<TensorFormat>& formats, const PhaseOptions& options) {
    if (options.tensor_parallel < 1)
        throw InvalidArgument("tensor_parallel must be >= 1, got " + std::to_string(options.tensor_parallel));
    if (formats.size() != model.tensors.size())
        throw InvalidArgument("forward_ops: one format per weight tensor is needed");
    const Architecture& a = model.arch;
    const double tp = options.tensor_parallel;
    // the KV heads split over the ranks, or, with more ranks than KV heads, replicated: one per rank (vLLM's
    // QKVParallelLinear, TensorRT-LLM), which needs the ranks to be a multiple of the KV heads
    const int tpi = options.tensor_parallel;
    if (a.n_head % tpi != 0 || (a.n_kv_head % tpi != 0 && tpi % a.n_kv_head != 0))
        throw InvalidArgument("tensor_parallel " + std::to_string(tpi) + " must divide the heads (" + std::to_string(a.n_head) +
                              ") and divide, or be a multiple of, the KV heads (" + std::to_string(a.n_kv_head) + ")");
    SlotBuilder b{model, formats, options, {}, {}, {}, {}};
    const double H = a.hidden;
    const double heads = a.n_head / tp, kv_heads = tp > a.n_kv_head ? 1.0 : a.n_kv_head / tp, d = a.head_dim;
    auto flush = [&] {
        for (const auto& s : b.layer) b.merge(s);
        b.layer.clear();
    };

    // Embedding: gather the rows of the new tokens.
    for (std::size_t i = 0; i < model.tensors.size(); ++i) {
        const auto& t = model.tensors[i];
        if (t.role == "token_embd" || t.role == "position_embd")
            b.rows(t.role, RowsBuilder::embedding, 1, H).format = formats[i].format;
    }
    flush();

    // Tensors grouped by layer, each layer in file order.
    std::vector<std::size_t> order;
    order.reserve(model.tensors.size());
    for (std::size_t i = 0; i < model.tensors.size(); ++i)
        if (model.tensors[i].layer >= 0 && model.tensors[i].layer < a.n_layer) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return model.tensors[x].layer < model.tensors[y].layer; });

    // Layers whose attention output or dense MLP down projection has a bias: there the add after the mat-vec is the
    // bias's, and the residual add comes after it (one pass over the tensors)
    std::vector<char> o_bias(static_cast<std::size_t>(a.n_layer), 0), down_bias(static_cast<std::size_t>(a.n_layer), 0);
    for (const auto& w : model.tensors)
        if (w.is_bias() && w.layer >= 0 && w.layer < a.n_layer) {
            if (w.role == "attn_output") o_bias[static_cast<std::size_t>(w.layer)] = 1;
            if (w.role == "ffn_down") down_bias[static_cast<std::size_t>(w.layer)] = 1;
        }
    // a one-row mat-vec applies the add right after it (matvec_fused_bias): the residual add, where no bias, norm
    // (Gemma's post-norms) or all-reduce comes between
    auto residual_fused = [&](bool biased) { return options.matvec_fused_bias && tp == 1 && !a.post_norms && !biased; };

    // Distinct layers seen so far: their candidates and the slots those joined.
    std::vector<std::pair<std::vector<OpSlot>, std::vector<std::size_t>>> seen;
    std::size_t pos = 0;
    for (int l = 0; l < a.n_layer; ++l) {
        const double window = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
        const bool rope = a.position == PositionKind::rope && (a.nope_layer.empty() || !a.nope_layer[static_cast<std::size_t>(l)]);
        Format latent_weights = options.activation;  // MLA: attn_k_b's format, for the prefill's expansion of the past
        for (; pos < order.size() && model.tensors[order[pos]].layer == l; ++pos) {
            const std::size_t t = order[pos];
            const WeightTensor& w = model.tensors[t];
            const std::string& r = w.role;
            if (w.is_bias()) {
                if (is_norm_role(r)) continue;  // counted by the layer norm
                // a bias add reads and writes each activation once; the bias, one row per kernel, stays in cache and
                // is not counted. A stacked expert bias [n, experts] is added to the rows routed to each expert
                // (llama.cpp ggml_add_id): top_k × n elements per token, not the whole stack. A mat-vec may apply
                // the bias of its own output; the router's selection bias (exp_probs_b) follows its sigmoid instead
                const bool stacked = role_kind(r) == Role::experts && !w.shape.empty();  // a GGUF's shape may be empty
                const double per_token = stacked ? a.n_expert_used * w.shape[0] : w.elements();
                b.rows(r + ".bias", RowsBuilder::elementwise, per_token / (replicated_under_tensor_parallel(w, options) ? 1 : tp), 1, 1, 1)
                    .fused_at_one_row = options.matvec_fused_bias && r != "exp_probs_b";
                continue;
            }
            switch (role_kind(r)) {
            case Role::norm:
                b.norm(r);
                break;
            case Role::q_norm:
                b.rows(r, RowsBuilder::rmsnorm, heads, d);
                break;
            case Role::k_norm:
                b.rows(r, RowsBuilder::rmsnorm, kv_heads, d);
                break;
            case Role::latent_norm:  // MLA: RMSNorm of the q or KV latent, on every rank
                b.rows(r, RowsBuilder::rmsnorm, 1, w.shape[0]);
                break;
            case Role::projection: {
                OpSlot& s = b.linear(t, r, !replicated_under_tensor_parallel(w, options));
                if ((r == "attn_k" || r == "attn_v") && tp > a.n_kv_head) s.n = w.shape[1] / a.n_kv_head;  // one head, replicated
                // the up product of a gated MLP runs in the gate's mat-vec where that kernel applies the GLU
                if ((r == "ffn_up" || r == "ffn_up_shexp") && a.mlp == MlpKind::gated && !a.fused_gate_up)
                    s.merged_at_one_row = options.matvec_fused_glu;
                break;
            }
            case Role::latent_up: {
                // MLA's kv_b_proj per head, [qk_nope, kv_lora_rank, heads] (attn_k_b) and [kv_lora_rank, v_head_dim,
                // heads] (attn_v_b). Decode (absorbed): q_nope × W_UK into the latent, and the latent attention output
                // × W_UV, per head — a batched GEMM of heads per rank. Prefill (expanded): the new tokens' latent ×
                // W_UK, W_UV into per-head K (nope part) and V — one GEMM. The same FLOPs and weights per row in
                // both forms; the activations differ.
                const bool k_b = r == "attn_k_b";
                if (k_b) latent_weights = formats[t].format;
                OpSlot& absorbed = b.linear(t, r);
                absorbed.phase = SlotPhase::one_token;
                absorbed.n = w.shape[1];
                absorbed.groups = w.shape[2] / tp;
                OpSlot& expanded = b.linear(t, r);
                expanded.phase = SlotPhase::many_tokens;
                expanded.k = a.kv_lora_rank;
                expanded.n = (k_b ? w.shape[0] : w.shape[1]) * w.shape[2] / tp;
                break;
            }
            case Role::router:
                b.linear(t, r);
                b.rows("moe_topk", RowsBuilder::softmax, 1, a.n_expert);
                break;
            case Role::experts:
                if (r == "ffn_down_exps")  // the experts' gate and up are two products: a mat-vec may apply the GLU
                    b.rows("ffn_act", RowsBuilder::elementwise, a.n_expert_used * a.expert_ffn / tp, activation_flops(a.activation) + 1, 2, 1)
                        .fused_at_one_row = options.matvec_fused_glu;
                b.moe(t, r).merged_at_one_row = options.matvec_fused_glu && r == "ffn_up_exps";
                if (r == "ffn_down_exps") {
                    b.rows("moe_combine", RowsBuilder::elementwise, H, 2.0 * a.n_expert_used, a.n_expert_used, 1);
                    // the layer's residual add: a kernel of its own after the experts' sum (ggml-cuda and ggml-metal
                    // fuse no further add into it: the expert views' strides differ from the residual stream's)
                    b.rows("residual_add", RowsBuilder::elementwise, H, 1, 2, 1);
                }
                break;
            case Role::attn_output: {
                // attention happens between the projections and attn_output
                if (a.mla()) {
                    // RoPE on q_rope of every head and on the one shared k_rope; the cache entry is one latent of
                    // kv_lora_rank + rope elements, kv_append's 2·kv_heads·head_dim with 1 × (latent + rope) / 2
                    if (rope) b.rows("rope", RowsBuilder::elementwise, (heads + 1) * a.qk_rope_dim, 3, 1, 1);
                    b.rows("kv_append", RowsBuilder::kv_append, 1, 1, (a.kv_lora_rank + a.qk_rope_dim) / 2).format = options.kv;
                    OpSlot& at = b.add("attention", SlotKind::attention);
                    at.heads = heads;
                    at.kv_heads = 1;  // decode: one latent every head attends
                    at.head_dim = d;
                    at.window = window;
                    at.latent = a.kv_lora_rank;
                    at.rope_dim = a.qk_rope_dim;
                    at.v_dim = a.v_head_dim;
                    at.format = latent_weights;
                } else {
                    if (rope) b.rows("rope", RowsBuilder::elementwise, (heads + kv_heads) * d, 3, 1, 1);
                    b.rows("kv_append", RowsBuilder::kv_append, 1, kv_heads, d).format = options.kv;
                    OpSlot& at = b.add("attention", SlotKind::attention);
                    at.heads = heads;
                    at.kv_heads = kv_heads;
                    at.head_dim = d;
                    at.window = window;
                }
                b.linear(t, r);
                if (tp > 1) b.all_reduce();
                b.rows("residual_add", RowsBuilder::elementwise, H, 1, 2, 1).fused_at_one_row =
                    residual_fused(o_bias[static_cast<std::size_t>(l)] != 0);
                break;
            }
            case Role::shared_down:  // the shared expert closes a MoE layer: its activation, then as ffn_down
            case Role::ffn_down: {
                const double inner = w.shape[0] / tp;
                if (a.mlp == MlpKind::gated)  // a GLU of separate gate and up products can run in their mat-vec
                    b.rows("ffn_act", RowsBuilder::elementwise, inner, activation_flops(a.activation) + 1, 2, 1)
                        .fused_at_one_row = options.matvec_fused_glu && !a.fused_gate_up;
                else
                    b.rows("ffn_act", RowsBuilder::elementwise, inner, activation_flops(a.activation), 1, 1);
                b.linear(t, r);
                if (tp > 1) b.all_reduce();
                // a shared expert's output is first added to the routed experts' (that add is the fused one)
                b.rows("residual_add", RowsBuilder::elementwise, H, 1, 2, 1).fused_at_one_row =
                    r == "ffn_down" && residual_fused(down_bias[static_cast<std::size_t>(l)] != 0);
                break;
            }
            case Role::other:
                break;
            }
        }
        if (options.fused_qkv) b.fuse_qkv();
        // A layer identical to one seen before joins the same slots; a new one is merged op by op.
        bool done = false;
        for (auto& [cands, joined] : seen) {
            if (cands.size() != b.layer.size()) continue;
            bool same = true;
            for (std::size_t i = 0; same && i < cands.size(); ++i) same = same_slot(cands[i], b.layer[i]);
            if (!same) continue;
            for (std::size_t i = 0; i < joined.size(); ++i) b.slots[joined[i]].count += b.layer[i].count;
            done = true;
            break;
        }
        if (!done) {
            std::vector<std::size_t> joined;
            joined.reserve(b.layer.size());
            for (const auto& s : b.layer) joined.push_back(b.merge(s));
            if (seen.size() < 16) seen.emplace_back(b.layer, std::move(joined));
        }
        b.layer.clear();
    }

    // A layer split: at each of the stages − 1 boundaries the hidden state of every row goes to the next device.
    if (options.pipeline_stages > 1) {
        OpSlot& h = b.add("layer_handoff", SlotKind::all_reduce);
        h.count = options.pipeline_stages - 1;
        h.bytes_per_row = H * options.activation.bytes_per_element();
        flush();
    }

    // Final norm and the output head (for the last token of each sequence only, in prefill).
    for (const auto& w : model.tensors)
        if (w.role == "output_norm" && w.name.find(".bias") == std::string::npos) b.norm("output_norm");
    std::size_t head = model.tensors.size();
    for (std::size_t t = 0; t < model.tensors.size(); ++t)
        if (model.tensors[t].role == "output") head = t;
    if (head == model.tensors.size())
        for (std::size_t t = 0; t < model.tensors.size(); ++t)
            if (model.tensors[t].role == "token_embd") head = t;  // tied: the embedding matrix is the head
    if (head < model.tensors.size()) b.linear(head, "output", options.vocab_parallel);
    if (options.logits_last_token_only)
        for (auto& s : b.layer) s.per_sequence = true;
    flush();
    return std::move(b.slots);
}

namespace {
// A kernel's ALU work beside its `macs` multiply-adds (LinearPath::alu_ops_per_mac × its device family's
// alu_ops_scale), on its lanes or issue slots, taking `factor` (alu_tile_factor, >= 1) times as long in its tiles: its
// utilization 1 / factor (the pure roofline, which has no tiles, counts the work once)
void add_alu_work(OpCost& op, const LinearPath& p, const PhaseOptions& options, double macs, double factor) {
    if (!(p.alu_ops_per_mac > 0)) return;
    const double per_mac = p.alu_ops_per_mac * p.occupancy_on(options.device_family).alu_ops_scale;
    op.add_flops(Unit::vector, p.alu_format, per_mac * macs, 1 / factor, true, p.alu_on_issue);
}
}  // namespace

OpCost linear_gemm(const OpSlot& s, const PhaseOptions& options, double rows, const LinearPath& p, double alu_factor) {
    // activations in the engine's format, their multiply-adds in the kernel's compute format
    Format act = options.activation;
    act.compute = p.compute;
    OpCost op = ops::gemm(rows, s.n, s.k, act, s.format, options.activation, ops::GemmOptions{p.unit, 0, s.groups, p.dequant_overlapped});
    add_alu_work(op, p, options, rows * s.n * s.k * s.groups, alu_factor);
    op.launches *= p.launches;
    return op;
}

OpCost moe_path_gemm(const OpSlot& s, const PhaseOptions& options, double rows, const LinearPath& p, double alu_factor) {
    Format act = options.activation;
    act.compute = p.compute;
    OpCost op = ops::moe_gemm(rows, s.top_k, s.experts, s.n, s.k, act, s.format, options.activation, p.dequant_overlapped, p.unit);
    add_alu_work(op, p, options, rows * s.top_k * s.n * s.k, alu_factor);
    op.launches *= p.moe_launches;
    return op;
}

ops::TileUse moe_tile_use(const OpSlot& s, const PhaseOptions& options, double routed, double active, const LinearPath& p,
                          const KernelOccupancy& o) {
    if (p.unit != Unit::matrix) return {};
    // a kernel tiling the batch's tokens picks its tile for them: the routed rows over top_k
    const double tile_rows = p.moe_tile_from_batch && s.top_k > 0 ? routed / s.top_k : 0.0;
    ops::TileUse u = ops::moe_gemm_tile_use(routed, active, s.n, p.tile_m, p.tile_n, options.compute_units * o.tiles_per_unit,
                                            s.experts > 0 ? std::min(1.0, s.top_k / s.experts) : 1.0, o.stream_k,
                                            o.split_k, tile_rows, p.row_tile_step);
    u.busy *= o.efficiency;
    return u;
}

OpCost linear_dequant_pass(const OpSlot& s, const LinearPath& p) {
    OpCost op;
    op.add_dequant(s.format, s.k * s.n * s.groups, p.dequant_overlapped);
    return op;
}

double alu_tile_factor(const LinearPath& p, const ops::TileUse& u) {
    if (!(u.rows > 0)) return 1.0;
    return (p.alu_weight_share * p.tile_m / u.rows + 1 - p.alu_weight_share) / u.fill;
}

ops::TileUse linear_tile_use(const OpSlot& s, const PhaseOptions& options, double rows, const LinearPath& p,
                             const KernelOccupancy& o) {
    if (p.unit != Unit::matrix) return {};
    ops::TileUse u = ops::gemm_tile_use(rows, s.n * s.groups, p.tile_m, p.tile_n, options.compute_units * o.tiles_per_unit,
                                        o.stream_k, o.split_k, p.row_tile_step);
    u.busy *= o.efficiency;
    return u;
}

std::shared_ptr<const std::vector<LinearKernel>> PhaseOptions::default_linear_kernels() {
    static const auto kernels = std::make_shared<const std::vector<LinearKernel>>(std::vector<LinearKernel>{LinearKernel{}});
    return kernels;
}
std::shared_ptr<const std::map<std::string, double>> PhaseOptions::default_op_kernels() {
    static const auto none = std::make_shared<const std::map<std::string, double>>();
    return none;
}

PhaseOptions phase_options(const EngineBackend& e, std::string_view engine_id, const Format& kv, bool flash, int tp) {
    PhaseOptions o;
    o.activation = parse_format(e.activation_format);
    auto format = [](const std::string& name) -> std::optional<DType> {  // a number format's name (DType)
        if (name == "activation") return std::nullopt;
        return parse_dtype(name);
    };
    o.attention_matmul = format(e.attention_format);
    o.attention_pv_matmul = format(e.attention_pv_format);
    // "attention": the unfused path's format of the same product
    auto flash_format = [&](const std::string& name, const std::optional<DType>& unfused) {
        return name == "attention" ? unfused : format(name);
    };
    o.flash_head_dims = e.flash_attention_head_dims;
    if (!e.flash_attention_kv_to_f16.formats.empty())
        o.flash_kv_to_f16 = std::make_shared<const KvToF16>(e.flash_attention_kv_to_f16);
    o.flash_qk = flash_format(e.flash_qk_format, o.attention_matmul);
    o.flash_pv = flash_format(e.flash_pv_format, o.attention_pv_matmul);
    if (!e.flash_issue_per_score.empty())
        o.flash_issue = std::make_shared<const std::map<std::string, std::vector<std::array<double, 3>>>>(e.flash_issue_per_score);
    o.kv = kv;
    o.attention = flash ? ops::AttentionKind::flash : ops::AttentionKind::standard;
    o.logits_last_token_only = e.logits_last_token_only;
    o.fused_qkv = e.fused_qkv;
    o.matvec_fused_bias = e.matvec_fused_bias;
    o.matvec_fused_glu = e.matvec_fused_glu;
    o.vocab_parallel = e.vocab_parallel;
    o.tensor_parallel = tp;
    o.engine_id = std::string(engine_id);
    // the kernels without their sources (long texts a plan never reads): copied once per plan
    auto kernels = std::make_shared<std::vector<LinearKernel>>(e.linear_kernels);
    for (LinearKernel& k : *kernels) {
        k.provenance = {};
        for (auto& [family, occupancy] : k.by_family) occupancy.provenance = {};
    }
    o.linear_kernels = std::move(kernels);
    o.op_kernels = std::make_shared<const std::map<std::string, double>>(e.op_kernels);
    o.flash_attention_version = e.flash_attention_version;
    o.attention_score_bytes = e.attention_score_bytes;
    o.unfused_k_bytes = e.unfused_attention_bytes.per_cached_k;
    o.unfused_output_bytes = e.unfused_attention_bytes.per_output;
    o.decode_attention_per_query_head = e.decode_attention_per_query_head;
    o.decode_attention_alu_ops_per_mac = e.decode_attention_alu_ops_per_mac;
    return o;
}

void with_device(PhaseOptions& o, const Device& device) {
    if (o.attention == ops::AttentionKind::flash) {
        o.flash = ops::flash_tiles(device, o.flash_attention_version);
        // the kernel's instruction issue where the engine counted it and the device says its issue rate
        if (o.flash_issue && device.issue_lanes_per_s() > 0) {
            auto it = o.flash_issue->find(device.family);
            if (it == o.flash_issue->end()) it = o.flash_issue->find("default");
            // the products' rates as evaluate() runs them; a device without units for their formats has no
            // tensor rate to hold the issue against (the op's own evaluation then names what it lacks)
            auto rate = [&](const std::optional<DType>& f) {
                try {
                    return device.execution_peak(f.value_or(o.activation.compute), Unit::matrix).flops_per_s;
                } catch (const NotFound&) {
                    return 0.0;
                }
            };
            const double qk = rate(o.flash_qk), pv = rate(o.flash_pv);
            if (it != o.flash_issue->end() && qk > 0 && pv > 0) {
                o.flash.issue_per_score = it->second;
                o.flash.issue_lanes_per_s = device.issue_lanes_per_s();
                o.flash.qk_flops_per_s = qk;
                o.flash.pv_flops_per_s = pv;
            }
        }
    }
    o.compute_units = device.compute_units;
    o.device_family = device.family;
    o.l2_reuse_bytes = device.l2_handoff_bytes();
}

ops::AttentionKind prompt_attention(const PhaseOptions& o, double head_dim) {
    if (o.attention != ops::AttentionKind::flash || o.flash_head_dims.empty()) return o.attention;
    const bool fused = std::find(o.flash_head_dims.begin(), o.flash_head_dims.end(), head_dim) != o.flash_head_dims.end();
    return fused ? ops::AttentionKind::flash : ops::AttentionKind::standard;
}

OpCost slot_cost(const OpSlot& s, const PhaseOptions& options, double batch, double tokens, double past) {
    const Format& act = options.activation;
    const double rows = slot_rows(s, batch, tokens);
    OpCost op;
    double conversion_launches = 0;  // kernels converting the K/V cache before attention
    switch (s.kind) {
        case SlotKind::rows: {
            const double x = rows * s.scale;
            switch (s.builder) {
                case RowsBuilder::elementwise: op = ops::elementwise(x, s.a, s.b, s.c, act); break;
                case RowsBuilder::rmsnorm: op = ops::rmsnorm(x, s.a, act); break;
                case RowsBuilder::layernorm: op = ops::layernorm(x, s.a, act); break;
                case RowsBuilder::embedding: op = ops::embedding_lookup(x, s.a, s.format, act); break;
                case RowsBuilder::softmax: op = ops::softmax(x, s.a, act); break;
                case RowsBuilder::kv_append: op = ops::kv_append(x, 1, s.a, s.b, act, s.format); break;
            }
            if (passes_through_l2(s)) from_l2(op, options.l2_reuse_bytes);  // EstimatePlan: a way below / above the fit
            break;
        }
        case SlotKind::linear: {
            const LinearPath& p = s.paths[linear_path(s, rows, options.device_family)];
            const ops::TileUse u = linear_tile_use(s, options, rows, p);
            op = linear_gemm(s, options, rows, p, alu_tile_factor(p, u));
            if (p.unit == Unit::matrix) op.set_utilization(Unit::matrix, u.utilization());
            const double extra = linear_extra_dequant_passes(s, p, rows);
            if (extra > 0) op += linear_dequant_pass(s, p).scaled(extra);
            break;
        }
        case SlotKind::moe: {
            const LinearPath& p = s.paths[linear_path(s, rows, options.device_family)];
            const ops::TileUse u = moe_tile_use(s, options, rows * s.top_k, ops::expected_active_experts(s.experts, s.top_k, rows), p);
            op = moe_path_gemm(s, options, rows, p, alu_tile_factor(p, u));
            if (p.unit == Unit::matrix) op.set_utilization(Unit::matrix, u.utilization());
            break;
        }
        case SlotKind::attention: {
            const double context = past + tokens;
            if (s.latent > 0) {  // MLA: absorbed in decode, expanded in prefill
                if (tokens == 1) {
                    const double c = s.window > 0 ? std::min(context, s.window) : context;
                    op = ops::mla_decode_attention(batch, s.heads, c, s.latent, s.rope_dim, act, options.kv, options.attention,
                                                   options.attention_score_bytes);
                } else {
                    const double kv_len = s.window > 0 ? std::min(context, s.window + tokens - 1) : context;
                    ops::AttentionShape shape{batch, s.heads, tokens, kv_len, s.head_dim, true, s.heads};
                    op = ops::mla_prefill_attention(shape, s.latent, s.rope_dim, s.head_dim, s.v_dim, act, options.kv, s.format,
                                                    options.attention, options.flash, options.attention_score_bytes);
                }
            } else if (tokens == 1) {
                const double c = s.window > 0 ? std::min(context, s.window) : context;
                op = ops::decode_attention(batch, s.heads, s.kv_heads, c, s.head_dim, act, options.kv, options.attention,
                                           options.attention_score_bytes, options.decode_attention_per_query_head,
                                           options.decode_attention_alu_ops_per_mac);
            } else {
                const double kv_len = s.window > 0 ? std::min(context, s.window + tokens - 1) : context;
                // K and V of every position (the past and the new ones just appended) read from the cache in its
                // format, once per KV head
                ops::AttentionShape shape{batch, s.heads, tokens, kv_len, s.head_dim, true, s.kv_heads};
                // flash attention's two products in the formats of the engine's kernel, the unfused path's both in
                // attention_format; a head size the fused kernel does not take runs the unfused path
                const ops::AttentionKind kind = prompt_attention(options, s.head_dim);
                const bool flash = kind == ops::AttentionKind::flash;
                const std::optional<DType>& qk = flash ? options.flash_qk : options.attention_matmul;
                const std::optional<DType>& pv = flash ? options.flash_pv : options.attention_pv_matmul;
                // an engine whose kernel reads an f16 copy of a cache stored otherwise: one conversion pass over
                // every cached position (read in the cache's format, written in f16, K and V a kernel each), then
                // the kernel's reads in f16
                static const Format f16 = format_of(DType::fp16);
                const bool convert = flash && options.flash_kv_to_f16 &&
                                     options.flash_kv_to_f16->converts(options.kv, tokens, options.device_family);
                ops::FlashTiles unfused;  // the unfused kernels' scores pass through L2 where they fit
                unfused.l2_bytes = options.l2_reuse_bytes;
                op = ops::attention(shape, act, kind, false, flash ? options.flash : unfused, convert ? &f16 : &options.kv,
                                    options.attention_score_bytes, qk ? &*qk : nullptr, pv ? &*pv : nullptr);
                const double kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
                if (!flash && (options.unfused_k_bytes > 0 || options.unfused_output_bytes > 0)) {
                    // the unfused path's own copies: K converted for its product, the output converted and its
                    // heads merged; half of each element's bytes read, half written
                    const double bytes = options.unfused_k_bytes * batch * kv_len * kv_heads * s.head_dim +
                                         options.unfused_output_bytes * batch * tokens * s.heads * s.head_dim;
                    op.add_dram(bytes / 2, bytes / 2);
                }
                if (convert) {
                    op.add_dram(kv_bytes(batch, kv_len, kv_heads, s.head_dim, options.kv),
                                kv_bytes(batch, kv_len, kv_heads, s.head_dim, f16));
                    op.add_dequant(options.kv, batch * 2 * kv_len * kv_heads * s.head_dim);
                    conversion_launches = 2;  // K's and V's, beside the attention kernels op_kernels counts
                }
            }
            break;
        }
        case SlotKind::all_reduce:
            break;
    }
    op.name = s.name;
    if (!options.op_kernels->empty()) {  // the engine launches another number of kernels for this op
        // attention's keys: [decode][flash] (built once: this runs for every micro-batch of every prompt)
        static const std::string attention_keys[2][2] = {{"attention_standard", "attention_flash"},
                                                         {"decode_attention_standard", "decode_attention_flash"}};
        const ops::AttentionKind kind = tokens == 1 || s.latent > 0 ? options.attention : prompt_attention(options, s.head_dim);
        const std::string& key = s.kind == SlotKind::attention
                                     ? attention_keys[tokens == 1][kind == ops::AttentionKind::flash]
                                     : s.name;
        if (const auto it = options.op_kernels->find(key); it != options.op_kernels->end()) op.launches = it->second;
    }
    op.launches += conversion_launches;
    if (merged_away(s, rows)) op.launches = 0;  // inside the kernel of the mat-vec before it
    return op;
}

std::vector<PhaseOp> forward_ops(const Model& model, const std::vector<TensorFormat>& formats, double batch,
                                 double tokens, double past, const PhaseOptions& options) {
    check_count("batch", batch);
    check_count("tokens", tokens);
    check_count("past tokens", past);
    const std::vector<OpSlot> slots = forward_slots(model, formats, options);
    if (batch * tokens == 0) return {};
    std::vector<PhaseOp> ops;
    std::map<std::string, std::size_t> index;  // merge identical ops (of slots that differ only where this point does not look)
    for (const auto& s : slots) {
        if (!runs_in(s.phase, tokens) || fused_away(s, slot_rows(s, batch, tokens))) continue;
        if (s.kind == SlotKind::all_reduce) {
            const double bytes = slot_rows(s, batch, tokens) * s.bytes_per_row;
            bool merged = false;
            for (auto& op : ops)
                if (op.name == s.name && op.collective_bytes == bytes) {
                    op.count += s.count;
                    merged = true;
                    break;
                }
            if (!merged) ops.push_back({s.name, slot_cost(s, options, batch, tokens, past), s.count, bytes});
            continue;
        }
        OpCost cost = slot_cost(s, options, batch, tokens, past);
        std::ostringstream key;
        key.precision(17);
        key << s.name << '|' << cost.launches;
        for (const auto& t : cost.flop_terms)
            key << '|' << static_cast<int>(t.unit) << ':' << static_cast<int>(t.format) << ':' << t.flops << ':' << t.utilization
                << ':' << t.overlapped << t.issue;
        for (std::size_t i = 0; i < kNumLevels; ++i) key << '|' << cost.bytes_read[i] << ':' << cost.bytes_written[i];
        auto it = index.find(key.str());
        if (it != index.end()) {
            ops[it->second].count += s.count;
            continue;
        }
        index.emplace(key.str(), ops.size());
        ops.push_back({s.name, std::move(cost), s.count, 0});
    }
    return ops;
}

}  // namespace roofline