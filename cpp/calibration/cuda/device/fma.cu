// FMA throughput of the vector units: fp32 (FFMA), fp16x2 (HFMA2, two FMAs per lane), fp64 (DFMA).
//
// Design: each thread runs kChains independent dependency chains a_j <- fma(a_j, x, y), unrolled kSteps deep inside a
// run-time trip-count loop, so the loop's own counter and branch are ~0.5 % of the instructions and each warp
// scheduler always has independent FMAs to issue (chains x resident warps >> pipeline latency). x and y are kernel
// arguments, so nothing folds at compile time; every thread writes the sum of its chains, so nothing is dead. With
// x = 1 - 2^-10 and y = 1.5 * 2^-10 the chains contract towards 1.5 and never overflow, underflow or go subnormal.
// The grid is the resident grid (one wave, no tail). Thread 0 of block 0 reads clock64 and %globaltimer around its
// loop: their ratio is the SM clock under this load, recorded next to the rate.
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace rcal {

namespace {

constexpr int kChains = 8;
constexpr int kSteps = 64;
constexpr int kChains64 = 8;
constexpr int kSteps64 = 32;
const float kX32 = 1.0f - 0x1p-10f, kY32 = 1.5f * 0x1p-10f;
const double kX64 = 1.0 - 0x1p-10, kY64 = 1.5 * 0x1p-10;

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

struct ClockSample {
    unsigned long long cycles, ns;
};

__global__ void __launch_bounds__(kBlock) fma_f32_kernel(float* __restrict__ out, int iters, float x, float y,
                                                         std::uint64_t seed, ClockSample* clk) {
    const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    float a[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = value_f32(seed, tid * kChains + j);
    const bool timer = tid == 0;
    long long c0 = 0;
    unsigned long long t0 = 0;
    if (timer) {
        c0 = clock64();
        t0 = global_ns();
    }
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
#pragma unroll
            for (int j = 0; j < kChains; ++j) a[j] = fmaf(a[j], x, y);
    }
    float sum = 0;
#pragma unroll
    for (int j = 0; j < kChains; ++j) sum += a[j];
    out[tid] = sum;
    if (timer) {
        const unsigned long long t1 = global_ns();
        clk->cycles = static_cast<unsigned long long>(clock64() - c0);
        clk->ns = t1 - t0;
    }
}

__global__ void __launch_bounds__(kBlock) fma_f16x2_kernel(float* __restrict__ out, int iters, __half2 x, __half2 y,
                                                           std::uint64_t seed) {
    const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    __half2 a[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
        const std::uint64_t e = 2 * (tid * kChains + j);
        a[j] = __halves2half2(__ushort_as_half(value_fp16_bits(seed, e, false)),
                              __ushort_as_half(value_fp16_bits(seed, e + 1, false)));
    }
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
#pragma unroll
            for (int j = 0; j < kChains; ++j) a[j] = __hfma2(a[j], x, y);
    }
    float sum = 0;
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
        sum += __low2float(a[j]);
        sum += __high2float(a[j]);
    }
    out[tid] = sum;
}

__global__ void __launch_bounds__(kBlock) fma_f64_kernel(double* __restrict__ out, int iters, double x, double y,
                                                         std::uint64_t seed) {
    const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    double a[kChains64];
#pragma unroll
    for (int j = 0; j < kChains64; ++j) a[j] = value_f64(seed, tid * kChains64 + j);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int s = 0; s < kSteps64; ++s)
#pragma unroll
            for (int j = 0; j < kChains64; ++j) a[j] = fma(a[j], x, y);
    }
    double sum = 0;
#pragma unroll
    for (int j = 0; j < kChains64; ++j) sum += a[j];
    out[tid] = sum;
}

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

// Iterations so that one launch runs about `target_s`, from a probe at `probe_iters`.
template <class Launch>
int iterations_for(Launch&& launch, int probe_iters, double target_s) {
    const double t = probe_seconds([&] { launch(probe_iters); });
    const double scaled = probe_iters * target_s / std::max(t, 1e-7);
    return static_cast<int>(std::min(std::max(scaled, 1.0), 1.0e8));
}

std::string fail_text(const char* kernel, std::uint64_t thread, double got, double want) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s: thread %llu wrote %.17g, expected %.17g", kernel,
                  static_cast<unsigned long long>(thread), got, want);
    return buf;
}

}  // namespace

