#include <doctest/doctest.h>

#include "roofline/calibration.hpp"
#include "roofline/errors.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/roofline.hpp"

#include <cmath>
#include <random>
#include <string>

using namespace roofline;

namespace {
const char* kProfile = R"({
  "schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2025-06-01T12:00:00Z",
  "tool": {"name": "test-tool", "version": "1.0"},
  "device": {"name": "Toy GPU Runtime Name", "vendor": "nvidia", "kind": "gpu", "sm_count": 10, "clock_MHz": 1000,
             "memory_bytes": 17179869184, "l2_bytes": 41943040, "shared_memory_per_unit_bytes": 102400,
             "extra": {"ecc": true}},
  "measurements": [
    {"ceiling": "bandwidth", "level": "dram", "kernel": "triad", "repetitions": 10, "si_unit": "B/s",
     "min": 8.5e11, "median": 9e11, "max": 9.1e11, "verified": true, "sizes": {"bytes_per_run": 1e9}},
    {"ceiling": "bandwidth", "level": "dram", "kernel": "copy", "repetitions": 10, "si_unit": "B/s",
     "min": 8e11, "median": 8.5e11, "max": 8.6e11, "verified": true},
    {"ceiling": "bandwidth", "level": "dram", "kernel": "broken", "repetitions": 10, "si_unit": "B/s",
     "min": 2e12, "median": 2e12, "max": 2e12, "verified": false},
    {"ceiling": "bandwidth", "level": "dram", "kernel": "reference", "repetitions": 10, "si_unit": "B/s",
     "min": 3e12, "median": 3e12, "max": 3e12, "verified": true, "feeds_model": false},
    {"ceiling": "bandwidth", "level": "l2", "kernel": "l2_read", "repetitions": 5, "si_unit": "B/s",
     "min": 3e12, "median": 3.2e12, "max": 3.3e12, "verified": true},
    {"ceiling": "peak_flops", "dtype": "fp16", "unit": "matrix", "kernel": "mma_fp16", "repetitions": 5,
     "si_unit": "FLOP/s", "min": 7e13, "median": 8e13, "max": 8.1e13, "verified": true},
    {"ceiling": "gemm_flops", "dtype": "bf16", "unit": "matrix", "kernel": "cublas_bf16", "repetitions": 5,
     "si_unit": "FLOP/s", "min": 7e13, "median": 7.5e13, "max": 7.6e13, "verified": true},
    {"ceiling": "launch_overhead", "kernel": "empty_kernel", "repetitions": 100, "si_unit": "s",
     "min": 2e-6, "median": 3e-6, "max": 9e-6, "verified": true}
  ],
  "fits": [{"name": "intensity_sweep", "kernel": "sweep", "dtype": "fp32", "unit": "vector", "level": "dram",
            "bandwidth_Bps": 9e11, "peak_flops_per_s": 1e13, "launch_overhead_s": 3e-6, "residual_rms_rel": 0.02,
            "points": [{"k": 0, "flops": 0, "bytes": 1e9, "seconds": 1.1e-3},
                       {"k": 64, "flops": 3.2e10, "bytes": 1e9, "seconds": 3.2e-3},
                       {"k": 1024, "flops": 5.1e11, "bytes": 1e9, "seconds": 5.1e-2}]}]
})";

const char* kDevice = R"({
  "schema_version": 1, "id": "toy", "name": "Toy GPU", "vendor": "nvidia", "family": "toy", "kind": "gpu",
  "aliases": [],
  "compute_units": {"count": 10, "name": "SM", "source": "made up for a test"},
  "clocks": {"boost_MHz": 1000, "source": "made up for a test"},
  "memory": {"dram": {"type": "HBM", "bandwidth_GBps": 1000, "capacity_GiB": 16, "source": "made up for a test"}},
  "compute": [{"format": "fp16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "fp32", "unit": "vector", "peak_TFLOPS": 10, "source": "made up for a test"}],
  "efficiency": {"dram_bandwidth_fraction": 0.8, "compute_fraction": 0.5, "launch_overhead_us": 5, "source": "made up for a test"}
})";

std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
    return text;
}

