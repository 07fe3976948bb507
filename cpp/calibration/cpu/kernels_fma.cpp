// Peak FMA throughput: per thread, kChains independent accumulators updated by acc = acc * m + a. The inner loop over
// the accumulators is what the compiler vectorises (-O3 and the host's ISA): kChains / lanes vector registers, enough
// independent FMA chains to cover the FMA latency on every FMA port (AVX-512: 2 ports x 4 cycles = 8 registers).
#include "detail.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>

namespace roofline::cpu {

namespace {
template <class T>
constexpr std::size_t chains() {
    // 16 vector registers' worth at the widest SIMD the kernels were compiled for.
#if defined(__AVX512F__)
    return 16 * 64 / sizeof(T);
#elif defined(__AVX__)
    return 12 * 32 / sizeof(T);
#else
    return 12 * 16 / sizeof(T);
#endif
}

template <class T>
__attribute__((noinline)) void fma_k(T* __restrict out, T m, T a, long long iterations) {
    constexpr std::size_t n = chains<T>();
    T acc[n];
    for (std::size_t j = 0; j < n; ++j) acc[j] = out[j];
    for (long long r = 0; r < iterations; ++r)
        for (std::size_t j = 0; j < n; ++j) acc[j] = std::fma(acc[j], m, a);
    for (std::size_t j = 0; j < n; ++j) out[j] = acc[j];
}

template <class T>
KernelRun run_fma_t(ThreadTeam& team, const char* name, long long iterations, int repetitions, int warmup) {
    constexpr std::size_t n = chains<T>();
    const int nt = team.size();
    const T m = static_cast<T>(0.9999), a = static_cast<T>(0.0001);
    std::vector<std::vector<T>> state(static_cast<std::size_t>(nt), std::vector<T>(n));
    std::vector<std::vector<T>> start(static_cast<std::size_t>(nt));
    for (int t = 0; t < nt; ++t) {
        detail::Rng rng(static_cast<std::uint64_t>(t) + 7);
        for (auto& v : state[static_cast<std::size_t>(t)]) v = static_cast<T>(rng.uniform12());
        start[static_cast<std::size_t>(t)] = state[static_cast<std::size_t>(t)];
    }
    const auto body = [&](int t) { fma_k<T>(state[static_cast<std::size_t>(t)].data(), m, a, iterations); };
    KernelRun k;
    k.kernel = name;
    k.seconds = stats_of(detail::time_regions(team, repetitions, warmup, body));
    k.flops_per_run = 2.0 * static_cast<double>(n) * static_cast<double>(iterations) * nt;
    // Verify: after R total steps x_R = m^R (x_0 - f) + f with f = a / (1 - m), the fixed point.
    const double total = static_cast<double>(iterations) * (repetitions + warmup);
    const double md = static_cast<double>(m), f = static_cast<double>(a) / (1.0 - md);
    const double tol = sizeof(T) == 4 ? 2e-3 : 1e-9;
    bool ok = true;
    for (int t = 0; t < nt; ++t)
        for (std::size_t j = 0; j < n; ++j) {
            const double x0 = static_cast<double>(start[static_cast<std::size_t>(t)][j]);
            const double want = std::pow(md, total) * (x0 - f) + f;
            const double got = static_cast<double>(state[static_cast<std::size_t>(t)][j]);
            if (!(std::abs(got - want) <= tol * std::abs(want))) ok = false;
        }
    k.verified = ok;
    k.detail = std::to_string(n) + " independent " + (sizeof(T) == 4 ? "fp32" : "fp64") + " chains per thread, " +
               std::to_string(iterations) + " FMAs each per run";
    return k;
}
}  // namespace

double measure_clock_hz(int repetitions) {
#if defined(__x86_64__)
    // A chain of dependent 64-bit register multiplies: 3 cycles each on Intel since Nehalem and AMD since Zen.
    // (Not adds with an immediate: Golden Cove-class cores fold those at rename, several per cycle.)
    constexpr long long kMuls = 6000000;  // ~9 ms at 2 GHz
    std::vector<double> hz;
    for (int r = 0; r < std::max(1, repetitions) + 1; ++r) {
        unsigned long long x = 12345, one = 1;
        const double t0 = detail::now_seconds();
        for (long long i = 0; i < kMuls / 10; ++i)
            asm volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                         "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
                         : "+r"(x)
                         : "r"(one));
        const double dt = detail::now_seconds() - t0;
        if (r > 0 && x == 12345) hz.push_back(3.0 * static_cast<double>(kMuls) / dt);
    }
    return hz.empty() ? 0.0 : stats_of(hz).median;
#else
    (void)repetitions;
    return 0.0;
#endif
}

KernelRun run_fma(ThreadTeam& team, DType dtype, long long iterations, int repetitions, int warmup) {
    if (dtype == DType::fp32) return run_fma_t<float>(team, "fma_fp32", iterations, repetitions, warmup);
    if (dtype == DType::fp64) return run_fma_t<double>(team, "fma_fp64", iterations, repetitions, warmup);
    throw InvalidArgument("run_fma: dtype must be fp32 or fp64, got '" + std::string(dtype_name(dtype)) + "'");
}

}  // namespace roofline::cpu
