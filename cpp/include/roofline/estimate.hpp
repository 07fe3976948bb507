// LLM inference estimates: a workload (model × quantization × device × engine × batch, prompt and generated tokens)
// -> prefill and decode time, TTFT, tokens/s, memory, ceilings and a per-op breakdown. The fields of an estimate are
// listed once, in ROOFLINE_ESTIMATE_FIELDS: the structs, the sweep's columns, the Python attributes and the stubs
// are all made from that table.
#pragma once

#include "roofline/device.hpp"
#include "roofline/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace roofline {

/// The bound of a phase as a small code (sweep columns): "" when the phase is absent (no prompt / no generated
/// tokens), then none, compute, memory:dram, memory:l2, memory:sram, overhead.
enum class PhaseBound : std::uint8_t { absent, none, compute, dram, l2, sram, overhead };
/// "", "none", "compute", "memory:dram", "memory:l2", "memory:sram", "overhead", indexed by PhaseBound.
const std::vector<std::string>& phase_bound_names();
/// "none", "layer", "tensor": how a plan's devices share the model (PlanConfig::split_mode resolved), by code.
const std::vector<std::string>& split_mode_names();

// The fields of one estimate at one point: X(name, C++ type, unit, meaning), in the order of a sweep's columns.
// Units: "s" seconds, "1/s" tokens per second, "B" bytes, "FLOP/B", "bit" (per weight), "" a count or a flag.
// Adding a field is one line here (and one in plan.cpp, where it is computed).
#define ROOFLINE_ESTIMATE_FIELDS(X)                                                                                       \
    X(parameters, double, "", "elements of every weight tensor (a tied output head counted once)")                       \
    X(weight_bytes, double, "B", "bytes of every weight under the quantization (all ranks)")                             \
    X(bits_per_weight, double, "bit", "8 x weight_bytes / parameters")                                                   \
    X(batch, double, "", "sequences processed together")                                                                 \
    X(prompt_tokens, double, "", "prompt tokens of each sequence")                                                       \
    X(gen_tokens, double, "", "tokens generated per sequence")                                                           \
    X(context_tokens, double, "", "tokens already in each sequence's KV cache before the prompt (llama-bench -d)")       \
    X(prefill_s, double, "s", "time of the prefill of every prompt of the batch")                                        \
    X(prefill_tokens_per_s, double, "1/s", "prompt tokens per second (batch x prompt_tokens / prefill_s)")                \
    X(prefill_tokens_per_s_lo, double, "1/s", "low end of prefill_tokens_per_s's prediction interval (engine_db prediction_interval)") \
    X(prefill_tokens_per_s_hi, double, "1/s", "high end of prefill_tokens_per_s's prediction interval")                   \
    X(ttft_s, double, "s", "time to the first token: the prefill, or one decode step without a prompt")                  \
    X(decode_s, double, "s", "time of the gen_tokens decode steps")                                                      \
    X(tpot_s, double, "s", "time per output token of one sequence (decode_s / gen_tokens)")                              \
    X(decode_tokens_per_s, double, "1/s", "generated tokens per second of one sequence (gen_tokens / decode_s)")         \
    X(decode_tokens_per_s_lo, double, "1/s", "low end of decode_tokens_per_s's prediction interval (engine_db prediction_interval)") \
    X(decode_tokens_per_s_hi, double, "1/s", "high end of decode_tokens_per_s's prediction interval")                     \
    X(decode_tokens_per_s_total, double, "1/s", "generated tokens per second of the whole batch")                        \
    X(total_s, double, "s", "prefill_s + decode_s")                                                                      \
    X(prefill_bound, PhaseBound, "", "what bounds the prefill: compute, memory:<level> or overhead ('' without a prompt)") \
    X(decode_bound, PhaseBound, "", "what bounds the decode steps ('' without generated tokens)")                        \
    X(ceiling_decode_weights, double, "1/s", "DRAM bandwidth / weight bytes one decode step reads on one rank (active experts, the output head; not the embedding table): decode tokens/s per sequence if only weights were read") \
    X(ceiling_decode, double, "1/s", "the pure roofline of the decode steps (datasheet ceilings, no overhead), per sequence") \
    X(ceiling_decode_total, double, "1/s", "ceiling_decode x batch: the pure roofline of the whole batch's decode")       \
    X(ceiling_prefill, double, "1/s", "the pure roofline of the prefill, prompt tokens per second")                       \
    X(decode_intensity, double, "FLOP/B", "FLOPs per DRAM byte of the decode steps")                                     \
    X(compute_bound_batch, double, "", "smallest batch whose decode step is compute-bound (0: none up to 2^20)")          \
    X(fits, bool, "", "memory_total <= memory_capacity")                                                                 \
    X(memory_weights, double, "B", "weights one rank holds")                                                             \
    X(memory_kv_cache, double, "B", "KV cache of the batch at prompt + gen tokens, one rank's share")                      \
    X(memory_activations, double, "B", "activations of the largest step, logits included")                              \
    X(memory_overhead, double, "B", "the engine's runtime memory (context, buffers)")                                    \
    X(memory_total, double, "B", "weights + KV cache + activations + overhead")                                          \
    X(memory_capacity, double, "B", "the device's DRAM")                                                                 \
    X(max_batch, double, "", "largest batch that fits at this prompt + gen length")                                      \
    X(max_context, double, "", "longest context that fits at this batch")

