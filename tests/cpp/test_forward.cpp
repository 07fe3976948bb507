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
#include <utility>
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

namespace {
const PhaseOp* find_op(const std::vector<PhaseOp>& ops, const std::string& name) {
    for (const auto& op : ops)
        if (op.name == name) return &op;
    return nullptr;
}
}  // namespace

TEST_CASE("MLA: absorbed projections and latent attention in decode, the expanded form in prefill, by hand") {
    const Model m = catalog("deepseek-r1");
    const auto formats = tensor_formats(m, "bf16", kBf16);
    PhaseOptions opt;
    opt.activation = kBf16;
    opt.kv = kBf16;
    opt.attention = ops::AttentionKind::flash;
    opt.flash = ops::FlashTiles{228 * 1024.0, 50e6, 132, 2};
    opt.compute_units = 132;
    const DType bf16 = DType::bf16;
    // decode at context 1000: 128 heads, each a query of 512 + 64 against the one cached latent per position
    const auto decode = forward_ops(m, formats, 1, 1, 999, opt);
    const PhaseOp* at = find_op(decode, "attention");
    REQUIRE(at);
    CHECK(at->count == 61);
    CHECK(at->cost.flops(Unit::matrix, bf16) == 2.0 * 128 * 576 * 1000 + 2.0 * 128 * 512 * 1000);  // 278,528,000
    CHECK(at->cost.bytes_read[0] == 1000.0 * 576 * 2 + 128.0 * 576 * 2);  // the latents once, q
    CHECK(at->cost.bytes_written[0] == 128.0 * 512 * 2);                  // o in the latent space
    // the absorption: q_nope x W_UK (128 -> 512) and o x W_UV (512 -> 128) for every head
    for (const char* name : {"attn_k_b", "attn_v_b"}) {
        CAPTURE(name);
        const PhaseOp* p = find_op(decode, name);
        REQUIRE(p);
        CHECK(p->count == 61);
        CHECK(p->cost.flops(Unit::matrix, bf16) == 2.0 * 128 * 128 * 512);
        CHECK(p->cost.bytes_read[0] == 128.0 * 128 * 512 * 2 + 128.0 * (name[5] == 'k' ? 128 : 512) * 2);
    }
    const PhaseOp* kv = find_op(decode, "kv_append");
    REQUIRE(kv);
    CHECK(kv->cost.bytes_written[0] == 576.0 * 2);
    // prefill of 64 tokens: kv_b_proj expands the latents into per-head K (nope) and V, the same FLOPs per row ...
    const auto prefill = forward_ops(m, formats, 1, 64, 0, opt);
    for (const char* name : {"attn_k_b", "attn_v_b"}) {
        CAPTURE(name);
        std::size_t n = 0;
        for (const auto& op : prefill) n += op.name == name;
        CHECK(n == 1);  // one form per pass
        const PhaseOp* p = find_op(prefill, name);
        CHECK(p->cost.flops(Unit::matrix, bf16) == 64 * 2.0 * 512 * 128 * 128);
        CHECK(p->cost.bytes_written[0] == 64.0 * 128 * 128 * 2);  // K's nope part or V, per head
    }
    // ... and multi-head attention of qk 192 and v 128 dims: 2NM·192 + 2NM·128 per head, causal
    const PhaseOp* pa = find_op(prefill, "attention");
    REQUIRE(pa);
    const double f = (64.0 * 65 / 2) / (64.0 * 64);
    CHECK(pa->cost.flops(Unit::matrix, bf16) == doctest::Approx(128 * (2.0 * 64 * 64 * 192 + 2.0 * 64 * 64 * 128) * f));
    // a prompt after a cached prefix expands the prefix's latents too (kv_b_proj's FLOPs for 100 more rows)
    const auto after_prefix = forward_ops(m, formats, 1, 64, 100, opt);
    const PhaseOp* pp = find_op(after_prefix, "attention");
    REQUIRE(pp);
    CHECK(pp->cost.flops(Unit::matrix, bf16) >
          pa->cost.flops(Unit::matrix, bf16) + 100 * 2.0 * 512 * 128 * (128 + 128) - 1);
    // a decode step's FLOPs: about 2 x the 37.6B active parameters (without the embedding lookup) + attention
    double flops = 0;
    for (const auto& op : decode) flops += op.count * op.cost.flops();
    const double active = 37552282624.0 - 129280.0 * 7168;
    CHECK(flops == doctest::Approx(2 * active + 61 * 278528000.0).epsilon(0.01));
    // tensor parallel 8: 16 heads a rank, and every rank reads the whole latent
    PhaseOptions tp = opt;
    tp.tensor_parallel = 8;
    const auto decode8 = forward_ops(m, formats, 1, 1, 999, tp);
    const PhaseOp* at8 = find_op(decode8, "attention");
    REQUIRE(at8);
    CHECK(at8->cost.flops(Unit::matrix, bf16) == at->cost.flops(Unit::matrix, bf16) / 8);
    CHECK(at8->cost.bytes_read[0] == 1000.0 * 576 * 2 + 16.0 * 576 * 2);
}

