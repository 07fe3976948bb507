// Holding an OpCost against a Device's ceilings.
#pragma once

#include "roofline/device.hpp"
#include "roofline/op.hpp"

#include <array>
#include <string>

namespace roofline {

enum class Bound : std::uint8_t { none, compute, dram, l2, sram, overhead };
/// "none" | "compute" | "memory:dram" | "memory:l2" | "memory:sram" | "overhead"
std::string bound_name(Bound b);

enum class Ceilings : std::uint8_t {
    ideal,    ///< datasheet peaks and bandwidths, no launch overhead: the pure roofline
    derated,  ///< × the device's efficiency fractions, plus launches × launch overhead
};

struct Timing {
    double seconds = 0;                          ///< max(overlapped compute, each level) + serial + overhead
    Bound bound = Bound::none;                   ///< which term is largest (compute counts its serial part)
    double compute_seconds = 0;                  ///< Σ over FLOP terms of flops / peak(unit, format)
    std::array<double, 2> compute_seconds_by_unit{};  ///< the overlapped terms' sum per Unit (vector, matrix)
    double serial_seconds = 0;                   ///< the terms not overlapped with memory (derated only; in compute_seconds)
    std::array<double, kNumLevels> memory_seconds{};  ///< bytes at a level / its bandwidth (0 if not evaluated)
    std::array<bool, kNumLevels> level_evaluated{};   ///< levels with traffic and a known bandwidth
    double overhead_seconds = 0;                 ///< launches × launch overhead (derated only)
    double flops = 0;
    double attainable_flops = 0;  ///< min(peak, AI at each level × its bandwidth): the roofline at this AI
    double achieved_flops = 0;    ///< flops / seconds
    Ceilings ceilings = Ceilings::derated;
};

/// time = max(compute time, time at each memory level with traffic) + launches × launch overhead; under derated
/// ceilings the compute of terms that are not `overlapped` (FlopTerm) adds to the max instead of entering it.
/// Compute time sums the FLOP terms, each against Device::execution_peak of its unit and format (matrix falls
/// back to vector, formats without units widen); a level the device gives no bandwidth for is not a ceiling. Zero FLOPs and zero bytes are valid.
Timing evaluate(const OpCost& op, const Device& device, Ceilings ceilings = Ceilings::derated);

/// The roof itself, for drawing it: attainable FLOP/s at arithmetic intensity `intensity` (FLOP per byte at
/// `level`) = min(peak FLOP/s of `format` on `unit`, intensity × the level's bandwidth). The knee is
/// Device::ridge_point(format, level, unit). Derated: the peak × the compute efficiency and DRAM bandwidth × the
/// DRAM efficiency (measured ceilings are not derated again), as evaluate() does. Intensity 0 gives 0; an
/// infinite intensity gives the peak. Throws InvalidArgument for a negative or NaN intensity, NotFound for a
/// format, unit or level the device has no number for.
double attainable_flops(const Device& device, double intensity, DType format, Level level = Level::dram,
                        Unit unit = Unit::matrix, Ceilings ceilings = Ceilings::ideal);

}  // namespace roofline
