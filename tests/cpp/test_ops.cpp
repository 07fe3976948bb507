#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/embedding.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "test_helpers.hpp"

#include <cmath>

using namespace roofline;
using namespace roofline::ops;

TEST_CASE("seed: 4096^3 fp16 GEMM: 1.374e11 FLOPs over 3*4096^2 elements, ~2731 FLOPs per element") {
    const OpCost op = gemm(4096, 4096, 4096, DType::fp16);
    CHECK(op.flops() == 2.0 * 4096.0 * 4096.0 * 4096.0);
    CHECK(op.flops() == doctest::Approx(1.374e11).epsilon(1e-3));
    const double elements = op.bytes() / 2.0;
    CHECK(elements == 3.0 * 4096 * 4096);
    CHECK(elements == doctest::Approx(5.03e7).epsilon(1e-3));
    CHECK(op.flops() / elements == doctest::Approx(2730.67).epsilon(1e-4));
    CHECK(op.arithmetic_intensity() == doctest::Approx(1365.33).epsilon(1e-4));
    CHECK(op.bytes(Level::l2) == op.bytes(Level::dram));
    CHECK(op.launches == 1);
}

TEST_CASE("gemm keeps activations, weights and output formats apart") {
    Format w4 = format_of(DType::int4);
    w4.compute = DType::fp16;
    w4.dequant_flops_per_element = 2;
    const OpCost op = gemm(1, 4096, 4096, format_of(DType::fp16), w4, format_of(DType::fp16));
    CHECK(op.bytes_read[0] == doctest::Approx(4096 * 2 + 4096.0 * 4096 * 0.5));
    CHECK(op.bytes_written[0] == doctest::Approx(4096 * 2));
    CHECK(op.flops(Unit::matrix, DType::fp16) == 2.0 * 4096 * 4096);
    // dequantization: 2 per weight on 32-bit lanes, overlapped with the loads unless the kernel says otherwise
    CHECK(op.flops(Unit::vector, DType::fp32) == 2.0 * 4096 * 4096);
    CHECK(op.flops(Unit::vector, DType::fp16) == 0);
    for (const auto& t : op.flop_terms) CHECK(t.overlapped);
    const OpCost serial = gemm(1, 4096, 4096, format_of(DType::fp16), w4, format_of(DType::fp16),
                               GemmOptions{Unit::matrix, 0, 1, false});
    for (const auto& t : serial.flop_terms) CHECK(t.overlapped == (t.unit == Unit::matrix));
}

TEST_CASE("tiled gemm traffic: compulsory when the tile covers the matrix, more when it does not") {
    const OpCost compulsory = gemm(256, 256, 256, DType::fp16);
    const OpCost big_tile = gemm(256, 256, 256, DType::fp16, GemmOptions{Unit::matrix, 1e9, 1});
    CHECK(big_tile.bytes() == compulsory.bytes());
    // S = 2*32*32*(2+2) bytes -> T = 32: A read 256/32 = 8 times, B 8 times
    const OpCost small_tile = gemm(256, 256, 256, DType::fp16, GemmOptions{Unit::matrix, 32.0 * 32 * 4, 1});
    CHECK(small_tile.bytes_read[0] == doctest::Approx(8 * 256.0 * 256 * 2 * 2));
    CHECK(small_tile.flops() == compulsory.flops());
    CHECK_THROWS_AS(gemm(4, 4, 4, DType::fp16, GemmOptions{Unit::matrix, 1, 1}), InvalidArgument);
}

TEST_CASE("gemm utilization: whole waves of tiles, unless the kernel decomposes stream-K") {
    using roofline::ops::gemm_utilization;
    // 512 rows x 4096 features in 128x128 tiles: 4 x 32 = 128 tiles
    CHECK(gemm_utilization(512, 4096, 128, 128, 128) == doctest::Approx(1.0));         // one full wave
    CHECK(gemm_utilization(512, 4096, 128, 128, 108) == doctest::Approx(128.0 / 216));  // two waves, the second 20/108 full
    // stream-K (llama.cpp's MMQ on NVIDIA): whole waves below 90 % busy are split evenly over the 108 SMs
    CHECK(gemm_utilization(512, 4096, 128, 128, 108, true) == doctest::Approx(1.0));
    // at 90 % or more it launches whole tiles: 128 tiles on 132 SMs in one wave (97 %, 4 SMs idle), on 71 SMs in two
    // waves (90.1 %); on 160 SMs one wave would keep 80 % busy: stream-K over all of them
    CHECK(gemm_utilization(512, 4096, 128, 128, 132, true) == doctest::Approx(128.0 / 132));
    CHECK(gemm_utilization(512, 4096, 128, 128, 71, true) == doctest::Approx(128.0 / 142));
    CHECK(gemm_utilization(512, 4096, 128, 128, 160, true) == doctest::Approx(1.0));
    // the tiles' padding stays: 500 rows fill 500/512 of four 128-row tiles
    CHECK(gemm_utilization(500, 4096, 128, 128, 108, true) == doctest::Approx(500.0 / 512));
    // far fewer tiles than processors: filled either way (split-K, stream-K)
    CHECK(gemm_utilization(64, 4096, 128, 128, 108, true) == gemm_utilization(64, 4096, 128, 128, 108));
    // a kernel with one block per tile and no split-K (ggml's MMQ on RDNA): 8 tiles keep 8 of 20 processors busy, a
    // wave and a half of 32 tiles fills 32 of 40 slots; with as many tiles as processors or more, as with split-K
    CHECK(gemm_utilization(1024, 128, 128, 128, 20, false, false) == doctest::Approx(8.0 / 20));
    CHECK(gemm_utilization(1024, 128, 128, 128, 20) == doctest::Approx(1.0));
    CHECK(gemm_utilization(4096, 128, 128, 128, 20, false, false) == doctest::Approx(32.0 / 40));
    CHECK(gemm_utilization(4096, 128, 128, 128, 20, false, false) == gemm_utilization(4096, 128, 128, 128, 20));
}

