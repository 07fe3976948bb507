// Attention: standard (scores materialised in DRAM) and flash (tiled in SRAM), forward and backward;
// decode attention over a KV cache; appending to the KV cache.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"
#include "roofline/op.hpp"

#include <string_view>

namespace roofline::ops {

enum class AttentionKind { standard, flash };
AttentionKind parse_attention_kind(std::string_view name);  ///< "standard" | "flash"
std::string_view attention_kind_name(AttentionKind k);

struct AttentionShape {
    double batch = 1;
    double heads = 1;      ///< query heads
    double seq_q = 1;      ///< N: query tokens
    double seq_kv = 1;     ///< M: key/value tokens (the queries are the last N of them)
    double head_dim = 64;  ///< d
    bool causal = false;   ///< query i attends keys up to its own position
    double kv_heads = 0;   ///< KV heads (GQA: heads / group); 0 = heads (multi-head attention)
};

/// Flash attention's on-chip budget: the SRAM one thread block tiles in, and the L2 that may catch re-reads.
struct FlashTiles {
    double sram_bytes = 0;  ///< per compute unit
    double l2_bytes = 0;    ///< 0: no cache between SRAM and DRAM (FlashAttention's Theorem 2 model)
};
/// The tiles flash attention uses on `device`: its SRAM per compute unit and its L2 capacity (0 without an L2).
/// Throws NotFound naming the device when its data has no SRAM per compute unit.
FlashTiles flash_tiles(const Device& device);

/// Fraction of the N×M query-key pairs a causal mask keeps, queries being the last N of M positions:
/// (N·(M−N) + N·(N+1)/2) / (N·M); 1 when not causal.
double causal_fraction(const AttentionShape& s);

/// Counts per (batch, head), in elements of `fmt` unless noted, then × batch·heads. N = seq_q, M = seq_kv,
/// d = head_dim, f = causal_fraction. K and V (and dK, dV) are counted per (batch, KV head) in `kv` (the KV cache's
/// format; `fmt` when null): kv_bytes, the GQA convention decode attention uses too. Tiles that enter SRAM are
/// counted per query head (each query head's thread blocks load their own K and V tiles).
///
/// standard forward (three kernels; the mask does not skip work in dense GEMMs):
///   S = Q·Kᵀ  2NMd FLOPs; read Q (Nd), K (Md); write S (NM)
///   P = softmax(S)  softmax_flops(N, M); read S, write P (NM each)
///   O = P·V  2NMd FLOPs; read P (NM), V (Md); write O (Nd)
/// standard backward (five kernels, P kept from the forward pass):
///   dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O)), dQ = dS·K, dK = dSᵀ·Q
///   8NMd + 2NM + 2Nd FLOPs; reads 5NM + 5Nd + 2Md, writes 2NM + Nd + 2Md
/// flash (Dao et al. 2022, Algorithm 1 forward and Algorithm 4 backward, the IO count of their Theorem 2):
///   SRAM of E = sram_bytes / bytes-per-element elements; Bc = ceil(E / 4d), Tc = ceil(M / Bc) column blocks.
///   forward: compulsory DRAM traffic — read Q, K, V once, write O once (and the fp32 row statistics m, l,
///   2N values, when a backward pass needs them); then for each column block after the first, re-read Q and O
///   (2Nd·f) and write O (Nd·f) and m, l (read and written). FLOPs 4NMd·f + softmax_flops·f + 2Nd·Tc
///   (rescaling O per block). Θ(N²d²/E) accesses in all.
///   backward: compulsory — read Q, O, dO, K, V and m, l, write dQ, dK, dV once; per further column block
///   re-read Q, O, dO, dQ and m, l (4Nd·f) and write dQ (Nd·f). FLOPs 10NMd·f (recomputed S, then dV, dP, dQ,
///   dK) + softmax_flops·f + 2NM·f + 2Nd·Tc.
///   The re-read rows of one (batch, head) are Q and O (forward; also dO and dQ backward): when that working set
///   fits in l2_bytes (> 0), the re-reads are L2 hits and DRAM sees only the compulsory traffic; with
///   l2_bytes = 0 (the paper's model: no cache between SRAM and HBM) they go to DRAM.
///   The score tiles S and P (2NM·f written and read, forward; again backward) never leave SRAM: they are
///   counted at the sram level, with every byte that enters or leaves SRAM.
/// Matrix products run on matrix units in fmt's compute format, softmax and elementwise work on vector units.
OpCost attention(const AttentionShape& shape, const Format& fmt, AttentionKind kind, bool backward = false,
                 const FlashTiles& tiles = {}, const Format* kv = nullptr);

/// One new query token per sequence attending a KV cache of `context` tokens (including itself).
/// Per sequence: read K and V of the cache (kv_bytes: 2·context·kv_heads·d in kv's format; grouped query heads
/// share them), read q and write o (heads·d each, act's format). FLOPs heads·(4·context·d) + softmax_flops(heads,
/// context) on matrix units, plus kv.dequant_flops_per_element per cache element read (OpCost::add_dequant).
/// standard additionally writes and reads the scores and probabilities (4·heads·context elements of act) in
/// three launches; flash keeps them on chip in one launch.
OpCost decode_attention(double batch, double heads, double kv_heads, double context, double head_dim,
                        const Format& act, const Format& kv, AttentionKind kind = AttentionKind::flash);

/// Write `tokens` new tokens' K and V per sequence into the cache: read 2·tokens·kv_heads·d elements of act,
/// write them in kv's format (kv_bytes); kv.dequant_flops_per_element FLOPs per element (quantizing costs
/// about what dequantizing does). One launch.
OpCost kv_append(double batch, double tokens, double kv_heads, double head_dim, const Format& act, const Format& kv);

}  // namespace roofline::ops