// The configuration an estimate was made for: X(name, C++ type, unit, meaning). A sweep's first columns.
#define ROOFLINE_ESTIMATE_CONFIG_FIELDS(X)                                                                                \
    X(model, std::string, "", "model id")                                                                                \
    X(quant, std::string, "", "quantization")                                                                            \
    X(device, std::string, "", "device id")                                                                              \
    X(engine, std::string, "", "engine id")                                                                              \
    X(kv_dtype, std::string, "", "KV-cache format")                                                                      \
    X(flash_attention, bool, "", "flash attention on")                                                                   \
    X(tensor_parallel, int, "", "devices the model is split over")                                                       \
    X(ubatch_tokens, double, "", "prompt micro-batch in tokens (llama.cpp -ub; 0: the whole prompt at once)")

/// The numbers of one estimate: one row of a sweep (ROOFLINE_ESTIMATE_FIELDS).
struct EstimateRow {
#define ROOFLINE_X(name, type, unit, meaning) type name{};
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
};

/// One line of an estimate's per-op breakdown.
struct BreakdownRow {
    std::string phase, op;
    double count = 0, flops = 0, bytes = 0, seconds = 0;
    std::string bound;
    /// For a linear layer, the format and unit of its kernel's multiply-adds ("int8 matrix", "fp16 vector": the
    /// roof it runs under); "" for other ops.
    std::string compute;
    double intensity() const { return bytes > 0 ? flops / bytes : 0; }
    /// FLOP/s the op achieves in the estimate (its FLOPs over its seconds, launches and fixed time included): its
    /// height on a roofline drawn at intensity(); 0 for an op without time.
    double flops_per_s() const { return seconds > 0 ? flops / seconds : 0; }
};

/// The estimate of one workload: its configuration, its numbers, speculative decoding and the breakdown.
struct Estimate : EstimateRow {
#define ROOFLINE_X(name, type, unit, meaning) type name{};
    ROOFLINE_ESTIMATE_CONFIG_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    double speculative_tokens_per_cycle = 0;  ///< (1 − α^(γ+1)) / (1 − α) when speculative decoding is on
    /// How the tensor_parallel devices share the model: "none" (one device), "layer" or "tensor", one of
    /// split_mode_names() (static storage: a pointer, so that an estimate copies no string for it)
    const char* split_mode = "none";
    std::vector<BreakdownRow> breakdown;
};

/// What the field tables say of one field.
struct FieldInfo {
    const char* name;
    const char* type;     ///< "double", "bool", "PhaseBound", "std::string", "int"
    const char* unit;
    const char* meaning;
    bool config;          ///< a configuration field (ROOFLINE_ESTIMATE_CONFIG_FIELDS)
};
/// The configuration fields, then the numbers, in table order.
const std::vector<FieldInfo>& estimate_fields();

/// What an estimate is asked for.
struct Workload {
    std::string quant = "Q4_K_M";
    double batch = 1;
    double prompt_tokens = 512;
    double gen_tokens = 128;
    std::string kv_dtype = "f16";
    bool flash_attention = false;
    bool flash_attention_from_engine = false;  ///< ignore flash_attention: the engine's default (PlanConfig)
    std::string engine = "llama.cpp";
    int tensor_parallel = 1;    ///< devices one copy of the model is spread over, as split_mode says
    /// "layer" (whole layers per device, run one after another: llama.cpp's -sm layer), "tensor" (tensor
    /// parallelism) or "": the engine's default (engine_db split_modes)
    std::string split_mode;
    double context_tokens = 0;  ///< tokens already in each sequence's cache (llama-bench -d)
    double ubatch_tokens = 0;   ///< prompt micro-batch (llama.cpp -ub); 0: the engine's
    // Speculative decoding: a draft model proposes `draft_tokens` (γ) tokens, accepted each with probability
    // `acceptance` (α); one target pass verifies γ + 1 tokens.
    const Model* draft = nullptr;
    std::string draft_quant;
    double draft_tokens = 0;
    double acceptance = 0;
};

/// Estimate a workload: an EstimatePlan for its configuration evaluated at its batch, prompt and generated tokens
/// (plan.hpp), with speculative decoding when the workload has a draft model (speculative.hpp).
Estimate estimate(const Model& model, const Device& device, const Workload& workload);

}  // namespace roofline
