// Internal: the parts of an EstimatePlan, for plan.cpp and the sweep (which shares them between plans and points).
//
// Every op of the forward pass is built once (forward_slots), timed at a few points on the device and kept as
// affine functions of its rows (and context, for attention); the ops affine in their rows alone are summed once
// into a piecewise-linear envelope; a decode step's static ops are summed over the generation by a multiplication
// and attention in closed form (sum_of_totals), so an evaluation costs the same for 1 or 10⁶ generated tokens and
// does not depend on the number of layers. Prefill attention is built per prompt length.
#pragma once

#include "roofline/engine.hpp"
#include "roofline/forward.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/plan.hpp"

#include <array>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace roofline {

/// One op (or a sum of ops) at both ceilings, with its FLOPs and DRAM bytes. Adds and scales like its components.
struct OpTimes {
    CeilingTimes derated, ideal;
    double flops = 0, bytes = 0;

    OpTimes& axpy(double a, const OpTimes& x);
};
inline OpTimes operator-(OpTimes a, const OpTimes& b);
// The hot loops below see an OpTimes as the 16 doubles it is made of (two CeilingTimes, FLOPs, bytes: a standard-
// layout struct of doubles without padding, checked here), so that they vectorize as plain arrays do.
inline constexpr std::size_t kOpTimesDoubles = 16;
static_assert(std::is_standard_layout_v<CeilingTimes> && sizeof(CeilingTimes) == 7 * sizeof(double));
static_assert(std::is_standard_layout_v<OpTimes> && sizeof(OpTimes) == kOpTimesDoubles * sizeof(double));
static_assert(offsetof(OpTimes, bytes) == (kOpTimesDoubles - 1) * sizeof(double));
inline double* doubles(OpTimes& t) { return reinterpret_cast<double*>(&t); }
inline const double* doubles(const OpTimes& t) { return reinterpret_cast<const double*>(&t); }

/// t = base + x × per_x (+ y × per_y), in place, component by component (the hot path of every evaluation).
inline void set_affine(OpTimes& t, const OpTimes& b, double x, const OpTimes& p) {
    const double *vb = doubles(b), *vp = doubles(p);
    double r[kOpTimesDoubles];
    for (std::size_t i = 0; i < kOpTimesDoubles; ++i) r[i] = vb[i] + x * vp[i];
    std::memcpy(&t, r, sizeof r);
}
inline void set_affine(OpTimes& t, const OpTimes& b, double x, const OpTimes& p, double y, const OpTimes& q) {
    if (y == 0) return set_affine(t, b, x, p);  // the same value: adding 0 × q changes no bit
    const double *vb = doubles(b), *vp = doubles(p), *vq = doubles(q);
    double r[kOpTimesDoubles];  // computed apart from t, then stored: no overlap checks in the loop
    for (std::size_t i = 0; i < kOpTimesDoubles; ++i) r[i] = vb[i] + x * vp[i] + y * vq[i];
    std::memcpy(&t, r, sizeof r);
}
inline OpTimes& OpTimes::axpy(double a, const OpTimes& x) {
    double* __restrict v = doubles(*this);
    const double* __restrict vx = doubles(x);
    for (std::size_t i = 0; i < kOpTimesDoubles; ++i) v[i] += a * vx[i];
    return *this;
}
inline OpTimes operator-(OpTimes a, const OpTimes& b) { return a.axpy(-1.0, b); }

