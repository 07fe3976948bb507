// Turning timed runs into profile measurements (roofline::CeilingMeasurement), and the groups' results. No CUDA include.
#pragma once

#include "roofline/calibration.hpp"

#include <string>
#include <utility>
#include <vector>

namespace rcal {

using Sizes = std::vector<std::pair<std::string, double>>;

/// What one group of kernels produced. `failures` names each check that did not pass (exit status 2).
struct GroupResult {
    std::vector<roofline::CeilingMeasurement> measurements;
    std::vector<roofline::ProfileFit> fits;
    std::vector<std::string> failures;
    std::vector<std::pair<std::string, std::string>> extra;  ///< device.extra: key -> JSON text of the value
};

/// A bandwidth measurement: `bytes` read + written per run (STREAM convention), `seconds` of each timed run.
roofline::CeilingMeasurement bandwidth_measurement(roofline::Level level, const std::string& cache, const std::string& kernel,
                                            double bytes, const std::vector<double>& seconds, long long warmup,
                                            bool verified, Sizes sizes);
/// A FLOP-rate measurement (peak_flops or gemm_flops): `flops` per run (an FMA is 2).
roofline::CeilingMeasurement flops_measurement(roofline::Ceiling ceiling, roofline::DType dtype, roofline::Unit unit,
                                        const std::string& kernel, double flops, const std::vector<double>& seconds,
                                        long long warmup, bool verified, Sizes sizes);
/// A launch-overhead measurement: seconds per launch of each timed run.
roofline::CeilingMeasurement overhead_measurement(const std::string& kernel, const std::vector<double>& seconds,
                                           long long warmup, Sizes sizes);

/// "4.32 TB/s", "61.2 TFLOP/s", "2.41 us": a measurement's median in engineering units.
std::string format_si(double value, const std::string& si_unit);
/// One log line: "bandwidth dram  stream_copy   4.32 TB/s  [4.30 .. 4.33]  n=50  verified".
std::string describe(const roofline::CeilingMeasurement& m);

/// The datasheet device for --datasheet `spec`: a hardware_db id or alias, a device JSON file, or "auto" (the id
/// roofline::datasheet_device_id finds for `runtime_name`). `hardware_db` is the directory ids are looked up in
/// ("" for the core's default). Returns false, with `message` saying why, when "auto" finds nothing; throws the
/// core's NotFound / FileError / InvalidArgument for a bad id or file.
bool resolve_datasheet(const std::string& spec, const std::string& hardware_db, const std::string& runtime_name,
                       roofline::Device& out, std::string& message);

/// Targets the issue sets on the H200 (checked against the datasheet when one is given):
/// DRAM >= 90 %, fp32 vector >= 90 %, bf16 matrix >= 75 %.
struct Target {
    std::string name;
    double fraction;
};
/// The target a report row is held to, or nullptr. Only the best row of its kind is held to it.
const Target* target_for(const roofline::ReportRow& row);
/// The report (roofline::calibration_report) as a fixed-width table, with targets marked, plus a verdict line
/// per target. `all_targets_met` is set false when a datasheet value exists and the best row misses its target.
std::string format_report(const std::vector<roofline::ReportRow>& rows, bool* all_targets_met = nullptr);

}  // namespace rcal
