#include <doctest/doctest.h>

#include "roofline/device.hpp"
#include "roofline/errors.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "roofline/roofline.hpp"

#include <cmath>

using namespace roofline;

namespace {
const DeviceDB& db() {
    static const DeviceDB d = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    return d;
}
}  // namespace

TEST_CASE("seed: the 4096^3 GEMM is compute-bound on the A100") {
    const Timing t = evaluate(ops::gemm(4096, 4096, 4096, DType::fp16), db().get("a100"), Ceilings::ideal);
    CHECK(t.bound == Bound::compute);
    CHECK(t.seconds == doctest::Approx(2.0 * 4096 * 4096 * 4096 / 312e12));
    CHECK(t.attainable_flops == doctest::Approx(312e12));
    CHECK(bound_name(t.bound) == "compute");
}

TEST_CASE("seed: elementwise (1 FLOP per element) is memory-bound at ~1/300 of the A100's compute") {
    const Device& a100 = db().get("a100");
    const OpCost op = ops::elementwise(1 << 28, 1, 1, 1, format_of(DType::fp16));
    const Timing t = evaluate(op, a100, Ceilings::ideal);
    CHECK(t.bound == Bound::dram);
    CHECK(bound_name(t.bound) == "memory:dram");
    // AI = 1 FLOP / 4 bytes; attainable = 0.25 * 2039e9; fraction of 312e12 ~ 1/612 (per element read+write);
    // per element *moved* (the seed's view) it is 1 FLOP per 2-byte element: 2039e9/2 / 312e12 ~ 1/306.
    const double per_element_fraction = (a100.bandwidth(Level::dram) / 2.0) / a100.peak_flops(DType::fp16);
    CHECK(1.0 / per_element_fraction == doctest::Approx(300).epsilon(0.05));
    CHECK(t.attainable_flops == doctest::Approx(0.25 * 2039e9));
}

TEST_CASE("derated ceilings are slower and add launch overhead") {
    const Device& a100 = db().get("a100");
    const OpCost op = ops::gemm(4096, 4096, 4096, DType::fp16);
    const Timing ideal = evaluate(op, a100, Ceilings::ideal), der = evaluate(op, a100, Ceilings::derated);
    CHECK(der.seconds > ideal.seconds);
    CHECK(der.overhead_seconds == doctest::Approx(a100.efficiency.launch_overhead_s));
    CHECK(ideal.overhead_seconds == 0);
}

TEST_CASE("tiny ops are overhead-bound when derated") {
    const Timing t = evaluate(ops::elementwise(16, 1, 1, 1, format_of(DType::fp16)), db().get("a100"));
    CHECK(t.bound == Bound::overhead);
    CHECK(bound_name(t.bound) == "overhead");
}

TEST_CASE("an empty op evaluates cleanly") {
    OpCost empty;
    const Timing t = evaluate(empty, db().get("a100"));
    CHECK(t.seconds == 0);
    CHECK(t.bound == Bound::none);
    CHECK(t.attainable_flops == 0);
    CHECK(t.achieved_flops == 0);
    OpCost bytes_only;
    bytes_only.add_dram(1e6, 0);
    const Timing tb = evaluate(bytes_only, db().get("a100"), Ceilings::ideal);
    CHECK(tb.bound == Bound::dram);
    CHECK(std::isfinite(tb.seconds));
    OpCost flops_only;
    flops_only.add_flops(Unit::matrix, DType::fp16, 1e12);
    const Timing tf = evaluate(flops_only, db().get("a100"), Ceilings::ideal);
    CHECK(tf.bound == Bound::compute);
    CHECK(tf.attainable_flops == doctest::Approx(312e12));
}

TEST_CASE("time is at least each ceiling's time") {
    const Device& a100 = db().get("a100");
    for (double n : {1.0, 64.0, 512.0, 4096.0}) {
        const OpCost op = ops::gemm(n, 4096, 4096, DType::bf16);
        const Timing t = evaluate(op, a100);
        CHECK(t.seconds >= t.compute_seconds);
        for (double m : t.memory_seconds) CHECK(t.seconds >= m);
    }
}

TEST_CASE("seed: H100 ridge ~295 FLOP/byte; A100 -> H100 compute 3.2x, bandwidth 1.64x") {
    const Device& a100 = db().get("a100");
    if (!db().contains("h100-sxm")) return;  // written by the database's NVIDIA batch
    const Device& h100 = db().get("h100-sxm");
    CHECK(h100.ridge_point(DType::bf16) == doctest::Approx(295).epsilon(0.01));
    CHECK(h100.ridge_point(DType::bf16) * 2 == doctest::Approx(590).epsilon(0.01));
    CHECK(h100.peak_flops(DType::bf16) / a100.peak_flops(DType::bf16) == doctest::Approx(3.17).epsilon(0.01));
    CHECK(h100.bandwidth(Level::dram) / a100.bandwidth(Level::dram) == doctest::Approx(1.64).epsilon(0.01));
}

