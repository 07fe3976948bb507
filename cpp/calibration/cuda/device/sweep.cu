// The arithmetic-intensity sweep: out[i] = f_k(in[i]) where f_k applies x <- fma(x, a, b) k times (fp32). Each
// element is read once and written once (8 bytes) and costs 2k FLOPs, so k = 0 .. 1024 walks the intensity from 0
// to 256 FLOP/byte across the ridge (about 14 FLOP/byte for fp32 on an H200). The times trace the measured
// roofline; roofline::fit_roofline fits seconds = max(bytes / B, flops / F) + t0 to them. Large arrays pin the
// two plateaus; a few small arrays (one launch is mostly its fixed cost) pin t0. Small runs are timed as batches
// of back-to-back launches, so t0 is the per-kernel cost inside a stream.
//
// Kernel design: the copy kernel's access pattern (16-byte coalesced accesses, kUnroll independent loads in flight
// per thread, resident grid striding over the array), with k a template parameter so the FMA chain is unrolled;
// 4 x kUnroll = 16 independent chains per thread keep the FMA pipes full at large k, and the k loop is unrolled 16
// deep (not fully) so the kernel's code stays inside the instruction cache at k = 1024.
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"
#include "../host/sweep_grid.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace rcal {

namespace {

constexpr int kUnroll = 4;

template <int K>
__device__ __forceinline__ void apply(float4& v, float a, float b) {
#pragma unroll 16
    for (int k = 0; k < K; ++k) {
        v.x = fmaf(v.x, a, b);
        v.y = fmaf(v.y, a, b);
        v.z = fmaf(v.z, a, b);
        v.w = fmaf(v.w, a, b);
    }
}

template <int K>
__global__ void __launch_bounds__(kBlock) sweep_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                                                       std::size_t n, float a, float b) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        float4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = __ldcs(in + i + u * stride);
        // Interleave the chains: step k of every vector before step k+1 of any.
#pragma unroll 16
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                v[u].x = fmaf(v[u].x, a, b);
                v[u].y = fmaf(v[u].y, a, b);
                v[u].z = fmaf(v[u].z, a, b);
                v[u].w = fmaf(v[u].w, a, b);
            }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) __stcs(out + i + u * stride, v[u]);
    }
    for (; i < n; i += stride) {
        float4 v = __ldcs(in + i);
        apply<K>(v, a, b);
        __stcs(out + i, v);
    }
}

using SweepKernel = void (*)(const float4*, float4*, std::size_t, float, float);

template <std::size_t I = 0>
SweepKernel sweep_kernel_for(int k) {
    if constexpr (I < kSweepPoints) {
        return kSweepK[I] == k ? &sweep_kernel<kSweepK[I]> : sweep_kernel_for<I + 1>(k);
    } else {
        return nullptr;
    }
}

void log_point(int k, std::size_t elements, double seconds, bool ok) {
    const double bytes = kSweepBytesPerElement * static_cast<double>(elements);
    const double flops = sweep_flops_per_element(k) * static_cast<double>(elements);
    std::printf("  sweep k=%-5d n=%-10zu AI=%7.2f FLOP/B  %10.3f us  %9.1f GB/s  %9.3f TFLOP/s  %s\n", k, elements,
                bytes > 0 ? flops / bytes : 0.0, seconds * 1e6, bytes / seconds / 1e9, flops / seconds / 1e12,
                ok ? "verified" : "NOT VERIFIED");
    std::fflush(stdout);
}

}  // namespace

