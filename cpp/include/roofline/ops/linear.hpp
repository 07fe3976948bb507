// Matrix products: gemm and gemv.
#pragma once

#include "roofline/format.hpp"
#include "roofline/op.hpp"

namespace roofline::ops {

struct GemmOptions {
    Unit unit = Unit::matrix;  ///< matrix units (tensor cores); falls back to vector where a device has none
    double tile_bytes = 0;     ///< 0: compulsory traffic; > 0: on-chip capacity for the tiled traffic model
    double batch = 1;          ///< independent products of this shape in one launch (batched GEMM)
    bool dequant_overlapped = true;  ///< false: the kernel does not hide B's dequantization under its loads
};

/// C[m×n] = A[m×k] · B[k×n]; A are activations (format a), B weights (format b, may be quantized), C output.
/// FLOPs: 2·m·n·k (a multiply and an add per MAC) on `unit` in a's compute format, plus B's k·n elements
/// dequantized once per call (OpCost::add_dequant; not overlapped with the loads unless options say so).
/// DRAM traffic, compulsory (tile_bytes = 0): A and B read once, C written once.
/// Tiled (tile_bytes = S > 0): T is the largest whole number with T²·(bytes_a + bytes_b) <= S (one T×T tile
/// of A and one of B on chip); A is read ceil(n/T) times, B ceil(m/T) times, C written once.
/// All of it × batch; one launch.
OpCost gemm(double m, double n, double k, const Format& a, const Format& b, const Format& c,
            const GemmOptions& options = {});
inline OpCost gemm(double m, double n, double k, DType dtype, const GemmOptions& options = {}) {
    return gemm(m, n, k, format_of(dtype), format_of(dtype), format_of(dtype), options);
}

/// y[n] = W[n×k] · x[k] on vector units: the m = 1 case of gemm (same count), named "gemv".
OpCost gemv(double n, double k, const Format& x, const Format& w, const Format& y);
inline OpCost gemv(double n, double k, DType dtype) {
    return gemv(n, k, format_of(dtype), format_of(dtype), format_of(dtype));
}

/// Expected number of distinct experts touched when `tokens` tokens each pick `top_k` of `experts`:
/// E·(1 − (1 − k/E)^T) (each expert is missed by one token with probability 1 − k/E).
double expected_active_experts(double experts, double top_k, double tokens);

/// Mixture-of-experts projection: `tokens` tokens, each through `top_k` of `experts` experts' B[k×n].
/// FLOPs 2·tokens·top_k·n·k (+ dequantization of the weights read); DRAM: each routed token's activation read
/// (tokens·top_k·k), its output written (tokens·top_k·n), and the weights of the expected active experts
/// (expected_active_experts · k·n). One launch. The multiply-adds run on `unit` (a mat-vec kernel's vector lanes, or
/// matrix units) in a's compute format.
OpCost moe_gemm(double tokens, double top_k, double experts, double n, double k, const Format& a, const Format& b,
                const Format& c, bool dequant_overlapped = true, Unit unit = Unit::matrix);

/// How a tiled GEMM uses its tiles and processors: `fill`, the share of its tiles' rows × columns that hold output
/// (the rest is padding each tile computes anyway); `busy`, the share of its waves' processor slots that hold a tile.
/// The processors' utilization is their product.
struct TileUse {
    double fill = 1, busy = 1;
    double rows = 0;  ///< the row tile picked (0: no tiles)
    double utilization() const { return fill * busy; }
};

/// gemm_utilization's two factors.
TileUse gemm_tile_use(double m, double n, double tile_m, double tile_n, double units, bool stream_k = false, bool split_k = true,
                      double row_step = 0);

/// Fraction of `units` parallel processors a GEMM of m×n output keeps busy when the output is cut into tiles,
/// one per processor at a time: (m·n) / (tiles padded to whole tiles, and to whole waves of `units`). The row
/// tile is the smallest power of two from 16 (the MMA minimum) to tile_m that covers m, so small m wastes at
/// most a 16-row tile's padding; with fewer tiles than processors split-K fills the rest; a tile count just
/// above a multiple of `units` wastes most of a wave. `stream_k`: the kernel launches whole tiles where their waves
/// keep at least 90 % of the processors busy (fewer tiles than processors included), else spreads the K loop of its
/// tiles evenly over all of them (no wave lost, only the tiles' padding). `split_k` false: a kernel that launches one
/// block per output tile and nothing more (ggml's MMQ without stream-K) leaves the processors beyond its tiles idle.
/// `row_step` > 0: the kernel's row tiles are the multiples of it up to tile_m, and it picks the smallest that covers m
/// in the fewest tiles (ggml's MMQ: J in steps of 8, mul_mat_q_switch_J: 65 rows in one tile of 72).
double gemm_utilization(double m, double n, double tile_m, double tile_n, double units, bool stream_k = false,
                        bool split_k = true, double row_step = 0);

/// gemm_utilization of a grouped GEMM (one launch over the active experts, as MUL_MAT_ID / fused-MoE kernels run
/// them): `routed` rows over `active` experts, each expert's rows cut into their own row tiles (the smallest power of
/// two from 16 to tile_m covering the mean share), all experts' tiles in waves over `units`. An expert's rows scatter
/// around the mean (each token picks an expert with probability `pick` = top_k / experts: binomial, variance
/// mean·(1 − pick), taken normal), so its expected row tiles are 1 + Σ_j P(rows > j·tile), not the mean's ceiling:
/// 32 rows on average in 32-row tiles take 1.47 tiles at pick 1/16; one expert taking every token (pick 1) has none.
/// `tile_rows` > 0: the kernel picks its row tile for that many rows (the batch's tokens, as gemm_utilization picks a
/// dense GEMM's), not for the mean share, and every expert runs whole tiles of it: 32 rows per expert in the 128-row
/// tile of a 512-token batch fill a quarter of it.
double moe_gemm_utilization(double routed, double active, double n, double tile_m, double tile_n, double units,
                            double pick, bool stream_k = false, bool split_k = true, double tile_rows = 0,
                            double row_step = 0);
/// moe_gemm_utilization's two factors.
TileUse moe_gemm_tile_use(double routed, double active, double n, double tile_m, double tile_n, double units,
                          double pick, bool stream_k = false, bool split_k = true, double tile_rows = 0,
                          double row_step = 0);

}  // namespace roofline::ops
