// Element-by-element operators: elementwise maps, softmax, layer norm, RMS norm. All run on vector units.
#pragma once

#include "roofline/format.hpp"
#include "roofline/op.hpp"

namespace roofline::ops {

/// n elements, each reading `inputs` operands and writing `outputs` results of format `fmt`, with
/// `flops_per_element` FLOPs each. FLOPs: n·flops_per_element. DRAM: n·inputs read, n·outputs written.
OpCost elementwise(double n, double flops_per_element, double inputs, double outputs, const Format& fmt);

/// FLOPs of a row softmax over rows×cols, counted once here and reused by attention:
/// 5 per element (max compare, subtract, exp, sum, divide; the 1/sqrt(d) scale is fused into the subtract).
double softmax_flops(double rows, double cols);
/// Fused row softmax: FLOPs softmax_flops; DRAM: the input read once, the output written once.
OpCost softmax(double rows, double cols, const Format& fmt);

/// LayerNorm over rows of length cols. FLOPs per element: 5 (mean add; subtract, square, add for the
/// variance; multiply by the reciprocal std) + 2 with affine (scale, shift). DRAM: x read, y written,
/// gamma and beta (cols each, affine only) read once.
OpCost layernorm(double rows, double cols, const Format& fmt, bool affine = true);

/// RMSNorm over rows of length cols. FLOPs per element: 3 (square, add, multiply by the reciprocal rms) + 1
/// with a weight (scale). DRAM: x read, y written, the weight (cols) read once.
OpCost rmsnorm(double rows, double cols, const Format& fmt, bool affine = true);

}  // namespace roofline::ops
