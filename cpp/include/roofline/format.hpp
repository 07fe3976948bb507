// Number formats (what arithmetic runs in) and storage formats (what bytes are stored per element).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// Number formats that devices have peaks for.
/// int32: 32-bit integer lane operations (address arithmetic, bit unpacking) on vector units, in OP/s.
/// fp16_acc16: fp16 products summed in fp16 (cuBLAS's CUBLAS_COMPUTE_16F, an mma with half accumulators), which
/// GeForce tensor cores run at twice their fp16 rate with fp32 sums; a device without its own peak runs it at fp16's.
enum class DType : std::uint8_t { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, fp4, int32, fp16_acc16 };
inline constexpr std::size_t kNumDTypes = 12;

const std::array<DType, kNumDTypes>& all_dtypes();
std::string_view dtype_name(DType d);
/// Storage bits of one element (tf32 is stored in 32 bits; int4 and fp4 pack two per byte).
double dtype_bits(DType d);
inline double dtype_bytes(DType d) { return dtype_bits(d) / 8.0; }
/// Case-insensitive; accepts common spellings (float16/half/f16, bfloat16, float32/f32, fp8 = e4m3, ...).
/// Unknown names throw NotFound listing the valid names.
DType parse_dtype(std::string_view name);
std::vector<std::string> dtype_names();

/// How tensor elements are stored: a plain number format, or a block- or group-quantized format (GGML types, GPU
/// schemes, MLX's affine formats) whose bits per element include its scales and zero points.
struct Format {
    std::string name;
    double bits_per_element = 16;          ///< including scales and zero points
    DType compute = DType::fp16;           ///< the number format arithmetic runs in after dequantization
    double dequant_flops_per_element = 0;  ///< vector FLOPs to turn one stored element into `compute`

    double bytes_per_element() const { return bits_per_element / 8.0; }
};

/// The storage format of a plain number format: its own bits, computed in itself, no dequantization.
Format format_of(DType d);
/// A storage format by name (case-insensitive): every DType name and spelling, every GGML type (Q4_K ...) and
/// GPU weight format (int4-g128, nvfp4 ...). Defined in quant.cpp, where the quantization formats live.
Format parse_format(std::string_view name);

}  // namespace roofline
