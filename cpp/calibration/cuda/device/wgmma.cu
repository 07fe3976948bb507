// Tensor-core throughput through wgmma (Hopper's native warpgroup MMA, sm_90a only): m64n256k16, bf16 or fp16
// inputs, fp32 accumulate, both operands from shared memory.
//
// This file is compiled for sm_90a alone (-gencode arch=compute_90a,code=sm_90a, see CMakeLists.txt): wgmma exists
// only there, and a device without a matching image simply skips the group (checked with cudaFuncGetAttributes).
//
// Design: one block per SM of two warpgroups (256 threads, __launch_bounds__(256, 1)); each warpgroup owns a 64x256
// fp32 accumulator in registers (128 per thread) and issues m64n256k16 (the largest shape: 512 KFLOP per
// instruction for 10 KB of shared-memory operands, 80 B/clk at full rate, inside the 128 B/clk the SM reads) in
// batches of kBatch back-to-back instructions per commit group, waiting only for the batch before last
// (wgmma.wait_group 1), so the tensor cores always have queued work and the two warpgroups cover each other's
// waits. The operands are a 64x32 A per warpgroup and one 32x256 B, K-major, stored without swizzle as 8x8 core
// matrices (reference.hpp: wgmma_kmajor_offset), loaded once; successive MMAs accumulate into the same registers,
// which the instruction orders by itself for the same shape. Nothing touches global memory inside the loop, so
// this is the tensor cores' rate, an upper bound for any GEMM. The output is count x A_w B per warpgroup, checked
// against the host product.
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"

#include <cstdio>
#include <string>

