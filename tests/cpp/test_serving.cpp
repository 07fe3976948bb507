// The serving model: TensorRT-LLM's parallelism notation, the engine check, the steady state of continuous batching
// under offline / concurrency / rate loads, the memory split over TP / PP / EP / attention DP, and load validation.
#include <doctest/doctest.h>

#include "../../cpp/src/plan_impl.hpp"  // EstimatePlan::Impl: the verification attention of a plan
#include "roofline/errors.hpp"
#include "roofline/serving.hpp"
#include "test_helpers.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace roofline;
using roofline::test::catalog;

namespace {
const Device& dev(const char* id) { return roofline::test::hardware_db().get(id); }

// Models are parsed once: the catalogue files are read and parsed per call otherwise.
const Model& model(const std::string& id) {
    static std::vector<std::pair<std::string, Model>> cache;
    for (const auto& [k, m] : cache)
        if (k == id) return m;
    cache.emplace_back(id, catalog(id));
    return cache.back().second;
}

ServingConfig config(const char* engine = "vllm", const char* quant = "fp8", const char* parallel = "TP1") {
    ServingConfig c;
    c.engine = engine;
    c.quant = quant;
    c.parallel = parse_parallelism(parallel);
    return c;
}

ServingLoad load(double prompt, double gen, double concurrency = 0, double rate = 0, double requests = 0) {
    ServingLoad l;
    l.prompt_tokens = prompt;
    l.gen_tokens = gen;
    l.concurrency = concurrency;
    l.request_rate = rate;
    l.num_requests = requests;
    return l;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the InvalidArgument `f` throws ("" when it throws none).
template <class F>
std::string invalid_message(F&& f) {
    try {
        f();
    } catch (const InvalidArgument& e) {
        return e.what();
    }
    return "";
}

void check_finite_row(const ServingRow& r) {
    for (double v : {r.devices, r.output_tokens_per_s, r.output_tokens_per_s_lo, r.output_tokens_per_s_hi,
                     r.output_tokens_per_s_per_device, r.roofline_output_tokens_per_s, r.requests_per_s, r.itl_s,
                     r.itl_s_lo, r.itl_s_hi, r.tpot_s, r.running_batch, r.max_running_batch, r.max_batch, r.max_num_tokens,
                     r.prefill_chunk_tokens, r.mixed_fraction, r.decode_iteration_s, r.mixed_iteration_s,
                     r.kv_capacity_tokens, r.kv_memory_fraction, r.memory_weights, r.memory_kv_cache,
                     r.memory_activations, r.memory_reserved, r.memory_capacity, r.run_s})
        CHECK(std::isfinite(v));
    for (double v : {r.ttft_s, r.ttft_s_lo, r.ttft_s_hi, r.e2e_s}) {
        CHECK_FALSE(std::isnan(v));
        if (!r.saturated) CHECK(std::isfinite(v));
    }
}
}  // namespace

TEST_CASE("parse_parallelism reads TensorRT-LLM's notation") {
    Parallelism p = parse_parallelism("TP4");
    CHECK(p.tensor == 4);
    CHECK(p.pipeline == 1);
    CHECK(p.expert == 1);
    CHECK_FALSE(p.attention_data);
    CHECK(p.devices() == 4);
    CHECK(p.notation() == "TP4");

    p = parse_parallelism("TP2,PP2");
    CHECK(p.tensor == 2);
    CHECK(p.pipeline == 2);
    CHECK(p.devices() == 4);
    CHECK(p.notation() == "TP2,PP2");

    p = parse_parallelism("DEP8");
    CHECK(p.tensor == 8);
    CHECK(p.expert == 8);
    CHECK(p.attention_data);
    CHECK(p.devices() == 8);
    CHECK(p.notation() == "DEP8");

    p = parse_parallelism("TP8,EP8");
    CHECK(p.tensor == 8);
    CHECK(p.expert == 8);
    CHECK_FALSE(p.attention_data);
    CHECK(p.notation() == "TP8,EP8");

    p = parse_parallelism("ep4");  // EP alone: the experts over a group of 4
    CHECK(p.tensor == 4);
    CHECK(p.expert == 4);
    CHECK_FALSE(p.attention_data);

    p = parse_parallelism(" tp2 , pp4 ");  // case and spaces
    CHECK(p.tensor == 2);
    CHECK(p.pipeline == 4);
    // notation() round-trips
    for (const char* text : {"TP1", "TP4", "TP2,PP2", "DEP8", "TP8,EP8", "TP8,EP4,PP2", "DEP4,PP2"}) {
        const Parallelism a = parse_parallelism(text);
        const Parallelism b = parse_parallelism(a.notation());
        CHECK_MESSAGE(a.tensor == b.tensor, text);
        CHECK_MESSAGE(a.pipeline == b.pipeline, text);
        CHECK_MESSAGE(a.expert == b.expert, text);
        CHECK_MESSAGE(a.attention_data == b.attention_data, text);
    }
}

TEST_CASE("parse_parallelism refuses bad terms, naming them") {
    std::string m = invalid_message([] { parse_parallelism("XP2"); });
    CHECK(contains(m, "XP2"));
    m = invalid_message([] { parse_parallelism("TP0"); });
    CHECK(contains(m, "TP0"));
    m = invalid_message([] { parse_parallelism("TP4,EP3"); });
    CHECK(contains(m, "3"));
    CHECK(contains(m, "4"));
    CHECK(contains(m, "divide"));
    m = invalid_message([] { parse_parallelism("TP2,TP4"); });
    CHECK(contains(m, "TP4"));
    CHECK(contains(m, "twice"));
    for (const char* bad : {"", " ", "TP", "TPx", "TP-1", "TP2,,PP2", "DEP8,TP2", "TP1025", "PP2,PP2"})
        CHECK_MESSAGE(!invalid_message([&] { parse_parallelism(bad); }).empty(), bad);
    CHECK_THROWS_AS(parse_parallelism(std::string(65, 'T')), InvalidArgument);
}

TEST_CASE("ServingPlan refuses an engine without continuous batching, naming the serving engines") {
    const std::string m = invalid_message([] { ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), config("llama.cpp")); });
    REQUIRE_FALSE(m.empty());
    CHECK(contains(m, "llama.cpp"));
    CHECK(contains(m, "vllm"));
    CHECK(contains(m, "sglang"));
    CHECK(contains(m, "trt-llm"));
}

