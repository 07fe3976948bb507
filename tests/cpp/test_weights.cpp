// Weights: each tensor's format and exact bytes under a quantization (llama.cpp mixes, GPU schemes).
#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/weights.hpp"
#include "test_helpers.hpp"

using namespace roofline;
using roofline::test::catalog;
using roofline::test::kBf16;

TEST_CASE("byte-exact sizes of llama.cpp files") {
    const Model l2 = catalog("llama-2-7b");
    const double GiB = 1024.0 * 1024 * 1024;
    CHECK(weight_bytes(l2, "F16", kBf16) / GiB == doctest::Approx(12.55).epsilon(0.001));
    CHECK(weight_bytes(l2, "Q8_0", kBf16) / GiB == doctest::Approx(6.67).epsilon(0.001));
    CHECK(weight_bytes(l2, "Q4_0", kBf16) / GiB == doctest::Approx(3.56).epsilon(0.002));
    CHECK(weight_bytes(l2, "Q4_K_M", kBf16) / GiB == doctest::Approx(3.80).epsilon(0.001));
    CHECK(8 * weight_bytes(l2, "Q4_K_M", kBf16) / l2.parameters() == doctest::Approx(4.84).epsilon(0.002));
    const Model l3 = catalog("llama-3.1-8b");
    CHECK(8 * weight_bytes(l3, "Q4_K_M", kBf16) / l3.parameters() == doctest::Approx(4.89).epsilon(0.002));
    const Model q = catalog("qwen3-4b");
    CHECK(weight_bytes(q, "BF16", kBf16) / 1e9 == doctest::Approx(8.05).epsilon(0.002));
    CHECK(weight_bytes(q, "Q8_0", kBf16) / 1e9 == doctest::Approx(4.28).epsilon(0.003));
    CHECK(weight_bytes(q, "Q4_K_M", kBf16) / 1e9 == doctest::Approx(2.50).epsilon(0.004));
}

TEST_CASE("GPU schemes quantize the linear layers only") {
    const Model l2 = catalog("llama-2-7b");
    const double bf16 = weight_bytes(l2, "bf16", kBf16);
    CHECK(bf16 == doctest::Approx(2 * l2.parameters()).epsilon(1e-4));  // the BF16 mix keeps norms in F32
    const double emb = 4096.0 * 32000;  // token embedding stays bf16
    const double norms = 4096.0 * (2 * 32 + 1);
    CHECK(weight_bytes(l2, "int8-wo", kBf16) == doctest::Approx((l2.parameters() - emb - norms) + 2 * (emb + norms)));
    CHECK(weight_bytes(l2, "int4-g32", kBf16) == doctest::Approx((l2.parameters() - emb - norms) * 5 / 8 + 2 * (emb + norms)));
    CHECK_THROWS_WITH_AS(weight_bytes(l2, "q4_k_mx", kBf16), doctest::Contains("did you mean 'Q4_K_M'"), NotFound);
}

TEST_CASE("MLX's affine formats: b bits + a 16-bit scale and bias per group, the embedding table quantized too") {
    const Model l2 = catalog("llama-2-7b");
    const double norms = 4096.0 * (2 * 32 + 1);
    const double matrices = l2.parameters() - norms;  // every matrix, the token embedding included (mlx-lm convert)
    for (const auto& [name, bits] : std::vector<std::pair<const char*, double>>{
             {"mlx-q4", 4.5}, {"mlx-q4-g32", 5.0}, {"mlx-q4-g128", 4.25}, {"mlx-q8", 8.5}, {"mlx-q6", 6.5},
             {"mlx-q3", 3.5}, {"mlx-q2", 2.5}, {"mlx-q5-g32", 6.0}}) {
        CAPTURE(name);
        CHECK(parse_format(name).bits_per_element == bits);
        CHECK(parse_format(name).compute == DType::bf16);
        CHECK(weight_bytes(l2, name, kBf16) == doctest::Approx(matrices * bits / 8 + 2 * norms));
    }
    CHECK_THROWS_WITH_AS(weight_bytes(l2, "mlx-q7", kBf16), doctest::Contains("did you mean"), NotFound);
}

TEST_CASE("MLX's floating-point modes: e2m1 / e4m3 codes with an 8-bit scale per group, no bias") {
    const Model l2 = catalog("llama-2-7b");
    const double norms = 4096.0 * (2 * 32 + 1);
    const double matrices = l2.parameters() - norms;
    // mxfp4: 4 + 8/32; nvfp4: 4 + 8/16; mxfp8: 8 + 8/32 (mlx/ops.cpp quantization_params_from_mode)
    for (const auto& [name, bits] : std::vector<std::pair<const char*, double>>{
             {"mlx-mxfp4", 4.25}, {"mlx-nvfp4", 4.5}, {"mlx-mxfp8", 8.25}}) {
        CAPTURE(name);
        CHECK(parse_format(name).bits_per_element == bits);
        CHECK(parse_format(name).compute == DType::bf16);  // dequantized into bf16: no FP4 / FP8 units on Apple GPUs
        CHECK(parse_format(name).dequant_flops_per_element > 0);
        CHECK(weight_bytes(l2, name, kBf16) == doctest::Approx(matrices * bits / 8 + 2 * norms));
    }
}
