#include "roofline/ops/attention.hpp"

#include "roofline/errors.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"

#include <algorithm>
#include <cmath>

namespace roofline::ops {

AttentionKind parse_attention_kind(std::string_view name) {
    const std::string s = to_lower(name);
    if (s == "standard" || s == "eager" || s == "naive") return AttentionKind::standard;
    if (s == "flash" || s == "flash_attention" || s == "fa") return AttentionKind::flash;
    throw NotFound(unknown_name_message("attention kind", name, {"standard", "flash"}));
}

std::string_view attention_kind_name(AttentionKind k) { return k == AttentionKind::flash ? "flash" : "standard"; }

namespace {
void check_shape(const AttentionShape& s) {
    check_count("attention batch", s.batch);
    check_count("attention heads", s.heads);
    check_count("attention kv_heads", s.kv_heads);
    if (s.kv_heads > 0 && (s.kv_heads > s.heads || std::fmod(s.heads, s.kv_heads) != 0))
        throw InvalidArgument("attention kv_heads must divide heads (1 <= kv_heads <= heads, or 0 for heads), got kv_heads " +
                              std::to_string(s.kv_heads) + " for heads " + std::to_string(s.heads));
    check_count("attention seq_q", s.seq_q);
    check_count("attention seq_kv", s.seq_kv);
    check_count("attention head_dim", s.head_dim);
    if (s.causal && s.seq_q > s.seq_kv)
        throw InvalidArgument("causal attention needs seq_q <= seq_kv (the queries are the last seq_q positions), got seq_q " +
                              std::to_string(s.seq_q) + " > seq_kv " + std::to_string(s.seq_kv));
}
}  // namespace

double causal_fraction(const AttentionShape& s) {
    if (!s.causal || s.seq_q == 0 || s.seq_kv == 0) return 1.0;
    const double n = s.seq_q, m = s.seq_kv;
    return (n * (m - n) + n * (n + 1) / 2) / (n * m);
}

FlashTiles flash_tiles(const Device& device, int version) {
    if (version < 1 || version > 3)
        throw InvalidArgument("flash attention version must be 1, 2 or 3, got " + std::to_string(version));
    FlashTiles t;
    t.version = version == 1 ? 1 : 2;  // FA-3 keeps FA-2's loop order
    t.units = std::max(1.0, static_cast<double>(device.compute_units));
    if (!device.has_level(Level::sram) || !(device.level(Level::sram).per_unit_bytes > 0))
        throw NotFound("flash attention tiles in the SRAM of one compute unit; device '" + device.id +
                       "' has no SRAM per compute unit in its data (hardware_db 'memory.sram.per_unit_KiB', a calibration "
                       "profile's 'device.shared_memory_per_unit_bytes'); or estimate without flash attention "
                       "(flash_attention off; engines such as llama.cpp turn it on by default)");
    t.sram_bytes = device.sram_per_unit_bytes();
    t.l2_bytes = device.l2_working_set();
    return t;
}

double issue_per_score_at(const std::vector<std::array<double, 3>>& rows, double head_dim, bool grouped) {
    const std::size_t c = grouped ? 2 : 1;
    if (rows.empty()) return 0;
    if (rows.size() == 1) return rows[0][c];
    std::size_t i = 1;  // the segment [i-1, i]: the first whose end reaches head_dim, else the last
    while (i + 1 < rows.size() && rows[i][0] < head_dim) ++i;
    const auto& a = rows[i - 1];
    const auto& b = rows[i];
    return std::max(0.0, a[c] + (b[c] - a[c]) * (head_dim - a[0]) / (b[0] - a[0]));
}

OpCost attention(const AttentionShape& s, const Format& fmt, AttentionKind kind, bool backward, const FlashTiles& tiles,
                 const Format* kv_format, double score_bytes, const DType* matmul, const DType* pv_matmul) {
    check_shape(s);
    check_size("attention score_bytes", score_bytes);
    const double N = s.seq_q, M = s.seq_kv, d = s.head_dim, e = fmt.bytes_per_element();
    const double bh = s.batch * s.heads;
    const Format& kv = kv_format ? *kv_format : fmt;
    const double kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
    const double KV = kv_bytes(s.batch, M, kv_heads, d, kv);  // K and V of the M positions, once per KV head
    const DType cf = fmt.compute, cm = matmul ? *matmul : fmt.compute;  // vector, matrix work
    const DType cpv = pv_matmul ? *pv_matmul : cm;                       // P·V's (forward)
    OpCost op;
    static const std::string names[2][2] = {{"standard_attention", "standard_attention_fwd_bwd"},
                                            {"flash_attention", "flash_attention_fwd_bwd"}};  // [flash][backward]
    op.name = names[kind == AttentionKind::flash][backward];

    if (kind == AttentionKind::standard) {
        // forward; S and P: written and read once each in fmt, unless the engine's kernels say otherwise. The
        // softmax holds S and P at once (half the score bytes); where they fit in L2 (tiles.l2_bytes), the three
        // kernels pass them through it (from_l2's rule)
        const double per_score = score_bytes > 0 ? score_bytes : 4 * e;
        const double scores = bh * per_score / 2 * N * M;  // read, and as many written
        op.add_flops(Unit::matrix, cm, bh * 2.0 * N * M * d);
        op.add_flops(Unit::matrix, cpv, bh * 2.0 * N * M * d);
        op.add_flops(Unit::vector, cf, bh * softmax_flops(N, M));
        const bool scores_in_l2 = !backward && tiles.l2_bytes > 0 && scores <= tiles.l2_bytes;
        op.add_dram(bh * e * N * d + KV + (scores_in_l2 ? 0.0 : scores), bh * e * N * d + (scores_in_l2 ? 0.0 : scores));
        if (scores_in_l2) op.add_level(Level::l2, scores, scores);
        op.launches = 3;
        if (backward) {  // reads K and V again, writes dK and dV (per KV head, in K and V's format)
            op.add_flops(Unit::matrix, cm, bh * 8.0 * N * M * d);
            op.add_flops(Unit::vector, cf, bh * (2.0 * N * M + 2.0 * N * d));
            op.add_dram(bh * e * (5 * N * M + 5 * N * d) + KV, bh * e * (2 * N * M + N * d) + KV);
            op.launches += 5;
        }
        return op;
    }

    const double sram_bytes = tiles.sram_bytes, l2_bytes = tiles.l2_bytes;
    if (!(sram_bytes > 0) || !std::isfinite(sram_bytes))
        throw InvalidArgument("flash attention needs sram_bytes > 0, the on-chip SRAM one thread block tiles in (pass "
                              "sram_bytes= or device=, a device with SRAM per compute unit), got " + std::to_string(sram_bytes));
    check_size("attention l2_bytes", l2_bytes);
    if (tiles.version != 1 && tiles.version != 2)
        throw InvalidArgument("flash attention loop order must be version 1 or 2, got " + std::to_string(tiles.version));
    const double E = std::floor(sram_bytes / e);
    if (d > 0 && E < 4 * d)
        throw InvalidArgument("flash attention sram_bytes " + std::to_string(sram_bytes) + " holds " + std::to_string(E) +
                              " elements, fewer than the 4·head_dim = " + std::to_string(4 * d) + " one tile needs");
    const double f = causal_fraction(s);
    const double Bc = d > 0 ? std::ceil(E / (4 * d)) : 1.0;
    const double Br = d > 0 ? std::min(Bc, d) : 1.0;
    const double Tc = M > 0 ? std::ceil(M / Bc) : 0.0;
    const double Tr = N > 0 ? std::ceil(N / Br) : 0.0;
    const double units = std::max(1.0, tiles.units);
    constexpr double kStat = 4.0;  // m and l are kept in fp32
    // the forward kernel's instruction issue, where counted: the fraction of the time its tensor units are busy
    const double kv_group = s.heads / kv_heads;
    const bool grouped = kv_group >= 2 && std::fmod(kv_group, 2.0) == 0;  // an even GQA group shares a block (ggml's ncols2 >= 2)
    const double issue = backward ? 0.0 : issue_per_score_at(tiles.issue_per_score, d, grouped);
    const bool issue_bound = issue > 0 && tiles.issue_lanes_per_s > 0 && tiles.qk_flops_per_s > 0 && tiles.pv_flops_per_s > 0;
    const double busy = issue_bound ? std::min(1.0, (2 * d / tiles.qk_flops_per_s + 2 * d / tiles.pv_flops_per_s) /
                                                        (issue / tiles.issue_lanes_per_s))
                                    : 1.0;
    op.add_flops(Unit::matrix, cm, bh * 2.0 * N * M * d * f, busy);
    op.add_flops(Unit::matrix, cpv, bh * 2.0 * N * M * d * f, busy);
    if (!issue_bound) op.add_flops(Unit::vector, cf, bh * (softmax_flops(N, M) * f + 2.0 * N * d * Tc));
    // compulsory traffic
    double read = bh * e * N * d + KV;
    double written = bh * (e * N * d + (backward ? kStat * 2 * N : 0.0));
    double tiles_bytes = bh * e * 2 * N * M * f;  // S and P tiles, written and read once each, in SRAM
    if (backward) {
        op.add_flops(Unit::matrix, cm, bh * 10.0 * N * M * d * f);
        op.add_flops(Unit::vector, cf, bh * (softmax_flops(N, M) * f + 2.0 * N * M * f + 2.0 * N * d * Tc));
        read += bh * (e * 3 * N * d + kStat * 2 * N) + KV;  // Q, O, dO, the statistics; K, V
        written += bh * e * N * d + KV;                     // dQ; dK, dV
        tiles_bytes += bh * e * 2 * N * M * f;
    }
    op.launches = backward ? 2 : 1;
    // re-reads: what each version's loop order brings back, and whether the resident blocks' rows fit in L2
    auto fits_l2 = [&](double working_set) { return l2_bytes > 0 && working_set <= l2_bytes; };
    double dram_r = 0, dram_w = 0, l2_r = 0, l2_w = 0, sram_kv = 0;
    auto place = [&](double r, double w, bool hit) { (hit ? l2_r : dram_r) += r; (hit ? l2_w : dram_w) += w; };
    if (tiles.version == 1) {
        const double extra = std::max(0.0, Tc - 1);  // column blocks after the first re-read and re-write rows
        const double heads_at_once = std::min(units, bh);
        const double rows_set = e * N * d * (backward ? 4 : 2) + kStat * 2 * N;  // one head's re-read rows
        const bool hit = fits_l2(heads_at_once * rows_set);
        place(bh * (e * 2 * N * d * f + kStat * 2 * N) * extra, bh * (e * N * d * f + kStat * 2 * N) * extra, hit);
        if (backward) place(bh * (e * 4 * N * d * f + kStat * 2 * N) * extra, bh * e * N * d * f * extra, hit);
        // each query head's blocks load their own K and V tiles (backward: again, and write dK, dV)
        sram_kv = (KV * kv_group - KV) * (backward ? 2 : 1);
    } else {
        const double extra = std::max(0.0, Tr - 1);  // Q blocks after the first stream K and V again
        const double kv_head_bytes = KV / std::max(1.0, s.batch * kv_heads);
        // the Tr blocks of each of a group's query heads, when one wave holds them all, stream the group's K/V blocks
        // side by side, so their re-reads follow the first read into L2; when they span waves, later blocks find the
        // group's K/V in L2 only if it fits whole
        const bool in_step = Tr * kv_group <= units;
        const bool hit = in_step ? l2_bytes > 0 : fits_l2(kv_head_bytes);
        // every query head of a group streams the group's K and V per Q block
        const double kv_loads = KV * kv_group * Tr * f;
        place(std::max(0.0, kv_loads - KV), 0.0, hit || extra == 0);  // one Q block: only a group's heads share
        if (backward) {  // dQ accumulated in fp32 per further K/V block
            const double extra_c = std::max(0.0, Tc - 1);
            const bool dq_hit = fits_l2(std::ceil(units / std::max(1.0, Tc)) * 4 * N * d);
            place(bh * 4 * N * d * f * extra_c, bh * 4 * N * d * f * extra_c, dq_hit);
            sram_kv += KV * kv_group - KV;
        }
    }
    op.add_dram(read + dram_r, written + dram_w);
    if (l2_r + l2_w > 0) op.add_level(Level::l2, l2_r, l2_w);
    // every byte that enters or leaves SRAM
    op.add_level(Level::sram, read + sram_kv + dram_r + l2_r + tiles_bytes, written + dram_w + l2_w + tiles_bytes);
    return op;
}

namespace {
// One decode step's score traffic: on the standard path S and P of batch × heads × context scores are written and
// read in DRAM (score_bytes per score over those passes; 0: four passes in the activation format) by three kernels
// (scores, softmax, P·V); flash attention keeps them on chip in one kernel. Adds to read / written, returns the kernels.
double decode_score_passes(double& read, double& written, double batch, double heads, double context, double ea,
                           AttentionKind kind, double score_bytes) {
    if (kind != AttentionKind::standard) return 1;
    const double per_score = score_bytes > 0 ? score_bytes : 4 * ea;
    read += batch * heads * context * per_score / 2;
    written += batch * heads * context * per_score / 2;
    return 3;
}
}  // namespace

OpCost decode_attention(double batch, double heads, double kv_heads, double context, double head_dim,
                        const Format& act, const Format& kv, AttentionKind kind, double score_bytes, bool per_query_head,
                        double alu_ops_per_mac) {
    check_size("decode_attention score_bytes", score_bytes);
    check_size("decode_attention alu_ops_per_mac", alu_ops_per_mac);
    check_count("decode_attention batch", batch);
    check_count("decode_attention heads", heads);
    check_count("decode_attention kv_heads", kv_heads);
    check_count("decode_attention context", context);
    check_count("decode_attention head_dim", head_dim);
    if (kv_heads < 1 || kv_heads > heads || std::fmod(heads, kv_heads) != 0)
        throw InvalidArgument("decode_attention kv_heads must divide heads (1 <= kv_heads <= heads), got kv_heads " +
                              std::to_string(kv_heads) + " for heads " + std::to_string(heads));
    const double ea = act.bytes_per_element();
    const double cache_elements = batch * 2 * context * kv_heads * head_dim;
    OpCost op;
    op.name = std::string(attention_kind_name(kind)) + "_decode_attention";
    op.add_flops(Unit::matrix, act.compute, batch * heads * 4.0 * context * head_dim);
    op.add_flops(Unit::vector, act.compute, batch * softmax_flops(heads, context));
    // the kernel's instructions per multiply-add (2·context·head_dim of them per query head), on the issue-rate lanes
    if (alu_ops_per_mac > 0) op.add_flops(Unit::vector, DType::int32, alu_ops_per_mac * batch * heads * 2.0 * context * head_dim);
    op.add_dequant(kv, cache_elements);
    double read = kv_bytes(batch, context, kv_heads, head_dim, kv) + batch * heads * head_dim * ea;
    double written = batch * heads * head_dim * ea;
    op.launches = decode_score_passes(read, written, batch, heads, context, ea, kind, score_bytes);
    op.add_dram(read, written);
    if (per_query_head && heads > kv_heads) {  // the group's other query heads load the cache again, from L2
        const double again = heads / kv_heads - 1;
        op.add_dequant(kv, cache_elements * again);
        op.add_level(Level::l2, kv_bytes(batch, context, kv_heads, head_dim, kv) * again, 0);
    }
    return op;
}

OpCost mla_decode_attention(double batch, double heads, double context, double latent, double rope, const Format& act,
                            const Format& kv, AttentionKind kind, double score_bytes) {
    check_size("mla_decode_attention score_bytes", score_bytes);
    check_count("mla_decode_attention batch", batch);
    check_count("mla_decode_attention heads", heads);
    check_count("mla_decode_attention context", context);
    check_count("mla_decode_attention kv_lora_rank", latent);
    check_count("mla_decode_attention qk_rope_head_dim", rope);
    const double ea = act.bytes_per_element();
    const double cache_elements = batch * context * (latent + rope);
    OpCost op;
    op.name = std::string(attention_kind_name(kind)) + "_mla_decode_attention";
    op.add_flops(Unit::matrix, act.compute, batch * heads * 2.0 * context * (2 * latent + rope));
    op.add_flops(Unit::vector, act.compute, batch * softmax_flops(heads, context));
    op.add_dequant(kv, cache_elements);
    double read = cache_elements * kv.bytes_per_element() + batch * heads * (latent + rope) * ea;
    double written = batch * heads * latent * ea;
    op.launches = decode_score_passes(read, written, batch, heads, context, ea, kind, score_bytes);
    op.add_dram(read, written);
    return op;
}

OpCost mla_prefill_attention(const AttentionShape& shape, double latent, double rope, double qk_dim, double v_dim,
                             const Format& act, const Format& kv, const Format& weights, AttentionKind kind,
                             const FlashTiles& tiles, double score_bytes) {
    check_count("mla_prefill_attention kv_lora_rank", latent);
    check_count("mla_prefill_attention qk_rope_head_dim", rope);
    check_count("mla_prefill_attention qk_head_dim", qk_dim);
    check_count("mla_prefill_attention v_head_dim", v_dim);
    if (qk_dim < rope)
        throw InvalidArgument("mla_prefill_attention qk_head_dim (" + std::to_string(qk_dim) +
                              ") must include qk_rope_head_dim (" + std::to_string(rope) + ")");
    AttentionShape s = shape;
    s.head_dim = (qk_dim + v_dim) / 2;
    s.kv_heads = s.heads;
    OpCost op = attention(s, act, kind, false, tiles, &act, score_bytes);
    op.name = std::string(attention_kind_name(kind)) + "_mla_prefill_attention";
    const double past = std::max(0.0, s.seq_kv - s.seq_q);
    if (past > 0) {  // the positions before the new ones: latents from the cache expanded by kv_b_proj
        Format cached = kv;
        cached.compute = act.compute;
        const double rows = s.batch * past;
        OpCost expand = gemm(rows, s.heads * (qk_dim - rope + v_dim), latent, cached, weights, act);
        expand.add_dequant(kv, rows * (latent + rope));
        // the shared RoPE key read from the cache and copied into every head's K
        expand.add_dram(rows * rope * kv.bytes_per_element(), rows * s.heads * rope * act.bytes_per_element());
        op += expand;
    }
    return op;
}

OpCost kv_append(double batch, double tokens, double kv_heads, double head_dim, const Format& act, const Format& kv) {
    check_count("kv_append batch", batch);
    check_count("kv_append tokens", tokens);
    check_count("kv_append kv_heads", kv_heads);
    check_count("kv_append head_dim", head_dim);
    const double n = batch * 2 * tokens * kv_heads * head_dim;
    OpCost op;
    op.name = "kv_append";
    op.add_dequant(kv, n);
    op.add_dram(n * act.bytes_per_element(), kv_bytes(batch, tokens, kv_heads, head_dim, kv));
    op.launches = 1;
    return op;
}

}  // namespace roofline::ops