TEST_CASE("a GEMM's tile use: the tiles' fill times the waves' busy processors") {
    using roofline::ops::gemm_tile_use;
    using roofline::ops::moe_gemm_tile_use;
    // 100 rows in a 128-row tile: 100/128 of it holds output; 32 tiles on 20 processors: 2 waves, 32 of 40 slots busy
    const auto u = gemm_tile_use(100, 4096, 128, 128, 20, false, false);
    CHECK(u.fill == doctest::Approx(100.0 / 128));
    CHECK(u.busy == doctest::Approx(32.0 / 40));
    CHECK(u.utilization() == doctest::Approx(roofline::ops::gemm_utilization(100, 4096, 128, 128, 20, false, false)));
    CHECK(gemm_tile_use(100, 4096, 128, 128, 20, true).busy == 1.0);  // stream-K: 0.8 < 0.9, the K loops split
    // Qwen3-30B-A3B's gate experts in a 512-token batch's 128-row tile: a quarter full, 768 tiles in whole waves
    const auto e = moe_gemm_tile_use(4096, 128, 768, 128, 128, 132, 8.0 / 128, true, true, 512);
    CHECK(e.fill == doctest::Approx(0.25).epsilon(1e-6));
    CHECK(e.busy == doctest::Approx(768.0 / 792));
    CHECK(gemm_tile_use(0, 4096, 128, 128, 20).utilization() == 1.0);
    CHECK(gemm_tile_use(100, 4096, 128, 128, 20).rows == 128);  // powers of two from 16
    // a kernel whose tiles come in steps of 8 (ggml's MMQ) takes the smallest that covers the rows in the fewest
    // tiles: 65 rows in one of 72, 300 in three of 104, 512 in four of 128, 5 in one of 8
    for (const auto& [m, tile] : std::vector<std::pair<double, double>>{{65, 72}, {300, 104}, {512, 128}, {5, 8}, {128, 128}}) {
        CAPTURE(m);
        const auto s = gemm_tile_use(m, 4096, 128, 128, 20, true, true, 8);
        CHECK(s.rows == tile);
        CHECK(s.fill == doctest::Approx(m / (std::ceil(m / tile) * tile)));
    }
    // the batch's tile for MoE experts follows the same list: 129 tokens take two tiles of 72, which each expert's 8
    // rows fill better than the one 128-row tile of 128 tokens
    const auto t128 = moe_gemm_tile_use(128 * 8, 128, 768, 128, 128, 132, 8.0 / 128, true, true, 128, 8);
    const auto t129 = moe_gemm_tile_use(129 * 8, 128, 768, 128, 128, 132, 8.0 / 128, true, true, 129, 8);
    CHECK(t128.rows == 128);
    CHECK(t129.rows == 72);
    CHECK(t129.fill > t128.fill);
    CHECK_THROWS_AS(gemm_tile_use(65, 4096, 128, 128, 20, true, true, -8), InvalidArgument);
}

