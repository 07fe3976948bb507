// Counter-based random data, identical on the host and the device.
//
// Every input array of every kernel is filled on the GPU by value(seed, i); the host recomputes any element from
// (seed, i) alone, so a sampled output can be checked against a host reference without copying gigabytes back.
// Values are never zero (no kernel is timed on zeros, and unwritten outputs cannot pass): positive values lie in
// [1, 2) and signed ones in ±[0.5, 2). This header compiles with and without CUDA (no CUDA include).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define RCAL_HD __host__ __device__ __forceinline__
#else
#define RCAL_HD inline
#endif

namespace rcal {

/// splitmix64's finaliser: a bijection on 64 bits with good avalanche.
RCAL_HD std::uint64_t mix64(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/// 64 random bits for element `i` of the stream `seed`.
RCAL_HD std::uint64_t hash64(std::uint64_t seed, std::uint64_t i) {
    return mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ (i * 0xd1b54a32d192ed03ULL + 0x632be59bd9b4e019ULL));
}

/// float in [1, 2): 23 random mantissa bits, exactly representable.
RCAL_HD float value_f32(std::uint64_t seed, std::uint64_t i) {
    const auto m = static_cast<std::uint32_t>(hash64(seed, i) >> 41);  // 23 bits
    return 1.0f + static_cast<float>(m) * 0x1p-23f;
}

/// double in [1, 2): 52 random mantissa bits, exactly representable.
RCAL_HD double value_f64(std::uint64_t seed, std::uint64_t i) {
    const std::uint64_t m = hash64(seed, i) >> 12;  // 52 bits
    return 1.0 + static_cast<double>(m) * 0x1p-52;
}

/// bfloat16 bit pattern of ±[0.5, 2) (signed) or [0.5, 2) (unsigned): 7 random mantissa bits, never zero.
RCAL_HD std::uint16_t value_bf16_bits(std::uint64_t seed, std::uint64_t i, bool is_signed) {
    const std::uint64_t h = hash64(seed, i);
    const auto sign = static_cast<std::uint32_t>(is_signed ? (h >> 63) & 1u : 0u);
    const auto exponent = static_cast<std::uint32_t>(126u + ((h >> 62) & 1u));  // 2^-1 or 2^0
    const auto mantissa = static_cast<std::uint32_t>(h & 0x7fu);
    return static_cast<std::uint16_t>((sign << 15) | (exponent << 7) | mantissa);
}

/// IEEE binary16 bit pattern of ±[0.5, 2) (signed) or [0.5, 2): 10 random mantissa bits, never zero.
RCAL_HD std::uint16_t value_fp16_bits(std::uint64_t seed, std::uint64_t i, bool is_signed) {
    const std::uint64_t h = hash64(seed, i);
    const auto sign = static_cast<std::uint32_t>(is_signed ? (h >> 63) & 1u : 0u);
    const auto exponent = static_cast<std::uint32_t>(14u + ((h >> 62) & 1u));  // 2^-1 or 2^0
    const auto mantissa = static_cast<std::uint32_t>(h & 0x3ffu);
    return static_cast<std::uint16_t>((sign << 15) | (exponent << 10) | mantissa);
}

/// Decode bfloat16 bits (exact).
inline float bf16_bits_to_float(std::uint16_t bits) {
    const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &w, sizeof f);
    return f;
}

}  // namespace rcal