TEST_CASE("is_serving_engine with a split: a serving engine takes tensor parallelism or its default, nothing else") {
    CHECK(is_serving_engine("vllm", dev("h100-sxm"), "", "here"));
    CHECK(is_serving_engine("vllm", dev("h100-sxm"), "tensor", "here"));
    CHECK_FALSE(is_serving_engine("llama.cpp", dev("h100-sxm"), "layer", "here"));  // not a serving engine: no rule
    const std::string m = invalid_message([] { is_serving_engine("vllm", dev("h100-sxm"), "layer", "max_batch"); });
    CHECK(contains(m, "max_batch: engine 'vllm' serves a deployment split by \"tensor\""));
    CHECK(contains(m, "got split_mode \"layer\""));
}

TEST_CASE("serving evaluate: the offline steady state") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const ServingEstimate e = plan.estimate(load(1024, 1024));
    check_finite_row(e);
    CHECK(e.mode == "offline");
    CHECK(e.model == "llama-3.1-8b");
    CHECK(e.device == "h100-sxm");
    CHECK(e.engine == "vllm");
    CHECK(e.parallel == "TP1");
    CHECK(e.output_tokens_per_s > 0);
    CHECK(std::isfinite(e.output_tokens_per_s));
    CHECK(e.devices == 1);
    CHECK(e.output_tokens_per_s_per_device == doctest::Approx(e.output_tokens_per_s / e.devices).epsilon(1e-12));
    CHECK(e.roofline_output_tokens_per_s >= e.output_tokens_per_s);
    CHECK(e.running_batch <= e.max_running_batch);
    CHECK(e.running_batch == e.max_running_batch);  // max load fills the scheduler
    CHECK(e.output_tokens_per_s_lo <= e.output_tokens_per_s);
    CHECK(e.output_tokens_per_s <= e.output_tokens_per_s_hi);
    CHECK(e.requests_per_s == doctest::Approx(e.output_tokens_per_s / 1024).epsilon(1e-12));
    CHECK(e.run_s == 0);
    CHECK_FALSE(e.saturated);
    CHECK(e.mixed_iteration_s >= e.decode_iteration_s);
    CHECK(e.itl_s >= e.decode_iteration_s);
    CHECK(e.itl_s <= e.mixed_iteration_s);
    CHECK(e.mixed_fraction > 0);
    CHECK(e.mixed_fraction <= 1);
    CHECK(e.memory_weights + e.memory_kv_cache + e.memory_activations + e.memory_reserved <= e.memory_capacity);
    bool decode = false, mixed = false;
    for (const BreakdownRow& r : e.breakdown) {
        decode = decode || r.phase == "decode iteration";
        mixed = mixed || r.phase == "mixed iteration";
    }
    CHECK(decode);
    CHECK(mixed);
    // estimate() and evaluate() agree
    const ServingRow r = plan.evaluate(load(1024, 1024));
    CHECK(r.output_tokens_per_s == e.output_tokens_per_s);
    CHECK(r.itl_s == e.itl_s);
    // serve() is ServingPlan(...).estimate(...)
    CHECK(serve(model("llama-3.1-8b"), dev("h100-sxm"), config(), load(1024, 1024)).output_tokens_per_s == e.output_tokens_per_s);
}