/// base + x × per_x (+ y × per_y)
inline OpTimes affine(const OpTimes& base, double x, const OpTimes& per_x) {
    OpTimes t = base;
    return t.axpy(x, per_x);
}
inline OpTimes affine(const OpTimes& base, double x, const OpTimes& per_x, double y, const OpTimes& per_y) {
    OpTimes t = base;
    return t.axpy(x, per_x).axpy(y, per_y);
}
/// Every component but the overhead × factor: an op `factor` times as large, launched once.
inline OpTimes work_scaled(const OpTimes& t, double factor) {
    OpTimes r;
    r.derated = t.derated.work_scaled(factor);
    r.ideal = t.ideal.work_scaled(factor);
    r.flops = t.flops * factor;
    r.bytes = t.bytes * factor;
    return r;
}
/// d += n × a, every sum of a phase.
inline void add_sums(PhaseSums& d, double n, const PhaseSums& a) {
    d.seconds += n * a.seconds;
    d.ideal_seconds += n * a.ideal_seconds;
    d.derated.axpy(n, a.derated);
    d.flops += n * a.flops;
    d.bytes += n * a.bytes;
}
/// The bound of a phase from its summed derated components.
PhaseBound phase_bound(const CeilingTimes& t);
/// An op's times on a device at both ceilings.
OpTimes times_of(const OpCost& op, const Device& device);
/// One way an engine runs an all-reduce of rows × bytes_per_row bytes per rank, without its kernel's launch: derated
/// latency_s + rows × per_row_s, ideal rows × ideal_per_row_s (the interconnect is the level a collective streams
/// through, so both are its DRAM term). A custom kernel (library false) takes messages up to max_rows rows; the
/// library's protocols take the rest, each message by the protocol of least time.
struct AllReduceWay {
    std::string name;  // "one-shot", "two-shot", "ring", or the library's protocol ("LL", "LL128", "Simple")
    double latency_s = 0, per_row_s = 0, ideal_per_row_s = 0;
    double max_rows = std::numeric_limits<double>::infinity();
    bool library = false;
};
/// The ways of EngineBackend's all-reduce over `tensor_parallel` ranks joined by `link`, the custom kernel first:
/// all_reduce one-shot / two-shot runs its kernel up to custom_all_reduce_max_bytes (a GPU fabric needed beyond
/// 2 ranks, the model's hidden size within custom_all_reduce_max_hidden) and the library beyond; ring is the
/// library's alone. Without collective_protocols, the engine's algorithm at every size with collective_step_latency_s
/// per step.
std::vector<AllReduceWay> all_reduce_ways(const EngineBackend& engine, const Interconnect& link, double tensor_parallel,
                                          double bytes_per_row, double hidden);
/// The way all_reduce_ways' `ways` runs `rows` rows: the custom kernel within its rows, else the least time.
std::size_t all_reduce_way(const std::vector<AllReduceWay>& ways, double rows);
/// That rule over `n` ways held anywhere: the custom kernel (way 0) when library_from > 0 and `rows` are within its
/// custom_max_rows (or no library follows, library_from == n), else the library's way i >= library_from of least
/// time(i) at `rows`.
template <class Time>
std::size_t pick_all_reduce_way(std::size_t n, std::size_t library_from, double custom_max_rows, double rows, Time time) {
    if (library_from == n || (library_from > 0 && rows <= custom_max_rows)) return 0;
    std::size_t best = library_from;
    for (std::size_t i = best + 1; i < n; ++i)
        if (time(i) < time(best)) best = i;
    return best;
}

/// What a plan keeps of the model and configuration before a device is chosen: the op slots of a forward pass and
/// each slot's ops built at the few points its times are taken from. Immutable; shared between the plans of one
/// (model, configuration, backend) on many devices.
struct PlanStructure {
    PlanConfig config;
    std::shared_ptr<const Engine> engine;
    EngineBackend backend;
    PhaseOptions options;  // without the device's parts (with_device)
    std::string model_id;
    Architecture arch;
    KvLayout kv_layout;
    double parameters = 0, weight_bytes = 0;
    double replicated_bytes = 0;  // weights every tensor-parallel rank holds whole (norms, whole-vocabulary tables)
    // the token embedding and output head (token_embd, output), and those of them every rank holds whole
    double vocab_table_bytes = 0, vocab_table_replicated_bytes = 0;
    std::vector<OpSlot> slots;
    std::vector<std::string> names;        // slot name ids, first appearance order
    std::vector<std::uint32_t> slot_name;  // per slot, its index in names
    // per slot, the ops built at the points its times are taken from (see plan.cpp, probes_of)
    std::vector<std::vector<OpCost>> probes;
};

/// Validates and builds a structure (the engine's backend named by `backend`).
std::shared_ptr<const PlanStructure> make_structure(const Model& model, const PlanConfig& config, const std::string& backend,
                                                    const std::vector<TensorFormat>* formats = nullptr);
