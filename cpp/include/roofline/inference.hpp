// LLM inference estimates: a workload (model × quantization × device × engine × batch, prompt and generated
// tokens) -> prefill and decode time, TTFT, tokens/s, memory, ceilings and a per-op breakdown.
#pragma once

#include "roofline/device.hpp"
#include "roofline/roofline.hpp"
#include "roofline/transformer.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace roofline {

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
    double collective_latency_s = 0.5e-6; ///< per step of a ring all-reduce (2(N−1) steps; tensor parallel)
    std::string source;
};

/// "llama.cpp", "generic" (eager framework), "cuda-graphs" (a compiled engine replaying CUDA graphs).
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
    double ceiling_decode_weights = 0;   ///< DRAM bandwidth / weight bytes: tokens/s if decode only read weights
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
Estimate estimate(const Model& model, const Device& device, const Workload& workload);

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
