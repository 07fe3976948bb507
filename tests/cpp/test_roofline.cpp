#include <doctest/doctest.h>

#include "roofline/device.hpp"
#include "roofline/errors.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "roofline/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <utility>

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
    CHECK(der.times.overhead_s == doctest::Approx(a100.efficiency.launch_overhead_s));
    CHECK(ideal.times.overhead_s == 0);
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
        CHECK(t.seconds >= t.times.compute_s());
        for (double m : t.times.memory_s) CHECK(t.seconds >= m);
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
          doctest::Approx(2039e9 * a100.efficiency.dram_bandwidth_fraction));
    CHECK(attainable_flops(a100, 1e6, DType::fp16, Level::dram, Unit::vector) == doctest::Approx(78e12));
    // the same number evaluate() gives an op of that intensity
    const OpCost op = ops::elementwise(1 << 20, 1, 1, 1, format_of(DType::fp16));
    CHECK(attainable_flops(a100, op.arithmetic_intensity(Level::dram), DType::fp16, Level::dram, Unit::vector) ==
          doctest::Approx(evaluate(op, a100, Ceilings::ideal).attainable_flops));
    CHECK_THROWS_AS(attainable_flops(a100, -1.0, DType::fp16), InvalidArgument);
    CHECK_THROWS_AS(attainable_flops(a100, NAN, DType::fp16), InvalidArgument);
    CHECK(attainable_flops(a100, 1.0, DType::fp16, Level::l2) == doctest::Approx(5400e9));  // gpu-benches' L2 read
    CHECK_THROWS_AS(attainable_flops(db().get("rtx-3090"), 1.0, DType::fp16, Level::l2), NotFound);  // L2 capacity only
}

TEST_CASE("an op's FLOP terms: four in place, more spill to the heap in order; copies and sums keep them") {
    const DType formats[] = {DType::fp16, DType::bf16, DType::fp32, DType::int8, DType::fp8_e4m3, DType::int32};
    OpCost op;
    for (std::size_t i = 0; i < 6; ++i) {
        op.add_flops(Unit::matrix, formats[i], 1.0 + static_cast<double>(i));
        REQUIRE(op.flop_terms.size() == i + 1);
    }
    op.add_flops(Unit::matrix, DType::fp16, 10);  // merges with the first term, wherever it is stored
    const OpCost copy = op;
    for (const OpCost* o : {static_cast<const OpCost*>(&op), &copy}) {
        REQUIRE(o->flop_terms.size() == 6);
        for (std::size_t i = 0; i < 6; ++i) {
            CHECK(o->flop_terms[i].format == formats[i]);
            CHECK(o->flop_terms.at(i).flops == (i == 0 ? 11.0 : 1.0 + static_cast<double>(i)));
        }
        CHECK_THROWS_AS(o->flop_terms.at(6), std::out_of_range);
    }
    CHECK(copy.flops() == doctest::Approx(11 + 2 + 3 + 4 + 5 + 6));
    // a move leaves the source empty and reusable, whichever storage held the terms
    for (const std::size_t n : {std::size_t{3}, std::size_t{6}}) {
        OpCost src;
        for (std::size_t i = 0; i < n; ++i) src.add_flops(Unit::matrix, formats[i], 1);
        OpCost dst = std::move(src);
        CHECK(dst.flop_terms.size() == n);
        CHECK(src.flop_terms.empty());  // NOLINT(bugprone-use-after-move): the state a move promises
        for (std::size_t i = 0; i < 6; ++i) src.add_flops(Unit::vector, formats[i], 2);
        CHECK(src.flop_terms.size() == 6);
        CHECK(src.flops() == doctest::Approx(12));
        OpCost again;
        again = std::move(dst);
        CHECK(again.flops() == doctest::Approx(static_cast<double>(n)));
        CHECK(dst.flop_terms.empty());  // NOLINT(bugprone-use-after-move)
    }
    CHECK((copy + copy).flops() == doctest::Approx(2 * 31.0));
    CHECK(copy.scaled(3).flops(Unit::matrix, DType::int32) == doctest::Approx(18));
}