namespace rcal {

namespace {

constexpr int kWarpgroups = 2;
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kM = 64, kN = 256, kKTile = 32;   // per warpgroup: A 64x32, shared B 32x256
constexpr int kKSteps = kKTile / 16;
constexpr int kBatch = 4;                       // repeats of the kKSteps MMAs per commit group

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The 128 fp32 accumulators of one m64n256k16 wgmma, as the instruction's register list and as asm operands.
#define RCAL_WGMMA_D128_REGS \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
#define RCAL_WGMMA_D128(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// D[64×256] (+)= A[64×16] · B[16×256] from shared-memory descriptors, fp32 accumulate; TYPE: bf16 or f16.
#define RCAL_WGMMA_M64N256K16(NAME, TYPE)                                                                     \
    __device__ __forceinline__ void NAME(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) { \
        asm volatile("{\n"                                                                                 \
                     ".reg .pred p;\n"                                                                     \
                     "setp.ne.b32 p, %130, 0;\n"                                                           \
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " " RCAL_WGMMA_D128_REGS  \
                     "%128, %129, p, 1, 1, 0, 0;\n"                                                        \
                     "}\n"                                                                                 \
                     : RCAL_WGMMA_D128(d)                                                                   \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                             \
    }

RCAL_WGMMA_M64N256K16(wgmma_m64n256k16_bf16, "bf16")
RCAL_WGMMA_M64N256K16(wgmma_m64n256k16_f16, "f16")

__device__ __forceinline__ std::uint64_t smem_desc(const void* p, std::uint32_t lbo_bytes, std::uint32_t sbo_bytes) {
    const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
    std::uint64_t desc = 0;
    desc |= static_cast<std::uint64_t>((addr & 0x3ffffu) >> 4);
    desc |= static_cast<std::uint64_t>((lbo_bytes & 0x3ffffu) >> 4) << 16;
    desc |= static_cast<std::uint64_t>((sbo_bytes & 0x3ffffu) >> 4) << 32;
    // base offset 0, swizzle mode 0 (none: 8x8 core matrices, each 128 contiguous bytes)
    return desc;
}
#endif

// a: kWarpgroups*kM x kKTile row-major (K-major); bt: kN x kKTile (B transposed: B(k, n) = bt[n*kKTile + k]).
// out: per block and warpgroup, 128 registers x 128 threads, stored [block][warpgroup][reg][thread].
template <bool Bf16>
__global__ void __launch_bounds__(kThreads, 1) wgmma_kernel(const std::uint16_t* __restrict__ a,
                                                             const std::uint16_t* __restrict__ bt,
                                                             float* __restrict__ out, int iters, int* status) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(1024) std::uint16_t sa[kWarpgroups][kM * kKTile];
    __shared__ __align__(1024) std::uint16_t sb[kN * kKTile];
    for (int e = static_cast<int>(threadIdx.x); e < kWarpgroups * kM * kKTile; e += kThreads) {
        const int g = e / (kM * kKTile), rest = e % (kM * kKTile), row = rest / kKTile, k = rest % kKTile;
        sa[g][wgmma_kmajor_offset(row, k, kKTile)] = a[e];
    }
    for (int e = static_cast<int>(threadIdx.x); e < kN * kKTile; e += kThreads) {
        const int n = e / kKTile, k = e % kKTile;
        sb[wgmma_kmajor_offset(n, k, kKTile)] = bt[e];
    }
    // Ordinary stores that the tensor cores (the async proxy) read next: fence, then barrier.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    const int wg = static_cast<int>(threadIdx.x) / 128;
    // Core matrices along K are 128 B apart (leading byte offset); 8-row groups are 16*kKTile B apart (stride).
    std::uint64_t da[kKSteps], db[kKSteps];
#pragma unroll
    for (int s = 0; s < kKSteps; ++s) {
        da[s] = smem_desc(&sa[wg][wgmma_kmajor_offset(0, 16 * s, kKTile)], 128, 16 * kKTile);
        db[s] = smem_desc(&sb[wgmma_kmajor_offset(0, 16 * s, kKTile)], 128, 16 * kKTile);
    }
    float d[128];
#pragma unroll
    for (int r = 0; r < 128; ++r) d[r] = 0.f;
    for (int it = 0; it < iters; ++it) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int rep = 0; rep < kBatch; ++rep)
#pragma unroll
            for (int s = 0; s < kKSteps; ++s) {
                if constexpr (Bf16)
                    wgmma_m64n256k16_bf16(d, da[s], db[s], 1);
                else
                    wgmma_m64n256k16_f16(d, da[s], db[s], 1);
            }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    float* o = out + (static_cast<std::size_t>(blockIdx.x) * kWarpgroups + static_cast<std::size_t>(wg)) * 128 * 128 +
               (threadIdx.x % 128);
#pragma unroll
    for (int r = 0; r < 128; ++r) o[r * 128] = d[r];
    if (blockIdx.x == 0 && threadIdx.x == 0) *status = 1;
#else
    (void)a;
    (void)bt;
    (void)out;
    (void)iters;
    if (blockIdx.x == 0 && threadIdx.x == 0) *status = -1;  // built without sm_90a features: nothing ran
#endif
}

double element(std::uint64_t seed, std::uint64_t e, bool bf16) {
    return bf16 ? static_cast<double>(bf16_bits_to_float(value_bf16_bits(seed, e, true)))
                : fp16_bits_to_double(value_fp16_bits(seed, e, true));
}

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

template <bool Bf16>
bool measure(const Context& ctx, GroupResult& out) {
    const char* name = Bf16 ? "wgmma_bf16" : "wgmma_fp16";
    auto kernel = wgmma_kernel<Bf16>;
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: no image for this device
        std::printf("  %s: no sm_90a image for this device (compute capability %d.%d); skipped\n", name, ctx.cc_major,
                    ctx.cc_minor);
        return false;
    }
    const std::uint64_t seed_a = Bf16 ? 701 : 711, seed_b = Bf16 ? 702 : 712;
    int per_sm = 0;
    RCAL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
    const int grid = std::max(1, per_sm) * ctx.sm_count;
    DeviceBuffer<std::uint16_t> a(static_cast<std::size_t>(kWarpgroups) * kM * kKTile), bt(static_cast<std::size_t>(kN) * kKTile);
    DeviceBuffer<float> res(static_cast<std::size_t>(grid) * kWarpgroups * 128 * 128);
    DeviceBuffer<int> status(1);
    fill_bits16(a.ptr, a.n, seed_a, Bf16, true);
    fill_bits16(bt.ptr, bt.n, seed_b, Bf16, true);
    auto launch = [&](int iters) { kernel<<<grid, kThreads>>>(a.ptr, bt.ptr, res.ptr, iters, status.ptr); };

