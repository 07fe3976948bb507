// Holding the estimator to published measurements: each measured point predicted, its relative error and the pure
// roofline's beside it, and the mean absolute percentage errors per table.
#pragma once

#include "roofline/device.hpp"
#include "roofline/estimate.hpp"
#include "roofline/model.hpp"
#include "roofline/plan.hpp"

#include <string>
#include <vector>

namespace roofline {

/// One published measurement: a workload on a device, the tokens/s measured, where it comes from.
struct ValidationCase {
    std::string table, source, test;
    const Model* model = nullptr;
    const Device* device = nullptr;
    Workload workload;       ///< gen_tokens > 0: a decode measurement (tokens/s of one sequence); else prefill
    double measured_tokens_per_s = 0;
    double tolerance = 0;    ///< the relative error the table states it is held to
};

struct ValidationResult {
    ValidationCase point;
    bool decode = false;
    double predicted_tokens_per_s = 0;  ///< decode_tokens_per_s or prefill_tokens_per_s
    double roofline_tokens_per_s = 0;   ///< the pure roofline of the same phase (ceiling_decode / ceiling_prefill)
    double error = 0;                   ///< predicted / measured − 1
    double roofline_error = 0;          ///< roofline / measured − 1
    std::string bound;                  ///< what bounds the phase in the estimate
};

/// Every case estimated. Throws what estimate() throws, naming the case (table and row).
std::vector<ValidationResult> validate(const std::vector<ValidationCase>& cases);

/// Mean and largest absolute percentage errors of a group of results.
struct ErrorSummary {
    std::string group;                 ///< a table, or "all"
    double estimator_mape_percent = 0, roofline_mape_percent = 0;
    double estimator_max_percent = 0, roofline_max_percent = 0;
    std::size_t points = 0;
};
/// Per table (in order of first appearance), then "all".
std::vector<ErrorSummary> summarize(const std::vector<ValidationResult>& results);

/// One static batch as a benchmark that runs prefill then every decode step of `batch` sequences times it
/// (TensorRT-LLM's gptSessionBenchmark): output tokens/s per device = batch × gen / total_s / tensor_parallel, the
/// time to first token, and both at the pure roofline (the prefill's and the decode steps' datasheet times).
struct StaticBatchRates {
    double output_tokens_per_s_per_device = 0, roofline_output_tokens_per_s_per_device = 0;
    double ttft_s = 0, roofline_ttft_s = 0;
};
StaticBatchRates static_batch_rates(const EstimatePlan& plan, double batch, double prompt, double gen);

}  // namespace roofline
