#include "roofline/quant.hpp"

#include "roofline/errors.hpp"

#include <array>
#include <cmath>

namespace roofline {

namespace {
// GGML block layouts (ggml-common.h): bytes per block follow from each block struct.
//   Q4_0 {f16 d; u8 qs[16]} = 18 B / 32;  Q4_1 {f16 d, m; qs[16]} = 20;  Q5_0 {d; u8 qh[4]; qs[16]} = 22;
//   Q5_1 {d, m; qh[4]; qs[16]} = 24;  Q8_0 {d; i8 qs[32]} = 34;  Q8_1 {d, s; qs[32]} = 36;
//   Q2_K {u8 scales[16]; qs[64]; f16 d, dmin} = 84 / 256;  Q3_K {hmask[32]; qs[64]; scales[12]; d} = 110;
//   Q4_K {d, dmin; scales[12]; qs[128]} = 144;  Q5_K {d, dmin; scales[12]; qh[32]; qs[128]} = 176;
//   Q6_K {ql[128]; qh[64]; i8 scales[16]; d} = 210;  Q8_K {f32 d; qs[256]; i16 bsums[16]} = 292;
//   IQ2_XXS {d; u16 qs[32]} = 66;  IQ2_XS {d; u16 qs[32]; scales[8]} = 74;  IQ2_S {d; qs[64]; qh[8]; scales[8]} = 82;
//   IQ3_XXS {d; qs[96]} = 98;  IQ3_S {d; qs[64]; qh[8]; signs[32]; scales[4]} = 110;  IQ1_S {d; qs[32]; u16 qh[8]} = 50;
//   IQ1_M {qs[32]; qh[16]; scales[8]} = 56;  NVFP4 {e4m3 d[4]; qs[32]} = 36 / 64;  Q1_0 {d; qs[16]} = 18 / 128;  IQ4_NL {d; qs[16]} = 18 / 32;  IQ4_XS {d; u16 scales_h; scales_l[4];
//   qs[128]} = 136 / 256;  TQ1_0 {qs[48]; qh[4]; d} = 54;  TQ2_0 {qs[64]; d} = 66;  MXFP4 {u8 e; qs[16]} = 17 / 32.
// Dequantization work per element: 1 FLOP for a scale multiply (Q8_0), 2 for scale and offset/min
// (the 4-, 5-, 6-bit and K types), 3 for codebook types (lookup, sign, scale); plain floats convert for free.
constexpr DType H = DType::fp16;
const std::array<GgmlTypeInfo, 35> kTypes{{
    {0, "F32", 1, 4, DType::fp32, 0},
    {1, "F16", 1, 2, DType::fp16, 0},
    {2, "Q4_0", 32, 18, H, 2},
    {3, "Q4_1", 32, 20, H, 2},
    {6, "Q5_0", 32, 22, H, 2},
    {7, "Q5_1", 32, 24, H, 2},
    {8, "Q8_0", 32, 34, H, 1},
    {9, "Q8_1", 32, 36, H, 1},
    {10, "Q2_K", 256, 84, H, 2},
    {11, "Q3_K", 256, 110, H, 2},
    {12, "Q4_K", 256, 144, H, 2},
    {13, "Q5_K", 256, 176, H, 2},
    {14, "Q6_K", 256, 210, H, 2},
    {15, "Q8_K", 256, 292, H, 1},
    {16, "IQ2_XXS", 256, 66, H, 3},
    {17, "IQ2_XS", 256, 74, H, 3},
    {18, "IQ3_XXS", 256, 98, H, 3},
    {19, "IQ1_S", 256, 50, H, 3},
    {20, "IQ4_NL", 32, 18, H, 2},
    {21, "IQ3_S", 256, 110, H, 3},
    {22, "IQ2_S", 256, 82, H, 3},
    {23, "IQ4_XS", 256, 136, H, 2},
    {24, "I8", 1, 1, DType::int8, 0},
    {25, "I16", 1, 2, DType::fp32, 0},
    {26, "I32", 1, 4, DType::fp32, 0},
    {27, "I64", 1, 8, DType::fp64, 0},
    {28, "F64", 1, 8, DType::fp64, 0},
    {29, "IQ1_M", 256, 56, H, 3},
    {30, "BF16", 1, 2, DType::bf16, 0},
    {34, "TQ1_0", 256, 54, H, 3},
    {35, "TQ2_0", 256, 66, H, 2},
    {39, "MXFP4", 32, 17, H, 2},
    {40, "NVFP4", 64, 36, H, 2},   // {e4m3 scales[4]; qs[32]}: e2m1 with one fp8 scale per 16
    {41, "Q1_0", 128, 18, H, 2},   // {f16 d; qs[16]}: one bit per weight and a scale per 128
    {-1, "", 0, 0, H, 0},  // sentinel, never returned
}};

struct GpuFormat {
    const char* name;
    double bits;
    DType compute;
    double dequant_flops;
};
// Group-wise int4 keeps a 16-bit scale and a 16-bit zero per group: 4 + 32/g bits. NVFP4: e2m1 + one e4m3
// scale per 16 elements (4.5 bits; the per-tensor fp32 scale is negligible). MXFP4: e2m1 + e8m0 per 32 (4.25).
// int8-wo (weight-only): one scale per output channel (negligible per element), computed in fp16 after
// dequantization. Plain "int8" and "fp8" are the number formats themselves (W8A8: computed in int8 / fp8); "fp8-wo"
// keeps FP8 weights and multiplies in 16 bits (W8A16, Marlin's FP8 path). AWQ and GPTQ checkpoints (int4-awq,
// int4-gptq; AutoAWQ / AutoGPTQ layouts, group 128) keep a 16-bit scale and a packed 4-bit zero per group:
// 4 + 20/128 = 4.15625 bits (GPTQ's per-input-channel g_idx adds 32/N bits, negligible); both run W4A16.
// MLX's affine quantization (mlx/ops.cpp affine_quantize, ml-explore/mlx@846d1762): b-bit codes packed in uint32
// with one scale and one bias per group in the weights' 16-bit dtype: b + 32/g bits (mlx-q4 = 4-bit, group 64:
// 4.5); dequantized as scale·q + bias (2 FLOPs) into bf16 tiles or registers. Its floating-point modes
// (mlx/ops.cpp fp_quantize, quantization_params_from_mode): 4-bit e2m1 codes with an 8-bit scale per group and no
// bias, mxfp4 (e8m0 per 32: 4.25 bits), nvfp4 (e4m3 per 16: 4.5) and 8-bit e4m3 codes in mxfp8 (e8m0 per 32: 8.25);
// dequantized by fp_quantized.h's Dequantize (the code's conversion) times the scale (2 FLOPs) into bf16.
const GpuFormat kGpuFormats[] = {
    {"int8-wo", 8, DType::fp16, 1},      {"int4-g32", 5, DType::fp16, 2}, {"int4-g64", 4.5, DType::fp16, 2},
    {"int4-g128", 4.25, DType::fp16, 2}, {"nvfp4", 4.5, DType::fp4, 0},   {"mxfp4", 4.25, DType::fp4, 0},
    {"fp8-wo", 8, DType::fp16, 1},       {"int4-awq", 4.15625, DType::fp16, 2}, {"int4-gptq", 4.15625, DType::fp16, 2},
    {"mlx-q2", 2.5, DType::bf16, 2},     {"mlx-q3", 3.5, DType::bf16, 2}, {"mlx-q4", 4.5, DType::bf16, 2},
    {"mlx-q5", 5.5, DType::bf16, 2},     {"mlx-q6", 6.5, DType::bf16, 2}, {"mlx-q8", 8.5, DType::bf16, 2},
    {"mlx-q2-g32", 3, DType::bf16, 2},   {"mlx-q3-g32", 4, DType::bf16, 2}, {"mlx-q4-g32", 5, DType::bf16, 2},
    {"mlx-q5-g32", 6, DType::bf16, 2},   {"mlx-q6-g32", 7, DType::bf16, 2}, {"mlx-q8-g32", 9, DType::bf16, 2},
    {"mlx-q2-g128", 2.25, DType::bf16, 2}, {"mlx-q3-g128", 3.25, DType::bf16, 2}, {"mlx-q4-g128", 4.25, DType::bf16, 2},
    {"mlx-q5-g128", 5.25, DType::bf16, 2}, {"mlx-q6-g128", 6.25, DType::bf16, 2}, {"mlx-q8-g128", 8.25, DType::bf16, 2},
    {"mlx-mxfp4", 4.25, DType::bf16, 2},   {"mlx-nvfp4", 4.5, DType::bf16, 2},    {"mlx-mxfp8", 8.25, DType::bf16, 2},
};
}  // namespace

const GgmlTypeInfo* ggml_type_info(int id) {
    for (const auto& t : kTypes)
        if (t.id == id && t.block_size > 0) return &t;
    return nullptr;
}

std::vector<std::string> ggml_type_names() {
    std::vector<std::string> names;
    for (const auto& t : kTypes)
        if (t.block_size > 0) names.emplace_back(t.name);
    return names;
}

bool is_ggml_type_name(std::string_view name) {
    std::string lower = to_lower(name);
    // the GPU names of GGML's float types: the same numbers
    if (lower == "fp16") lower = "f16";
    if (lower == "fp32") lower = "f32";
    for (const auto& t : kTypes)
        if (t.block_size > 0 && to_lower(t.name) == lower) return true;
    return false;
}

const GgmlTypeInfo& ggml_type_info(std::string_view name) {
    const std::string lower = to_lower(name);
    for (const auto& t : kTypes)
        if (t.block_size > 0 && to_lower(t.name) == lower) return t;
    throw NotFound(unknown_name_message("GGML tensor type", name, ggml_type_names()));
}

Format format_of(const GgmlTypeInfo& t) { return Format{t.name, t.bits_per_element(), t.compute, t.dequant_flops}; }

double ggml_tensor_bytes(const GgmlTypeInfo& t, double elements, double row_length) {
    check_count("tensor elements", elements);
    check_count("tensor row length", row_length);
    if (std::fmod(row_length, t.block_size) != 0)
        throw InvalidArgument(std::string("a row of ") + std::to_string(static_cast<long long>(row_length)) +
                              " elements is not a multiple of " + t.name + "'s block of " + std::to_string(t.block_size));
    return elements / t.block_size * t.type_size;
}

std::vector<std::string> gpu_format_names() {
    std::vector<std::string> names;
    for (const auto& f : kGpuFormats) names.emplace_back(f.name);
    return names;
}

std::vector<std::string> format_names() {
    std::vector<std::string> names = dtype_names();
    for (const auto& n : ggml_type_names()) names.push_back(n);
    for (const auto& n : gpu_format_names()) names.push_back(n);
    return names;
}

Format parse_format(std::string_view name) {
    const std::string lower = to_lower(name);
    for (const auto& f : kGpuFormats)
        if (lower == f.name) return Format{f.name, f.bits, f.compute, f.dequant_flops};
    for (const auto& t : kTypes)
        if (t.block_size > 0 && to_lower(t.name) == lower) return format_of(t);
    try {
        return format_of(parse_dtype(name));
    } catch (const NotFound&) {
        throw NotFound(unknown_name_message("storage format", name, format_names()));
    }
}

}  // namespace roofline
