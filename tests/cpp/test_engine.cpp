// Engines as data (engine_db/): every file loads and validates, every property has a source, based_on inherits and
// overrides, errors name the file and the field, backends by device vendor, kernels by weight format and rows.
#include <doctest/doctest.h>

#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/format.hpp"
#include "roofline/forward.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/attention.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace roofline;

namespace {
const EngineDB& engine_db() {
    static const EngineDB db = EngineDB::load_directory(ROOFLINE_TEST_HARDWARE_DB "/../engine_db");
    return db;
}

std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
    return text;
}

// A small valid engine: one backend for everything, a mat-vec kernel up to 8 rows, then a tiled one.
const char* const kTinyEngine = R"({
  "schema_version": 1, "id": "tiny", "name": "Tiny engine", "summary": "made up for a test",
  "backends": {
    "any": {
      "kernel_fixed_cost_scale": {"value": 2.0, "source": "made up"},
      "activation_format": {"value": "bf16", "source": "made up"},
      "attention_format": {"value": "activation", "source": "made up"},
      "linear_kernels": {"value": [
        {"name": "gemv", "weights": ["*"], "max_rows": 8, "unit": "vector", "compute": "activation", "source": "made up"},
        {"name": "gemm", "weights": ["*"], "unit": "matrix", "compute": "activation", "tile_m": 128, "tile_n": 64, "source": "made up"}
      ]},
      "fused_qkv": {"value": false, "source": "made up"},
      "matvec_fused_bias": {"value": false, "source": "made up"},
      "matvec_fused_glu": {"value": true, "source": "made up"},
      "logits_last_token_only": {"value": true, "source": "made up"},
      "runtime_overhead_GB": {"value": 0.5, "source": "made up"},
      "all_reduce": {"value": "ring", "source": "made up"},
      "collective_step_latency_us": {"value": 0.5, "source": "made up"},
      "collective_protocols": {"value": [], "source": "made up"},
      "custom_all_reduce_max_bytes": {"value": [], "source": "made up"},
      "custom_all_reduce_max_hidden": {"value": 0, "source": "made up"},
      "vocab_parallel": {"value": true, "source": "made up"},
      "bandwidth_fraction": {"value": 1.0, "source": "made up"},
      "op_kernels": {"value": {}, "source": "made up"},
      "prefill_ubatch_tokens": {"value": 0, "source": "made up"},
      "split_modes": {"value": ["tensor"], "source": "made up"},
      "prefill_batch_tokens": {"value": 0, "source": "made up"},
      "layer_handoff_latency_us": {"value": 0, "source": "made up"},
      "layer_split_kernel_fixed_cost_add": {"value": 0, "source": "made up"},
      "flash_attention_version": {"value": 2, "source": "made up"},
      "flash_attention_default": {"value": false, "source": "made up"},
      "decode_attention_per_query_head": {"value": false, "source": "made up"},
      "decode_attention_alu_ops_per_mac": {"value": 0, "source": "made up"},
      "attention_score_bytes": {"value": 0, "source": "made up"},
      "unfused_attention_bytes": {"value": {"per_cached_k": 0, "per_output": 0}, "source": "made up"},
      "flash_attention_formats": {"value": {"qk": "attention", "pv": "attention"}, "source": "made up"},
      "flash_attention_issue": {"value": {}, "source": "made up"},
      "flash_attention_head_dims": {"value": [], "source": "made up"},
      "flash_attention_kv_to_f16": {"value": {"formats": [], "min_queries": 1}, "source": "made up"},
      "prediction_interval": {"value": {"coverage": 0.8, "decode": [0.9, 1.1], "prefill": [0.8, 1.2],
                              "device_families": ["toy"], "weight_formats": ["Q4_0"], "widen": 2}, "source": "made up"}
    }
  }
})";

// An engine with every property, a vendor map and a second backend.
const char* const kFullEngine = R"({
  "schema_version": 1, "id": "full", "name": "Full engine", "aliases": ["complete"], "summary": "made up for a test",
  "native_backend": {"value": {"nvidia": "cuda", "apple": "metal"}, "source": "made up"},
  "backends": {
    "any": {
      "kernel_fixed_cost_scale": {"value": 1.5, "source": "s1"},
      "activation_format": {"value": "fp32", "source": "s2"},
      "attention_format": {"value": {"qk": "tf32", "pv": "fp16_acc16"}, "source": "made up"},
      "linear_kernels": {"value": [
        {"name": "gemv", "weights": ["quantized", "f16"], "max_rows": 4, "families": ["nvidia-gb10", "amd-rdna3.5"], "max_experts": 63,
         "unit": "vector", "compute": "fp32", "source": "k1"},
        {"name": "gemm", "weights": ["*"], "unit": "matrix", "compute": "activation", "tile_m": 64, "tile_n": 32,
         "stream_k": true, "dequant_every_rows": 32, "dequant_overlapped": false, "efficiency": 0.8, "alu_ops_per_mac": 0.5,
         "alu_format": "int32", "alu_ops_scale": {"q4_k": 1.17, "q8_0": 0.83}, "launches": 2, "tiles_per_unit": 2,
         "moe_row_tile": "batch", "moe_launches": 3, "row_tile_step": 8, "alu_weight_share": 0.25,
         "by_family": {"amd-rdna3.5": {"tiles_per_unit": 0.5, "split_k": false, "source": "f1", "uncertain": "f2"},
                       "amd-cdna3": {"efficiency": 0.6, "stream_k": false, "source": "f3"},
                       "nvidia-ampere": {"alu_ops_scale": 1.08, "source": "f4"}},
         "source": "k2", "uncertain": "a guess"}
      ]},
      "fused_qkv": {"value": false, "source": "s3"},
      "matvec_fused_bias": {"value": true, "source": "s3b"},
      "matvec_fused_glu": {"value": false, "source": "s3c"},
      "logits_last_token_only": {"value": false, "source": "s4"},
      "runtime_overhead_GB": {"value": 0.7, "source": "s5"},
      "all_reduce": {"value": "one-shot", "source": "s6"},
      "collective_step_latency_us": {"value": 0.47, "source": "s7"},
      "collective_protocols": {"value": [{"name": "LL", "base_latency_us": 6.6,
                               "step_latency_us": {"nvlink": 0.6, "pcie": 1.0, "network": 2.7}, "bandwidth_share": 0.5}],
                               "source": "s7b"},
      "custom_all_reduce_max_bytes": {"value": [[2, 16000000], [8, 8000000]], "source": "s7c"},
      "custom_all_reduce_max_hidden": {"value": 8192, "source": "s7d"},
      "vocab_parallel": {"value": true, "source": "s8", "uncertain": "maybe"},
      "bandwidth_fraction": {"value": 0.9, "source": "s9"},
      "op_kernels": {"value": {"rope": 2, "kv_append": 1}, "source": "s10"},
      "prefill_ubatch_tokens": {"value": 512, "source": "s11"},
      "split_modes": {"value": ["layer", "tensor"], "source": "s11a"},
      "prefill_batch_tokens": {"value": 2048, "source": "s11b"},
      "layer_handoff_latency_us": {"value": 15, "source": "s11c"},
      "layer_split_kernel_fixed_cost_add": {"value": 0.47, "source": "s11d"},
      "flash_attention_version": {"value": 1, "source": "s12"},
      "flash_attention_default": {"value": true, "source": "s12a"},
      "decode_attention_per_query_head": {"value": true, "source": "s12b"},
      "decode_attention_alu_ops_per_mac": {"value": 5.3, "source": "s12c"},
      "attention_score_bytes": {"value": 24, "source": "s13"},
      "unfused_attention_bytes": {"value": {"per_cached_k": 8, "per_output": 12}, "source": "s13e"},
      "flash_attention_formats": {"value": {"qk": "fp16", "pv": "fp16_acc16"}, "source": "s13a"},
      "flash_attention_issue": {"value": {"default": [[64, 30, 20], [128, 40, 25]], "nvidia-hopper": [[128, 45, 30]]},
                                "source": "s13b"},
      "flash_attention_head_dims": {"value": [64, 128], "source": "s13c"},
      "flash_attention_kv_to_f16": {"value": {"formats": ["q8_0", "f32"], "min_queries": 32,
                                             "except_families": ["nvidia-ada"]}, "source": "s13d"},
      "prediction_interval": {"value": {"coverage": 0.8, "decode": [0.95, 1.05], "prefill": [0.9, 1.15],
                              "device_families": ["apple-m1", "apple-m2"], "weight_formats": ["*"], "widen": 3},
                              "source": "s14"}
    },
    "metal": {"fused_qkv": {"value": true, "source": "made up too"}}
  }
})";

// The properties every resolved backend holds, by their engine_db keys.
const std::vector<std::string> kProperties = {"kernel_fixed_cost_scale", "activation_format", "attention_format", "fused_qkv",
                                              "matvec_fused_bias", "matvec_fused_glu", "logits_last_token_only",  "runtime_overhead_GB", "all_reduce",
                                              "collective_step_latency_us", "collective_protocols",
                                              "custom_all_reduce_max_bytes", "custom_all_reduce_max_hidden",
                                              "vocab_parallel", "bandwidth_fraction",
                                              "op_kernels", "prefill_ubatch_tokens", "split_modes", "prefill_batch_tokens",
                                              "layer_handoff_latency_us", "layer_split_kernel_fixed_cost_add",
                                              "flash_attention_version", "flash_attention_default",
                                              "decode_attention_per_query_head", "decode_attention_alu_ops_per_mac", "attention_score_bytes",
                                              "unfused_attention_bytes",
                                              "flash_attention_formats", "flash_attention_issue", "flash_attention_head_dims",
                                              "flash_attention_kv_to_f16", "prediction_interval"};

