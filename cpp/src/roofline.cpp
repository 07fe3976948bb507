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

namespace {
// Derated ceilings, for evaluate() and attainable_flops() alike. A measured peak is already achievable: the compute
// efficiency is not applied to it again. A measured DRAM bandwidth is not derated either, unless the DRAM
// efficiency was itself measured against it (Efficiency::dram_applies_to_measured).
double compute_efficiency(const Device& device, const ComputePeak& peak) {
    return peak.measured ? 1.0 : device.efficiency.compute;
}
double bandwidth_efficiency(const Device& device, Level level) {
    const bool derate = level == Level::dram && (!device.level(level).measured || device.efficiency.dram_applies_to_measured);
    return derate ? device.efficiency.dram_bandwidth : 1.0;
}
}  // namespace

Timing evaluate(const OpCost& op, const Device& device, Ceilings ceilings) {
    const bool derated = ceilings == Ceilings::derated;
    Timing t;
    t.ceilings = ceilings;
    t.flops = op.flops();

    for (const auto& term : op.flop_terms) {
        if (term.flops <= 0) continue;
        const ComputePeak& peak = device.execution_peak(term.format, term.unit);
        const double used = derated ? compute_efficiency(device, peak) * term.utilization : 1.0;
        const double seconds = term.flops / (peak.flops * used);
        t.compute_seconds += seconds;
        if (derated && !term.overlapped) t.serial_seconds += seconds;
        else t.compute_seconds_by_unit[static_cast<std::size_t>(term.unit)] += seconds;
    }

    double slowest = t.compute_seconds;
    t.bound = t.compute_seconds > 0 ? Bound::compute : Bound::none;
    // The roofline at this op's intensities: peak limited by each level's bandwidth × AI at that level.
    double attainable = t.compute_seconds > 0 ? t.flops / t.compute_seconds : std::numeric_limits<double>::infinity();
    double memory = 0;  // the slowest level
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        const auto level = static_cast<Level>(i);
        const double bytes = op.bytes(level);
        const MemoryLevel& lv = device.level(level);
        if (bytes <= 0 || !lv.present || !(lv.bandwidth_Bps > 0)) continue;  // Device::has_bandwidth
        double bw = lv.bandwidth_Bps;
        if (derated) bw *= bandwidth_efficiency(device, level);
        t.level_evaluated[i] = true;
        t.memory_seconds[i] = bytes / bw;
        attainable = std::min(attainable, t.flops / bytes * bw);  // OpCost::arithmetic_intensity × bandwidth
        memory = std::max(memory, t.memory_seconds[i]);
        if (t.memory_seconds[i] > slowest) {
            slowest = t.memory_seconds[i];
            t.bound = static_cast<Bound>(static_cast<int>(Bound::dram) + static_cast<int>(i));
        }
    }
    t.attainable_flops = t.flops > 0 && std::isfinite(attainable) ? attainable : 0.0;

    if (derated) t.overhead_seconds = op.launches * device.efficiency.launch_overhead_s;
    if (t.overhead_seconds > slowest) t.bound = Bound::overhead;
    // the serial compute does not hide under memory: the overlapped part races the memory levels, then it follows
    t.seconds = std::max(t.compute_seconds - t.serial_seconds, memory) + t.serial_seconds + t.overhead_seconds;
    t.achieved_flops = t.seconds > 0 ? t.flops / t.seconds : 0.0;
    return t;
}

double attainable_flops(const Device& device, double intensity, DType format, Level level, Unit unit,
                        Ceilings ceilings) {
    if (std::isnan(intensity) || intensity < 0)
        throw InvalidArgument("attainable_flops: intensity must be >= 0 FLOP/byte, got " + std::to_string(intensity));
    double peak = device.peak_flops(format, unit);
    double bw = device.bandwidth(level);
    if (ceilings == Ceilings::derated) {
        if (const ComputePeak* p = device.find_peak(format, unit)) peak *= compute_efficiency(device, *p);
        bw *= bandwidth_efficiency(device, level);
    }
    if (std::isinf(intensity)) return peak;
    return std::min(peak, intensity * bw);
}

}  // namespace roofline
