// LLM inference estimates: a workload (model × quantization × device × engine × batch, prompt and generated
// tokens) -> prefill and decode time, TTFT, tokens/s, memory, ceilings and a per-op breakdown.
#pragma once

#include "roofline/device.hpp"
#include "roofline/roofline.hpp"
#include "roofline/transformer.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// How an engine sums the tensor-parallel partial outputs. ring: NCCL's ring, 2(N−1) steps each moving 1/N of the
/// message; one_shot: every rank reads its N−1 peers' partial sums directly over the links (peer-to-peer access),
/// one signal and one wait whatever N.
enum class AllReduce : std::uint8_t { ring, one_shot };

/// What an inference engine does to the op list: kernel launch cost, which kernels small GEMMs use, how often
/// quantized weights are dequantized, the format activations travel in, memory it needs besides weights and KV.
struct Engine {
    std::string name;
    double launch_overhead_scale = 1.0;  ///< × the device's per-launch overhead (CUDA graphs make it smaller)
    double gemv_max_rows = 8;            ///< GEMMs with at most this many rows use mat-vec kernels (vector units)
    double gemm_tile_m = 64, gemm_tile_n = 64;
    double dequant_tile_rows = 0;        ///< > 0: quantized weights are dequantized once per this many rows
    std::string activation = "fp16";     ///< format of activations between ops
    bool logits_last_token_only = true;  ///< prefill runs the output head for the last token only
    double runtime_overhead_bytes = 0;   ///< compute buffers, CUDA context, ...
    AllReduce all_reduce = AllReduce::ring;  ///< tensor parallel's all-reduce algorithm (one kernel each)
    /// per synchronisation step of an all-reduce over the interconnect: NCCL's own tuning model charges 0.47 µs
    /// per NVLink step of its low-latency ring protocol (nccl src/graph/tuning.cc, hwLat)
    double collective_latency_s = 0.5e-6;
    bool dequant_overlapped = true;      ///< quantized weights' dequantization hides under the kernel's loads
    bool fused_qkv = false;              ///< Q, K and V projections run as one GEMM (when they share a format)
    bool vocab_parallel = true;          ///< tensor parallel splits the embedding and output head by vocabulary
    std::string source;
};

/// "llama.cpp", "generic" (eager framework), "cuda-graphs" (a compiled engine replaying CUDA graphs), "gpt-fast"
/// (pytorch-labs/gpt-fast: torch.compile with CUDA graphs, as its source builds the model).
Engine engine(std::string_view name);
std::vector<std::string> engine_names();

struct Workload {
    std::string quant = "Q4_K_M";
    double batch = 1;
    double prompt_tokens = 512;
    double gen_tokens = 128;
    std::string kv_dtype = "f16";
    bool flash_attention = false;
    std::string engine = "llama.cpp";
    int tensor_parallel = 1;
    // Speculative decoding: a draft model proposes `draft_tokens` (γ) tokens, accepted each with probability
    // `acceptance` (α); one target pass verifies γ + 1 tokens.
    const Model* draft = nullptr;
    std::string draft_quant;
    double draft_tokens = 0;
    double acceptance = 0;
};

struct BreakdownRow {
    std::string phase, op;
    double count = 0, flops = 0, bytes = 0, seconds = 0;
    std::string bound;
    double intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

struct MemoryUse {
    double weights = 0, kv_cache = 0, activations = 0, overhead = 0, total = 0, capacity = 0;
    bool fits = false;
};

struct Estimate {
    std::string model, quant, device, engine;
    double parameters = 0, weight_bytes = 0, bits_per_weight = 0;
    double batch = 0, prompt_tokens = 0, gen_tokens = 0;
    int tensor_parallel = 1;

    double prefill_s = 0, prefill_tokens_per_s = 0, ttft_s = 0;
    double decode_s = 0;
    double decode_tokens_per_s = 0;        ///< per sequence
    double decode_tokens_per_s_total = 0;  ///< all sequences of the batch
    double total_s = 0;
    std::string prefill_bound, decode_bound;

    // Ceilings: what the datasheet allows.
    double ceiling_decode_weights = 0;   ///< DRAM bandwidth / weight bytes (one device's share under tensor parallel)
    double ceiling_decode = 0;           ///< the pure roofline of the decode steps (datasheet, no overhead), tokens/s
    double ceiling_prefill = 0;          ///< the pure roofline of the prefill, tokens/s
    double decode_intensity = 0;         ///< FLOP per DRAM byte of a decode step at the mean context
    double compute_bound_batch = 0;      ///< smallest batch whose decode step is compute-bound (0: none up to 1e6)

