// Fitting an engine's parameters — the few numbers of engine_db that no source gives: what its streaming kernels
// reach of a device's achievable bandwidth, its fixed cost per kernel, a kernel's efficiency or ALU work per
// multiply-add — to measured tokens/s across many devices at once, by least squares on the log of the ratio
// predicted / measured; and cross-validation: each group's points predicted by a fit without them.
#pragma once

#include "roofline/device.hpp"
#include "roofline/engine.hpp"
#include "roofline/validation.hpp"

#include <string>
#include <vector>

namespace roofline {

/// One fitted number of an engine backend: `key` is "bandwidth_fraction", "kernel_fixed_cost_scale", or
/// "linear_kernels[<name>].efficiency" / "linear_kernels[<name>].alu_ops_per_mac" (a kernel by its name; a name
/// ending in '*' stands for every kernel whose name begins so, which then share the value), within [lo, hi].
struct EngineParameter {
    std::string backend;
    std::string key;
    double lo = 1e-3, hi = 1e3;
};

/// The value of a parameter in an engine; InvalidArgument naming the backend and key when it has none.
double engine_parameter(const Engine& engine, const EngineParameter& parameter);
/// The engine with one parameter set.
void set_engine_parameter(Engine& engine, const EngineParameter& parameter, double value);

/// Tokens/s the engine predicts for each measurement (the phase each measures: gen_tokens > 0 decode, else
/// prefill); every point's workload runs on `engine`, whatever engine its workload names.
std::vector<double> predict_points(const Engine& engine, const std::vector<ValidationCase>& points);

struct EngineFitResult {
    Engine engine;                        ///< with the fitted values
    std::vector<double> values;           ///< per parameter
    std::vector<double> predicted;        ///< per point, after the fit
    double rms_log_error = 0;             ///< sqrt(mean(log(predicted / measured)^2))
    int iterations = 0;
};

/// Least squares on log(predicted / measured), Gauss-Newton with a Levenberg-Marquardt damping in the log of each
/// parameter (so every parameter stays positive and within its bounds), from the engine's current values.
EngineFitResult fit_engine(const Engine& start, const std::vector<EngineParameter>& parameters,
                           const std::vector<ValidationCase>& points, int max_iterations = 60);

/// Each point predicted by a fit on the points of the other groups: `groups[i]` is what is left out together with
/// point i (its device for leave-one-device-out, its chip generation for leave-one-generation-out).
std::vector<double> cross_validate(const Engine& start, const std::vector<EngineParameter>& parameters,
                                   const std::vector<ValidationCase>& points, const std::vector<std::string>& groups,
                                   int max_iterations = 60);

}  // namespace roofline