TEST_CASE("attainable_flops draws the roof: slope = bandwidth, knee at the ridge point, flat at the peak") {
    const Device& a100 = db().get("a100");
    const double ridge = a100.ridge_point(DType::fp16);
    CHECK(attainable_flops(a100, ridge, DType::fp16) == doctest::Approx(312e12));
    CHECK(attainable_flops(a100, 1.0, DType::fp16) == doctest::Approx(2039e9));
    CHECK(attainable_flops(a100, 1e6, DType::fp16) == doctest::Approx(312e12));
    CHECK(attainable_flops(a100, 0.0, DType::fp16) == 0);
    CHECK(attainable_flops(a100, INFINITY, DType::fp16) == doctest::Approx(312e12));
    CHECK(attainable_flops(a100, 1.0, DType::fp16, Level::sram) == doctest::Approx(19e12));
    CHECK(attainable_flops(a100, 1.0, DType::fp16, Level::dram, Unit::matrix, Ceilings::derated) ==
          doctest::Approx(2039e9 * a100.efficiency.dram_bandwidth));
    CHECK(attainable_flops(a100, 1e6, DType::fp16, Level::dram, Unit::vector) == doctest::Approx(78e12));
    // the same number evaluate() gives an op of that intensity
    const OpCost op = ops::elementwise(1 << 20, 1, 1, 1, format_of(DType::fp16));
    CHECK(attainable_flops(a100, op.arithmetic_intensity(Level::dram), DType::fp16, Level::dram, Unit::vector) ==
          doctest::Approx(evaluate(op, a100, Ceilings::ideal).attainable_flops));
    CHECK_THROWS_AS(attainable_flops(a100, -1.0, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(attainable_flops(a100, NAN, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(attainable_flops(a100, 1.0, DType::fp16, Level::l2), NotFound);  // A100: L2 capacity only
}

TEST_CASE("work not overlapped with memory adds to the derated time; the ideal roofline overlaps it") {
    const Device& a100 = db().get("a100");
    const double fp32 = a100.peak_flops(DType::fp32, Unit::vector), eff = a100.efficiency.compute;
    const double bw = a100.bandwidth(Level::dram) * a100.efficiency.dram_bandwidth;
    OpCost op;
    op.add_dram(bw * 1e-3, 0);                                            // 1 ms of DRAM traffic, derated
    op.add_flops(Unit::vector, DType::fp32, fp32 * eff * 0.5e-3);         // 0.5 ms hidden under it
    op.add_flops(Unit::vector, DType::fp32, fp32 * eff * 0.2e-3, 1.0, false);  // 0.2 ms after it
    REQUIRE(op.flop_terms.size() == 2);  // the two kinds of work stay apart
    const Timing t = evaluate(op, a100);
    CHECK(t.serial_seconds == doctest::Approx(0.2e-3));
    CHECK(t.compute_seconds == doctest::Approx(0.7e-3));
    CHECK(t.compute_seconds_by_unit[static_cast<std::size_t>(Unit::vector)] == doctest::Approx(0.5e-3));
    CHECK(t.seconds == doctest::Approx(1.2e-3));
    CHECK(t.bound == Bound::dram);
    const Timing ideal = evaluate(op, a100, Ceilings::ideal);
    CHECK(ideal.serial_seconds == 0);
    CHECK(ideal.seconds == doctest::Approx(a100.efficiency.dram_bandwidth * 1e-3));
    // more serial work than memory time: the op is compute-bound and the times add
    OpCost heavy = op;
    heavy.add_flops(Unit::vector, DType::fp32, fp32 * eff * 1.0e-3, 1.0, false);
    const Timing h = evaluate(heavy, a100);
    CHECK(h.seconds == doctest::Approx(1e-3 + 1.2e-3));
    CHECK(h.bound == Bound::compute);
    // the dequantization helper: per element, on 32-bit lanes
    OpCost d;
    Format q4 = format_of(DType::int4);
    q4.dequant_flops_per_element = 2;
    d.add_dequant(q4, 1000, false);
    CHECK(d.flops(Unit::vector, DType::fp32) == 2000);
    CHECK_FALSE(d.flop_terms.at(0).overlapped);
}