    MemoryUse memory;
    double max_batch = 0;    ///< largest batch that fits at this prompt + gen length
    double max_context = 0;  ///< longest context that fits at this batch

    double speculative_tokens_per_cycle = 0;  ///< (1 − α^(γ+1)) / (1 − α) when speculative decoding is on

    std::vector<BreakdownRow> breakdown;
};

/// Estimate a workload. The device's efficiency block derates the ceilings; the engine adds launch overhead.
/// (An EstimatePlan built for the workload's configuration, evaluated at its batch, prompt and generated tokens.)
Estimate estimate(const Model& model, const Device& device, const Workload& workload);

// -------------------------------------------------------------------------------------------------------------
// Estimate plans: what stays fixed while batch, prompt and generated tokens vary, built once and evaluated in O(1)
// in the number of layers and of tokens.

/// The bound of a phase as a small code (sweep columns): "" when the phase is absent (no prompt / no generated
/// tokens), then none, compute, memory:dram, memory:l2, memory:sram, overhead.
enum class PhaseBound : std::uint8_t { absent, none, compute, dram, l2, sram, overhead };
/// "", "none", "compute", "memory:dram", "memory:l2", "memory:sram", "overhead", indexed by PhaseBound.
const std::vector<std::string>& phase_bound_names();

/// The numbers of one estimate without its names, breakdown or speculative decoding: one row of a sweep.
struct EstimateRow {
    double batch = 0, prompt_tokens = 0, gen_tokens = 0;
    double prefill_s = 0, prefill_tokens_per_s = 0, ttft_s = 0;
    double decode_s = 0, decode_tokens_per_s = 0, decode_tokens_per_s_total = 0, total_s = 0;
    double ceiling_decode_weights = 0, ceiling_decode = 0, ceiling_prefill = 0, decode_intensity = 0;
    double compute_bound_batch = 0;
    MemoryUse memory;
    double max_batch = 0, max_context = 0;
    PhaseBound prefill_bound = PhaseBound::absent, decode_bound = PhaseBound::absent;
};

/// The configuration a plan is built for: everything of a Workload but the point (batch, prompt, generated tokens)
/// and speculative decoding.
struct PlanConfig {
    std::string quant = "Q4_K_M";
    std::string kv_dtype = "f16";
    bool flash_attention = false;
    std::string engine = "llama.cpp";
    int tensor_parallel = 1;
};

/// Time components and counts of one op or a sum of ops at both ceilings, split so that costs that grow with rows,
/// dequantization passes, active experts or context add up without building the op again. v[0..6] derated,
/// v[7..13] ideal: matrix-unit compute seconds (divided by the utilization of a tiled GEMM when derated), other
/// compute seconds, serial compute seconds (Timing::serial_seconds, 0 when ideal), DRAM, L2, SRAM seconds,
/// overhead seconds; v[14] FLOPs; v[15] DRAM bytes.
struct OpTimes {
    static constexpr std::size_t kSize = 16;
    std::array<double, kSize> v{};
};

/// Totals of a phase: seconds at both ceilings, the derated components summed over ops (for the phase's bound),
/// FLOPs and DRAM bytes.
struct PhaseSums {
    double seconds = 0, ideal_seconds = 0;
    double compute = 0, overhead = 0;
    std::array<double, kNumLevels> memory{};
    double flops = 0, bytes = 0;
};

/// A model × device × configuration, ready to be evaluated at any (batch, prompt tokens, generated tokens). Every op
/// of the forward pass is built once (forward_slots), timed at a few points on the device and kept as affine
/// functions of its rows (and context, for attention); the ops affine in their rows alone are summed once into a
/// piecewise-linear envelope; a decode step's static ops are summed over the generation by a multiplication and
/// attention in closed form, so an evaluation costs the same for 1 or 10⁶ generated tokens and does not depend on
/// the number of layers. Prefill attention is built per prompt length (evaluate() keeps the last few).
/// Thread-safe once built (the prompt-length cache is locked): evaluate it from any number of threads. It copies
/// what it needs from the model and device.
class EstimatePlan {
public:
    /// `formats` (optional) are the model's tensor_formats for the quant, when the caller shares them between plans.
    EstimatePlan(const Model& model, const Device& device, const PlanConfig& config,
                 const std::vector<TensorFormat>* formats = nullptr);