void check_error(const std::string& text, const std::vector<std::string>& expected, const std::vector<Engine>* bases = nullptr) {
    try {
        parse_engine(text, "engines/bad.json", bases);
        FAIL("parse_engine accepted a bad engine");
    } catch (const InvalidArgument& e) {
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(what.find("engines/bad.json") != std::string::npos);
        for (const auto& x : expected) {
            CAPTURE(x);
            CHECK(what.find(x) != std::string::npos);
        }
    }
}

void check_same_backend(const EngineBackend& a, const EngineBackend& b) {
    CAPTURE(a.backend);
    CHECK(a.backend == b.backend);
    CHECK(a.kernel_fixed_cost_scale == b.kernel_fixed_cost_scale);
    CHECK(a.activation_format == b.activation_format);
    CHECK(a.fused_qkv == b.fused_qkv);
    CHECK(a.matvec_fused_bias == b.matvec_fused_bias);
    CHECK(a.matvec_fused_glu == b.matvec_fused_glu);
    CHECK(a.logits_last_token_only == b.logits_last_token_only);
    CHECK(a.runtime_overhead_bytes == doctest::Approx(b.runtime_overhead_bytes).epsilon(1e-15));  // GB in the file
    CHECK(a.all_reduce == b.all_reduce);
    CHECK(a.collective_step_latency_s == doctest::Approx(b.collective_step_latency_s).epsilon(1e-15));  // us in the file
    CHECK(a.vocab_parallel == b.vocab_parallel);
    CHECK(a.bandwidth_fraction == b.bandwidth_fraction);
    CHECK(a.op_kernels == b.op_kernels);
    CHECK(a.prefill_ubatch_tokens == b.prefill_ubatch_tokens);
    CHECK(a.split_modes == b.split_modes);
    CHECK(a.prefill_batch_tokens == b.prefill_batch_tokens);
    CHECK(a.layer_handoff_latency_s == doctest::Approx(b.layer_handoff_latency_s).epsilon(1e-15));  // us in the file
    CHECK(a.layer_split_kernel_fixed_cost_add == b.layer_split_kernel_fixed_cost_add);
    CHECK(a.flash_attention_version == b.flash_attention_version);
    CHECK(a.flash_attention_default == b.flash_attention_default);
    CHECK(a.decode_attention_per_query_head == b.decode_attention_per_query_head);
    CHECK(a.decode_attention_alu_ops_per_mac == b.decode_attention_alu_ops_per_mac);
    CHECK(a.attention_format == b.attention_format);
    CHECK(a.attention_pv_format == b.attention_pv_format);
    CHECK(a.attention_score_bytes == b.attention_score_bytes);
    CHECK(a.unfused_attention_bytes == b.unfused_attention_bytes);
    CHECK(a.flash_qk_format == b.flash_qk_format);
    CHECK(a.flash_pv_format == b.flash_pv_format);
    CHECK(a.flash_issue_per_score == b.flash_issue_per_score);
    CHECK(a.flash_attention_head_dims == b.flash_attention_head_dims);
    CHECK(a.flash_attention_kv_to_f16 == b.flash_attention_kv_to_f16);
    CHECK(a.interval.coverage == b.interval.coverage);
    CHECK(a.interval.decode_lo == b.interval.decode_lo);
    CHECK(a.interval.decode_hi == b.interval.decode_hi);
    CHECK(a.interval.prefill_lo == b.interval.prefill_lo);
    CHECK(a.interval.prefill_hi == b.interval.prefill_hi);
    CHECK(a.interval.device_families == b.interval.device_families);
    CHECK(a.interval.weight_formats == b.interval.weight_formats);
    CHECK(a.interval.widen == b.interval.widen);
    REQUIRE(a.linear_kernels.size() == b.linear_kernels.size());
    for (std::size_t i = 0; i < a.linear_kernels.size(); ++i) {
        const LinearKernel &x = a.linear_kernels[i], &y = b.linear_kernels[i];
        CAPTURE(x.name);
        CHECK(x.name == y.name);
        CHECK(x.weights == y.weights);
        CHECK(x.max_rows == y.max_rows);
        CHECK(x.unit == y.unit);
        CHECK(x.compute == y.compute);
        CHECK(x.families == y.families);
        CHECK(x.max_experts == y.max_experts);
        if (x.unit == Unit::matrix) {  // tiles of vector kernels are not written
            CHECK(x.tile_m == y.tile_m);
            CHECK(x.tile_n == y.tile_n);
            CHECK(x.stream_k == y.stream_k);
            CHECK(x.moe_tile_from_batch == y.moe_tile_from_batch);
            CHECK(x.row_tile_step == y.row_tile_step);
        }
        CHECK(x.dequant_every_rows == y.dequant_every_rows);
        CHECK(x.dequant_overlapped == y.dequant_overlapped);
        CHECK(x.efficiency == y.efficiency);
        CHECK(x.alu_ops_per_mac == y.alu_ops_per_mac);
        CHECK(x.alu_format == y.alu_format);
        CHECK(x.alu_on_issue == y.alu_on_issue);
        CHECK(x.alu_weight_share == y.alu_weight_share);
        CHECK(x.alu_ops_scale == y.alu_ops_scale);
        CHECK(x.tiles_per_unit == y.tiles_per_unit);
        CHECK(x.split_k == y.split_k);
        REQUIRE(x.by_family.size() == y.by_family.size());
        for (const auto& [family, f] : x.by_family) {
            CAPTURE(family);
            REQUIRE(y.by_family.count(family) == 1);
            CHECK(f.efficiency == y.by_family.at(family).efficiency);
            CHECK(f.tiles_per_unit == y.by_family.at(family).tiles_per_unit);
            CHECK(f.split_k == y.by_family.at(family).split_k);
            CHECK(f.stream_k == y.by_family.at(family).stream_k);
            CHECK(f.alu_ops_scale == y.by_family.at(family).alu_ops_scale);
            CHECK(x.occupancy_on(family) == y.occupancy_on(family));
            CHECK(f.provenance.source == y.by_family.at(family).provenance.source);
            CHECK(f.provenance.uncertain == y.by_family.at(family).provenance.uncertain);
        }
        CHECK(x.launches == y.launches);
        CHECK(x.moe_launches == y.moe_launches);
        CHECK(x.provenance.source == y.provenance.source);
        CHECK(x.provenance.uncertain == y.provenance.uncertain);
    }
    REQUIRE(a.sources.size() == b.sources.size());
    for (const auto& [key, p] : a.sources) {
        CAPTURE(key);
        REQUIRE(b.sources.count(key) == 1);
        CHECK(b.sources.at(key).source == p.source);
        CHECK(b.sources.at(key).uncertain == p.uncertain);
    }
}
}  // namespace

TEST_CASE("every engine_db file loads: llama.cpp first, then the others") {
    const EngineDB& db = engine_db();
    const std::vector<std::string> ids = db.ids();
    REQUIRE_FALSE(ids.empty());
    CHECK(ids.front() == "llama.cpp");
    const std::set<std::string> have(ids.begin(), ids.end());
    for (const char* id : {"llama.cpp", "generic", "cuda-graphs", "gpt-fast"}) {
        CAPTURE(id);
        CHECK(have.count(id) == 1);
        CHECK(db.contains(id));
        CHECK(db.get(id).id == id);
        CHECK_FALSE(db.get(id).name.empty());
        CHECK_FALSE(db.get(id).summary.empty());
        CHECK(db.get(id).origin.find(std::string(id) + ".json") != std::string::npos);
    }
    CHECK(have.size() == ids.size());  // no id twice
    // the default database is the source tree's
    CHECK(engine_names() == ids);
    // every engine resolves an "any" backend first, with kernels for any number of rows
    for (const Engine& e : db.engines()) {
        CAPTURE(e.id);
        REQUIRE_FALSE(e.backends.empty());
        CHECK(e.backends.front().backend == "any");
        for (const EngineBackend& b : e.backends) {
            REQUIRE_FALSE(b.linear_kernels.empty());
            CHECK(b.linear_kernels.back().max_rows == std::numeric_limits<double>::infinity());
            CHECK(std::find(backend_names().begin(), backend_names().end(), b.backend) != backend_names().end());
        }
    }
}

