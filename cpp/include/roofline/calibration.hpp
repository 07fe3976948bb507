// Calibration: a device's measured ceilings (a profile, JSON; format in calibration/README.md and
// calibration/profile.schema.json), applied to a datasheet device or standing alone as a device, and the least-squares
// fit of a roofline to an arithmetic-intensity sweep.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roofline {

enum class Ceiling : std::uint8_t { bandwidth, peak_flops, gemm_flops, launch_overhead };
std::string_view ceiling_name(Ceiling c);
/// "B/s", "FLOP/s" or "s": the SI unit a measurement of this ceiling is given in.
std::string_view ceiling_si_unit(Ceiling c);

/// One cache as the OS reports it, and the model level it stands for (if any).
struct CacheInfo {
    std::string name;            ///< "L1d", "L2", "L3"
    double size_bytes = 0;       ///< one instance
    int instances = 1;           ///< instances the measured threads span
    int shared_by_threads = 0;   ///< 0: not recorded
    std::optional<Level> model_level;
};

/// The measured device, as its runtime reports it.
struct ProfileDevice {
    std::string name, vendor, kind;  ///< kind: "cpu" | "gpu"
    std::string host, os, compiler, driver, toolkit, compute_capability;
    int threads = 0, cores = 0, sm_count = 0;  ///< 0: not recorded
    double clock_hz = 0, memory_bytes = 0, l2_bytes = 0, shared_memory_per_unit_bytes = 0;  ///< 0: not recorded
    std::vector<CacheInfo> caches;
    std::vector<std::string> features;
    std::vector<std::pair<std::string, std::string>> extra;  ///< key -> JSON text of the value
};

/// One measured ceiling: the statistics of `repetitions` timed runs of `kernel`.
struct CeilingMeasurement {
    Ceiling ceiling = Ceiling::bandwidth;
    Level level = Level::dram;   ///< bandwidth only
    std::string cache;           ///< physical level measured ("L1d", "L3", "DRAM"); informative
    DType dtype = DType::fp32;   ///< peak_flops / gemm_flops only
    Unit unit = Unit::vector;    ///< peak_flops / gemm_flops only
    std::string kernel;
    std::vector<std::pair<std::string, double>> sizes;  ///< named sizes of one run
    int threads = 0;             ///< 0: not recorded
    long long repetitions = 1;
    long long warmup = 0;
    double min = 0, median = 0, max = 0;  ///< SI: B/s, FLOP/s or s (ceiling_si_unit)
    bool verified = false;
    bool feeds_model = true;
    std::string notes;
};

/// One point of an arithmetic-intensity sweep: the FLOPs and bytes of one run and its (median) time.
struct SweepPoint {
    double flops = 0;
    double bytes = 0;
    double seconds = 0;
    double k = -1;  ///< the sweep parameter (FMAs per element); < 0: not recorded
};

/// seconds = max(bytes / bandwidth, flops / peak) + overhead, fitted by least squares on relative error.
struct RooflineFit {
    double bandwidth_Bps = 0;      ///< 0 when no point lies on the memory side
    double peak_flops = 0;         ///< 0 when no point lies on the compute side
    double launch_overhead_s = 0;
    double residual_rms_rel = 0;   ///< sqrt(mean(((predicted - measured) / measured)^2))
    int iterations = 0;            ///< classification passes until stable
    int memory_points = 0, compute_points = 0;
    /// Predicted seconds of a run with these FLOPs and bytes.
    double predict(double flops, double bytes) const;
};

struct FitOptions {
    bool fit_overhead = true;        ///< false: overhead fixed at fixed_overhead_s
    double fixed_overhead_s = 0;     ///< the overhead when it is not fitted (>= 0)
    int max_iterations = 50;
};

/// Fit a roofline to sweep points (at least 3, seconds > 0, flops and bytes >= 0, not both 0). The points are
/// split at a ridge (arithmetic intensity flops/bytes): below it time = bytes/B + t0, above it flops/F + t0; for
/// every split the linear least squares in (1/B, 1/F, t0) is solved (rows weighted by 1/seconds, so the fit is
/// on relative error; t0 >= 0, refitted at 0 when it comes out negative); the split whose fit has the smallest
/// residual under the full max() model wins, then points are reclassified by the fitted ridge F/B and refitted
/// until the classification is stable. InvalidArgument on bad points, naming the index and the value.
RooflineFit fit_roofline(const std::vector<SweepPoint>& points, const FitOptions& options = {});

