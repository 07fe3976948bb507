// Internal helpers of the CPU calibration kernels: aligned buffers, random fill, timing.
#pragma once

#include "roofline/calibrate_cpu.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace roofline::cpu::detail {

/// Page-aligned memory (2 MiB aligned and transparent huge pages requested for large buffers). Not touched here:
/// the owning thread touches it first, so its pages land near that thread.
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(std::size_t bytes);
    ~Buffer();
    Buffer(Buffer&& o) noexcept;
    Buffer& operator=(Buffer&& o) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    template <class T>
    T* as() const { return static_cast<T*>(p_); }
    std::size_t bytes() const { return bytes_; }

private:
    void* p_ = nullptr;
    std::size_t bytes_ = 0;
};

/// Uniform in [1, 2): random, never zero, no overflow under the kernels' arithmetic.
struct Rng {
    std::uint64_t s;
    explicit Rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform12() { return 1.0 + static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Times `repetitions` parallel regions of `body` after `warmup` untimed ones: seconds per region.
template <class F>
std::vector<double> time_regions(ThreadTeam& team, int repetitions, int warmup, const F& body) {
    const std::function<void(int)> fn = body;
    for (int i = 0; i < warmup; ++i) team.run(fn);
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(repetitions));
    for (int i = 0; i < repetitions; ++i) {
        const double t0 = now_seconds();
        team.run(fn);
        out.push_back(now_seconds() - t0);
    }
    return out;
}

std::string fmt_bytes(double bytes);

}  // namespace roofline::cpu::detail
