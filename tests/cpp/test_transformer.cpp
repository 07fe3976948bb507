#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/inference.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/transformer.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using namespace roofline;

namespace {
std::string model_db_file(const std::string& id) {
    std::ifstream in(std::string(ROOFLINE_TEST_HARDWARE_DB) + "/../model_db/" + id + ".json");
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
Model catalog(const std::string& id) { return Model::from_catalog_entry(model_db_file(id), id + ".json"); }
const Format kBf16 = format_of(DType::bf16);

const char* kTiny = R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048})";
}  // namespace

TEST_CASE("parameter counts match the published ones") {
    for (const char* id : {"llama-2-7b", "llama-3.1-8b", "qwen3-4b", "gpt2", "gpt2-xl", "mixtral-8x7b", "qwen3-30b-a3b",
                           "gemma-2-9b", "phi-3-mini", "mistral-7b"}) {
        CAPTURE(id);
        const Model m = catalog(id);
        if (m.arch.parameters_reported > 0) CHECK(m.parameters() == doctest::Approx(m.arch.parameters_reported).epsilon(1e-6));
    }
    CHECK(catalog("llama-2-7b").parameters() == 6738415616.0);
    CHECK(catalog("qwen3-4b").parameters() == 4022468096.0);
}

TEST_CASE("architectures: GQA, tied embeddings, qk-norm, sliding windows, MoE") {
    const Model q = catalog("qwen3-4b");
    CHECK(q.arch.n_kv_head == 8);
    CHECK(q.arch.head_dim == 128);  // not hidden / heads (80)
    CHECK(q.arch.tied_embeddings);
    CHECK(q.arch.qk_norm);
    const Model g = catalog("gemma-2-9b");
    CHECK(g.arch.window[0] == 4096);
    CHECK(g.arch.window[1] == 0);
    const Model g3 = catalog("gemma-3-4b");
    CHECK(g3.arch.window[4] > 0);
    CHECK(g3.arch.window[5] == 0);  // every 6th layer is global
    const Model moe = catalog("qwen3-30b-a3b");
    CHECK(moe.arch.n_expert == 128);
    CHECK(moe.arch.n_expert_used == 8);
    const Model gpt2 = catalog("gpt2");
    CHECK(gpt2.arch.norm == NormKind::layernorm);
    CHECK(gpt2.arch.position == PositionKind::learned);
    CHECK(gpt2.arch.mlp == MlpKind::plain);
}

TEST_CASE("byte-exact sizes of llama.cpp files") {
    const Model l2 = catalog("llama-2-7b");
    const double GiB = 1024.0 * 1024 * 1024;
    CHECK(l2.weight_bytes("F16", kBf16) / GiB == doctest::Approx(12.55).epsilon(0.001));
    CHECK(l2.weight_bytes("Q8_0", kBf16) / GiB == doctest::Approx(6.67).epsilon(0.001));
    CHECK(l2.weight_bytes("Q4_0", kBf16) / GiB == doctest::Approx(3.56).epsilon(0.002));
    CHECK(l2.weight_bytes("Q4_K_M", kBf16) / GiB == doctest::Approx(3.80).epsilon(0.001));
    CHECK(8 * l2.weight_bytes("Q4_K_M", kBf16) / l2.parameters() == doctest::Approx(4.84).epsilon(0.002));
    const Model l3 = catalog("llama-3.1-8b");
    CHECK(8 * l3.weight_bytes("Q4_K_M", kBf16) / l3.parameters() == doctest::Approx(4.89).epsilon(0.002));
    const Model q = catalog("qwen3-4b");
    CHECK(q.weight_bytes("BF16", kBf16) / 1e9 == doctest::Approx(8.05).epsilon(0.002));
    CHECK(q.weight_bytes("Q8_0", kBf16) / 1e9 == doctest::Approx(4.28).epsilon(0.003));
    CHECK(q.weight_bytes("Q4_K_M", kBf16) / 1e9 == doctest::Approx(2.50).epsilon(0.004));
}

