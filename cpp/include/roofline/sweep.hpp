// Sweeps: estimates over the Cartesian product of models × quantizations × devices × engines × KV formats ×
// flash attention × tensor parallel × prompt × generated tokens × batch (or an explicit list of points), written
// into columns on a pool of threads; and the inverse questions (the largest batch meeting a latency target, the
// smallest batch meeting a throughput target) answered by bisection.
#pragma once

#include "roofline/estimate.hpp"
#include "roofline/plan.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace roofline {

namespace detail {
/// Storage of a large sweep column (>= kHugeColumnBytes): aligned to 2 MiB and advised to the kernel as huge pages
/// (Linux MADV_HUGEPAGE), so that first touching a million-row column faults ~512x fewer pages; smaller ones come
/// from operator new.
inline constexpr std::size_t kHugeColumnBytes = std::size_t{4} << 20;
void* allocate_column(std::size_t bytes);
void deallocate_column(void* p, std::size_t bytes) noexcept;
}  // namespace detail

/// An allocator that leaves new elements uninitialized (vector::resize without zeroing): sweep columns are
/// written in full by the workers. Large columns are backed by huge pages (detail::allocate_column).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    using value_type = T;
    T* allocate(std::size_t n) { return static_cast<T*>(detail::allocate_column(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { detail::deallocate_column(p, n * sizeof(T)); }
    template <class U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <class U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
template <class T>
using SweepColumn = std::vector<T, DefaultInitAllocator<T>>;

/// The axes of a sweep. Every axis must list at least one value.
struct SweepAxes {
    std::vector<const Model*> models;
    std::vector<std::string> quants;
    std::vector<const Device*> devices;
    std::vector<std::string> engines{"llama.cpp"};
    std::vector<std::string> kv_dtypes{"f16"};
    std::vector<int> flash_attention{0};  ///< 0 or 1; -1: the engine's default (EngineBackend::flash_attention_default)
    std::vector<int> tensor_parallel{1};
    std::vector<double> ubatch_tokens{0};   ///< prompt micro-batches (0: the engine's)
    std::vector<double> batch{1}, prompt_tokens{512}, gen_tokens{128};
    std::vector<double> context_tokens{0};  ///< tokens already cached before the prompt (llama-bench -d)
    /// How a configuration of tensor_parallel > 1 spreads the model over its devices (PlanConfig::split_mode): ""
    /// the engine's default, "layer" or "tensor". An axis: every configuration is estimated with each.
    std::vector<std::string> split_modes{""};
};

/// An explicit list of points instead of the product: per point an index into each of the axes' configuration lists
/// (models, quants, devices, engines, kv_dtypes, flash_attention, tensor_parallel, ubatch_tokens, split_modes) and its
/// own batch, prompt, generated and context tokens (the axes' batch / prompt / gen / context lists are not used). An
/// empty ubatch, split or context column means index 0 / index 0 / no context for every point.
struct SweepPoints {
    std::vector<std::uint32_t> model, quant, device, engine, kv_dtype, flash_attention, tensor_parallel, ubatch, split;
    std::vector<double> batch, prompt_tokens, gen_tokens, context_tokens;
};

/// Plans kept from one sweep to the next: a sweep that meets a configuration planned before — the same model and
/// device objects, quantization, KV format, flash attention, engine (the same engine object: a reloaded engine_db
/// plans anew), tensor parallel and micro-batch — takes that plan instead of building it again; every value is the
/// same either way (a plan is a pure function of those). Plans are keyed by the identity of the model and device
/// objects, so they are kept only for objects pinned with an owner that keeps them alive and unchanged (the Python
/// bindings pin their core objects, which Python cannot change). At most `max_plans` plans: a new one evicts the
/// least recently used. At most 4 × `max_plans` pins: a pin() beyond drops every plan and pin first. Thread-safe.
class PlanCache {
public:
    explicit PlanCache(std::size_t max_plans = 1024);
    ~PlanCache();
    PlanCache(const PlanCache&) = delete;
    PlanCache& operator=(const PlanCache&) = delete;
    using Owner = std::shared_ptr<const void>;
    /// Pin these objects (models or devices), each with its owner.
    void pin(const std::vector<std::pair<const void*, Owner>>& objects);
    /// Unpin the objects whose owner `unused` says nothing else needs, with the plans kept for them; how many.
    std::size_t release(const std::function<bool(const Owner&)>& unused);
    std::size_t plans() const;  ///< plans kept
    std::size_t pins() const;   ///< objects pinned
    std::size_t hits() const;   ///< plans found since the cache was made
    void clear();               ///< drop every plan and pin

    /// A configuration as the cache knows it.
    struct Key {
        const Model* model = nullptr;
        const Device* device = nullptr;
        const Engine* engine = nullptr;  ///< the engine object the plan is built with
        std::string quant, kv_dtype;
        int flash_attention = 0;  ///< the axis value: 0, 1 or -1 (the engine's default)
        int tensor_parallel = 1;
        double ubatch_tokens = 0;
        std::string split_mode;  ///< as asked ("" the engine's)
        bool operator<(const Key& o) const;
    };
    /// The plan kept for `key`, or null (also when its model or device is not pinned).
    std::shared_ptr<const EstimatePlan::Impl> find(const Key& key) const;
    /// Keep `plan` for `key` if its model and device are pinned (evicting the least recently used plan when full).
    void insert(const Key& key, std::shared_ptr<const EstimatePlan::Impl> plan);

private:
    struct State;
    std::unique_ptr<State> state_;
};

struct SweepOptions {
    int threads = 0;            ///< worker threads; 0 = one per core (std::thread::hardware_concurrency)
    bool skip_invalid = false;  ///< leave out configurations no plan can be built for (listed in SweepTable::skipped)
                                ///< instead of throwing the first one's error
    PlanCache* plans = nullptr; ///< plans kept between sweeps (not owned; null: every plan is built)
};

/// The results by column, one entry per row. Product sweeps order rows as nested loops: model, quant, device, engine,
/// kv_dtype, flash_attention, tensor_parallel, ubatch_tokens, context_tokens, prompt_tokens, gen_tokens, batch (the
/// last fastest); point sweeps keep the points' order. The values do not depend on the number of threads.
struct SweepTable {
    std::size_t rows = 0;
    /// Each row's configuration: indices into the axes' lists.
    SweepColumn<std::int32_t> model, quant, device, engine, kv_dtype, tensor_parallel;
    SweepColumn<std::uint8_t> flash_attention;
    SweepColumn<double> ubatch_tokens;               ///< the micro-batch in use (the engine's where the axis says 0)
    SweepColumn<std::uint8_t> split_mode;            ///< the split in use, a code of split_mode_names()
    SweepColumn<std::int64_t> point;                 ///< point sweeps: the point's position in the input
    std::vector<SweepColumn<double>> columns;        ///< named by sweep_columns()
    std::vector<SweepColumn<std::uint8_t>> codes;    ///< named by sweep_code_columns(): PhaseBound codes, 0/1 flags
    std::vector<std::string> skipped;                ///< configurations left out, each with the reason
    std::size_t plans = 0;                           ///< plans built (configurations estimated)
};

/// Names of SweepTable::columns in order: the fields of ROOFLINE_ESTIMATE_FIELDS of type double.
const std::vector<std::string>& sweep_columns();
/// Names of SweepTable::codes in order: the other fields of ROOFLINE_ESTIMATE_FIELDS (bounds, flags).
const std::vector<std::string>& sweep_code_columns();
/// An EstimateRow's numbers in the order of sweep_columns() (codes aside).
std::vector<double> sweep_row_values(const EstimateRow& row);

/// Estimate every combination of the axes. Throws InvalidArgument / NotFound naming the axis or the configuration
/// (unless skip_invalid) before any point is estimated.
SweepTable sweep(const SweepAxes& axes, const SweepOptions& options = {});
/// Estimate a list of points whose configurations index the axes.
SweepTable sweep(const SweepAxes& axes, const SweepPoints& points, const SweepOptions& options = {});

/// The largest batch whose estimate fits in memory and meets the targets: time per output token
/// (decode_s / gen_tokens) <= tpot_s and time to first token <= ttft_s (a target <= 0 is no target). Found by
/// bisection between batch 1 and the largest batch that fits (memory grows with the batch, and so does the time per
/// token, but for steps), and checked: the answer meets the targets and answer + 1 does not. Where the model is not
/// monotone in the batch (an engine's switch from mat-vec to tiled kernels at gemv_max_rows, row-tile and
/// dequantization-tile steps), the answer is such a boundary and a larger batch past a step may meet the target too.
struct BatchAnswer {
    bool feasible = false;
    double batch = 0;     ///< the answer; 0 when infeasible
    std::string limit;    ///< what stops a larger batch, or what batch 1 already fails: "memory", "tpot" or "ttft"
    std::string reason;   ///< the answer in words, with the numbers
    EstimateRow at;       ///< the estimate at the answer (at batch 1 when infeasible)
    EstimateRow beyond;   ///< the estimate at the answer + 1 (at batch 2 when infeasible)
    int evaluations = 0;  ///< estimates the search took
};
BatchAnswer max_batch_for_latency(const EstimatePlan& plan, double prompt_tokens, double gen_tokens, double tpot_s,
                                  double ttft_s = 0);

/// The smallest batch whose aggregate decode throughput (decode_tokens_per_s_total) reaches `tokens_per_s` while
/// meeting the latency targets of max_batch_for_latency: bisection between batch 1 and that answer. The answer
/// reaches the target and answer − 1 does not (the same caveat on steps applies).
struct ThroughputAnswer {
    bool feasible = false;
    double batch = 0;          ///< the answer; 0 when infeasible
    std::string reason;
    EstimateRow at;            ///< at the answer (infeasible: at the largest batch meeting the latency targets)
    BatchAnswer capacity;      ///< the largest batch meeting the latency targets and its estimate
    int evaluations = 0;
};
ThroughputAnswer min_batch_for_throughput(const EstimatePlan& plan, double prompt_tokens, double gen_tokens,
                                          double tokens_per_s, double tpot_s = 0, double ttft_s = 0);

}  // namespace roofline