void check_error(const std::string& text, const std::string& expected) {
    CAPTURE(expected);
    CHECK_THROWS_WITH_AS(parse_profile(text, "p.json"), doctest::Contains(expected.c_str()), InvalidArgument);
}

// One sweep (k FMAs per element, 8 bytes per element) at each size in `sizes` (bytes).
std::vector<SweepPoint> synthetic(double bw, double peak, double t0, double noise, unsigned seed,
                                  std::vector<double> sizes = {8e8}) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(-noise, noise);
    std::vector<SweepPoint> pts;
    for (double bytes : sizes)
        for (int k : {0, 1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024}) {
            SweepPoint p;
            p.k = k;
            p.bytes = bytes;
            p.flops = 2.0 * k * bytes / 8.0;
            p.seconds = (std::max(p.bytes / bw, p.flops / peak) + t0) * (1.0 + u(gen));
            pts.push_back(p);
        }
    return pts;
}
}  // namespace

TEST_CASE("a profile parses, and round-trips through profile_to_json") {
    const Profile p = parse_profile(kProfile, "toy.json");
    CHECK(p.origin == "toy.json");
    CHECK(p.device.name == "Toy GPU Runtime Name");
    CHECK(p.device.sm_count == 10);
    CHECK(p.device.clock_hz == doctest::Approx(1e9));
    REQUIRE(p.measurements.size() == 8);
    CHECK(p.measurements[0].sizes.at(0).first == "bytes_per_run");
    CHECK(p.measurements[5].dtype == DType::fp16);
    CHECK(p.measurements[5].unit == Unit::matrix);
    CHECK_FALSE(p.measurements[3].feeds_model);
    REQUIRE(p.fits.size() == 1);
    CHECK(p.fits[0].points.size() == 3);
    CHECK(p.fits[0].points[1].k == 64);
    const Profile q = parse_profile(profile_to_json(p), "again");
    CHECK(profile_to_json(q) == profile_to_json(p));
}

TEST_CASE("the best measurement per target: verified, feeding the model, highest median (lowest overhead)") {
    const Profile p = parse_profile(kProfile);
    const CeilingMeasurement* dram = p.best(Ceiling::bandwidth, Level::dram);
    REQUIRE(dram);
    CHECK(dram->kernel == "triad");  // not the unverified 'broken' nor the reference-only one
    CHECK(p.best(Ceiling::bandwidth, Level::sram) == nullptr);
    REQUIRE(p.best(Ceiling::gemm_flops, Level::dram, DType::bf16, Unit::matrix));
    CHECK(p.best(Ceiling::peak_flops, Level::dram, DType::bf16, Unit::matrix)->kernel == "cublas_bf16");
    CHECK(p.best(Ceiling::launch_overhead)->median == doctest::Approx(3e-6));
}