TEST_CASE("GPU schemes quantize the linear layers only") {
    const Model l2 = catalog("llama-2-7b");
    const double bf16 = l2.weight_bytes("bf16", kBf16);
    CHECK(bf16 == doctest::Approx(2 * l2.parameters()).epsilon(1e-4));  // the BF16 mix keeps norms in F32
    const double emb = 4096.0 * 32000;  // token embedding stays bf16
    const double norms = 4096.0 * (2 * 32 + 1);
    CHECK(l2.weight_bytes("int8-wo", kBf16) == doctest::Approx((l2.parameters() - emb - norms) + 2 * (emb + norms)));
    CHECK(l2.weight_bytes("int4-g32", kBf16) == doctest::Approx((l2.parameters() - emb - norms) * 5 / 8 + 2 * (emb + norms)));
    CHECK_THROWS_WITH_AS(l2.weight_bytes("q4_k_mx", kBf16), doctest::Contains("did you mean 'Q4_K_M'"), NotFound);
}

TEST_CASE("bad configs are clear errors") {
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "bert"})", "c.json"),
                         doctest::Contains("model_type 'bert' is not supported; supported: llama"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": 100, "intermediate_size": 10,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "vocab_size": 10})", "c.json"),
                         doctest::Contains("num_key_value_heads (3) must divide num_attention_heads (8)"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": 100, "intermediate_size": 10,
        "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 10})", "c.json"),
                         doctest::Contains("head_dim must be a whole number"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": "big"})", "c.json"),
                         doctest::Contains("'hidden_size' must be a number"), InvalidArgument);
    CHECK_THROWS_AS(Model::from_hf_config("[]", "c.json"), InvalidArgument);
}

TEST_CASE("forward ops: decode reads every weight once, prefill reuses them") {
    const Model m = Model::from_hf_config(kTiny);
    const auto formats = m.tensor_formats("bf16", kBf16);
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

namespace {
const char* kToyDevice = R"({
  "schema_version": 1, "id": "toy", "name": "Toy", "vendor": "nvidia", "family": "toy", "kind": "gpu", "aliases": [],
  "compute_units": {"count": 100, "name": "SM", "source": "made up for a test"},
  "clocks": {"boost_MHz": 1000, "source": "made up for a test"},
  "memory": {"dram": {"type": "HBM", "bandwidth_GBps": 1000, "capacity_GiB": 16, "source": "made up for a test"},
             "l2": {"type": "L2", "capacity_MiB": 40, "source": "made up for a test"},
             "sram": {"type": "smem", "per_unit_KiB": 192, "source": "made up for a test"}},
  "compute": [{"format": "bf16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "fp16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "fp32", "unit": "vector", "peak_TFLOPS": 10, "source": "made up for a test"}],
  "interconnect": [{"name": "link", "bandwidth_GBps": 100, "source": "made up for a test"}],
  "efficiency": {"dram_bandwidth": 0.8, "compute": 0.7, "launch_overhead_us": 3, "source": "made up for a test"}
})";
}  // namespace

