// Efficiency fit: the device's DRAM and compute fractions and fixed cost per kernel, fitted to measured tokens/s.
#include <doctest/doctest.h>

#include "roofline/efficiency_fit.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "test_helpers.hpp"

#include <string>
#include <vector>

using namespace roofline;
using roofline::test::catalog;

TEST_CASE("calibration recovers efficiencies from synthetic measurements") {
    const Model m = catalog("qwen3-4b");
    Device truth = parse_device(roofline::test::kToyDevice);
    truth.efficiency.dram_bandwidth_fraction = 0.7;  // below 1 / the engine's bandwidth_fraction: identifiable
    truth.efficiency.compute_fraction = 0.6;
    truth.efficiency.launch_overhead_s = 6e-6;
    std::vector<ThroughputMeasurement> pts;
    for (const char* q : {"BF16", "Q8_0", "Q4_K_M"}) {
        Workload pp;
        pp.quant = q;
        pp.flash_attention_from_engine = true;  // measured as the engine runs when not told, as calibration reads them
        pp.prompt_tokens = 512;
        pp.gen_tokens = 0;
        Workload tg = pp;
        tg.prompt_tokens = 0;
        tg.gen_tokens = 128;
        pts.push_back({&m, q, 1, 512, 0, estimate(m, truth, pp).prefill_tokens_per_s, std::string(q) + " pp512"});
        pts.push_back({&m, q, 1, 0, 128, estimate(m, truth, tg).decode_tokens_per_s, std::string(q) + " tg128"});
    }
    FitReport rep;
    const Device fitted = calibrate_efficiency(parse_device(roofline::test::kToyDevice), pts, "llama.cpp", "f16", &rep);
    CHECK(fitted.efficiency.dram_bandwidth_fraction == doctest::Approx(0.7).epsilon(0.03));
    CHECK(fitted.efficiency.compute_fraction == doctest::Approx(0.6).epsilon(0.03));
    CHECK(fitted.efficiency.launch_overhead_s == doctest::Approx(6e-6).epsilon(0.1));
    CHECK(rep.rms_relative_error_after < 0.01);
    CHECK(rep.rms_relative_error_after < rep.rms_relative_error_before);
    CHECK_THROWS_AS(calibrate_efficiency(truth, {}, "llama.cpp"), InvalidArgument);
    // the report names what was fitted, point by point
    CHECK(rep.labels.size() == pts.size());
    CHECK(rep.measured.size() == pts.size());
    CHECK(rep.predicted_after.size() == pts.size());
    CHECK(rep.dram_bandwidth_fraction == fitted.efficiency.dram_bandwidth_fraction);
    CHECK(rep.compute_fraction == fitted.efficiency.compute_fraction);
    CHECK(rep.launch_overhead_s == fitted.efficiency.launch_overhead_s);
}
