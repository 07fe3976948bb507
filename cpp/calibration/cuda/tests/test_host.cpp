// Host-side logic of roofline-calibrate-cuda: options, statistics, the counter-based data, the host references and
// fragment layouts, measurement records, the profile it writes (through the core) and the report. No GPU needed.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "host/data.hpp"
#include "host/layouts.hpp"
#include "host/measure.hpp"
#include "host/options.hpp"
#include "host/reference.hpp"
#include "host/stats.hpp"
#include "host/sweep_grid.hpp"

#include "roofline/calibration.hpp"

#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace rcal;

namespace {
Options parse(std::vector<const char*> args) {
    args.insert(args.begin(), "roofline-calibrate-cuda");
    return parse_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("options: output, quick, device, groups, datasheet") {
    const Options o = parse({"-o", "h200.json", "--quick", "--device", "1", "--only", "dram,fma", "--datasheet=auto"});
    CHECK(o.output == "h200.json");
    CHECK(o.quick);
    CHECK(o.device == 1);
    CHECK(o.groups == std::vector<std::string>{"dram", "fma"});
    CHECK(o.datasheet == "auto");
    CHECK(o.runs("dram"));
    CHECK_FALSE(o.runs("wgmma"));
    CHECK(o.command_line == "-o h200.json --quick --device 1 --only dram,fma --datasheet=auto");
    const Options all = parse({"--output=x.json"});
    CHECK(all.output == "x.json");
    for (const auto& g : all_groups()) CHECK(all.runs(g));
    CHECK(parse({"--help"}).help);
}

TEST_CASE("options: errors name the option and what is allowed") {
    CHECK_THROWS_WITH_AS(parse({}), doctest::Contains("missing -o"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o"}), doctest::Contains("-o needs a value"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o", "x", "--device", "two"}), doctest::Contains("'two'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o", "x", "--device", "-1"}), doctest::Contains("device index"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o", "x", "--only", "dram,hbm"}), doctest::Contains("unknown group 'hbm'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o", "x", "--only", ","}), doctest::Contains("empty list"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse({"-o", "x", "--fast"}), doctest::Contains("unknown option '--fast'"), std::invalid_argument);
    CHECK_THROWS_AS(parse({"-o", "x", "--quick=1"}), std::invalid_argument);
    CHECK(usage().find("--only") != std::string::npos);
}

TEST_CASE("stats: median, rates, repetitions") {
    const Summary odd = summarize({3, 1, 2});
    CHECK(odd.min == 1);
    CHECK(odd.median == 2);
    CHECK(odd.max == 3);
    CHECK(summarize({4, 1, 3, 2}).median == doctest::Approx(2.5));
    CHECK_THROWS_AS(summarize({}), std::invalid_argument);
    CHECK_THROWS_AS(summarize({1.0, NAN}), std::invalid_argument);
    const Summary r = rates(100.0, {1.0, 2.0, 4.0});
    CHECK(r.min == doctest::Approx(25));
    CHECK(r.median == doctest::Approx(50));
    CHECK(r.max == doctest::Approx(100));
    CHECK_THROWS_AS(rates(0, {1.0}), std::invalid_argument);
    CHECK_THROWS_AS(rates(1, {0.0}), std::invalid_argument);
    CHECK(repetitions_for(0.01, 1.0, 5, 50) == 50);
    CHECK(repetitions_for(0.1, 1.0, 5, 50) == 10);
    CHECK(repetitions_for(1.0, 1.0, 5, 50) == 5);
    CHECK(repetitions_for(0.0, 1.0, 5, 50) == 5);
}

TEST_CASE("data: deterministic, never zero, in range, exactly representable") {
    double sum = 0;
    std::set<float> distinct;
    for (std::uint64_t i = 0; i < 100000; ++i) {
        const float f = value_f32(1, i);
        REQUIRE(f >= 1.0f);
        REQUIRE(f < 2.0f);
        sum += f;
        distinct.insert(f);
        const double d = value_f64(1, i);
        REQUIRE(d >= 1.0);
        REQUIRE(d < 2.0);
        const double b = bf16_bits_to_float(value_bf16_bits(2, i, true));
        REQUIRE(std::fabs(b) >= 0.5);
        REQUIRE(std::fabs(b) < 2.0);
        const double h = fp16_bits_to_double(value_fp16_bits(3, i, true));
        REQUIRE(std::fabs(h) >= 0.5);
        REQUIRE(std::fabs(h) < 2.0);
        REQUIRE(round_to_fp16(h) == h);
        const double hu = fp16_bits_to_double(value_fp16_bits(3, i, false));
        REQUIRE(hu > 0);
    }
    CHECK(sum / 100000 == doctest::Approx(1.5).epsilon(0.01));  // the DRAM reduction's plausibility check
    CHECK(distinct.size() > 99000);
    CHECK(value_f32(1, 12345) == value_f32(1, 12345));
    CHECK(value_f32(1, 12345) != value_f32(2, 12345));
    // Signs are balanced for the signed formats.
    int negative = 0;
    for (std::uint64_t i = 0; i < 10000; ++i) negative += bf16_bits_to_float(value_bf16_bits(5, i, true)) < 0;
    CHECK(negative > 4500);
    CHECK(negative < 5500);
}

TEST_CASE("fp16: decode and round to nearest even") {
    CHECK(fp16_bits_to_double(0x3c00) == 1.0);
    CHECK(fp16_bits_to_double(0xc000) == -2.0);
    CHECK(fp16_bits_to_double(0x7bff) == 65504.0);
    CHECK(fp16_bits_to_double(0x0001) == std::ldexp(1.0, -24));
    CHECK(fp16_bits_to_double(0x0400) == std::ldexp(1.0, -14));
    CHECK(std::isinf(fp16_bits_to_double(0x7c00)));
    CHECK(std::isnan(fp16_bits_to_double(0x7e00)));
    CHECK(round_to_fp16(1.0 + std::ldexp(1.0, -11)) == 1.0);                                 // tie -> even
    CHECK(round_to_fp16(1.0 + 3 * std::ldexp(1.0, -11)) == 1.0 + std::ldexp(1.0, -9));      // tie -> even (up)
    CHECK(round_to_fp16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)) == 1.0 + std::ldexp(1.0, -10));
    CHECK(round_to_fp16(-0.1) == doctest::Approx(-0.0999755859375));
    CHECK(round_to_fp16(std::ldexp(1.0, -25) * 3) == std::ldexp(1.0, -23));                // subnormal tie -> even
    CHECK(std::isinf(round_to_fp16(65520.0)));
    CHECK(round_to_fp16(65519.0) == 65504.0);
    // Every fp16 value round-trips.
    for (std::uint32_t b = 0; b < 0x7c00; ++b) {
        const double v = fp16_bits_to_double(static_cast<std::uint16_t>(b));
        REQUIRE(round_to_fp16(v) == v);
    }
}

