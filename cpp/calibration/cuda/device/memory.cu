// DRAM and L2 bandwidth: STREAM copy and triad, a read-only reduction, and the same reduction over working sets
// that fit in L2.
//
// Design: every thread moves 16 bytes per access (float4 / uint4), warps are coalesced (consecutive threads,
// consecutive 16-byte vectors), and each thread issues kUnroll independent loads before the first use, so that
// SMs x resident threads x kUnroll x 16 B (tens of MB) are in flight, far above the bandwidth-latency product
// (4.8 TB/s x ~1 us ≈ 5 MB on an H200). The grid is the resident grid (SM count x blocks per SM from the occupancy
// API) and strides over the array, so no block waits on a tail wave. Triad and the main copy and reduction carry the
// evict-first hint (ld/st.global.cs: the data is touched once); a copy with default caching and reductions through
// the read-only path (ld.global.nc) and with default caching run next to them, so the profile shows whether the
// hints matter (the fastest verified reduction or triad is the DRAM ceiling; copies are references). The L2 kernel
// reads with ld.global.cg (cache in L2, not L1) over a working set a fraction of the L2 size, many passes per launch.
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace rcal {

namespace {

constexpr int kUnroll = 4;

// How a kernel loads and stores: the cache hints are the only difference between the variants, so the best one
// is the device's streaming bandwidth and the others show how much the hints matter.
enum class Access {
    streaming,  // ld.global.cs / st.global.cs: evict-first, the data is touched once
    readonly,   // ld.global.nc (__ldg): the read-only path; plain st.global
    plain,      // ld.global / st.global with the default policy
    l2only,     // ld.global.cg: cached in L2, not L1 (the L2 kernel)
};

template <Access A, class T>
__device__ __forceinline__ T load(const T* p) {
    if constexpr (A == Access::streaming) return __ldcs(p);
    else if constexpr (A == Access::readonly) return __ldg(p);
    else if constexpr (A == Access::l2only) return __ldcg(p);
    else return *p;
}

template <Access A, class T>
__device__ __forceinline__ void store(T* p, const T& v) {
    if constexpr (A == Access::streaming) __stcs(p, v);
    else *p = v;
}

template <Access A>
__global__ void __launch_bounds__(kBlock) copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                                      std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = load<A>(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) store<A>(dst + i + u * stride, v[u]);
    }
    for (; i < n; i += stride) store<A>(dst + i, load<A>(src + i));
}

__device__ __forceinline__ float4 triad4(float4 b, float4 c, float s) {
    return make_float4(fmaf(s, c.x, b.x), fmaf(s, c.y, b.y), fmaf(s, c.z, b.z), fmaf(s, c.w, b.w));
}

// a = b + s * c
__global__ void __launch_bounds__(kBlock) triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
                                                       const float4* __restrict__ c, float s, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        float4 bv[kUnroll], cv[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            bv[u] = __ldcs(b + i + u * stride);
            cv[u] = __ldcs(c + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) __stcs(a + i + u * stride, triad4(bv[u], cv[u], s));
    }
    for (; i < n; i += stride) __stcs(a + i, triad4(__ldcs(b + i), __ldcs(c + i), s));
}

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_sums[kBlock / 32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < kBlock / 32; ++w) s += warp_sums[w];
    return s;
}

// Read-only: each block writes the sum of what it read to partial[blockIdx.x]. `passes` > 1 re-reads the same
// working set (the L2 kernel, with Access::l2only).
template <Access A>
__global__ void __launch_bounds__(kBlock) read_kernel(const float4* __restrict__ src, std::size_t n, int passes,
                                                      float* __restrict__ partial) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    float4 acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int p = 0; p < passes; ++p) {
        std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
        for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
            float4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) v[u] = load<A>(src + i + u * stride);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                acc[u].x += v[u].x;
                acc[u].y += v[u].y;
                acc[u].z += v[u].z;
                acc[u].w += v[u].w;
            }
        }
        for (; i < n; i += stride) {
            const float4 v = load<A>(src + i);
            acc[0].x += v.x;
            acc[0].y += v.y;
            acc[0].z += v.z;
            acc[0].w += v.w;
        }
    }
    float t = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) t += (acc[u].x + acc[u].y) + (acc[u].z + acc[u].w);
    const float s = block_sum(t);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