TEST_CASE("profile errors name the file, the field and the value") {
    const std::string t = kProfile;
    check_error("{not json", "p.json: not valid JSON");
    check_error(with(t, "\"schema_version\": 1", "\"schema_version\": 2"), "field 'schema_version' must be at most 1, got 2");
    check_error(with(t, "\"rooflinepy-calibration-profile\"", "\"something-else\""), "field 'kind' must be 'rooflinepy-calibration-profile'");
    check_error(with(t, "2025-06-01T12:00:00Z", "2025-06-01 12:00"), "field 'date' must be ISO 8601 UTC");
    check_error(with(t, "2025-06-01T12:00:00Z", "2025-13-01T12:00:00Z"), "field 'date' must be ISO 8601 UTC");
    check_error(with(t, "\"name\": \"test-tool\", ", ""), "field 'tool.name' is required but missing");
    check_error(with(t, "\"version\": \"1.0\"", "\"version\": 1"), "field 'tool.version' must be a string, got 1");
    check_error(with(t, "\"kind\": \"gpu\"", "\"kind\": \"tpu\""), "field 'device.kind' must be one of cpu, gpu, got 'tpu'");
    check_error(with(t, "\"name\": \"Toy GPU Runtime Name\", ", ""), "field 'device.name' is required but missing");
    check_error(with(t, "\"sm_count\": 10", "\"sm_count\": 0"), "field 'device.sm_count' must be within [1,");
    check_error(with(t, "\"clock_MHz\": 1000", "\"clock_MHz\": -1"), "field 'device.clock_MHz' must be within (0,");
    check_error(with(t, "\"extra\": {\"ecc\": true}", "\"extra\": {\"ecc\": [1]}"), "field 'device.extra.ecc' must be a string, number or boolean");
    check_error(with(t, "\"extra\": {\"ecc\": true}", "\"caches\": [{\"name\": \"L2\", \"size_bytes\": 1, \"instances\": 1, \"model_level\": \"l2\"}, {\"name\": \"L3\", \"size_bytes\": 1, \"instances\": 1, \"model_level\": \"l2\"}]"),
                "field 'device.caches[1].model_level' 'l2' is already taken");
    check_error(with(t, "\"extra\": {\"ecc\": true}", "\"caches\": [{\"name\": \"L2\", \"size_bytes\": 0, \"instances\": 1}]"),
                "field 'device.caches[0].size_bytes' must be within (0,");
    check_error(with(t, "\"extra\": {\"ecc\": true}", "\"features\": [1]"), "field 'device.features' must hold strings");
    check_error(with(t, "\"extra\": {\"ecc\": true}", "\"colour\": \"red\""), "device.colour");
    check_error(with(t, "\"ceiling\": \"bandwidth\", \"level\": \"dram\", \"kernel\": \"triad\"", "\"ceiling\": \"speed\", \"level\": \"dram\", \"kernel\": \"triad\""),
                "field 'measurements[0].ceiling' must be one of bandwidth, peak_flops, gemm_flops, launch_overhead, got 'speed'");
    check_error(with(t, "\"ceiling\": \"bandwidth\", \"level\": \"dram\", \"kernel\": \"triad\"", "\"ceiling\": \"bandwidth\", \"kernel\": \"triad\""),
                "field 'measurements[0].level' is required for a bandwidth measurement");
    check_error(with(t, "\"level\": \"dram\", \"kernel\": \"triad\"", "\"level\": \"l3\", \"kernel\": \"triad\""),
                "field 'measurements[0].level' must be one of dram, l2, sram, got 'l3'");
    check_error(with(t, "\"ceiling\": \"launch_overhead\",", "\"ceiling\": \"launch_overhead\", \"level\": \"dram\","),
                "field 'measurements[7].level' is only allowed for a bandwidth measurement");
    check_error(with(t, "\"dtype\": \"fp16\", \"unit\": \"matrix\", \"kernel\": \"mma_fp16\"", "\"unit\": \"matrix\", \"kernel\": \"mma_fp16\""),
                "field 'measurements[5].dtype' is required for a peak_flops measurement");
    check_error(with(t, "\"dtype\": \"fp16\", \"unit\": \"matrix\", \"kernel\": \"mma_fp16\"", "\"dtype\": \"fp16\", \"kernel\": \"mma_fp16\""),
                "field 'measurements[5].unit' is required for a peak_flops measurement");
    check_error(with(t, "\"dtype\": \"fp16\", \"unit\": \"matrix\", \"kernel\": \"mma_fp16\"", "\"dtype\": \"fp17\", \"unit\": \"matrix\", \"kernel\": \"mma_fp16\""),
                "field 'measurements[5].dtype' must be one of");
    check_error(with(t, "\"dtype\": \"bf16\", \"unit\": \"matrix\"", "\"dtype\": \"bf16\", \"unit\": \"vector\""),
                "field 'measurements[6].unit' must be 'matrix' for gemm_flops");
    check_error(with(t, "\"level\": \"dram\", \"kernel\": \"triad\"", "\"level\": \"dram\", \"dtype\": \"fp32\", \"kernel\": \"triad\""),
                "field 'measurements[0].dtype' is only allowed for peak_flops and gemm_flops");
    check_error(with(t, "\"kernel\": \"empty_kernel\", \"repetitions\": 100, \"si_unit\": \"s\"", "\"kernel\": \"empty_kernel\", \"repetitions\": 100, \"si_unit\": \"B/s\""),
                "field 'measurements[7].si_unit' must be 's' for a launch_overhead measurement, got 'B/s'");
    check_error(with(t, "\"si_unit\": \"B/s\",\n     \"min\": 8.5e11", "\"si_unit\": \"GB/s\",\n     \"min\": 8.5e11"),
                "field 'measurements[0].si_unit' must be one of B/s, FLOP/s, s, got 'GB/s'");
    check_error(with(t, "\"min\": 8.5e11, \"median\": 9e11", "\"min\": 9.5e11, \"median\": 9e11"),
                "field 'measurements[0].median' must lie within [min, max]");
    check_error(with(t, "\"min\": 8.5e11", "\"min\": -1"), "field 'measurements[0].min' must be within (0,");
    check_error(with(t, "\"min\": 8.5e11", "\"min\": \"fast\""), "field 'measurements[0].min' must be a number, got \"fast\"");
    check_error(with(t, "\"repetitions\": 10, \"si_unit\": \"B/s\",\n     \"min\": 8.5e11", "\"repetitions\": 0, \"si_unit\": \"B/s\",\n     \"min\": 8.5e11"),
                "field 'measurements[0].repetitions' must be within [1,");
    check_error(with(t, "\"max\": 9.1e11, \"verified\": true", "\"max\": 9.1e11"), "field 'measurements[0].verified' is required but missing");
    check_error(with(t, "\"max\": 9.1e11, \"verified\": true", "\"max\": 9.1e11, \"verified\": \"yes\""), "field 'measurements[0].verified' must be true or false");
    check_error(with(t, "\"sizes\": {\"bytes_per_run\": 1e9}", "\"sizes\": {\"bytes_per_run\": -1}"), "field 'measurements[0].sizes.bytes_per_run' must be a number >= 0");
    check_error(with(t, "\"sizes\": {\"bytes_per_run\": 1e9}", "\"sizes\": [1]"), "field 'measurements[0].sizes' must be a JSON object");
    check_error(with(t, "\"sizes\": {\"bytes_per_run\": 1e9}", "\"speed\": 1"), "measurements[0].speed");
    check_error(with(t, "\"kernel\": \"triad\"", "\"kernel\": \"\""), "field 'measurements[0].kernel' must not be empty");
    check_error(with(t, "\"measurements\": [", "\"measurementz\": ["), "field 'measurements' is required but missing");
    check_error(with(t, "{\"k\": 64, \"flops\": 3.2e10, \"bytes\": 1e9, \"seconds\": 3.2e-3},", ""),
                "field 'fits[0].points' must hold at least 3 points, got 2");
    check_error(with(t, "\"seconds\": 3.2e-3", "\"seconds\": 0"), "field 'fits[0].points[1].seconds' must be within (0,");
    check_error(with(t, "\"residual_rms_rel\": 0.02", "\"residual_rms_rel\": -0.02"), "field 'fits[0].residual_rms_rel' must be within [0,");
    check_error(with(t, "\"residual_rms_rel\": 0.02,", ""), "field 'fits[0].residual_rms_rel' is required but missing");
    check_error(with(t, "\"level\": \"dram\",\n            \"bandwidth_Bps\"", "\"level\": \"hbm4\",\n            \"bandwidth_Bps\""),
                "field 'fits[0].level' must be one of dram, l2, sram, got 'hbm4'");
    check_error(with(t, "\"fits\": [{", "\"fits\": [{\"colour\": 1, "), "fits[0].colour");
    CHECK_THROWS_AS(load_profile("/nonexistent/profile.json"), FileError);
}