TEST_CASE("references: FMA chains and the sweep element") {
    // One step by hand.
    const float x = 1.0f - 0x1p-10f, y = 1.5f * 0x1p-10f;
    float want = 0;
    for (int j = 0; j < 2; ++j) want += std::fma(value_f32(9, 2 * 7 + static_cast<std::uint64_t>(j)), x, y);
    CHECK(fma_chain_f32(9, 7, 2, 1, x, y) == want);
    // The chains contract towards y / (1 - x) = 1.5.
    CHECK(fma_chain_f32(9, 7, 8, 100000, x, y) == doctest::Approx(8 * 1.5).epsilon(1e-4));
    CHECK(fma_chain_f64(9, 7, 8, 100000, static_cast<double>(x), static_cast<double>(y)) ==
          doctest::Approx(8 * 1.5).epsilon(1e-6));
    // In fp16 a step smaller than half an ulp rounds away: the chains settle in [1, 2) instead of reaching 1.5.
    const float settled = fma_chain_f16x2(9, 7, 8, 100000, static_cast<double>(x), static_cast<double>(y));
    CHECK(settled >= 16 * 1.0f);
    CHECK(settled < 16 * 2.0f);
    // fp16 chains stay on the fp16 grid.
    const float h = fma_chain_f16x2(9, 3, 1, 5, static_cast<double>(x), static_cast<double>(y));
    CHECK(std::isfinite(h));
    CHECK(sweep_element(2.0f, 0, 0.5f, 1.0f) == 2.0f);
    CHECK(sweep_element(4.0f, 3, 0.5f, 1.0f) == 2.25f);  // 4 -> 3 -> 2.5 -> 2.25
    CHECK(relative_error({1, 2}, {1, 2}) == 0);
    CHECK(relative_error({1, 2}, {1, 2.5}) > 0.1);
    CHECK(std::isinf(relative_error({NAN}, {1})));
    CHECK(std::isinf(relative_error({1}, {1, 2})));
    const auto idx = sample_indices(100, 10, 50, 3);
    CHECK(idx.size() == 70);
    for (const auto i : idx) CHECK(i < 100);
    CHECK(sample_indices(5, 10, 3, 1).size() == 13);
    CHECK(sample_indices(0, 10, 3, 1).empty());
}

