// Estimates: what a workload is checked for, the one field table, and the fields derived from others.
#include <doctest/doctest.h>

#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"
#include "test_helpers.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace roofline;
using roofline::test::catalog;

namespace {
// Gives a double field the next number; leaves the other fields alone.
template <class T>
void number_if_double(T&, double&) {}
void number_if_double(double& field, double& next) { field = next++; }
}  // namespace

TEST_CASE("bad workloads are clear errors") {
    const Model m = Model::from_hf_config(roofline::test::kTiny);
    const Device d = parse_device(roofline::test::kToyDevice);
    Workload w;
    w.quant = "bf16";
    w.batch = 0;
    CHECK_THROWS_WITH_AS(estimate(m, d, w), doctest::Contains("batch must be >= 1"), InvalidArgument);
    w.batch = 1;
    w.prompt_tokens = -3;
    CHECK_THROWS_AS(estimate(m, d, w), InvalidArgument);
    w.prompt_tokens = 0;
    w.gen_tokens = 0;
    CHECK_THROWS_WITH_AS(estimate(m, d, w), doctest::Contains("nothing to estimate"), InvalidArgument);
    w.gen_tokens = 1;
    w.engine = "vllm2";
    CHECK_THROWS_WITH_AS(estimate(m, d, w), doctest::Contains("unknown engine"), NotFound);
    w.engine = "generic";
    w.kv_dtype = "q3";
    CHECK_THROWS_WITH_AS(estimate(m, d, w), doctest::Contains("unknown KV cache format"), NotFound);
    w.kv_dtype = "f16";
    w.tensor_parallel = 0;
    CHECK_THROWS_WITH_AS(estimate(m, d, w), doctest::Contains("tensor_parallel must be within [1, 1024]"), InvalidArgument);
}

TEST_CASE("estimate_fields: the configuration fields, then the row fields, in table order") {
    const std::vector<FieldInfo>& fields = estimate_fields();
    std::vector<std::string> config, row;
#define ROOFLINE_X(name, type, unit, meaning) config.push_back(#name);
    ROOFLINE_ESTIMATE_CONFIG_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
#define ROOFLINE_X(name, type, unit, meaning) row.push_back(#name);
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    CHECK(config == std::vector<std::string>{"model", "quant", "device", "engine", "kv_dtype", "flash_attention",
                                             "tensor_parallel", "ubatch_tokens"});
    REQUIRE(fields.size() == config.size() + row.size());
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const FieldInfo& f = fields[i];
        CAPTURE(f.name);
        const bool is_config = i < config.size();
        CHECK(f.config == is_config);
        CHECK(std::string(f.name) == (is_config ? config[i] : row[i - config.size()]));
        REQUIRE(f.meaning != nullptr);
        CHECK(std::strlen(f.meaning) > 0);
        REQUIRE(f.type != nullptr);
        REQUIRE(f.unit != nullptr);
        // units in the names: rates end in _per_s, times in _s, memory fields are bytes
        const std::string n = f.name, unit = f.unit;
        auto ends_with = [&](const char* s) { return n.size() >= std::strlen(s) && n.compare(n.size() - std::strlen(s), std::strlen(s), s) == 0; };
        if (ends_with("_per_s") || ends_with("_per_s_total")) CHECK(unit == "1/s");
        else if (ends_with("_s")) CHECK(unit == "s");
        if (n.rfind("memory_", 0) == 0) CHECK(unit == "B");
    }
    CHECK(std::string(fields[config.size()].name) == "parameters");
    CHECK(std::string(fields.back().name) == "max_context");
    auto type_of = [&](const char* name) {
        for (const auto& f : fields)
            if (std::string(f.name) == name) return std::string(f.type);
        FAIL("no field " << name);
        return std::string();
    };
    CHECK(type_of("model") == "std::string");
    CHECK(type_of("flash_attention") == "bool");
    CHECK(type_of("tensor_parallel") == "int");
    CHECK(type_of("decode_s") == "double");
    CHECK(type_of("tpot_s") == "double");
    CHECK(type_of("ceiling_decode_total") == "double");
    CHECK(type_of("prefill_bound") == "PhaseBound");
    CHECK(type_of("decode_bound") == "PhaseBound");
    CHECK(type_of("fits") == "bool");
    CHECK(phase_bound_names().size() == 7);
    CHECK(phase_bound_names()[static_cast<std::size_t>(PhaseBound::absent)].empty());
    CHECK(phase_bound_names()[static_cast<std::size_t>(PhaseBound::dram)] == "memory:dram");
}

