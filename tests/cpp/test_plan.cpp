// Estimate plans: the closed forms (decode over a growing cache, envelopes, prefill attention) against the op-by-op,
// step-by-step sums; ceilings, bounds, memory, batching and tensor parallel.
#include <doctest/doctest.h>

#include "../../cpp/src/plan_impl.hpp"  // EstimatePlan::Impl from a shared structure (what the sweep builds)
#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/forward.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/plan.hpp"
#include "roofline/weights.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace roofline;
using roofline::test::catalog;

namespace {
std::string bound_of(PhaseBound b) { return phase_bound_names()[static_cast<std::size_t>(b)]; }

// The estimator's times the slow way: every op of every step built and evaluated one by one (forward_ops), decode
// summed step by step. What the plan's closed forms must reproduce.
struct Reference {
    double prefill_s = 0, prefill_ideal_s = 0, decode_s = 0, decode_ideal_s = 0;
};
Reference reference(const Model& m, const Device& device, const PlanConfig& cfg, double batch, double prompt, double gen) {
    const std::shared_ptr<const Engine> eng = engine(cfg.engine);
    const EngineBackend& backend = eng->on(device);
    const Device d = *device_for_engine(device, backend);
    PhaseOptions o = phase_options(backend, eng->id, parse_kv_format(cfg.kv_dtype), cfg.flash_attention, cfg.tensor_parallel);
    with_device(o, device);
    const auto formats = estimate_tensor_formats(m, cfg.quant);
    auto pass = [&](double tokens, double past, Ceilings c) {
        double s = 0;
        for (const auto& op : forward_ops(m, formats, batch, tokens, past, o)) {
            REQUIRE(op.name != "all_reduce");  // tensor_parallel 1 only
            s += op.count * evaluate(op.cost, d, c).seconds;
        }
        return s;
    };
    Reference r;
    if (prompt > 0) {
        r.prefill_s = pass(prompt, 0, Ceilings::derated);
        r.prefill_ideal_s = pass(prompt, 0, Ceilings::ideal);
    }
    for (double c = prompt + 1; c <= prompt + gen; ++c) {
        r.decode_s += pass(1, c - 1, Ceilings::derated);
        r.decode_ideal_s += pass(1, c - 1, Ceilings::ideal);
    }
    return r;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_value(double a, double b) { return same_bits(a, b); }
bool same_value(bool a, bool b) { return a == b; }
bool same_value(PhaseBound a, PhaseBound b) { return a == b; }

// Every field of the table, bit for bit.
void check_rows_equal(const EstimateRow& a, const EstimateRow& b) {
#define ROOFLINE_X(name, type, unit, meaning) CHECK_MESSAGE(same_value(a.name, b.name), #name);
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
}
}  // namespace

TEST_CASE("estimate plans reproduce the op-by-op, step-by-step estimator") {
    const DeviceDB& db = roofline::test::hardware_db();
    struct Case {
        const char* model;
        PlanConfig cfg;
        const char* device;
        double batch, prompt, gen;
    };
    const Case cases[] = {
        {"llama-3.1-8b", {"Q4_K_M", "f16", false, "llama.cpp", 1}, "h100-sxm", 1, 512, 64},
        {"llama-3.1-8b", {"Q4_K_M", "q8_0", true, "llama.cpp", 1}, "m4-pro-20c", 9, 300, 40},    // tiled GEMMs, extra dequant
        {"gemma-2-9b", {"BF16", "f16", false, "generic", 1}, "a100-sxm-80gb", 3, 4090, 12},     // crosses a 4096 window
        {"gemma-3-4b", {"fp8", "fp8", true, "cuda-graphs", 1}, "rtx-4090", 64, 1000, 30},       // 1024-token windows
        {"qwen3-30b-a3b", {"Q8_0", "f16", false, "llama.cpp", 1}, "h100-sxm", 17, 77, 25},      // experts
        {"gpt2", {"fp16", "f16", false, "generic", 1}, "l4", 2, 1, 9},                          // biases, one-token prompt
        {"phi-3-mini", {"int4-g128", "bf16", true, "cuda-graphs", 1}, "b200", 200, 0, 5},       // no prompt
        {"deepseek-r1", {"fp8", "fp8", true, "cuda-graphs", 1}, "h200-sxm", 4, 300, 20},        // MLA: absorbed / expanded
        {"deepseek-r1", {"bf16", "bf16", false, "generic", 1}, "h200-sxm", 1, 1, 3},            // one-token prompt
        {"llama-4-scout", {"bf16", "bf16", true, "cuda-graphs", 1}, "h200-sxm", 2, 8180, 20},   // crosses a chunk
        {"gpt-oss-20b", {"MXFP4_MOE", "f16", true, "llama.cpp", 1}, "rtx-5090", 3, 170, 20},     // native FP4 MMQ (sm_120)
        {"gpt-oss-20b", {"MXFP4_MOE", "f16", true, "llama.cpp", 1}, "b200", 3, 170, 20},         // its int8 MMQ (sm_100)
        {"qwen3-30b-a3b", {"Q4_K_M", "f16", true, "llama.cpp", 1}, "strix-halo", 1, 500, 9},    // 128 experts: MMQ, not hipBLAS
        {"llama-2-7b", {"Q4_K_M", "f16", false, "llama.cpp-rocm", 1}, "rx-6900-xt", 2, 200, 9},  // RDNA2: MMQ's dp4a path
    };
    for (const auto& c : cases) {
        CAPTURE(c.model);
        CAPTURE(c.device);
        const Model m = catalog(c.model);
        const Device& d = db.get(c.device);
        const EstimatePlan plan(m, d, c.cfg);
        const EstimateRow e = plan.evaluate(c.batch, c.prompt, c.gen);
        // a plan from a shared structure is the same plan
        const EngineBackend& backend = engine(c.cfg.engine)->on(d);
        check_rows_equal(e, EstimatePlan(std::make_shared<const EstimatePlan::Impl>(device_for_engine(d, backend),
                                                                                   make_structure(m, c.cfg, backend.backend)))
                                .evaluate(c.batch, c.prompt, c.gen));
        const Reference r = reference(m, d, c.cfg, c.batch, c.prompt, c.gen);
        CHECK(e.prefill_s == doctest::Approx(r.prefill_s).epsilon(1e-11));
        if (c.prompt > 0) CHECK(e.ceiling_prefill == doctest::Approx(c.batch * c.prompt / r.prefill_ideal_s).epsilon(1e-11));
        CHECK(e.decode_s == doctest::Approx(r.decode_s).epsilon(1e-11));
        CHECK(e.ceiling_decode == doctest::Approx(c.gen / r.decode_ideal_s).epsilon(1e-11));
        // the plan's estimate is estimate()'s
        Workload w;
        w.quant = c.cfg.quant;
        w.kv_dtype = c.cfg.kv_dtype;
        w.flash_attention = c.cfg.flash_attention;
        w.engine = c.cfg.engine;
        w.batch = c.batch;
        w.prompt_tokens = c.prompt;
        w.gen_tokens = c.gen;
        const Estimate full = estimate(m, d, w);
        CHECK(same_bits(full.decode_s, e.decode_s));
        CHECK(same_bits(full.prefill_s, e.prefill_s));
        CHECK(same_bits(full.max_context, e.max_context));
        CHECK(same_bits(full.compute_bound_batch, e.compute_bound_batch));
        double bd = 0;
        for (const auto& row : full.breakdown) bd += row.seconds;
        CHECK(bd == doctest::Approx(e.prefill_s + e.decode_s).epsilon(1e-9));
    }
}

TEST_CASE("a generation costs what a step costs: decode is summed in closed form") {
    const Model m = catalog("gemma-2-9b");
    const EstimatePlan plan(m, roofline::test::hardware_db().get("h100-sxm"), PlanConfig{});
    // 10⁶ steps across the window boundary: finite, and the per-step mean between the first and last step
    const EstimateRow e = plan.evaluate(4, 1024, 1e6);
    const EstimateRow first = plan.evaluate(4, 1024, 1), last = plan.evaluate(4, 1024 + 1e6 - 1, 1);
    CHECK(std::isfinite(e.decode_s));
    CHECK(e.decode_s / 1e6 >= first.decode_s);
    CHECK(e.decode_s / 1e6 <= last.decode_s);
}

TEST_CASE("estimate: decode summed in closed form equals the step-by-step sum") {
    const Model m = catalog("gemma-2-9b");  // sliding windows make the sum piecewise
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload w;
    w.quant = "int8-wo";
    w.prompt_tokens = 4090;
    w.gen_tokens = 12;  // crosses the 4096 window
    w.engine = "generic";
    const Estimate e = estimate(m, d, w);
    double stepwise = 0;
    for (double k = 0; k < w.gen_tokens; ++k) {
        Workload one = w;
        one.prompt_tokens = w.prompt_tokens + k;
        one.gen_tokens = 1;
        stepwise += estimate(m, d, one).decode_s;
    }
    CHECK(e.decode_s == doctest::Approx(stepwise).epsilon(1e-9));
    CHECK(e.decode_tokens_per_s == doctest::Approx(w.gen_tokens / e.decode_s));
    CHECK(e.total_s == doctest::Approx(e.prefill_s + e.decode_s));
}

TEST_CASE("estimate: ceilings, bounds, memory and batching") {
    const Model m = catalog("llama-2-7b");
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload w;
    w.quant = "bf16";
    w.engine = "generic";
    const Estimate e = estimate(m, d, w);
    // the weights a decode step reads: every matrix but the embedding table (Llama-2-7B does not tie it: its
    // 32000 x 4096 bf16 rows are looked up, not streamed)
    const double embedding = 32000.0 * 4096 * 2;
    CHECK(e.ceiling_decode_weights == doctest::Approx(1e12 / (e.weight_bytes - embedding)).epsilon(1e-3));
    CHECK(e.decode_tokens_per_s < e.ceiling_decode_weights);
    CHECK(e.decode_tokens_per_s < e.ceiling_decode);
    CHECK(e.prefill_tokens_per_s < e.ceiling_prefill);
    CHECK(bound_of(e.decode_bound) == "memory:dram");
    CHECK(bound_of(e.prefill_bound) == "compute");
    CHECK(e.fits);
    CHECK(e.memory_total == doctest::Approx(e.memory_weights + e.memory_kv_cache + e.memory_activations + e.memory_overhead));
    // MHA: every sequence adds its own KV reads (~0.3 GB at this context), so FLOPs per byte stay below the ridge
    // however large the batch; GQA reads 4x less KV and crosses it.
    CHECK(e.compute_bound_batch == 0);
    const Estimate gqa = estimate(catalog("llama-3.1-8b"), d, w);
    CHECK(gqa.compute_bound_batch > 16);
    CHECK(gqa.compute_bound_batch < 1000);
    CHECK(e.max_batch >= 1);
    Workload big = w;
    big.batch = e.max_batch + 1;
    CHECK_FALSE(estimate(m, d, big).fits);  // an answer, not an error
    Workload fit = w;
    fit.batch = e.max_batch;
    CHECK(estimate(m, d, fit).fits);
    // more batch, more aggregate throughput, less per sequence
    Workload b8 = w;
    b8.batch = 8;
    const Estimate e8 = estimate(m, d, b8);
    CHECK(e8.decode_tokens_per_s_total > 4 * e.decode_tokens_per_s_total);
    CHECK(e8.decode_tokens_per_s < e.decode_tokens_per_s);
    // the memory fields are the plan's MemoryUse, and the KV cache is kv_cache's
    const EstimatePlan plan(m, d, PlanConfig::of(w));
    const MemoryUse mu = plan.memory(w.batch, w.prompt_tokens, w.gen_tokens);
    CHECK(mu.total == e.memory_total);
    CHECK(mu.fits == e.fits);
    CHECK(e.memory_kv_cache == doctest::Approx(kv_cache_bytes(m.arch, w.batch, w.prompt_tokens + w.gen_tokens,
                                                              parse_kv_format(w.kv_dtype))).epsilon(1e-12));
    CHECK(plan.max_batch(w.prompt_tokens, w.gen_tokens) == e.max_batch);
}

TEST_CASE("tensor parallel: faster decode, each rank holding its share of the split weights") {
    const Model target = catalog("llama-3.1-8b");
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload plain;
    plain.quant = "bf16";
    plain.engine = "generic";
    Workload tp = plain;
    tp.tensor_parallel = 2;
    const Estimate e2 = estimate(target, d, tp);
    CHECK(e2.decode_tokens_per_s > estimate(target, d, plain).decode_tokens_per_s);
    // each rank holds half the split weights and the whole of the norms (no split) ...
    double all = 0, norms = 0, vocab = 0;
    const auto formats = tensor_formats(target, "bf16", format_of(DType::bf16));
    for (std::size_t i = 0; i < formats.size(); ++i) {
        const std::string& role = target.tensors[i].role;
        all += formats[i].bytes;
        if (role.size() > 5 && role.compare(role.size() - 5, 5, "_norm") == 0) norms += formats[i].bytes;
        if (role == "token_embd" || role == "output") vocab += formats[i].bytes;
    }
    CHECK(norms > 0);
    CHECK(e2.memory_weights == doctest::Approx((all - norms) / 2 + norms).epsilon(1e-12));
    CHECK(estimate(target, d, plain).memory_weights == all);
    // ... and, where the engine keeps the vocabulary whole (gpt-fast's tp.py), the embedding and output head too
    tp.engine = "gpt-fast";
    CHECK(estimate(target, d, tp).memory_weights == doctest::Approx((all - norms - vocab) / 2 + norms + vocab).epsilon(1e-12));
    tp.engine = plain.engine;
    tp.tensor_parallel = 3;
    CHECK_THROWS_WITH_AS(estimate(target, d, tp), doctest::Contains("must divide the heads"), InvalidArgument);
}

TEST_CASE("layer split: one device's speed plus the hand-offs, each device holding its layers, a prompt pipelined") {
    const Model m = catalog("llama-2-7b");
    const Device& d = roofline::test::hardware_db().get("rtx-3090");
    Workload one;
    one.quant = "Q4_0";
    one.engine = "llama.cpp";
    one.flash_attention_from_engine = true;
    Workload two = one;
    two.tensor_parallel = 2;
    const Estimate e1 = estimate(m, d, one), e2 = estimate(m, d, two);
    // llama.cpp's default split is by layers, vLLM's by tensors; one device is no split
    CHECK(std::string(e1.split_mode) == "none");
    CHECK(std::string(e2.split_mode) == "layer");
    CHECK(e2.tensor_parallel == 2);
    Workload v = two;
    v.engine = "vllm";
    v.quant = "bf16";
    CHECK(std::string(estimate(m, d, v).split_mode) == "tensor");
    v.split_mode = "layer";
    CHECK_THROWS_WITH_AS(estimate(m, d, v), doctest::Contains("splits by \"tensor\""), InvalidArgument);
    Workload bad = two;
    bad.split_mode = "pipeline";
    CHECK_THROWS_WITH_AS(estimate(m, d, bad), doctest::Contains("split_mode must be \"layer\", \"tensor\" or \"none\""), InvalidArgument);
    bad.split_mode = "none";
    CHECK_THROWS_WITH_AS(estimate(m, d, bad), doctest::Contains("tensor_parallel is 2"), InvalidArgument);
    bad.split_mode = "";
    bad.tensor_parallel = 33;  // 32 layers
    CHECK_THROWS_WITH_AS(estimate(m, d, bad), doctest::Contains("has 32"), InvalidArgument);

    // the same engine without the split's extra costs: a decode step is one device's plus one hand-off of the hidden
    // state (f32 rows over the link), exactly
    const std::shared_ptr<const Engine> base = engine("llama.cpp");
    auto bare = std::make_shared<Engine>(*base);
    for (EngineBackend& b : bare->backends) {
        b.layer_handoff_latency_s = 0;
        b.layer_split_kernel_fixed_cost_add = 0;
    }
    const PlanConfig c1 = PlanConfig::of(one, bare);
    PlanConfig c2 = PlanConfig::of(two, bare);
    const EstimatePlan p1(m, d, c1), p2(m, d, c2);
    const EstimateRow r1 = p1.evaluate(1, 0, 128), r2 = p2.evaluate(1, 0, 128);
    const double link = d.interconnect_for(2)->bandwidth_Bps;
    const double act = parse_format(base->on(d).activation_format).bytes_per_element();
    CHECK(r2.decode_s - r1.decode_s == doctest::Approx(128 * m.arch.hidden * act / link).epsilon(1e-6));
    CHECK(r2.ceiling_decode_weights == doctest::Approx(r1.ceiling_decode_weights).epsilon(1e-12));  // all weights, in turn
    // the real engine: graph replay given up (more per kernel) and a latency per hand-off make it slower still
    CHECK(e2.decode_s > estimate(m, d, one).decode_s + 128 * 15e-6);
    CHECK(e2.decode_s < 1.25 * e1.decode_s);

    // memory: the busiest device holds its share of the layers and the vocabulary tables, and its layers' KV cache
    double vocab = 0;
    const auto formats = estimate_tensor_formats(m, base->quant_for("Q4_0"));
    for (std::size_t i = 0; i < formats.size(); ++i)
        if (m.tensors[i].role == "token_embd" || m.tensors[i].role == "output") vocab += formats[i].bytes;
    CHECK(e2.memory_weights == doctest::Approx((e1.memory_weights - vocab) * 0.5 + vocab).epsilon(1e-12));
    CHECK(e2.memory_kv_cache == doctest::Approx(e1.memory_kv_cache * 0.5).epsilon(1e-12));
    Workload three = two;
    three.tensor_parallel = 3;  // 32 layers: 11 on the busiest device
    CHECK(estimate(m, d, three).memory_kv_cache == doctest::Approx(e1.memory_kv_cache * 11 / 32).epsilon(1e-12));

    // a prompt of one micro-batch runs through the devices in turn; n_batch = 2048 tokens of 4 micro-batches run as
    // a pipeline: (4 + 2 - 1) / (4 x 2) of the devices in turn
    const EstimateRow s512 = p2.evaluate(1, 512, 0), o512 = p1.evaluate(1, 512, 0);
    CHECK(s512.prefill_s == doctest::Approx(o512.prefill_s + 512 * m.arch.hidden * act / link).epsilon(1e-6));
    auto serial = [&](double prompt) {  // the devices one after another: the plan's sums without the overlap
        return p2.impl().prefill(1, p2.impl().prefill_attention(prompt, 0)).seconds;
    };
    CHECK(p2.evaluate(1, 2048, 0).prefill_s == doctest::Approx(serial(2048) * 5.0 / 8).epsilon(1e-12));
    // 2560 tokens: a call of 2048 (4 micro-batches) and one of 512 (1), weighted by their tokens
    CHECK(p2.evaluate(1, 2560, 0).prefill_s == doctest::Approx(serial(2560) * (0.8 * 5.0 / 8 + 0.2)).epsilon(1e-12));
    CHECK(p1.evaluate(1, 2048, 0).prefill_s == doctest::Approx(p1.impl().prefill(1, p1.impl().prefill_attention(2048, 0)).seconds).epsilon(1e-12));

    // tensor parallelism in llama.cpp (-sm tensor) stays what it was: split weights, all-reduces
    Workload t = two;
    t.split_mode = "tensor";
    const Estimate et = estimate(m, d, t);
    CHECK(std::string(et.split_mode) == "tensor");
    CHECK(et.decode_tokens_per_s > e2.decode_tokens_per_s);
}

TEST_CASE("a prompt runs in micro-batches after the cached context: the plan is the sum of its micro-batches op by op") {
    // llama.cpp evaluates a prompt in n_ubatch-token micro-batches (llama-bench -ub), each attending everything
    // cached before it (llama-bench -d tokens of context, then the earlier micro-batches); the weights are read again
    // per micro-batch. The plan's prefill (static slots once per micro-batch size, attention summed in closed form)
    // must equal a pass per micro-batch, and the breakdown path must give the same phase.
    const DeviceDB& db = roofline::test::hardware_db();
    const Model m = catalog("llama-3.1-8b");
    struct Case {
        const char* device;
        const char* engine;
        bool flash;
        double ubatch, batch, prompt, context;
    };
    for (const Case& c : {Case{"h100-sxm", "llama.cpp", false, 512, 1, 2048, 0}, Case{"m2-max-38c", "llama.cpp", true, 256, 3, 1000, 4096},
                          Case{"rtx-4090", "llama.cpp", true, 512, 2, 1025, 100}, Case{"a100-sxm-80gb", "cuda-graphs", true, 0, 4, 3000, 777},
                          // five full micro-batches or more: their attention summed on a line where it is one
                          Case{"h100-sxm", "llama.cpp", true, 512, 2, 8192, 1000}, Case{"m2-max-38c", "llama.cpp", false, 256, 1, 3001, 0},
                          Case{"a100-sxm-80gb", "llama.cpp", true, 128, 1, 20000, 60000}, Case{"rtx-3090", "llama.cpp", false, 512, 1, 16384, 0}}) {
        CAPTURE(c.device);
        CAPTURE(c.prompt);
        const Device& d = db.get(c.device);
        const PlanConfig cfg_q(std::string(c.engine) == "llama.cpp" ? "Q4_K_M" : "bf16", "f16", c.flash, c.engine, 1, c.ubatch);
        const EstimatePlan plan(m, d, cfg_q);
        const std::shared_ptr<const Engine> eng = engine(cfg_q.engine);
        const EngineBackend& backend = eng->on(d);
        const Device dev = *device_for_engine(d, backend);
        PhaseOptions o = phase_options(backend, eng->id, parse_kv_format(cfg_q.kv_dtype), cfg_q.flash_attention, 1);
        with_device(o, d);
        const auto formats = estimate_tensor_formats(m, cfg_q.quant);
        const double u = c.ubatch > 0 ? c.ubatch : (backend.prefill_ubatch_tokens > 0 ? backend.prefill_ubatch_tokens : c.prompt);
        double ref = 0;
        int chunks = 0;
        for (double done = 0; done < c.prompt; done += u, ++chunks)
            for (const auto& op : forward_ops(m, formats, c.batch, std::min(u, c.prompt - done), c.context + done, o))
                ref += op.count * evaluate(op.cost, dev, Ceilings::derated).seconds;
        CHECK(chunks == static_cast<int>(std::ceil(c.prompt / u)));
        const EstimateRow fast = plan.evaluate(c.batch, c.prompt, 0, c.context, nullptr);
        std::vector<BreakdownRow> rows;
        const EstimateRow full = plan.evaluate(c.batch, c.prompt, 0, c.context, &rows);
        CHECK(fast.prefill_s == doctest::Approx(ref).epsilon(1e-9));
        CHECK(full.prefill_s == doctest::Approx(fast.prefill_s).epsilon(1e-12));
        double summed = 0;
        for (const BreakdownRow& r : rows) summed += r.seconds;
        CHECK(summed == doctest::Approx(full.prefill_s).epsilon(1e-9));
        CHECK(fast.context_tokens == c.context);
        // the context is read by every micro-batch's attention: more context, slower prefill
        CHECK(plan.evaluate(c.batch, c.prompt, 0, c.context + 8192, nullptr).prefill_s > fast.prefill_s);
    }
    // a smaller micro-batch reads the weights more often: never faster
    const Device& h = db.get("h100-sxm");
    const double s512 = EstimatePlan(m, h, PlanConfig("Q4_K_M", "f16", true, "llama.cpp", 1, 512)).evaluate(1, 4096, 0).prefill_s;
    const double s128 = EstimatePlan(m, h, PlanConfig("Q4_K_M", "f16", true, "llama.cpp", 1, 128)).evaluate(1, 4096, 0).prefill_s;
    CHECK(s128 > s512);
    CHECK_THROWS_AS(EstimatePlan(m, h, PlanConfig("Q4_K_M", "f16", true, "llama.cpp", 1, -5)), InvalidArgument);
}

TEST_CASE("llama.cpp CUDA multiplies attention on fp16 tensor cores: a prompt at depth is not bound by fp32 lanes") {
    const auto& db = roofline::test::hardware_db();
    const Device& a100 = db.get("a100-sxm-80gb");
    const Model m = catalog("llama-2-7b");
    const EstimatePlan plan(m, a100, PlanConfig("Q4_0", "f16", true, "llama.cpp-cuda"));
    std::vector<BreakdownRow> rows;
    const EstimateRow deep = plan.evaluate(1, 512, 0, 16384, &rows);
    bool seen = false;
    for (const BreakdownRow& r : rows)
        if (r.op == "attention" && r.phase == "prefill") {
            seen = true;
            CHECK(r.flops / r.seconds > 19.5e12);  // faster than the A100's fp32 lanes could ever run it
        }
    CHECK(seen);
    // 16k tokens of context cost the 512-token prompt less than 2x its time without (the attention FLOPs at the
    // fp32 vector rate made it 4x)
    CHECK(deep.prefill_s < 2 * plan.evaluate(1, 512, 0, 0, nullptr).prefill_s);
}

TEST_CASE("llama.cpp's native FP4 MMQ runs on the families ggml builds it for; the int8 MMQ everywhere else") {
    const auto& db = roofline::test::hardware_db();
    const Model m = catalog("gpt-oss-20b");
    // llama.cpp without the family-gated kernel: what the estimate was before it, and what every other GPU runs
    Engine plain = *engine("llama.cpp");
    plain.id = "llama.cpp-int8-mmq";
    std::size_t gated = 0;
    for (EngineBackend& b : plain.backends) {
        if (b.backend != "cuda") continue;
        const auto n = b.linear_kernels.size();
        b.linear_kernels.erase(std::remove_if(b.linear_kernels.begin(), b.linear_kernels.end(),
                                              [](const LinearKernel& k) { return k.name.find("native FP4") != std::string::npos; }),
                               b.linear_kernels.end());
        gated += n - b.linear_kernels.size();
    }
    REQUIRE(gated == 1);  // the native FP4 MMQ
    const auto plain_ptr = std::make_shared<const Engine>(plain);
    auto prefill = [&](const char* device, std::shared_ptr<const Engine> e, std::vector<BreakdownRow>* rows = nullptr) {
        const EstimatePlan plan(m, db.get(device), PlanConfig("MXFP4_MOE", "f16", true, "llama.cpp", 1, 4096, std::move(e)));
        return plan.evaluate(1, 4096, 16, 0, rows);
    };
    for (const char* device : {"rtx-4090", "b200", "h100-sxm", "a100-sxm-80gb"}) {  // not sm_120 / sm_121: the same plan
        CAPTURE(device);
        check_rows_equal(prefill(device, nullptr), prefill(device, plain_ptr));
    }
    for (const char* device : {"rtx-5090", "rtx-pro-6000-blackwell", "gb10"}) {
        CAPTURE(device);
        std::vector<BreakdownRow> rows, plain_rows;
        const EstimateRow native = prefill(device, nullptr, &rows), int8 = prefill(device, plain_ptr, &plain_rows);
        CHECK(native.decode_s == int8.decode_s);  // one row: the mat-vec (MMVQ) in both
        CHECK(native.prefill_s < int8.prefill_s);  // half the MMA time, a quarter of the unpacking
        for (const BreakdownRow& r : rows)
            if (r.phase == "prefill" && r.op.find("_exps") != std::string::npos && r.op.find(".bias") == std::string::npos)
                CHECK(r.compute == "fp4 matrix");
            else if (r.phase == "prefill" && r.op == "attn_output")
                CHECK(r.compute == "int8 matrix");  // Q8_0 in the MXFP4_MOE mix: the int8 MMQ
        for (const BreakdownRow& r : plain_rows)
            if (r.phase == "prefill" && r.op.find("_exps") != std::string::npos && r.op.find(".bias") == std::string::npos)
                CHECK(r.compute == "int8 matrix");
    }
}

TEST_CASE("a decode kernel with a thread block per query head slows GQA decode at long contexts, not MHA decode") {
    const auto& db = roofline::test::hardware_db();
    const Device& a100 = db.get("a100-sxm-80gb");  // L2 bandwidth measured (gpu-benches)
    auto decode = [&](const char* model, const char* engine, double batch, double context) {
        const EstimatePlan plan(catalog(model), a100, PlanConfig("fp16", "f16", true, engine, 4));
        return plan.evaluate(batch, context, 256).decode_s;
    };
    // Llama-2-70B: 8 query heads per KV head; at batch 64 and 4k context the L2 re-reads outweigh the DRAM reads
    CHECK(decode("llama-2-70b", "trt-llm-0.6", 64, 4096) > 1.2 * decode("llama-2-70b", "trt-llm", 64, 4096));
    // Llama-2-7B is MHA: only the all-reduce differs (ring against two-shot), a few percent
    const double mha_old = decode("llama-2-7b", "trt-llm-0.6", 64, 4096), mha_new = decode("llama-2-7b", "trt-llm", 64, 4096);
    CHECK(mha_old == doctest::Approx(mha_new).epsilon(0.1));
}

TEST_CASE("a kernel's ALU work on a family whose instruction set compiles it longer: by_family alu_ops_scale") {
    // ggml's MMQ counted on sm_86; GA100 (sm_80) converts its sums with I2F and issues more (engine_db by_family)
    const Model m = catalog("llama-2-7b");
    const Device& a100 = roofline::test::hardware_db().get("a100-sxm-80gb");
    Device unscaled = a100;
    unscaled.family = "nvidia-ampere-ga10x";  // the architecture the count is the reference of
    const std::shared_ptr<const Engine> eng = engine("llama.cpp");
    const EngineBackend& backend = eng->on(a100);
    const LinearKernel* mmq = nullptr;
    for (const LinearKernel& k : backend.linear_kernels)
        if (k.name == "mul_mat_q (MMQ)") mmq = &k;
    REQUIRE(mmq != nullptr);
    const double scale = mmq->occupancy_on("nvidia-ampere").alu_ops_scale;
    CHECK(scale > 1.05);
    CHECK(mmq->occupancy_on("nvidia-ampere-ga10x").alu_ops_scale == 1.0);
    // op by op: the GEMM's vector seconds, nearly all its ALU (issue) work (the rest, a per-weight part, unscaled),
    // grow by the scale; its matrix seconds do not
    auto gemm_times = [&](const Device& dev) {
        PhaseOptions o = phase_options(backend, eng->id, parse_kv_format("f16"), true, 1);
        with_device(o, dev);
        const Device d = *device_for_engine(dev, backend);
        for (const auto& op : forward_ops(m, estimate_tensor_formats(m, "Q4_0"), 1, 512, 0, o))
            if (op.name == "ffn_up") return evaluate(op.cost, d, Ceilings::derated).times;
        FAIL("no ffn_up");
        return CeilingTimes{};
    };
    const CeilingTimes scaled = gemm_times(a100), plain = gemm_times(unscaled);
    CHECK(scaled.vector_s == doctest::Approx(plain.vector_s * scale).epsilon(2e-3));
    CHECK(scaled.vector_s > plain.vector_s * (1 + 0.95 * (scale - 1)));
    CHECK(scaled.matrix_s == doctest::Approx(plain.matrix_s).epsilon(1e-12));
    // the plan (its structure knows no device) applies the same scale: prefill as the op-by-op sum, and longer
    const PlanConfig cfg{"Q4_0", "f16", true, "llama.cpp", 1};
    const Reference r = reference(m, a100, cfg, 1, 512, 0);
    const Estimate e = EstimatePlan(m, a100, cfg).estimate(1, 512, 0);
    CHECK(e.prefill_s == doctest::Approx(r.prefill_s).epsilon(1e-11));
    CHECK(e.prefill_s > EstimatePlan(m, unscaled, cfg).estimate(1, 512, 0).prefill_s * 1.03);
}

TEST_CASE("activations that fit in a device's L2 pass through it: a norm's DRAM traffic vanishes below its working set") {
    // llama.cpp's graph at a 512-token micro-batch: each norm reads the residual stream the kernel before it wrote
    // (8 MiB in f32) and writes 8 MiB; the RTX 4090's L2 (67 MiB working set, 5.2 TB/s) holds that, the RTX 3090's
    // (no L2 bandwidth in its data) does not take part. A 4096-token micro-batch moves 128 MiB: DRAM again.
    const DeviceDB& db = roofline::test::hardware_db();
    const Model m = catalog("llama-2-7b");
    auto norm = [&](const char* device, double ubatch) {
        std::vector<BreakdownRow> rows;
        EstimatePlan(m, db.get(device), PlanConfig("Q4_0", "f16", true, "llama.cpp", 1, ubatch)).evaluate(1, ubatch, 0, 0, &rows);
        const auto it = std::find_if(rows.begin(), rows.end(), [](const BreakdownRow& r) { return r.op == "attn_norm"; });
        REQUIRE(it != rows.end());
        return *it;
    };
    const BreakdownRow in_l2 = norm("rtx-4090", 512), big = norm("rtx-4090", 4096), no_l2 = norm("rtx-3090", 512);
    CHECK(in_l2.bytes == 0);
    CHECK(in_l2.bound == "memory:l2");
    CHECK(big.bytes > 0);
    CHECK(big.bound == "memory:dram");
    CHECK(no_l2.bytes > 0);
    CHECK(no_l2.bound == "memory:dram");
    // the L2 way's time is the L2's: 32 norms of 16 MiB at 5.2 TB/s (derated as the device's L2 is not)
    CHECK(in_l2.seconds < 32 * (2 * 512 * 4096 * 4.0 / 5.2e12) * 1.5 + 32 * db.get("rtx-4090").efficiency.launch_overhead_s * 2);
}
