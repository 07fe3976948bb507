#include "roofline/ops/linear.hpp"

#include "roofline/errors.hpp"

#include <cmath>

namespace roofline::ops {

OpCost gemm(double m, double n, double k, const Format& a, const Format& b, const Format& c, const GemmOptions& options) {
    check_count("gemm m", m);
    check_count("gemm n", n);
    check_count("gemm k", k);
    check_count("gemm batch", options.batch);
    check_size("gemm tile_bytes", options.tile_bytes);
    const double ea = a.bytes_per_element(), eb = b.bytes_per_element(), ec = c.bytes_per_element();

    double a_reads = 1, b_reads = 1;
    if (options.tile_bytes > 0) {
        const double t = std::floor(std::sqrt(options.tile_bytes / (ea + eb)));
        if (t < 1)
            throw InvalidArgument("gemm tile_bytes " + std::to_string(options.tile_bytes) +
                                  " cannot hold one element of A and one of B");
        a_reads = std::max(1.0, std::ceil(n / t));
        b_reads = std::max(1.0, std::ceil(m / t));
    }

    OpCost op;
    op.name = "gemm";
    op.add_flops(options.unit, a.compute, options.batch * 2.0 * m * n * k);
    op.add_flops(Unit::vector, b.compute, options.batch * b.dequant_flops_per_element * k * n);
    op.add_dram(options.batch * (m * k * ea * a_reads + k * n * eb * b_reads), options.batch * m * n * ec);
    op.launches = 1;
    return op;
}

OpCost gemv(double n, double k, const Format& x, const Format& w, const Format& y) {
    OpCost op = gemm(1, n, k, x, w, y, GemmOptions{Unit::vector, 0, 1});
    op.name = "gemv";
    return op;
}

}  // namespace roofline::ops