TEST_CASE("grouped (MoE) GEMM utilization: each expert's rows in row tiles of their own") {
    using roofline::ops::gemm_utilization;
    using roofline::ops::moe_gemm_utilization;
    // 4096 rows over 128 experts, 32 on average in 32-row tiles: binomial shares exceed 32 about half the time, so an
    // expert takes 1 + P(rows > 32) + ... = 1.47 tiles; 768 features in 64-wide tiles; many waves over 40 processors
    const double u = moe_gemm_utilization(4096, 128, 768, 32, 64, 40, 8.0 / 128);
    const double tiles = 128 * (1 + 0.5 * std::erfc(0.5 / std::sqrt(2 * 32 * (1 - 8.0 / 128)))) * 12;
    CHECK(u == doctest::Approx(4096.0 * 768 / (std::ceil(tiles / 40) * 40 * 32 * 64)));
    CHECK(u == doctest::Approx(1 / 1.47).epsilon(0.02));
    // one expert taking every token (pick 1): no scatter, a plain GEMM's tiles
    CHECK(moe_gemm_utilization(512, 1, 4096, 128, 128, 132, 1) == doctest::Approx(gemm_utilization(512, 4096, 128, 128, 132)));
    CHECK(moe_gemm_utilization(500, 1, 4096, 128, 128, 108, 1) == doctest::Approx(gemm_utilization(500, 4096, 128, 128, 108)));
    CHECK(moe_gemm_utilization(0, 0, 4096, 128, 128, 132, 0.5) == 1.0);
    CHECK_THROWS_AS(moe_gemm_utilization(4096, 128, 768, 32, 64, 40, 1.5), InvalidArgument);
    CHECK(moe_gemm_utilization(4096, 128, 768, 32, 64, 40, 8.0 / 128) <= 1.0);
    // a kernel that picks its row tile for the batch (ggml's MMQ: 512 tokens, the 128-row tile) runs each expert's 32
    // rows (top-8 of 128 experts) in a tile of 128: a quarter full, and more row tiles than the batch's 4 per expert
    // are never needed (P(rows > 128) is nil)
    const double batch = moe_gemm_utilization(4096, 128, 768, 128, 128, 128, 8.0 / 128, true, true, 512);
    CHECK(batch == doctest::Approx(4096.0 * 768 / (128 * 6 * 128.0 * 128)).epsilon(1e-6));  // 768 tiles: 6 whole waves
    CHECK(batch == doctest::Approx(0.25).epsilon(1e-6));
    // the same tile picked for each expert's 32 rows fills 1 / 1.47 of it (above)
    CHECK(moe_gemm_utilization(4096, 128, 768, 128, 128, 128, 8.0 / 128, true, true) > 2.5 * batch);
    // a batch of 32 tokens: the tile the batch picks is the one its shares pick (32 rows, one expert each)
    CHECK(moe_gemm_utilization(32, 1, 768, 128, 128, 132, 1, true, true, 32) ==
          doctest::Approx(moe_gemm_utilization(32, 1, 768, 128, 128, 132, 1, true, true)));
    CHECK_THROWS_AS(moe_gemm_utilization(4096, 128, 768, 128, 128, 132, 0.0625, true, true, -1), InvalidArgument);
}

TEST_CASE("gemv is the m = 1 gemm on vector units") {
    const OpCost v = gemv(4096, 4096, DType::fp16);
    const OpCost g = gemm(1, 4096, 4096, DType::fp16);
    CHECK(v.flops() == g.flops());
    CHECK(v.bytes() == g.bytes());
    CHECK(v.flops(Unit::vector, DType::fp16) == v.flops());
    CHECK(v.arithmetic_intensity() < 1.01);
}

TEST_CASE("pointwise counts") {
    const OpCost add = elementwise(1000, 1, 2, 1, format_of(DType::fp16));
    CHECK(add.flops() == 1000);
    CHECK(add.bytes() == 6000);
    const OpCost sm = softmax(10, 100, format_of(DType::fp32));
    CHECK(sm.flops() == 5000);
    CHECK(sm.bytes() == 8000);
    CHECK(layernorm(10, 100, format_of(DType::fp16)).flops() == 7000);
    CHECK(layernorm(10, 100, format_of(DType::fp16), false).flops() == 5000);
    CHECK(rmsnorm(10, 100, format_of(DType::fp16)).flops() == 4000);
    CHECK(rmsnorm(10, 100, format_of(DType::fp16)).bytes() == 2 * (1000 + 1000 + 100));
}

TEST_CASE("seed: scores at 4096 tokens are 33.5 MB per head, 1.07 GB for 32 heads") {
    AttentionShape s{1, 32, 4096, 4096, 128, false};
    const OpCost std_attn = attention(s, format_of(DType::fp16), AttentionKind::standard);
    const double score_bytes_per_head = 4096.0 * 4096 * 2;
    CHECK(score_bytes_per_head == doctest::Approx(33.5e6).epsilon(2e-3));
    CHECK(32 * score_bytes_per_head == doctest::Approx(1.07e9).epsilon(5e-3));
    // standard attention moves S and P through DRAM twice each: 4 score matrices per head
    const double qkvo = 4.0 * 4096 * 128 * 2 * 32;
    CHECK(std_attn.bytes() == doctest::Approx(4 * 32 * score_bytes_per_head + qkvo));
    CHECK(std_attn.flops() == doctest::Approx(32 * (4.0 * 4096 * 4096 * 128 + 5.0 * 4096 * 4096)));
}