TEST_CASE("estimate: decode summed in closed form equals the step-by-step sum") {
    const Model m = catalog("gemma-2-9b");  // sliding windows make the sum piecewise
    const Device d = parse_device(kToyDevice);
    Workload w;
    w.quant = "Q4_K_M";
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
    const Device d = parse_device(kToyDevice);
    Workload w;
    w.quant = "bf16";
    w.engine = "generic";
    const Estimate e = estimate(m, d, w);
    CHECK(e.ceiling_decode_weights == doctest::Approx(1e12 / e.weight_bytes));
    CHECK(e.decode_tokens_per_s < e.ceiling_decode);
    CHECK(e.prefill_tokens_per_s < e.ceiling_prefill);
    CHECK(e.decode_bound == "memory:dram");
    CHECK(e.prefill_bound == "compute");
    CHECK(e.memory.fits);
    CHECK(e.memory.total == doctest::Approx(e.memory.weights + e.memory.kv_cache + e.memory.activations + e.memory.overhead));
    // MHA: every sequence adds its own KV reads (~0.3 GB at this context), so FLOPs per byte stay below the ridge
    // however large the batch; GQA reads 4x less KV and crosses it.
    CHECK(e.compute_bound_batch == 0);
    const Estimate gqa = estimate(catalog("llama-3.1-8b"), d, w);
    CHECK(gqa.compute_bound_batch > 16);
    CHECK(gqa.compute_bound_batch < 1000);
    CHECK(e.max_batch >= 1);
    Workload big = w;
    big.batch = e.max_batch + 1;
    CHECK_FALSE(estimate(m, d, big).memory.fits);  // an answer, not an error
    Workload fit = w;
    fit.batch = e.max_batch;
    CHECK(estimate(m, d, fit).memory.fits);
    // more batch, more aggregate throughput, less per sequence
    Workload b8 = w;
    b8.batch = 8;
    const Estimate e8 = estimate(m, d, b8);
    CHECK(e8.decode_tokens_per_s_total > 4 * e.decode_tokens_per_s_total);
    CHECK(e8.decode_tokens_per_s < e.decode_tokens_per_s);
}

TEST_CASE("speculative decoding and tensor parallel") {
    const Model target = catalog("llama-3.1-8b");
    const Model draft = catalog("llama-3.2-1b");
    const Device d = parse_device(kToyDevice);
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
    CHECK(e.decode_tokens_per_s > estimate(target, d, plain).decode_tokens_per_s);
    Workload tp = plain;
    tp.tensor_parallel = 2;
    const Estimate e2 = estimate(target, d, tp);
    CHECK(e2.decode_tokens_per_s > estimate(target, d, plain).decode_tokens_per_s);
    // each rank holds half the split weights and the whole of the norms (no split) ...
    double all = 0, norms = 0, vocab = 0;
    const auto formats = target.tensor_formats("bf16", format_of(DType::bf16));
    for (std::size_t i = 0; i < formats.size(); ++i) {
        const std::string& role = target.tensors[i].role;
        all += formats[i].bytes;
        if (role.size() > 5 && role.compare(role.size() - 5, 5, "_norm") == 0) norms += formats[i].bytes;
        if (role == "token_embd" || role == "output") vocab += formats[i].bytes;
    }
    CHECK(norms > 0);
    CHECK(e2.memory.weights == doctest::Approx((all - norms) / 2 + norms).epsilon(1e-12));
    CHECK(estimate(target, d, plain).memory.weights == all);
    // ... and, where the engine keeps the vocabulary whole (gpt-fast's tp.py), the embedding and output head too
    tp.engine = "gpt-fast";
    CHECK(estimate(target, d, tp).memory.weights == doctest::Approx((all - norms - vocab) / 2 + norms + vocab).epsilon(1e-12));
    tp.engine = plain.engine;
    tp.tensor_parallel = 3;
    CHECK_THROWS_WITH_AS(estimate(target, d, tp), doctest::Contains("must divide the heads"), InvalidArgument);
}

TEST_CASE("bad workloads are clear errors") {
    const Model m = Model::from_hf_config(kTiny);
    const Device d = parse_device(kToyDevice);
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
}

