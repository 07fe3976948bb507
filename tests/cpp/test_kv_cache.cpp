// The KV cache: its formats, bytes per token and layer, its size under tensor parallel, the closed-form reads of a
// decode over a growing cache, and the one GQA convention every attention op reads K and V by.
#include <doctest/doctest.h>

#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/forward.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/weights.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace roofline;
using roofline::test::catalog;

namespace {
// Σ over layers of the tokens each layer's cache holds at `context`, layer by layer.
double brute_token_layers(const Architecture& a, double context) {
    double t = 0;
    for (int l = 0; l < a.n_layer; ++l) {
        const double w = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
        t += w > 0 ? std::min(context, w) : context;
    }
    return t;
}
}  // namespace

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

TEST_CASE("KvLayout groups the layers by window") {
    Architecture a;
    a.n_layer = 7;
    a.n_kv_head = 4;
    a.head_dim = 64;
    a.window = {0, 512, 512, 1024, 0, 512, 1024};
    const KvLayout k = KvLayout::of(a);
    CHECK(k.full_layers == 2);
    REQUIRE(k.windows.size() == 2);
    CHECK(k.windows[0] == std::pair<double, double>{512, 3});  // ascending by window
    CHECK(k.windows[1] == std::pair<double, double>{1024, 2});
    CHECK(k.kv_heads == 4);
    CHECK(k.head_dim == 64);
    // no window at all: every layer is a full-attention layer
    a.window.clear();
    const KvLayout full = KvLayout::of(a);
    CHECK(full.full_layers == 7);
    CHECK(full.windows.empty());
    // gemma-3: five sliding-window layers for each global one, all with one window size
    const Model g3 = catalog("gemma-3-4b");
    const KvLayout g = KvLayout::of(g3.arch);
    REQUIRE(g.windows.size() == 1);
    CHECK(g.windows[0].first == g3.arch.window[0]);
    CHECK(g.full_layers + g.windows[0].second == g3.arch.n_layer);
    CHECK(g.full_layers > 0);
    CHECK(g.windows[0].second == doctest::Approx(5 * g.full_layers).epsilon(0.25));
}

TEST_CASE("token_layers and token_layers_read agree with brute-force sums, with and without sliding windows") {
    for (const char* id : {"gemma-3-4b", "llama-3.1-8b"}) {
        CAPTURE(id);
        const Model m = catalog(id);
        const KvLayout k = KvLayout::of(m.arch);
        const double w = m.arch.window.empty() ? 0 : *std::max_element(m.arch.window.begin(), m.arch.window.end());
        if (std::string(id) == "gemma-3-4b") REQUIRE(w > 0);
        else REQUIRE(w == 0);
        for (double c : {0.0, 1.0, 17.0, w - 1, w, w + 1, 5000.0, 131072.0}) {
            if (c < 0) continue;
            CAPTURE(c);
            CHECK(k.token_layers(c) == brute_token_layers(m.arch, c));
        }
        // prompt and generation on both sides of the window, and across it
        const std::vector<std::pair<double, double>> cases = {
            {0, 0}, {0, 1}, {0, 37}, {w > 0 ? w - 5 : 100, 10}, {w, 1}, {w + 3, 40}, {0, w + 200}, {3000, 1500}};
        for (const auto& [prompt, gen] : cases) {
            CAPTURE(prompt);
            CAPTURE(gen);
            double steps = 0;
            for (double c = prompt + 1; c <= prompt + gen; ++c) steps += brute_token_layers(m.arch, c);
            CHECK(k.token_layers_read(prompt, gen) == steps);  // whole numbers far below 2^53: exact
        }
    }
}

TEST_CASE("kv_cache_bytes: the layout times one token's K and V, split over the tensor-parallel ranks") {
    const Format f16 = format_of(DType::fp16), q8 = parse_kv_format("q8_0");
    const Model l = catalog("llama-3.1-8b");
    CHECK(kv_bytes_per_token_layer(l.arch, f16) == 2.0 * 8 * 128 * 2);
    CHECK(kv_bytes_per_token_layer(l.arch, f16) == kv_bytes(1, 1, 8, 128, f16));
    // 32 layers x 1000 tokens x 2 sequences
    CHECK(kv_cache_bytes(l.arch, 2, 1000, f16) == 2.0 * 1000 * 32 * kv_bytes_per_token_layer(l.arch, f16));
    for (double tp : {2.0, 4.0, 8.0}) {
        CAPTURE(tp);
        CHECK(kv_cache_bytes(l.arch, 2, 1000, f16, tp) == doctest::Approx(kv_cache_bytes(l.arch, 2, 1000, f16) / tp).epsilon(1e-15));
        CHECK(kv_cache_bytes(l.arch, 3, 777, q8, tp) == doctest::Approx(kv_cache_bytes(l.arch, 3, 777, q8) / tp).epsilon(1e-15));
    }
    CHECK_THROWS_AS(kv_cache_bytes(l.arch, 1, 10, f16, 0.5), InvalidArgument);
    // sliding windows keep at most their window
    const Model g3 = catalog("gemma-3-4b");
    CHECK(kv_cache_bytes(g3.arch, 1, 100000, f16) ==
          KvLayout::of(g3.arch).token_layers(100000) * kv_bytes_per_token_layer(g3.arch, f16));
    CHECK(kv_cache_bytes(g3.arch, 1, 100000, f16) < 100000.0 * g3.arch.n_layer * kv_bytes_per_token_layer(g3.arch, f16) / 2);
}

