// Serving: a deployment (a serving engine's continuous batching, tensor / pipeline / expert parallelism, attention
// data parallelism, the KV cache's share of memory) under a load (offline max load, N closed-loop clients, Poisson
// arrivals) -> output tokens/s, TTFT, ITL, the running batch and the KV capacity. The model: docs/serving.md.
#pragma once

#include "roofline/device.hpp"
#include "roofline/engine.hpp"
#include "roofline/estimate.hpp"
#include "roofline/model.hpp"
#include "roofline/plan.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// One all-reduce of `message_bytes` per rank over `devices` ranks of `device`, as `engine` runs it on that device's
/// backend: its kernel's launch, then the way its all-reduce takes at that size (the engine's custom kernel within
/// its workspace, else the collective library's protocol of least time; plan_impl.hpp all_reduce_ways), over the
/// fastest links joining that many devices. `hidden`: the model's hidden size, for engines whose custom kernels
/// take only some (0: any). ideal_seconds: the bytes over the links' datasheet bandwidth alone.
struct AllReduceTiming {
    double seconds = 0, ideal_seconds = 0;
    std::string way;  ///< "one-shot", "two-shot", "ring", or the library's protocol ("LL", "LL128", "Simple")
};
AllReduceTiming all_reduce_time(const Engine& engine, const Device& device, int devices, double message_bytes,
                                double hidden = 0);

/// How one copy of the model is spread over devices. devices() = tensor × pipeline. expert divides tensor: the
/// experts of every MoE layer are split over `expert` ranks of the tensor-parallel group (TensorRT-LLM's moe_ep);
/// attention_data: the ranks of the group run attention on sequences of their own (attention weights and KV cache
/// whole on each), the MoE layers expert parallel across them (TensorRT-LLM enable_attention_dp, SGLang
/// --enable-dp-attention).
struct Parallelism {
    int tensor = 1, pipeline = 1, expert = 1;
    bool attention_data = false;
    int devices() const { return tensor * pipeline; }
    /// "TP4", "TP2,PP2", "DEP8", "TP8,EP8" (TensorRT-LLM's notation), as parse_parallelism reads it.
    std::string notation() const;
};

/// TensorRT-LLM's notation: comma-separated TPn, PPn, EPn and DEPn (attention data parallel with expert parallel over
/// n devices: TP n, EP n) terms, case-insensitive. InvalidArgument naming the term and what is allowed.
Parallelism parse_parallelism(std::string_view text);

/// What stays fixed across loads: the model on its devices under one engine.
struct ServingConfig {
    std::string quant = "fp8";
    std::string engine = "vllm";
    std::string kv_dtype;            ///< "" : the engine's choice for the weights (ServingPolicy::kv_dtype_for)
    Parallelism parallel;
    double max_batch = 0;            ///< 0: the engine's (or its benchmark's tuning rule)
    double max_num_tokens = 0;       ///< 0: the engine's
    double gpu_memory_fraction = 0;  ///< 0: the engine's kv_memory_fraction
    /// MTP speculative decoding: the model's multi-token-prediction module (mtp_module) drafts this many tokens
    /// per decode iteration (0: none), each accepted with probability `acceptance`; the target verifies them and
    /// the bonus token in one pass
    double mtp_tokens = 0;
    double acceptance = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not given (needed with mtp_tokens)
    /// The engine itself when it is not (or not as it is) in engine_db: a fit's trial parameters. Overrides `engine`.
    std::shared_ptr<const Engine> engine_object;
};

/// The load. concurrency > 0: that many closed-loop clients (each sends its next request when the last completes);
/// request_rate > 0: Poisson arrivals (requests/s); neither: offline max load (every request queued at once, as
/// `trtllm-bench throughput` and vLLM's offline benchmark run). num_requests > 0 makes an offline run finite (ramp-up
/// and drain counted); 0 is its steady state.
struct ServingLoad {
    double prompt_tokens = 1024, gen_tokens = 1024;
    double concurrency = 0, request_rate = 0, num_requests = 0;
};

