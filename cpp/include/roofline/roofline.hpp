// Holding an OpCost against a Device's ceilings: the one timing rule (CeilingTimes::total) and evaluate().
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

/// The seconds one op (or a sum of ops) spends against each ceiling of a device, and THE timing rule:
///
///     total = max(overlapped compute, time at each memory level) + serial compute + overhead
///
/// Overlapped compute is matrix_s ÷ the matrix units' utilization + vector_s; serial compute is work a kernel cannot
/// overlap with its loads (dequantization between a load and its multiply-adds, in kernels that do not pipeline
/// them); overhead is the fixed cost of its kernels. Every time the library reports — one op, a phase, a decode
/// summed in closed form over a growing cache — is this rule applied to these components (sum_of_totals and the
/// estimate plan's envelopes are exact sums of it). Components add and scale like vectors (a sum of ops, or an op
/// affine in its rows), but the total of a sum is not the sum of totals: keep components apart until total().
struct CeilingTimes {
    double matrix_s = 0;                        ///< FLOPs on matrix units ÷ their peak (at utilization 1 for plans)
    double vector_s = 0;                        ///< FLOPs on vector units ÷ their peak
    double serial_s = 0;                        ///< compute not overlapped with memory (derated only)
    std::array<double, kNumLevels> memory_s{};  ///< bytes at each level ÷ its bandwidth (0 where not a ceiling)
    double overhead_s = 0;                      ///< launches × fixed cost per kernel (derated only)

    /// The ceilings that race: overlapped compute (matrix_s ÷ `matrix_utilization` + vector_s), then each level.
    std::array<double, 1 + kNumLevels> racing(double matrix_utilization = 1) const {
        return {matrix_s / matrix_utilization + vector_s, memory_s[0], memory_s[1], memory_s[2]};
    }
    /// All compute, the serial part included.
    double compute_s(double matrix_utilization = 1) const { return matrix_s / matrix_utilization + vector_s + serial_s; }
    /// The timing rule.
    double total(double matrix_utilization = 1) const {
        double m = matrix_s / matrix_utilization + vector_s;  // racing()[0], then each level
        for (double level : memory_s) m = m < level ? level : m;
        return m + serial_s + overhead_s;
    }
    /// The largest term: compute (its serial part counted), a memory level, or the overhead; none when all are 0.
    Bound bound(double matrix_utilization = 1) const;

    CeilingTimes& operator+=(const CeilingTimes& o) { return axpy(1.0, o); }
    CeilingTimes& operator-=(const CeilingTimes& o) { return axpy(-1.0, o); }
    /// this += a × x, component by component.
    CeilingTimes& axpy(double a, const CeilingTimes& x) {
        matrix_s += a * x.matrix_s;
        vector_s += a * x.vector_s;
        serial_s += a * x.serial_s;
        for (std::size_t i = 0; i < kNumLevels; ++i) memory_s[i] += a * x.memory_s[i];
        overhead_s += a * x.overhead_s;
        return *this;
    }
    /// Every component × factor.
    CeilingTimes scaled(double factor) const {
        CeilingTimes t;
        return t.axpy(factor, *this);
    }
    /// Every component but the overhead × factor: the same kernels doing `factor` times the work.
    CeilingTimes work_scaled(double factor) const {
        CeilingTimes t = scaled(factor);
        t.overhead_s = overhead_s;
        return t;
    }
};

inline CeilingTimes operator+(CeilingTimes a, const CeilingTimes& b) { return a += b; }
inline CeilingTimes operator-(CeilingTimes a, const CeilingTimes& b) { return a -= b; }

/// Σ_{x=0}^{n-1} total(first + x·step), exactly, for n >= 0 whole: the timing rule summed over n ops whose
/// components grow by `step` each (a decode step over a cache one token longer each time). The racing terms are
/// affine in x, so their max is convex piecewise-linear: summed piece by piece where the largest changes.
double sum_of_totals(const CeilingTimes& first, const CeilingTimes& step, double n);

struct Timing {
    double seconds = 0;          ///< times.total()
    Bound bound = Bound::none;   ///< times.bound()
    CeilingTimes times;          ///< per ceiling; matrix and vector compute already ÷ each term's utilization
    std::array<bool, kNumLevels> level_evaluated{};  ///< levels with traffic and a known bandwidth
    double flops = 0;
    double attainable_flops = 0;  ///< min(peak, AI at each level × its bandwidth): the roofline at this AI
    double achieved_flops = 0;    ///< flops / seconds
    Ceilings ceilings = Ceilings::derated;
};

/// The op's CeilingTimes on the device and its total. Compute time sums the FLOP terms, each against
/// Device::execution_peak of its unit and format (matrix falls back to vector, formats without units widen) and
/// divided by its utilization when derated; terms not `overlapped` (FlopTerm) are serial when derated. A level the
/// device gives no bandwidth for is not a ceiling. Zero FLOPs and zero bytes are valid.
Timing evaluate(const OpCost& op, const Device& device, Ceilings ceilings = Ceilings::derated);
/// evaluate(op, device, derated).times and evaluate(op, device, ideal).times at once (one peak lookup per term).
void evaluate_both(const OpCost& op, const Device& device, CeilingTimes& derated, CeilingTimes& ideal);

/// The roof itself, for drawing it: attainable FLOP/s at arithmetic intensity `intensity` (FLOP per byte at
/// `level`) = min(peak FLOP/s of `format` on `unit`, intensity × the level's bandwidth), the peak being the one
/// evaluate() runs that format at (Device::execution_peak: bf16 on a device without bf16 units at the fp32 rate).
/// The knee is Device::ridge_point(format, level, unit). Derated: the peak × the compute efficiency and DRAM
/// bandwidth × the DRAM efficiency (measured ceilings are not derated again), as evaluate() does. Intensity 0
/// gives 0; an infinite intensity gives the peak. Throws InvalidArgument for a negative or NaN intensity,
/// NotFound for a format (fp8, int8, fp4, int4 are never widened), unit or level the device has no number for.
double attainable_flops(const Device& device, double intensity, DType format, Level level = Level::dram,
                        Unit unit = Unit::matrix, Ceilings ceilings = Ceilings::ideal);

/// An op's arithmetic intensity at `level` as a multiple of the device's ridge point for `format` there: below 1
/// the op is bound by that level's bandwidth on the roofline, above 1 by compute.
double ridge_multiple(const OpCost& op, const Device& device, DType format, Level level = Level::dram,
                      Unit unit = Unit::matrix);

/// The fraction of a device's datasheet ceiling that derated evaluation uses: the compute efficiency for a peak that
/// is not measured (1 for a measured one), the DRAM efficiency for a DRAM level (not for a measured one, unless the
/// efficiency was itself measured against it), 1 for other levels.
double derating_fraction(const Device& device, const ComputePeak& peak);
double derating_fraction(const Device& device, Level level);

}  // namespace roofline
