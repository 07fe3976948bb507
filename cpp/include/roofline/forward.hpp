// The forward pass of a phase as operators: prefill of B×P tokens, or one decode step at context c — the distinct
// ops of a pass (slots, built once per model × formats × engine options) and each one's cost at a point.
#pragma once

#include "roofline/device.hpp"
#include "roofline/engine.hpp"
#include "roofline/format.hpp"
#include "roofline/model.hpp"
#include "roofline/op.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/weights.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace roofline {

/// One line of a phase's operator list: `count` identical ops.
struct PhaseOp {
    std::string name;   ///< "attn_q", "attention", "ffn_down", "rope", "output", "all_reduce", ...
    OpCost cost;        ///< one instance (empty for all_reduce)
    double count = 1;
    double collective_bytes = 0;  ///< all_reduce: bytes each rank contributes (timed on the interconnect)
};

/// What the engine, the configuration and the device decide of a forward pass.
struct PhaseOptions {
    Format activation = format_of(DType::fp16);  ///< activations between ops
    std::optional<DType> attention_matmul;       ///< EngineBackend::attention_format (Q·Kᵀ), when not the activations'
    std::optional<DType> attention_pv_matmul;    ///< EngineBackend::attention_pv_format (P·V), likewise
    std::optional<DType> flash_qk, flash_pv;     ///< EngineBackend::flash_qk_format / flash_pv_format, when not the activations'
    /// EngineBackend::flash_issue_per_score (shared); with_device() puts the device family's rows in `flash`
    std::shared_ptr<const std::map<std::string, std::vector<std::array<double, 3>>>> flash_issue;
    std::vector<double> flash_head_dims;         ///< EngineBackend::flash_attention_head_dims (empty: every size)
    /// EngineBackend::flash_attention_kv_to_f16 (shared; null: no format converted)
    std::shared_ptr<const KvToF16> flash_kv_to_f16;
    Format kv = format_of(DType::fp16);          ///< KV cache
    ops::AttentionKind attention = ops::AttentionKind::standard;
    ops::FlashTiles flash;                       ///< flash attention's on-chip tiles (ops::flash_tiles)
    int flash_attention_version = 2;             ///< the loop order of the engine's flash attention (1, 2 or 3)
    double attention_score_bytes = 0;            ///< EngineBackend::attention_score_bytes (standard attention)
    double unfused_k_bytes = 0;       ///< EngineBackend::unfused_attention_bytes.per_cached_k (standard prompt attention)
    double unfused_output_bytes = 0;  ///< EngineBackend::unfused_attention_bytes.per_output (standard prompt attention)
    bool decode_attention_per_query_head = false;  ///< EngineBackend::decode_attention_per_query_head
    double decode_attention_alu_ops_per_mac = 0;   ///< EngineBackend::decode_attention_alu_ops_per_mac
    bool logits_last_token_only = true;          ///< prefill computes the output head for the last token only
    bool fused_qkv = false;                      ///< attn_q, attn_k, attn_v of one format run as one "attn_qkv" GEMM
    bool matvec_fused_bias = false;              ///< EngineBackend::matvec_fused_bias
    bool matvec_fused_glu = false;               ///< EngineBackend::matvec_fused_glu
    bool vocab_parallel = true;                  ///< tensor parallel splits the output head by vocabulary (else replicated)
    int tensor_parallel = 1;                     ///< weights and heads split over this many devices
    /// whole layers split over this many devices run one after another (a layer split): a "layer_handoff" slot
    /// (SlotKind::all_reduce, the hidden state sent to the next device) per boundary
    int pipeline_stages = 1;
    double compute_units = 1;                    ///< SMs / CUs / GPU cores the tiles are spread over
    /// Device::l2_handoff_bytes (the L2 working set where the L2 has a bandwidth, else 0): the activations a
    /// kernel of a pass reads right after the kernel before wrote them stay in L2 when they fit (op::from_l2)
    double l2_reuse_bytes = 0;
    std::string device_family;                   ///< the device's hardware_db family (LinearPath::occupancy_on)
    std::string engine_id = "engine";            ///< for error messages
    /// the engine's kernels (EngineBackend::linear_kernels), shared: options are copied once per plan
    std::shared_ptr<const std::vector<LinearKernel>> linear_kernels = default_linear_kernels();
    /// kernels per op where not one (EngineBackend::op_kernels), shared likewise
    std::shared_ptr<const std::map<std::string, double>> op_kernels = default_op_kernels();