TEST_CASE("flash attention: same matrix FLOPs, DRAM traffic linear in N, far below standard") {
    const Format f16 = format_of(DType::fp16);
    const double sram = 192.0 * 1024;
    auto at = [&](double n, AttentionKind k) {
        return attention(AttentionShape{1, 1, n, n, 128, false}, f16, k, false, FlashTiles{sram, 0, 1, 1});  // FA-1
    };
    for (double n : {512.0, 2048.0, 8192.0}) {
        CHECK(at(n, AttentionKind::flash).flops(Unit::matrix, DType::fp16) ==
              at(n, AttentionKind::standard).flops(Unit::matrix, DType::fp16));
        CHECK(at(n, AttentionKind::flash).bytes() < at(n, AttentionKind::standard).bytes());
    }
    // Theorem 2: Θ(N² d² / M): doubling N roughly quadruples the traffic at fixed d and M ... but compared to
    // standard (also ~N²) the ratio is ~ d²/M per element of scores: growth of standard >> growth of flash.
    const double g_std = at(8192, AttentionKind::standard).bytes() / at(4096, AttentionKind::standard).bytes();
    const double g_fl = at(8192, AttentionKind::flash).bytes() / at(4096, AttentionKind::flash).bytes();
    CHECK(g_std == doctest::Approx(4).epsilon(0.05));
    CHECK(g_fl <= 4.0 + 1e-9);
    CHECK(g_fl > 3.0);  // Theorem 2: still quadratic without a cache
    // Block sizes: E = 98304 elements, Bc = ceil(98304/512) = 192, Tc = ceil(4096/192) = 22
    const OpCost fl = at(4096, AttentionKind::flash);
    // compulsory Q, K, V read and O written once; 21 further column blocks re-read Q, O and m, l and re-write O, m, l
    const double expect_read = 2.0 * 3 * 4096 * 128 + 21 * (2.0 * 2 * 4096 * 128 + 4.0 * 2 * 4096);
    const double expect_write = 2.0 * 4096 * 128 + 21 * (2.0 * 4096 * 128 + 4.0 * 2 * 4096);
    CHECK(fl.bytes_read[0] == doctest::Approx(expect_read));
    CHECK(fl.bytes_written[0] == doctest::Approx(expect_write));
    CHECK(fl.bytes(Level::sram) > fl.bytes(Level::dram));
    // With an L2 that holds one head's Q and O the re-reads are L2 hits: DRAM sees the compulsory traffic only
    const OpCost cached = attention(AttentionShape{1, 1, 4096, 4096, 128, false}, f16, AttentionKind::flash, false, FlashTiles{sram, 40e6, 1, 1});
    CHECK(cached.bytes(Level::dram) == doctest::Approx(2.0 * 4 * 4096 * 128));
    CHECK(cached.bytes(Level::l2) == doctest::Approx(fl.bytes(Level::l2)));
    const OpCost cached2 = attention(AttentionShape{1, 1, 8192, 8192, 128, false}, f16, AttentionKind::flash, false, FlashTiles{sram, 40e6, 1, 1});
    CHECK(cached2.bytes() == doctest::Approx(2 * cached.bytes()));  // linear in N
    CHECK_THROWS_AS(attention(AttentionShape{1, 1, 64, 64, 128, false}, f16, AttentionKind::flash, false, FlashTiles{0, 0}), InvalidArgument);
}