TEST_CASE("calibrated(): measured ceilings replace the datasheet's, marked measured, with provenance") {
    const Device base = parse_device(kDevice, "toy.json");
    const Profile p = parse_profile(kProfile, "toy-profile.json");
    const Device d = calibrated(base, p);
    CHECK(d.bandwidth(Level::dram) == doctest::Approx(9e11));
    CHECK(d.level(Level::dram).measured);
    CHECK(d.level(Level::dram).provenance.source.find("measured by test-tool 1.0 on 2025-06-01T12:00:00Z (Toy GPU Runtime Name)") == 0);
    CHECK(d.level(Level::dram).provenance.uncertain.empty());
    CHECK(d.peak_flops(DType::fp16) == doctest::Approx(8e13));
    CHECK(d.find_peak(DType::fp16, Unit::matrix)->measured);
    CHECK_FALSE(d.find_peak(DType::fp32, Unit::vector)->measured);
    CHECK(d.peak_flops(DType::bf16) == doctest::Approx(7.5e13));  // added: the datasheet had no bf16 peak
    CHECK(d.efficiency.launch_overhead_s == doctest::Approx(3e-6));
    // The datasheet has no L2 level; the profile gives its capacity, so it is added.
    CHECK(d.bandwidth(Level::l2) == doctest::Approx(3.2e12));
    CHECK(d.capacity(Level::l2) == doctest::Approx(41943040));
    CHECK(d.notes.find("Calibrated with toy-profile.json") != std::string::npos);
    // The calibrated device round-trips, measured flags included.
    const Device e = parse_device(d.to_json(), "roundtrip");
    CHECK(e.to_json() == d.to_json());
    CHECK(e.level(Level::dram).measured);
}