/// The numbers of one serving estimate: X(name, C++ type, unit, meaning). Per-rank memory.
#define ROOFLINE_SERVING_FIELDS(X)                                                                                      \
    X(devices, double, "", "devices of the deployment (tensor x pipeline parallel)")                                    \
    X(output_tokens_per_s, double, "1/s", "generated tokens per second of the whole deployment")                        \
    X(output_tokens_per_s_lo, double, "1/s", "low end of output_tokens_per_s's prediction interval")                     \
    X(output_tokens_per_s_hi, double, "1/s", "high end of output_tokens_per_s's prediction interval")                    \
    X(output_tokens_per_s_per_device, double, "1/s", "output_tokens_per_s / devices")                                   \
    X(roofline_output_tokens_per_s, double, "1/s", "the steady state at the same running batch with every iteration at the datasheet roofline (no overhead, no host time)") \
    X(requests_per_s, double, "1/s", "requests completed per second")                                                   \
    X(ttft_s, double, "s", "mean time to first token, queueing included (inf when the queue grows without bound)")      \
    X(ttft_s_lo, double, "s", "low end of ttft_s's prediction interval")                                                \
    X(ttft_s_hi, double, "s", "high end of ttft_s's prediction interval")                                               \
    X(itl_s, double, "s", "mean inter-token latency: the mean iteration seen by a decoding sequence over the tokens it gains in one") \
    X(itl_s_lo, double, "s", "low end of itl_s's prediction interval")                                                  \
    X(itl_s_hi, double, "s", "high end of itl_s's prediction interval")                                                 \
    X(tpot_s, double, "s", "mean time per output token after the first: (e2e_s - ttft_s) / (gen_tokens - 1)")          \
    X(tokens_per_decode_iteration, double, "", "tokens a decoding sequence gains per iteration: 1, or with MTP speculative decoding (1 - a^(k+1)) / (1 - a)") \
    X(e2e_s, double, "s", "mean request latency, first request byte to last token")                                    \
    X(running_batch, double, "", "sequences decoding together in the steady state, per scheduler (all micro-batches)")  \
    X(max_running_batch, double, "", "the most the scheduler can run: max_batch, the KV cache and the token budget")    \
    X(max_batch, double, "", "the engine's most sequences per micro-batch in use")                                     \
    X(max_num_tokens, double, "", "the token budget of one iteration in use")                                          \
    X(prefill_chunk_tokens, double, "", "prompt tokens a mixed iteration carries")                                     \
    X(mixed_fraction, double, "", "share of iterations that carry a prefill chunk")                                    \
    X(decode_iteration_s, double, "s", "an iteration of decodes alone at the running batch")                           \
    X(mixed_iteration_s, double, "s", "an iteration of the running decodes and a prefill chunk")                       \
    X(kv_capacity_tokens, double, "", "tokens the KV cache holds, per scheduler")                                      \
    X(kv_memory_fraction, double, "", "share of memory the KV cache was given")                                        \
    X(decode_bound, PhaseBound, "", "what bounds a decode iteration")                                                  \
    X(prefill_bound, PhaseBound, "", "what bounds a mixed iteration")                                                  \
    X(memory_weights, double, "B", "weights one device holds")                                                         \
    X(memory_kv_cache, double, "B", "the KV cache one device holds")                                                   \
    X(memory_activations, double, "B", "activations of one full-budget iteration on one device")                       \
    X(memory_reserved, double, "B", "CUDA graphs, communication buffers and runtime besides them")                     \
    X(memory_capacity, double, "B", "the device's DRAM")                                                               \
    X(run_s, double, "s", "duration of a finite offline run (0: steady state)")                                        \
    X(saturated, bool, "", "the load exceeds what the deployment serves: the queue grows")

struct ServingRow {
#define ROOFLINE_X(name, type, unit, meaning) type name{};
    ROOFLINE_SERVING_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
};

/// A serving estimate: its configuration, load, numbers and the breakdown of its two iterations.
struct ServingEstimate : ServingRow {
    std::string model, quant, device, engine, kv_dtype, parallel;
    std::string mode;         ///< "offline", "concurrency", "rate"
    std::string batch_limit;  ///< what limits max_running_batch: "max_batch", "kv_cache", "token_budget"
    ServingLoad load;
    /// phases "decode iteration" and "mixed iteration", with MTP also "MTP draft step" (one of the k steps)
    std::vector<BreakdownRow> breakdown;
};

/// What the field table says of each serving field (FieldInfo of estimate.hpp; config false).
const std::vector<FieldInfo>& serving_fields();

/// A deployment built once and evaluated under any load: the estimate plan of one rank group and the memory
/// split. Validates the engine (a serving engine), the parallelism against the model and the device, the formats.
class ServingPlan {
public:
    ServingPlan(const Model& model, const Device& device, const ServingConfig& config);
    /// Throws InvalidArgument naming the bad load value (token counts whole and >= 1, concurrency and rate not both).
    /// `limit` (optional) gets what bounds max_running_batch: "kv_cache", "max_batch" or "token_budget".
    ServingRow evaluate(const ServingLoad& load, std::vector<BreakdownRow>* breakdown = nullptr, std::string* limit = nullptr) const;
    ServingEstimate estimate(const ServingLoad& load, bool breakdown = true) const;
    const ServingConfig& config() const;
    const EstimatePlan& plan() const;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
};

/// ServingPlan(model, device, config).estimate(load).
ServingEstimate serve(const Model& model, const Device& device, const ServingConfig& config, const ServingLoad& load);

}  // namespace roofline

namespace roofline {

/// The most closed-loop clients a deployment serves within the latency targets (tpot_s, ttft_s; <= 0: none) at
/// prompt + gen tokens per request: bisection over the concurrency up to the scheduler's limit (beyond it requests
/// queue and TTFT grows without a bound on throughput). `batch` is the concurrency; `limit` "tpot", "ttft" or the
/// scheduler's ("kv_cache", "max_batch", "token_budget"). Never throws for an unmet target: feasible is false.
struct ServingLatencyAnswer {
    bool feasible = false;
    double concurrency = 0;
    std::string limit, reason;
    ServingRow at, beyond;  ///< at the answer and one client more (at 1 and 2 when infeasible)
    int evaluations = 0;
};
ServingLatencyAnswer max_concurrency_for_latency(const ServingPlan& plan, double prompt_tokens, double gen_tokens,
                                                 double tpot_s, double ttft_s = 0);

/// The fewest clients whose output tokens/s reach `tokens_per_s` within the latency targets (bisection up to
/// max_concurrency_for_latency's answer); infeasible with the capacity when even that falls short.
struct ServingThroughputAnswer {
    bool feasible = false;
    double concurrency = 0;
    std::string reason;
    ServingRow at;
    ServingLatencyAnswer capacity;
};
ServingThroughputAnswer min_concurrency_for_throughput(const ServingPlan& plan, double prompt_tokens, double gen_tokens,
                                                       double tokens_per_s, double tpot_s = 0, double ttft_s = 0);

/// Whether `engine_name` names a serving engine (continuous batching in engine_db) on `device`.
bool is_serving_engine(std::string_view engine_name, const Device& device);
/// is_serving_engine, holding a serving engine to its one split: its deployments are tensor parallel, so a
/// `split_mode` other than "" (the engine's default) or "tensor" is an InvalidArgument that names `where`.
bool is_serving_engine(std::string_view engine_name, const Device& device, std::string_view split_mode,
                       std::string_view where);

}  // namespace roofline