TEST_CASE("gpt-fast is based on cuda-graphs and overrides what its source does differently") {
    const EngineDB& db = engine_db();
    const Engine& fast = db.get("gpt-fast");
    const Engine& graphs = db.get("cuda-graphs");
    CHECK(fast.based_on == "cuda-graphs");
    CHECK(graphs.based_on.empty());
    const EngineBackend &f = fast.backend("any"), &g = graphs.backend("any");
    // overridden
    CHECK(f.fused_qkv);
    CHECK_FALSE(g.fused_qkv);
    CHECK_FALSE(f.vocab_parallel);
    CHECK(g.vocab_parallel);
    CHECK(f.all_reduce == AllReduce::one_shot);
    CHECK(g.all_reduce == AllReduce::ring);
    CHECK(all_reduce_name(f.all_reduce) == "one-shot");
    REQUIRE_FALSE(f.linear_kernels.empty());
    for (const LinearKernel& k : f.linear_kernels) {
        CAPTURE(k.name);
        CHECK_FALSE(k.dequant_overlapped);
    }
    for (const LinearKernel& k : g.linear_kernels) CHECK(k.dequant_overlapped);
    CHECK(f.sources.at("fused_qkv").source != g.sources.at("fused_qkv").source);
    // inherited, with the base's sources
    // fitted to gpt-fast's own table (calibration/fit_defaults.py), with that as its source
    for (const char* key : {"kernel_fixed_cost_scale", "bandwidth_fraction"}) {
        CAPTURE(key);
        CHECK(f.sources.at(key).source.find("calibration/fit_defaults.py") != std::string::npos);
        CHECK(f.sources.at(key).source.find("gpt_fast_a100.csv") != std::string::npos);
    }
    for (const char* key : {"activation_format", "logits_last_token_only", "runtime_overhead_GB",
                            "collective_step_latency_us"}) {
        CAPTURE(key);
        REQUIRE(f.sources.count(key) == 1);
        CHECK(f.sources.at(key).source == g.sources.at(key).source);
    }
    CHECK(f.activation_format == g.activation_format);
    CHECK(f.logits_last_token_only == g.logits_last_token_only);
    CHECK(f.runtime_overhead_bytes == g.runtime_overhead_bytes);
    CHECK(f.collective_step_latency_s == g.collective_step_latency_s);
    CHECK(fast.native_backend == graphs.native_backend);
}

TEST_CASE("trt-llm-0.6 is trt-llm with 0.6.1's masked MHA (a thread block per query head) and NCCL all-reduce") {
    const EngineDB& db = engine_db();
    const Engine &old = db.get("trt-llm-0.6"), &now = db.get("trt-llm");
    CHECK(old.based_on == "trt-llm");
    const EngineBackend &o = old.backend("any"), &n = now.backend("any");
    CHECK(o.decode_attention_per_query_head);
    CHECK_FALSE(n.decode_attention_per_query_head);
    CHECK(o.all_reduce == AllReduce::ring);
    CHECK(n.all_reduce == AllReduce::two_shot);
    CHECK(o.sources.at("decode_attention_per_query_head").source.find("hi_kv = hi / qhead_per_kv") != std::string::npos);
    // its instructions per multiply-add, counted in its SASS; today's engine is not counted
    CHECK(o.decode_attention_alu_ops_per_mac == doctest::Approx(5.3));
    CHECK(o.sources.at("decode_attention_alu_ops_per_mac").source.find("SASS") != std::string::npos);
    CHECK(n.decode_attention_alu_ops_per_mac == 0);
    // the serving fit's parameters are trt-llm's, inherited with their source
    for (const char* key : {"bandwidth_fraction", "host_per_sequence_us"}) {
        CAPTURE(key);
        CHECK(o.sources.at(key).source == n.sources.at(key).source);
    }
    CHECK(o.bandwidth_fraction == n.bandwidth_fraction);
    // no FP4 formats in a 2023 release
    CHECK(std::find(old.weight_formats.begin(), old.weight_formats.end(), "nvfp4") == old.weight_formats.end());
    CHECK(std::find(now.weight_formats.begin(), now.weight_formats.end(), "nvfp4") != now.weight_formats.end());
    // every root engine states the property with a source
    for (const char* id : {"generic", "cuda-graphs", "llama.cpp", "mlx"}) {
        CAPTURE(id);
        CHECK_FALSE(db.get(id).backend("any").decode_attention_per_query_head);
        CHECK_FALSE(db.get(id).backend("any").sources.at("decode_attention_per_query_head").source.empty());
        CHECK(db.get(id).backend("any").decode_attention_alu_ops_per_mac == 0);
        CHECK_FALSE(db.get(id).backend("any").sources.at("decode_attention_alu_ops_per_mac").source.empty());
    }
}

TEST_CASE("every property of every engine backend has a source, and so does every linear kernel") {
    for (const Engine& e : engine_db().engines()) {
        CAPTURE(e.id);
        for (const EngineBackend& b : e.backends) {
            CAPTURE(b.backend);
            for (const auto& key : kProperties) {
                CAPTURE(key);
                REQUIRE(b.sources.count(key) == 1);
                CHECK_FALSE(b.sources.at(key).source.empty());
            }
            for (std::size_t i = 0; i < b.linear_kernels.size(); ++i) {
                const std::string key = "linear_kernels[" + std::to_string(i) + "]";
                CAPTURE(key);
                CHECK_FALSE(b.linear_kernels[i].provenance.source.empty());
                REQUIRE(b.sources.count(key) == 1);
                CHECK(b.sources.at(key).source == b.linear_kernels[i].provenance.source);
            }
            for (const auto& [key, p] : b.sources) {
                CAPTURE(key);
                CHECK_FALSE(p.source.empty());
            }
        }
        if (!e.native_backend.empty()) CHECK_FALSE(e.native_backend_provenance.source.empty());
    }
}

