// Attention: standard (scores materialised in DRAM) and flash (tiled in SRAM), forward and backward;
// decode attention over a KV cache; appending to the KV cache.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"
#include "roofline/op.hpp"

#include <array>
#include <string_view>
#include <vector>

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

/// Flash attention's on-chip budget — the SRAM one thread block tiles in, the L2 that may catch re-reads, how many
/// thread blocks run at once — and the loop order of its version.
struct FlashTiles {
    double sram_bytes = 0;  ///< per compute unit
    double l2_bytes = 0;    ///< 0: no cache between SRAM and DRAM (FlashAttention's Theorem 2 model)
    double units = 1;       ///< compute units: thread blocks resident at once (one per unit)
    int version = 2;        ///< 1: K/V blocks outermost (FlashAttention-1); 2: a Q block resident, K/V streamed (FA-2/3)
    /// The forward kernel's instruction issue (all 0 / empty: not counted, its products alone bound its compute):
    /// the thread instructions it issues per score element besides its matrix products, as [head_dim, one query
    /// head per block, a GQA group's heads per block] rows in ascending head_dim (EngineBackend::
    /// flash_issue_per_score for the device's family), the device's issue rate (Device::issue_lanes_per_s) and its
    /// matrix peaks for Q·Kᵀ's and P·V's formats.
    std::vector<std::array<double, 3>> issue_per_score{};
    double issue_lanes_per_s = 0, qk_flops_per_s = 0, pv_flops_per_s = 0;
};
/// Instructions per score element at `head_dim` from [head_dim, one_head, grouped] rows (`grouped`: the third
/// column): linear between rows, along the nearest segment beyond them (one row: its value); 0 for no rows.
double issue_per_score_at(const std::vector<std::array<double, 3>>& rows, double head_dim, bool grouped);
/// The tiles flash attention uses on `device`: its SRAM per compute unit, its L2 capacity (0 without an L2) and its
/// compute units, for a FlashAttention version (1, 2 or 3; 3 has FA-2's loop order). Throws NotFound naming the
/// device when its data has no SRAM per compute unit, InvalidArgument for another version.
FlashTiles flash_tiles(const Device& device, int version = 2);

/// Fraction of the N×M query-key pairs a causal mask keeps, queries being the last N of M positions:
/// (N·(M−N) + N·(N+1)/2) / (N·M); 1 when not causal.
double causal_fraction(const AttentionShape& s);