TEST_CASE("Llama 4: chunked layers attend at most a chunk, NoPE layers the whole context, MoE and dense layers") {
    const Model m = catalog("llama-4-maverick");
    const auto formats = tensor_formats(m, "bf16", kBf16);
    PhaseOptions opt;
    opt.activation = kBf16;
    opt.kv = kBf16;
    opt.compute_units = 132;
    opt.attention = ops::AttentionKind::flash;  // decode attention reads the cache, q, and nothing else
    const auto decode = forward_ops(m, formats, 1, 1, 19999, opt);
    double chunked = 0, global = 0, rope = 0;
    for (const auto& op : decode) {
        if (op.name == "rope") rope += op.count;
        if (op.name != "attention") continue;
        const double kv = op.cost.bytes_read[0] - 40.0 * 128 * 2;  // less q
        if (kv == 8192.0 * 2048 * 2) chunked += op.count;
        if (kv == 20000.0 * 2048 * 2) global += op.count;
    }
    CHECK(chunked == 36);
    CHECK(global == 12);
    CHECK(rope == 36);  // no rotary embedding on the NoPE layers
    double experts = 0, dense = 0, shared = 0;
    for (const auto& op : decode) {
        if (op.name == "ffn_down_exps") experts += op.count;
        if (op.name == "ffn_down") dense += op.count;
        if (op.name == "ffn_down_shexp") shared += op.count;
    }
    CHECK(experts == 24);
    CHECK(shared == 24);
    CHECK(dense == 24);
    // a decode step's FLOPs: about 2 x the 17.18B active parameters (less the embedding) + attention
    double flops = 0, attention = 0;
    for (const auto& op : decode) {
        flops += op.count * op.cost.flops();
        if (op.name == "attention") attention += op.count * op.cost.flops();
    }
    CHECK(flops - attention == doctest::Approx(2 * (17184691200.0 - 202048.0 * 5120)).epsilon(0.01));
}

TEST_CASE("estimates of DeepSeek-R1 and Llama 4 run: fp8 on 8 x H200 with CUDA graphs") {
    const Device& h200 = roofline::test::hardware_db().get("h200-sxm");
    Workload w;
    w.quant = "fp8";
    w.kv_dtype = "fp8";
    w.flash_attention = true;
    w.engine = "cuda-graphs";
    w.tensor_parallel = 8;
    w.batch = 16;
    w.prompt_tokens = 2000;
    w.gen_tokens = 200;
    for (const char* id : {"deepseek-r1", "llama-4-scout", "llama-4-maverick"}) {
        CAPTURE(id);
        const Model m = catalog(id);
        const Estimate e = estimate(m, h200, w);
        CHECK(std::isfinite(e.decode_tokens_per_s));
        CHECK(e.decode_tokens_per_s > 0);
        CHECK(e.prefill_tokens_per_s > 0);
        CHECK(e.fits);
        const double kv_token = std::string(id) == "deepseek-r1" ? 61.0 * 576 : 48.0 * 2 * 8 * 128 / 8;  // fp8: 1 byte
        CHECK(e.memory_kv_cache == doctest::Approx(16 * 2200 * kv_token));
        double bd = 0;
        for (const auto& row : e.breakdown) bd += row.seconds;
        CHECK(bd == doctest::Approx(e.prefill_s + e.decode_s).epsilon(1e-9));
    }
    // the latent projections are replicated on every rank, the rest split over the 8
    const Model ds = catalog("deepseek-r1");
    const auto formats = estimate_tensor_formats(ds, "fp8");
    double split = 0, whole = 0;
    for (std::size_t i = 0; i < formats.size(); ++i) {
        const std::string& r = ds.tensors[i].role;
        const bool replicated = r == "attn_q_a" || r == "attn_kv_a_mqa" || r == "exp_probs_b" ||
                                (r.size() > 5 && r.compare(r.size() - 5, 5, "_norm") == 0);
        (replicated ? whole : split) += formats[i].bytes;
    }
    CHECK(estimate(ds, h200, w).memory_weights == doctest::Approx(split / 8 + whole).epsilon(1e-12));
}