TEST_CASE("derated evaluation does not derate a measured ceiling again") {
    const Device base = parse_device(kDevice);
    const Device d = calibrated(base, parse_profile(kProfile));
    OpCost mem;
    mem.add_level(Level::dram, 1e9, 0);
    // Datasheet: 1e9 / (1e12 * 0.8) + 5 us; measured: 1e9 / 9e11 + 3 us (no 0.8 factor).
    CHECK(evaluate(mem, base).seconds == doctest::Approx(1e9 / 8e11));
    mem.launches = 1;
    CHECK(evaluate(mem, d).seconds == doctest::Approx(1e9 / 9e11 + 3e-6));
    CHECK(evaluate(mem, d, Ceilings::ideal).seconds == doctest::Approx(1e9 / 9e11));
    OpCost comp;
    comp.add_flops(Unit::matrix, DType::fp16, 1e12);
    CHECK(evaluate(comp, base).seconds == doctest::Approx(1e12 / (1e14 * 0.5)));
    CHECK(evaluate(comp, d).seconds == doctest::Approx(1e12 / 8e13));
    OpCost vec;  // fp32 vector was not measured: still derated
    vec.add_flops(Unit::vector, DType::fp32, 1e12);
    CHECK(evaluate(vec, d).seconds == doctest::Approx(1e12 / (1e13 * 0.5)));
}

TEST_CASE("a measurement above the datasheet is applied and flagged") {
    const Device base = parse_device(kDevice);
    const std::string t = with(kProfile, "\"min\": 8.5e11, \"median\": 9e11, \"max\": 9.1e11", "\"min\": 1e12, \"median\": 1.1e12, \"max\": 1.2e12");
    const Device d = calibrated(base, parse_profile(t));
    CHECK(d.bandwidth() == doctest::Approx(1.1e12));
    CHECK(d.level(Level::dram).provenance.uncertain.find("measured above datasheet: 1.1 TB/s vs 1 TB/s") == 0);
    const std::string f = with(kProfile, "\"min\": 7e13, \"median\": 8e13, \"max\": 8.1e13", "\"min\": 1e14, \"median\": 1.2e14, \"max\": 1.3e14");
    const Device g = calibrated(base, parse_profile(f));
    CHECK(g.find_peak(DType::fp16, Unit::matrix)->provenance.uncertain == "measured above datasheet: 120 TFLOP/s vs 100 TFLOP/s");
}

TEST_CASE("calibrated() refuses a profile of the other kind and notes a level it cannot place") {
    const Device base = parse_device(kDevice);
    const std::string cpu = with(kProfile, "\"kind\": \"gpu\"", "\"kind\": \"cpu\"");
    CHECK_THROWS_WITH_AS(calibrated(base, parse_profile(cpu, "host.json")),
                         doctest::Contains("host.json: field 'device.kind' is 'cpu'"), InvalidArgument);
    const std::string no_l2 = with(kProfile, "\"l2_bytes\": 41943040, ", "");
    const Device d = calibrated(base, parse_profile(no_l2));
    CHECK_FALSE(d.has_level(Level::l2));
    CHECK(d.notes.find("l2 bandwidth measured but the device has no l2 level") != std::string::npos);
}