/// The structure of the same configuration on another backend of its engine, built from `sibling` by giving its slots
/// that backend's kernels; nullptr when the backend's options make other slots (same_slots_under): build it anew.
std::shared_ptr<const PlanStructure> structure_for_backend(const PlanStructure& sibling, const std::string& backend);
/// The device as an engine's kernels see it: the fixed cost per kernel × kernel_fixed_cost_scale (+
/// layer_split_kernel_fixed_cost_add under a layer split), the achievable DRAM fraction × bandwidth_fraction (at most
/// 1: the datasheet's bandwidth).
std::shared_ptr<const Device> device_for_engine(const Device& device, const EngineBackend& backend, bool layer_split = false);
/// device_for_engine for a structure's engine backend and split.
std::shared_ptr<const Device> device_for_engine(const Device& device, const PlanStructure& structure);

/// An op slot with its times. rows and all_reduce slots: base + rows × per_row. linear slots, per path (kernel):
/// base + rows × per_row + extra dequantization passes × pass, matrix compute ÷ the path's utilization. moe: base +
/// routed rows × per_row + active experts × extra. decode attention: base + batch × (per_row + context × extra).
struct PlanSlot {
    struct Path {
        OpTimes base, per_row, pass;
        double max_rows = 0;
        double dequant_every_rows = 0;  // > 0: the weights are dequantized again per block of this many rows
        bool matrix = false;            // on matrix units: its matrix compute is divided by a utilization
        DType compute = DType::fp16;    // the format its multiply-adds run in here (LinearPath's, or its fallback)
        std::uint32_t group = 0;  // matrix paths with the same output features, tile and rows share a utilization
        KernelOccupancy occupancy;  // matrix paths: the kernel's occupancy on this device's family, resolved once
    };
    const OpSlot* op = nullptr;  // in the plan's structure
    std::uint32_t name = 0;
    OpTimes base, per_row, extra;
    std::vector<Path> paths;  // all_reduce: one per AllReduceWay (max_rows, library_from below)
    std::uint32_t library_from = 0;  // all_reduce: the first path of the collective library (paths.size(): none)
};

/// The slots that are affine in their rows alone (rows, all_reduce) summed once: each op's time is a max of affine
/// functions of its rows, so their sum is convex piecewise-linear in the rows; kept per row group (rows = batch ×
/// tokens, or the batch for per-sequence slots) as breakpoints and a line per interval.
struct Envelope {
    std::vector<double> x;                     // interval starts, ascending, x[0] = 0
    std::vector<std::array<double, 4>> lines;  // per interval: derated time a + b·rows, ideal time a + b·rows
    OpTimes base, per_row;                     // Σ count × components of the slots affine in rows
    // per interval, Σ count × components (at 0 rows, per row) of the all-reduces that switch ways with the rows
    std::vector<std::pair<OpTimes, OpTimes>> switching;
    // Σ count × the times at one row of the slots a one-row mat-vec runs inside itself (OpSlot::fused_at_one_row):
    // at one row the envelope less these, exactly (each slot's line at one row is its total there)
    OpTimes fused_one_row;
    double fused_one_row_derated = 0, fused_one_row_ideal = 0;
};

/// A decode step's Σ ideal (compute − DRAM) seconds as a function of the batch, for compute_bound_batch: the parts
/// that do not switch kernels, and per group of linear slots with the same kernel thresholds, per kernel.
struct BalanceGroup {
    std::vector<double> max_rows, dequant_every_rows;
    std::vector<std::array<double, 3>> coef;  // per path: at 0 rows, per row, per extra dequantization pass
};

/// The micro-batches a prompt is evaluated in (EngineBackend::prefill_ubatch_tokens or PlanConfig::ubatch_tokens), and
/// per micro-batch the times of one sequence's attention at each attention slot (empty for a one-token micro-batch:
/// decode attention, affine in the batch).
struct PrefillChunks {
    double prompt = -1, past = -1;              // what they are for
    std::vector<double> tokens, past_of;        // per micro-batch: new tokens, tokens already cached before it
    std::vector<std::vector<OpTimes>> attention;  // a prompt of one micro-batch: its attention slots' times
    // per attention slot, its micro-batches of more than one token summed for one sequence: the timing rule of
    // each is overhead + batch × (the rest), so the sum over micro-batches is Σ overhead + batch × Σ rest
    struct Total {
        double derated_overhead = 0, derated_rest = 0, ideal_overhead = 0, ideal_rest = 0;
        CeilingTimes components;  // Σ derated components without the overhead (per sequence)
        double flops = 0, bytes = 0;
    };
    std::vector<Total> totals;
    bool last_is_one_token = false;  // its attention is decode attention (sum_slots)
};

