#include "roofline/ops/pointwise.hpp"

#include "roofline/errors.hpp"

namespace roofline::ops {

OpCost elementwise(double n, double flops_per_element, double inputs, double outputs, const Format& fmt) {
    check_count("elementwise n", n);
    check_size("elementwise flops_per_element", flops_per_element);
    check_count("elementwise inputs", inputs);
    check_count("elementwise outputs", outputs);
    OpCost op;
    op.name = "elementwise";
    op.add_flops(Unit::vector, fmt.compute, n * flops_per_element);
    op.add_dram(n * inputs * fmt.bytes_per_element(), n * outputs * fmt.bytes_per_element());
    op.launches = 1;
    return op;
}

double softmax_flops(double rows, double cols) { return 5.0 * rows * cols; }

OpCost softmax(double rows, double cols, const Format& fmt) {
    check_count("softmax rows", rows);
    check_count("softmax cols", cols);
    OpCost op;
    op.name = "softmax";
    op.add_flops(Unit::vector, fmt.compute, softmax_flops(rows, cols));
    op.add_dram(rows * cols * fmt.bytes_per_element(), rows * cols * fmt.bytes_per_element());
    op.launches = 1;
    return op;
}

OpCost layernorm(double rows, double cols, const Format& fmt, bool affine) {
    check_count("layernorm rows", rows);
    check_count("layernorm cols", cols);
    const double e = fmt.bytes_per_element();
    OpCost op;
    op.name = "layernorm";
    op.add_flops(Unit::vector, fmt.compute, (affine ? 7.0 : 5.0) * rows * cols);
    op.add_dram(rows * cols * e + (affine ? 2.0 * cols * e : 0.0), rows * cols * e);
    op.launches = 1;
    return op;
}

OpCost rmsnorm(double rows, double cols, const Format& fmt, bool affine) {
    check_count("rmsnorm rows", rows);
    check_count("rmsnorm cols", cols);
    const double e = fmt.bytes_per_element();
    OpCost op;
    op.name = "rmsnorm";
    op.add_flops(Unit::vector, fmt.compute, (affine ? 4.0 : 3.0) * rows * cols);
    op.add_dram(rows * cols * e + (affine ? cols * e : 0.0), rows * cols * e);
    op.launches = 1;
    return op;
}

}  // namespace roofline::ops