TEST_CASE("device_from_profile: the measured device alone") {
    const std::string cpu = with(with(with(kProfile, "\"kind\": \"gpu\", \"sm_count\": 10", "\"kind\": \"cpu\", \"threads\": 4, \"host\": \"My Box\""),
                                      "\"l2_bytes\": 41943040, \"shared_memory_per_unit_bytes\": 102400,",
                                      "\"caches\": [{\"name\": \"L1d\", \"size_bytes\": 49152, \"instances\": 4},"
                                      " {\"name\": \"L2\", \"size_bytes\": 2097152, \"instances\": 4, \"model_level\": \"sram\"},"
                                      " {\"name\": \"L3\", \"size_bytes\": 33554432, \"instances\": 1, \"model_level\": \"l2\"}],"),
                                 "\"vendor\": \"nvidia\"", "\"vendor\": \"intel\"");
    const Device d = device_from_profile(parse_profile(cpu, "host.json"));
    CHECK(d.id == "host-my-box");
    CHECK(d.vendor == "host");
    CHECK(d.kind == "cpu");
    CHECK(d.family == "host-cpu");
    CHECK(d.compute_units == 4);
    CHECK(d.bandwidth(Level::dram) == doctest::Approx(9e11));
    CHECK(d.capacity(Level::dram) == doctest::Approx(17179869184.0));
    CHECK(d.capacity(Level::l2) == doctest::Approx(33554432));
    CHECK(d.bandwidth(Level::l2) == doctest::Approx(3.2e12));
    CHECK(d.sram_per_unit_bytes() == doctest::Approx(2097152));
    CHECK_FALSE(d.has_bandwidth(Level::sram));
    CHECK(d.peak_flops(DType::fp16) == doctest::Approx(8e13));
    CHECK(d.efficiency.compute_fraction == 1.0);
    CHECK(d.efficiency.launch_overhead_s == doctest::Approx(3e-6));
    CHECK(d.level(Level::dram).measured);
    const Device e = parse_device(d.to_json(), "roundtrip");
    CHECK(e.to_json() == d.to_json());

    const Device g = device_from_profile(parse_profile(kProfile));
    CHECK(g.kind == "gpu");
    CHECK(g.vendor == "nvidia");
    CHECK(g.compute_units == 10);
    CHECK(g.sram_per_unit_bytes() == doctest::Approx(102400));

    CHECK_THROWS_WITH_AS(device_from_profile(parse_profile(with(kProfile, "\"clock_MHz\": 1000,", ""), "x.json")),
                         doctest::Contains("x.json: field 'device.clock_MHz' is required"), InvalidArgument);
    CHECK_THROWS_WITH_AS(device_from_profile(parse_profile(with(kProfile, "\"sm_count\": 10,", ""), "x.json")),
                         doctest::Contains("field 'device.sm_count' is required"), InvalidArgument);
    CHECK_THROWS_WITH_AS(device_from_profile(parse_profile(with(kProfile, "\"memory_bytes\": 17179869184,", ""), "x.json")),
                         doctest::Contains("field 'device.memory_bytes' is required"), InvalidArgument);
    CHECK_THROWS_WITH_AS(device_from_profile(parse_profile(with(cpu, "\"threads\": 4,", ""), "x.json")),
                         doctest::Contains("field 'device.threads' is required"), InvalidArgument);
    std::string no_dram = kProfile;
    for (const char* k : {"\"kernel\": \"triad\"", "\"kernel\": \"copy\""})
        no_dram = with(no_dram, std::string("\"level\": \"dram\", ") + k, std::string("\"level\": \"sram\", ") + k);
    CHECK_THROWS_WITH_AS(device_from_profile(parse_profile(no_dram, "x.json")),
                         doctest::Contains("a verified bandwidth measurement at level 'dram'"), InvalidArgument);
}

