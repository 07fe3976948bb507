#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/inference.hpp"
#include "roofline/sweep.hpp"
#include "roofline/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using namespace roofline;

namespace {
std::string sweep_model_file(const std::string& id) {
    std::ifstream in(std::string(ROOFLINE_TEST_HARDWARE_DB) + "/../model_db/" + id + ".json");
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
Model sweep_model(const std::string& id) { return Model::from_catalog_entry(sweep_model_file(id), id + ".json"); }

const DeviceDB& sweep_db() {
    static const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    return db;
}

// The estimator's times the slow way: every op of every step built and evaluated one by one (forward_ops), decode
// summed step by step. What the plan's closed forms must reproduce.
struct Reference {
    double prefill_s = 0, prefill_ideal_s = 0, decode_s = 0, decode_ideal_s = 0;
};
Reference reference(const Model& m, const Device& device, const PlanConfig& cfg, double batch, double prompt, double gen) {
    const Engine eng = engine(cfg.engine);
    Device d = device;
    d.efficiency.launch_overhead_s *= eng.launch_overhead_scale;
    PhaseOptions o;
    o.activation = parse_format(eng.activation);
    o.kv = to_lower(cfg.kv_dtype) == "f16" ? format_of(DType::fp16) : parse_format(cfg.kv_dtype);
    o.attention = cfg.flash_attention ? ops::AttentionKind::flash : ops::AttentionKind::standard;
    if (cfg.flash_attention) {
        o.sram_bytes = device.sram_per_unit_bytes();
        o.l2_bytes = device.has_level(Level::l2) ? device.capacity(Level::l2) : 0.0;
    }
    o.logits_last_token_only = eng.logits_last_token_only;
    o.dequant_tile_rows = eng.dequant_tile_rows;
    o.tensor_parallel = cfg.tensor_parallel;
    o.gemv_max_rows = eng.gemv_max_rows;
    o.gemm_tile_m = eng.gemm_tile_m;
    o.gemm_tile_n = eng.gemm_tile_n;
    o.compute_units = device.compute_units;
    const auto formats = EstimatePlan::formats_for(m, cfg.quant);
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

void check_rows_equal(const EstimateRow& a, const EstimateRow& b) {
    const double x[] = {a.batch, a.prompt_tokens, a.gen_tokens, a.prefill_s, a.prefill_tokens_per_s, a.ttft_s, a.decode_s,
                        a.decode_tokens_per_s, a.decode_tokens_per_s_total, a.total_s, a.ceiling_decode_weights,
                        a.ceiling_decode, a.ceiling_prefill, a.decode_intensity, a.compute_bound_batch,
                        a.memory.weights, a.memory.kv_cache, a.memory.activations, a.memory.overhead, a.memory.total,
                        a.memory.capacity, a.max_batch, a.max_context};
    const double y[] = {b.batch, b.prompt_tokens, b.gen_tokens, b.prefill_s, b.prefill_tokens_per_s, b.ttft_s, b.decode_s,
                        b.decode_tokens_per_s, b.decode_tokens_per_s_total, b.total_s, b.ceiling_decode_weights,
                        b.ceiling_decode, b.ceiling_prefill, b.decode_intensity, b.compute_bound_batch,
                        b.memory.weights, b.memory.kv_cache, b.memory.activations, b.memory.overhead, b.memory.total,
                        b.memory.capacity, b.max_batch, b.max_context};
    for (std::size_t i = 0; i < sizeof x / sizeof x[0]; ++i) {
        CAPTURE(i);
        CHECK(same_bits(x[i], y[i]));
    }
    CHECK(a.memory.fits == b.memory.fits);
    CHECK(a.prefill_bound == b.prefill_bound);
    CHECK(a.decode_bound == b.decode_bound);
}
}  // namespace

TEST_CASE("estimate plans reproduce the op-by-op, step-by-step estimator") {
    const DeviceDB& db = sweep_db();
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
    };
    for (const auto& c : cases) {
        CAPTURE(c.model);
        CAPTURE(c.device);
        const Model m = sweep_model(c.model);
        const Device& d = db.get(c.device);
        const EstimatePlan plan(m, d, c.cfg);
        const EstimateRow e = plan.evaluate(c.batch, c.prompt, c.gen);
        // a plan from a shared structure is the same plan
        check_rows_equal(e, EstimatePlan(d, EstimatePlan::structure(m, c.cfg)).evaluate(c.batch, c.prompt, c.gen));
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
    const Model m = sweep_model("gemma-2-9b");
    const EstimatePlan plan(m, sweep_db().get("h100-sxm"), PlanConfig{});
    // 10⁶ steps across the window boundary: finite, and the per-step mean between the first and last step
    const EstimateRow e = plan.evaluate(4, 1024, 1e6);
    const EstimateRow first = plan.evaluate(4, 1024, 1), last = plan.evaluate(4, 1024 + 1e6 - 1, 1);
    CHECK(std::isfinite(e.decode_s));
    CHECK(e.decode_s / 1e6 >= first.decode_s);
    CHECK(e.decode_s / 1e6 <= last.decode_s);
}

TEST_CASE("sweep rows equal single estimates, bit for bit, whatever the thread count") {
    const DeviceDB& db = sweep_db();
    const Model llama = sweep_model("llama-3.1-8b"), gemma = sweep_model("gemma-3-4b"), moe = sweep_model("qwen3-30b-a3b");
    SweepAxes a;
    a.models = {&llama, &gemma, &moe};
    a.quants = {"Q4_K_M", "BF16"};
    a.devices = {&db.get("h100-sxm"), &db.get("m4-pro-20c")};
    a.engines = {"llama.cpp", "cuda-graphs"};
    a.kv_dtypes = {"f16", "q8_0"};
    a.flash_attention = {0, 1};
    a.tensor_parallel = {1};
    a.batch = {1, 8, 9, 33};
    a.prompt_tokens = {0, 1, 700};
    a.gen_tokens = {1, 300};
    SweepOptions one;
    one.threads = 1;
    const SweepTable t = sweep(a, one);
    REQUIRE(t.rows == 3 * 2 * 2 * 2 * 2 * 2 * 4 * 3 * 2);
    CHECK(t.plans == 96);
    // every row is the plan's estimate of that point
    std::size_t checked = 0;
    for (std::size_t r = 0; r < t.rows; r += 7) {
        const EstimatePlan plan(*a.models[static_cast<std::size_t>(t.model[r])], *a.devices[static_cast<std::size_t>(t.device[r])],
                                PlanConfig{a.quants[static_cast<std::size_t>(t.quant[r])], a.kv_dtypes[static_cast<std::size_t>(t.kv_dtype[r])],
                                           t.flash_attention[r] != 0, a.engines[static_cast<std::size_t>(t.engine[r])], 1});
        const auto& cols = sweep_columns();
        auto col = [&](const char* name) {
            return t.columns[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin())][r];
        };
        const EstimateRow e = plan.evaluate(col("batch"), col("prompt_tokens"), col("gen_tokens"));
        const std::vector<double> values = sweep_row_values(plan, e);
        for (std::size_t k = 0; k < cols.size(); ++k) {
            CAPTURE(cols[k]);
            CHECK(same_bits(values[k], t.columns[k][r]));
        }
        CHECK(t.fits[r] == (e.memory.fits ? 1 : 0));
        CHECK(t.prefill_bound[r] == static_cast<std::uint8_t>(e.prefill_bound));
        CHECK(t.decode_bound[r] == static_cast<std::uint8_t>(e.decode_bound));
        ++checked;
    }
    CHECK(checked > 100);
    for (int threads : {2, 3, 8}) {
        CAPTURE(threads);
        SweepOptions o;
        o.threads = threads;
        const SweepTable u = sweep(a, o);
        REQUIRE(u.rows == t.rows);
        for (std::size_t k = 0; k < t.columns.size(); ++k)
            CHECK(std::memcmp(t.columns[k].data(), u.columns[k].data(), t.rows * sizeof(double)) == 0);
        CHECK(u.model == t.model);
        CHECK(u.device == t.device);
        CHECK(u.decode_bound == t.decode_bound);
    }
    // prompts without generation
    {
        SweepAxes b = a;
        b.prompt_tokens = {1, 700};
        b.gen_tokens = {0};
        const SweepTable u = sweep(b, one);
        REQUIRE(u.rows == 96 * 4 * 2);
        for (std::size_t r = 0; r < u.rows; r += 37) {
            const EstimatePlan plan(*b.models[static_cast<std::size_t>(u.model[r])], *b.devices[static_cast<std::size_t>(u.device[r])],
                                    PlanConfig{b.quants[static_cast<std::size_t>(u.quant[r])], b.kv_dtypes[static_cast<std::size_t>(u.kv_dtype[r])],
                                               u.flash_attention[r] != 0, b.engines[static_cast<std::size_t>(u.engine[r])], 1});
            const std::vector<double> values = sweep_row_values(plan, plan.evaluate(u.columns[3][r], u.columns[4][r], 0));
            for (std::size_t k = 0; k < values.size(); ++k) CHECK(same_bits(values[k], u.columns[k][r]));
        }
    }
    // rows as nested loops, batch fastest
    CHECK(t.columns[3][0] == 1);
    CHECK(t.columns[3][1] == 8);
    CHECK(t.model.back() == 2);

    // explicit points: the same values, in the points' order
    SweepPoints p;
    for (std::size_t r : {std::size_t{5}, std::size_t{0}, t.rows - 1, std::size_t{100}}) {
        p.model.push_back(static_cast<std::uint32_t>(t.model[r]));
        p.quant.push_back(static_cast<std::uint32_t>(t.quant[r]));
        p.device.push_back(static_cast<std::uint32_t>(t.device[r]));
        p.engine.push_back(static_cast<std::uint32_t>(t.engine[r]));
        p.kv_dtype.push_back(static_cast<std::uint32_t>(t.kv_dtype[r]));
        p.flash_attention.push_back(t.flash_attention[r]);
        p.tensor_parallel.push_back(0);
        p.batch.push_back(t.columns[3][r]);
        p.prompt_tokens.push_back(t.columns[4][r]);
        p.gen_tokens.push_back(t.columns[5][r]);
    }
    const SweepTable pt = sweep(a, p, one);
    REQUIRE(pt.rows == 4);
    const std::size_t rows[] = {5, 0, t.rows - 1, 100};
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(pt.point[i] == static_cast<std::int64_t>(i));
        for (std::size_t k = 0; k < t.columns.size(); ++k) CHECK(same_bits(pt.columns[k][i], t.columns[k][rows[i]]));
    }
}