TEST_CASE("the SMs issue at the clock of the vector peaks where the tensor peaks are quoted at a lower one") {
    // H100 SXM5: tensor peaks at 1830 MHz (989.4 dense BF16 TFLOPS = 132 SMs x 4096 x 1830 MHz), FP32 66.9 TFLOPS
    // = 132 x 128 lanes x 2 x 1980 MHz
    const Device& h = db().get("h100-sxm");
    CHECK(h.boost_clock_hz == doctest::Approx(1830e6));
    CHECK(h.vector_clock_hz == doctest::Approx(1980e6));
    CHECK(h.issue_lanes_per_s() == doctest::Approx(132 * 128 * 1980e6));
    CHECK(h.peak_flops(DType::fp32, Unit::vector) == doctest::Approx(2 * h.issue_lanes_per_s()).epsilon(0.01));
    // round trip through the file's JSON; a device without it issues at its boost clock
    const Device back = parse_device(h.to_json(), "h100.json");
    CHECK(back.vector_clock_hz == h.vector_clock_hz);
    const Device& a = db().get("a100-sxm-80gb");
    CHECK(a.vector_clock_hz == 0);
    CHECK(a.issue_lanes_per_s() == doctest::Approx(108 * 128 * 1410e6));
}

TEST_CASE("issue slots run at the SM's dispatch rate, not at its INT32 peak; without one, as INT32 operations") {
    // RTX Blackwell's unified FP32 / INT32 lanes double the INT32 peak per SM and clock; the dispatch stays 128
    // lanes per SM and clock, as on Ada
    const Device &b = db().get("rtx-5090"), &ada = db().get("rtx-4090");
    for (const Device* d : {&b, &ada}) {
        CAPTURE(d->id);
        OpCost op;
        op.add_flops(Unit::vector, DType::int32, 1e12, 1.0, true, true);
        const double rate = d->compute_units * 128 * d->boost_clock_hz;
        CHECK(d->issue_lanes_per_s() == doctest::Approx(rate));
        CHECK(evaluate(op, *d, Ceilings::ideal).seconds == doctest::Approx(1e12 / rate));
        CHECK(evaluate(op, *d).times.vector_s == doctest::Approx(1e12 / (rate * d->efficiency.compute_fraction)));
    }
    CHECK(b.peak_flops(DType::int32, Unit::vector) == doctest::Approx(2 * b.issue_lanes_per_s()).epsilon(0.01));
    CHECK(ada.peak_flops(DType::int32, Unit::vector) == doctest::Approx(ada.issue_lanes_per_s()).epsilon(0.01));
    // the same count as INT32 operations, and issue slots on a device that gives no issue rate
    OpCost ops;
    ops.add_flops(Unit::vector, DType::int32, 1e12);
    OpCost slots;
    slots.add_flops(Unit::vector, DType::int32, 1e12, 1.0, true, true);
    slots.add_flops(Unit::vector, DType::int32, 1e12);
    REQUIRE(slots.flop_terms.size() == 2);  // issue slots and operations stay apart
    CHECK(evaluate(ops, b, Ceilings::ideal).seconds == doctest::Approx(1e12 / b.peak_flops(DType::int32, Unit::vector)));
    Device bare = b;
    bare.lanes_issued_per_clock = 0;
    CHECK(evaluate(slots, bare, Ceilings::ideal).seconds == doctest::Approx(2 * evaluate(ops, b, Ceilings::ideal).seconds));
}