TEST_CASE("flash attention by version: FA-1 re-reads Q and O per K/V block, FA-2 streams K and V per Q block") {
    const Format f16 = format_of(DType::fp16);
    const double sram = 192.0 * 1024, N = 4096, d = 128;
    const AttentionShape s{1, 1, N, N, d, false};
    auto fa = [&](int version, double l2, double units, bool backward = false) {
        return attention(s, f16, AttentionKind::flash, backward, FlashTiles{sram, l2, units, version});
    };
    // E = 98304 elements: Bc = 192 key rows, Br = min(192, d) = 128 query rows; Tc = 22, Tr = 32
    const double QO = 2.0 * N * d, KVb = 2.0 * 2 * N * d;  // Q (or O) and K + V, in bytes
    const OpCost v2 = fa(2, 0, 1);
    CHECK(v2.bytes_read[0] == doctest::Approx(QO + KVb + 31 * KVb));  // K and V again for each further Q block
    CHECK(v2.bytes_written[0] == doctest::Approx(QO));                 // O once: its block stays resident
    const OpCost v1 = fa(1, 0, 1);
    CHECK(v1.bytes_written[0] == doctest::Approx(QO + 21 * (QO + 4.0 * 2 * N)));  // O and m, l per further K/V block
    CHECK(v1.bytes_written[0] > v2.bytes_written[0]);
    // the 32 Q blocks of the head in one wave of 132 stream K and V side by side: an L2 catches the re-reads even
    // if smaller than the head's K and V (2 MB)
    CHECK(fa(2, 40e6, 132).bytes(Level::dram) == doctest::Approx(2 * QO + KVb));
    CHECK(fa(2, 40e6, 132).bytes(Level::l2) == doctest::Approx(2 * QO + KVb + 31 * KVb));  // the L2 level: DRAM traffic and the hits
    CHECK(fa(2, 1e6, 132).bytes(Level::dram) == doctest::Approx(2 * QO + KVb));
    // over 16 processors the blocks span two waves: the second finds K and V in L2 only if the head's fit whole
    CHECK(fa(2, 4e6, 16).bytes(Level::dram) == doctest::Approx(2 * QO + KVb));
    CHECK(fa(2, 1e6, 16).bytes(Level::dram) == doctest::Approx(v2.bytes(Level::dram)));
    // FA-1's re-read rows are Q, O and m, l of min(units, heads) heads
    CHECK(fa(1, 40e6, 1).bytes(Level::dram) == doctest::Approx(2 * QO + KVb));
    // the same arithmetic either way
    CHECK(v1.flops() == v2.flops());
    // FA-2 backward accumulates dQ in fp32 once per further K/V block (read and written), unless L2 holds it
    const OpCost b2 = fa(2, 0, 1, true), b2_cached = fa(2, 1e9, 1, true);
    CHECK(b2.bytes(Level::dram) - b2_cached.bytes(Level::dram) ==
          doctest::Approx(31 * KVb + 2 * 21 * 4.0 * N * d));
    // FA-3 has FA-2's loop order; no other version exists
    Device dev = parse_device(roofline::test::kToyDevice);
    CHECK(flash_tiles(dev, 3).version == 2);
    CHECK(flash_tiles(dev, 1).version == 1);
    CHECK_THROWS_AS(flash_tiles(dev, 4), InvalidArgument);
    CHECK_THROWS_AS(attention(s, f16, AttentionKind::flash, false, FlashTiles{sram, 0, 1, 5}), InvalidArgument);
}

TEST_CASE("standard attention: an engine's bytes per score element replace the four activation passes") {
    const Format f32 = format_of(DType::fp32);
    const AttentionShape s{1, 32, 512, 512, 128, true};
    const OpCost plain = attention(s, f32, AttentionKind::standard), cuda = attention(s, f32, AttentionKind::standard, false, {}, nullptr, 24);
    CHECK(cuda.bytes(Level::dram) - plain.bytes(Level::dram) == doctest::Approx(32 * 512.0 * 512 * (24 - 16)));
    CHECK(ops::decode_attention(1, 32, 8, 4096, 128, f32, f32, AttentionKind::standard, 24).bytes() -
              ops::decode_attention(1, 32, 8, 4096, 128, f32, f32, AttentionKind::standard).bytes() ==
          doctest::Approx(32 * 4096.0 * (24 - 16)));
    CHECK_THROWS_AS(attention(s, f32, AttentionKind::standard, false, {}, nullptr, -1), InvalidArgument);
}

TEST_CASE("attention's matrix products in another format than the activations: the softmax stays") {
    const Format f32 = format_of(DType::fp32);
    const DType f16 = DType::fp16;
    const AttentionShape s{1, 32, 512, 4096, 128, true, 8};
    for (AttentionKind kind : {AttentionKind::standard, AttentionKind::flash}) {
        CAPTURE(attention_kind_name(kind));
        const FlashTiles tiles{228 * 1024.0, 50e6, 132, 2};
        const OpCost plain = attention(s, f32, kind, false, tiles), tc = attention(s, f32, kind, false, tiles, nullptr, 0, &f16);
        CHECK(tc.flops(Unit::matrix, DType::fp16) == doctest::Approx(plain.flops(Unit::matrix, DType::fp32)));
        CHECK(tc.flops(Unit::matrix, DType::fp32) == 0);
        CHECK(tc.flops(Unit::vector, DType::fp32) == doctest::Approx(plain.flops(Unit::vector, DType::fp32)));
        CHECK(tc.bytes(Level::dram) == doctest::Approx(plain.bytes(Level::dram)));
    }
}