struct Check {
    bool ok = true;
    std::string what;
    void fail(const std::string& msg) {
        if (ok) what = msg;
        ok = false;
    }
};

// Sampled elements of dst against expected(i).
template <class Expected>
void check_samples(Check& c, const char* name, const float* d_dst, std::size_t n, std::uint64_t seed,
                   Expected&& expected) {
    const auto idx = sample_indices(n, 1024, 4096, seed);
    const auto got = gather_f32(d_dst, idx);
    for (std::size_t j = 0; j < idx.size(); ++j) {
        const float want = expected(idx[j]);
        if (!(got[j] == want)) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "%s: element %llu is %.9g, expected %.9g", name,
                          static_cast<unsigned long long>(idx[j]), static_cast<double>(got[j]), static_cast<double>(want));
            c.fail(buf);
            return;
        }
    }
}

double sum_partials(const DeviceBuffer<float>& partial, int blocks) {
    std::vector<float> h(static_cast<std::size_t>(blocks));
    RCAL_CUDA(cudaMemcpy(h.data(), partial.ptr, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double s = 0;
    for (const float v : h) s += static_cast<double>(v);
    return s;
}

double host_sum_f32(std::uint64_t seed, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(value_f32(seed, i));
    return s;
}

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

const char* access_name(Access a) {
    switch (a) {
        case Access::streaming: return "16-byte ld/st.global.cs (evict-first)";
        case Access::readonly: return "16-byte ld.global.nc (read-only path)";
        case Access::plain: return "16-byte ld/st.global, default caching";
        case Access::l2only: return "16-byte ld.global.cg (L2 only)";
    }
    return "";
}

struct DramArrays {
    DeviceBuffer<float>& a;
    DeviceBuffer<float>& b;
    std::size_t floats;
    std::uint64_t seed_b;
    int warmup, reps;
    Sizes sizes;
};

template <Access A>
void dram_copy(const Context& ctx, DramArrays& d, const std::string& kernel, GroupResult& out) {
    const int grid = resident_grid(copy_kernel<A>, kBlock, 0, ctx.sm_count);
    const std::size_t n4 = d.floats / 4;
    auto launch = [&] {
        copy_kernel<A><<<grid, kBlock>>>(reinterpret_cast<const uint4*>(d.b.ptr), reinterpret_cast<uint4*>(d.a.ptr), n4);
    };
    Check chk;
    d.a.poison();
    launch();
    RCAL_LAUNCHED();
    RCAL_CUDA(cudaDeviceSynchronize());
    check_samples(chk, kernel.c_str(), d.a.ptr, d.floats, 7, [&](std::uint64_t i) { return value_f32(d.seed_b, i); });
    const auto t = time_events(launch, d.warmup, d.reps);
    Sizes sz = d.sizes;
    sz.emplace_back("blocks", grid);
    sz.emplace_back("threads_per_block", kBlock);
    const double array_bytes = static_cast<double>(d.floats * sizeof(float));
    auto m = bandwidth_measurement(roofline::Level::dram, "HBM", kernel, 2 * array_bytes, t, d.warmup, chk.ok, sz);
    m.feeds_model = false;
    m.notes = std::string("a = b: 1 array read, 1 written (2 x array_bytes), ") + access_name(A) +
              "; a reference next to triad";
    if (!chk.ok) out.failures.push_back(chk.what);
    log_line(m);
    out.measurements.push_back(m);
}

template <Access A>
void dram_read(const Context& ctx, DramArrays& d, const std::string& kernel, GroupResult& out) {
    const int grid = resident_grid(read_kernel<A>, kBlock, 0, ctx.sm_count);
    const std::size_t n4 = d.floats / 4;
    DeviceBuffer<float> partial(static_cast<std::size_t>(grid));
    Check chk;
    // Exact check on a prefix the host sums quickly (odd length: the tail loop runs), then a plausibility check of
    // the full sum (the mean of value_f32 is 1.5 to ~1e-4 over millions of elements).
    const std::size_t prefix4 = std::min<std::size_t>(n4, (std::size_t{1} << 20) + 3);
    partial.poison();
    read_kernel<A><<<grid, kBlock>>>(reinterpret_cast<const float4*>(d.b.ptr), prefix4, 1, partial.ptr);
    RCAL_LAUNCHED();
    const double got_prefix = sum_partials(partial, grid);
    const double want_prefix = host_sum_f32(d.seed_b, prefix4 * 4);
    if (!(std::fabs(got_prefix - want_prefix) <= 1e-5 * want_prefix)) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s: sum of %zu elements is %.9g, expected %.9g", kernel.c_str(), prefix4 * 4,
                      got_prefix, want_prefix);
        chk.fail(buf);
    }
    auto launch = [&] {
        read_kernel<A><<<grid, kBlock>>>(reinterpret_cast<const float4*>(d.b.ptr), n4, 1, partial.ptr);
    };
    partial.poison();
    launch();
    RCAL_LAUNCHED();
    const double mean = sum_partials(partial, grid) / static_cast<double>(d.floats);
    if (!(std::fabs(mean - 1.5) < 2e-3)) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s: mean of %zu elements is %.9g, expected 1.5", kernel.c_str(), d.floats, mean);
        chk.fail(buf);
    }
    const auto t = time_events(launch, d.warmup, d.reps);
    Sizes sz = d.sizes;
    sz.emplace_back("blocks", grid);
    sz.emplace_back("threads_per_block", kBlock);
    const double array_bytes = static_cast<double>(d.floats * sizeof(float));
    auto m = bandwidth_measurement(roofline::Level::dram, "HBM", kernel, array_bytes, t, d.warmup, chk.ok, sz);
    m.notes = std::string("sum of one array: read only (1 x array_bytes), ") + access_name(A);
    if (!chk.ok) out.failures.push_back(chk.what);
    log_line(m);
    out.measurements.push_back(m);
}

}  // namespace