TEST_CASE("sweep: bad axes and configurations are clear errors, or skipped") {
    const DeviceDB& db = sweep_db();
    const Model llama = sweep_model("llama-3.1-8b");
    SweepAxes a;
    a.models = {&llama};
    a.quants = {"Q4_K_M"};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("'devices' must list at least one value"), InvalidArgument);
    a.devices = {&db.get("h100-sxm"), &db.get("m4-pro-20c")};
    a.prompt_tokens = {0};
    a.gen_tokens = {0, 5};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("nothing to estimate"), InvalidArgument);
    a.prompt_tokens = {64};
    a.batch = {0};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("batch must be >= 1"), InvalidArgument);
    a.batch = {1, 2};
    a.tensor_parallel = {1, 2};
    // M4 Pro lists no interconnect: tensor parallel 2 names the configuration
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("device 'm4-pro-20c'"), InvalidArgument);
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("tensor_parallel 2 needs an interconnect"), InvalidArgument);
    SweepOptions skip;
    skip.skip_invalid = true;
    const SweepTable t = sweep(a, skip);
    CHECK(t.plans == 3);
    CHECK(t.rows == 3 * 2 * 2);
    REQUIRE(t.skipped.size() == 1);
    CHECK(t.skipped[0].find("m4-pro-20c") != std::string::npos);
    a.quants = {"Q4_K_X"};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("quantization 'Q4_K_X'"), NotFound);
    // an error met while estimating (counts beyond what one operator may hold) reaches the caller from any thread
    a.quants = {"Q4_K_M"};
    a.tensor_parallel = {1};
    a.prompt_tokens = {512, 1e15};
    a.gen_tokens = {1};
    SweepOptions four;
    four.threads = 4;
    CHECK_THROWS_AS(sweep(a, four), InvalidArgument);
}