    RCAL_CUDA(cudaMemset(status.ptr, 0, sizeof(int)));
    res.poison();
    const int verify_iters = 2;
    launch(verify_iters);
    RCAL_LAUNCHED();
    int st = 0;
    RCAL_CUDA(cudaMemcpy(&st, status.ptr, sizeof st, cudaMemcpyDeviceToHost));
    if (st != 1) {
        std::printf("  %s: the kernel ran without sm_90a features (status %d); skipped\n", name, st);
        return false;
    }
    // Host product per warpgroup, compared on the first and the last block.
    std::vector<double> A(static_cast<std::size_t>(kWarpgroups) * kM * kKTile), B(static_cast<std::size_t>(kKTile) * kN);
    for (std::size_t e = 0; e < A.size(); ++e) A[e] = element(seed_a, e, Bf16);
    for (int n = 0; n < kN; ++n)
        for (int k = 0; k < kKTile; ++k)
            B[static_cast<std::size_t>(k * kN + n)] = element(seed_b, static_cast<std::uint64_t>(n * kKTile + k), Bf16);
    const double count = static_cast<double>(verify_iters) * kBatch;
    bool ok = true;
    for (const int block : {0, grid - 1}) {
        std::vector<float> got(static_cast<std::size_t>(kWarpgroups) * 128 * 128);
        RCAL_CUDA(cudaMemcpy(got.data(), res.ptr + static_cast<std::size_t>(block) * got.size(), got.size() * sizeof(float),
                             cudaMemcpyDeviceToHost));
        for (int g = 0; g < kWarpgroups && ok; ++g) {
            const std::vector<double> Ag(A.begin() + g * kM * kKTile, A.begin() + (g + 1) * kM * kKTile);
            const auto C = matmul(Ag, B, kM, kN, kKTile);
            std::vector<double> want, have;
            for (int t = 0; t < 128; ++t)
                for (int r = 0; r < 128; ++r) {
                    const RowCol rc = wgmma_m64nN_d(t, r);
                    want.push_back(count * C[static_cast<std::size_t>(rc.row * kN + rc.col)]);
                    have.push_back(static_cast<double>(got[static_cast<std::size_t>((g * 128 + r) * 128 + t)]));
                }
            const double err = relative_error(have, want);
            if (!(err < 1e-3)) {
                ok = false;
                char buf[200];
                std::snprintf(buf, sizeof buf, "%s: block %d warpgroup %d relative error %.3g against the host product "
                              "(allowed 1e-3)", name, block, g, err);
                out.failures.push_back(buf);
            }
        }
    }
    const double target_s = ctx.quick ? 2e-3 : 10e-3;
    const double probe = probe_seconds([&] { launch(64); });
    const int iters = static_cast<int>(std::min(1e8, std::max(1.0, 64 * target_s / std::max(probe, 1e-7))));
    const int warmup = 2, reps = ctx.quick ? 5 : 15;
    const auto t = time_events([&] { launch(iters); }, warmup, reps);
    const double flops = 2.0 * kM * kN * kKTile * kBatch * static_cast<double>(iters) * kWarpgroups * grid;
    auto m = flops_measurement(roofline::Ceiling::peak_flops, Bf16 ? roofline::DType::bf16 : roofline::DType::fp16,
                               roofline::Unit::matrix, name, flops, t, warmup, ok,
                               {{"blocks", grid}, {"threads_per_block", kThreads},
                                {"wgmma_per_warpgroup", static_cast<double>(iters) * kBatch * kKSteps},
                                {"registers_per_thread", attr.numRegs}});
    m.notes = std::string("wgmma.mma_async m64n256k16 ") + (Bf16 ? "bf16" : "fp16") +
              " x fp32 accumulate, A and B from shared memory (no swizzle), accumulators in registers, "
              "2 warpgroups per SM, commit groups of " + std::to_string(kBatch * kKSteps) + " MMAs";
    log_line(m);
    out.measurements.push_back(m);
    return true;
}

}  // namespace

GroupResult run_wgmma(const Context& ctx) {
    GroupResult out;
    if (!(ctx.cc_major == 9 && ctx.cc_minor == 0)) {
        std::printf("  wgmma needs compute capability 9.0 (sm_90a); this device is %d.%d; skipped\n", ctx.cc_major,
                    ctx.cc_minor);
        return out;
    }
    if (measure<true>(ctx, out)) {
        out.extra.emplace_back("wgmma_sm90a", "true");
        measure<false>(ctx, out);
    }
    return out;
}

}  // namespace rcal
