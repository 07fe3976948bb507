// STREAM kernels (copy, scale, add, triad; fp64) and a read-only reduction, per thread on its own arrays; and the
// arithmetic-intensity sweep (fp32, k FMAs per element). Compiled with -O3 and the host's ISA
// (-march=native where the compiler has it) and -fno-tree-loop-distribute-patterns so copy stays a loop.
#include "detail.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace roofline::cpu {

using detail::Buffer;

Stream parse_stream(std::string_view name) {
    if (name == "copy") return Stream::copy;
    if (name == "scale") return Stream::scale;
    if (name == "add") return Stream::add;
    if (name == "triad") return Stream::triad;
    if (name == "read") return Stream::read;
    throw InvalidArgument("unknown STREAM kernel '" + std::string(name) + "'; valid: copy, scale, add, triad, read");
}

std::vector<KernelRun> run_stream_bytes(ThreadTeam& team, const std::vector<Stream>& kernels, double array_bytes,
                                        int repetitions, int warmup) {
    if (!(array_bytes >= 64)) throw InvalidArgument("array_bytes must be >= 64, got " + std::to_string(array_bytes));
    const auto per_thread = static_cast<std::size_t>(array_bytes / 8.0 / team.size());  // fp64 elements
    return run_stream(team, kernels, per_thread, repetitions, warmup, 1);
}

const char* stream_name(Stream s) {
    switch (s) {
        case Stream::copy: return "stream_copy";
        case Stream::scale: return "stream_scale";
        case Stream::add: return "stream_add";
        case Stream::triad: return "stream_triad";
        case Stream::read: return "read_reduce";
    }
    return "stream";
}