TEST_CASE("layouts: mma.m16n8k16 fragments cover each matrix exactly once") {
    std::set<std::pair<int, int>> a, b, c;
    for (int lane = 0; lane < 32; ++lane) {
        for (int r = 0; r < 4; ++r)
            for (int h = 0; h < 2; ++h) {
                const RowCol rc = mma_m16n8k16_a(lane, r, h);
                CHECK(rc.row < 16);
                CHECK(rc.col < 16);
                a.insert({rc.row, rc.col});
            }
        for (int r = 0; r < 2; ++r)
            for (int h = 0; h < 2; ++h) {
                const RowCol kn = mma_m16n8k16_b(lane, r, h);
                CHECK(kn.row < 16);
                CHECK(kn.col < 8);
                b.insert({kn.row, kn.col});
            }
        for (int r = 0; r < 4; ++r) {
            const RowCol rc = mma_m16n8k16_c(lane, r);
            c.insert({rc.row, rc.col});
        }
    }
    CHECK(a.size() == 256);
    CHECK(b.size() == 128);
    CHECK(c.size() == 128);
    // PTX ISA examples: lane 5 (group 1, tig 1): a0 = (1, 2..3), a3 = (9, 10..11); b1 = (k 10..11, n 1); c2 = (9, 2).
    CHECK(mma_m16n8k16_a(5, 0, 0).row == 1);
    CHECK(mma_m16n8k16_a(5, 0, 1).col == 3);
    CHECK(mma_m16n8k16_a(5, 3, 0).row == 9);
    CHECK(mma_m16n8k16_a(5, 3, 0).col == 10);
    CHECK(mma_m16n8k16_b(5, 1, 1).row == 11);
    CHECK(mma_m16n8k16_b(5, 1, 1).col == 1);
    CHECK(mma_m16n8k16_c(5, 2).row == 9);
    CHECK(mma_m16n8k16_c(5, 2).col == 2);
}

TEST_CASE("layouts: wgmma accumulator and K-major core-matrix tiles") {
    std::set<std::pair<int, int>> d;
    for (int t = 0; t < 128; ++t)
        for (int r = 0; r < 128; ++r) {
            const RowCol rc = wgmma_m64nN_d(t, r);
            REQUIRE(rc.row < 64);
            REQUIRE(rc.col < 256);
            d.insert({rc.row, rc.col});
        }
    CHECK(d.size() == 64 * 256);
    // Warp 1 lane 0 register 0 is row 16, column 0; register 4 starts the next 8 columns.
    CHECK(wgmma_m64nN_d(32, 0).row == 16);
    CHECK(wgmma_m64nN_d(0, 4).col == 8);
    CHECK(wgmma_m64nN_d(0, 2).row == 8);
    // The K-major no-swizzle tile: a bijection onto [0, rows*k_tile); each core matrix is 64 contiguous elements;
    // K-adjacent core matrices 64 elements (128 B) apart, 8-row groups 8*k_tile elements (16*k_tile B) apart.
    for (const int k_tile : {16, 32, 64}) {
        std::set<std::size_t> off;
        for (int row = 0; row < 64; ++row)
            for (int k = 0; k < k_tile; ++k) off.insert(wgmma_kmajor_offset(row, k, k_tile));
        CHECK(off.size() == static_cast<std::size_t>(64 * k_tile));
        CHECK(*off.rbegin() == static_cast<std::size_t>(64 * k_tile - 1));
        CHECK(wgmma_kmajor_offset(0, 8, k_tile) == 64);
        CHECK(wgmma_kmajor_offset(8, 0, k_tile) == static_cast<std::size_t>(8 * k_tile));
        CHECK(wgmma_kmajor_offset(1, 1, k_tile) == 9);
    }
    // The same layout as the m64n8k16 example of a working wgmma test: A element (row, col) of a 64x16 tile at
    // (row/8)*128 + (col/8)*64 + (row%8)*8 + col%8.
    for (int row = 0; row < 64; ++row)
        for (int col = 0; col < 16; ++col)
            REQUIRE(wgmma_kmajor_offset(row, col, 16) ==
                    static_cast<std::size_t>((row / 8) * 128 + (col / 8) * 64 + (row % 8) * 8 + col % 8));
}

TEST_CASE("matmul reference") {
    const auto c = matmul({1, 2, 3, 4}, {5, 6, 7, 8}, 2, 2, 2);
    CHECK(c == std::vector<double>{19, 22, 43, 50});
}

