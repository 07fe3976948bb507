// Tensor-core throughput through mma.sync.m16n8k16 (bf16 and fp16 inputs, fp32 accumulate): the warp-level MMA
// that runs on every GPU from sm_80 on. On Hopper it is the legacy path (wgmma.cu measures the native one).
//
// Design: each warp keeps a 32x32 tile in registers: two A fragments (16x16) and four B fragments (16x8) loaded
// once, and eight independent fp32 accumulators (2x4 tiles of 16x8), so every iteration issues 8 independent
// MMAs and no MMA waits on the previous one's result; nothing touches memory inside the loop. The resident grid
// of 256-thread blocks keeps several warps per scheduler. The output is iters x A_i B_j per tile, checked against
// a host product built from the documented fragment layouts (reference.hpp).
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"

#include <cstdio>
#include <string>

namespace rcal {

namespace {

constexpr int kRegsPerWarpLane = 2 * 4 + 4 * 2;  // A: 2 tiles x 4 regs; B: 4 tiles x 2 regs
constexpr int kTiles = 8;                        // 2 x 4 accumulators of 16x8

template <bool Bf16>
__device__ __forceinline__ void mma16816(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    if constexpr (Bf16) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
}

// frags: per warp and lane, kRegsPerWarpLane 32-bit registers, stored [warp][reg][lane].
// out: per warp, kTiles x 4 accumulator registers, stored [warp][tile][reg][lane].
template <bool Bf16>
__global__ void __launch_bounds__(kBlock) mma_kernel(const std::uint32_t* __restrict__ frags, float* __restrict__ out,
                                                     int iters) {
    const std::size_t warp = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) >> 5;
    const int lane = static_cast<int>(threadIdx.x & 31);
    const std::uint32_t* f = frags + warp * kRegsPerWarpLane * 32 + lane;
    std::uint32_t a[2][4], b[4][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) a[i][r] = f[(i * 4 + r) * 32];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) b[j][r] = f[(8 + j * 2 + r) * 32];
    float d[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) d[i][j][r] = 0.f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) mma16816<Bf16>(d[i][j], a[i], b[j]);
    }
    float* o = out + warp * kTiles * 4 * 32 + lane;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) o[((i * 4 + j) * 4 + r) * 32] = d[i][j][r];
}

double element(std::uint64_t seed, std::uint64_t e, bool bf16) {
    return bf16 ? static_cast<double>(bf16_bits_to_float(value_bf16_bits(seed, e, true)))
                : fp16_bits_to_double(value_fp16_bits(seed, e, true));
}

// Relative error of one warp's output against the host product.
double check_warp(std::uint64_t seed, bool bf16, std::size_t warp, const std::vector<float>& got, int iters) {
    // 16-bit element index of (warp, reg, lane, half) in the fill: ((warp*R + reg)*32 + lane)*2 + half.
    auto elem = [&](int reg, int lane, int half) {
        return element(seed, ((warp * kRegsPerWarpLane + static_cast<std::size_t>(reg)) * 32 + static_cast<std::size_t>(lane)) * 2 +
                                 static_cast<std::size_t>(half), bf16);
    };
    std::vector<double> A[2], B[4];
    for (int i = 0; i < 2; ++i) {
        A[i].assign(16 * 16, 0.0);
        for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < 4; ++r)
                for (int h = 0; h < 2; ++h) {
                    const RowCol rc = mma_m16n8k16_a(lane, r, h);
                    A[i][static_cast<std::size_t>(rc.row * 16 + rc.col)] = elem(i * 4 + r, lane, h);
                }
    }
    for (int j = 0; j < 4; ++j) {
        B[j].assign(16 * 8, 0.0);
        for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < 2; ++r)
                for (int h = 0; h < 2; ++h) {
                    const RowCol kn = mma_m16n8k16_b(lane, r, h);
                    B[j][static_cast<std::size_t>(kn.row * 8 + kn.col)] = elem(8 + j * 2 + r, lane, h);
                }
    }
    std::vector<double> want, have;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
            const auto c = matmul(A[i], B[j], 16, 8, 16);
            for (int lane = 0; lane < 32; ++lane)
                for (int r = 0; r < 4; ++r) {
                    const RowCol rc = mma_m16n8k16_c(lane, r);
                    want.push_back(iters * c[static_cast<std::size_t>(rc.row * 8 + rc.col)]);
                    have.push_back(static_cast<double>(got[static_cast<std::size_t>(((i * 4 + j) * 4 + r) * 32 + lane)]));
                }
        }
    return relative_error(have, want);
}

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