struct ProfileFit {
    std::string name = "intensity_sweep";
    std::string kernel;
    std::optional<DType> dtype;
    std::optional<Unit> unit;
    std::optional<Level> level;
    std::string model = "seconds = max(bytes / bandwidth, flops / peak) + overhead";
    RooflineFit fit;
    std::vector<SweepPoint> points;
};

struct Profile {
    int schema_version = 1;
    std::string date;  ///< ISO 8601 UTC
    std::string tool_name, tool_version, tool_options;
    ProfileDevice device;
    std::vector<CeilingMeasurement> measurements;
    std::vector<ProfileFit> fits;
    std::string notes;
    std::string origin = "<string>";  ///< the file it was loaded from

    /// The measurement a ceiling of the model takes: among the verified ones with feeds_model for this target, the
    /// highest median (the lowest for launch_overhead). nullptr when there is none. `level` is read for bandwidth,
    /// `dtype`/`unit` for peak_flops and gemm_flops (which compete for the same (dtype, unit) record).
    const CeilingMeasurement* best(Ceiling ceiling, Level level = Level::dram, DType dtype = DType::fp32,
                            Unit unit = Unit::vector) const;
    /// "measured by <tool> <version> on <date> (<device name>)"
    std::string provenance_prefix() const;
};

/// Parse and validate a profile. Errors (InvalidArgument) name `origin`, the field path, the bad value and what is
/// allowed, including the cross-field rules (level for bandwidth, dtype/unit for FLOP ceilings, si_unit matching
/// the ceiling, min <= median <= max, one cache per model level).
Profile parse_profile(std::string_view json_text, std::string_view origin = "<string>");
/// Read a file and parse_profile it. FileError when it cannot be read.
Profile load_profile(const std::string& path);
/// The profile as schema-conforming JSON text (round-trips through parse_profile).
std::string profile_to_json(const Profile& profile, int indent = 2);
/// ISO 8601 UTC of now: "2025-06-01T12:00:00Z".
std::string utc_now_iso8601();

/// `base` with the profile's measured ceilings in place of the datasheet's, marked measured (derated evaluation
/// does not apply the efficiency fraction to them); the measured launch overhead replaces the efficiency's. A
/// measurement above the datasheet value is applied and flagged in provenance.uncertain ("measured above
/// datasheet: X vs Y"). A level the device lacks is added when the profile gives its capacity, else noted in
/// `notes` and skipped. InvalidArgument when a CPU profile is applied to a GPU or the other way round.
Device calibrated(const Device& base, const Profile& profile);

/// The measured device alone (see calibration/README.md). InvalidArgument naming the missing profile field when
/// the profile lacks what a device needs (a DRAM bandwidth, device.memory_bytes, device.clock_MHz, one peak).
Device device_from_profile(const Profile& profile);

/// The hardware-database id whose datasheet this runtime-reported name describes ("NVIDIA H200" -> "h200-sxm",
/// "NVIDIA A100-SXM4-80GB" -> "a100-sxm-80gb"): vendor words dropped, the longest leading run of the name's tokens
/// that is an id or alias. "" when none.
std::string datasheet_device_id(std::string_view runtime_name, const DeviceDB& db);

/// One line of a calibration report: a measured (or fitted) ceiling next to the datasheet's.
struct ReportRow {
    std::string ceiling;   ///< "bandwidth", "peak_flops", "gemm_flops", "launch_overhead", "fit:bandwidth", ...
    std::string dtype;     ///< "" when not a FLOP ceiling
    std::string unit;      ///< "vector" | "matrix" | ""
    std::string level;     ///< "dram" | "l2" | "sram" | ""
    std::string cache;
    std::string kernel;
    std::string si_unit;
    double measured = 0;   ///< median (or fitted value)
    double min = 0, max = 0;
    long long repetitions = 0;
    double datasheet = 0;  ///< 0 when the datasheet has no such number (or no device was given)
    double ratio = 0;      ///< measured / datasheet; 0 when no datasheet
    bool verified = false;
    bool feeds_model = false;
    bool applied = false;  ///< the measurement calibrated() takes for this target
    std::string source;    ///< the datasheet number's source
    std::string note;      ///< fits: points and residual
};

/// Every measurement and fitted parameter of the profile, against `datasheet` when given.
std::vector<ReportRow> calibration_report(const Profile& profile, const Device* datasheet = nullptr);

}  // namespace roofline