/// Which slots sum_slots adds.
enum class SlotParts : std::uint8_t { all, static_only, attention_only };

struct EstimatePlan::Impl {
    std::string device_id;
    std::shared_ptr<const PlanStructure> structure;
    std::shared_ptr<const Device> device;  // fixed cost per kernel scaled by the engine (device_for_engine)
    PhaseOptions options;
    double dram_bandwidth_Bps = 0, capacity_bytes = 0;
    double device_weight_bytes = 0;  // what one rank holds: split weights ÷ ranks + replicated ones
    // a layer split (PhaseOptions::pipeline_stages): its devices, the busiest one's share of the layers (its share
    // of their weights and KV cache), the tokens of one call whose micro-batches the devices overlap (0: none)
    double stages = 1, layer_share = 1, pipeline_tokens = 0;
    std::uint8_t split_code = 0;  // the config's split_mode as a code of split_mode_names() (estimate.hpp)
    /// The prefill's seconds under a layer split's pipeline ÷ its seconds with the devices one after another.
    double pipeline_overlap(double prompt) const;
    // weight bytes one decode step reads on one rank: the dense linear layers', and per MoE slot (experts, top_k,
    // one expert's bytes × count) for the experts a batch activates
    double step_dense_weight_bytes = 0;
    std::vector<std::array<double, 3>> step_expert_weights;
    double weights_read_per_step(double batch) const;
    // the prediction interval's ratios for this device and quantization (EngineBackend::interval)
    double decode_lo = 1, decode_hi = 1, prefill_lo = 1, prefill_hi = 1;
    std::uint32_t groups = 0;
    std::vector<PlanSlot> slots;
    std::vector<std::size_t> attention;  // slot indices of attention slots
    double act_bytes = 0, widest = 0;
    double ubatch = 0;  // prompt micro-batch in tokens (0: the whole prompt at once)
    double kv_token_layer_bytes = 0;  // one token's K and V in one layer, one rank
    // compute_bound_batch
    double cb_common0 = 0, cb_common1 = 0;
    std::vector<BalanceGroup> cb_groups;
    std::vector<std::array<double, 3>> cb_active;     // experts, experts used, coefficient
    std::vector<std::array<double, 3>> cb_attention;  // window, per sequence, per sequence × context
    std::array<Envelope, 2> envelope;  // [0]: rows = batch × tokens, [1]: per sequence

    Impl(std::shared_ptr<const Device> engine_device, std::shared_ptr<const PlanStructure> structure);

    // The pieces evaluate() assembles; the sweep shares them between points. Each is a pure function of its
    // arguments, so sharing them changes no bit of the result.
    /// The micro-batches of a prompt of `prompt` tokens after `past` cached ones, with their attention times.
    PrefillChunks prefill_attention(double prompt, double past) const;
    /// One sequence's attention at one attention slot (an index into `attention`) for a micro-batch of `tokens` after
    /// `past` cached ones, keyed so: a caller that asks for many prompts at one plan (the sweep) keeps them across
    /// prompts, whose full micro-batches sit at the same positions (a pure function: sharing changes no value).
    using AttentionMemo = std::vector<std::pair<std::array<double, 3>, OpTimes>>;  // searched from the newest
    /// The same in micro-batches of `chunk` tokens (0: the whole prompt at once), each micro-batch's attention taken
    /// from `memo` where it holds it.
    PrefillChunks prefill_attention(double prompt, double past, double chunk, AttentionMemo* memo = nullptr) const;
    /// The prefill of `batch` sequences: every micro-batch's slots (the static ones shared between micro-batches of
    /// one size), weights read again per micro-batch, attention over the growing context.
    /// `static_sums`: the static slots' sums of each micro-batch size already summed at this batch (by a caller that
    /// prefills several prompts at one batch, the sweep), read and extended here.
    PhaseSums prefill(double batch, const PrefillChunks& chunks, std::vector<BreakdownRow>* breakdown = nullptr,
                      std::vector<std::pair<double, PhaseSums>>* static_sums = nullptr) const;
    /// A decode step's ops but attention (they do not depend on the context), at `batch` sequences.
    PhaseSums decode_step(double batch) const;
    /// `gen` decode steps at contexts prompt + 1 ... prompt + gen: `step` × gen plus attention in closed form.
    PhaseSums decode(double batch, double prompt, double gen, const PhaseSums& step,
                     std::vector<BreakdownRow>* breakdown = nullptr) const;
    PhaseSums phase(double batch, double tokens, double past) const;