    /// The defaults above, built once and shared: a PhaseOptions is constructed per plan, and phase_options()
    /// replaces both, so constructing one allocates nothing.
    static std::shared_ptr<const std::vector<LinearKernel>> default_linear_kernels();
    static std::shared_ptr<const std::map<std::string, double>> default_op_kernels();
};

/// The options of an engine backend with a KV format, attention kind and tensor-parallel degree (the device's parts
/// — compute units, flash tiles — are added by with_device).
PhaseOptions phase_options(const EngineBackend& engine, std::string_view engine_id, const Format& kv, bool flash_attention,
                           int tensor_parallel);
/// The device's parts: its compute units, and flash attention's tiles sized to its SRAM and L2.
void with_device(PhaseOptions& options, const Device& device);
/// How a prompt of `head_dim` attends under `options`: flash where flash attention is on and the engine's fused
/// kernel takes the head size (EngineBackend::flash_attention_head_dims), else standard.
ops::AttentionKind prompt_attention(const PhaseOptions& options, double head_dim);

/// How a slot's cost depends on the point (batch, tokens, past) of a forward pass.
enum class SlotKind : std::uint8_t {
    rows,        ///< a function of its rows alone: norms, pointwise maps, embedding lookup, KV append, router softmax
    linear,      ///< a projection through a weight tensor: the engine's kernel for its weight format and rows
    moe,         ///< a mixture-of-experts projection: routed rows and the expected number of active experts
    attention,   ///< attention over the KV cache: decode attention for one new token, tiled attention otherwise
    all_reduce,  ///< the tensor-parallel sum of partial outputs: rows × bytes_per_row over the interconnect
};

/// The passes a slot runs in. MLA multiplies by kv_b_proj in two forms (as vLLM's and SGLang's MLA backends do):
/// absorbed into q and the attention output where a pass has one new token per sequence (decode), expanding the
/// latent into per-head K and V otherwise (prefill) — the same rule that picks decode attention (tokens == 1).
enum class SlotPhase : std::uint8_t { any, one_token, many_tokens };
/// Whether slot phase `p` runs in a pass of `tokens` new tokens per sequence.
inline bool runs_in(SlotPhase p, double tokens) {
    return p == SlotPhase::any || (p == SlotPhase::one_token) == (tokens <= 1);
}

/// The builder a `rows` slot calls, with its rows × `scale` as the first argument.
enum class RowsBuilder : std::uint8_t { elementwise, rmsnorm, layernorm, embedding, softmax, kv_append };

