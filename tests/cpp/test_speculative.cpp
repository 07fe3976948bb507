// Speculative decoding: expected tokens per draft-and-verify cycle and the decode it yields.
#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/plan.hpp"
#include "roofline/speculative.hpp"
#include "test_helpers.hpp"

#include <cmath>

using namespace roofline;
using roofline::test::catalog;

TEST_CASE("speculative decoding: tokens per cycle and a faster decode") {
    const Model target = catalog("llama-3.1-8b");
    const Model draft = catalog("llama-3.2-1b");
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload w;
    w.quant = "bf16";
    w.engine = "generic";
    w.draft = &draft;
    w.draft_tokens = 4;
    w.acceptance = 0.8;
    const Estimate e = estimate(target, d, w);
    CHECK(e.speculative_tokens_per_cycle == doctest::Approx((1 - std::pow(0.8, 5)) / 0.2));
    Workload plain = w;
    plain.draft = nullptr;
    const Estimate p = estimate(target, d, plain);
    CHECK(e.decode_tokens_per_s > p.decode_tokens_per_s);
    CHECK(p.speculative_tokens_per_cycle == 0);
    // the decode follows from one cycle at the generation's mean context
    const EstimatePlan tp(target, d, PlanConfig{"bf16", "f16", false, "generic", 1});
    const EstimatePlan dp(draft, d, PlanConfig{"bf16", "f16", false, "generic", 1});
    const double mid = std::floor(w.prompt_tokens + (w.gen_tokens + 1) / 2);
    const double cycle = speculative_cycle_s(tp, dp, 1, mid - 1, 4);
    CHECK(cycle == doctest::Approx(4 * dp.phase(1, 1, mid - 1).seconds + tp.phase(1, 5, mid - 1).seconds));
    CHECK(e.decode_tokens_per_s == doctest::Approx(e.speculative_tokens_per_cycle / cycle));
    CHECK(e.decode_s == doctest::Approx(w.gen_tokens / e.decode_tokens_per_s));
    CHECK(e.tpot_s == doctest::Approx(e.decode_s / w.gen_tokens));
    CHECK(e.total_s == doctest::Approx(e.prefill_s + e.decode_s));
    CHECK(e.prefill_s == p.prefill_s);  // the prefill is the target's alone
}

TEST_CASE("speculative_tokens_per_cycle: (1 - a^(g+1)) / (1 - a), g + 1 when every draft is accepted") {
    CHECK(speculative_tokens_per_cycle(4, 0.8) == doctest::Approx((1 - std::pow(0.8, 5)) / 0.2));
    CHECK(speculative_tokens_per_cycle(4, 1.0) == 5);
    CHECK(speculative_tokens_per_cycle(7, 0.0) == 1);  // nothing accepted: the verifier's own token
    CHECK(speculative_tokens_per_cycle(3, 0.5) == doctest::Approx(1 + 0.5 + 0.25 + 0.125));
}

TEST_CASE("speculative decoding: bad parameters are clear errors") {
    const Model target = Model::from_hf_config(roofline::test::kTiny);
    const Model draft = Model::from_hf_config(roofline::test::kTiny);
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload w;
    w.quant = "bf16";
    w.engine = "generic";
    w.draft = &draft;
    w.draft_tokens = 0;
    w.acceptance = 0.5;
    CHECK_THROWS_WITH_AS(estimate(target, d, w), doctest::Contains("draft_tokens (gamma) must be within [1, 1024]"), InvalidArgument);
    w.draft_tokens = 3;
    w.acceptance = 1.5;
    CHECK_THROWS_WITH_AS(estimate(target, d, w), doctest::Contains("acceptance"), InvalidArgument);
}
