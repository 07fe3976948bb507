// Quantization formats, byte-exact: GGML/GGUF tensor types from their block layouts, and GPU weight formats
// (group-wise int4, NVFP4, MXFP4, fp8, int8). All become a Format (bits per element including scales).
#pragma once

#include "roofline/format.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// One GGML tensor type: `block_size` elements are stored in `type_size` bytes (scales and mins included).
struct GgmlTypeInfo {
    int id;                  ///< the number stored in GGUF tensor infos
    const char* name;        ///< "Q4_K", "F16", ...
    int block_size;          ///< elements per block
    int type_size;           ///< bytes per block
    DType compute;           ///< what arithmetic runs in after dequantization
    double dequant_flops;    ///< vector FLOPs per element to dequantize (scale multiply, min/offset subtract)

    double bits_per_element() const { return 8.0 * type_size / block_size; }
};

/// nullptr for ids that GGML does not define (or has removed).
const GgmlTypeInfo* ggml_type_info(int id);
/// By name, case-insensitive ("q4_k", "BF16"). NotFound lists the names.
const GgmlTypeInfo& ggml_type_info(std::string_view name);
/// Whether `name` is a GGML tensor type (case-insensitive; "fp16", "fp32" and "bf16" name F16, F32 and BF16): what a
/// GGUF file stores, what llama.cpp runs.
bool is_ggml_type_name(std::string_view name);
std::vector<std::string> ggml_type_names();
Format format_of(const GgmlTypeInfo& t);
/// Bytes of a tensor of `elements` elements whose rows (ne0) have `row_length` elements; InvalidArgument when
/// the row length is not a multiple of the block size (GGML cannot store that).
double ggml_tensor_bytes(const GgmlTypeInfo& t, double elements, double row_length);

/// GPU weight and KV formats that are not GGML types: name -> Format.
///   int8-wo (int8 weight-only, per-channel scale), int4-g32 / int4-g64 / int4-g128 (4 bits + 16-bit scale and
///   16-bit zero per group), nvfp4 (e2m1 + fp8 scale per 16), mxfp4 (e2m1 + e8m0 scale per 32; also a GGML
///   type). Plain number formats (fp8, int8 ...) are formats too.
std::vector<std::string> gpu_format_names();

/// Every storage format name: plain number formats, GGML types and GPU weight formats.
std::vector<std::string> format_names();

}  // namespace roofline