TEST_CASE("inverse: the largest batch meeting a time-per-token target, checked at the answer and one beyond") {
    const DeviceDB& db = sweep_db();
    const Model m = sweep_model("llama-3.1-8b");
    const EstimatePlan plan(m, db.get("h100-sxm"), PlanConfig{"BF16", "f16", true, "cuda-graphs", 1});
    const double P = 2048, n = 256;
    for (double tpot_ms : {8.0, 12.0, 20.0, 50.0}) {
        CAPTURE(tpot_ms);
        const BatchAnswer a = max_batch_for_latency(plan, P, n, tpot_ms / 1e3);
        REQUIRE(a.feasible);
        CHECK(a.batch >= 1);
        const EstimateRow at = plan.evaluate(a.batch, P, n), beyond = plan.evaluate(a.batch + 1, P, n);
        CHECK(at.memory.fits);
        CHECK(at.decode_s / n <= tpot_ms / 1e3);
        CHECK((!beyond.memory.fits || beyond.decode_s / n > tpot_ms / 1e3));
        CHECK(same_bits(a.at.decode_s, at.decode_s));
        CHECK(same_bits(a.beyond.decode_s, beyond.decode_s));
        CHECK(a.evaluations < 60);  // bisection, not a scan
    }
    // no target: the largest batch that fits
    const BatchAnswer mem = max_batch_for_latency(plan, P, n, 0);
    REQUIRE(mem.feasible);
    CHECK(mem.limit == "memory");
    CHECK(plan.evaluate(mem.batch, P, n).memory.fits);
    CHECK_FALSE(plan.evaluate(mem.batch + 1, P, n).memory.fits);
    // a target nothing meets: an answer, not an exception
    const BatchAnswer none = max_batch_for_latency(plan, P, n, 1e-6);
    CHECK_FALSE(none.feasible);
    CHECK(none.batch == 0);
    CHECK(none.limit == "tpot");
    CHECK(none.reason.find("batch 1 already takes") != std::string::npos);
    // a model that does not fit at all
    const Model big = sweep_model("llama-3.1-70b");
    const EstimatePlan small(big, db.get("rtx-4090"), PlanConfig{"BF16", "f16", false, "llama.cpp", 1});
    const BatchAnswer nofit = max_batch_for_latency(small, P, n, 0.05);
    CHECK_FALSE(nofit.feasible);
    CHECK(nofit.limit == "memory");
    CHECK(nofit.reason.find("GB") != std::string::npos);
    CHECK_THROWS_AS(max_batch_for_latency(plan, P, 0, 0.05), InvalidArgument);  // tpot needs generated tokens
}

TEST_CASE("inverse: the smallest batch reaching a throughput target") {
    const DeviceDB& db = sweep_db();
    const Model m = sweep_model("llama-3.1-8b");
    const EstimatePlan plan(m, db.get("a100-sxm-80gb"), PlanConfig{"Q4_K_M", "f16", true, "llama.cpp", 1});
    const double P = 512, n = 128;
    for (double target : {50.0, 200.0, 600.0}) {
        CAPTURE(target);
        const ThroughputAnswer a = min_batch_for_throughput(plan, P, n, target, 0.1);
        REQUIRE(a.feasible);
        CHECK(plan.evaluate(a.batch, P, n).decode_tokens_per_s_total >= target);
        if (a.batch > 1) CHECK(plan.evaluate(a.batch - 1, P, n).decode_tokens_per_s_total < target);
        CHECK(plan.evaluate(a.batch, P, n).decode_s / n <= 0.1);
    }
    const ThroughputAnswer none = min_batch_for_throughput(plan, P, n, 1e9, 0.1);
    CHECK_FALSE(none.feasible);
    CHECK(none.reason.find("below the target") != std::string::npos);
    CHECK_THROWS_AS(min_batch_for_throughput(plan, P, n, -5), InvalidArgument);
}