TEST_CASE("sweep grid: 0 and a log grid to 1024") {
    CHECK(kSweepK[0] == 0);
    CHECK(kSweepK[kSweepPoints - 1] == 1024);
    for (std::size_t i = 1; i < kSweepPoints; ++i) CHECK(kSweepK[i] > kSweepK[i - 1]);
    CHECK(sweep_flops_per_element(1024) / kSweepBytesPerElement == 256.0);
}

namespace {
roofline::Profile sample_profile() {
    roofline::Profile p;
    p.date = "2026-01-01T00:00:00Z";
    p.tool_name = "roofline-calibrate-cuda";
    p.tool_version = "0.1.0";
    p.tool_options = "-o x.json";
    p.device.name = "NVIDIA H200";
    p.device.vendor = "nvidia";
    p.device.kind = "gpu";
    p.device.sm_count = 132;
    p.device.clock_hz = 1.98e9;
    p.device.memory_bytes = 150e9;
    p.device.l2_bytes = 62914560;
    p.device.features = {"sm_80", "sm_90", "sm_90a"};
    p.device.extra = {{"pci_bus_id", "\"00000000:01:00.0\""}, {"sm_clock_under_fma_fp32_MHz", "1980"}};
    p.measurements.push_back(bandwidth_measurement(roofline::Level::dram, "HBM", "stream_triad", 3.0e9,
                                                   {0.7e-3, 0.71e-3, 0.72e-3}, 3, true, {{"elements", 2.5e8}}));
    p.measurements.push_back(bandwidth_measurement(roofline::Level::l2, "L2", "l2_read_reduce_1/4", 1.0e9,
                                                   {0.12e-3, 0.13e-3}, 3, true, {}));
    p.measurements.push_back(flops_measurement(roofline::Ceiling::peak_flops, roofline::DType::fp32,
                                               roofline::Unit::vector, "fma_fp32", 6.2e11, {0.01, 0.0101}, 2, true, {}));
    p.measurements.push_back(flops_measurement(roofline::Ceiling::peak_flops, roofline::DType::bf16,
                                               roofline::Unit::matrix, "wgmma_bf16", 6.0e12, {0.01}, 2, false, {}));
    p.measurements.push_back(flops_measurement(roofline::Ceiling::gemm_flops, roofline::DType::bf16,
                                               roofline::Unit::matrix, "cublas_gemm_bf16", 1.1e12, {1.4e-3, 1.45e-3}, 3,
                                               true, {{"m", 8192}}));
    p.measurements.push_back(overhead_measurement("empty_kernel_back_to_back", {2.1e-6, 2.0e-6, 2.2e-6}, 100, {}));
    return p;
}
}  // namespace

TEST_CASE("measurements: SI rates, sizes, and a profile the core reads back") {
    const auto p = sample_profile();
    const auto& triad = p.measurements[0];
    CHECK(triad.ceiling == roofline::Ceiling::bandwidth);
    CHECK(triad.median == doctest::Approx(3.0e9 / 0.71e-3));
    CHECK(triad.min == doctest::Approx(3.0e9 / 0.72e-3));
    CHECK(triad.max == doctest::Approx(3.0e9 / 0.7e-3));
    CHECK(triad.repetitions == 3);
    CHECK(triad.sizes.back().first == "bytes_per_run");
    CHECK(p.measurements[2].sizes.back().first == "flops_per_run");
    CHECK(p.measurements[5].median == doctest::Approx(2.1e-6));
    CHECK_THROWS(overhead_measurement("x", {0.0}, 0, {}));

    // Round trip through the core's writer and parser, and the core's choice of measurement.
    const std::string text = roofline::profile_to_json(p);
    const roofline::Profile back = roofline::parse_profile(text, "test");
    REQUIRE(back.measurements.size() == p.measurements.size());
    CHECK(back.device.name == "NVIDIA H200");
    CHECK(back.measurements[4].kernel == "cublas_gemm_bf16");
    const auto* bf16 = back.best(roofline::Ceiling::peak_flops, roofline::Level::dram, roofline::DType::bf16,
                                 roofline::Unit::matrix);
    REQUIRE(bf16 != nullptr);
    CHECK(bf16->kernel == "cublas_gemm_bf16");  // the unverified wgmma row is never applied
}