    // The pieces of a serving iteration (serving.cpp): decode tokens and a prefill chunk in one forward pass.
    /// Experts split over ranks (expert parallel with attention data parallel): each rank holds experts / ranks of
    /// every MoE layer and gets the rows `global_tokens` route to them, × imbalance (the busiest rank's share).
    struct ExpertSplit {
        double ranks = 1, global_tokens = 0, imbalance = 1;
    };
    /// Every op but attention at `token_rows` rows (per-token ops) and `sequence_rows` rows (per-sequence ops: the
    /// output head of the sequences that sample a token); MoE slots under `experts` when given.
    PhaseSums step(double token_rows, double sequence_rows, const ExpertSplit* experts = nullptr,
                   std::vector<BreakdownRow>* breakdown = nullptr, const char* phase = "") const;
    /// Decode attention of `batch` sequences at `context` tokens each (one step).
    /// Attention of `batch` sequences each verifying `queries` tokens at `context` (speculative decoding): the
    /// decode kernels take a sequence's few query tokens in one pass over its cache, as more query heads sharing
    /// the KV heads (FlashMLA, FlashInfer), so the cache is read once and the FLOPs are `queries` times a token's.
    PhaseSums verify_attention(double batch, double context, double queries) const;
    PhaseSums decode_attention(double batch, double context, std::vector<BreakdownRow>* breakdown = nullptr,
                               const char* phase = "") const;
    /// Decode attention of `batch` sequences over the steps at contexts c0 ... c1 (closed form).
    PhaseSums decode_attention_sum(double batch, double c0, double c1) const;
    /// The attention of `batch` sequences' prompts over their micro-batches (prefill_attention's result).
    PhaseSums chunked_attention(const PrefillChunks& chunks, double batch) const;
    /// Activations of one forward pass of `token_rows` rows, `sequence_rows` of them sampling (f32 logits), on the
    /// flash path (no score matrix): the widest intermediate and two hidden-state buffers.
    double activation_bytes(double token_rows, double sequence_rows) const;
    /// KV bytes of one sequence of `tokens` tokens on one rank (a sliding-window layer keeps its window).
    double kv_bytes_per_sequence(double tokens) const { return structure->kv_layout.token_layers(tokens) * kv_token_layer_bytes; }
    /// Bytes of every expert of every MoE layer on one rank (split over tensor-parallel ranks as the plan splits them).
    double expert_weight_bytes() const;
    /// Bytes of the token embedding and output head on one rank (split as the plan splits them).
    double vocab_table_device_bytes() const;
    MemoryUse memory(double batch, double prompt, double gen, double context = 0) const;
    double max_batch(double prompt, double gen, double context = 0) const;
    double max_context(double batch) const;
    double compute_bound_batch(double prompt, double gen, double context = 0) const;
    EstimateRow assemble(double batch, double prompt, double gen, double context, const PhaseSums& prefill, const PhaseSums& decode,
                         double max_context, double compute_bound_batch, double max_batch) const;

    PhaseSums sum_slots(double batch, double tokens, double past, const std::vector<OpTimes>* attention,
                        std::vector<BreakdownRow>* breakdown, const char* phase, SlotParts parts = SlotParts::all) const;

    // evaluate()'s last few prompts' micro-batch attention, batches' max_context and mean contexts' compute-bound
    // batch, shared by the calls of one plan (pure functions of their arguments: sharing them changes no value; a
    // hit copies a pointer, not the chunks).
    struct AttentionCache {
        std::mutex mutex;
        std::array<std::shared_ptr<const PrefillChunks>, 4> chunks;
        std::size_t next = 0;
        std::array<std::array<double, 2>, 8> max_context{};  // (batch, max_context); batch 0: empty
        std::size_t next_max_context = 0;
        std::array<std::array<double, 2>, 8> compute_bound{};  // (mean decode context, batch); context 0: empty
        std::size_t next_compute_bound = 0;
    };
    std::unique_ptr<AttentionCache> attention_cache = std::make_unique<AttentionCache>();
    std::shared_ptr<const PrefillChunks> cached_prefill_attention(double prompt, double past) const;
    double cached_max_context(double batch) const;
    double cached_compute_bound_batch(double prompt, double gen, double context) const;
};

}  // namespace roofline
