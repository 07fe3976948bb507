#include "roofline/figures.hpp"

#include "roofline/errors.hpp"

#include <cmath>
#include <limits>

namespace roofline {

std::vector<RidgeShiftPoint> ridge_shift(const std::vector<const Device*>& devices, DType format, Unit unit) {
    if (devices.empty()) throw InvalidArgument("ridge_shift needs at least one device");
    std::vector<RidgeShiftPoint> out;
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (!devices[i]) throw InvalidArgument("ridge_shift: devices[" + std::to_string(i) + "] is null");
        const Device& d = *devices[i];
        RidgeShiftPoint p;
        p.device = d.id;
        p.release_year = d.release_year;
        p.peak_flops_per_s = d.peak_flops(format, unit);
        p.unit = d.find_peak(format, unit)->unit;
        p.bandwidth_Bps = d.bandwidth(Level::dram);
        p.ridge_flop_per_byte = d.ridge_point(format, Level::dram, unit);
        p.ridge_per_element = p.ridge_flop_per_byte * dtype_bytes(format);
        out.push_back(p);
    }
    for (auto& p : out) {
        p.compute_growth = p.peak_flops_per_s / out.front().peak_flops_per_s;
        p.bandwidth_growth = p.bandwidth_Bps / out.front().bandwidth_Bps;
    }
    return out;
}

double scaling_exponent(const std::vector<double>& x, const std::vector<double>& y) {
    const std::size_t n = std::min(x.size(), y.size());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (n < 2) return nan;
    const double x0 = x[n - 2], x1 = x[n - 1], y0 = y[n - 2], y1 = y[n - 1];
    if (!(x0 > 0 && x1 > 0 && y0 > 0 && y1 > 0) || x0 == x1) return nan;
    return std::log(y1 / y0) / std::log(x1 / x0);
}

}  // namespace roofline
