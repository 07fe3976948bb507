// Estimate plans: a model × device × configuration built once and evaluated at any (batch, prompt tokens, generated
// tokens) in O(1) in the number of layers and of tokens. How: docs/architecture.md ("The path of one estimate").
#pragma once

#include "roofline/device.hpp"
#include "roofline/engine.hpp"
#include "roofline/estimate.hpp"
#include "roofline/model.hpp"
#include "roofline/roofline.hpp"
#include "roofline/weights.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace roofline {

/// The configuration a plan is built for: everything of a Workload but the point (batch, prompt, generated tokens)
/// and speculative decoding.
struct PlanConfig {
    std::string quant = "Q4_K_M";
    std::string kv_dtype = "f16";
    bool flash_attention = false;
    std::string engine = "llama.cpp";
    int tensor_parallel = 1;   ///< devices one copy of the model is spread over, as split_mode says
    double ubatch_tokens = 0;  ///< prompt micro-batch (llama.cpp's -ub); 0: the engine's (EngineBackend::prefill_ubatch_tokens)
    /// How the tensor_parallel devices share the model: "layer" (whole layers per device, one after another;
    /// llama.cpp's -sm layer) or "tensor" (tensor parallelism); "": the engine backend's default
    /// (EngineBackend::split_modes). A plan's config() holds the resolved mode, "none" on one device.
    std::string split_mode;
    /// The engine itself, when it is not (or not as it is) in engine_db: a fit's trial parameters. Overrides `engine`.
    std::shared_ptr<const Engine> engine_object;
    /// flash_attention is the engine backend's default (EngineBackend::flash_attention_default), not the caller's:
    /// a plan's structure resolves it for its backend, and its config() then holds the resolved value.
    bool flash_attention_from_engine = false;

    PlanConfig() = default;
    PlanConfig(std::string quant_, std::string kv_dtype_, bool flash_attention_, std::string engine_,
               int tensor_parallel_ = 1, double ubatch_tokens_ = 0, std::shared_ptr<const Engine> engine_object_ = nullptr)
        : quant(std::move(quant_)), kv_dtype(std::move(kv_dtype_)), flash_attention(flash_attention_),
          engine(std::move(engine_)), tensor_parallel(tensor_parallel_), ubatch_tokens(ubatch_tokens_),
          engine_object(std::move(engine_object_)) {}
    /// The plan configuration of a workload (its quant, KV dtype, FlashAttention, engine, TP and micro-batch).
    static PlanConfig of(const Workload& w, std::shared_ptr<const Engine> engine_object_ = nullptr) {
        PlanConfig c(w.quant, w.kv_dtype, w.flash_attention, w.engine, w.tensor_parallel, w.ubatch_tokens,
                     std::move(engine_object_));
        c.flash_attention_from_engine = w.flash_attention_from_engine;
        c.split_mode = w.split_mode;
        return c;
    }
};

/// Memory one rank needs at a point (bytes).
struct MemoryUse {
    double weights = 0, kv_cache = 0, activations = 0, overhead = 0, total = 0, capacity = 0;
    bool fits = false;
};

/// Totals of a phase: the timing rule summed over its ops at both ceilings, the derated components summed (for the
/// phase's bound), FLOPs and DRAM bytes.
struct PhaseSums {
    double seconds = 0, ideal_seconds = 0;
    CeilingTimes derated;  ///< Σ count × components, matrix compute ÷ each op's utilization
    double flops = 0, bytes = 0;
};

class EstimatePlan {
public:
    /// Validates the configuration for the device — engine, KV format, quantization, interconnect, heads — in that
    /// order, and builds every op of the forward pass once. `formats` (optional): the model's
    /// estimate_tensor_formats for the quant, when the caller shares them between plans.
    EstimatePlan(const Model& model, const Device& device, const PlanConfig& config,
                 const std::vector<TensorFormat>* formats = nullptr);

    /// Everything estimate() returns but names and speculative decoding; `breakdown` (optional) gets the per-op rows.
    /// Checks the point (batch >= 1, whole token counts, prompt + gen >= 1).
    EstimateRow evaluate(double batch, double prompt, double gen, std::vector<BreakdownRow>* breakdown = nullptr) const;
    /// The same after `context` tokens already in each sequence's cache (llama-bench's -d): the prompt attends them,
    /// decode starts after them, they count in the KV cache, not in TTFT.
    EstimateRow evaluate(double batch, double prompt, double gen, double context, std::vector<BreakdownRow>* breakdown) const;
    /// The full estimate of a point, with its configuration and the breakdown.
    Estimate estimate(double batch, double prompt, double gen, bool breakdown = true, double context = 0) const;

    /// A forward pass over `batch` × `tokens` new tokens after `past` (speculative decoding's draft and verify).
    PhaseSums phase(double batch, double tokens, double past) const;
    MemoryUse memory(double batch, double prompt, double gen, double context = 0) const;
    double max_batch(double prompt, double gen, double context = 0) const;  ///< largest batch that fits (memory is affine in it)
    double max_context(double batch) const;                       ///< longest context that fits (bisection)
    double compute_bound_batch(double prompt, double gen, double context = 0) const;  ///< smallest compute-bound decode batch (0: none)
    double ubatch_tokens() const;  ///< the prompt micro-batch in use (0: the whole prompt at once)

    /// Throws InvalidArgument naming the bad value unless batch >= 1 and the token counts are whole, prompt + gen >= 1
    /// and the context they make is at most 2^30.
    static void check_point(double batch, double prompt, double gen, double context = 0);

    const std::string& model_id() const;
    const std::string& device_id() const;
    const std::string& engine_id() const;
    const std::string& backend() const;
    const PlanConfig& config() const;
    double parameters() const;
    double weight_bytes() const;
    /// Weight bytes one decode step of `batch` sequences reads on one rank: every matrix but the embedding table
    /// (the experts the batch activates; a tied head counted as the head). The count behind ceiling_decode_weights.
    double weights_read_per_step(double batch = 1) const;
    double bits_per_weight() const;
    std::size_t op_slots() const;

    /// The plan's parts (src/plan_impl.hpp): for the sweep, which shares them between plans and points.
    struct Impl;
    explicit EstimatePlan(std::shared_ptr<const Impl> impl);
    const Impl& impl() const { return *impl_; }
    const std::shared_ptr<const Impl>& impl_ptr() const { return impl_; }

private:
    std::shared_ptr<const Impl> impl_;
};

}  // namespace roofline
