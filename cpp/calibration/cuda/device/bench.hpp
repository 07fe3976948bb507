// The measurement groups of roofline-calibrate-cuda. Host-visible interface: no CUDA type appears here, so the
// driver (main.cpp) compiles as plain C++.
#pragma once

#include "../host/measure.hpp"

#include <cstddef>
#include <string>

namespace rcal {

struct Context {
    int device = 0;
    bool quick = false;
    int sm_count = 0;
    int cc_major = 0, cc_minor = 0;
    std::size_t l2_bytes = 0;
    std::size_t free_bytes = 0;          ///< device memory free at start
    int max_threads_per_sm = 0;
    std::size_t shared_per_sm_bytes = 0;
};

/// Reads the device's properties into a Context and the profile's device record. Exits on a CUDA error.
Context open_device(int device, bool quick, roofline::ProfileDevice& record);

/// Keeps every SM busy for about `seconds` so the clocks leave their idle state before anything is timed.
void warm_up(const Context& ctx, double seconds);

GroupResult run_launch(const Context& ctx);   ///< empty kernel: back-to-back and launch-to-completion
GroupResult run_dram(const Context& ctx);     ///< copy, triad, read-only reduction (16-byte accesses)
GroupResult run_l2(const Context& ctx);       ///< read-only reduction on working sets inside L2
GroupResult run_fma(const Context& ctx);      ///< fp32, fp16x2, fp64 FMA chains
GroupResult run_sweep(const Context& ctx);    ///< arithmetic-intensity sweep and its roofline fit
GroupResult run_mma(const Context& ctx);      ///< mma.sync m16n8k16 bf16 / fp16, fp32 accumulate
GroupResult run_cublas(const Context& ctx);   ///< cublasGemmEx bf16 / fp16, large square
GroupResult run_wgmma(const Context& ctx);    ///< wgmma m64n256k16 bf16 / fp16 (sm_90a only)

}  // namespace rcal