TEST_CASE("device_from_profile: a library GEMV next to the STREAM kernels sets the DRAM efficiency of derated times") {
    const std::string cpu = with(with(kProfile, "\"kind\": \"gpu\", \"sm_count\": 10", "\"kind\": \"cpu\", \"threads\": 4"),
                                 "\"measurements\": [",
                                 "\"measurements\": [{\"ceiling\": \"bandwidth\", \"level\": \"dram\", \"kernel\": "
                                 "\"eigen_gemv_fp32\", \"repetitions\": 5, \"si_unit\": \"B/s\", \"min\": 6e11, "
                                 "\"median\": 7.2e11, \"max\": 7.5e11, \"verified\": true, \"feeds_model\": false},");
    const Device d = device_from_profile(parse_profile(cpu, "host.json"));
    CHECK(d.bandwidth() == doctest::Approx(9e11));  // the ceiling is still the best STREAM kernel (triad)
    CHECK(d.efficiency.dram_bandwidth_fraction == doctest::Approx(0.8));  // 7.2e11 / 9e11
    CHECK(d.efficiency.dram_applies_to_measured);
    CHECK(d.efficiency.provenance.source.find("DRAM efficiency 0.800 = eigen_gemv_fp32 720 GB/s over the DRAM ceiling 900 GB/s (triad)") == 0);
    OpCost mem;
    mem.add_level(Level::dram, 1e9, 0);
    CHECK(evaluate(mem, d).seconds == doctest::Approx(1e9 / 7.2e11));  // derated: the GEMV's bandwidth
    CHECK(evaluate(mem, d, Ceilings::ideal).seconds == doctest::Approx(1e9 / 9e11));
    CHECK(attainable_flops(d, 1.0, DType::fp16, Level::dram, Unit::matrix, Ceilings::derated) == doctest::Approx(7.2e11));
    // The flag survives the device JSON round trip; a device without it reads as false.
    const Device e = parse_device(d.to_json(), "roundtrip");
    CHECK(e.efficiency.dram_applies_to_measured);
    CHECK(e.to_json() == d.to_json());
    CHECK_FALSE(parse_device(kDevice).efficiency.dram_applies_to_measured);
    // An unverified GEMV is ignored; without one nothing is derated.
    const Device f = device_from_profile(parse_profile(with(cpu, "\"max\": 7.5e11, \"verified\": true", "\"max\": 7.5e11, \"verified\": false"), "host.json"));
    CHECK(f.efficiency.dram_bandwidth_fraction == 1.0);
    CHECK_FALSE(f.efficiency.dram_applies_to_measured);
}

TEST_CASE("fit_roofline recovers bandwidth, peak and overhead from synthetic sweeps") {
    const double bw = 1.2e10, peak = 2.5e11, t0 = 2e-5;
    const RooflineFit f = fit_roofline(synthetic(bw, peak, t0, 0.0, 1));
    CHECK(f.bandwidth_Bps == doctest::Approx(bw).epsilon(0.01));
    CHECK(f.peak_flops == doctest::Approx(peak).epsilon(0.01));
    CHECK(f.launch_overhead_s == doctest::Approx(t0).epsilon(0.01));
    CHECK(f.residual_rms_rel < 1e-6);
    CHECK(f.memory_points > 0);
    CHECK(f.compute_points > 0);
    CHECK(f.memory_points + f.compute_points == 14);
    // With +-3 % noise, sweeps at two sizes (so the overhead is not confounded with the bandwidth term):
    // the plateaus come back within a few per cent; the 20 us overhead is below the noise (3 % of 8 ms).
    for (unsigned seed = 1; seed <= 5; ++seed) {
        const RooflineFit g = fit_roofline(synthetic(bw, peak, t0, 0.03, seed, {8e8, 1e8}));
        CAPTURE(seed);
        CHECK(g.bandwidth_Bps == doctest::Approx(bw).epsilon(0.03));
        CHECK(g.peak_flops == doctest::Approx(peak).epsilon(0.03));
        CHECK(g.launch_overhead_s < 5e-4);
        CHECK(g.residual_rms_rel < 0.03);
        CHECK(g.residual_rms_rel > 0.0);
    }
    // A known overhead can be fixed instead of fitted.
    FitOptions fixed;
    fixed.fit_overhead = false;
    fixed.fixed_overhead_s = t0;
    const RooflineFit h = fit_roofline(synthetic(bw, peak, t0, 0.03, 3), fixed);
    CHECK(h.launch_overhead_s == t0);
    CHECK(h.bandwidth_Bps == doctest::Approx(bw).epsilon(0.03));
    CHECK(h.peak_flops == doctest::Approx(peak).epsilon(0.03));
    // Only memory-side points: the compute plateau is undetermined (0).
    std::vector<SweepPoint> mem;
    for (double b : {1e8, 2e8, 4e8, 8e8}) mem.push_back({0, b, b / bw + t0, -1});
    const RooflineFit m = fit_roofline(mem);
    CHECK(m.bandwidth_Bps == doctest::Approx(bw).epsilon(0.01));
    CHECK(m.launch_overhead_s == doctest::Approx(t0).epsilon(0.01));
    CHECK(m.peak_flops == 0);
    // Without an overhead term.
    FitOptions no_t0;
    no_t0.fit_overhead = false;
    CHECK(fit_roofline(synthetic(bw, peak, 0, 0.0, 1), no_t0).launch_overhead_s == 0);
    CHECK(fit_roofline(synthetic(bw, peak, 0, 0.0, 1), no_t0).bandwidth_Bps == doctest::Approx(bw).epsilon(0.01));
}