TEST_CASE("parse_kv_format: the KV-cache formats by name, and a clear error for the others") {
    const std::vector<std::string>& names = kv_format_names();
    for (const char* n : {"f16", "bf16", "f32", "fp8", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"})
        CHECK(std::find(names.begin(), names.end(), n) != names.end());
    for (const auto& n : names) {
        CAPTURE(n);
        CHECK_NOTHROW(parse_kv_format(n));
        CHECK(parse_kv_format(n).bytes_per_element() > 0);
    }
    CHECK(parse_kv_format("f16").bytes_per_element() == 2);
    CHECK(parse_kv_format("F16").bytes_per_element() == 2);  // case-insensitive
    CHECK(parse_kv_format("fp16").bytes_per_element() == 2);
    CHECK(parse_kv_format("bf16").bytes_per_element() == 2);
    CHECK(parse_kv_format("f32").bytes_per_element() == 4);
    CHECK(parse_kv_format("fp8").bytes_per_element() == 1);
    CHECK(parse_kv_format("Q8_0").bytes_per_element() == doctest::Approx(34.0 / 32));  // 8.5 bits
    CHECK(parse_kv_format("q4_0").bytes_per_element() == doctest::Approx(18.0 / 32));  // 4.5 bits
    CHECK_THROWS_WITH_AS(parse_kv_format("q4_k"), doctest::Contains("unknown KV cache format 'q4_k'"), NotFound);
    CHECK_THROWS_WITH_AS(parse_kv_format("q4_k"), doctest::Contains("f16, bf16, f32, fp8, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl"),
                         NotFound);
    CHECK_THROWS_AS(parse_kv_format(""), NotFound);
}

TEST_CASE("a multi-token step reads the past K and V once, per KV head, in the cache's format (no double count)") {
    // Llama-3.1-8B: 32 query heads, 8 KV heads of 128. A 5-token step (speculative verification, chunked prefill)
    // after 1000 tokens in the cache attends 1005 positions; its attention op must read the K and V of those 1005
    // positions once per KV head: kv_bytes(1, 1005, 8, 128, f16). e188784 read them per query head inside
    // ops::attention (1.6e7 B for the 1000 past positions) and then added the past K/V again (4.1e6 B).
    const Model m = catalog("llama-3.1-8b");
    REQUIRE(m.arch.n_head == 32);
    REQUIRE(m.arch.n_kv_head == 8);
    REQUIRE(m.arch.head_dim == 128);
    const Format f16 = format_of(DType::fp16);
    PhaseOptions options = phase_options(engine("llama.cpp")->backend("any"), "llama.cpp", parse_kv_format("f16"), false, 1);
    options.activation = f16;  // activations in the cache's format: the only difference between the points is the past
    options.attention_score_bytes = 0;  // S and P written and read once each in that format
    options.unfused_k_bytes = options.unfused_output_bytes = 0;  // no conversion or copy passes (a subcase adds them)
    const std::vector<OpSlot> slots = forward_slots(m, tensor_formats(m, "F16", f16), options);
    const auto at = std::find_if(slots.begin(), slots.end(), [](const OpSlot& s) { return s.kind == SlotKind::attention; });
    REQUIRE(at != slots.end());
    CHECK(at->count == 32);  // one attention slot for every layer (no windows)
    const double N = 5, past = 1000, heads = 32, e = 2;

    SUBCASE("standard attention") {
        REQUIRE(options.attention == ops::AttentionKind::standard);
        const OpCost with_past = slot_cost(*at, options, 1, N, past), fresh = slot_cost(*at, options, 1, N, 0);
        // reads: Q (N·d per head), S and P (N·M each per head: softmax reads S, P·V reads P), K and V of every position
        auto scores = [&](double M) { return heads * 2 * N * M * e; };
        const double q = heads * N * 128 * e;
        CHECK(with_past.bytes_read[0] == q + scores(N + past) + kv_bytes(1, N + past, 8, 128, f16));
        CHECK(fresh.bytes_read[0] == q + scores(N) + kv_bytes(1, N, 8, 128, f16));
        // The past adds one K/V read of its 1000 positions (and the wider score rows, written and read), not two.
        const double score_growth = 2 * (scores(N + past) - scores(N));  // S and P, written and read
        CHECK(with_past.bytes(Level::dram) - fresh.bytes(Level::dram) - score_growth == kv_bytes(1, past, 8, 128, f16));
        CHECK(with_past.bytes_read[0] - fresh.bytes_read[0] - scores(N + past) + scores(N) == kv_bytes(1, past, 8, 128, f16));
        CHECK(kv_bytes(1, past, 8, 128, f16) == 4096000);
    }
    SUBCASE("the unfused path's own copies: per cached K element (every position, per KV head) and per output element") {
        PhaseOptions copies = options;
        copies.unfused_k_bytes = 8;       // ggml-cuda: K converted to f32 (written, then read by the GEMM)
        copies.unfused_output_bytes = 12; // its f16 product converted to f32, the heads merged by a copy
        const OpCost plain = slot_cost(*at, options, 1, N, past), with = slot_cost(*at, copies, 1, N, past);
        const double added = 8 * (N + past) * 8 * 128 + 12 * N * heads * 128;
        CHECK(with.bytes(Level::dram) - plain.bytes(Level::dram) == doctest::Approx(added).epsilon(1e-12));
        CHECK(with.bytes_read[0] - plain.bytes_read[0] == doctest::Approx(added / 2).epsilon(1e-12));
        CHECK(with.flops() == plain.flops());
        // flash attention and a one-token step (decode's own path) take none of them
        PhaseOptions flash = copies;
        flash.attention = ops::AttentionKind::flash;
        flash.flash = ops::FlashTiles{192.0 * 1024, 40e6};
        PhaseOptions flash_plain = flash;
        flash_plain.unfused_k_bytes = flash_plain.unfused_output_bytes = 0;
        CHECK(slot_cost(*at, flash, 1, N, past).bytes(Level::dram) == slot_cost(*at, flash_plain, 1, N, past).bytes(Level::dram));
        CHECK(slot_cost(*at, copies, 1, 1, past).bytes(Level::dram) == slot_cost(*at, options, 1, 1, past).bytes(Level::dram));
    }
    SUBCASE("flash attention with an L2 that holds the re-read rows: DRAM sees the compulsory traffic only") {
        PhaseOptions flash = options;
        flash.attention = ops::AttentionKind::flash;
        flash.flash = ops::FlashTiles{192.0 * 1024, 40e6};
        const OpCost with_past = slot_cost(*at, flash, 1, N, past), fresh = slot_cost(*at, flash, 1, N, 0);
        CHECK(with_past.bytes_read[0] == heads * N * 128 * e + kv_bytes(1, N + past, 8, 128, f16));
        CHECK(with_past.bytes(Level::dram) - fresh.bytes(Level::dram) == kv_bytes(1, past, 8, 128, f16));
    }
    SUBCASE("the KV cache's format, not the activations'") {
        PhaseOptions q8 = options;
        q8.kv = parse_kv_format("q8_0");
        const OpCost with_past = slot_cost(*at, q8, 1, N, past), fresh = slot_cost(*at, q8, 1, N, 0);
        auto scores = [&](double M) { return heads * 2 * N * M * e; };
        CHECK(with_past.bytes_read[0] - fresh.bytes_read[0] - scores(N + past) + scores(N) == kv_bytes(1, past, 8, 128, q8.kv));
    }
}

TEST_CASE("prefill attention reads K and V once per KV head (GQA), like decode attention") {
    const Format f16 = format_of(DType::fp16);
    const double N = 512, d = 128;
    const double mha_kv = kv_bytes(2, N, 32, d, f16);  // K and V of an MHA op over 2 sequences: one per query head
    for (auto kind : {ops::AttentionKind::standard, ops::AttentionKind::flash}) {
        CAPTURE(ops::attention_kind_name(kind));
        const ops::FlashTiles tiles{192.0 * 1024, 40e6};
        const OpCost mha = ops::attention({2, 32, N, N, d, true, 0}, f16, kind, false, tiles);
        const OpCost mha32 = ops::attention({2, 32, N, N, d, true, 32}, f16, kind, false, tiles);
        const OpCost gqa = ops::attention({2, 32, N, N, d, true, 8}, f16, kind, false, tiles);
        CHECK(mha32.bytes(Level::dram) == mha.bytes(Level::dram));  // kv_heads 0 = heads
        // 8 KV heads for 32 query heads: 3/4 of the MHA op's K/V bytes fewer, everything else the same
        CHECK(mha.bytes(Level::dram) - gqa.bytes(Level::dram) == 0.75 * mha_kv);
        CHECK(mha.bytes_read[0] - gqa.bytes_read[0] == 0.75 * mha_kv);
        CHECK(gqa.flops() == mha.flops());
        CHECK(gqa.launches == mha.launches);
        // decode attention over the same cache reads the same K/V bytes per KV head
        const OpCost dec = ops::decode_attention(2, 32, 8, N, d, f16, f16, kind);
        const OpCost dec_mha = ops::decode_attention(2, 32, 32, N, d, f16, f16, kind);
        CHECK(dec_mha.bytes_read[0] - dec.bytes_read[0] == mha.bytes_read[0] - gqa.bytes_read[0]);
    }
    // flash: each query head's thread blocks still load the group's K and V tiles into SRAM
    const ops::FlashTiles tiles{192.0 * 1024, 40e6};
    const OpCost mha = ops::attention({1, 32, N, N, d, true, 0}, f16, ops::AttentionKind::flash, false, tiles);
    const OpCost gqa = ops::attention({1, 32, N, N, d, true, 8}, f16, ops::AttentionKind::flash, false, tiles);
    CHECK(gqa.bytes(Level::sram) == mha.bytes(Level::sram));
    CHECK_THROWS_AS(ops::attention({1, 32, N, N, d, true, 5}, f16, ops::AttentionKind::standard), InvalidArgument);
}

TEST_CASE("MLA keeps one latent per token and layer, on every tensor-parallel rank; llama4 chunks cap 36 of 48 layers") {
    const Format bf16 = format_of(DType::bf16), fp8 = parse_kv_format("fp8");
    const Model ds = catalog("deepseek-r1");
    // kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements, shared by the 128 heads
    CHECK(kv_bytes_per_token_layer(ds.arch, bf16) == 576.0 * 2);
    CHECK(kv_bytes_per_token_layer(ds.arch, fp8) == 576.0);
    CHECK(KvLayout::of(ds.arch).latent == 576);
    CHECK(KvLayout::of(ds.arch).full_layers == 61);
    CHECK(kv_cache_bytes(ds.arch, 1, 1, bf16) == 61.0 * 576 * 2);  // 35,136 elements per token
    // every rank holds the whole latent: tensor parallel does not split it
    for (double tp : {1.0, 2.0, 8.0}) CHECK(kv_cache_bytes(ds.arch, 3, 1000, bf16, tp) == 3.0 * 1000 * 61 * 576 * 2);
    CHECK(KvLayout::of(ds.arch).token_layer_bytes(bf16, 8) == 576.0 * 2);
    CHECK(kv_cache_bytes_read(ds.arch, 1, 0, 2, bf16) == (1.0 + 2) * 61 * 576 * 2);
    // a GQA model's layout splits its KV heads as before
    const Model l = catalog("llama-3.1-8b");
    CHECK(KvLayout::of(l.arch).token_layer_bytes(bf16, 4) == kv_bytes(1, 1, 2, 128, bf16));

    // Llama 4: the 12 NoPE layers keep the whole context, the 36 chunked ones at most a chunk of 8192
    for (const char* id : {"llama-4-scout", "llama-4-maverick"}) {
        CAPTURE(id);
        const Model m = catalog(id);
        const KvLayout k = KvLayout::of(m.arch);
        CHECK(k.full_layers == 12);
        REQUIRE(k.windows.size() == 1);
        CHECK(k.windows[0] == std::pair<double, double>{8192, 36});
        CHECK(kv_bytes_per_token_layer(m.arch, bf16) == 2.0 * 8 * 128 * 2);
        CHECK(kv_cache_bytes(m.arch, 1, 100000, bf16) == (12.0 * 100000 + 36.0 * 8192) * 2048 * 2);
        CHECK(kv_cache_bytes(m.arch, 1, 4000, bf16) == 48.0 * 4000 * 2048 * 2);
        CHECK(kv_cache_bytes(m.arch, 1, 100000, bf16, 8) == doctest::Approx((12.0 * 100000 + 36.0 * 8192) * 2048 * 2 / 8));
    }
}