TEST_CASE("parse_engine: errors name the origin and the field path") {
    SUBCASE("a property missing: every property needs a value and a source") {
        check_error(with(kTinyEngine, R"("vocab_parallel": {"value": true, "source": "made up"})", R"("fused_qkv": {"value": false, "source": "made up"})"),
                    {"backends.any.vocab_parallel", "is required"});
    }
    SUBCASE("a property without a source") {
        check_error(with(kTinyEngine, R"("fused_qkv": {"value": false, "source": "made up"})", R"("fused_qkv": {"value": false})"),
                    {"backends.any.fused_qkv.source", "required"});
    }
    SUBCASE("an unknown key (a typo)") {
        check_error(with(kTinyEngine, R"("fused_qkv": {)", R"("fused_qvk": {)"),
                    {"backends.any.fused_qvk", "not a known field", "did you mean 'fused_qkv'?", "vocab_parallel"});
        check_error(with(kTinyEngine, R"("summary")", R"("aliasses": [], "summary")"), {"'aliasses'", "not a known field"});
    }
    SUBCASE("a kernel list whose last kernel has max_rows") {
        check_error(with(kTinyEngine, R"("weights": ["*"], "unit": "matrix")", R"("weights": ["*"], "max_rows": 64, "unit": "matrix")"),
                    {"backends.any.linear_kernels", "must end with a kernel without max_rows"});
    }
    SUBCASE("a kernel list whose last kernel runs on some device families only") {
        check_error(with(kTinyEngine, R"("weights": ["*"], "unit": "matrix")", R"("weights": ["*"], "families": ["nvidia-gb10"], "unit": "matrix")"),
                    {"backends.any.linear_kernels", "must end with a kernel without families"});
    }
    SUBCASE("a kernel list whose last kernel runs layers of few experts only") {
        check_error(with(kTinyEngine, R"("weights": ["*"], "unit": "matrix")", R"("weights": ["*"], "max_experts": 63, "unit": "matrix")"),
                    {"backends.any.linear_kernels", "must end with a kernel without families or max_experts"});
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("max_experts": 0, "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].max_experts"});
    }
    SUBCASE("flash attention's formats and instruction counts") {
        const std::string issue = R"("flash_attention_issue": {"value": {}, "source": "made up"})";
        check_error(with(kTinyEngine, issue, R"("flash_attention_issue": {"value": {"default": [[128, 40]]}, "source": "made up"})"),
                    {"backends.any.flash_attention_issue", "value.default", "[head_dim, one_head, grouped]"});
        check_error(with(kTinyEngine, issue, R"("flash_attention_issue": {"value": {"default": [[128, 40, 20], [64, 30, 15]]}, "source": "made up"})"),
                    {"value.default", "head_dim ascending"});
        check_error(with(kTinyEngine, issue, R"("flash_attention_issue": {"value": {"NVIDIA-Hopper": [[128, 40, 20]]}, "source": "made up"})"),
                    {"value.NVIDIA-Hopper", "lower case"});
        check_error(with(kTinyEngine, issue, R"("flash_attention_issue": {"value": {"default": [[128, 0, 20]]}, "source": "made up"})"),
                    {"value.default", "instructions in (0, 10000]"});
        check_error(with(kTinyEngine, issue, R"("flash_attention_issue": {"value": [[128, 40, 20]], "source": "made up"})"),
                    {"backends.any.flash_attention_issue", "must map device families"});
        const std::string unfused = R"("attention_format": {"value": "activation", "source": "made up"})";
        check_error(with(kTinyEngine, unfused, R"("attention_format": {"value": {"qk": "tf32"}, "source": "made up"})"),
                    {"backends.any.attention_format.value", "pv"});
        check_error(with(kTinyEngine, unfused, R"("attention_format": {"value": {"qk": "fp8", "pv": "fp16"}, "source": "made up"})"),
                    {"backends.any.attention_format.value.qk", "tf32"});
        check_error(with(kTinyEngine, unfused, R"("attention_format": {"value": "int8", "source": "made up"})"),
                    {"backends.any.attention_format.value", "fp16_acc16"});
        const std::string formats = R"("flash_attention_formats": {"value": {"qk": "attention", "pv": "attention"}, "source": "made up"})";
        check_error(with(kTinyEngine, formats, R"("flash_attention_formats": {"value": {"qk": "fp16", "pv": "fp8"}, "source": "made up"})"),
                    {"backends.any.flash_attention_formats", "pv", "fp16_acc16"});
        check_error(with(kTinyEngine, formats, R"("flash_attention_formats": {"value": {"qk": "fp16"}, "source": "made up"})"),
                    {"backends.any.flash_attention_formats", "pv"});
        const std::string dims = R"("flash_attention_head_dims": {"value": [], "source": "made up"})";
        check_error(with(kTinyEngine, dims, R"("flash_attention_head_dims": {"value": [128, 64], "source": "made up"})"),
                    {"backends.any.flash_attention_head_dims", "ascending integers"});
        check_error(with(kTinyEngine, dims, R"("flash_attention_head_dims": {"value": [64.5], "source": "made up"})"),
                    {"backends.any.flash_attention_head_dims", "ascending integers"});
        check_error(with(kTinyEngine, dims, R"("flash_attention_head_dims": {"value": 128, "source": "made up"})"),
                    {"backends.any.flash_attention_head_dims", "must list head sizes"});
        const std::string kv = R"("flash_attention_kv_to_f16": {"value": {"formats": [], "min_queries": 1}, "source": "made up"})";
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": true, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value", "object"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["q3_k"], "min_queries": 1}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.formats", "q8_0", "q3_k"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["f16"], "min_queries": 1}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.formats", "other than f16"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["*", "q8_0"], "min_queries": 1}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.formats", "alone"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["*"], "min_queries": 0}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.min_queries"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["*"]}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.min_queries"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["*"], "min_queries": 2, "except_families": ["NVIDIA-Ada"]}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value.except_families", "lower case"});
        check_error(with(kTinyEngine, kv, R"("flash_attention_kv_to_f16": {"value": {"formats": ["*"], "min_queries": 2, "families": []}, "source": "made up"})"),
                    {"backends.any.flash_attention_kv_to_f16.value", "families"});
    }
    SUBCASE("families: a non-empty array of lower-case names") {
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("families": [], "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].families", "at least one hardware_db family"});
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("families": ["NVIDIA-GB10"], "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].families[0]", "lower case", "NVIDIA-GB10"});
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("families": "nvidia-gb10", "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].families", "must be an array"});
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("families": ["amd rdna3"], "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].families[0]", "lower case", "amd rdna3"});
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("families": ["amd-rdna3", "amd-rdna3"], "unit": "vector")"),
                    {"backends.any.linear_kernels.value[0].families[1]", "twice"});
    }
    SUBCASE("a bad unit") {
        check_error(with(kTinyEngine, R"("unit": "vector")", R"("unit": "tensor")"),
                    {"backends.any.linear_kernels.value[0].unit", "tensor", "vector, matrix"});
    }
    SUBCASE("stream_k that is not a boolean") {
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "stream_k": "yes", "source")"),
                    {"backends.any.linear_kernels.value[1].stream_k", "yes"});
    }
    SUBCASE("a MoE row tile other than 'expert' or 'batch', MoE launches not a whole number") {
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "moe_row_tile": "tokens", "source")"),
                    {"backends.any.linear_kernels.value[1].moe_row_tile", "tokens", "expert, batch"});
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "moe_launches": 2.5, "source")"),
                    {"backends.any.linear_kernels.value[1].moe_launches", "whole number"});
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "moe_launches": 0, "source")"),
                    {"backends.any.linear_kernels.value[1].moe_launches"});
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "row_tile_step": 0, "source")"),
                    {"backends.any.linear_kernels.value[1].row_tile_step"});
        check_error(with(kTinyEngine, R"("tile_n": 64, "source")", R"("tile_n": 64, "alu_weight_share": 1.5, "source")"),
                    {"backends.any.linear_kernels.value[1].alu_weight_share"});
    }
    SUBCASE("a kernel's occupancy on a device family: lower-case family, known keys, a source, values in range") {
        const std::string tile = R"("tile_n": 64, "source")";
        auto family = [&](const std::string& f) { return with(kTinyEngine, tile, R"("tile_n": 64, "by_family": )" + f + R"(, "source")"); };
        check_error(family(R"({"AMD-RDNA3.5": {"split_k": false, "source": "x"}})"),
                    {"by_family.AMD-RDNA3.5", "lower case"});
        check_error(family(R"({"amd-rdna3.5": {"split_k": false}})"), {"by_family.amd-rdna3.5.source", "required"});
        check_error(family(R"({"amd-rdna3.5": {"splitk": false, "source": "x"}})"), {"by_family.amd-rdna3.5.splitk", "not a known field"});
        check_error(family(R"({"amd-rdna3.5": {"tiles_per_unit": 0, "source": "x"}})"), {"by_family.amd-rdna3.5.tiles_per_unit"});
        check_error(family(R"({"amd-rdna3.5": {"efficiency": 1.5, "source": "x"}})"), {"by_family.amd-rdna3.5.efficiency"});
        check_error(family(R"({"amd-rdna3.5": {"source": "x"}})"), {"by_family.amd-rdna3.5", "at least one of"});
        check_error(family(R"({"nvidia-ampere": {"alu_ops_scale": 0, "source": "x"}})"), {"by_family.nvidia-ampere.alu_ops_scale"});
        // a vector kernel's per-row vector work is its multiply-adds too: no family scale of its ALU work alone
        check_error(with(kTinyEngine, R"("max_rows": 8, "unit": "vector", "compute": "activation", "source": "made up")",
                         R"("max_rows": 8, "unit": "vector", "compute": "activation", "by_family": {"nvidia-ampere": {"alu_ops_scale": 1.1, "source": "x"}}, "source": "made up")"),
                    {"by_family.nvidia-ampere", "only a matrix kernel"});
        check_error(with(kTinyEngine, tile, R"("tile_n": 64, "split_k": 1, "source")"), {"linear_kernels.value[1].split_k"});
    }
    SUBCASE("an unknown weight format") {
        check_error(with(kTinyEngine, R"("weights": ["*"], "max_rows": 8)", R"("weights": ["q9_z"], "max_rows": 8)"),
                    {"backends.any.linear_kernels.value[0].weights[0]", "is not a format", "q9_z"});
    }
    SUBCASE("a per-format ALU scale that names no format, is not lower case or not positive") {
        const std::string tile = R"("tile_n": 64, "source")";
        check_error(with(kTinyEngine, tile, R"("tile_n": 64, "alu_ops_scale": {"q9_z": 1.2}, "source")"),
                    {"backends.any.linear_kernels.value[1].alu_ops_scale.q9_z", "is not a weight format"});
        check_error(with(kTinyEngine, tile, R"("tile_n": 64, "alu_ops_scale": {"Q4_K": 1.2}, "source")"),
                    {"alu_ops_scale.Q4_K", "lower case"});
        check_error(with(kTinyEngine, tile, R"("tile_n": 64, "alu_ops_scale": {"q4_k": 0}, "source")"),
                    {"alu_ops_scale.q4_k", "must be within (0, 100]"});
        check_error(with(kTinyEngine, tile, R"("tile_n": 64, "alu_ops_scale": [1.2], "source")"),
                    {"alu_ops_scale", "must be a JSON object"});
    }
    SUBCASE("based_on an unknown engine") {
        const std::vector<Engine>& bases = engine_db().engines();
        check_error(with(kTinyEngine, R"("summary")", R"("based_on": "cuda-graph", "summary")"), {"based_on", "'cuda-graph'"}, &bases);
        check_error(with(kTinyEngine, R"("summary")", R"("based_on": "cuda-graphs", "summary")"), {"based_on", "'cuda-graphs'"});
    }
    SUBCASE("a vendor mapped to a backend that is none") {
        check_error(with(kTinyEngine, R"("backends")", R"("native_backend": {"value": {"nvidia": "tpu"}, "source": "made up"}, "backends")"),
                    {"native_backend.value.nvidia", "must be one of cuda, rocm, metal, vulkan, cpu", "tpu"});
    }
    SUBCASE("a bad value") {
        check_error(with(kTinyEngine, R"("value": 2.0)", R"("value": -1)"), {"backends.any.kernel_fixed_cost_scale.value"});
        check_error(with(kTinyEngine, R"("decode": [0.9, 1.1])", R"("decode": [1.1, 0.9])"),
                    {"backends.any.prediction_interval.value.decode", "0 < lo <= 1 <= hi"});
        check_error(with(kTinyEngine, R"("prefill": [0.8, 1.2])", R"("prefill": [0.8])"),
                    {"backends.any.prediction_interval.value.prefill", "[lo, hi]"});
        check_error(with(kTinyEngine, R"("weight_formats": ["Q4_0"])", R"("weight_formats": [""])"),
                    {"backends.any.prediction_interval.value.weight_formats", "non-empty"});
        check_error(with(kTinyEngine, R"("coverage": 0.8, "decode": [0.9, 1.1])", R"("coverage": 1.5, "decode": [0.9, 1.1])"),
                    {"backends.any.prediction_interval.value.coverage"});
        check_error(with(kTinyEngine, R"("value": "bf16")", R"("value": "int8")"), {"backends.any.activation_format.value", "int8"});
        check_error(with(kTinyEngine, R"("compute": "activation", "source")", R"("compute": "fp7", "source")"),
                    {"backends.any.linear_kernels.value[0].compute", "fp7"});
    }
    SUBCASE("no 'any' backend") {
        check_error(with(kTinyEngine, R"("any": {)", R"("cuda": {)"), {"backends.any", "is required"});
    }
    // the tiny engine itself is valid
    const Engine e = parse_engine(kTinyEngine, "engines/tiny.json");
    CHECK(e.id == "tiny");
    CHECK(e.origin == "engines/tiny.json");
    REQUIRE(e.backends.size() == 1);
    CHECK(e.backends[0].kernel_fixed_cost_scale == 2.0);
    CHECK(e.backends[0].linear_kernels.size() == 2);
    // every property is set, with its source
    CHECK(e.backends[0].all_reduce == AllReduce::ring);
    CHECK(e.backends[0].sources.at("all_reduce").source == "made up");
}

