// cuBLAS GEMM as a second reference for the tensor-core rate: cublasGemmEx on large square bf16 and fp16 matrices
// (fp32 compute, output in the input format, as frameworks call it). Its rate is a real GEMM's, with the memory
// traffic and the tile edges that the register-only MMA kernels leave out; it is recorded as gemm_flops.
#include "bench.hpp"
#include "common.cuh"

#include "../host/reference.hpp"
#include "../host/stats.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace rcal {

namespace {

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

double element(std::uint64_t seed, std::uint64_t e, bool bf16) {
    return bf16 ? static_cast<double>(bf16_bits_to_float(value_bf16_bits(seed, e, true)))
                : fp16_bits_to_double(value_fp16_bits(seed, e, true));
}

double decode(std::uint16_t bits, bool bf16) {
    return bf16 ? static_cast<double>(bf16_bits_to_float(bits)) : fp16_bits_to_double(bits);
}

void measure(const Context& ctx, cublasHandle_t handle, bool bf16, GroupResult& out) {
    const char* name = bf16 ? "cublas_gemm_bf16" : "cublas_gemm_fp16";
    const int n = ctx.quick ? 4096 : 8192;  // M = N = K
    const std::size_t elems = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    const std::uint64_t seed_a = bf16 ? 801 : 811, seed_b = bf16 ? 802 : 812;
    const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    DeviceBuffer<std::uint16_t> a(elems), b(elems), c(elems);
    fill_bits16(a.ptr, elems, seed_a, bf16, true);
    fill_bits16(b.ptr, elems, seed_b, bf16, true);
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major: C(i, j) = sum_k A(i + k*n) B(k + j*n).
    auto launch = [&] {
        RCAL_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.ptr, type, n, b.ptr, type, n, &beta,
                                 c.ptr, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    c.poison();
    launch();
    RCAL_CUDA(cudaDeviceSynchronize());
    // Check 256 sampled elements against a double-precision dot product (output rounding: 2^-9 for bf16).
    bool ok = true;
    {
        std::vector<double> want, have;
        for (int s = 0; s < 256; ++s) {
            const auto h = hash64(99, static_cast<std::uint64_t>(s));
            const std::size_t i = (h & 0xffffffffu) % static_cast<std::size_t>(n), j = (h >> 32) % static_cast<std::size_t>(n);
            double acc = 0;
            for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k)
                acc += element(seed_a, i + k * static_cast<std::size_t>(n), bf16) *
                       element(seed_b, k + j * static_cast<std::size_t>(n), bf16);
            std::uint16_t bits = 0;
            RCAL_CUDA(cudaMemcpy(&bits, c.ptr + i + j * static_cast<std::size_t>(n), sizeof bits, cudaMemcpyDeviceToHost));
            want.push_back(acc);
            have.push_back(decode(bits, bf16));
        }
        const double err = relative_error(have, want);
        if (!(err < 1e-2)) {
            ok = false;
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s: relative error %.3g on 256 sampled elements (allowed 1e-2)", name, err);
            out.failures.push_back(buf);
        }
    }
    const int warmup = 3, reps = ctx.quick ? 5 : 20;
    const auto t = time_events(launch, warmup, reps);
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    auto m = flops_measurement(roofline::Ceiling::gemm_flops, bf16 ? roofline::DType::bf16 : roofline::DType::fp16,
                               roofline::Unit::matrix, name, flops, t, warmup, ok, {{"m", n}, {"n", n}, {"k", n}});
    m.notes = std::string("cublasGemmEx N,N ") + (bf16 ? "bf16" : "fp16") +
              " in and out, CUBLAS_COMPUTE_32F, random signed data; a second reference next to the MMA kernels";
    log_line(m);
    out.measurements.push_back(m);
}

}  // namespace

GroupResult run_cublas(const Context& ctx) {
    GroupResult out;
    cublasHandle_t handle = nullptr;
    RCAL_CUBLAS(cublasCreate(&handle));
    int major = 0, minor = 0, patch = 0;
    RCAL_CUBLAS(cublasGetProperty(MAJOR_VERSION, &major));
    RCAL_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
    RCAL_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
    out.extra.emplace_back("cublas_version",
                           "\"" + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) + "\"");
    if (ctx.cc_major >= 8) measure(ctx, handle, true, out);
    measure(ctx, handle, false, out);
    RCAL_CUBLAS(cublasDestroy(handle));
    return out;
}

}  // namespace rcal