GroupResult run_dram(const Context& ctx) {
    GroupResult out;
    // Three arrays of 1 GiB (256 MiB in quick mode), each far larger than any L2, and well inside device memory.
    std::size_t floats = ctx.quick ? (std::size_t{1} << 26) : (std::size_t{1} << 28);
    while (floats > (std::size_t{1} << 22) && 3 * floats * sizeof(float) > ctx.free_bytes / 2) floats /= 2;
    const float s = 0.75f;
    const std::uint64_t seed_c = 202;

    DeviceBuffer<float> a(floats), b(floats), c(floats);
    DramArrays d{a, b, floats, 101, 3, ctx.quick ? 10 : 50,
                 {{"elements", static_cast<double>(floats)}, {"array_bytes", static_cast<double>(floats * sizeof(float))}}};
    fill_f32(b.ptr, floats, d.seed_b);
    fill_f32(c.ptr, floats, seed_c);

    dram_copy<Access::streaming>(ctx, d, "stream_copy", out);
    dram_copy<Access::plain>(ctx, d, "stream_copy_default_cache", out);
    // triad: a = b + s*c, the STREAM figure of merit.
    {
        const int grid = resident_grid(triad_kernel, kBlock, 0, ctx.sm_count);
        const std::size_t n4 = floats / 4;
        auto launch = [&] {
            triad_kernel<<<grid, kBlock>>>(reinterpret_cast<float4*>(a.ptr), reinterpret_cast<const float4*>(b.ptr),
                                           reinterpret_cast<const float4*>(c.ptr), s, n4);
        };
        Check chk;
        a.poison();
        launch();
        RCAL_LAUNCHED();
        RCAL_CUDA(cudaDeviceSynchronize());
        check_samples(chk, "stream_triad", a.ptr, floats, 8,
                      [&](std::uint64_t i) { return std::fma(s, value_f32(seed_c, i), value_f32(d.seed_b, i)); });
        const auto t = time_events(launch, d.warmup, d.reps);
        Sizes sz = d.sizes;
        sz.emplace_back("blocks", grid);
        sz.emplace_back("threads_per_block", kBlock);
        const double array_bytes = static_cast<double>(floats * sizeof(float));
        auto m = bandwidth_measurement(roofline::Level::dram, "HBM", "stream_triad", 3 * array_bytes, t, d.warmup, chk.ok, sz);
        m.notes = "a = b + s*c: 2 arrays read, 1 written (3 x array_bytes), 16-byte ld/st.global.cs";
        if (!chk.ok) out.failures.push_back(chk.what);
        log_line(m);
        out.measurements.push_back(m);
    }
    dram_read<Access::streaming>(ctx, d, "read_reduce", out);
    dram_read<Access::readonly>(ctx, d, "read_reduce_ldg", out);
    dram_read<Access::plain>(ctx, d, "read_reduce_default_cache", out);
    return out;
}