template <bool Bf16>
roofline::CeilingMeasurement measure(const Context& ctx, GroupResult& out) {
    const char* name = Bf16 ? "mma_sync_bf16" : "mma_sync_fp16";
    const std::uint64_t seed = Bf16 ? 606 : 607;
    const int grid = resident_grid(mma_kernel<Bf16>, kBlock, 0, ctx.sm_count);
    const std::size_t warps = static_cast<std::size_t>(grid) * kBlock / 32;
    DeviceBuffer<std::uint16_t> frags(warps * kRegsPerWarpLane * 32 * 2);
    DeviceBuffer<float> res(warps * kTiles * 4 * 32);
    fill_bits16(frags.ptr, frags.n, seed, Bf16, true);
    auto launch = [&](int iters) {
        mma_kernel<Bf16><<<grid, kBlock>>>(reinterpret_cast<const std::uint32_t*>(frags.ptr), res.ptr, iters);
    };
    // Check: three iterations, the first, a middle and the last warp.
    const int verify_iters = 3;
    res.poison();
    launch(verify_iters);
    RCAL_LAUNCHED();
    bool ok = true;
    for (const std::size_t w : {std::size_t{0}, warps / 2, warps - 1}) {
        std::vector<float> got(kTiles * 4 * 32);
        RCAL_CUDA(cudaMemcpy(got.data(), res.ptr + w * got.size(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
        const double err = check_warp(seed, Bf16, w, got, verify_iters);
        if (!(err < 1e-3)) {
            ok = false;
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s: warp %zu relative error %.3g against the host product (allowed 1e-3)", name,
                          w, err);
            out.failures.push_back(buf);
            break;
        }
    }
    const double target_s = ctx.quick ? 2e-3 : 10e-3;
    const double probe = probe_seconds([&] { launch(256); });
    const int iters = static_cast<int>(std::min(1e8, std::max(1.0, 256 * target_s / std::max(probe, 1e-7))));
    const int warmup = 2, reps = ctx.quick ? 5 : 15;
    const auto t = time_events([&] { launch(iters); }, warmup, reps);
    const double flops = 2.0 * 16 * 8 * 16 * kTiles * static_cast<double>(iters) * static_cast<double>(warps);
    auto m = flops_measurement(roofline::Ceiling::peak_flops, Bf16 ? roofline::DType::bf16 : roofline::DType::fp16,
                               roofline::Unit::matrix, name, flops, t, warmup, ok,
                               {{"warps", static_cast<double>(warps)}, {"blocks", grid},
                                {"mma_per_warp", static_cast<double>(iters) * kTiles}});
    m.notes = std::string("mma.sync.m16n8k16 ") + (Bf16 ? "bf16" : "fp16") +
              " x fp32 accumulate, operands and 8 independent accumulators in registers";
    if (ctx.cc_major == 9) m.notes += "; on Hopper the legacy path (wgmma is the native one)";
    return m;
}

}  // namespace

GroupResult run_mma(const Context& ctx) {
    GroupResult out;
    if (ctx.cc_major < 8) {
        std::printf("  mma.sync bf16 needs sm_80 or newer; skipped\n");
        return out;
    }
    for (auto m : {measure<true>(ctx, out), measure<false>(ctx, out)}) {
        log_line(m);
        out.measurements.push_back(m);
    }
    return out;
}

}  // namespace rcal