TEST_CASE("work not overlapped with memory adds to the derated time; the ideal roofline overlaps it") {
    const Device& a100 = db().get("a100");
    const double fp32 = a100.peak_flops(DType::fp32, Unit::vector), eff = a100.efficiency.compute_fraction;
    const double bw = a100.bandwidth(Level::dram) * a100.efficiency.dram_bandwidth_fraction;
    OpCost op;
    op.add_dram(bw * 1e-3, 0);                                            // 1 ms of DRAM traffic, derated
    op.add_flops(Unit::vector, DType::fp32, fp32 * eff * 0.5e-3);         // 0.5 ms hidden under it
    op.add_flops(Unit::vector, DType::fp32, fp32 * eff * 0.2e-3, 1.0, false);  // 0.2 ms after it
    REQUIRE(op.flop_terms.size() == 2);  // the two kinds of work stay apart
    const Timing t = evaluate(op, a100);
    CHECK(t.times.serial_s == doctest::Approx(0.2e-3));
    CHECK(t.times.compute_s() == doctest::Approx(0.7e-3));
    CHECK(t.times.vector_s == doctest::Approx(0.5e-3));
    CHECK(t.seconds == doctest::Approx(1.2e-3));
    CHECK(t.bound == Bound::dram);
    const Timing ideal = evaluate(op, a100, Ceilings::ideal);
    CHECK(ideal.times.serial_s == 0);
    CHECK(ideal.seconds == doctest::Approx(a100.efficiency.dram_bandwidth_fraction * 1e-3));
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

TEST_CASE("CeilingTimes: the timing rule is max(racing) + serial + overhead") {
    CeilingTimes t;
    t.matrix_s = 2e-3;
    t.vector_s = 0.5e-3;
    t.serial_s = 0.25e-3;
    t.memory_s = {3e-3, 1e-3, 0.1e-3};
    t.overhead_s = 1e-5;
    const auto r = t.racing();
    CHECK(r[0] == 2e-3 + 0.5e-3);
    CHECK(r[1] == 3e-3);
    CHECK(r[2] == 1e-3);
    CHECK(r[3] == 0.1e-3);
    CHECK(t.total() == 3e-3 + 0.25e-3 + 1e-5);  // DRAM races the overlapped compute and wins
    CHECK(t.compute_s() == 2e-3 + 0.5e-3 + 0.25e-3);
    // at a utilization of 0.5 the matrix units take twice as long: compute wins the race
    CHECK(t.racing(0.5)[0] == 4e-3 + 0.5e-3);
    CHECK(t.total(0.5) == 4e-3 + 0.5e-3 + 0.25e-3 + 1e-5);
    CHECK(t.compute_s(0.5) == 4e-3 + 0.5e-3 + 0.25e-3);
    // each term in turn the largest
    for (std::size_t i = 0; i < 4; ++i) {
        CAPTURE(i);
        CeilingTimes u;
        u.matrix_s = 1;
        u.memory_s = {1, 1, 1};
        if (i == 0) u.matrix_s = 7;
        else u.memory_s[i - 1] = 7;
        u.serial_s = 0.5;
        u.overhead_s = 0.25;
        CHECK(u.total() == 7 + 0.5 + 0.25);
        const auto ur = u.racing();
        CHECK(u.total() == *std::max_element(ur.begin(), ur.end()) + u.serial_s + u.overhead_s);
    }
    CHECK(CeilingTimes{}.total() == 0);
    // components add and scale like vectors; work_scaled keeps the launches
    const CeilingTimes two = t + t;
    CHECK(two.matrix_s == 2 * t.matrix_s);
    CHECK(two.memory_s[1] == 2 * t.memory_s[1]);
    CHECK((two - t).overhead_s == t.overhead_s);
    CHECK(t.scaled(3).serial_s == 3 * t.serial_s);
    CHECK(t.work_scaled(3).overhead_s == t.overhead_s);
    CHECK(t.work_scaled(3).memory_s[0] == 3 * t.memory_s[0]);
}

TEST_CASE("CeilingTimes::bound: the largest term, compute counting its serial part") {
    CeilingTimes t;
    CHECK(t.bound() == Bound::none);
    t.vector_s = 1;
    CHECK(t.bound() == Bound::compute);
    t.memory_s[0] = 2;
    CHECK(t.bound() == Bound::dram);
    t.serial_s = 1.5;  // compute 2.5 > DRAM 2
    CHECK(t.bound() == Bound::compute);
    t.memory_s[1] = 3;
    CHECK(t.bound() == Bound::l2);
    t.memory_s[2] = 4;
    CHECK(t.bound() == Bound::sram);
    t.overhead_s = 5;
    CHECK(t.bound() == Bound::overhead);
    t.overhead_s = 0;
    t.matrix_s = 1;
    CHECK(t.bound() == Bound::sram);    // compute 3.5 < SRAM 4
    CHECK(t.bound(0.2) == Bound::compute);  // 1 / 0.2 + 1 + 1.5 = 7.5
    CeilingTimes only_overhead;
    only_overhead.overhead_s = 1e-6;
    CHECK(only_overhead.bound() == Bound::overhead);
}

TEST_CASE("sum_of_totals equals the brute-force sum over random affine sequences") {
    std::mt19937 gen(20240611);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<int> len(2, 3000);
    int crossings = 0;
    for (int c = 0; c < 200; ++c) {
        CAPTURE(c);
        const double n = len(gen);
        // every term from a value at the first op to one at the last: non-negative throughout, racing lines that cross
        CeilingTimes first, step;
        auto term = [&](double& a, double& b, double scale) {
            const double at_first = scale * u(gen), at_last = scale * u(gen);
            a = at_first;
            b = (at_last - at_first) / (n - 1);
        };
        term(first.matrix_s, step.matrix_s, 1);
        term(first.vector_s, step.vector_s, 0.3);
        for (std::size_t i = 0; i < kNumLevels; ++i) term(first.memory_s[i], step.memory_s[i], 1);
        term(first.serial_s, step.serial_s, 0.2);
        term(first.overhead_s, step.overhead_s, 0.1);
        if (c % 10 == 0) step.memory_s[1] = 0;                      // a constant line
        if (c % 7 == 0) first.memory_s[2] = step.memory_s[2] = 0;  // a level without traffic
        double brute = 0;
        std::size_t top_first = 0, top_last = 0;
        for (double x = 0; x < n; ++x) {
            CeilingTimes t = first;
            t.axpy(x, step);
            brute += t.total();
            const auto r = t.racing();
            const auto top = static_cast<std::size_t>(std::max_element(r.begin(), r.end()) - r.begin());
            if (x == 0) top_first = top;
            top_last = top;
        }
        if (top_first != top_last) ++crossings;
        CHECK(sum_of_totals(first, step, n) == doctest::Approx(brute).epsilon(1e-12));
    }
    CHECK(crossings >= 100);  // most cases change the largest term along the way
    // no ops, one op
    CeilingTimes a;
    a.matrix_s = 1;
    a.memory_s[0] = 2;
    a.serial_s = 0.5;
    CHECK(sum_of_totals(a, a, 0) == 0);
    CHECK(sum_of_totals(a, a, 1) == a.total());
    CHECK(sum_of_totals(a, CeilingTimes{}, 1000) == doctest::Approx(1000 * a.total()).epsilon(1e-12));
}

TEST_CASE("evaluate(): seconds and bound are the timing rule applied to its CeilingTimes") {
    const Device& a100 = db().get("a100");
    const Format f16 = format_of(DType::fp16);
    Format q4 = format_of(DType::int4);
    q4.compute = DType::fp16;
    q4.dequant_flops_per_element = 2;
    std::vector<OpCost> ops = {ops::gemm(4096, 4096, 4096, DType::fp16), ops::gemm(1, 4096, 4096, DType::bf16),
                               ops::gemm(7, 4096, 4096, f16, q4, f16, ops::GemmOptions{Unit::matrix, 0, 1, false}),
                               ops::elementwise(1 << 20, 1, 1, 1, f16), ops::elementwise(16, 1, 1, 1, f16),
                               ops::decode_attention(4, 32, 8, 4096, 128, f16, f16),
                               ops::attention({1, 32, 2048, 2048, 128, true, 8}, f16, ops::AttentionKind::flash, false,
                                              ops::flash_tiles(a100)),
                               OpCost{}};
    ops[1].set_utilization(Unit::matrix, 0.3);
    for (std::size_t i = 0; i < ops.size(); ++i)
        for (Ceilings c : {Ceilings::ideal, Ceilings::derated}) {
            CAPTURE(i);
            const Timing t = evaluate(ops[i], a100, c);
            CHECK(t.seconds == t.times.total());
            CHECK(t.bound == t.times.bound());
            if (c == Ceilings::ideal) {
                CHECK(t.times.serial_s == 0);
                CHECK(t.times.overhead_s == 0);
            }
        }
}

TEST_CASE("evaluate_both gives evaluate's components under both ceilings, exactly") {
    const DeviceDB& dbs = db();
    Format q4 = parse_format("q4_k");
    OpCost serial = ops::gemm(512, 4096, 4096, format_of(DType::fp16), q4, format_of(DType::fp16), ops::GemmOptions{Unit::matrix, 0, 1, false});
    serial.set_utilization(Unit::matrix, 0.6);
    serial.add_flops(Unit::vector, DType::int32, 1e9);
    const std::vector<OpCost> ops_ = {ops::gemm(4096, 4096, 4096, DType::fp16), ops::gemv(8192, 8192, DType::bf16), serial,
                                      ops::attention({2, 32, 1024, 1024, 128, true, 8}, format_of(DType::bf16), ops::AttentionKind::standard),
                                      ops::rmsnorm(512, 4096, format_of(DType::fp32)), ops::gemm(0, 0, 0, DType::fp16)};
    for (const char* id : {"a100-sxm-80gb", "h100-sxm", "m4-pro-20c", "rtx-4090", "mi300x"}) {
        const Device& d = dbs.get(id);
        for (const OpCost& op : ops_) {
            CAPTURE(id);
            CeilingTimes der, ide;
            evaluate_both(op, d, der, ide);
            for (const auto& [got, want] : {std::pair{der, evaluate(op, d, Ceilings::derated).times},
                                           std::pair{ide, evaluate(op, d, Ceilings::ideal).times}}) {
                CHECK(got.matrix_s == want.matrix_s);
                CHECK(got.vector_s == want.vector_s);
                CHECK(got.serial_s == want.serial_s);
                CHECK(got.overhead_s == want.overhead_s);
                for (std::size_t i = 0; i < kNumLevels; ++i) CHECK(got.memory_s[i] == want.memory_s[i]);
            }
        }
    }
}