TEST_CASE("flash attention bound by its instruction issue: the tensor units busy only as long as the SM issues") {
    const Format f16 = format_of(DType::fp16);
    const DType h = DType::fp16, h16 = DType::fp16_acc16;
    // instructions per score element by head size: one query head per block, a GQA group per block
    const std::vector<std::array<double, 3>> rows{{64, 33.03, 20.75}, {128, 42.47, 25.25}, {256, 70.38, 41.38}};
    CHECK(issue_per_score_at(rows, 128, false) == 42.47);
    CHECK(issue_per_score_at(rows, 128, true) == 25.25);
    CHECK(issue_per_score_at(rows, 96, false) == doctest::Approx((33.03 + 42.47) / 2));
    CHECK(issue_per_score_at(rows, 192, true) == doctest::Approx((25.25 + 41.38) / 2));
    CHECK(issue_per_score_at(rows, 512, false) == doctest::Approx(70.38 + (70.38 - 42.47) * 2));  // along the last segment
    CHECK(issue_per_score_at({{128, 40, 20}}, 64, true) == 20);
    CHECK(issue_per_score_at({}, 128, false) == 0);
    // an A100: 108 SMs x 128 instructions x 1.41 GHz; 312 TFLOPS for both products
    FlashTiles a100{164 * 1024.0, 40e6, 108, 2, rows, 108 * 128 * 1.41e9, 312e12, 312e12};
    const AttentionShape mha{1, 32, 512, 4096, 128, true, 32}, gqa{1, 32, 512, 4096, 128, true, 8}, odd{1, 24, 512, 4096, 128, true, 8};
    auto busy = [](const OpCost& op) {
        double u = 0;
        for (const FlopTerm& t : op.flop_terms)
            if (t.unit == Unit::matrix) u = t.utilization;
        return u;
    };
    const double products = 2 * 128 / 312e12 * 2, issue = 42.47 / (108 * 128 * 1.41e9);
    const OpCost a = attention(mha, f16, AttentionKind::flash, false, a100, nullptr, 0, &h, &h16);
    CHECK(busy(a) == doctest::Approx(products / issue));  // 0.75: issue-bound
    CHECK(busy(a) == doctest::Approx(0.753).epsilon(0.002));
    CHECK(a.flops(Unit::vector, DType::fp16) == 0);        // the softmax is among the counted instructions
    CHECK(a.flops(Unit::matrix, h) == doctest::Approx(a.flops(Unit::matrix, h16)));  // Q·Kᵀ and P·V apart
    const OpCost plain = attention(mha, f16, AttentionKind::flash, false, FlashTiles{164 * 1024.0, 40e6, 108, 2});
    CHECK(a.flops(Unit::matrix, h) + a.flops(Unit::matrix, h16) == doctest::Approx(plain.flops(Unit::matrix, h)));
    CHECK(a.bytes(Level::dram) == plain.bytes(Level::dram));
    CHECK(busy(plain) == 1);
    CHECK(plain.flops(Unit::vector, DType::fp16) > 0);
    // a GQA group of 4 shares a block: fewer instructions per score, tensor-bound on the A100
    CHECK(busy(attention(gqa, f16, AttentionKind::flash, false, a100)) == 1);
    // an odd group (3) takes ggml's one-head blocks
    CHECK(busy(attention(odd, f16, AttentionKind::flash, false, a100)) == doctest::Approx(products / issue));
    // an H100 SXM's tensor rate against the same issue: about a third (FlashAttention-2's 35 %)
    FlashTiles h100{228 * 1024.0, 50e6, 132, 2, {{128, 46.19, 29.88}}, 132 * 128 * 1.83e9, 989.4e12, 989.4e12};
    CHECK(busy(attention(mha, f16, AttentionKind::flash, false, h100)) == doctest::Approx(0.35).epsilon(0.02));
    // the backward pass is not counted; nor is the standard path
    CHECK(busy(attention(mha, f16, AttentionKind::flash, true, a100)) == 1);
    CHECK(busy(attention(mha, f16, AttentionKind::standard, false, a100)) == 1);
}

TEST_CASE("decode attention per query head: DRAM once per KV head, L2 and dequantization once per query head") {
    const Format f16 = format_of(DType::fp16), q8 = parse_format("q8_0");
    for (const Format& kv : {f16, q8}) {
        CAPTURE(kv.name);
        const OpCost shared = ops::decode_attention(4, 64, 8, 2048, 128, f16, kv, AttentionKind::flash);
        const OpCost apart = ops::decode_attention(4, 64, 8, 2048, 128, f16, kv, AttentionKind::flash, 0, true);
        const double cache = kv_bytes(4, 2048, 8, 128, kv), elements = 4 * 2.0 * 2048 * 8 * 128;
        CHECK(apart.bytes(Level::dram) == doctest::Approx(shared.bytes(Level::dram)));
        CHECK(apart.bytes(Level::l2) - shared.bytes(Level::l2) == doctest::Approx(7 * cache));  // 8 query heads a group
        CHECK(apart.flops(Unit::vector, DType::fp32) - shared.flops(Unit::vector, DType::fp32) ==
              doctest::Approx(7 * elements * kv.dequant_flops_per_element));
        CHECK(apart.launches == shared.launches);
        // multi-head attention has no group to load again
        const OpCost mha = ops::decode_attention(4, 64, 64, 2048, 128, f16, kv, AttentionKind::flash, 0, true);
        CHECK(mha.bytes(Level::l2) == doctest::Approx(ops::decode_attention(4, 64, 64, 2048, 128, f16, kv).bytes(Level::l2)));
    }
}

