#include "reference.hpp"

#include "data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rcal {

double fp16_bits_to_double(std::uint16_t bits) {
    const int sign = (bits >> 15) & 1;
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    double v;
    if (exponent == 0) {
        v = std::ldexp(static_cast<double>(mantissa), -24);
    } else if (exponent == 31) {
        v = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else {
        v = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
    }
    return sign ? -v : v;
}

double round_to_fp16(double x) {
    if (!std::isfinite(x) || x == 0.0) return x;
    const double mag = std::fabs(x);
    int e = 0;
    std::frexp(mag, &e);                       // mag = f·2^e, f in [0.5, 1): the leading bit is 2^(e−1)
    const int quantum_exp = std::max(e - 11, -24);  // 11 significant bits; subnormal spacing 2^-24
    const double q = std::ldexp(std::nearbyint(std::ldexp(mag, -quantum_exp)), quantum_exp);  // ties to even
    const double r = q > 65504.0 ? std::numeric_limits<double>::infinity() : q;
    return x < 0 ? -r : r;
}

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return std::numeric_limits<double>::infinity();
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    if (den == 0) return num == 0 ? 0 : std::numeric_limits<double>::infinity();
    return std::sqrt(num / den);
}

float sweep_element(float x, int k, float a, float b) {
    for (int i = 0; i < k; ++i) x = std::fma(x, a, b);
    return x;
}

namespace {
// `chains` accumulators seeded from `value(seed, thread·chains + j)`, each stepped `steps` times by a = a·x + y in T.
template <class T>
T fma_chain(T (*value)(std::uint64_t, std::uint64_t), std::uint64_t seed, std::uint64_t thread, int chains,
            long long steps, T x, T y) {
    T sum = 0;
    std::vector<T> a(static_cast<std::size_t>(chains));
    for (int j = 0; j < chains; ++j)
        a[static_cast<std::size_t>(j)] = value(seed, thread * static_cast<std::uint64_t>(chains) + static_cast<std::uint64_t>(j));
    for (long long s = 0; s < steps; ++s)
        for (auto& v : a) v = std::fma(v, x, y);
    for (const T v : a) sum += v;
    return sum;
}
}  // namespace

float fma_chain_f32(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, float x, float y) {
    return fma_chain<float>(value_f32, seed, thread, chains, steps, x, y);
}

double fma_chain_f64(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, double x, double y) {
    return fma_chain<double>(value_f64, seed, thread, chains, steps, x, y);
}

float fma_chain_f16x2(std::uint64_t seed, std::uint64_t thread, int chains, long long steps, double x, double y) {
    // a·x + y with fp16 operands is exact in double (11+11 significant bits, small exponent range), so one
    // rounding of the double result to fp16 is the fused fp16 FMA.
    const std::size_t lanes = 2 * static_cast<std::size_t>(chains);
    std::vector<double> a(lanes);
    for (std::size_t l = 0; l < lanes; ++l)
        a[l] = fp16_bits_to_double(value_fp16_bits(seed, 2 * thread * static_cast<std::uint64_t>(chains) + l, false));
    for (long long s = 0; s < steps; ++s)
        for (auto& v : a) v = round_to_fp16(std::fma(v, x, y));
    float sum = 0;
    for (std::size_t j = 0; j < static_cast<std::size_t>(chains); ++j) {
        sum += static_cast<float>(a[2 * j]);
        sum += static_cast<float>(a[2 * j + 1]);
    }
    return sum;
}

std::vector<std::uint64_t> sample_indices(std::size_t n, std::size_t edge, std::size_t random, std::uint64_t seed) {
    std::vector<std::uint64_t> idx;
    if (n == 0) return idx;
    for (std::size_t i = 0; i < std::min(edge, n); ++i) idx.push_back(i);
    for (std::size_t i = n > edge ? n - edge : 0; i < n; ++i) idx.push_back(i);
    for (std::size_t i = 0; i < random; ++i) idx.push_back(hash64(seed, i) % n);
    return idx;
}

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k) {
    std::vector<double> c(static_cast<std::size_t>(m) * static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p) {
            const double av = a[static_cast<std::size_t>(i) * static_cast<std::size_t>(k) + static_cast<std::size_t>(p)];
            for (int j = 0; j < n; ++j)
                c[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)] +=
                    av * b[static_cast<std::size_t>(p) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)];
        }
    return c;
}

}  // namespace rcal