TEST_CASE("calibration recovers efficiencies from synthetic measurements") {
    const Model m = catalog("qwen3-4b");
    Device truth = parse_device(kToyDevice);
    truth.efficiency.dram_bandwidth = 0.9;
    truth.efficiency.compute = 0.6;
    truth.efficiency.launch_overhead_s = 6e-6;
    std::vector<ThroughputMeasurement> pts;
    for (const char* q : {"BF16", "Q8_0", "Q4_K_M"}) {
        Workload pp;
        pp.quant = q;
        pp.prompt_tokens = 512;
        pp.gen_tokens = 0;
        Workload tg = pp;
        tg.prompt_tokens = 0;
        tg.gen_tokens = 128;
        pts.push_back({&m, q, 1, 512, 0, estimate(m, truth, pp).prefill_tokens_per_s, std::string(q) + " pp512"});
        pts.push_back({&m, q, 1, 0, 128, estimate(m, truth, tg).decode_tokens_per_s, std::string(q) + " tg128"});
    }
    FitReport rep;
    const Device fitted = calibrate_efficiency(parse_device(kToyDevice), pts, "llama.cpp", "f16", &rep);
    CHECK(fitted.efficiency.dram_bandwidth == doctest::Approx(0.9).epsilon(0.03));
    CHECK(fitted.efficiency.compute == doctest::Approx(0.6).epsilon(0.03));
    CHECK(fitted.efficiency.launch_overhead_s == doctest::Approx(6e-6).epsilon(0.1));
    CHECK(rep.rms_relative_error_after < 0.01);
    CHECK(rep.rms_relative_error_after < rep.rms_relative_error_before);
    CHECK_THROWS_AS(calibrate_efficiency(truth, {}, "llama.cpp"), InvalidArgument);
}

TEST_CASE("KV-cache bytes read over a generation: the closed form equals the step-by-step sum") {
    const Format f16 = format_of(DType::fp16);
    for (const char* id : {"llama-3.1-8b", "gemma-2-2b"}) {  // gemma-2 alternates 4096-token sliding windows
        const Model m = catalog(id);
        for (const auto& [prompt, gen] : std::vector<std::pair<double, double>>{{0, 1}, {0, 300}, {4000, 200}, {100, 9000}, {5000, 0}}) {
            double steps = 0;
            for (double c = prompt + 1; c <= prompt + gen; ++c) steps += kv_cache_bytes(m.arch, 2, c, f16);
            CHECK(kv_cache_bytes_read(m.arch, 2, prompt, gen, f16) == doctest::Approx(steps).epsilon(1e-12));
        }
    }
    // without windows: reads grow as gen² (n steps from an empty cache read Σ c = n(n+1)/2 tokens' worth)
    const Model l = catalog("llama-3.1-8b");
    CHECK(kv_cache_bytes_read(l.arch, 1, 0, 2000, f16) / kv_cache_bytes_read(l.arch, 1, 0, 1000, f16) ==
          doctest::Approx(2.0 * 2001 / 1001));
    CHECK_THROWS_AS(kv_cache_bytes_read(l.arch, 1, -1, 10, f16), InvalidArgument);
}

TEST_CASE("engine structure: fused QKV, a whole-vocabulary head, the all-reduce algorithm") {
    const Model m = catalog("llama-2-7b");
    const Device a100 = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB).get("a100-sxm-80gb");
    SUBCASE("gpt-fast projects Q, K and V with one GEMM of the same FLOPs and bytes, two launches fewer") {
        PhaseOptions sep;
        sep.activation = kBf16;
        sep.kv = kBf16;
        PhaseOptions fused = sep;
        fused.fused_qkv = true;
        const auto f = m.tensor_formats("bf16", kBf16);
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
        const auto mixed = forward_ops(m, m.tensor_formats("Q4_K_M", kBf16), 1, 1, 9, fused);
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
        const double launch = a100.efficiency.launch_overhead_s, step = engine("gpt-fast").collective_latency_s;
        const double bytes = 4096 * 2, link = a100.interconnect_bandwidth();
        const BreakdownRow ring = row("cuda-graphs", "all_reduce"), one_shot = row("gpt-fast", "all_reduce");
        CHECK(ring.count == 10 * 2 * m.arch.n_layer);
        CHECK(ring.seconds / ring.count == doctest::Approx(launch + 14 * step + 14.0 / 8 * bytes / link));
        CHECK(one_shot.seconds / one_shot.count == doctest::Approx(launch + 2 * step + 7 * bytes / link));
    }
}