TEST_CASE("Engine::on picks the backend of the device's vendor, and says which vendors an engine runs on") {
    const std::string text = with(with(kTinyEngine, R"("backends")",
                                       R"("native_backend": {"value": {"nvidia": "cuda"}, "source": "made up"}, "backends")"),
                                  R"("any": {)", R"("cuda": {"kernel_fixed_cost_scale": {"value": 0.5, "source": "graphs"}},
    "any": {)");
    const Engine e = parse_engine(text, "engines/tiny.json");
    REQUIRE(e.backends.size() == 2);
    CHECK(e.backends[0].backend == "any");
    CHECK(e.backends[1].backend == "cuda");
    const DeviceDB& devices = roofline::test::hardware_db();
    const EngineBackend& on_h100 = e.on(devices.get("h100-sxm"));
    CHECK(on_h100.backend == "cuda");
    CHECK(on_h100.kernel_fixed_cost_scale == 0.5);           // the cuda backend's own
    CHECK(on_h100.activation_format == "bf16");              // the rest from "any"
    CHECK(on_h100.sources.at("kernel_fixed_cost_scale").source == "graphs");
    CHECK(on_h100.sources.at("activation_format").source == "made up");
    CHECK_THROWS_WITH_AS(e.on(devices.get("m4-pro-20c")), doctest::Contains("does not run on apple devices"), InvalidArgument);
    CHECK_THROWS_WITH_AS(e.on(devices.get("m4-pro-20c")), doctest::Contains("it runs on: nvidia"), InvalidArgument);
    CHECK_THROWS_WITH_AS(e.on(devices.get("mi300x")), doctest::Contains("engine 'tiny' does not run on amd devices"), InvalidArgument);
    // a CPU never runs its vendor's GPU backend: the "cpu" entry, whoever made it (a measured host: "host" too)
    Device cpu = devices.get("mi300x");
    cpu.id = "some-epyc";
    cpu.kind = "cpu";
    const std::string both = with(text, R"({"nvidia": "cuda"})", R"({"nvidia": "cuda", "amd": "rocm", "cpu": "cpu"})");
    const Engine ec = parse_engine(both, "engines/tiny.json");
    CHECK(ec.on(devices.get("mi300x")).backend == "any");  // rocm: not described, so "any"
    CHECK(&ec.on(cpu) == &ec.backend("cpu"));
    CHECK_THROWS_WITH_AS(e.on(cpu), doctest::Contains("engine 'tiny' does not run on cpu devices ('some-epyc'); it runs on: nvidia"),
                         InvalidArgument);
    const Engine gpu_only = parse_engine(with(text, R"({"nvidia": "cuda"})", R"({"nvidia": "cuda", "amd": "rocm"})"), "engines/tiny.json");
    CHECK_THROWS_WITH_AS(gpu_only.on(cpu), doctest::Contains("does not run on cpu devices"), InvalidArgument);
    Device host = cpu;
    host.vendor = "host";
    const Engine host_only = parse_engine(with(text, R"({"nvidia": "cuda"})", R"({"host": "cpu"})"), "engines/tiny.json");
    CHECK(&host_only.on(host) == &host_only.backend("cpu"));
    CHECK_THROWS_WITH_AS(host_only.on(cpu), doctest::Contains("it runs on: host"), InvalidArgument);
    // llama.cpp: the CPU backend on any CPU, the GPU backends by vendor; GPU-only engines refuse CPUs
    for (const char* id : {"llama.cpp", "llama.cpp-cpu"})  // the cpu backend ("any" where the file does not write it out)
        CHECK(&engine_db().get(id).on(cpu) == &engine_db().get(id).backend("cpu"));
    CHECK(engine_db().get("llama.cpp").on(devices.get("mi300x")).backend == "rocm");
    CHECK_THROWS_WITH_AS(engine_db().get("vllm").on(cpu), doctest::Contains("does not run on cpu devices"), InvalidArgument);
    // backends by name: one the file does not describe is "any"; a name that is no backend is an error
    CHECK(e.backend("cuda").kernel_fixed_cost_scale == 0.5);
    CHECK(e.backend("metal").backend == "any");
    CHECK(e.backend("CUDA").backend == "cuda");
    CHECK_THROWS_WITH_AS(e.backend("tpu"), doctest::Contains("unknown backend 'tpu'"), NotFound);
    // without native_backend an engine runs "any" everywhere
    const Engine plain = parse_engine(kTinyEngine, "engines/tiny.json");
    CHECK(plain.on(devices.get("m4-pro-20c")).backend == "any");
    CHECK(plain.on(devices.get("h100-sxm")).backend == "any");
}

TEST_CASE("kernels_for picks kernels by weight class and format, in order of max_rows") {
    auto kernel = [](const char* name, std::vector<std::string> weights, double max_rows, Unit unit) {
        LinearKernel k;
        k.name = name;
        k.weights = std::move(weights);
        k.max_rows = max_rows;
        k.unit = unit;
        k.provenance.source = "made up";
        return k;
    };
    const double inf = std::numeric_limits<double>::infinity();
    EngineBackend b;
    b.backend = "cuda";
    b.linear_kernels = {kernel("mmvq", {"quantized"}, 8, Unit::vector), kernel("gemv", {"float"}, 1, Unit::vector),
                        kernel("q8 tiles", {"q8_0"}, 64, Unit::matrix), kernel("small gemv", {"*"}, 4, Unit::vector),
                        kernel("gemm", {"*"}, inf, Unit::matrix), kernel("never", {"*"}, inf, Unit::vector)};
    auto names = [&](const Format& f) {
        std::vector<std::string> out;
        for (const auto& k : b.kernels_for(f, "tiny")) out.push_back(k.name);
        return out;
    };
    const Format q4 = parse_format("Q4_K"), q8 = parse_format("Q8_0"), bf16 = format_of(DType::bf16);
    REQUIRE(q4.dequant_flops_per_element > 0);
    REQUIRE(bf16.dequant_flops_per_element == 0);
    CHECK(names(q4) == std::vector<std::string>{"mmvq", "gemm"});  // "small gemv" (4 rows) is shadowed by mmvq (8)
    CHECK(names(q8) == std::vector<std::string>{"mmvq", "q8 tiles", "gemm"});  // by name, lower case
    CHECK(names(bf16) == std::vector<std::string>{"gemv", "small gemv", "gemm"});
    CHECK(b.linear_kernels[0].handles(q4));
    CHECK_FALSE(b.linear_kernels[0].handles(bf16));
    CHECK(b.linear_kernels[1].handles(bf16));
    CHECK_FALSE(b.linear_kernels[1].handles(q8));
    CHECK(b.linear_kernels[2].handles(q8));
    CHECK_FALSE(b.linear_kernels[2].handles(q4));
    // a kernel of some device families stays before the kernels that serve the others: it shadows and ends nothing
    EngineBackend gated = b;
    LinearKernel native = kernel("native fp4", {"q8_0"}, inf, Unit::matrix);
    native.families = {"nvidia-gb10"};
    gated.linear_kernels.insert(gated.linear_kernels.begin() + 1, native);
    auto gated_names = [&](const Format& f) {
        std::vector<std::string> out;
        for (const auto& k : gated.kernels_for(f, "tiny")) out.push_back(k.name);
        return out;
    };
    CHECK(gated_names(q8) == std::vector<std::string>{"mmvq", "native fp4", "q8 tiles", "gemm"});
    CHECK(gated_names(q4) == names(q4));
    CHECK(native.runs_on("nvidia-gb10"));
    CHECK_FALSE(native.runs_on("nvidia-hopper"));
    CHECK(kernel("any", {"*"}, inf, Unit::matrix).runs_on("nvidia-hopper"));
    EngineBackend only_gated;
    only_gated.linear_kernels = {native};
    CHECK_THROWS_WITH_AS(only_gated.kernels_for(q8, "tiny"), doctest::Contains("on every device family"), InvalidArgument);
    // no kernel for a format, or none beyond some rows: errors naming the engine and the format
    EngineBackend only_float;
    only_float.linear_kernels = {kernel("gemm", {"float"}, inf, Unit::matrix)};
    CHECK_THROWS_WITH_AS(only_float.kernels_for(q4, "tiny"), doctest::Contains("engine 'tiny'"), InvalidArgument);
    const std::string none = "no linear kernel for weights in " + q4.name;
    CHECK_THROWS_WITH_AS(only_float.kernels_for(q4, "tiny"), doctest::Contains(none.c_str()), InvalidArgument);
    EngineBackend limited;
    limited.linear_kernels = {kernel("gemv", {"*"}, 8, Unit::vector)};
    CHECK_THROWS_WITH_AS(limited.kernels_for(bf16, "tiny"), doctest::Contains("above 8 rows"), InvalidArgument);
    // the engine_db engines run every format the quantizations produce
    for (const Engine& e : engine_db().engines())
        for (const EngineBackend& eb : e.backends)
            for (const Format& f : {q4, q8, bf16, format_of(DType::fp16), format_of(DType::fp32)}) {
                CAPTURE(e.id);
                CAPTURE(f.name);
                const auto ks = eb.kernels_for(f, e.id);
                REQUIRE_FALSE(ks.empty());
                CHECK(ks.back().max_rows == inf);
                CHECK(ks.back().unconditional());
                double reach = 0;  // the rows the kernels of every family and layer cover grow along the list
                for (const LinearKernel& k : ks) {
                    CHECK(k.max_rows > reach);
                    if (k.unconditional()) reach = k.max_rows;
                }
            }
}

TEST_CASE("a kernel's ALU work per multiply-add follows the weight format's block layout (alu_ops_scale)") {
    LinearKernel k;
    k.alu_ops_per_mac = 0.3;
    CHECK(k.alu_ops_for(parse_format("Q4_K")) == 0.3);  // no table: every format alike
    k.alu_ops_scale = {{"q4_k", 1.172}, {"q8_0", 0.827}};
    CHECK(k.alu_ops_for(parse_format("Q4_K")) == doctest::Approx(0.3 * 1.172));
    CHECK(k.alu_ops_for(parse_format("q8_0")) == doctest::Approx(0.3 * 0.827));
    CHECK(k.alu_ops_for(parse_format("Q4_0")) == 0.3);  // not listed: the reference
    // llama.cpp's MMQ on CUDA, counted in its machine code: K-quants unpack more than legacy blocks, Q8_0 less
    const EngineBackend& cuda = engine_db().get("llama.cpp").backend("cuda");
    const PhaseOptions o = phase_options(cuda, "llama.cpp", format_of(DType::fp16), false, 1);
    auto mmq_alu = [&](const char* f) {
        const std::vector<LinearPath> paths = linear_paths(parse_format(f), o);
        REQUIRE_FALSE(paths.empty());
        CHECK(paths.back().unit == Unit::matrix);  // MMQ above MMVQ's rows
        return paths.back().alu_ops_per_mac;
    };
    const double q4_0 = mmq_alu("Q4_0");
    CHECK(q4_0 > 0);
    CHECK(mmq_alu("Q8_0") < q4_0);
    CHECK(mmq_alu("Q4_K") > q4_0);
    CHECK(mmq_alu("Q6_K") > mmq_alu("Q4_K"));
    CHECK(mmq_alu("Q6_K") == doctest::Approx(q4_0 * 1.306));
    // counted in issue slots at the SM's dispatch rate; the HIP build's copies stay on the INT32 lanes but CDNA's,
    // whose hardware_db files give its issue rate (64 lane-instructions per CU and clock)
    CHECK(linear_paths(parse_format("Q4_0"), o).back().alu_on_issue);
    const EngineBackend& rocm = engine_db().get("llama.cpp").backend("rocm");
    for (const LinearKernel& hip : rocm.linear_kernels) {
        CAPTURE(hip.name);
        if (hip.alu_ops_per_mac > 0) CHECK(hip.alu_on_issue == (hip.name == "mul_mat_q (MMQ), CDNA"));
    }
}

TEST_CASE("a kernel's ALU work may be issue slots (\"alu_format\": \"issue\"); its parser names the choices") {
    auto engine_with = [](const std::string& alu_format) {
        return parse_engine(with(kFullEngine, R"("alu_format": "int32")", R"("alu_format": ")" + alu_format + "\""), "engines/full.json");
    };
    const Engine e = engine_with("issue");
    const LinearKernel& k = e.backend("any").linear_kernels.at(1);
    CHECK(k.alu_on_issue);
    CHECK(k.alu_format == DType::int32);  // what a device without an issue rate runs them as
    CHECK(e.to_json(-1).find(R"("alu_format":"issue")") != std::string::npos);
    CHECK(parse_engine(e.to_json(), "engines/again.json").backend("any").linear_kernels.at(1).alu_on_issue);
    CHECK_FALSE(engine_with("fp32").backend("any").linear_kernels.at(1).alu_on_issue);
    CHECK_THROWS_WITH_AS(engine_with("issued"),
                         doctest::Contains("'backends.any.linear_kernels.value[1].alu_format' must be one of int32, fp32, "
                                           "fp16, issue, got 'issued'"),
                         InvalidArgument);
}

