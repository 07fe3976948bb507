// The numbers the library's figures draw, computed here so that a plot shows only what the core computed.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"

#include <string>
#include <vector>

namespace roofline {

/// One device of a ridge-shift comparison (peaks are dense; matrix falls back to vector units where a device has none).
struct RidgeShiftPoint {
    std::string device;
    int release_year = 0;
    Unit unit = Unit::matrix;               ///< the unit whose peak is used (Device::find_peak)
    double peak_flops_per_s = 0;
    double bandwidth_Bps = 0;               ///< DRAM
    double ridge_flop_per_byte = 0;         ///< peak ÷ DRAM bandwidth
    double ridge_per_element = 0;           ///< ridge × bytes per element of the format: how often each loaded number must be used
    double compute_growth = 0;              ///< peak ÷ the first device's peak
    double bandwidth_growth = 0;            ///< bandwidth ÷ the first device's bandwidth
};

/// Compute and bandwidth growth over a list of devices, and the ridge point of each. Throws InvalidArgument for an
/// empty list, NotFound where a device has no peak for the format.
std::vector<RidgeShiftPoint> ridge_shift(const std::vector<const Device*>& devices, DType format, Unit unit = Unit::matrix);

/// The exponent k of y ∝ x^k between the last two points of a series (the local log-log slope); NaN when the
/// series has fewer than two points, a non-positive value or equal x.
double scaling_exponent(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace roofline