/// A linear layer's kernel as a slot runs it: up to `max_rows` rows, on `unit`, multiply-adds in `compute`.
struct LinearPath {
    double max_rows = 0;
    Unit unit = Unit::matrix;
    DType compute = DType::fp16;
    double tile_m = 64, tile_n = 64;
    bool stream_k = false;          ///< LinearKernel::stream_k: no wave quantization
    bool moe_tile_from_batch = false;  ///< LinearKernel::moe_tile_from_batch
    double row_tile_step = 0;          ///< LinearKernel::row_tile_step
    double dequant_every_rows = 0;
    bool dequant_overlapped = true;
    double efficiency = 1;          ///< LinearKernel::efficiency: divides the matrix compute with the tile utilization
    double tiles_per_unit = 1;      ///< LinearKernel::tiles_per_unit
    bool split_k = true;            ///< LinearKernel::split_k
    /// The kernel it was made from where that kernel has per-family values (LinearKernel::by_family; null where it
    /// has none): shared with the engine's kernel list, so that copying a path copies no family names
    std::shared_ptr<const LinearKernel> family_kernel;
    /// The occupancy on a device of `family`: the kernel's family entry over its own values (the ones copied above),
    /// else the values above (ALU work unscaled).
    KernelOccupancy occupancy_on(const std::string& family) const {
        return family_kernel ? family_kernel->occupancy_on(family)
                             : KernelOccupancy{efficiency, tiles_per_unit, split_k, stream_k, 1.0};
    }
    double alu_ops_per_mac = 0;     ///< LinearKernel::alu_ops_per_mac, on alu_format lanes
    DType alu_format = DType::int32;
    bool alu_on_issue = false;      ///< LinearKernel::alu_on_issue: alu_ops_per_mac are issue slots
    double alu_weight_share = 0;    ///< LinearKernel::alu_weight_share
    double launches = 1;
    double moe_launches = 1;        ///< LinearKernel::moe_launches (its launches where it gives none)
    bool has_fallback = false;      ///< LinearKernel::fallback_compute: where the device lacks `compute` units
    DType fallback = DType::fp16;
    std::vector<std::string> families;  ///< LinearKernel::families: run on devices of these only (empty: all)
    double max_experts = std::numeric_limits<double>::infinity();  ///< LinearKernel::max_experts
    /// Whether it runs a layer of `experts` experts (0: dense) on a device of `family`.
    bool runs(const std::string& family, double experts) const { return kernel_runs(families, max_experts, family, experts); }
    /// Whether `o` has the same per-family occupancies (the same families, each the same values).
    bool same_families(const LinearPath& o) const {
        if (family_kernel == o.family_kernel) return true;
        if (!family_kernel || !o.family_kernel || family_kernel->by_family.size() != o.family_kernel->by_family.size())
            return false;
        for (const auto& entry : family_kernel->by_family)
            if (!o.family_kernel->by_family.count(entry.first) || !(occupancy_on(entry.first) == o.occupancy_on(entry.first)))
                return false;
        return true;
    }
    bool operator==(const LinearPath& o) const {
        return max_rows == o.max_rows && unit == o.unit && compute == o.compute && tile_m == o.tile_m &&
               tile_n == o.tile_n && stream_k == o.stream_k && moe_tile_from_batch == o.moe_tile_from_batch && row_tile_step == o.row_tile_step && dequant_every_rows == o.dequant_every_rows && dequant_overlapped == o.dequant_overlapped &&
               efficiency == o.efficiency && tiles_per_unit == o.tiles_per_unit && split_k == o.split_k &&
               same_families(o) && alu_ops_per_mac == o.alu_ops_per_mac && alu_format == o.alu_format && alu_on_issue == o.alu_on_issue && alu_weight_share == o.alu_weight_share &&
               launches == o.launches && moe_launches == o.moe_launches && has_fallback == o.has_fallback && fallback == o.fallback && families == o.families &&
               max_experts == o.max_experts;
    }
};

/// One distinct operator of a forward pass, with the number of times a pass runs it (layers that have it). Its
/// shape is fixed by the model, formats and options; only the point (batch, tokens, past) is left to choose.
struct OpSlot {
    std::string name;          ///< as forward_ops names the op
    SlotKind kind = SlotKind::rows;
    double count = 0;          ///< instances per forward pass
    bool per_sequence = false; ///< rows are the batch, not batch × tokens (the output head of the last token)
    SlotPhase phase = SlotPhase::any;  ///< the passes it runs in
    /// a bias add or GLU that a mat-vec of one row runs inside itself (PhaseOptions::matvec_fused_bias / _glu): no
    /// kernel, no bytes at one row (fused_away)
    bool fused_at_one_row = false;
    /// a mat-vec of one row that runs inside the kernel of the one before it (the up product beside the gate, whose
    /// kernel applies the GLU: PhaseOptions::matvec_fused_glu): its bytes and FLOPs stay, its launches go (merged_away)
    bool merged_at_one_row = false;
    // rows: builder(rows × scale, a, b, c) in `format` (the table's format for an embedding)
    RowsBuilder builder = RowsBuilder::elementwise;
    double scale = 1, a = 0, b = 0, c = 0;
    Format format;             ///< weights (linear, moe, embedding); activations otherwise
    // linear, moe: k input features, n output features per rank; moe: experts and experts used per token;
    // linear: `groups` products of this shape with their own weights in one batched GEMM (MLA's per-head
    // absorption: heads per rank), n per group
    double k = 0, n = 0, experts = 0, top_k = 0, groups = 1;
    std::vector<LinearPath> paths;  ///< linear, moe: the kernels by rows (the last without limit)
    // attention: heads and KV heads per rank, head_dim, sliding window (0: full attention); MLA (latent > 0): the
    // latent's kv_lora_rank, the shared RoPE key's size and the value head size (head_dim: nope + rope)
    double heads = 0, kv_heads = 0, head_dim = 0, window = 0, latent = 0, rope_dim = 0, v_dim = 0;
    double bytes_per_row = 0;  ///< all_reduce: bytes each rank contributes per row (layer_handoff: sends)
};