    /// What a plan keeps of the model and configuration before a device is chosen: the op slots of a forward pass
    /// and each slot's ops built at the few points its times are taken from. Immutable; shared between the plans of
    /// one (model, configuration) on many devices.
    struct Structure;
    static std::shared_ptr<const Structure> structure(const Model& model, const PlanConfig& config,
                                                      const std::vector<TensorFormat>* formats = nullptr);
    /// A plan from a structure: times the structure's ops on `device` (no op is built).
    EstimatePlan(const Device& device, const std::shared_ptr<const Structure>& structure);
    /// The device as the plans of `engine` see it (its launch overhead × the engine's scale), to share between plans.
    static std::shared_ptr<const Device> device_for_engine(const Device& device, std::string_view engine);
    /// A plan from a structure and a device_for_engine of the structure's engine; shares both (a sweep builds one
    /// such device per device and engine, not one per plan).
    EstimatePlan(std::shared_ptr<const Device> engine_device, const std::shared_ptr<const Structure>& structure);

    /// Everything estimate() returns but names and speculative decoding; `breakdown` (optional) gets the per-op rows.
    /// Checks the point (batch >= 1, whole token counts, prompt + gen >= 1).
    EstimateRow evaluate(double batch, double prompt, double gen, std::vector<BreakdownRow>* breakdown = nullptr) const;
    /// The full estimate of a point, with names and the breakdown.
    Estimate estimate(double batch, double prompt, double gen, bool breakdown = true) const;

    // The pieces evaluate() assembles, for callers that share them between points (the sweep). Each is a pure
    // function of its arguments, so sharing them changes no bit of the result.
    /// Prefill attention of one sequence of `prompt` tokens, per attention slot (the rest of a prefill scales).
    std::vector<OpTimes> prefill_attention(double prompt) const;
    PhaseSums prefill(double batch, double prompt, const std::vector<OpTimes>& attention,
                      std::vector<BreakdownRow>* breakdown = nullptr) const;
    /// A decode step's ops but attention (they do not depend on the context), at `batch` sequences.
    PhaseSums decode_step(double batch) const;
    /// `gen` decode steps at contexts prompt + 1 ... prompt + gen: `step` × gen plus attention in closed form.
    PhaseSums decode(double batch, double prompt, double gen, const PhaseSums& step,
                     std::vector<BreakdownRow>* breakdown = nullptr) const;
    MemoryUse memory(double batch, double prompt, double gen) const;
    double max_batch(double prompt, double gen) const;           ///< largest batch that fits (memory is affine in it)
    double max_context(double batch) const;                      ///< longest context that fits (bisection)
    double compute_bound_batch(double prompt, double gen) const; ///< bisection over aggregated step coefficients
    EstimateRow assemble(double batch, double prompt, double gen, const PhaseSums& prefill, const PhaseSums& decode,
                         double max_context, double compute_bound_batch, double max_batch) const;
    /// A forward pass over `batch` × `tokens` new tokens after `past` (speculative decoding's draft and verify).
    PhaseSums phase(double batch, double tokens, double past) const;
    /// Throws InvalidArgument naming the bad value unless batch >= 1 and the token counts are whole and sum to >= 1.
    static void check_point(double batch, double prompt, double gen);
    /// The model's tensor formats under `quant` as a plan uses them (unquantized tensors in bf16, fp16 for "fp16").
    static std::vector<TensorFormat> formats_for(const Model& model, const std::string& quant);

    const std::string& model_id() const;
    const std::string& device_id() const { return device_id_; }
    const std::string& engine_name() const;
    const PlanConfig& config() const { return config_; }
    double parameters() const { return parameters_; }
    double weight_bytes() const { return weight_bytes_; }
    double bits_per_weight() const { return parameters_ > 0 ? 8 * weight_bytes_ / parameters_ : 0; }
    std::size_t op_slots() const { return slots_.size(); }