TEST_CASE("serving evaluate: one client runs alone") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const ServingEstimate e = plan.estimate(load(1024, 1024, 1));
    check_finite_row(e);
    CHECK(e.mode == "concurrency");
    CHECK(e.running_batch == doctest::Approx(1).epsilon(0.01));
    // its ITL: a decode iteration of one, now and then carrying its own next prompt
    CHECK(e.itl_s >= e.decode_iteration_s);
    CHECK(e.itl_s == doctest::Approx(e.decode_iteration_s).epsilon(0.05));
    CHECK(e.roofline_output_tokens_per_s >= e.output_tokens_per_s);
    // one client's throughput: gen tokens per request latency
    CHECK(e.output_tokens_per_s == doctest::Approx(1024 / e.e2e_s).epsilon(1e-9));
}

TEST_CASE("serving evaluate: invariants along the concurrency curve") {
    for (const char* eng : {"vllm", "sglang", "trt-llm"}) {
        CAPTURE(eng);
        const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config(eng));
        const double cap = plan.evaluate(load(1024, 1024)).max_running_batch;
        double prev_ttft = 0;
        for (double c = 1; c <= 1024; c *= 2) {
            CAPTURE(c);
            const ServingRow r = plan.evaluate(load(1024, 1024, c));
            check_finite_row(r);
            CHECK_FALSE(r.saturated);  // a closed loop never grows a queue without bound
            CHECK(r.running_batch <= r.max_running_batch);
            CHECK(r.running_batch <= c);
            CHECK(r.roofline_output_tokens_per_s >= r.output_tokens_per_s);
            CHECK(r.output_tokens_per_s_per_device == doctest::Approx(r.output_tokens_per_s / r.devices).epsilon(1e-12));
            CHECK(r.ttft_s >= prev_ttft);  // more clients never lower the TTFT
            prev_ttft = r.ttft_s;
        }
        // past the scheduler's limit the clients queue: TTFT grows with them, the batch stays at the limit
        const ServingRow at2 = plan.evaluate(load(1024, 1024, 2 * cap));
        const ServingRow at4 = plan.evaluate(load(1024, 1024, 4 * cap));
        const ServingRow half = plan.evaluate(load(1024, 1024, std::floor(cap / 2)));
        CHECK(at2.running_batch == cap);
        CHECK(at4.running_batch == cap);
        CHECK(at4.ttft_s > at2.ttft_s);
        CHECK(at2.ttft_s > half.ttft_s);
        CHECK(at4.ttft_s > at4.e2e_s - at4.ttft_s);  // queueing outlasts the decode at 4x the limit
        CHECK(at4.output_tokens_per_s == doctest::Approx(at2.output_tokens_per_s).epsilon(1e-9));
    }
}

TEST_CASE("serving evaluate: more concurrency never lowers throughput (trt-llm, llama-3.1-8b on h100)") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config("trt-llm"));
    double prev = 0;
    for (double c = 1; c <= 1024; c *= 2) {
        CAPTURE(c);
        const double t = plan.evaluate(load(1024, 1024, c)).output_tokens_per_s;
        CHECK(t >= prev * (1 - 1e-12));
        prev = t;
    }
}