GroupResult run_sweep(const Context& ctx) {
    GroupResult out;
    std::size_t big = ctx.quick ? (std::size_t{1} << 25) : (std::size_t{1} << 28);  // floats per array
    while (big > (std::size_t{1} << 20) && 2 * big * sizeof(float) > ctx.free_bytes / 2) big /= 2;
    const std::size_t small_sizes[] = {std::size_t{1} << 12, std::size_t{1} << 16, std::size_t{1} << 20};
    const int small_ks[] = {0, 64, 1024};
    const float a = 1.0f - 0x1p-10f, b = 1.5f * 0x1p-10f;
    const std::uint64_t seed = 505;
    const int reps = ctx.quick ? 3 : 7;

    DeviceBuffer<float> in(big), res(big);
    fill_f32(in.ptr, big, seed);

    std::vector<roofline::SweepPoint> points;
    bool all_ok = true;
    auto run_point = [&](int k, std::size_t elements, bool verify) {
        SweepKernel kernel = sweep_kernel_for(k);
        if (!kernel) {
            out.failures.push_back("sweep: no kernel instantiated for k=" + std::to_string(k));
            return;
        }
        const std::size_t n4 = elements / 4;
        const int full = resident_grid(kernel, kBlock, 0, ctx.sm_count);
        const int grid = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(full), (n4 + kBlock - 1) / kBlock));
        auto launch = [&] {
            kernel<<<grid, kBlock>>>(reinterpret_cast<const float4*>(in.ptr), reinterpret_cast<float4*>(res.ptr), n4, a, b);
        };
        bool ok = true;
        if (verify) {
            res.poison();
            launch();
            RCAL_LAUNCHED();
            const auto idx = sample_indices(elements, 256, 1024, 51 + static_cast<std::uint64_t>(k));
            const auto got = gather_f32(res.ptr, idx);
            for (std::size_t j = 0; j < idx.size() && ok; ++j) {
                const float want = sweep_element(value_f32(seed, idx[j]), k, a, b);
                if (!(got[j] == want)) {
                    ok = false;
                    char buf[200];
                    std::snprintf(buf, sizeof buf, "sweep k=%d: element %llu is %.9g, expected %.9g", k,
                                  static_cast<unsigned long long>(idx[j]), static_cast<double>(got[j]),
                                  static_cast<double>(want));
                    out.failures.push_back(buf);
                }
            }
        }
        // Batches of back-to-back launches lasting ~1 ms (one launch for the large arrays).
        const double probe = probe_seconds(launch);
        const int batch = std::max(1, std::min(2000, static_cast<int>(1e-3 / std::max(probe, 1e-7))));
        const auto t = time_events(launch, 2, reps, batch);
        const double med = summarize(t).median;
        roofline::SweepPoint p;
        p.k = k;
        p.flops = sweep_flops_per_element(k) * static_cast<double>(elements);
        p.bytes = kSweepBytesPerElement * static_cast<double>(elements);
        p.seconds = med;
        points.push_back(p);
        all_ok = all_ok && ok;
        log_point(k, elements, med, ok);
    };

    for (const int k : kSweepK) run_point(k, big, true);
    for (const std::size_t n : small_sizes)
        for (const int k : small_ks) run_point(k, n, k == 0);

    roofline::ProfileFit fit;
    fit.kernel = "sweep_fma_fp32";
    fit.dtype = roofline::DType::fp32;
    fit.unit = roofline::Unit::vector;
    fit.level = roofline::Level::dram;
    fit.points = points;
    try {
        fit.fit = roofline::fit_roofline(points);
        std::printf("  fit: bandwidth %.1f GB/s, peak %.3f TFLOP/s, launch overhead %.2f us, residual %.1f %% rms "
                    "(%d memory-bound, %d compute-bound points)%s\n",
                    fit.fit.bandwidth_Bps / 1e9, fit.fit.peak_flops / 1e12, fit.fit.launch_overhead_s * 1e6,
                    100 * fit.fit.residual_rms_rel, fit.fit.memory_points, fit.fit.compute_points,
                    all_ok ? "" : " (some points NOT VERIFIED)");
        out.fits.push_back(fit);
    } catch (const std::exception& e) {
        out.failures.push_back(std::string("sweep fit: ") + e.what());
    }
    return out;
}

}  // namespace rcal
