// Every CUDA runtime and cuBLAS call goes through these: on failure they print file:line, the call and the error
// string, and exit with status 1 (a CUDA error may leave the context unusable, so nothing after it is trusted).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace rcal {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* call, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: CUDA error %d (%s: %s) in %s\n", file, line, static_cast<int>(e), cudaGetErrorName(e),
                 cudaGetErrorString(e), call);
    std::fflush(stderr);
    std::exit(1);
}

[[noreturn]] inline void cublas_fail(cublasStatus_t s, const char* call, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: cuBLAS error %d (%s: %s) in %s\n", file, line, static_cast<int>(s),
                 cublasGetStatusName(s), cublasGetStatusString(s), call);
    std::fflush(stderr);
    std::exit(1);
}

}  // namespace rcal

#define RCAL_CUDA(call)                                                              \
    do {                                                                             \
        const cudaError_t rcal_err_ = (call);                                        \
        if (rcal_err_ != cudaSuccess) ::rcal::cuda_fail(rcal_err_, #call, __FILE__, __LINE__); \
    } while (0)

/// After a kernel launch: the launch's own error (bad configuration, no image for this device).
#define RCAL_LAUNCHED() RCAL_CUDA(cudaGetLastError())

#define RCAL_CUBLAS(call)                                                            \
    do {                                                                             \
        const cublasStatus_t rcal_st_ = (call);                                      \
        if (rcal_st_ != CUBLAS_STATUS_SUCCESS) ::rcal::cublas_fail(rcal_st_, #call, __FILE__, __LINE__); \
    } while (0)