// vLLM and SGLang on H100, and vLLM on H200, serve fewer tokens/s at their KV limit than at 256 clients: the decode
// GEMMs at M > 256 rows cross a wave of 128x128 tiles (gemm_utilization), the iteration jumps ~11% and the
// throughput B / t(B) drops; the offline steady state / saturated closed loop still runs the whole KV limit.
TEST_CASE("KNOWN BUG serving: more concurrency lowers throughput past 256 clients (vllm, llama-3.1-8b on h100)" *
          doctest::skip()) {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config("vllm"));
    double prev = 0;
    for (double c = 1; c <= 1024; c *= 2) {
        CAPTURE(c);
        const double t = plan.evaluate(load(1024, 1024, c)).output_tokens_per_s;
        CHECK(t >= prev * (1 - 1e-12));  // 256 clients: 10528 tok/s; 512 and 1024: 10457
        prev = t;
    }
}

TEST_CASE("serving evaluate: Poisson arrivals") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const double capacity = plan.evaluate(load(1024, 1024)).requests_per_s;
    for (double f : {0.05, 0.3, 0.7, 0.95}) {
        CAPTURE(f);
        const ServingRow r = plan.evaluate(load(1024, 1024, 0, f * capacity));
        check_finite_row(r);
        CHECK_FALSE(r.saturated);
        CHECK(r.output_tokens_per_s == doctest::Approx(f * capacity * 1024).epsilon(1e-12));
        CHECK(r.requests_per_s == doctest::Approx(f * capacity).epsilon(1e-12));
        CHECK(std::isfinite(r.ttft_s));
        CHECK(r.e2e_s > r.ttft_s);
        CHECK(r.running_batch <= r.max_running_batch);
        CHECK(r.roofline_output_tokens_per_s >= r.output_tokens_per_s);
    }
    for (double f : {1.01, 2.0, 100.0}) {
        CAPTURE(f);
        const ServingEstimate e = plan.estimate(load(1024, 1024, 0, f * capacity));
        check_finite_row(e);
        CHECK(e.mode == "rate");
        CHECK(e.saturated);
        CHECK(std::isinf(e.ttft_s));
        CHECK(e.ttft_s > 0);
        CHECK(std::isinf(e.e2e_s));
        CHECK_FALSE(std::isnan(e.tpot_s));
        CHECK_FALSE(std::isnan(e.ttft_s_lo));
        CHECK_FALSE(std::isnan(e.ttft_s_hi));
        CHECK(e.running_batch == e.max_running_batch);
        CHECK(std::isfinite(e.output_tokens_per_s));
        CHECK(e.output_tokens_per_s <= f * capacity * 1024);
    }
}

TEST_CASE("serving evaluate: a finite offline run") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const ServingRow steady = plan.evaluate(load(1024, 1024));
    for (double n : {1.0, 10.0, 100.0}) {
        CAPTURE(n);
        const ServingEstimate e = plan.estimate(load(1024, 1024, 0, 0, n));
        check_finite_row(e);
        CHECK(e.mode == "offline");
        CHECK(e.run_s > 0);
        CHECK(e.output_tokens_per_s == doctest::Approx(n * 1024 / e.run_s).epsilon(1e-9));
        CHECK(e.output_tokens_per_s < steady.output_tokens_per_s);
        CHECK(e.running_batch <= e.max_running_batch);
    }
}

// The ramp-up prices its ceil(B·ISL / max_num_tokens) iterations as full-budget prefill passes (it once priced
// them at a one-prompt chunk and a finite run beat the steady state: N = 336 gave 11824 tok/s against 10457).
TEST_CASE("serving: a finite offline run of many requests is not faster than the steady state") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const ServingRow steady = plan.evaluate(load(1024, 1024));
    for (double n : {336.0, 1000.0, 10000.0}) {
        CAPTURE(n);
        const ServingRow r = plan.evaluate(load(1024, 1024, 0, 0, n));
        CHECK(r.run_s > 0);
        // at exactly the scheduler's limit (336: one synchronized wave) within half a percent of the staggered
        // steady state, below it beyond
        CHECK(r.output_tokens_per_s < steady.output_tokens_per_s * (n <= 336 ? 1.005 : 1.0));
    }
}