    /// An op slot with its times: rows and all_reduce slots: base + rows × per_row; linear slots: the same through
    /// mat-vec kernels, tiled_base + rows × tiled_row + extra dequantization passes × tiled_pass (matrix compute ÷
    /// utilization) through tiled ones; moe: base + routed rows × per_row + active experts × extra; decode attention:
    /// base + batch × (per_row + context × extra).
    struct Slot {
        const OpSlot* op = nullptr;  ///< in the plan's structure (shared between the plans of one configuration)
        std::uint32_t name = 0;
        std::uint32_t group = 0;  ///< linear slots with the same output features and rows share a utilization
        OpTimes base, per_row, extra, tiled_base, tiled_row, tiled_pass;
    };
    /// The slots that are affine in their rows alone (rows, all_reduce) summed once: each op's time is a max of
    /// affine functions of its rows, so their sum is convex piecewise-linear in the rows; kept per row group
    /// (rows = batch × tokens, or the batch for per-sequence slots) as breakpoints and a line per interval.
    struct Envelope {
        std::vector<double> x;                     ///< interval starts, ascending, x[0] = 0
        std::vector<std::array<double, 4>> lines;  ///< per interval: derated time a + b·rows, ideal time a + b·rows
        OpTimes base, per_row;                     ///< Σ count × components (affine in rows)
    };

private:
    std::string device_id_;
    PlanConfig config_;
    std::shared_ptr<const Structure> structure_;  // the slots, names and architecture the slots point into
    std::shared_ptr<const Device> device_;  // launch overhead scaled by the engine (device_for_engine)
    const Engine* engine_ = nullptr;  // in structure_
    PhaseOptions options_;
    double interconnect_Bps_ = 0;
    double parameters_ = 0, weight_bytes_ = 0, dram_bandwidth_ = 0, capacity_ = 0;
    double device_weight_bytes_ = 0;  // what one tensor-parallel rank holds: split weights ÷ ranks + replicated ones
    std::uint32_t groups_ = 0;
    std::vector<Slot> slots_;
    std::vector<std::size_t> attention_;  // slot indices of attention slots
    // memory: layers without a window, and the windows of the others (with their counts)
    double full_layers_ = 0;
    std::vector<std::pair<double, double>> windows_;
    double act_bytes_ = 0, kv_bytes_ = 0, widest_ = 0;
    // compute_bound_batch: Σ ideal (compute − DRAM) seconds of a decode step as a function of the batch
    double cb_vec0_ = 0, cb_vec1_ = 0, cb_mat0_ = 0, cb_mat1_ = 0, cb_pass_ = 0;
    std::vector<std::array<double, 3>> cb_active_;  // experts, experts used, coefficient
    std::vector<std::array<double, 3>> cb_attention_;  // window, per sequence, per sequence × context
    std::array<Envelope, 2> envelope_;  // [0]: rows = batch × tokens, [1]: per sequence

    PhaseSums sum_slots(double batch, double tokens, double past, const std::vector<OpTimes>* attention,
                        std::vector<BreakdownRow>* breakdown, const char* phase) const;

    // evaluate()'s last few prefill_attention results (a pure function of the prompt: sharing it changes no bit)
    struct AttentionCache {
        std::mutex mutex;
        std::array<double, 4> prompt{{-1, -1, -1, -1}};
        std::array<std::vector<OpTimes>, 4> attention;
        std::size_t next = 0;
    };
    std::unique_ptr<AttentionCache> cache_ = std::make_unique<AttentionCache>();
    std::vector<OpTimes> cached_prefill_attention(double prompt) const;
};

/// One measured point for calibration: llama-bench style (prompt_tokens > 0, gen 0 = ppN; prompt 0, gen > 0 =
/// tgN) or a whole run.
struct ThroughputMeasurement {
    const Model* model = nullptr;
    std::string quant;
    double batch = 1, prompt_tokens = 0, gen_tokens = 0;
    double tokens_per_s = 0;
    std::string label;
};

struct FitReport {
    std::vector<std::string> labels;
    std::vector<double> measured, predicted_before, predicted_after;  ///< tokens/s
    double rms_relative_error_before = 0, rms_relative_error_after = 0;
    double dram_bandwidth = 0, compute = 0, launch_overhead_s = 0;  ///< the fitted efficiency parameters
    int iterations = 0;
};

/// Fit the device's efficiency parameters (achievable DRAM fraction, compute fraction, per-launch overhead)
/// to measured tokens/s by least squares (Eigen), each point weighted by its relative error, with a weak
/// pull towards the current values so that parameters the data does not inform stay where they were.
/// Returns the calibrated device; `report` (when given) gets the residuals.
Device calibrate_efficiency(const Device& device, const std::vector<ThroughputMeasurement>& points, std::string_view engine,
                            const std::string& kv_dtype = "f16", FitReport* report = nullptr);

}  // namespace roofline
