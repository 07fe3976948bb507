// The arithmetic-intensity sweep's grid, shared by the kernels (one instantiation per k) and the host.
#pragma once

#include <cstddef>

namespace rcal {

/// FMAs per element: 0 and a log grid of two points per octave up to 1024. Each element is read (4 bytes),
/// updated k times (2k FLOPs) and written (4 bytes): arithmetic intensity k/4 FLOP per byte, 0 .. 256.
inline constexpr int kSweepK[] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
inline constexpr std::size_t kSweepPoints = sizeof(kSweepK) / sizeof(kSweepK[0]);
/// Bytes and FLOPs per element of the sweep kernel (fp32).
inline constexpr double kSweepBytesPerElement = 8.0;
inline constexpr double sweep_flops_per_element(int k) { return 2.0 * k; }

}  // namespace rcal
