// Fitting a device's efficiency parameters (achievable DRAM fraction, compute fraction, fixed cost per kernel) to
// measured tokens/s by least squares.
#pragma once

#include "roofline/device.hpp"
#include "roofline/model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// One measured point for calibration: llama-bench style (prompt_tokens > 0, gen 0 = ppN; prompt 0, gen > 0 =
/// tgN) or a whole run.
struct ThroughputMeasurement {
    const Model* model = nullptr;
    std::string quant;
    double batch = 1, prompt_tokens = 0, gen_tokens = 0;
    double tokens_per_s = 0;
    std::string label;
};

struct FitReport {
    std::vector<std::string> labels;
    std::vector<double> measured, predicted_before, predicted_after;  ///< tokens/s
    double rms_relative_error_before = 0, rms_relative_error_after = 0;
    double dram_bandwidth_fraction = 0, compute_fraction = 0, launch_overhead_s = 0;  ///< the fitted parameters
    int iterations = 0;
};

/// How far above the pure roofline of its own workload (datasheet ceilings, no overhead) a measured tokens/s may
/// lie: datasheets round, clocks boost. Above it a measurement is a typo or a different workload, and
/// calibrate_efficiency refuses it instead of fitting efficiencies that make every estimate wrong.
inline constexpr double kMaxMeasuredOverRoofline = 1.5;

/// Fit the device's efficiency parameters (achievable DRAM fraction, compute fraction, per-launch overhead)
/// to measured tokens/s by least squares (Eigen), each point weighted by its relative error, with a weak
/// pull towards the current values so that parameters the data does not inform stay where they were. Each point's
/// time is split by the ceiling that binds each of its ops at the current parameters (CeilingTimes::bound).
/// The points ran with `flash_attention` on or off; std::nullopt: as the engine runs unless told
/// (EngineBackend::flash_attention_default). Returns the calibrated device; `report` (when given) gets the residuals.
Device calibrate_efficiency(const Device& device, const std::vector<ThroughputMeasurement>& points, std::string_view engine,
                            const std::string& kv_dtype = "f16", FitReport* report = nullptr,
                            std::optional<bool> flash_attention = std::nullopt);

}  // namespace roofline
