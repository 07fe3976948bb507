// Host references for the CUDA calibration kernels: what a kernel must have written, recomputed on the CPU from
// the same counter-based inputs (data.hpp), and the register-fragment layouts of the tensor-core instructions,
// written once here so that the kernels and the checks agree on them. No CUDA include.
#pragma once

#include "layouts.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rcal {

// ---- number formats -------------------------------------------------------------------------------------------
/// Decode IEEE binary16 bits (normals, subnormals, infinities, NaN).
double fp16_bits_to_double(std::uint16_t bits);
/// Round a double to the nearest binary16 value (ties to even), returned as a double. Overflow gives ±inf.
double round_to_fp16(double x);

// ---- comparisons -------------------------------------------------------------------------------------------------
/// ‖got − want‖₂ / ‖want‖₂; +inf when any value is NaN or infinite, or when the sizes differ.
double relative_error(const std::vector<double>& got, const std::vector<double>& want);

// ---- elementwise kernels -----------------------------------------------------------------------------------------
/// The intensity sweep's element function: x ← fma(x, a, b), k times, in fp32 (one rounding per step).
float sweep_element(float x, int k, float a, float b);

/// The FMA-throughput kernels: each thread runs `chains` independent chains a_j ← fma(a_j, x, y), `steps` per
/// iteration for `iters` iterations, chains started at value(seed, thread·chains + j); it writes the sum of its
/// chains (accumulated in order, in the kernel's sum type). These recompute one thread's output.
float fma_chain_f32(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, float x, float y);
double fma_chain_f64(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, double x, double y);
/// half2 chains: chain j holds two lanes started at value_fp16(seed, 2·(thread·chains + j) + lane) unsigned;
/// each step is one fused fp16 FMA per lane (rounded once); the output is the float sum over chains and lanes.
float fma_chain_f16x2(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, double x, double y);

/// Indices of [0, n) to check: the first and last `edge` and `random` drawn by the generator from `seed`.
std::vector<std::uint64_t> sample_indices(std::size_t n, std::size_t edge, std::size_t random, std::uint64_t seed);

/// C = A·B for row-major A (m×k) and B (k×n), in double.
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k);

}  // namespace rcal