TEST_CASE("the sweep's columns are the table's row fields: doubles as columns, the others as codes, in order") {
    std::vector<std::string> doubles, codes;
    for (const FieldInfo& f : estimate_fields()) {
        if (f.config) continue;
        (std::string(f.type) == "double" ? doubles : codes).push_back(f.name);
    }
    CHECK(doubles == sweep_columns());
    CHECK(codes == sweep_code_columns());
    CHECK(codes == std::vector<std::string>{"prefill_bound", "decode_bound", "fits"});
    // sweep_row_values lists an EstimateRow's doubles in that order
    EstimateRow r;
    double x = 1;
#define ROOFLINE_X(name, type, unit, meaning) number_if_double(r.name, x);
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    const std::vector<double> values = sweep_row_values(r);
    REQUIRE(values.size() == doubles.size());
    for (std::size_t i = 0; i < values.size(); ++i) CHECK(values[i] == static_cast<double>(i + 1));
}

TEST_CASE("an estimate: its configuration, tpot_s = decode_s / gen_tokens, ceiling_decode_total = ceiling_decode x batch") {
    const Model m = catalog("llama-3.1-8b");
    const Device d = parse_device(roofline::test::kToyDevice);
    for (double batch : {1.0, 4.0, 33.0}) {
        CAPTURE(batch);
        Workload w;
        w.quant = "int4-g128";
        w.engine = "generic";
        w.kv_dtype = "q8_0";
        w.flash_attention = true;
        w.batch = batch;
        w.prompt_tokens = 300;
        w.gen_tokens = 77;
        const Estimate e = estimate(m, d, w);
        CHECK(e.tpot_s == e.decode_s / e.gen_tokens);
        CHECK(e.tpot_s > 0);
        CHECK(e.ceiling_decode_total == e.ceiling_decode * e.batch);
        CHECK(e.decode_tokens_per_s_total == doctest::Approx(e.decode_tokens_per_s * batch));
        CHECK(e.quant == "int4-g128");
        CHECK(e.device == "toy");
        CHECK(e.engine == "generic");
        CHECK(e.kv_dtype == "q8_0");
        CHECK(e.flash_attention);
        CHECK(e.tensor_parallel == 1);
        CHECK(e.model == m.arch.id);
        CHECK(e.batch == batch);
        CHECK(e.gen_tokens == 77);
    }
    // no generated tokens: no decode, no time per token
    Workload pp;
    pp.engine = "generic";
    pp.quant = "bf16";
    pp.gen_tokens = 0;
    const Estimate e = estimate(m, d, pp);
    CHECK(e.tpot_s == 0);
    CHECK(e.ceiling_decode_total == 0);
    CHECK(e.decode_bound == PhaseBound::absent);
}

TEST_CASE("every estimate carries its engine's prediction interval, widened outside what the corpus covered") {
    const Model m = catalog("llama-2-7b");
    const DeviceDB& db = roofline::test::hardware_db();
    auto at = [&](const char* device, const char* quant) {
        Workload w;
        w.quant = quant;
        w.prompt_tokens = 512;
        w.gen_tokens = 128;
        w.engine = "llama.cpp";
        return estimate(m, db.get(device), w);
    };
    const Estimate in = at("m2-max-38c", "Q4_0");  // an Apple family and a format the Metal corpus measured
    const PredictionInterval& pi = engine("llama.cpp")->on(db.get("m2-max-38c")).interval;
    REQUIRE(pi.decode_lo < 1);
    REQUIRE(pi.decode_hi > 1);
    CHECK(in.decode_tokens_per_s_lo == doctest::Approx(in.decode_tokens_per_s * pi.decode_lo));
    CHECK(in.decode_tokens_per_s_hi == doctest::Approx(in.decode_tokens_per_s * pi.decode_hi));
    CHECK(in.prefill_tokens_per_s_lo == doctest::Approx(in.prefill_tokens_per_s * pi.prefill_lo));
    CHECK(in.prefill_tokens_per_s_hi == doctest::Approx(in.prefill_tokens_per_s * pi.prefill_hi));
    // a K-quant the corpus did not measure: widen-fold in log space
    const Estimate kq = at("m2-max-38c", "Q5_K_M");
    CHECK(kq.decode_tokens_per_s_lo / kq.decode_tokens_per_s == doctest::Approx(std::pow(pi.decode_lo, pi.widen)));
    CHECK(kq.decode_tokens_per_s_hi / kq.decode_tokens_per_s == doctest::Approx(std::pow(pi.decode_hi, pi.widen)));
    // lo <= estimate <= hi always
    for (const Estimate* e : {&in, &kq}) {
        CHECK(e->decode_tokens_per_s_lo <= e->decode_tokens_per_s);
        CHECK(e->decode_tokens_per_s <= e->decode_tokens_per_s_hi);
    }
}