/// Counts per (batch, head), in elements of `fmt` unless noted, then × batch·heads. N = seq_q, M = seq_kv,
/// d = head_dim, f = causal_fraction. K and V (and dK, dV) are counted per (batch, KV head) in `kv` (the KV cache's
/// format; `fmt` when null): kv_bytes, the GQA convention decode attention uses too. Tiles that enter SRAM are
/// counted per query head (each query head's thread blocks load their own K and V tiles).
///
/// standard forward (three kernels; the mask does not skip work in dense GEMMs; `score_bytes` > 0 replaces the
/// 4 · bytes-per-element of DRAM traffic per score element below, for engines whose kernels pass S and P through
/// format conversions):
///   S = Q·Kᵀ  2NMd FLOPs; read Q (Nd), K (Md); write S (NM)
///   P = softmax(S)  softmax_flops(N, M); read S, write P (NM each)
///   O = P·V  2NMd FLOPs; read P (NM), V (Md); write O (Nd)
///   Where S and P of all batch·heads (what the softmax holds at once: half the score bytes) fit in `tiles.l2_bytes`
///   (> 0: an L2 with a bandwidth), the three kernels pass them through L2: their bytes count at L2 only (from_l2).
///   (decode_attention's scores stay in DRAM: the plan sums decode attention in closed form, affine in the context.)
/// standard backward (five kernels, P kept from the forward pass):
///   dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O)), dQ = dS·K, dK = dSᵀ·Q
///   8NMd + 2NM + 2Nd FLOPs; reads 5NM + 5Nd + 2Md, writes 2NM + Nd + 2Md
/// flash, common to both versions: SRAM of E = sram_bytes / bytes-per-element elements; Bc = ceil(E / 4d) key rows
///   and Br = min(Bc, d) query rows per tile (Dao et al. 2022, Algorithm 1); Tc = ceil(M / Bc), Tr = ceil(N / Br).
///   Compulsory DRAM traffic: read Q, K, V once, write O once (and the fp32 row statistics m, l, 2N values, when a
///   backward pass needs them). FLOPs 4NMd·f + softmax_flops·f + 2Nd·Tc (rescaling O per block); backward
///   10NMd·f (recomputed S, then dV, dP, dQ, dK) + softmax_flops·f + 2NM·f + 2Nd·Tc. The score tiles S and P
///   (2NM·f written and read, forward; again backward) never leave SRAM: they are counted at the sram level, with
///   every byte that enters or leaves SRAM.
/// The re-reads follow each version's loop order. A re-read is an L2 hit when the rows it re-reads, for all the
/// thread blocks resident at once (`units` of them), fit in l2_bytes (> 0); else it goes to DRAM.
/// version 1 (FlashAttention-1, Algorithm 1 and 4; the IO count of their Theorem 2): K/V blocks outermost, one
///   thread block per (batch, head) — for each column block after the first, re-read Q and O (2Nd·f) and write O
///   (Nd·f) and m, l (read and written); backward also re-reads dO and dQ and writes dQ per block (4Nd·f read,
///   Nd·f written). Working set: Q and O (backward also dO, dQ) and m, l of min(units, batch·heads) heads.
/// version 2 (FlashAttention-2 and -3, Dao 2023 Algorithm 1 and 2): a thread block keeps one Q block and streams
///   K and V, so Q is read and O written once, and K, V are re-read once per further Q block (Tr − 1 times, 2Md·f
///   each, in K and V's format). The Tr·(heads / kv_heads) blocks of a KV group, when one wave (`units`) holds them,
///   stream its K and V blocks side by side, so the re-reads are L2 hits (given l2_bytes > 0); when they span waves,
///   they are hits only if one KV head's K and V fit in l2_bytes (a longer query never re-reads less from DRAM).
///   Backward keeps a K/V block resident and streams Q, dO; dQ is accumulated in fp32
///   across the K/V blocks (read and written once per further block: 4Nd·f·(Tc − 1) each way) — working set dQ
///   of ceil(units / Tc) heads.
/// Matrix products run on matrix units in fmt's compute format (or `matmul`, when given: an engine whose kernels
/// convert Q, K, V to fp16 for tensor cores while activations are fp32; P·V in `pv_matmul` where given: a kernel
/// summing it in fp16), softmax and elementwise work on vector units in fmt's.
/// Instruction issue (flash forward, when `tiles` carries it, see FlashTiles): the kernel issues i(d)
/// instructions per score element besides its products (the grouped column where a GQA group of an even number of
/// query heads shares a block: ggml's ncols2 >= 2) (the online softmax among them: no vector FLOPs are added
/// for it) and runs no faster than the device issues them, while its products take 2d / qk_peak + 2d / pv_peak
/// per score; the matrix terms' utilization is min(1, products' time / issue time) — a kernel that cannot issue its
/// instructions as fast as its tensor units multiply (FlashAttention-2's loop on an H100) keeps them busy only
/// that fraction of the time. The same fraction for every shape: a property of kernel and device.
OpCost attention(const AttentionShape& shape, const Format& fmt, AttentionKind kind, bool backward = false,
                 const FlashTiles& tiles = {}, const Format* kv = nullptr, double score_bytes = 0,
                 const DType* matmul = nullptr, const DType* pv_matmul = nullptr);

/// One new query token per sequence attending a KV cache of `context` tokens (including itself).
/// Per sequence: read K and V of the cache (kv_bytes: 2·context·kv_heads·d in kv's format; grouped query heads
/// share them), read q and write o (heads·d each, act's format). FLOPs heads·(4·context·d) + softmax_flops(heads,
/// context) on matrix units, plus kv.dequant_flops_per_element per cache element read (OpCost::add_dequant).
/// standard additionally writes and reads the scores and probabilities (heads·context elements, 4 passes of act,
/// or `score_bytes` > 0 bytes per element) in three launches; flash keeps them on chip in one launch.
/// `per_query_head`: the kernel runs one thread block per query head, each loading its KV head's cache by itself
/// (TensorRT-LLM's masked MHA before XQA): DRAM still sees the cache once per KV head (the group's blocks run
/// together and the first load brings each row into L2), but each of the other heads/kv_heads − 1 query heads
/// reads it again from L2 and dequantizes it again. `alu_ops_per_mac` > 0: the thread instructions the kernel
/// issues per multiply-add of q·k and p·v (2·context·d per query head), as int32 vector work racing the loads.
OpCost decode_attention(double batch, double heads, double kv_heads, double context, double head_dim,
                        const Format& act, const Format& kv, AttentionKind kind = AttentionKind::flash,
                        double score_bytes = 0, bool per_query_head = false, double alu_ops_per_mac = 0);