TEST_CASE("llama.cpp on CUDA: f16 sums where ggml asks cuBLAS and the mma for them, and its flash attention's issue") {
    const EngineBackend& b = engine_db().get("llama.cpp").backend("cuda");
    // the unfused path: KQ in f32 precision (llama-graph.cpp), TF32 on the tensor cores; KQV with CUBLAS_COMPUTE_16F
    CHECK(b.attention_format == "tf32");
    CHECK(b.attention_pv_format == "fp16_acc16");
    CHECK(b.flash_qk_format == "fp16");         // Q·Kᵀ in f32 accumulators
    CHECK(b.flash_pv_format == "fp16_acc16");   // P·V in half2 accumulators
    const auto& issue = b.flash_issue_per_score;
    for (const char* family : {"default", "nvidia-hopper", "nvidia-blackwell", "nvidia-blackwell-gb20x", "nvidia-gb10"}) {
        CAPTURE(family);
        REQUIRE(issue.count(family));
        for (const auto& row : issue.at(family)) CHECK(row[2] < row[1]);  // a GQA group's blocks pipeline their loads
    }
    CHECK(ops::issue_per_score_at(issue.at("default"), 128, false) == doctest::Approx(42.47));
    CHECK(b.sources.at("flash_attention_issue").source.find("calibration/fattn_sass.py") != std::string::npos);
    // F16 weights: cuBLAS with f16 sums; BF16: f32 sums
    const auto f16 = b.kernels_for(parse_format("F16"), "llama.cpp"), bf16 = b.kernels_for(parse_format("BF16"), "llama.cpp");
    CHECK(f16.back().compute == "fp16_acc16");
    CHECK(bf16.back().compute == "fp16");
    // the CPU backend: both products in fp32 (F16C conversion, fp32 FMA), no instruction table
    const EngineBackend& cpu = engine_db().get("llama.cpp").backend("cpu");
    CHECK(cpu.flash_qk_format == "fp32");
    CHECK(cpu.flash_pv_format == "fp32");
    CHECK(cpu.attention_format == "fp32");
    CHECK(cpu.flash_issue_per_score.empty());
    // an engine that writes no formats keeps both products in attention_format
    CHECK(engine_db().get("generic").backend("any").flash_qk_format == "attention");
    // the HIP build: KQ in f32 (no TF32 there), KQV and flash attention in f16
    const EngineBackend& rocm = engine_db().get("llama.cpp").backend("rocm");
    CHECK(rocm.attention_format == "fp32");
    CHECK(rocm.attention_pv_format == "fp16");
    CHECK(rocm.flash_qk_format == "fp16");
    CHECK(rocm.flash_issue_per_score.empty());
    // Metal: the unfused products run kernel_mul_mm (fp16 tiles: the tensor API on M5), flash attention's simdgroup
    // matrices on the ALUs (their fp32 rate, which fp16 shares there)
    const EngineBackend& metal = engine_db().get("llama.cpp").backend("metal");
    CHECK(metal.attention_format == "fp16");
    CHECK(metal.flash_qk_format == "fp32");
    CHECK(metal.flash_pv_format == "fp32");
    CHECK(metal.flash_issue_per_score.empty());
    CHECK(engine_db().get("vllm").backend("cuda").flash_issue_per_score.empty());
}

