// Sweeps: rows equal single estimates bit for bit whatever the thread count, bad axes, and the inverse questions.
// (That a plan reproduces the op-by-op, step-by-step estimator is test_plan.cpp's.)
#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/plan.hpp"
#include "roofline/sweep.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace roofline;

namespace {
Model sweep_model(const std::string& id) { return roofline::test::catalog(id); }
const DeviceDB& sweep_db() { return roofline::test::hardware_db(); }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A column of the table by name.
std::size_t column(const std::vector<std::string>& names, const char* name) {
    const auto it = std::find(names.begin(), names.end(), name);
    REQUIRE(it != names.end());
    return static_cast<std::size_t>(it - names.begin());
}
}  // namespace

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
    one.skip_invalid = true;  // cuda-graphs does not run GGUF's Q4_K_M: those 24 configurations are left out, with why
    const SweepTable t = sweep(a, one);
    REQUIRE(t.skipped.size() == 3 * 2 * 2 * 2);
    for (const std::string& s : t.skipped) {
        CHECK(s.find("cuda-graphs") != std::string::npos);
        CHECK(s.find("does not run weights") != std::string::npos);
    }
    REQUIRE(t.rows == (3 * 2 * 2 * 2 * 2 * 2 - 24) * 4 * 3 * 2);
    // columns 3, 4, 5 below: batch, prompt and generated tokens
    REQUIRE(column(sweep_columns(), "batch") == 3);
    REQUIRE(column(sweep_columns(), "prompt_tokens") == 4);
    REQUIRE(column(sweep_columns(), "gen_tokens") == 5);
    CHECK(t.plans == 72);
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
        const std::vector<double> values = sweep_row_values(e);
        for (std::size_t k = 0; k < cols.size(); ++k) {
            CAPTURE(cols[k]);
            CHECK(same_bits(values[k], t.columns[k][r]));
        }
        const auto& codes = sweep_code_columns();
        CHECK(t.codes[column(codes, "fits")][r] == (e.fits ? 1 : 0));
        CHECK(t.codes[column(codes, "prefill_bound")][r] == static_cast<std::uint8_t>(e.prefill_bound));
        CHECK(t.codes[column(codes, "decode_bound")][r] == static_cast<std::uint8_t>(e.decode_bound));
        ++checked;
    }
    CHECK(checked > 100);
    for (int threads : {2, 3, 8}) {
        CAPTURE(threads);
        SweepOptions o;
        o.threads = threads;
        o.skip_invalid = true;
        const SweepTable u = sweep(a, o);
        REQUIRE(u.rows == t.rows);
        for (std::size_t k = 0; k < t.columns.size(); ++k)
            CHECK(std::memcmp(t.columns[k].data(), u.columns[k].data(), t.rows * sizeof(double)) == 0);
        CHECK(u.model == t.model);
        CHECK(u.device == t.device);
        CHECK(u.codes[column(sweep_code_columns(), "decode_bound")] == t.codes[column(sweep_code_columns(), "decode_bound")]);
        REQUIRE(u.codes.size() == t.codes.size());
        for (std::size_t k = 0; k < t.codes.size(); ++k) CHECK(u.codes[k] == t.codes[k]);
    }
    // prompts without generation
    {
        SweepAxes b = a;
        b.prompt_tokens = {1, 700};
        b.gen_tokens = {0};
        const SweepTable u = sweep(b, one);
        REQUIRE(u.rows == 72 * 4 * 2);
        for (std::size_t r = 0; r < u.rows; r += 37) {
            const EstimatePlan plan(*b.models[static_cast<std::size_t>(u.model[r])], *b.devices[static_cast<std::size_t>(u.device[r])],
                                    PlanConfig{b.quants[static_cast<std::size_t>(u.quant[r])], b.kv_dtypes[static_cast<std::size_t>(u.kv_dtype[r])],
                                               u.flash_attention[r] != 0, b.engines[static_cast<std::size_t>(u.engine[r])], 1});
            const std::vector<double> values = sweep_row_values(plan.evaluate(u.columns[3][r], u.columns[4][r], 0));
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

TEST_CASE("sweep: the split mode of every configuration, resolved per engine, as estimate() runs it") {
    const DeviceDB& db = sweep_db();
    const Model llama = sweep_model("llama-3.1-8b");
    SweepAxes a;
    a.models = {&llama};
    a.quants = {"Q4_K_M"};
    a.devices = {&db.get("rtx-3090")};
    a.engines = {"llama.cpp"};
    a.tensor_parallel = {1, 2};
    const auto& names = split_mode_names();
    const auto decode = column(sweep_columns(), "decode_tokens_per_s");
    auto estimated = [&](const std::string& mode, int tp) {
        Workload w;
        w.quant = "Q4_K_M";
        w.tensor_parallel = tp;
        w.split_mode = mode;
        return estimate(llama, db.get("rtx-3090"), w).decode_tokens_per_s;
    };
    // an axis: rows nested as tensor_parallel, then split_mode (one device: every split is "none")
    a.split_modes = {"", "layer", "tensor"};
    const SweepTable t = sweep(a);
    REQUIRE(t.rows == 6);
    const std::vector<std::string> ran{"none", "none", "none", "layer", "layer", "tensor"};
    for (std::size_t r = 0; r < 6; ++r) {
        CAPTURE(r);
        CHECK(names[t.split_mode[r]] == ran[r]);
        CHECK(same_bits(t.columns[decode][r], estimated(a.split_modes[r % 3], r < 3 ? 1 : 2)));
    }
    CHECK(t.columns[decode][5] > t.columns[decode][4] * 1.5);  // tensor parallel reads half the weights per device
    // explicit points pick their split by index; no split column: the first split for every point
    SweepPoints p;
    p.model = {0, 0};
    p.quant = {0, 0};
    p.device = {0, 0};
    p.engine = {0, 0};
    p.kv_dtype = {0, 0};
    p.flash_attention = {0, 0};
    p.tensor_parallel = {1, 1};
    p.batch = {1, 1};
    p.prompt_tokens = {512, 512};
    p.gen_tokens = {128, 128};
    p.split = {2, 1};
    const SweepTable tp = sweep(a, p);
    CHECK(names[tp.split_mode[0]] == "tensor");
    CHECK(names[tp.split_mode[1]] == "layer");
    CHECK(same_bits(tp.columns[decode][0], t.columns[decode][5]));
    p.split.clear();
    CHECK(names[sweep(a, p).split_mode[1]] == "layer");  // "" resolved: llama.cpp's default
    p.split = {0, 3};
    CHECK_THROWS_WITH_AS(sweep(a, p), doctest::Contains("split_mode index 3"), InvalidArgument);
    p.split = {0};
    CHECK_THROWS_WITH_AS(sweep(a, p), doctest::Contains("one entry per point"), InvalidArgument);
    a.split_modes = {};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("'split_modes' must list at least one value"), InvalidArgument);
    a.engines = {"vllm"};
    a.quants = {"bf16"};
    a.split_modes = {"layer"};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("split_mode layer"), InvalidArgument);
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
        CHECK(at.fits);
        CHECK(at.decode_s / n <= tpot_ms / 1e3);
        CHECK((!beyond.fits || beyond.decode_s / n > tpot_ms / 1e3));
        CHECK(same_bits(a.at.decode_s, at.decode_s));
        CHECK(same_bits(a.beyond.decode_s, beyond.decode_s));
        CHECK(a.evaluations < 60);  // bisection, not a scan
    }
    // no target: the largest batch that fits
    const BatchAnswer mem = max_batch_for_latency(plan, P, n, 0);
    REQUIRE(mem.feasible);
    CHECK(mem.limit == "memory");
    CHECK(plan.evaluate(mem.batch, P, n).fits);
    CHECK_FALSE(plan.evaluate(mem.batch + 1, P, n).fits);
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