TEST_CASE("decode attention's instructions per multiply-add: int32 issue work per query head, racing the loads") {
    const Format f16 = format_of(DType::fp16), kv = parse_kv_format("f16");
    // Llama-2-70B at TP4: 16 query heads, 2 KV heads, a 2048-token cache, batch 8
    const OpCost plain = ops::decode_attention(8, 16, 2, 2048, 128, f16, kv, ops::AttentionKind::flash, 0, true);
    const OpCost counted = ops::decode_attention(8, 16, 2, 2048, 128, f16, kv, ops::AttentionKind::flash, 0, true, 5.3);
    double alu = 0;
    for (const FlopTerm& t : counted.flop_terms)
        if (t.unit == Unit::vector && t.format == DType::int32) {
            alu += t.flops;
            CHECK(t.overlapped);
        }
    CHECK(alu == doctest::Approx(5.3 * 8 * 16 * 2.0 * 2048 * 128));  // per query head: MHA or GQA alike
    CHECK(counted.flops() == doctest::Approx(plain.flops() + alu));
    CHECK(counted.bytes(Level::dram) == plain.bytes(Level::dram));  // the traffic is unchanged
    CHECK_THROWS_AS(ops::decode_attention(8, 16, 2, 2048, 128, f16, kv, ops::AttentionKind::flash, 0, true, -1), InvalidArgument);
}

TEST_CASE("causal masking halves flash work, not standard work") {
    const Format f16 = format_of(DType::fp16);
    AttentionShape s{1, 1, 1024, 1024, 64, true};
    CHECK(causal_fraction(s) == doctest::Approx(1025.0 / 2048));
    AttentionShape full = s;
    full.causal = false;
    CHECK(attention(s, f16, AttentionKind::standard).flops() == attention(full, f16, AttentionKind::standard).flops());
    CHECK(attention(s, f16, AttentionKind::flash, false, FlashTiles{1e5, 0}).flops(Unit::matrix, DType::fp16) ==
          doctest::Approx(0.5 * attention(full, f16, AttentionKind::flash, false, FlashTiles{1e5, 0}).flops(Unit::matrix, DType::fp16)).epsilon(0.01));
    AttentionShape bad{1, 1, 10, 5, 64, true};
    CHECK_THROWS_AS(attention(bad, f16, AttentionKind::standard), InvalidArgument);
}

TEST_CASE("backward adds work and traffic") {
    const Format f16 = format_of(DType::fp16);
    AttentionShape s{2, 4, 512, 512, 64, false};
    for (auto k : {AttentionKind::standard, AttentionKind::flash}) {
        const OpCost fwd = attention(s, f16, k, false, FlashTiles{1e5, 0}), both = attention(s, f16, k, true, FlashTiles{1e5, 0});
        CHECK(both.flops() > 2 * fwd.flops());
        CHECK(both.bytes() > fwd.bytes());
    }
    CHECK(attention(s, f16, AttentionKind::standard, true).flops(Unit::matrix, DType::fp16) ==
          doctest::Approx(8.0 * 12 * 512 * 512 * 64));
}

TEST_CASE("decode attention reads the KV cache once per KV head") {
    const Format f16 = format_of(DType::fp16);
    const OpCost mha = decode_attention(1, 32, 32, 4096, 128, f16, f16);
    const OpCost gqa = decode_attention(1, 32, 8, 4096, 128, f16, f16);
    CHECK(mha.bytes_read[0] == doctest::Approx(2.0 * 4096 * 32 * 128 * 2 + 32 * 128 * 2));
    CHECK(gqa.bytes_read[0] == doctest::Approx(2.0 * 4096 * 8 * 128 * 2 + 32 * 128 * 2));
    CHECK(gqa.flops() == mha.flops());
    CHECK(decode_attention(1, 32, 8, 4096, 128, f16, f16, AttentionKind::standard).bytes() > gqa.bytes());
    CHECK_THROWS_AS(decode_attention(1, 32, 5, 10, 128, f16, f16), InvalidArgument);
    CHECK_THROWS_AS(decode_attention(1, 32, 0, 10, 128, f16, f16), InvalidArgument);
}