TEST_CASE("serving evaluate: what limits the running batch") {
    std::string limit;
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    const ServingRow r = plan.evaluate(load(1024, 1024), nullptr, &limit);
    CHECK(limit == "kv_cache");  // 8B in fp8 with 2048-token requests on 80 GB: ~336 requests, under vLLM's 1024
    CHECK(r.max_running_batch < r.max_batch);
    // long requests fill the cache sooner
    CHECK(plan.estimate(load(8192, 8192), false).batch_limit == "kv_cache");
    CHECK(plan.evaluate(load(8192, 8192)).max_running_batch < r.max_running_batch);

    ServingConfig small = config();
    small.max_batch = 8;
    const ServingEstimate e = ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), small).estimate(load(1024, 1024));
    CHECK(e.batch_limit == "max_batch");
    CHECK(e.max_running_batch == 8);
    CHECK(e.running_batch == 8);
    CHECK(e.output_tokens_per_s < r.output_tokens_per_s);
}

TEST_CASE("serving memory: pipeline and tensor parallel split the weights") {
    const Model& m = model("llama-3.3-70b");
    const ServingRow pp1 = ServingPlan(m, dev("h200-sxm"), config("vllm", "fp8", "TP1")).evaluate(load(1024, 1024));
    const ServingRow pp2 = ServingPlan(m, dev("h200-sxm"), config("vllm", "fp8", "PP2")).evaluate(load(1024, 1024));
    const ServingRow tp2 = ServingPlan(m, dev("h200-sxm"), config("vllm", "fp8", "TP2")).evaluate(load(1024, 1024));
    const ServingRow tp2pp2 = ServingPlan(m, dev("h200-sxm"), config("vllm", "fp8", "TP2,PP2")).evaluate(load(1024, 1024));
    for (const ServingRow* r : {&pp1, &pp2, &tp2, &tp2pp2}) check_finite_row(*r);
    CHECK(pp2.devices == 2);
    CHECK(tp2.devices == 2);
    CHECK(tp2pp2.devices == 4);
    CHECK(pp2.memory_weights == doctest::Approx(pp1.memory_weights / 2).epsilon(1e-12));
    // tensor parallel replicates the norms (and what is not split): a little over half
    CHECK(tp2.memory_weights >= pp1.memory_weights / 2);
    CHECK(tp2.memory_weights < 0.52 * pp1.memory_weights);
    CHECK(tp2pp2.memory_weights == doctest::Approx(tp2.memory_weights / 2).epsilon(1e-12));
    // what the weights free goes to the KV cache
    CHECK(pp2.kv_capacity_tokens > pp1.kv_capacity_tokens);
    CHECK(tp2.kv_capacity_tokens > pp1.kv_capacity_tokens);
    // more devices serve more
    CHECK(tp2.output_tokens_per_s > pp1.output_tokens_per_s);
    CHECK(pp2.output_tokens_per_s > pp1.output_tokens_per_s);
    CHECK(tp2.output_tokens_per_s_per_device == doctest::Approx(tp2.output_tokens_per_s / 2).epsilon(1e-12));
    CHECK(tp2pp2.output_tokens_per_s_per_device == doctest::Approx(tp2pp2.output_tokens_per_s / 4).epsilon(1e-12));
}

TEST_CASE("serving: attention data parallel with expert parallel on a MoE model") {
    for (const char* eng : {"trt-llm", "vllm", "sglang"}) {
        CAPTURE(eng);
        const ServingPlan plan(model("qwen3-235b-a22b"), dev("h200-sxm"), config(eng, "fp8", "DEP8"));
        const ServingEstimate e = plan.estimate(load(1024, 1024));
        check_finite_row(e);
        CHECK(e.parallel == "DEP8");
        CHECK(e.devices == 8);
        CHECK(e.output_tokens_per_s > 0);
        CHECK(e.roofline_output_tokens_per_s >= e.output_tokens_per_s);
        CHECK(e.output_tokens_per_s_per_device == doctest::Approx(e.output_tokens_per_s / 8).epsilon(1e-12));
        CHECK(e.running_batch <= e.max_running_batch);
        CHECK(e.memory_weights < e.memory_capacity);
    }
    // DEP splits only the experts: each rank holds the attention whole, more than an eighth of the model
    const ServingRow dep = ServingPlan(model("qwen3-30b-a3b"), dev("h100-sxm"), config("trt-llm", "fp8", "DEP8")).evaluate(load(1024, 1024));
    const ServingRow tp1 = ServingPlan(model("qwen3-30b-a3b"), dev("h100-sxm"), config("trt-llm", "fp8", "TP1")).evaluate(load(1024, 1024));
    check_finite_row(dep);
    CHECK(dep.memory_weights < tp1.memory_weights);
    CHECK(dep.memory_weights > tp1.memory_weights / 8);
    // a dense model has no experts to split
    CHECK(contains(invalid_message([] { ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), config("vllm", "fp8", "DEP8")); }),
                   "experts"));
}