/// The distinct operators of a forward pass in the order forward_ops lists them: O(tensors), built once per
/// (model, formats, options). Throws InvalidArgument when tensor_parallel does not divide the heads, the formats do
/// not match the tensors, or the engine has no kernel for a weight format.
std::vector<OpSlot> forward_slots(const Model& model, const std::vector<TensorFormat>& formats, const PhaseOptions& options);

/// The engine's kernels (options.linear_kernels) for linear layers of weights in `f`, as the paths a slot runs by
/// rows: InvalidArgument when the engine has no kernel for the format.
std::vector<LinearPath> linear_paths(const Format& f, const PhaseOptions& options);
/// Whether forward_slots makes the same slots, but for their kernel paths, under both options (the same activation
/// and KV formats, attention kind, logits, fusion, vocabulary split and tensor parallel): then a structure built
/// for one engine backend is another's with assign_paths.
bool same_slots_under(const PhaseOptions& x, const PhaseOptions& y);
/// Every linear and moe slot's paths from options.linear_kernels, by its weight format.
void assign_paths(std::vector<OpSlot>& slots, const PhaseOptions& options);

/// Rows a slot processes at a point: batch × tokens, or the batch for per-sequence slots.
inline double slot_rows(const OpSlot& s, double batch, double tokens) { return s.per_sequence ? batch : batch * tokens; }
/// Whether a rows slot's traffic is the activations one kernel of the pass hands the next (a pointwise map, norm or
/// softmax), which stay in L2 where they fit (from_l2, PhaseOptions::l2_reuse_bytes); not the embedding table's
/// rows (weights) nor the KV append's (the cache, kept for later passes).
inline bool passes_through_l2(const OpSlot& s) {
    return s.kind == SlotKind::rows && s.builder != RowsBuilder::embedding && s.builder != RowsBuilder::kv_append;
}
/// Whether a slot is run inside the mat-vec before it at `rows` rows (OpSlot::fused_at_one_row).
inline bool fused_away(const OpSlot& s, double rows) { return s.fused_at_one_row && rows == 1; }
/// Whether a slot's kernels are the one before it at `rows` rows (OpSlot::merged_at_one_row).
inline bool merged_away(const OpSlot& s, double rows) { return s.merged_at_one_row && rows == 1; }

/// One instance of a slot at (batch, tokens, past): the operator builders' count (ops/*.hpp). all_reduce slots
/// return an empty cost (their bytes are rows × bytes_per_row, timed on the interconnect).
OpCost slot_cost(const OpSlot& slot, const PhaseOptions& options, double batch, double tokens, double past);

/// The path a linear or moe slot runs at `rows` rows on a device of `family`: the first that runs there and for
/// its experts, and whose max_rows is not exceeded.
inline std::size_t linear_path(const OpSlot& s, double rows, const std::string& family) {
    std::size_t i = 0;
    while (i + 1 < s.paths.size() && (rows > s.paths[i].max_rows || !s.paths[i].runs(family, s.experts))) ++i;
    return i;
}
/// A linear slot's GEMM over `rows` rows through path `p`, with utilization 1 and its weights dequantized once: the
/// multiply-adds on p's unit in p's compute format, p's ALU work per multiply-add on its lanes (× `alu_factor`, its
/// tiles' alu_tile_factor), p's launches.
OpCost linear_gemm(const OpSlot& slot, const PhaseOptions& options, double rows, const LinearPath& p, double alu_factor = 1);
/// A moe slot's expert GEMMs for `rows` token rows through path `p` (the path of the token count, as ggml's
/// MUL_MAT_ID chooses its kernel), with utilization 1: ops::moe_gemm with the multiply-adds on p's unit in p's
/// compute format, p's ALU work per multiply-add of the routed rows on its lanes (× `alu_factor`, as linear_gemm),
/// p's launches per MoE call.
OpCost moe_path_gemm(const OpSlot& slot, const PhaseOptions& options, double rows, const LinearPath& p, double alu_factor = 1);
/// How a moe slot's path uses its tiles with `routed` rows over `active` experts (ops::moe_gemm_tile_use on p's
/// tiles and occupancy `o`, its efficiency in `busy`); {1, 1} on vector units. Without `o`: p's on the options'
/// device family (a plan resolves it once per device).
ops::TileUse moe_tile_use(const OpSlot& slot, const PhaseOptions& options, double routed, double active, const LinearPath& p,
                          const KernelOccupancy& o);