TEST_CASE("llama.cpp's prompt flash attention converts a K/V cache to f16 where each backend's source does") {
    const Engine& e = engine_db().get("llama.cpp");
    const Format q8 = parse_kv_format("q8_0"), q4 = parse_kv_format("q4_0"), bf16 = parse_kv_format("bf16"),
                 f16 = parse_kv_format("f16"), f32 = parse_kv_format("f32");
    // CUDA (and its HIP build): every cache but f16, from 3 queries (below them the vec kernel reads it as stored)
    for (const char* backend : {"cuda", "rocm"}) {
        CAPTURE(backend);
        const KvToF16& k = e.backend(backend).flash_attention_kv_to_f16;
        CHECK(k.converts(q8, 512, "nvidia-ada"));
        CHECK(k.converts(bf16, 512, "amd-rdna3"));
        CHECK(k.converts(q4, 3, "nvidia-ada"));
        CHECK_FALSE(k.converts(q4, 2, "nvidia-ada"));
        CHECK_FALSE(k.converts(f16, 512, "nvidia-ada"));
    }
    // Metal: the legacy quants from 32 queries; bf16 and f32 caches read as stored
    const KvToF16& metal = e.backend("metal").flash_attention_kv_to_f16;
    CHECK(metal.converts(q8, 32, "apple-m4"));
    CHECK(metal.converts(q4, 512, "apple-m4"));
    CHECK_FALSE(metal.converts(q8, 31, "apple-m4"));
    CHECK_FALSE(metal.converts(bf16, 512, "apple-m4"));
    CHECK_FALSE(metal.converts(f32, 512, "apple-m4"));
    // Vulkan: q8_0 from 64 queries, except where cooperative_matrix2 (NVIDIA) or Intel Xe1 read it in the shader
    const KvToF16& vulkan = e.backend("vulkan").flash_attention_kv_to_f16;
    CHECK(vulkan.converts(q8, 64, "amd-rdna3"));
    CHECK(vulkan.converts(q8, 512, "intel-xe2-hpg"));
    CHECK_FALSE(vulkan.converts(q8, 63, "amd-rdna3"));
    CHECK_FALSE(vulkan.converts(q4, 512, "amd-rdna3"));
    CHECK_FALSE(vulkan.converts(q8, 512, "nvidia-ada"));
    CHECK_FALSE(vulkan.converts(q8, 512, "intel-xe-hpg"));
    // the CPU backend and mlx read every cache as stored
    CHECK_FALSE(e.backend("cpu").flash_attention_kv_to_f16.converts(q8, 512, ""));
    CHECK_FALSE(engine_db().get("mlx").backend("any").flash_attention_kv_to_f16.converts(q8, 512, "apple-m4"));
}

TEST_CASE("llama.cpp on ROCm: the CUDA backend's kernels built for HIP, with each RDNA generation's MMQ thresholds") {
    const Engine& e = engine_db().get("llama.cpp");
    const EngineBackend &rocm = e.backend("rocm"), &cuda = e.backend("cuda");
    auto path = [&](const char* format, double rows, const std::string& family = "amd-rdna3.5") {
        for (const LinearKernel& k : rocm.kernels_for(parse_format(format), "llama.cpp"))
            if (rows <= k.max_rows && k.runs_on(family)) return k;
        FAIL("no kernel");
        return LinearKernel{};
    };
    CHECK(path("Q4_0", 1).name == "mul_mat_vec_q (MMVQ)");
    CHECK(path("Q4_K", 512).name == "mul_mat_q (MMQ)");
    CHECK(path("Q4_K", 512).compute == "int8");
    CHECK_FALSE(path("Q4_K", 512).stream_k);  // conventional tiling off NVIDIA and CDNA
    // per family (mmq-config-*.cuh): RDNA3.5 one block per tile, no split-K, a tile per WGP of two CUs; CDNA stream-K
    const KernelOccupancy rdna = path("Q4_K", 512).occupancy_on("amd-rdna3.5");
    CHECK_FALSE(rdna.split_k);
    CHECK(rdna.tiles_per_unit == 0.5);
    CHECK_FALSE(rdna.stream_k);
    // CDNA (mmq-config-cdna.cuh): its own MMQ, stream-K, tiles of at most 64 tokens, the unpacking on issue slots
    const LinearKernel cdna = path("Q4_K", 512, "amd-cdna3");
    CHECK(cdna.name == "mul_mat_q (MMQ), CDNA");
    CHECK(cdna.occupancy_on("amd-cdna3").stream_k);
    CHECK(cdna.occupancy_on("amd-cdna3").tiles_per_unit == 1);
    CHECK(cdna.tile_m == 64);
    CHECK(cdna.tile_n == 128);
    CHECK(cdna.alu_on_issue);
    CHECK(path("Q4_K", 512, "amd-cdna4").name == "mul_mat_q (MMQ), CDNA");
    CHECK(cdna.alu_ops_per_mac == path("Q4_K", 512).alu_ops_per_mac);  // the CUDA fit's, like every MMQ kernel's
    CHECK(path("Q4_K", 512).occupancy_on("nvidia-hopper") == KernelOccupancy{1, 1, true, false});  // the kernel's own
    CHECK(path("Q6_K", 256).occupancy_on("amd-rdna3.5") == rdna);
    CHECK(path("Q4_K", 512).by_family.at("amd-rdna3.5").provenance.source.find("mmq-config-rdna3-5.cuh") != std::string::npos);
    CHECK(path("Q6_K", 256).name == "mul_mat_q (MMQ), Q6_K up to 256 tokens");
    CHECK(path("Q6_K", 512).name == "dequantize + hipBLAS GEMM");  // RDNA3.5 takes larger Q6_K batches to hipBLAS
    CHECK(path("Q6_K", 512).compute == "fp16");
    CHECK(path("Q2_K", 200).name == "dequantize + hipBLAS GEMM");
    CHECK(path("F16", 512).name == "hipBLAS GEMM");
    // a MoE layer of 64 experts or more stays on MMQ at any count on RDNA3 (mmq.cu: n_experts >= 64)
    CHECK(path("Q6_K", 512).max_experts == 63);
    CHECK(path("Q2_K", 200).max_experts == 63);
    // RDNA3.0 takes Q6_K to MMQ up to 128 tokens; RDNA4, RDNA2 and CDNA3 every type at every count (mmq.cu)
    CHECK(path("Q6_K", 128, "amd-rdna3").name == "mul_mat_q (MMQ), Q6_K up to 128 tokens");
    CHECK(path("IQ2_XS", 128, "amd-rdna3").name == "mul_mat_q (MMQ), IQ2_XS / IQ2_S up to 128 tokens");
    CHECK(path("IQ2_S", 200, "amd-rdna3").name == "dequantize + hipBLAS GEMM, RDNA3.0 IQ2");
    CHECK(path("IQ2_S", 200).name == "mul_mat_q (MMQ)");  // RDNA3.5 keeps IQ2 on MMQ
    CHECK(path("Q6_K", 200, "amd-rdna3").name == "dequantize + hipBLAS GEMM");
    for (const char* family : {"amd-rdna4", "amd-cdna3"})
        for (const char* format : {"Q6_K", "Q2_K", "Q4_K"}) {
            CAPTURE(family);
            CAPTURE(format);
            CHECK(path(format, 4096, family).name.rfind("mul_mat_q (MMQ)", 0) == 0);
            CHECK(path(format, 4096, family).unit == Unit::matrix);
        }
    // RDNA2 has no WMMA: MMQ's dp4a path on the vector ALUs, with more integer work per multiply-add than the MMA's
    for (const char* format : {"Q6_K", "Q2_K", "Q4_K", "Q4_0"}) {
        CAPTURE(format);
        CHECK(path(format, 4096, "amd-rdna2").name == "mul_mat_q (MMQ), dp4a");
        CHECK(path(format, 4096, "amd-rdna2").unit == Unit::vector);
        CHECK(path(format, 4096, "amd-rdna2").alu_ops_for(parse_format(format)) >
              1.5 * path(format, 4096, "amd-rdna3").alu_ops_for(parse_format(format)));
    }
    // what the corpus cannot give it (no AMD GPU) is derived from the CUDA build's fit, with that as its source
    CHECK(rocm.kernel_fixed_cost_scale == cuda.kernel_fixed_cost_scale);
    CHECK(rocm.bandwidth_fraction == cuda.bandwidth_fraction);
    CHECK(rocm.sources.at("kernel_fixed_cost_scale").source.find("derived") != std::string::npos);
    CHECK(path("Q4_K", 512).alu_ops_per_mac == cuda.kernels_for(parse_format("Q4_K"), "llama.cpp").back().alu_ops_per_mac);
    // the native backend of an AMD GPU
    CHECK(e.native_backend.at("amd") == "rocm");
}

