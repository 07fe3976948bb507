// The forward pass: the ops of a phase (decode and prefill), MoE routing, and what an engine's structure (fused
// QKV, a whole-vocabulary head, the all-reduce algorithm) does to them.
#include <doctest/doctest.h>

#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/forward.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/weights.hpp"
#include "test_helpers.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace roofline;
using roofline::test::catalog;
using roofline::test::kBf16;

TEST_CASE("forward ops: decode reads every weight once, prefill reuses them") {
    const Model m = Model::from_hf_config(roofline::test::kTiny);
    const auto formats = tensor_formats(m, "bf16", kBf16);
    PhaseOptions opt;
    opt.activation = kBf16;
    opt.kv = kBf16;
    opt.compute_units = 10;
    double weights = 0;
    for (const auto& f : formats) weights += f.bytes;
    const auto decode = forward_ops(m, formats, 1, 1, 99, opt);
    double read = 0;
    for (const auto& op : decode) read += op.count * op.cost.bytes_read[0];
    // every weight matrix once (the embedding only its row) + the KV cache of 100 tokens + small activations
    const double embedding = 256.0 * 1000 * 2;
    const double kv = 2.0 * 100 * 2 * 128 * 2;
    CHECK(read > weights - embedding + kv);
    CHECK(read < weights - embedding + kv + 1e5);
    double flops = 0;
    for (const auto& op : decode) flops += op.count * op.cost.flops();
    CHECK(flops == doctest::Approx(2.0 * (m.parameters() - 256.0 * 1000 * 0) ).epsilon(0.1));
    // prefill of 64 tokens: the same weights, 64x the matrix FLOPs
    const auto prefill = forward_ops(m, formats, 1, 64, 0, opt);
    double pf = 0;
    for (const auto& op : prefill) pf += op.count * op.cost.flops();
    CHECK(pf > 30 * flops);
}

TEST_CASE("MoE decode touches the expected number of distinct experts") {
    CHECK(ops::expected_active_experts(8, 2, 1) == doctest::Approx(2));
    CHECK(ops::expected_active_experts(128, 8, 1) == doctest::Approx(8));
    CHECK(ops::expected_active_experts(8, 2, 64) == doctest::Approx(8 * (1 - std::pow(0.75, 64))));
    CHECK(ops::expected_active_experts(128, 8, 4) < 32);
}

TEST_CASE("engine structure: fused QKV, a whole-vocabulary head, the all-reduce algorithm") {
    const Model m = catalog("llama-2-7b");
    const Device& a100 = roofline::test::hardware_db().get("a100-sxm-80gb");
    SUBCASE("gpt-fast projects Q, K and V with one GEMM of the same FLOPs and bytes, two launches fewer") {
        PhaseOptions sep;
        sep.activation = kBf16;
        sep.kv = kBf16;
        PhaseOptions fused = sep;
        fused.fused_qkv = true;
        const auto f = tensor_formats(m, "bf16", kBf16);
        const auto a = forward_ops(m, f, 1, 1, 9, sep), b = forward_ops(m, f, 1, 1, 9, fused);
        auto total = [](const std::vector<PhaseOp>& ops, const char* what) {
            double s = 0;
            for (const auto& op : ops)
                s += op.count * (std::string(what) == "flops" ? op.cost.flops()
                                 : std::string(what) == "bytes" ? op.cost.bytes() : op.cost.launches);
            return s;
        };
        CHECK(total(b, "flops") == doctest::Approx(total(a, "flops")).epsilon(1e-12));
        // the same weights, and the input row read once instead of three times
        CHECK(total(a, "bytes") - total(b, "bytes") == doctest::Approx(2.0 * m.arch.hidden * 2 * m.arch.n_layer));
        CHECK(total(a, "launches") - total(b, "launches") == 2.0 * m.arch.n_layer);
        bool qkv = false, q = false;
        for (const auto& op : b) {
            qkv = qkv || op.name == "attn_qkv";
            q = q || op.name == "attn_q";
        }
        CHECK(qkv);
        CHECK_FALSE(q);
        // a mix that stores attn_v in another format keeps three kernels
        const auto mixed = forward_ops(m, tensor_formats(m, "Q4_K_M", kBf16), 1, 1, 9, fused);
        bool kept = false;
        for (const auto& op : mixed) kept = kept || op.name == "attn_q";
        CHECK(kept);
    }
    SUBCASE("tensor parallel: the output head split by vocabulary, or whole (gpt-fast); ring or one-shot all-reduce") {
        Workload w;
        w.quant = "bf16";
        w.prompt_tokens = 0;
        w.gen_tokens = 10;
        w.flash_attention = true;
        w.tensor_parallel = 8;
        auto row = [&](const std::string& eng, const std::string& op) {
            w.engine = eng;
            for (const auto& r : estimate(m, a100, w).breakdown)
                if (r.phase == "decode" && r.op == op) return r;
            FAIL("no decode row " << op);
            return BreakdownRow{};
        };
        const double head = 32000.0 * 4096 * 2;  // bf16 output head
        CHECK(row("cuda-graphs", "output").bytes / 10 == doctest::Approx(head / 8).epsilon(0.01));
        CHECK(row("gpt-fast", "output").bytes / 10 == doctest::Approx(head).epsilon(0.01));
        // one all-reduce of a 4096-wide bf16 row: a kernel launch, then the steps and the bytes over NVLink
        const double launch = a100.efficiency.launch_overhead_s, step = engine("gpt-fast")->on(a100).collective_step_latency_s;
        const double bytes = 4096 * 2, link = a100.interconnect_bandwidth();
        const BreakdownRow ring = row("cuda-graphs", "all_reduce"), one_shot = row("gpt-fast", "all_reduce");
        CHECK(ring.count == 10 * 2 * m.arch.n_layer);
        CHECK(ring.seconds / ring.count == doctest::Approx(launch + 14 * step + 14.0 / 8 * bytes / link));
        CHECK(one_shot.seconds / one_shot.count == doctest::Approx(launch + 2 * step + 7 * bytes / link));
    }
}