// Every MoE model under a concurrency (>= 2 clients) or a request-rate load throws: the closed-loop / Little's law
// running batch is fractional (1.997 for 2 clients) and EstimatePlan's MoE expert count (expected_active_experts,
// ops/linear.cpp) refuses a token count that is not whole: "tokens must be a whole number >= 0, got 1.99707".
TEST_CASE("serving: MoE models under concurrency or request_rate at a fractional mean batch") {
    const ServingPlan plan(model("qwen3-30b-a3b"), dev("h100-sxm"), config());
    for (double c : {2.0, 8.0, 64.0}) {
        CAPTURE(c);
        CHECK_NOTHROW(plan.evaluate(load(1024, 1024, c)));
    }
    CHECK_NOTHROW(plan.evaluate(load(1024, 1024, 0, 0.8)));
    const ServingPlan dep(model("qwen3-30b-a3b"), dev("h100-sxm"), config("trt-llm", "fp8", "DEP8"));
    CHECK_NOTHROW(dep.evaluate(load(1024, 1024, 64)));
}

// When the token budget bounds the prefill chunk (room = max_num_tokens - b < waiting prompt tokens), a fractional
// running batch b gives a fractional chunk and the attention op throws: "attention seq_q must be a whole number >=
// 0, got 8160.05" (llama-3.1-8b, 8192-token prompts, vLLM's 8192-token budget, 32 clients; also request_rate 0.5
// and a finite offline run, whose drain evaluates at B / 2 = 29.5).
TEST_CASE("serving: a budget-bound prefill chunk at a fractional mean batch") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    CHECK_NOTHROW(plan.evaluate(load(8192, 1024, 32)));
    CHECK_NOTHROW(plan.evaluate(load(8192, 1024, 0, 0.5)));
    CHECK_NOTHROW(plan.evaluate(load(8192, 1024, 0, 0, 1000)));
}

TEST_CASE("serving formats: nvfp4 without fp4 units") {
    // vLLM runs NVFP4 weights through Marlin's W4A16 where FP4 tensor cores are missing
    const ServingEstimate v = serve(model("llama-3.1-8b"), dev("h100-sxm"), config("vllm", "nvfp4"), load(1024, 1024));
    check_finite_row(v);
    CHECK(v.output_tokens_per_s > 0);
    CHECK(v.memory_weights < serve(model("llama-3.1-8b"), dev("h100-sxm"), config("vllm", "fp8"), load(1024, 1024)).memory_weights);
    // TensorRT-LLM has no such fallback: Hopper has no fp4 peak
    CHECK_THROWS_AS(ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), config("trt-llm", "nvfp4")).evaluate(load(1024, 1024)),
                    NotFound);
    // on Blackwell both run
    CHECK(serve(model("llama-3.1-8b"), dev("b200"), config("trt-llm", "nvfp4"), load(1024, 1024)).output_tokens_per_s > 0);
}

TEST_CASE("serving memory: gpu_memory_fraction sizes the KV cache") {
    const ServingRow base = ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), config()).evaluate(load(1024, 1024));
    double prev = 0;
    for (double f : {0.3, 0.5, 0.7, 0.95}) {
        CAPTURE(f);
        ServingConfig c = config();
        c.gpu_memory_fraction = f;
        const ServingRow r = ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), c).evaluate(load(1024, 1024));
        CHECK(r.kv_capacity_tokens > prev);
        if (f < 0.92) CHECK(r.kv_capacity_tokens < base.kv_capacity_tokens);  // vLLM's default: 0.92
        prev = r.kv_capacity_tokens;
    }
    ServingConfig c = config();
    c.gpu_memory_fraction = 1.5;
    CHECK(contains(invalid_message([&] { ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), c); }), "gpu_memory_fraction"));
    c.gpu_memory_fraction = 0.05;  // too little for the weights
    CHECK_THROWS_AS(ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), c), InvalidArgument);
}