GroupResult run_fma(const Context& ctx) {
    GroupResult out;
    const double target_s = ctx.quick ? 2e-3 : 10e-3;
    const int warmup = 2, reps = ctx.quick ? 5 : 15;
    const std::uint64_t seed = 404;
    const int verify_iters = 3;

    // ---- fp32 ----
    {
        const int grid = resident_grid(fma_f32_kernel, kBlock, 0, ctx.sm_count);
        const std::size_t threads = static_cast<std::size_t>(grid) * kBlock;
        DeviceBuffer<float> res(threads);
        DeviceBuffer<ClockSample> clk(1);
        auto launch = [&](int iters) {
            fma_f32_kernel<<<grid, kBlock>>>(res.ptr, iters, kX32, kY32, seed, clk.ptr);
        };
        res.poison();
        launch(verify_iters);
        RCAL_LAUNCHED();
        bool ok = true;
        const auto idx = sample_indices(threads, 64, 256, 41);
        const auto got = gather_f32(res.ptr, idx);
        for (std::size_t i = 0; i < idx.size() && ok; ++i) {
            const float want = fma_chain_f32(seed, idx[i], kChains, static_cast<long long>(verify_iters) * kSteps, kX32, kY32);
            if (!(std::fabs(got[i] - want) <= 1e-6f * std::fabs(want))) {
                ok = false;
                out.failures.push_back(fail_text("fma_fp32", idx[i], got[i], want));
            }
        }
        const int iters = iterations_for(launch, 64, target_s);
        const auto t = time_events([&] { launch(iters); }, warmup, reps);
        ClockSample c{};
        RCAL_CUDA(cudaMemcpy(&c, clk.ptr, sizeof c, cudaMemcpyDeviceToHost));
        const double flops = 2.0 * kChains * kSteps * static_cast<double>(iters) * static_cast<double>(threads);
        auto m = flops_measurement(roofline::Ceiling::peak_flops, roofline::DType::fp32, roofline::Unit::vector, "fma_fp32",
                                   flops, t, warmup, ok,
                                   {{"threads", static_cast<double>(threads)}, {"blocks", grid},
                                    {"chains_per_thread", kChains}, {"fma_per_thread", static_cast<double>(iters) * kSteps * kChains}});
        char note[200];
        const double mhz = c.ns > 0 ? 1e3 * static_cast<double>(c.cycles) / static_cast<double>(c.ns) : 0;
        std::snprintf(note, sizeof note, "FFMA, %d independent chains per thread; SM clock under this load %.0f MHz "
                      "(clock64 / globaltimer of one thread)", kChains, mhz);
        m.notes = note;
        if (mhz > 0) out.extra.emplace_back("sm_clock_under_fma_fp32_MHz", std::to_string(std::lround(mhz)));
        log_line(m);
        out.measurements.push_back(m);
    }
    // ---- fp16x2 ----
    {
        const int grid = resident_grid(fma_f16x2_kernel, kBlock, 0, ctx.sm_count);
        const std::size_t threads = static_cast<std::size_t>(grid) * kBlock;
        DeviceBuffer<float> res(threads);
        const __half2 x2 = __float2half2_rn(kX32), y2 = __float2half2_rn(kY32);  // both exact in fp16
        auto launch = [&](int iters) { fma_f16x2_kernel<<<grid, kBlock>>>(res.ptr, iters, x2, y2, seed); };
        res.poison();
        launch(verify_iters);
        RCAL_LAUNCHED();
        bool ok = true;
        const auto idx = sample_indices(threads, 64, 256, 42);
        const auto got = gather_f32(res.ptr, idx);
        for (std::size_t i = 0; i < idx.size() && ok; ++i) {
            const float want = fma_chain_f16x2(seed, idx[i], kChains, static_cast<long long>(verify_iters) * kSteps,
                                               static_cast<double>(kX32), static_cast<double>(kY32));
            if (!(std::fabs(got[i] - want) <= 1e-6f * std::fabs(want))) {
                ok = false;
                out.failures.push_back(fail_text("fma_fp16x2", idx[i], got[i], want));
            }
        }
        const int iters = iterations_for(launch, 64, target_s);
        const auto t = time_events([&] { launch(iters); }, warmup, reps);
        const double flops = 4.0 * kChains * kSteps * static_cast<double>(iters) * static_cast<double>(threads);
        auto m = flops_measurement(roofline::Ceiling::peak_flops, roofline::DType::fp16, roofline::Unit::vector,
                                   "fma_fp16x2", flops, t, warmup, ok,
                                   {{"threads", static_cast<double>(threads)}, {"blocks", grid},
                                    {"chains_per_thread", kChains}});
        m.notes = "HFMA2 (__hfma2: two fp16 FMAs per lane, 4 FLOP), " + std::to_string(kChains) +
                  " independent half2 chains per thread";
        log_line(m);
        out.measurements.push_back(m);
    }
    // ---- fp64 ----
    {
        const int grid = resident_grid(fma_f64_kernel, kBlock, 0, ctx.sm_count);
        const std::size_t threads = static_cast<std::size_t>(grid) * kBlock;
        DeviceBuffer<double> res(threads);
        auto launch = [&](int iters) { fma_f64_kernel<<<grid, kBlock>>>(res.ptr, iters, kX64, kY64, seed); };
        res.poison();
        launch(verify_iters);
        RCAL_LAUNCHED();
        bool ok = true;
        const auto idx = sample_indices(threads, 64, 256, 43);
        for (std::size_t i = 0; i < idx.size() && ok; ++i) {
            double got = 0;
            RCAL_CUDA(cudaMemcpy(&got, res.ptr + idx[i], sizeof got, cudaMemcpyDeviceToHost));
            const double want = fma_chain_f64(seed, idx[i], kChains64, static_cast<long long>(verify_iters) * kSteps64, kX64, kY64);
            if (!(std::fabs(got - want) <= 1e-12 * std::fabs(want))) {
                ok = false;
                out.failures.push_back(fail_text("fma_fp64", idx[i], got, want));
            }
        }
        const int iters = iterations_for(launch, 16, target_s);
        const auto t = time_events([&] { launch(iters); }, warmup, reps);
        const double flops = 2.0 * kChains64 * kSteps64 * static_cast<double>(iters) * static_cast<double>(threads);
        auto m = flops_measurement(roofline::Ceiling::peak_flops, roofline::DType::fp64, roofline::Unit::vector, "fma_fp64",
                                   flops, t, warmup, ok,
                                   {{"threads", static_cast<double>(threads)}, {"blocks", grid},
                                    {"chains_per_thread", kChains64}});
        m.notes = "DFMA, " + std::to_string(kChains64) + " independent chains per thread";
        log_line(m);
        out.measurements.push_back(m);
    }
    return out;
}

}  // namespace rcal
