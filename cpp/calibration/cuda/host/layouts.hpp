// Register-fragment and shared-memory layouts of the tensor-core instructions (PTX ISA: mma.m16n8k16 and
// wgmma.m64nNk16), written once for the kernels and the host checks alike. Compiles with and without CUDA.
#pragma once

#include "data.hpp"  // RCAL_HD

#include <cstddef>

namespace rcal {

struct RowCol {
    int row, col;
};

/// mma.sync.m16n8k16 (.row.col, 16-bit inputs), A (16x16): element `half` (0 = low 16 bits) of A register
/// `reg` (0..3) of `lane`. groupID = lane/4, tig = lane%4: a0 (g, 2t..2t+1), a1 (g+8, ..), a2 (g, 2t+8..),
/// a3 (g+8, 2t+8..).
RCAL_HD RowCol mma_m16n8k16_a(int lane, int reg, int half) {
    const int group = lane >> 2, tig = lane & 3;
    return {group + 8 * (reg & 1), 2 * tig + half + 8 * (reg >> 1)};
}
/// B (16x8, "col"): element `half` of B register `reg` (0..1) of `lane`, as (k, n): b0 (2t..2t+1, g), b1 (2t+8.., g).
RCAL_HD RowCol mma_m16n8k16_b(int lane, int reg, int half) {
    const int group = lane >> 2, tig = lane & 3;
    return {2 * tig + half + 8 * reg, group};
}
/// The f32 accumulator C/D (16x8): register `reg` (0..3) of `lane`: c0,c1 (g, 2t..2t+1), c2,c3 (g+8, ..).
RCAL_HD RowCol mma_m16n8k16_c(int lane, int reg) {
    const int group = lane >> 2, tig = lane & 3;
    return {group + 8 * (reg >> 1), 2 * tig + (reg & 1)};
}

/// wgmma.m64nNk16 f32 accumulator: register `reg` (0..N/2-1) of thread `t` (0..127) of the warpgroup. Warp w owns
/// rows 16w..16w+15; each 8-column slice repeats the m16n8 accumulator layout.
RCAL_HD RowCol wgmma_m64nN_d(int t, int reg) {
    const int warp = t >> 5, lane = t & 31;
    const int group = lane >> 2, tig = lane & 3;
    return {16 * warp + group + 8 * ((reg >> 1) & 1), 8 * (reg >> 2) + 2 * tig + (reg & 1)};
}

/// Element offset of (row, k) in a K-major tile `k_tile` elements wide stored without swizzle as 8x8 core matrices
/// (8 rows x 16 bytes, each contiguous): core matrices along K are 128 bytes apart (the descriptor's leading byte
/// offset), groups of 8 rows 16 * k_tile bytes apart (its stride byte offset). 16-bit elements.
RCAL_HD std::size_t wgmma_kmajor_offset(int row, int k, int k_tile) {
    return static_cast<std::size_t>((row >> 3) * 8 * k_tile + (k >> 3) * 64 + (row & 7) * 8 + (k & 7));
}

}  // namespace rcal
