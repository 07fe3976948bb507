#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rcal {

Summary summarize(std::vector<double> values) {
    if (values.empty()) throw std::invalid_argument("summarize: no values");
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i]))
            throw std::invalid_argument("summarize: value " + std::to_string(i) + " is not finite");
    std::sort(values.begin(), values.end());
    Summary s;
    s.count = values.size();
    s.min = values.front();
    s.max = values.back();
    const std::size_t mid = values.size() / 2;
    s.median = values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
    return s;
}

Summary rates(double work, const std::vector<double>& seconds) {
    if (!(work > 0) || !std::isfinite(work)) throw std::invalid_argument("rates: work must be finite and > 0");
    for (std::size_t i = 0; i < seconds.size(); ++i)
        if (!(seconds[i] > 0) || !std::isfinite(seconds[i]))
            throw std::invalid_argument("rates: time " + std::to_string(i) + " = " + std::to_string(seconds[i]) +
                                        " s; must be finite and > 0");
    const Summary t = summarize(seconds);
    Summary r;
    r.count = t.count;
    r.min = work / t.max;
    r.median = work / t.median;
    r.max = work / t.min;
    return r;
}

int repetitions_for(double seconds_per_run, double budget_s, int lo, int hi) {
    if (!(seconds_per_run > 0) || !std::isfinite(seconds_per_run)) return lo;
    const double n = std::floor(budget_s / seconds_per_run);
    if (!(n >= lo)) return lo;
    if (n >= hi) return hi;
    return static_cast<int>(n);
}

}  // namespace rcal