inline ops::TileUse moe_tile_use(const OpSlot& slot, const PhaseOptions& options, double routed, double active,
                                 const LinearPath& p) {
    return moe_tile_use(slot, options, routed, active, p, p.occupancy_on(options.device_family));
}
/// A linear slot's weights dequantized once more (vector FLOPs): what each further block of rows costs a kernel
/// that dequantizes per block (LinearPath::dequant_every_rows > 0).
OpCost linear_dequant_pass(const OpSlot& slot, const LinearPath& p);
/// How many times beyond the first path `p` dequantizes a linear slot's weights at `rows` rows.
inline double linear_extra_dequant_passes(const OpSlot& slot, const LinearPath& p, double rows) {
    if (p.dequant_every_rows > 0 && slot.format.dequant_flops_per_element > 0) return std::ceil(rows / p.dequant_every_rows) - 1;
    return 0;
}
/// How path `p` uses its tiles at `rows` rows under occupancy `o`: ops::gemm_tile_use, the kernel's efficiency in
/// `busy`; {1, 1} on vector units. Without `o`: p's on the options' device family (a plan resolves it once per
/// device).
ops::TileUse linear_tile_use(const OpSlot& slot, const PhaseOptions& options, double rows, const LinearPath& p,
                             const KernelOccupancy& o);
inline ops::TileUse linear_tile_use(const OpSlot& slot, const PhaseOptions& options, double rows, const LinearPath& p) {
    return linear_tile_use(slot, options, rows, p, p.occupancy_on(options.device_family));
}
/// The ALU work per useful multiply-add of path `p` under tile use `u`, relative to alu_ops_per_mac (counted in full
/// tiles of tile_m rows): × (alu_weight_share × tile_m / u.rows + 1 − alu_weight_share), a smaller tile unpacking its
/// weights for fewer rows; ÷ u.fill, a tile's unpacking and scaling running for its padded rows too (its weights'
/// dequantization, once per tile, does not grow). 1 without tiles. The idle processors of a last wave are charged to
/// the matrix work only: ggml's MMQ runs 8 and 16 tiles on the 20 WGPs of an RDNA3.5 GPU 1.35x faster than dividing
/// its unpacking by the busy share would give (tests/validation/test_kernel_microbenchmarks.py).
double alu_tile_factor(const LinearPath& p, const ops::TileUse& u);

/// Operators of one forward pass over `batch` sequences of `tokens` new tokens each, after `past` tokens
/// already in the KV cache: prefill is (tokens = P, past = 0), a decode step at context c is (1, c - 1).
/// Identical ops of different layers are merged (count). Per-device ops under tensor parallelism.
/// (The slots of forward_slots, each instantiated by slot_cost at this point.)
std::vector<PhaseOp> forward_ops(const Model& model, const std::vector<TensorFormat>& formats, double batch,
                                 double tokens, double past, const PhaseOptions& options);

/// Whether tensor parallel keeps weight tensor `w` whole on every rank: norms, learned positions, the biases added
/// after a row-split projection (attn_output, ffn_down), and the embedding and output head unless
/// options.vocab_parallel. forward_slots splits every other tensor over the ranks.
bool replicated_under_tensor_parallel(const WeightTensor& w, const PhaseOptions& options);

}  // namespace roofline