TEST_CASE("serving loads: bad values throw InvalidArgument naming the field") {
    const ServingPlan plan(model("llama-3.1-8b"), dev("h100-sxm"), config());
    CHECK(contains(invalid_message([&] { plan.evaluate(load(0, 128)); }), "prompt_tokens"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 0)); }), "gen_tokens"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(1.5, 128)); }), "prompt_tokens"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, 4, 1.0)); }), "concurrency and request_rate"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, 2.5)); }), "concurrency"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, -1)); }), "concurrency"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, 0, -1)); }), "request_rate"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, 0, std::nan(""))); }), "request_rate"));
    CHECK(contains(invalid_message([&] { plan.evaluate(load(128, 128, 0, 0, 1.5)); }), "num_requests"));
    const std::string ctx = invalid_message([&] { plan.evaluate(load(131000, 100)); });
    CHECK(contains(ctx, "131072"));
    CHECK(contains(ctx, "llama-3.1-8b"));
    CHECK_NOTHROW(plan.evaluate(load(130000, 1072)));  // exactly the context
    // a model that does not fit
    const std::string fit = invalid_message([] { ServingPlan(model("llama-3.3-70b"), dev("h100-sxm"), config("vllm", "bf16")); });
    CHECK(contains(fit, "llama-3.3-70b"));
    CHECK(contains(fit, "fit"));
    // parallelism the model refuses
    CHECK(contains(invalid_message([] { ServingPlan(model("llama-3.1-8b"), dev("h100-sxm"), config("vllm", "fp8", "PP64")); }),
                   "pipeline_parallel"));
}

TEST_CASE("mtp_module: DeepSeek-R1's multi-token-prediction layer as a model of its own") {
    const Model& r1 = model("deepseek-r1");
    REQUIRE(r1.arch.n_nextn_layer == 1);  // config.json num_nextn_predict_layers
    const Model mtp = mtp_module(r1);
    CHECK(mtp.arch.n_layer == 1);
    CHECK(mtp.arch.moe_layer == std::vector<bool>{true});
    CHECK(mtp.arch.n_nextn_layer == 0);
    // DeepSeek-V3's README: 671B main model + 14B MTP module (685B on the hub); one MoE layer (256 experts of
    // 3 x 7168 x 2048), its MLA, the eh_proj and its own embedding and head
    CHECK(mtp.parameters() > 13.0e9);
    CHECK(mtp.parameters() < 14.5e9);
    bool proj = false;
    for (const WeightTensor& t : mtp.tensors)
        if (t.role == "mtp_eh_proj") proj = t.shape == std::vector<double>{2 * 7168.0, 7168.0};
    CHECK(proj);
    CHECK(contains(invalid_message([] { (void)mtp_module(model("llama-3.1-8b")); }), "no multi-token-prediction module"));
}

TEST_CASE("serving with MTP speculative decoding: tokens per iteration, latency, memory") {
    const Model& r1 = model("deepseek-r1");
    const Device& h200 = dev("h200-sxm");
    ServingConfig base = config("vllm", "fp8", "TP8");
    const ServingPlan plain(r1, h200, base);
    ServingConfig sure = base, likely = base, never = base;
    sure.mtp_tokens = likely.mtp_tokens = never.mtp_tokens = 1;
    sure.acceptance = 1;
    likely.acceptance = 0.85;
    never.acceptance = 0;
    const ServingPlan all(r1, h200, sure), most(r1, h200, likely), none(r1, h200, never);
    const ServingLoad one = load(1000, 1000, 1);
    const ServingRow p = plain.evaluate(one), a = all.evaluate(one), m = most.evaluate(one), n = none.evaluate(one);
    check_finite_row(a);
    CHECK(p.tokens_per_decode_iteration == 1);
    CHECK(a.tokens_per_decode_iteration == doctest::Approx(2));
    CHECK(m.tokens_per_decode_iteration == doctest::Approx(1.85));
    CHECK(n.tokens_per_decode_iteration == doctest::Approx(1));
    // an iteration verifies two tokens and drafts one: longer than a plain one, but it yields two tokens
    CHECK(a.decode_iteration_s > p.decode_iteration_s);
    CHECK(a.itl_s == doctest::Approx(a.decode_iteration_s / 2).epsilon(0.05));
    CHECK(a.output_tokens_per_s > m.output_tokens_per_s);
    CHECK(m.output_tokens_per_s > 1.2 * p.output_tokens_per_s);  // one client: memory-bound, the drafts pay off
    CHECK(n.output_tokens_per_s < p.output_tokens_per_s);        // every draft rejected: pure cost
    CHECK(a.tpot_s < p.tpot_s);
    // the module's weights and its layer's cache
    CHECK(a.memory_weights > p.memory_weights + 1e9);
    CHECK(a.kv_capacity_tokens < p.kv_capacity_tokens);
    // offline max load and attention data parallel run too
    for (const char* par : {"TP8", "DEP8"}) {
        ServingConfig c = likely;
        c.parallel = parse_parallelism(par);
        const ServingRow r = ServingPlan(r1, h200, c).evaluate(load(1000, 1000));
        check_finite_row(r);
        CHECK(r.tokens_per_decode_iteration == doctest::Approx(1.85));
    }
}