GroupResult run_l2(const Context& ctx) {
    GroupResult out;
    const int grid = resident_grid(read_kernel<Access::l2only>, kBlock, 0, ctx.sm_count);
    DeviceBuffer<float> partial(static_cast<std::size_t>(grid));
    const std::uint64_t seed = 303;
    const int warmup = 3, reps = ctx.quick ? 5 : 20;
    // Working sets of 1/8, 1/4 and 1/2 of L2 (Hopper's L2 is two partitions; an SM reaches the far one at a lower
    // rate, so the largest set that still fits is not the fastest). The best is the L2 ceiling; the others are
    // recorded as references.
    std::vector<roofline::CeilingMeasurement> ms;
    std::vector<std::string> fails;
    for (const int divisor : {8, 4, 2}) {
        std::size_t floats = ctx.l2_bytes / static_cast<std::size_t>(divisor) / sizeof(float);
        floats -= floats % (4 * 32);
        if (floats < 4096) continue;
        const std::size_t n4 = floats / 4;
        DeviceBuffer<float> buf(floats);
        fill_f32(buf.ptr, floats, seed);
        // Passes so that one launch reads ~4 GiB (~0.5 ms at L2 rates): launch overhead well under 1 %.
        const int passes = static_cast<int>(std::max<std::size_t>(
            1, (ctx.quick ? (std::size_t{1} << 28) : (std::size_t{1} << 32)) / (floats * sizeof(float))));
        Check chk;
        partial.poison();
        read_kernel<Access::l2only><<<grid, kBlock>>>(reinterpret_cast<const float4*>(buf.ptr), n4, 2, partial.ptr);
        RCAL_LAUNCHED();
        const double got = sum_partials(partial, grid);
        const double want = 2.0 * host_sum_f32(seed, floats);
        if (!(std::fabs(got - want) <= 1e-5 * want)) {
            char b[160];
            std::snprintf(b, sizeof b, "l2_read_reduce: sum over 2 passes of %zu elements is %.9g, expected %.9g",
                          floats, got, want);
            chk.fail(b);
        }
        const auto t = time_events([&] {
            read_kernel<Access::l2only><<<grid, kBlock>>>(reinterpret_cast<const float4*>(buf.ptr), n4, passes, partial.ptr);
        }, warmup, reps);
        const double bytes = static_cast<double>(floats * sizeof(float)) * passes;
        auto m = bandwidth_measurement(roofline::Level::l2, "L2", "l2_read_reduce_1/" + std::to_string(divisor), bytes, t,
                                       warmup, chk.ok,
                                       {{"working_set_bytes", static_cast<double>(floats * sizeof(float))},
                                        {"l2_bytes", static_cast<double>(ctx.l2_bytes)},
                                        {"passes", passes},
                                        {"blocks", grid},
                                        {"threads_per_block", kBlock}});
        m.notes = "read-only reduction, 16-byte ld.global.cg (L2, not L1), working set 1/" + std::to_string(divisor) +
                  " of L2, re-read passes times per launch";
        if (!chk.ok) fails.push_back(chk.what);
        ms.push_back(m);
    }
    // Only the fastest verified working set feeds the model.
    std::size_t best = ms.size();
    for (std::size_t i = 0; i < ms.size(); ++i)
        if (ms[i].verified && (best == ms.size() || ms[i].median > ms[best].median)) best = i;
    for (std::size_t i = 0; i < ms.size(); ++i) {
        ms[i].feeds_model = i == best;
        log_line(ms[i]);
        out.measurements.push_back(ms[i]);
    }
    out.failures = fails;
    return out;
}

}  // namespace rcal
