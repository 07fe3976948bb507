#include "roofline/roofline.hpp"

#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace roofline {

std::string bound_name(Bound b) {
    switch (b) {
        case Bound::none: return "none";
        case Bound::compute: return "compute";
        case Bound::dram: return "memory:dram";
        case Bound::l2: return "memory:l2";
        case Bound::sram: return "memory:sram";
        case Bound::overhead: return "overhead";
    }
    return "none";
}

Bound CeilingTimes::bound(double matrix_utilization) const {
    double slowest = compute_s(matrix_utilization);
    Bound b = slowest > 0 ? Bound::compute : Bound::none;
    for (std::size_t i = 0; i < kNumLevels; ++i)
        if (memory_s[i] > slowest) {
            slowest = memory_s[i];
            b = static_cast<Bound>(static_cast<int>(Bound::dram) + static_cast<int>(i));
        }
    if (overhead_s > slowest) b = Bound::overhead;
    return b;
}

namespace {
// Σ_{x=0}^{n-1} max_k (a_k + b_k·x), exactly: split [0, n-1] where the upper envelope changes line. The line
// highest at both ends is highest throughout (a difference of affine functions is affine): one piece.
template <std::size_t K>
double sum_max_affine(const std::array<double, K>& a, const std::array<double, K>& b, double n) {
    if (n <= 0) return 0;
    const double last = n - 1;
    std::size_t top = 0;
    for (std::size_t i = 1; i < K; ++i)
        if (a[i] > a[top]) top = i;
    bool dominates = true;
    for (std::size_t i = 0; i < K && dominates; ++i) dominates = !(a[i] + b[i] * last > a[top] + b[top] * last);
    if (dominates) return n * a[top] + b[top] * last * n / 2;
    std::array<double, 2 + K * (K - 1)> cuts{};  // 2 ends + 2 per pair of lines
    std::size_t nc = 0;
    cuts[nc++] = 0;
    cuts[nc++] = last;
    for (std::size_t i = 0; i < K; ++i)
        for (std::size_t j = i + 1; j < K; ++j) {
            const double db = b[i] - b[j];
            if (db == 0) continue;
            const double x = (a[j] - a[i]) / db;
            if (x > 0 && x < last) {
                cuts[nc++] = std::floor(x);
                cuts[nc++] = std::floor(x) + 1;
            }
        }
    std::sort(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(nc));
    nc = static_cast<std::size_t>(std::unique(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(nc)) - cuts.begin());
    double total = 0, lo = 0;
    for (std::size_t c = 0; c < nc; ++c) {
        const double hi = cuts[c];
        if (hi < lo) continue;
        const double mid = (lo + hi) / 2;
        std::size_t best = 0;
        for (std::size_t i = 1; i < K; ++i)
            if (a[i] + b[i] * mid > a[best] + b[best] * mid) best = i;
        const double count = hi - lo + 1;
        total += count * a[best] + b[best] * (lo + hi) * count / 2;
        lo = hi + 1;
    }
    return total;
}
}  // namespace

double sum_of_totals(const CeilingTimes& first, const CeilingTimes& step, double n) {
    if (n <= 0) return 0;
    const double arith = n * (n - 1) / 2;  // Σ x for x = 0..n-1
    return sum_max_affine(first.racing(), step.racing(), n) + (n * first.serial_s + step.serial_s * arith) +
           (n * first.overhead_s + step.overhead_s * arith);
}

// Derated ceilings, for evaluate() and attainable_flops() alike. A measured peak is already achievable: the compute
// efficiency is not applied to it again. A measured DRAM bandwidth is not derated either, unless the DRAM
// efficiency was itself measured against it (Efficiency::dram_applies_to_measured).
// A peak with its own microbenchmarked fraction (achievable_fraction) takes it instead of the device's.
double derating_fraction(const Device& device, const ComputePeak& peak) {
    if (peak.measured) return 1.0;
    return peak.achievable_fraction > 0 ? peak.achievable_fraction : device.efficiency.compute_fraction;
}
double derating_fraction(const Device& device, Level level) {
    const bool derate = level == Level::dram && (!device.level(level).measured || device.efficiency.dram_applies_to_measured);
    return derate ? device.efficiency.dram_bandwidth_fraction : 1.0;
}