/// Multi-head latent attention (DeepSeek-V2/V3) of one new query token per sequence over `context` cached tokens, in
/// the absorbed form of vLLM's and SGLang's MLA decode kernels (FlashMLA, FlashInfer MLA): q_nope has been
/// multiplied into the latent space per head (attn_k_b, a linear op), so each of `heads` heads holds a query of
/// latent + rope elements and attends the one vector cached per position — the latent c_kv (`latent` =
/// kv_lora_rank elements) and the RoPE key shared by all heads (`rope` elements) — MQA with one "KV head" whose
/// values are the latent itself. Per sequence: the cache read once (context · (latent + rope) elements in kv, shared
/// by every head), q read (heads · (latent + rope)) and o written in the latent space (heads · latent; attn_v_b,
/// a linear op, maps it to v_head_dim) in act. FLOPs 2·heads·context·(latent + rope) (scores) + 2·heads·context·
/// latent (P·V) on matrix units, softmax_flops(heads, context) on vector units, plus kv.dequant_flops_per_element
/// per cache element read. standard and flash differ as in decode_attention (scores and probabilities through DRAM
/// in three launches, or on chip in one).
OpCost mla_decode_attention(double batch, double heads, double context, double latent, double rope, const Format& act,
                            const Format& kv, AttentionKind kind = AttentionKind::flash, double score_bytes = 0);

/// Multi-head latent attention of `shape.seq_q` new tokens per sequence over `shape.seq_kv` positions, in the
/// expanded form of vLLM's and SGLang's MLA prefill: the new tokens' latents are expanded by attn_k_b and attn_v_b
/// (linear ops over the new rows) into per-head K of qk_dim = nope + rope elements (the RoPE key shared by the
/// heads) and V of v_dim, and attention runs as multi-head attention: attention() of `shape` with head_dim
/// (qk_dim + v_dim) / 2, one KV head per query head and K, V in act — which counts exactly Q·Kᵀ's 2NM·qk_dim and
/// P·V's 2NM·v_dim FLOPs (× the causal fraction for flash) and the compulsory bytes of Q and O (N·(qk_dim + v_dim)
/// together) and of K and V (M·(qk_dim + v_dim)); flash's tiles are sized for the mean head size (shape.head_dim
/// and kv_heads are ignored). The seq_kv − seq_q positions before the new ones (a cached prefix, the earlier
/// micro-batches of a chunked prefill) are expanded here, as vLLM does for a chunk's context: their latents read
/// from the cache (latent + rope elements each, in kv, dequantized), kv_b_proj's weights (heads · latent ·
/// (qk_dim − rope + v_dim) elements in `weights`) read once and 2·past·heads·latent·(qk_dim − rope + v_dim) FLOPs
/// on matrix units (ops::gemm), and their K and V written in act (heads · (qk_dim + v_dim) each) for attention
/// to read.
OpCost mla_prefill_attention(const AttentionShape& shape, double latent, double rope, double qk_dim, double v_dim,
                             const Format& act, const Format& kv, const Format& weights, AttentionKind kind,
                             const FlashTiles& tiles = {}, double score_bytes = 0);

/// Write `tokens` new tokens' K and V per sequence into the cache: read 2·tokens·kv_heads·d elements of act,
/// write them in kv's format (kv_bytes); kv.dequant_flops_per_element FLOPs per element (quantizing costs
/// about what dequantizing does). One launch.
OpCost kv_append(double batch, double tokens, double kv_heads, double head_dim, const Format& act, const Format& kv);

}  // namespace roofline::ops