TEST_CASE("fit_roofline rejects bad points, naming the point") {
    CHECK_THROWS_WITH_AS(fit_roofline({{1, 1, 1, -1}, {2, 2, 2, -1}}), doctest::Contains("at least 3 sweep points, got 2"), InvalidArgument);
    CHECK_THROWS_WITH_AS(fit_roofline({{1, 1, 1, -1}, {2, 2, 0, -1}, {3, 3, 3, -1}}), doctest::Contains("point 1: seconds must be finite and > 0"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(fit_roofline({{1, 1, 1, -1}, {2, 2, 2, -1}, {0, 0, 3, -1}}), doctest::Contains("point 2: flops and bytes are both 0"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(fit_roofline({{-1, 1, 1, -1}, {2, 2, 2, -1}, {3, 3, 3, -1}}), doctest::Contains("point 0: flops must be finite"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(fit_roofline({{1, std::nan(""), 1, -1}, {2, 2, 2, -1}, {3, 3, 3, -1}}), doctest::Contains("point 0: bytes must be finite"),
                         InvalidArgument);
}

TEST_CASE("the runtime's device name finds its datasheet") {
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    CHECK(datasheet_device_id("NVIDIA H200", db) == "h200-sxm");
    CHECK(datasheet_device_id("NVIDIA H100 80GB HBM3", db) == "h100-sxm");
    CHECK(datasheet_device_id("NVIDIA A100-SXM4-80GB", db) == "a100-sxm-80gb");
    CHECK(datasheet_device_id("NVIDIA GeForce RTX 4090", db) == "rtx-4090");
    CHECK(datasheet_device_id("Intel(R) Xeon(R) Processor", db).empty());
}

TEST_CASE("calibration_report puts each measurement next to the datasheet") {
    const Device base = parse_device(kDevice);
    const Profile p = parse_profile(kProfile);
    const auto rows = calibration_report(p, &base);
    REQUIRE(rows.size() == 8 + 3);
    CHECK(rows[0].ceiling == "bandwidth");
    CHECK(rows[0].level == "dram");
    CHECK(rows[0].datasheet == doctest::Approx(1e12));
    CHECK(rows[0].ratio == doctest::Approx(0.9));
    CHECK(rows[0].applied);
    CHECK_FALSE(rows[1].applied);
    CHECK_FALSE(rows[2].applied);
    CHECK(rows[5].dtype == "fp16");
    CHECK(rows[5].ratio == doctest::Approx(0.8));
    CHECK(rows[6].datasheet == 0);  // no bf16 on the toy datasheet
    CHECK(rows[7].ratio == doctest::Approx(3e-6 / 5e-6));
    CHECK(rows[8].ceiling == "intensity_sweep:bandwidth");
    CHECK(rows[8].note.find("fit over 3 points") == 0);
    const auto bare = calibration_report(p);
    CHECK(bare[0].datasheet == 0);
    CHECK(bare[0].ratio == 0);
}
