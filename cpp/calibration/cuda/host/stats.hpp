// Statistics of repeated timings. No CUDA include.
#pragma once

#include <cstddef>
#include <vector>

namespace rcal {

struct Summary {
    double min = 0, median = 0, max = 0;
    std::size_t count = 0;
};

/// min / median (mean of the two middle values for an even count) / max. Throws std::invalid_argument on an
/// empty input or a value that is not finite.
Summary summarize(std::vector<double> values);

/// Rates from times: `work` (bytes, FLOPs) per second of each run. The fastest run gives the max rate, the
/// slowest the min; the median rate is work / median time. Throws std::invalid_argument unless work > 0 and every
/// time is finite and > 0.
Summary rates(double work, const std::vector<double>& seconds);

/// A repetition count that fits `budget_s` at `seconds_per_run` each, clamped to [lo, hi].
int repetitions_for(double seconds_per_run, double budget_s, int lo, int hi);

}  // namespace rcal