TEST_CASE("the sweep fit through the core recovers a known roofline") {
    // A synthetic H200-like sweep: 4.3 TB/s, 60 TFLOP/s, 3 us per launch, the tool's grid and sizes.
    const double bw = 4.3e12, peak = 60e12, t0 = 3e-6;
    std::vector<roofline::SweepPoint> pts;
    auto add = [&](int k, double n) {
        roofline::SweepPoint p;
        p.k = k;
        p.flops = sweep_flops_per_element(k) * n;
        p.bytes = kSweepBytesPerElement * n;
        p.seconds = std::max(p.bytes / bw, p.flops / peak) + t0;
        pts.push_back(p);
    };
    for (const int k : kSweepK) add(k, 268435456.0);
    for (const double n : {4096.0, 65536.0, 1048576.0})
        for (const int k : {0, 64, 1024}) add(k, n);
    const auto fit = roofline::fit_roofline(pts);
    CHECK(fit.bandwidth_Bps == doctest::Approx(bw).epsilon(0.01));
    CHECK(fit.peak_flops == doctest::Approx(peak).epsilon(0.01));
    CHECK(fit.launch_overhead_s == doctest::Approx(t0).epsilon(0.05));
    CHECK(fit.residual_rms_rel < 0.01);
}

TEST_CASE("datasheet lookup: auto by runtime name, id, file") {
    const std::string db = ROOFLINE_TEST_HARDWARE_DB;
    roofline::Device d;
    std::string why;
    REQUIRE(resolve_datasheet("auto", db, "NVIDIA H200", d, why));
    CHECK(d.id == "h200-sxm");
    REQUIRE(resolve_datasheet("auto", db, "NVIDIA H100 80GB HBM3", d, why));
    CHECK(d.id.rfind("h100", 0) == 0);
    REQUIRE(resolve_datasheet("a100-sxm-80gb", db, "", d, why));
    CHECK(d.id == "a100-sxm-80gb");
    REQUIRE(resolve_datasheet(db + "/h200-sxm.json", db, "", d, why));
    CHECK(d.id == "h200-sxm");
    CHECK(d.bandwidth(roofline::Level::dram) == doctest::Approx(4.8e12));
    CHECK_FALSE(resolve_datasheet("auto", db, "Imaginary Accelerator 9000", d, why));
    CHECK(why.find("Imaginary Accelerator 9000") != std::string::npos);
    CHECK_THROWS(resolve_datasheet("h201", db, "", d, why));
}

TEST_CASE("report: formatting and targets") {
    CHECK(format_si(4.32e12, "B/s") == "4.320 TB/s");
    CHECK(format_si(6.1e13, "FLOP/s") == "61.000 TFLOP/s");
    CHECK(format_si(2.5e-6, "s") == "2.50 us");
    CHECK(format_si(2.5e-3, "s") == "2.500 ms");
    const auto p = sample_profile();
    CHECK(describe(p.measurements[0]).find("stream_triad") != std::string::npos);
    CHECK(describe(p.measurements[3]).find("NOT VERIFIED") != std::string::npos);

    roofline::ReportRow dram;
    dram.ceiling = "bandwidth";
    dram.level = "dram";
    dram.kernel = "stream_triad";
    dram.si_unit = "B/s";
    dram.measured = 4.4e12;
    dram.datasheet = 4.8e12;
    dram.ratio = dram.measured / dram.datasheet;
    dram.verified = true;
    roofline::ReportRow bf16 = dram;
    bf16.ceiling = "gemm_flops";
    bf16.level = "";
    bf16.dtype = "bf16";
    bf16.unit = "matrix";
    bf16.kernel = "cublas_gemm_bf16";
    bf16.si_unit = "FLOP/s";
    bf16.measured = 700e12;
    bf16.datasheet = 989.4e12;
    bf16.ratio = bf16.measured / bf16.datasheet;
    REQUIRE(target_for(dram) != nullptr);
    REQUIRE(target_for(bf16) != nullptr);
    bool met = true;
    const std::string text = format_report({dram, bf16}, &met);
    CHECK_FALSE(met);  // 70.7 % < 75 %
    CHECK(text.find("DRAM bandwidth >= 90% of datasheet: MET (91.7%") != std::string::npos);
    CHECK(text.find("MISSED (70.7%") != std::string::npos);
    bf16.measured = 800e12;
    bf16.ratio = bf16.measured / bf16.datasheet;
    CHECK(format_report({dram, bf16}, &met).find("MISSED") == std::string::npos);
    CHECK(met);

    // With the core's report over a real profile and no datasheet: rows, no ratios, no verdicts.
    const auto rows = roofline::calibration_report(p);
    CHECK(rows.size() >= p.measurements.size());
    CHECK(format_report(rows).find("no verified measurement with a datasheet value") != std::string::npos);
}