TEST_CASE("kv append and embedding lookup") {
    const Format f16 = format_of(DType::fp16), i8 = format_of(DType::int8);
    const OpCost app = kv_append(2, 3, 8, 128, f16, i8);
    CHECK(app.bytes_read[0] == 2.0 * 2 * 3 * 8 * 128 * 2);
    CHECK(app.bytes_written[0] == 2.0 * 2 * 3 * 8 * 128 * 1);
    const OpCost emb = embedding_lookup(10, 4096, f16, f16);
    CHECK(emb.bytes_read[0] == 10.0 * 4096 * 2 + 40);
    CHECK(emb.bytes_written[0] == 10.0 * 4096 * 2);
    CHECK(emb.flops() == 0);
}

TEST_CASE("bad sizes are errors that name the argument") {
    CHECK_THROWS_WITH_AS(gemm(-1, 2, 3, DType::fp16), doctest::Contains("gemm m must be a whole number >= 0, got -1"), InvalidArgument);
    CHECK_THROWS_AS(gemm(NAN, 2, 3, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(gemm(INFINITY, 2, 3, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(gemm(1.5, 2, 3, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(softmax(-3, 2, format_of(DType::fp16)), InvalidArgument);
    CHECK_NOTHROW(gemm(0, 0, 0, DType::fp16));
    CHECK(gemm(1e9, 1e9, 1e9, DType::fp16).flops() == doctest::Approx(2e27));
    // sizes whose product overflows 64 bits (and any real machine) are an error, not 2e36 FLOPs
    CHECK_THROWS_WITH_AS(gemm(1e12, 1e12, 1e12, DType::fp16), doctest::Contains("gemm: 2e+36 FLOPs exceed 1e+30"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(gemm(1e16, 1, 1, DType::fp16), doctest::Contains("gemm m must be a whole number >= 0 and at most 2^53"),
                         InvalidArgument);
}

TEST_CASE("OpCost sums and scales") {
    const OpCost a = gemm(8, 8, 8, DType::fp16);
    const OpCost b = softmax(8, 8, format_of(DType::fp16));
    const OpCost s = a + b;
    CHECK(s.flops() == a.flops() + b.flops());
    CHECK(s.bytes() == a.bytes() + b.bytes());
    CHECK(s.launches == 2);
    CHECK(a.scaled(3).flops() == 3 * a.flops());
    CHECK(a.scaled(0).bytes() == 0);
    OpCost empty;
    CHECK(empty.arithmetic_intensity() == 0);
    OpCost only_flops;
    only_flops.add_flops(Unit::vector, DType::fp32, 10);
    CHECK(std::isinf(only_flops.arithmetic_intensity()));
}

TEST_CASE("from_l2: traffic that fits in L2 stays there; what does not, and an L2 of 0 bytes, leave it in DRAM") {
    const OpCost norm = ops::rmsnorm(512, 4096, format_of(DType::fp32));  // 8 MiB in, 8 MiB out
    const double dram = norm.bytes(Level::dram);
    REQUIRE(dram > 16e6);
    REQUIRE(dram < 17e6);
    OpCost a = norm;
    CHECK_FALSE(from_l2(a, dram - 1));  // one byte short
    CHECK(a.bytes(Level::dram) == dram);
    CHECK_FALSE(from_l2(a, 0));
    CHECK(from_l2(a, dram));
    CHECK(a.bytes(Level::dram) == 0);
    CHECK(a.bytes(Level::l2) == norm.bytes(Level::l2));  // DRAM traffic was counted at L2 too: it stays there
    CHECK(a.flops() == norm.flops());
}

TEST_CASE("standard attention: S and P pass through L2 where the softmax's share of them fits") {
    const ops::AttentionShape s{1, 32, 512, 512, 128, true, 32};
    const Format f32 = format_of(DType::fp32);
    const double scores = 32.0 * 512 * 512 * 20 / 2;  // half of 20 bytes per score: what the softmax holds at once
    ops::FlashTiles tiles;
    const OpCost dram = ops::attention(s, f32, ops::AttentionKind::standard, false, tiles, nullptr, 20);
    tiles.l2_bytes = scores;
    const OpCost l2 = ops::attention(s, f32, ops::AttentionKind::standard, false, tiles, nullptr, 20);
    CHECK(dram.bytes(Level::dram) - l2.bytes(Level::dram) == doctest::Approx(2 * scores));  // read and written
    CHECK(l2.bytes(Level::l2) == doctest::Approx(dram.bytes(Level::l2)));
    tiles.l2_bytes = scores - 1;  // does not fit: as without an L2
    CHECK(ops::attention(s, f32, ops::AttentionKind::standard, false, tiles, nullptr, 20).bytes(Level::dram) == dram.bytes(Level::dram));
    tiles.l2_bytes = 1e12;  // the backward pass keeps its scores in DRAM
    CHECK(ops::attention(s, f32, ops::AttentionKind::standard, true, tiles, nullptr, 20).bytes(Level::dram) ==
          ops::attention(s, f32, ops::AttentionKind::standard, true, ops::FlashTiles{}, nullptr, 20).bytes(Level::dram));
}