namespace {
// The compute and memory components of `op` under derated ceilings (into `d`, if given) and ideal ones (into `i`,
// if given): one peak lookup per FLOP term for both. `attainable` (if given) gets the roofline at the op's
// intensities under the first of the two asked for, `evaluated` (if given) the levels that are ceilings.
void components(const OpCost& op, const Device& device, CeilingTimes* d, CeilingTimes* i, double* attainable,
                std::array<bool, kNumLevels>* evaluated) {
    for (const auto& term : op.flop_terms) {
        if (term.flops <= 0) continue;
        // issue slots at the device's issue rate, derated as its unmeasured compute peaks are; else the peak
        const bool on_issue = term.issue && device.issue_lanes_per_s() > 0;
        const ComputePeak* peak = on_issue ? nullptr : &device.execution_peak(term.format, term.unit);
        const double rate = on_issue ? device.issue_lanes_per_s() : peak->flops_per_s;
        if (d) {
            const double fraction = on_issue ? device.efficiency.compute_fraction : derating_fraction(device, *peak);
            const double seconds = term.flops / (rate * (fraction * term.utilization));
            if (!term.overlapped) d->serial_s += seconds;
            else (term.unit == Unit::matrix ? d->matrix_s : d->vector_s) += seconds;
        }
        if (i) (term.unit == Unit::matrix ? i->matrix_s : i->vector_s) += term.flops / rate;
    }
    const CeilingTimes& first = d ? *d : *i;
    const double flops = attainable ? op.flops() : 0;
    const double compute = first.compute_s();
    double roof = compute > 0 ? flops / compute : std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < kNumLevels; ++k) {
        const auto level = static_cast<Level>(k);
        const double bytes = op.bytes(level);
        const MemoryLevel& lv = device.level(level);
        if (bytes <= 0 || !lv.present || !(lv.bandwidth_Bps > 0)) continue;  // Device::has_bandwidth
        if (evaluated) (*evaluated)[k] = true;
        const double derated_bw = lv.bandwidth_Bps * derating_fraction(device, level);
        if (d) d->memory_s[k] = bytes / derated_bw;
        if (i) i->memory_s[k] = bytes / lv.bandwidth_Bps;
        if (attainable) roof = std::min(roof, flops / bytes * (d ? derated_bw : lv.bandwidth_Bps));  // intensity × bandwidth
    }
    if (attainable) *attainable = flops > 0 && std::isfinite(roof) ? roof : 0.0;
    if (d) d->overhead_s = op.launches * device.efficiency.launch_overhead_s;
}
}  // namespace

Timing evaluate(const OpCost& op, const Device& device, Ceilings ceilings) {
    const bool derated = ceilings == Ceilings::derated;
    Timing t;
    t.ceilings = ceilings;
    t.flops = op.flops();
    CeilingTimes& c = t.times;
    components(op, device, derated ? &c : nullptr, derated ? nullptr : &c, &t.attainable_flops, &t.level_evaluated);
    t.seconds = c.total();
    t.bound = c.bound();
    t.achieved_flops = t.seconds > 0 ? t.flops / t.seconds : 0.0;
    return t;
}

void evaluate_both(const OpCost& op, const Device& device, CeilingTimes& derated, CeilingTimes& ideal) {
    derated = CeilingTimes{};
    ideal = CeilingTimes{};
    components(op, device, &derated, &ideal, nullptr, nullptr);
}

double ridge_multiple(const OpCost& op, const Device& device, DType format, Level level, Unit unit) {
    return op.arithmetic_intensity(level) / device.ridge_point(format, level, unit);
}

double attainable_flops(const Device& device, double intensity, DType format, Level level, Unit unit,
                        Ceilings ceilings) {
    if (std::isnan(intensity) || intensity < 0)
        throw InvalidArgument("attainable_flops: intensity must be >= 0 FLOP/byte, got " + std::to_string(intensity));
    const ComputePeak& p = device.execution_peak(format, unit);  // as evaluate() runs an op of this format
    double peak = p.flops_per_s;
    double bw = device.bandwidth(level);
    if (ceilings == Ceilings::derated) {
        peak *= derating_fraction(device, p);
        bw *= derating_fraction(device, level);
    }
    if (std::isinf(intensity)) return peak;
    return std::min(peak, intensity * bw);
}

}  // namespace roofline