TEST_CASE("large sweep columns are huge-page aligned, small ones ordinary, both uninitialized on resize") {
    SweepColumn<double> big;
    big.resize(1 << 20);  // 8 MiB: above detail::kHugeColumnBytes
    CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % (std::size_t{2} << 20) == 0);
    big[0] = 1.5;
    big[big.size() - 1] = 2.5;
    SweepColumn<double> copy = big;  // copies go through the same allocator
    CHECK(copy[0] == 1.5);
    CHECK(copy.back() == 2.5);
    SweepColumn<std::uint8_t> small(100, 7);
    CHECK(small[99] == 7);
}

TEST_CASE("plan cache: a repeated sweep takes its plans from the cache, only for pinned objects, with the same rows") {
    const DeviceDB& db = sweep_db();
    const Model llama = sweep_model("llama-3.1-8b"), qwen = sweep_model("qwen3-8b");
    SweepAxes a;
    a.models = {&llama, &qwen};
    a.quants = {"Q4_K_M", "Q8_0"};
    a.devices = {&db.get("h100-sxm"), &db.get("m4-pro-20c")};
    a.kv_dtypes = {"f16", "q8_0"};
    a.batch = {1, 16};
    a.prompt_tokens = {0, 700};
    a.gen_tokens = {1, 300};
    SweepOptions plain;
    plain.threads = 1;
    const SweepTable reference = sweep(a, plain);
    auto same_table = [&](const SweepTable& t) {
        REQUIRE(t.rows == reference.rows);
        for (std::size_t k = 0; k < t.columns.size(); ++k)
            for (std::size_t r = 0; r < t.rows; ++r) CHECK(same_bits(t.columns[k][r], reference.columns[k][r]));
        for (std::size_t k = 0; k < t.codes.size(); ++k) CHECK(t.codes[k] == reference.codes[k]);
    };

    PlanCache cache(16);
    SweepOptions cached = plain;
    cached.plans = &cache;
    same_table(sweep(a, cached));
    CHECK(cache.plans() == 0);  // nothing pinned: nothing kept

    auto owner = std::make_shared<int>(0), other_owner = std::make_shared<int>(1);  // whatever keeps the objects alive
    cache.pin({{&llama, owner}, {a.devices[0], owner}, {a.devices[1], other_owner}});
    CHECK(cache.pins() == 3);
    same_table(sweep(a, cached));
    CHECK(cache.plans() == 8);  // llama's 2 quants × 2 KV formats × 2 devices; qwen is not pinned
    CHECK(cache.hits() == 0);
    const PlanCache::Key key{&llama, a.devices[0], engine("llama.cpp").get(), "Q4_K_M", "f16", false, 1, 0, ""};
    const auto kept = cache.find(key);
    REQUIRE(kept);
    CHECK(cache.hits() == 1);
    cached.threads = 3;
    same_table(sweep(a, cached));  // from the cache: every pinned configuration found, the same rows
    CHECK(cache.hits() == 1 + 8);
    CHECK(cache.find(key) == kept);
    for (auto change : {+[](PlanCache::Key& k) { k.ubatch_tokens = 256; }, +[](PlanCache::Key& k) { k.tensor_parallel = 2; },
                        +[](PlanCache::Key& k) { k.kv_dtype = "q8_0"; k.quant = "BF16"; },
                        +[](PlanCache::Key& k) { k.engine = nullptr; }}) {  // another engine object: a reloaded engine_db
        PlanCache::Key other = key;
        change(other);
        CHECK_FALSE(cache.find(other));
    }

    SUBCASE("points take the same plans and leave them as they were") {
        SweepPoints p;
        p.model = {0, 1};
        p.quant = {0, 1};
        p.device = {0, 1};
        p.engine = {0, 0};
        p.kv_dtype = {0, 1};
        p.flash_attention = {0, 0};
        p.tensor_parallel = {0, 0};
        p.batch = {4, 2};
        p.prompt_tokens = {100, 0};
        p.gen_tokens = {10, 5};
        const std::size_t hits = cache.hits();
        const SweepTable with = sweep(a, p, cached), without = sweep(a, p, plain);
        for (std::size_t k = 0; k < with.columns.size(); ++k)
            for (std::size_t r = 0; r < with.rows; ++r) CHECK(same_bits(with.columns[k][r], without.columns[k][r]));
        CHECK(cache.hits() == hits + 1);  // llama's point; qwen's configuration is not kept
        CHECK(cache.plans() == 8);
    }
    SUBCASE("full: the least recently used plans go; released owners take their plans along") {
        a.quants = {"Q4_K_M", "Q8_0", "BF16", "Q6_K", "Q5_K_M"};  // 5 × 2 × 2 = 20 pinned configurations
        sweep(a, cached);
        CHECK(cache.plans() == 16);  // at most max_plans
        // the sweep looked up its 8 kept plans (in configuration order), then inserted 12: the 4 looked up first
        // (Q4_K_M's) were the least recently used when the cache was full
        CHECK_FALSE(cache.find(key));
        PlanCache::Key q8 = key;
        q8.quant = "Q8_0";
        CHECK(cache.find(q8));
        cache.release([&](const PlanCache::Owner& o) { return o == other_owner; });  // the m4-pro's
        CHECK(cache.pins() == 2);
        CHECK(cache.plans() == 8);  // llama × Q8_0 … Q5_K_M × 2 KV formats on the h100-sxm
        CHECK(other_owner.use_count() == 1);
        cache.clear();
        CHECK(cache.pins() == 0);
        CHECK(cache.plans() == 0);
        CHECK(owner.use_count() == 1);
    }
}

