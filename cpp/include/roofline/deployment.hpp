// Deployments: how many devices of which kind, in which quantization, serve a target of generated tokens per
// second within latency targets, and what that costs per hour and per million tokens.
#pragma once

#include "roofline/device.hpp"
#include "roofline/model.hpp"

#include <string>
#include <vector>

namespace roofline {

/// What to serve and on what.
struct DeploymentRequest {
    const Model* model = nullptr;
    std::vector<const Device*> devices;
    std::vector<double> price_per_hour;   ///< $ per device-hour, one per device
    std::vector<std::string> quants{"Q4_K_M"};
    std::vector<int> counts;              ///< devices per copy of the model; empty: those of 1, 2, 4, 8 dividing the heads
    double prompt_tokens = 512, gen_tokens = 128;
    double target_tokens_per_s = 0;       ///< generated tokens per second of the whole deployment (> 0)
    double tpot_s = 0, ttft_s = 0;        ///< latency targets; <= 0: none
    std::string kv_dtype = "f16";
    bool flash_attention = false;
    bool flash_attention_from_engine = false;  ///< ignore flash_attention: the engine's default (PlanConfig)
    std::string engine = "llama.cpp";
    /// How `count` devices share one copy (PlanConfig::split_mode): "" the engine's default, "layer" or "tensor"; a
    /// serving engine's deployment is tensor parallel ("" or "tensor")
    std::string split_mode;
    bool replicas = false;                ///< run several copies (data parallel) when one cannot reach the target
};

/// One candidate: `count` devices running one copy of the model split over all of them (× replicas).
struct Deployment {
    std::string device, quant;
    int count = 1;
    std::string split_mode;               ///< the split it ran: "none" (one device), "layer" or "tensor" ("" unknown)
    bool feasible = false;
    double batch = 0;                     ///< sequences decoded together per copy, the smallest reaching the target
    int replicas = 0;
    double tokens_per_s = 0;              ///< generated tokens per second served (all copies)
    double capacity_tokens_per_s = 0;     ///< the most one copy serves within the targets (0: none)
    double tpot_s = 0, ttft_s = 0;        ///< NaN when infeasible
    double cost_per_hour = 0;             ///< price × count × replicas
    double cost_per_million_tokens = 0;   ///< cost_per_hour / (3600 × target) × 1e6 (NaN when infeasible)
    double cost_per_million_tokens_at_capacity = 0;  ///< the same at full capacity (NaN when infeasible)
    std::string reason;
};

/// Every (device, count, quant) candidate, cheapest first. With a serving engine (vllm, trt-llm, sglang: continuous
/// batching) a candidate is the serving model's: the fewest closed-loop clients whose output tokens/s reach the
/// target within the latency targets (min_concurrency_for_throughput; `batch` is that concurrency, TTFT includes the
/// prefill chunks). Otherwise throughput is the aggregate decode rate
/// (decode_tokens_per_s_total) of a batch of sequences of prompt + gen tokens at the smallest batch that reaches the
/// target while fitting in memory and meeting the latency targets (min_batch_for_throughput); prefill time is not
/// charged against the rate. A serving engine's candidates are tensor parallel; a `split_mode` other than "" or "tensor"
/// with one is an InvalidArgument. With `replicas`, a deployment whose capacity is below the target runs
/// ceil(target / capacity) copies, each serving an equal share. Devices are billed by the hour whether busy or not.
/// Rows: feasible first by cost per million tokens (ties: more capacity first, then input order), then the
/// infeasible ones with the reason. Throws InvalidArgument for a bad request (no model, prices not one per device, a
/// price < 0, a target <= 0, a count outside [1, 1024]).
std::vector<Deployment> cheapest_deployments(const DeploymentRequest& request);

}  // namespace roofline
