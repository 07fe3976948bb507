#include "roofline/ops/attention.hpp"

#include "roofline/errors.hpp"
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

OpCost attention(const AttentionShape& s, const Format& fmt, AttentionKind kind, bool backward, double sram_bytes,
                 double l2_bytes) {
    check_shape(s);
    const double N = s.seq_q, M = s.seq_kv, d = s.head_dim, e = fmt.bytes_per_element();
    const double bh = s.batch * s.heads;
    const DType cf = fmt.compute;
    OpCost op;
    op.name = std::string(attention_kind_name(kind)) + "_attention" + (backward ? "_fwd_bwd" : "");

    if (kind == AttentionKind::standard) {
        // forward
        op.add_flops(Unit::matrix, cf, bh * 4.0 * N * M * d);
        op.add_flops(Unit::vector, cf, bh * softmax_flops(N, M));
        op.add_dram(bh * e * (N * d + 2 * M * d + 2 * N * M), bh * e * (2 * N * M + N * d));
        op.launches = 3;
        if (backward) {
            op.add_flops(Unit::matrix, cf, bh * 8.0 * N * M * d);
            op.add_flops(Unit::vector, cf, bh * (2.0 * N * M + 2.0 * N * d));
            op.add_dram(bh * e * (5 * N * M + 5 * N * d + 2 * M * d), bh * e * (2 * N * M + N * d + 2 * M * d));
            op.launches += 5;
        }
        return op;
    }

    check_size("attention sram_bytes", sram_bytes, true);
    check_size("attention l2_bytes", l2_bytes);
    const double E = std::floor(sram_bytes / e);
    if (d > 0 && E < 4 * d)
        throw InvalidArgument("flash attention sram_bytes " + std::to_string(sram_bytes) + " holds " + std::to_string(E) +
                              " elements, fewer than the 4·head_dim = " + std::to_string(4 * d) + " one tile needs");
    const double f = causal_fraction(s);
    const double Bc = d > 0 ? std::ceil(E / (4 * d)) : 1.0;
    const double Tc = M > 0 ? std::ceil(M / Bc) : 0.0;
    const double extra = std::max(0.0, Tc - 1);  // column blocks after the first re-read and re-write rows
    constexpr double kStat = 4.0;                // m and l are kept in fp32
    // forward: compulsory traffic, then the per-block re-reads of Theorem 2
    op.add_flops(Unit::matrix, cf, bh * 4.0 * N * M * d * f);
    op.add_flops(Unit::vector, cf, bh * (softmax_flops(N, M) * f + 2.0 * N * d * Tc));
    double read = bh * e * (N * d + 2 * M * d);
    double written = bh * (e * N * d + (backward ? kStat * 2 * N : 0.0));
    double reread = bh * (e * 2 * N * d * f + kStat * 2 * N) * extra;
    double rewritten = bh * (e * N * d * f + kStat * 2 * N) * extra;
    double tiles = bh * e * 2 * N * M * f;  // S and P tiles, written and read once each, in SRAM
    op.launches = 1;
    if (backward) {
        op.add_flops(Unit::matrix, cf, bh * 10.0 * N * M * d * f);
        op.add_flops(Unit::vector, cf, bh * (softmax_flops(N, M) * f + 2.0 * N * M * f + 2.0 * N * d * Tc));
        read += bh * (e * (3 * N * d + 2 * M * d) + kStat * 2 * N);  // Q, O, dO, K, V and the statistics
        written += bh * e * (N * d + 2 * M * d);                     // dQ, dK, dV
        reread += bh * (e * 4 * N * d * f + kStat * 2 * N) * extra;  // Q, O, dO, dQ and m, l per further block
        rewritten += bh * e * N * d * f * extra;                     // dQ per further block
        tiles += bh * e * 2 * N * M * f;
        op.launches += 1;
    }
    // The rows re-read per column block are one (batch, head)'s Q, O (and dO, dQ); when they fit in L2 the
    // re-reads are L2 hits and DRAM sees only the compulsory traffic.
    const double working_set = e * N * d * (backward ? 4 : 2) + kStat * 2 * N;
    const bool l2_hits = l2_bytes > 0 && working_set <= l2_bytes;
    op.add_dram(read + (l2_hits ? 0 : reread), written + (l2_hits ? 0 : rewritten));
    if (l2_hits) op.add_level(Level::l2, reread, rewritten);
    op.add_level(Level::sram, read + reread + tiles, written + rewritten + tiles);
    return op;
}

OpCost decode_attention(double batch, double heads, double kv_heads, double context, double head_dim,
                        const Format& act, const Format& kv, AttentionKind kind) {
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
    op.add_dequant(kv, cache_elements);
    double read = cache_elements * kv.bytes_per_element() + batch * heads * head_dim * ea;
    double written = batch * heads * head_dim * ea;
    op.launches = 1;
    if (kind == AttentionKind::standard) {
        read += batch * 2 * heads * context * ea;
        written += batch * 2 * heads * context * ea;
        op.launches = 3;
    }
    op.add_dram(read, written);
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
    op.add_dram(n * act.bytes_per_element(), n * kv.bytes_per_element());
    op.launches = 1;
    return op;
}

OpCost embedding_lookup(double tokens, double hidden, const Format& table, const Format& out) {
    check_count("embedding_lookup tokens", tokens);
    check_count("embedding_lookup hidden", hidden);
    OpCost op;
    op.name = "embedding_lookup";
    op.add_dequant(table, tokens * hidden);
    op.add_dram(tokens * hidden * table.bytes_per_element() + tokens * 4.0, tokens * hidden * out.bytes_per_element());
    op.launches = 1;
    return op;
}

}  // namespace roofline::ops