TEST_CASE("flash attention left to the engine: each backend's default, resolved in the plan and in sweeps") {
    const DeviceDB& db = sweep_db();
    const Model llama = sweep_model("llama-3.1-8b");
    const Device &h100 = db.get("h100-sxm"), &m2 = db.get("m2-max-38c");
    auto plan = [&](const Device& d, const std::string& engine, bool from_engine, bool flash) {
        PlanConfig c{"Q4_K_M", "f16", flash, engine, 1};
        c.flash_attention_from_engine = from_engine;
        return EstimatePlan(llama, d, c);
    };
    // llama.cpp runs llama-bench's -fa auto: on; the #4167 builds' Metal engine ran it off
    CHECK(plan(h100, "llama.cpp", true, false).config().flash_attention);
    CHECK_FALSE(plan(m2, "llama.cpp-metal-2023", true, true).config().flash_attention);
    // the default decides only when asked for; the resolved plan equals the explicit one, bit for bit
    CHECK_FALSE(plan(h100, "llama.cpp", false, false).config().flash_attention);
    const EstimateRow by_default = plan(h100, "llama.cpp", true, false).evaluate(1, 8192, 128, 16384, nullptr);
    const EstimateRow explicit_on = plan(h100, "llama.cpp", false, true).evaluate(1, 8192, 128, 16384, nullptr);
    CHECK(same_bits(by_default.prefill_s, explicit_on.prefill_s));
    CHECK(same_bits(by_default.decode_s, explicit_on.decode_s));
    // a sweep's -1 is the engine's default per configuration; the table says what ran
    SweepAxes a;
    a.models = {&llama};
    a.quants = {"Q4_0"};
    a.devices = {&h100, &m2};
    a.engines = {"llama.cpp", "llama.cpp-metal-2023"};
    a.flash_attention = {-1};
    a.batch = {1};
    a.prompt_tokens = {512};
    a.gen_tokens = {128};
    SweepOptions skip;
    skip.skip_invalid = true;  // the 2023 Metal engine runs on Apple GPUs only
    const SweepTable t = sweep(a, skip);
    REQUIRE(t.rows == 3);
    for (std::size_t r = 0; r < t.rows; ++r) {
        const bool metal_2023 = a.engines[static_cast<std::size_t>(t.engine[r])] == "llama.cpp-metal-2023";
        CHECK(t.flash_attention[r] == (metal_2023 ? 0 : 1));
    }
    a.flash_attention = {2};
    CHECK_THROWS_WITH_AS(sweep(a), doctest::Contains("flash_attention values must be 0, 1 or -1"), InvalidArgument);
}