TEST_CASE("serving with MTP: bad settings throw InvalidArgument naming them") {
    const Device& h200 = dev("h200-sxm");
    auto with = [&](const char* model_id, double k, double alpha, const char* par = "TP8") {
        ServingConfig c = config("vllm", "fp8", par);
        c.mtp_tokens = k;
        c.acceptance = alpha;
        return invalid_message([&] { (void)ServingPlan(model(model_id), h200, c); });
    };
    CHECK(contains(with("llama-3.1-8b", 1, 0.8, "TP1"), "no multi-token-prediction module"));
    CHECK(contains(with("deepseek-r1", 1.5, 0.8), "mtp_tokens must be a whole number within [0, 16]"));
    CHECK(contains(with("deepseek-r1", 17, 0.8), "mtp_tokens must be a whole number within [0, 16]"));
    CHECK(contains(with("deepseek-r1", -1, 0.8), "mtp_tokens"));
    CHECK(contains(with("deepseek-r1", 1, 1.5), "acceptance must be within [0, 1]"));
    CHECK(contains(with("deepseek-r1", 1, std::nan("")), "mtp_tokens 1 needs acceptance"));  // NaN: not given
    CHECK(contains(with("deepseek-r1", 1, -0.1), "acceptance must be within [0, 1]"));
    CHECK(contains(with("deepseek-r1", 0, 0.5), "without mtp_tokens"));
    CHECK(contains(with("deepseek-r1", 1, 0.8, "TP4,PP2"), "pipeline_parallel 2 is not modelled"));
}

TEST_CASE("serving with MTP: verification attention reads the cache once and computes per token") {
    // attention data parallel: every rank holds all 128 heads, so MLA decode attention is near compute-bound and
    // verifying 1 + k tokens costs FLOPs k + 1 times a token's
    const Model& r1 = model("deepseek-r1");
    const Device& h200 = dev("h200-sxm");
    ServingConfig c = config("vllm", "fp8", "DEP8");
    const ServingPlan plain(r1, h200, c);
    c.mtp_tokens = 2;
    c.acceptance = 0.85;
    const ServingPlan mtp(r1, h200, c);
    const EstimatePlan::Impl& p = plain.plan().impl();
    const PhaseSums one = p.decode_attention(64, 8192), three = p.verify_attention(64, 8192, 3);
    CHECK(three.flops == doctest::Approx(3 * one.flops).epsilon(1e-6));
    CHECK(three.bytes < 1.5 * one.bytes);  // the cache once; q and o three times
    CHECK(three.seconds > one.seconds);
    // a long context: the iteration with two drafts costs more than a plain one, yet yields more tokens per second
    const ServingRow a = plain.evaluate(load(8000, 1000, 64)), b = mtp.evaluate(load(8000, 1000, 64));
    CHECK(b.decode_iteration_s > a.decode_iteration_s);
    CHECK(b.tokens_per_decode_iteration == doctest::Approx((1 - 0.85 * 0.85 * 0.85) / (1 - 0.85)));
    // one generated token after the first still takes a whole iteration
    const ServingRow two = mtp.evaluate(load(1000, 2, 1));
    CHECK(two.e2e_s - two.ttft_s == doctest::Approx(two.itl_s * two.tokens_per_decode_iteration).epsilon(1e-9));
}