TEST_CASE("llama.cpp on Vulkan: mat-vec shaders up to 8 tokens, cooperative-matrix fp16 tiles with f16 sums above") {
    const Engine& e = engine_db().get("llama.cpp");
    const EngineBackend& vk = e.backend("vulkan");
    auto path = [&](const char* format, double rows, const std::string& family = "amd-rdna3") {
        for (const LinearKernel& k : vk.kernels_for(parse_format(format), "llama.cpp"))
            if (rows <= k.max_rows && k.runs_on(family)) return k;
        FAIL("no kernel");
        return LinearKernel{};
    };
    for (const char* f : {"Q4_0", "Q4_K", "Q6_K", "Q8_0", "F16", "BF16"}) {
        CAPTURE(f);
        CHECK(path(f, 8).name == "mul_mat_vec / mul_mat_vecq");  // mul_mat_vec_max_cols on every vendor
        CHECK(path(f, 8).unit == Unit::vector);
        CHECK(path(f, 9).unit == Unit::matrix);
        // not the activations' fp32, not int8 (no MMQ beside coopmat): fp16 tiles, summed in f16 (f16acc) but BF16's
        CHECK(path(f, 512).compute == (std::string(f) == "BF16" ? "fp16" : "fp16_acc16"));
    }
    CHECK(path("Q4_K", 512).name == "mul_mm (cooperative matrix), quantized weights");
    CHECK(path("F16", 512).name == "mul_mm (cooperative matrix), F16 weights");
    CHECK(path("BF16", 512).name == "mul_mm (cooperative matrix), float weights");
    CHECK(path("Q4_K", 512).dequant_every_rows == 128);  // into shared memory per 128-token column tile
    CHECK(path("F16", 512).dequant_every_rows == 0);
    // without cooperative matrices (RDNA2; Intel's Alchemist, left out by ggml): integer-dot MMQ for the types it
    // has, the scalar fp16 mul_mm for the rest, on the vector ALUs in 64 x 64 tiles
    for (const char* family : {"amd-rdna2", "intel-xe-hpg"}) {
        CAPTURE(family);
        CHECK(path("Q4_K", 512, family).name == "mul_mmq (integer dot), devices without cooperative matrices");
        CHECK(path("Q4_K", 512, family).compute == "int8");
        CHECK(path("Q4_K", 512, family).launches == 2);  // the activations' q8_1 dispatch
        CHECK(path("IQ4_XS", 512, family).name == "mul_mm (scalar), devices without cooperative matrices");
        CHECK(path("F16", 512, family).compute == "fp16");
        CHECK(path("F16", 512, family).unit == Unit::vector);
        CHECK(path("Q4_K", 4, family).name == "mul_mat_vec / mul_mat_vecq");
    }
    CHECK(path("Q4_K", 512, "intel-xe2-hpg").name == "mul_mm (cooperative matrix), quantized weights");  // Battlemage
    CHECK(vk.attention_format == "fp16");          // KQ: f32 precision, f32acc
    CHECK(vk.attention_pv_format == "fp16_acc16");  // KQV: the default precision's f16acc
    CHECK(vk.flash_qk_format == "fp16");            // flash attention: f32acc, its precision set to f32
    CHECK(vk.flash_pv_format == "fp16");
    CHECK(vk.op_kernels.at("residual_add") == 0);  // MUL_MAT_ADD at decode
    CHECK(vk.prefill_ubatch_tokens == 512);
    CHECK(e.native_backend.at("intel") == "vulkan");
    CHECK(engine_db().get("llama.cpp-vulkan").native_backend.at("amd") == "vulkan");
}

TEST_CASE("quant_for: 'mxfp4' is the MXFP4_MOE file type on the engines that load GGUF files") {
    CHECK(engine("llama.cpp")->quant_for("MXFP4") == "MXFP4_MOE");
    CHECK(engine("llama.cpp-metal")->quant_for("mxfp4") == "MXFP4_MOE");
    CHECK(engine("llama.cpp")->quant_for("Q4_K_M") == "Q4_K_M");
    CHECK(engine("vllm")->quant_for("mxfp4") == "mxfp4");
    CHECK(engine("mlx")->quant_for("mxfp4") == "mxfp4");
}

TEST_CASE("to_json round-trips every engine through parse_engine") {
    for (const Engine& e : engine_db().engines()) {
        CAPTURE(e.id);
        const std::string j = e.to_json();
        const Engine again = parse_engine(j, "<round trip>");
        CHECK(again.id == e.id);
        CHECK(again.name == e.name);
        CHECK(again.summary == e.summary);
        CHECK(again.aliases == e.aliases);
        CHECK(again.native_backend == e.native_backend);
        CHECK(again.native_backend_provenance.source == e.native_backend_provenance.source);
        REQUIRE(again.backends.size() == e.backends.size());
        for (std::size_t i = 0; i < e.backends.size(); ++i) check_same_backend(again.backends[i], e.backends[i]);
        CHECK(again.to_json() == j);
    }
    // an engine with a vendor map, a second backend, uncertain sources and every kernel field
    const Engine e = parse_engine(kFullEngine, "engines/full.json");
    REQUIRE(e.backends.size() == 2);
    const Engine again = parse_engine(e.to_json(), "<round trip>");
    REQUIRE(again.backends.size() == 2);
    CHECK(again.native_backend == e.native_backend);
    for (std::size_t i = 0; i < e.backends.size(); ++i) check_same_backend(again.backends[i], e.backends[i]);
    CHECK(again.backend("metal").fused_qkv);
    CHECK_FALSE(again.backend("any").fused_qkv);
    CHECK(again.backend("any").sources.at("vocab_parallel").uncertain == "maybe");
    CHECK(again.backend("any").linear_kernels.back().provenance.uncertain == "a guess");
    CHECK(again.backend("any").linear_kernels.back().dequant_every_rows == 32);
    CHECK_FALSE(again.backend("any").linear_kernels.back().dequant_overlapped);
    CHECK(again.backend("any").linear_kernels.back().stream_k);
    CHECK_FALSE(again.backend("any").linear_kernels.front().stream_k);  // absent: whole waves
    CHECK(again.backend("any").linear_kernels.back().moe_tile_from_batch);
    CHECK_FALSE(again.backend("any").linear_kernels.front().moe_tile_from_batch);  // absent: each expert's share
    CHECK(again.backend("any").linear_kernels.back().moe_launches == 3);
    CHECK(again.backend("any").linear_kernels.front().moe_launches == 0);  // absent: its launches
    CHECK(again.backend("any").linear_kernels.back().row_tile_step == 8);
    CHECK(again.backend("any").linear_kernels.back().alu_weight_share == 0.25);
    CHECK(again.backend("any").linear_kernels.front().row_tile_step == 0);  // absent: powers of two
    CHECK(again.backend("any").linear_kernels.front().families == std::vector<std::string>{"nvidia-gb10", "amd-rdna3.5"});
    CHECK(again.backend("any").linear_kernels.back().families.empty());  // absent: every family
    CHECK(again.backend("any").linear_kernels.front().max_experts == 63);
    CHECK(std::isinf(again.backend("any").linear_kernels.back().max_experts));  // absent: any
}

TEST_CASE("engine(name): by id or alias, case-insensitively; an unknown name is NotFound with a hint") {
    CHECK(engine("LLAMACPP")->id == "llama.cpp");
    CHECK(engine("llama.cpp")->id == "llama.cpp");
    CHECK(engine("Llama.CPP")->id == "llama.cpp");
    CHECK(engine("GPT-FAST")->id == "gpt-fast");
    CHECK(engine("Cuda-Graphs")->id == "cuda-graphs");
    // every alias of every engine finds it
    for (const Engine& e : default_engines()->engines())
        for (const auto& alias : e.aliases) {
            CAPTURE(alias);
            CHECK(engine(alias)->id == e.id);
            CHECK(engine(to_lower(alias))->id == e.id);
        }
    CHECK_THROWS_WITH_AS(engine("nope"), doctest::Contains("unknown engine 'nope'"), NotFound);
    CHECK_THROWS_WITH_AS(engine("nope"), doctest::Contains("llama.cpp, cuda-graphs, generic, gpt-fast"), NotFound);
    CHECK_THROWS_WITH_AS(engine("gpt-fats"), doctest::Contains("did you mean 'gpt-fast'?"), NotFound);
    CHECK_THROWS_WITH_AS(engine("lama.cpp"), doctest::Contains("did you mean 'llama.cpp'?"), NotFound);
    // the shared pointer keeps the database alive
    const std::shared_ptr<const Engine> e = engine("generic");
    CHECK(e->id == "generic");
    CHECK(default_engines()->get("generic").id == "generic");
}

TEST_CASE("an engine based on another replaces the base's kernels, and their sources with them") {
    const std::string base_text = with(with(kTinyEngine, R"("id": "tiny")", R"("id": "base3")"), R"("linear_kernels": {"value": [)",
                                       R"("linear_kernels": {"value": [{"name": "ka", "weights": ["*"], "max_rows": 1, "unit": "vector", "compute": "activation", "source": "made up ka"}, {"name": "kb", "weights": ["*"], "max_rows": 4, "unit": "vector", "compute": "activation", "source": "made up kb"}, )");
    const std::vector<Engine> bases{parse_engine(base_text, "base3.json")};
    REQUIRE(bases[0].backend("any").linear_kernels.size() >= 3);
    const std::string derived = R"({"schema_version": 1, "id": "derived", "name": "derived", "based_on": "base3",
        "summary": "one kernel for everything", "backends": {"any": {"linear_kernels": {"value": [
        {"name": "only", "weights": ["*"], "unit": "matrix", "compute": "activation", "source": "made up only"}]}}}})";
    const Engine d = parse_engine(derived, "derived.json", &bases);
    const EngineBackend& b = d.backend("any");
    REQUIRE(b.linear_kernels.size() == 1);
    CHECK(b.sources.count("linear_kernels[0]") == 1);
    CHECK(b.sources.at("linear_kernels[0]").source == "made up only");
    CHECK(b.sources.count("linear_kernels[1]") == 0);
    CHECK(b.sources.count("linear_kernels[2]") == 0);
    // the round trip keeps exactly the same sources
    const Engine again = parse_engine(d.to_json(), "derived-again.json");
    CHECK(again.backend("any").sources.size() == b.sources.size());
}