TEST_CASE("expert biases: top_k rows per token; a GGUF's dimensionless one is read as its elements, not indexed") {
    Model m = catalog("gpt-oss-20b");
    const auto formats = tensor_formats(m, "bf16", kBf16);
    PhaseOptions opt;
    opt.activation = kBf16;
    opt.kv = kBf16;
    opt.compute_units = 10;
    auto bias_elements = [&](const Model& model) {
        for (const auto& op : forward_ops(model, formats, 1, 4, 0, opt))
            if (op.name == "ffn_up_exps.bias") return op.cost.bytes_written[0] / 2 / 4;  // per token, bf16
        return -1.0;
    };
    CHECK(bias_elements(m) == doctest::Approx(4.0 * 2880));  // 4 experts per token × 2880, not 32 × 2880
    for (auto& w : m.tensors)  // as a fuzzed GGUF may give it: no dimensions
        if (w.name == "blk.0.ffn_up_exps.bias") w.shape.clear();
    CHECK_NOTHROW(forward_slots(m, formats, opt));
}

TEST_CASE("a prompt of a head size the engine's fused kernel does not take runs the unfused attention") {
    PhaseOptions o;
    o.attention = ops::AttentionKind::flash;
    CHECK(prompt_attention(o, 256) == ops::AttentionKind::flash);  // no list: every head size
    o.flash_head_dims = {64, 72, 80, 96, 128};                      // mlx's sdpa for prompts
    CHECK(prompt_attention(o, 128) == ops::AttentionKind::flash);
    CHECK(prompt_attention(o, 256) == ops::AttentionKind::standard);
    CHECK(prompt_attention(o, 112) == ops::AttentionKind::standard);
    o.attention = ops::AttentionKind::standard;
    CHECK(prompt_attention(o, 128) == ops::AttentionKind::standard);  // flash off stays off
}

TEST_CASE("a tiled kernel's ALU work per multiply-add: its weight unpacking over the tile's rows, its padded rows") {
    LinearPath p;
    p.tile_m = 128;
    p.alu_weight_share = 0.226;  // ggml's MMQ on sm_86 (engine_db)
    // a full tile of tile_m rows: as counted
    CHECK(alu_tile_factor(p, ops::TileUse{1, 1, 128}) == doctest::Approx(1.0));
    // a 64-row tile unpacks its weights for half as many rows; half of those rows padding doubles it again
    CHECK(alu_tile_factor(p, ops::TileUse{1, 1, 64}) == doctest::Approx(0.226 * 2 + 0.774));
    CHECK(alu_tile_factor(p, ops::TileUse{0.5, 1, 64}) == doctest::Approx(2 * (0.226 * 2 + 0.774)));
    // idle processors of a last wave are the matrix work's alone
    CHECK(alu_tile_factor(p, ops::TileUse{1, 0.5, 128}) == doctest::Approx(1.0));
    // no tiles (a vector path): as counted
    CHECK(alu_tile_factor(p, ops::TileUse{}) == 1.0);
    p.alu_weight_share = 0;
    CHECK(alu_tile_factor(p, ops::TileUse{0.25, 1, 32}) == doctest::Approx(4.0));
}
