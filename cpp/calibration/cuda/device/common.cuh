// Shared device-side helpers: filling arrays from the counter-based generator, gathering sampled elements back to
// the host, sizing grids from the occupancy API, and timing with CUDA events.
#pragma once

#include "../host/data.hpp"
#include "../host/reference.hpp"
#include "check.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rcal {

constexpr int kBlock = 256;  // threads per block of the streaming and FMA kernels

// ---- data ---------------------------------------------------------------------------------------------------------
__global__ void fill_f32_kernel(float* out, std::size_t n, std::uint64_t seed);
__global__ void fill_f64_kernel(double* out, std::size_t n, std::uint64_t seed);
__global__ void fill_bits16_kernel(std::uint16_t* out, std::size_t n, std::uint64_t seed, bool bf16, bool is_signed);
__global__ void gather_f32_kernel(const float* src, const std::uint64_t* idx, float* out, std::size_t n);

void fill_f32(float* d, std::size_t n, std::uint64_t seed);
void fill_f64(double* d, std::size_t n, std::uint64_t seed);
void fill_bits16(std::uint16_t* d, std::size_t n, std::uint64_t seed, bool bf16, bool is_signed);
/// src[idx[i]] for each i, copied to the host.
std::vector<float> gather_f32(const float* d_src, const std::vector<std::uint64_t>& idx);

// ---- memory ---------------------------------------------------------------------------------------------------------
template <class T>
struct DeviceBuffer {
    T* ptr = nullptr;
    std::size_t n = 0;
    explicit DeviceBuffer(std::size_t count) : n(count) { RCAL_CUDA(cudaMalloc(&ptr, count * sizeof(T))); }
    ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    std::size_t bytes() const { return n * sizeof(T); }
    /// Poison with 0xFF bytes (NaN for floats) so an unwritten output cannot pass its check.
    void poison() { RCAL_CUDA(cudaMemset(ptr, 0xff, bytes())); }
};

// ---- launch sizing ----------------------------------------------------------------------------------------------
/// Blocks that fill the GPU once: SMs x resident blocks per SM for this kernel and block size.
template <class Kernel>
int resident_grid(Kernel kernel, int block, std::size_t dynamic_smem, int sm_count) {
    int per_sm = 0;
    RCAL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, dynamic_smem));
    return std::max(1, per_sm) * sm_count;
}

// ---- timing -----------------------------------------------------------------------------------------------------
/// Times `launch` with CUDA events: `warmup` untimed calls, then `reps` timed runs of `batch` back-to-back calls
/// each; returns the seconds per call of each run. Every launch error is checked.
template <class Launch>
std::vector<double> time_events(Launch&& launch, int warmup, int reps, int batch = 1) {
    cudaEvent_t start, stop;
    RCAL_CUDA(cudaEventCreate(&start));
    RCAL_CUDA(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; ++i) launch();
    RCAL_LAUNCHED();
    RCAL_CUDA(cudaDeviceSynchronize());
    std::vector<double> seconds;
    seconds.reserve(static_cast<std::size_t>(reps));
    for (int r = 0; r < reps; ++r) {
        RCAL_CUDA(cudaEventRecord(start));
        for (int b = 0; b < batch; ++b) launch();
        RCAL_CUDA(cudaEventRecord(stop));
        RCAL_CUDA(cudaEventSynchronize(stop));
        RCAL_LAUNCHED();
        float ms = 0;
        RCAL_CUDA(cudaEventElapsedTime(&ms, start, stop));
        seconds.push_back(static_cast<double>(ms) * 1e-3 / batch);
    }
    RCAL_CUDA(cudaEventDestroy(start));
    RCAL_CUDA(cudaEventDestroy(stop));
    return seconds;
}

/// Seconds of one call, from a short probe (after one warm-up call), to size repetitions and batches.
template <class Launch>
double probe_seconds(Launch&& launch) {
    const auto t = time_events(launch, 1, 3, 1);
    return *std::min_element(t.begin(), t.end());
}

}  // namespace rcal
