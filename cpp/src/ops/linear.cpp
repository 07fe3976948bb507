#include "roofline/ops/linear.hpp"

#include "roofline/errors.hpp"

#include <cmath>

namespace roofline::ops {

OpCost gemm(double m, double n, double k, const Format& a, const Format& b, const Format& c, const GemmOptions& options) {
    check_count("gemm m", m);
    check_count("gemm n", n);
    check_count("gemm k", k);
    check_count("gemm batch", options.batch);
    check_size("gemm tile_bytes", options.tile_bytes);
    const double ea = a.bytes_per_element(), eb = b.bytes_per_element(), ec = c.bytes_per_element();

    double a_reads = 1, b_reads = 1;
    if (options.tile_bytes > 0) {
        const double t = std::floor(std::sqrt(options.tile_bytes / (ea + eb)));
        if (t < 1)
            throw InvalidArgument("gemm tile_bytes " + std::to_string(options.tile_bytes) +
                                  " cannot hold one element of A and one of B");
        a_reads = std::max(1.0, std::ceil(n / t));
        b_reads = std::max(1.0, std::ceil(m / t));
    }

    OpCost op;
    op.name = "gemm";
    op.add_flops(options.unit, a.compute, options.batch * 2.0 * m * n * k);
    op.add_dequant(b, options.batch * k * n, options.dequant_overlapped);
    op.add_dram(options.batch * (m * k * ea * a_reads + k * n * eb * b_reads), options.batch * m * n * ec);
    op.launches = 1;
    return op;
}

OpCost gemv(double n, double k, const Format& x, const Format& w, const Format& y) {
    check_count("gemv n", n);  // named as the caller knows it, before gemm checks them again
    check_count("gemv k", k);
    OpCost op = gemm(1, n, k, x, w, y, GemmOptions{Unit::vector, 0, 1});
    op.name = "gemv";
    return op;
}

double expected_active_experts(double experts, double top_k, double tokens) {
    check_count("experts", experts);
    check_count("experts used per token", top_k);
    check_count("tokens", tokens);
    if (top_k > experts)
        throw InvalidArgument("experts used per token (" + std::to_string(top_k) + ") exceeds the number of experts (" +
                              std::to_string(experts) + ")");
    if (experts == 0 || tokens == 0) return 0;
    return experts * (1.0 - std::pow(1.0 - top_k / experts, tokens));
}

OpCost moe_gemm(double tokens, double top_k, double experts, double n, double k, const Format& a, const Format& b,
                const Format& c, bool dequant_overlapped, Unit unit) {
    check_count("moe_gemm n", n);
    check_count("moe_gemm k", k);
    const double active = expected_active_experts(experts, top_k, tokens);
    const double routed = tokens * top_k;
    OpCost op;
    op.name = "moe_gemm";
    op.add_flops(unit, a.compute, 2.0 * routed * n * k);
    op.add_dequant(b, active * k * n, dequant_overlapped);
    op.add_dram(routed * k * a.bytes_per_element() + active * k * n * b.bytes_per_element(),
                routed * n * c.bytes_per_element());
    op.launches = 1;
    return op;
}

namespace {
// The row tile a kernel picks for m rows: `step` 0, the smallest power of two from 16 (the MMA minimum) that covers m,
// at most tile_m; else the smallest multiple of `step` that covers m in the fewest tiles of at most tile_m rows
// (ggml's MMQ, mul_mat_q_switch_J)
double row_tile(double m, double tile_m, double step) {
    if (step > 0) {
        const double tiles = std::ceil(m / tile_m);
        return std::min(tile_m, std::max(step, std::ceil(m / (tiles * step)) * step));
    }
    double tm = 16;
    while (tm < m && tm < tile_m) tm *= 2;
    return std::min(tm, tile_m);
}

// The processor slots `tiles` tiles take on `units` processors. Fewer tiles than processors: split-K spreads the
// reduction over the idle ones (a kernel without it leaves them idle: one wave, partly empty). More: whole waves. A
// stream-K kernel (llama.cpp's MMQ on NVIDIA) launches whole tiles when their waves keep at least 90 % of the
// processors busy (fewer tiles than processors too), else splits their K loop evenly over all of them (its fixup
// kernel, which adds the split tiles' partial sums, is not counted).
double slots_for(double tiles, double units, bool stream_k, bool split_k) {
    const double slots = std::ceil(tiles / units) * units;
    return (stream_k ? tiles / slots < 0.9 : split_k && tiles < units) ? tiles : slots;
}
}  // namespace

TileUse gemm_tile_use(double m, double n, double tile_m, double tile_n, double units, bool stream_k, bool split_k,
                      double row_step) {
    check_size("tile_m", tile_m, true);
    check_size("tile_n", tile_n, true);
    check_size("units", units, true);
    check_size("row_step", row_step);
    if (m <= 0 || n <= 0) return {};
    const double tm = row_tile(m, tile_m, row_step);
    const double tiles = std::ceil(m / tm) * std::ceil(n / tile_n);
    return {(m * n) / (tiles * tm * tile_n), tiles / slots_for(tiles, units, stream_k, split_k), tm};
}

double gemm_utilization(double m, double n, double tile_m, double tile_n, double units, bool stream_k, bool split_k,
                        double row_step) {
    return gemm_tile_use(m, n, tile_m, tile_n, units, stream_k, split_k, row_step).utilization();
}

TileUse moe_gemm_tile_use(double routed, double active, double n, double tile_m, double tile_n, double units, double pick,
                          bool stream_k, bool split_k, double tile_rows, double row_step) {
    check_size("tile_m", tile_m, true);
    check_size("tile_n", tile_n, true);
    check_size("units", units, true);
    check_size("tile_rows", tile_rows);
    check_size("row_step", row_step);
    if (routed <= 0 || n <= 0 || active <= 0) return {};
    const double per_expert = routed / active;  // the mean; each expert's count scatters around it
    const double tm = row_tile(tile_rows > 0 ? tile_rows : per_expert, tile_m, row_step);
    // row tiles per active expert: E[ceil(X / tm)] = 1 + Σ_j P(X > j·tm), X the expert's rows, binomial with this mean
    // (routing independent per token), taken normal (continuity-corrected); sd 0: the mean's ceiling
    if (!(pick >= 0 && pick <= 1)) throw InvalidArgument("moe_gemm_utilization pick (top_k / experts) must be in [0, 1], got " + std::to_string(pick));
    double row_tiles = 1;
    const double sd = std::sqrt(per_expert * (1 - pick));
    for (double j = 1; j * tm < per_expert + 8 * sd + tm; ++j)
        row_tiles += 0.5 * std::erfc((j * tm + 0.5 - per_expert) / (std::sqrt(2.0) * sd));
    const double tiles = active * row_tiles * std::ceil(n / tile_n);
    return {(routed * n) / (tiles * tm * tile_n), tiles / slots_for(tiles, units, stream_k, split_k), tm};
}

double moe_gemm_utilization(double routed, double active, double n, double tile_m, double tile_n, double units,
                            double pick, bool stream_k, bool split_k, double tile_rows, double row_step) {
    return moe_gemm_tile_use(routed, active, n, tile_m, tile_n, units, pick, stream_k, split_k, tile_rows, row_step).utilization();
}

}  // namespace roofline::ops