namespace {
constexpr double kScalar = 0.75;
constexpr std::size_t kReduceLanes = 64;  // independent partial sums: 8 AVX-512 registers of doubles

void copy_k(double* __restrict c, const double* __restrict a, std::size_t n) {
#pragma GCC unroll 4
    for (std::size_t i = 0; i < n; ++i) c[i] = a[i];
}
void scale_k(double* __restrict b, const double* __restrict c, std::size_t n) {
#pragma GCC unroll 4
    for (std::size_t i = 0; i < n; ++i) b[i] = kScalar * c[i];
}
void add_k(double* __restrict c, const double* __restrict a, const double* __restrict b, std::size_t n) {
#pragma GCC unroll 4
    for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
void triad_k(double* __restrict a, const double* __restrict b, const double* __restrict c, std::size_t n) {
#pragma GCC unroll 4
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + kScalar * c[i];
}
// `passes` sums of a[0..n), n a multiple of kReduceLanes; the partial sums are folded once, after all passes, so a
// cache-resident array is not dominated by the fold.
double reduce_k(const double* __restrict a, std::size_t n, int passes) {
    double acc[kReduceLanes] = {};
    for (int p = 0; p < passes; ++p)
        for (std::size_t i = 0; i < n; i += kReduceLanes)
            for (std::size_t j = 0; j < kReduceLanes; ++j) acc[j] += a[i + j];
    double s = 0;
    for (double v : acc) s += v;
    return s;
}

double bytes_per_element(Stream s) {
    switch (s) {
        case Stream::copy:
        case Stream::scale: return 16;
        case Stream::add:
        case Stream::triad: return 24;
        case Stream::read: return 8;
    }
    return 0;
}
}  // namespace

std::vector<KernelRun> run_stream(ThreadTeam& team, const std::vector<Stream>& kernels, std::size_t elements,
                                  int repetitions, int warmup, int inner) {
    const int nt = team.size();
    elements = std::max<std::size_t>(kReduceLanes, elements / kReduceLanes * kReduceLanes);
    inner = std::max(1, inner);
    std::vector<Buffer> a(static_cast<std::size_t>(nt)), b(static_cast<std::size_t>(nt)), c(static_cast<std::size_t>(nt));
    std::vector<double> sums(static_cast<std::size_t>(nt) * 8, 0.0);
    // Allocate and first-touch with random non-zero data on the owning thread.
    team.run([&](int t) {
        const auto ti = static_cast<std::size_t>(t);
        a[ti] = Buffer(elements * sizeof(double));
        b[ti] = Buffer(elements * sizeof(double));
        c[ti] = Buffer(elements * sizeof(double));
        detail::Rng rng(static_cast<std::uint64_t>(t) + 1);
        double* pa = a[ti].as<double>();
        double* pb = b[ti].as<double>();
        double* pc = c[ti].as<double>();
        for (std::size_t i = 0; i < elements; ++i) {
            pa[i] = rng.uniform12();
            pb[i] = rng.uniform12();
            pc[i] = rng.uniform12();
        }
    });
    std::vector<KernelRun> out;
    for (Stream s : kernels) {
        const auto body = [&](int t) {
            const auto ti = static_cast<std::size_t>(t);
            double* pa = a[ti].as<double>();
            double* pb = b[ti].as<double>();
            double* pc = c[ti].as<double>();
            if (s == Stream::read) {
                sums[ti * 8] = reduce_k(pa, elements, inner);
                return;
            }
            for (int r = 0; r < inner; ++r) {
                switch (s) {
                    case Stream::copy: copy_k(pc, pa, elements); break;
                    case Stream::scale: scale_k(pb, pc, elements); break;
                    case Stream::add: add_k(pc, pa, pb, elements); break;
                    case Stream::triad: triad_k(pa, pb, pc, elements); break;
                    case Stream::read: break;
                }
            }
        };
        KernelRun k;
        k.kernel = stream_name(s);
        k.seconds = stats_of(detail::time_regions(team, repetitions, warmup, body));
        k.bytes_per_run = bytes_per_element(s) * static_cast<double>(elements) * nt * inner;
        // Verify every element against the kernel's definition (each kernel's output depends only on inputs it
        // does not write, so repeated runs leave a checkable result).
        std::vector<char> ok(static_cast<std::size_t>(nt), 1);
        team.run([&](int t) {
            const auto ti = static_cast<std::size_t>(t);
            const double* pa = a[ti].as<double>();
            const double* pb = b[ti].as<double>();
            const double* pc = c[ti].as<double>();
            bool good = true;
            auto close = [](double x, double y) { return std::abs(x - y) <= 1e-12 * std::abs(y); };
            switch (s) {
                case Stream::copy:
                    for (std::size_t i = 0; i < elements && good; ++i) good = pc[i] == pa[i] && pa[i] != 0;
                    break;
                case Stream::scale:
                    for (std::size_t i = 0; i < elements && good; ++i) good = close(pb[i], kScalar * pc[i]);
                    break;
                case Stream::add:
                    for (std::size_t i = 0; i < elements && good; ++i) good = close(pc[i], pa[i] + pb[i]);
                    break;
                case Stream::triad:
                    for (std::size_t i = 0; i < elements && good; ++i) good = close(pa[i], pb[i] + kScalar * pc[i]);
                    break;
                case Stream::read: {
                    long double ref = 0;
                    for (std::size_t i = 0; i < elements; ++i) ref += pa[i];
                    ref *= inner;
                    good = std::abs(sums[ti * 8] - static_cast<double>(ref)) <= 1e-9 * static_cast<double>(ref);
                    break;
                }
            }
            ok[ti] = good;
        });
        k.verified = std::all_of(ok.begin(), ok.end(), [](char v) { return v != 0; });
        std::ostringstream d;
        d << elements << " fp64 elements per array per thread, " << inner << " pass(es) per run";
        k.detail = d.str();
        out.push_back(k);
    }
    return out;
}

namespace {
constexpr std::size_t kSweepBlock = 128;  // 8 AVX-512 registers of floats: independent FMA chains
constexpr float kSweepMul = 0.999f, kSweepAdd = 0.001f;

// y[i] = x[i] after k steps of x = x * kSweepMul + kSweepAdd; n is a multiple of kSweepBlock.
void sweep_k(float* __restrict y, const float* __restrict x, std::size_t n, int k) {
    for (std::size_t i = 0; i < n; i += kSweepBlock) {
        float v[kSweepBlock];
        for (std::size_t j = 0; j < kSweepBlock; ++j) v[j] = x[i + j];
        for (int r = 0; r < k; ++r)
            for (std::size_t j = 0; j < kSweepBlock; ++j) v[j] = std::fma(v[j], kSweepMul, kSweepAdd);
        for (std::size_t j = 0; j < kSweepBlock; ++j) y[i + j] = v[j];
    }
}
}  // namespace

std::vector<KernelRun> run_sweep(ThreadTeam& team, const std::vector<int>& ks, std::size_t elements, int repetitions,
                                 int warmup) {
    const int nt = team.size();
    elements = std::max<std::size_t>(kSweepBlock, elements / kSweepBlock * kSweepBlock);
    std::vector<Buffer> x(static_cast<std::size_t>(nt)), y(static_cast<std::size_t>(nt));
    team.run([&](int t) {
        const auto ti = static_cast<std::size_t>(t);
        x[ti] = Buffer(elements * sizeof(float));
        y[ti] = Buffer(elements * sizeof(float));
        detail::Rng rng(static_cast<std::uint64_t>(t) + 101);
        float* px = x[ti].as<float>();
        float* py = y[ti].as<float>();
        for (std::size_t i = 0; i < elements; ++i) {
            px[i] = static_cast<float>(rng.uniform12());
            py[i] = 0.5f;
        }
    });
    std::vector<KernelRun> out;
    for (int k : ks) {
        if (k < 0) throw InvalidArgument("run_sweep: k must be >= 0, got " + std::to_string(k));
        KernelRun run;
        run.kernel = "sweep_fma_fp32";
        run.seconds = stats_of(detail::time_regions(team, repetitions, warmup, [&](int t) {
            const auto ti = static_cast<std::size_t>(t);
            sweep_k(y[ti].as<float>(), x[ti].as<float>(), elements, k);
        }));
        run.bytes_per_run = 8.0 * static_cast<double>(elements) * nt;
        run.flops_per_run = 2.0 * k * static_cast<double>(elements) * nt;
        // Verify a strided sample of elements against a scalar double-precision reference.
        std::vector<char> ok(static_cast<std::size_t>(nt), 1);
        team.run([&](int t) {
            const auto ti = static_cast<std::size_t>(t);
            const float* px = x[ti].as<float>();
            const float* py = y[ti].as<float>();
            const std::size_t step = std::max<std::size_t>(1, elements / 257);
            for (std::size_t i = 0; i < elements; i += step) {
                double v = px[i];
                for (int r = 0; r < k; ++r) v = v * static_cast<double>(kSweepMul) + static_cast<double>(kSweepAdd);
                if (!(std::abs(static_cast<double>(py[i]) - v) <= 1e-3 * std::abs(v))) ok[ti] = 0;
            }
        });
        run.verified = std::all_of(ok.begin(), ok.end(), [](char v) { return v != 0; });
        run.detail = std::to_string(elements) + " fp32 elements per thread, k = " + std::to_string(k);
        out.push_back(run);
    }
    return out;
}

KernelRun run_empty_region(ThreadTeam& team, int batches, int per_batch) {
    const std::function<void(int)> empty = [](int) {};
    for (int i = 0; i < 100; ++i) team.run(empty);
    std::vector<double> per_region;
    for (int b = 0; b < batches; ++b) {
        const double t0 = detail::now_seconds();
        for (int i = 0; i < per_batch; ++i) team.run(empty);
        per_region.push_back((detail::now_seconds() - t0) / per_batch);
    }
    KernelRun k;
    k.kernel = "empty_parallel_region";
    k.seconds = stats_of(per_region);
    k.verified = true;  // nothing to compute; every thread ran (run() returns only when all have)
    k.detail = std::to_string(per_batch) + " regions per batch, " + std::to_string(team.size()) + " threads";
    return k;
}

}  // namespace roofline::cpu
