// Eigen GEMM and GEMV, split across the team: each thread runs one Eigen product on its own block (columns of B and
// C for GEMM, rows of W and y for GEMV). Eigen is built without OpenMP here, so each product is single-threaded and
// the team is the only parallelism.
#include <cstdio>
#include "detail.hpp"
#include "roofline/errors.hpp"

// This file instantiates Eigen's templates with the host's ISA (-march=native: AVX-512 kernels, 64-byte alignment);
// the core instantiates some of the same templates (MatrixXd, products inside QR) with the default ISA. Identical
// mangled names would let the linker keep either copy (an SSE2 GEMM measured here, or mismatched aligned
// malloc/free). Renaming Eigen's namespace for this file keeps the two sets of instantiations apart.
#define Eigen roofline_calibration_eigen
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace roofline::cpu {

namespace {
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

std::pair<Eigen::Index, Eigen::Index> block_of(Eigen::Index total, int t, int nt) {
    const Eigen::Index per = (total + nt - 1) / nt;
    const Eigen::Index begin = std::min<Eigen::Index>(total, per * t);
    return {begin, std::min<Eigen::Index>(total, begin + per) - begin};
}

template <class T>
void fill(T* p, Eigen::Index n, std::uint64_t seed) {
    detail::Rng rng(seed);
    for (Eigen::Index i = 0; i < n; ++i) p[i] = static_cast<T>(rng.uniform12() - 1.5);  // [-0.5, 0.5), never 0 exactly
    for (Eigen::Index i = 0; i < n; ++i)
        if (p[i] == T(0)) p[i] = T(0.25);
}

template <class T>
KernelRun gemm_t(ThreadTeam& team, const char* name, Eigen::Index m, Eigen::Index n, Eigen::Index k, int repetitions,
                 int warmup) {
    const int nt = team.size();
    Mat<T> A(m, k), B(k, n), C(m, n);
    // First touch of B and C by the thread that owns those columns.
    team.run([&](int t) {
        const auto [c0, nc] = block_of(n, t, nt);
        if (nc > 0) {
            fill(B.data() + c0 * k, nc * k, 1000 + static_cast<std::uint64_t>(t));
            C.middleCols(c0, nc).setZero();
        }
        if (t == 0) fill(A.data(), m * k, 999);
    });
    const auto body = [&](int t) {
        const auto [c0, nc] = block_of(n, t, nt);
        if (nc > 0) C.middleCols(c0, nc).noalias() = A * B.middleCols(c0, nc);
    };
    KernelRun r;
    r.kernel = name;
    r.seconds = stats_of(detail::time_regions(team, repetitions, warmup, body));
    r.flops_per_run = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    r.bytes_per_run = static_cast<double>(sizeof(T)) * static_cast<double>(m * k + k * n + m * n);
    // Verify sampled entries against a long double dot product; error bound ~ eps * k * sum |a||b|.
    bool ok = true;
    const Eigen::Index samples = 64;
    for (Eigen::Index s = 0; s < samples; ++s) {
        const Eigen::Index i = (s * 7919) % m, j = (s * 104729) % n;
        long double ref = 0, mag = 0;
        for (Eigen::Index p = 0; p < k; ++p) {
            ref += static_cast<long double>(A(i, p)) * B(p, j);
            mag += std::abs(static_cast<long double>(A(i, p)) * B(p, j));
        }
        const double tol = (sizeof(T) == 4 ? 1e-5 : 1e-13) * std::sqrt(static_cast<double>(k)) * static_cast<double>(mag) + 1e-30;
        if (!(std::abs(static_cast<double>(C(i, j)) - static_cast<double>(ref)) <= tol)) ok = false;
    }
    r.verified = ok;
    r.detail = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + ", " +
               std::to_string(nt) + " column blocks, one Eigen GEMM per thread";
    return r;
}

template <class T>
KernelRun gemv_t(ThreadTeam& team, const char* name, Eigen::Index n, Eigen::Index k, int repetitions, int warmup) {
    const int nt = team.size();
    RowMat<T> W(n, k);
    Vec<T> x(k), y(n);
    fill(x.data(), k, 77);
    team.run([&](int t) {
        const auto [r0, nr] = block_of(n, t, nt);
        if (nr > 0) {
            fill(W.data() + r0 * k, nr * k, 2000 + static_cast<std::uint64_t>(t));
            y.segment(r0, nr).setZero();
        }
    });
    const auto body = [&](int t) {
        const auto [r0, nr] = block_of(n, t, nt);
        if (nr > 0) y.segment(r0, nr).noalias() = W.middleRows(r0, nr) * x;
    };
    KernelRun r;
    r.kernel = name;
    r.seconds = stats_of(detail::time_regions(team, repetitions, warmup, body));
    r.flops_per_run = 2.0 * static_cast<double>(n) * static_cast<double>(k);
    r.bytes_per_run = static_cast<double>(sizeof(T)) * static_cast<double>(n * k + k + n);
    bool ok = true;
    for (Eigen::Index s = 0; s < 64; ++s) {
        const Eigen::Index i = (s * 7919) % n;
        long double ref = 0, mag = 0;
        for (Eigen::Index p = 0; p < k; ++p) {
            ref += static_cast<long double>(W(i, p)) * x(p);
            mag += std::abs(static_cast<long double>(W(i, p)) * x(p));
        }
        const double tol = (sizeof(T) == 4 ? 1e-5 : 1e-13) * std::sqrt(static_cast<double>(k)) * static_cast<double>(mag) + 1e-30;
        if (!(std::abs(static_cast<double>(y(i)) - static_cast<double>(ref)) <= tol)) ok = false;
    }
    r.verified = ok;
    r.detail = "n=" + std::to_string(n) + " k=" + std::to_string(k) + ", " + std::to_string(nt) +
               " row blocks, one Eigen GEMV per thread";
    return r;
}

Eigen::Index check_dim(const char* what, long long v) {
    if (v < 1) throw InvalidArgument(std::string(what) + " must be >= 1, got " + std::to_string(v));
    return static_cast<Eigen::Index>(v);
}
void check_runs(int repetitions, int warmup) {
    if (repetitions < 1 || repetitions > kMaxRepetitions)
        throw InvalidArgument("repetitions must be within [1, " + std::to_string(kMaxRepetitions) + "], got " +
                              std::to_string(repetitions));
    if (warmup < 0 || warmup > kMaxRepetitions)
        throw InvalidArgument("warmup must be within [0, " + std::to_string(kMaxRepetitions) + "], got " +
                              std::to_string(warmup));
}
void check_operands(const char* op, double elements, DType dtype) {
    const double bytes = elements * (dtype == DType::fp64 ? 8.0 : 4.0);
    if (bytes > max_kernel_operand_bytes()) {
        char msg[200];
        std::snprintf(msg, sizeof msg, "%s: the operands (m, n, k) would take %.3g GB; at most %.3g GB (half this host's memory) are allowed",
                      op, bytes / 1e9, max_kernel_operand_bytes() / 1e9);
        throw InvalidArgument(msg);
    }
}
}  // namespace

double max_kernel_operand_bytes() {
    const double mem = host_info().memory_bytes;
    return mem > 0 ? mem / 2 : 64.0 * (1ull << 30);
}

KernelRun run_gemm(ThreadTeam& team, DType dtype, long long m, long long n, long long k, int repetitions, int warmup) {
    const auto M = check_dim("run_gemm: m", m), N = check_dim("run_gemm: n", n), K = check_dim("run_gemm: k", k);
    check_runs(repetitions, warmup);
    check_operands("run_gemm", double(M) * double(K) + double(K) * double(N) + double(M) * double(N), dtype);
    if (dtype == DType::fp32) return gemm_t<float>(team, "eigen_gemm_fp32", M, N, K, repetitions, warmup);
    if (dtype == DType::fp64) return gemm_t<double>(team, "eigen_gemm_fp64", M, N, K, repetitions, warmup);
    throw InvalidArgument("run_gemm: dtype must be fp32 or fp64, got '" + std::string(dtype_name(dtype)) + "'");
}

KernelRun run_gemv(ThreadTeam& team, DType dtype, long long n, long long k, int repetitions, int warmup) {
    const auto N = check_dim("run_gemv: n", n), K = check_dim("run_gemv: k", k);
    check_runs(repetitions, warmup);
    check_operands("run_gemv", double(N) * double(K) + double(N) + double(K), dtype);
    if (dtype == DType::fp32) return gemv_t<float>(team, "eigen_gemv_fp32", N, K, repetitions, warmup);
    if (dtype == DType::fp64) return gemv_t<double>(team, "eigen_gemv_fp64", N, K, repetitions, warmup);
    throw InvalidArgument("run_gemv: dtype must be fp32 or fp64, got '" + std::string(dtype_name(dtype)) + "'");
}

}  // namespace roofline::cpu
