#include "roofline/op.hpp"

#include "roofline/errors.hpp"

#include <cmath>
#include <limits>
#include <sstream>

namespace roofline {

double OpCost::flops() const {
    double total = 0;
    for (const auto& t : flop_terms) total += t.flops;
    return total;
}

double OpCost::flops(Unit unit, DType format) const {
    double total = 0;
    for (const auto& t : flop_terms)
        if (t.unit == unit && t.format == format) total += t.flops;
    return total;
}

double OpCost::bytes(Level l) const {
    const auto i = static_cast<std::size_t>(l);
    return bytes_read[i] + bytes_written[i];
}

double OpCost::arithmetic_intensity(Level l) const {
    const double f = flops(), b = bytes(l);
    if (b > 0) return f / b;
    return f > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

namespace {
// A count an op builder produced from its sizes: finite, >= 0 and at most kMaxOpCount, else the sizes were absurd
// and their product overflowed ("gemm: 2.658e+36 FLOPs exceed 1e+30 ...").
double check_op_count(const std::string& op, const char* what, double n) {
    if (n >= 0 && n <= kMaxOpCount) return n;  // the hot path builds no message (NaN fails both comparisons)
    const std::string who = op.empty() ? std::string("op") : op;
    if (n > kMaxOpCount) {
        std::ostringstream os;
        os.precision(4);
        os << who << ": " << n << " " << what << " exceed " << kMaxOpCount
           << ", the most one operator may count; its sizes are too large (their product overflows)";
        throw InvalidArgument(os.str());
    }
    return check_size(who + " " + what, n);
}
}  // namespace

void OpCost::add_flops(Unit unit, DType format, double n, double utilization, bool overlapped, bool issue) {
    check_op_count(name, "FLOPs", n);
    check_range("utilization", utilization, 1e-9, 1.0);
    if (n == 0) return;
    for (auto& t : flop_terms) {
        if (t.unit == unit && t.format == format && t.utilization == utilization && t.overlapped == overlapped &&
            t.issue == issue) {
            t.flops = check_op_count(name, "FLOPs", t.flops + n);
            return;
        }
    }
    flop_terms.push_back({unit, format, n, utilization, overlapped, issue});
}

void OpCost::add_dequant(const Format& f, double elements, bool overlapped) {
    add_flops(Unit::vector, DType::fp32, f.dequant_flops_per_element * elements, 1.0, overlapped);
}

void OpCost::set_utilization(Unit unit, double utilization) {
    check_range("utilization", utilization, 1e-9, 1.0);
    for (auto& t : flop_terms)
        if (t.unit == unit) t.utilization = utilization;
}

void OpCost::add_level(Level l, double read, double written) {
    const auto i = static_cast<std::size_t>(l);
    bytes_read[i] += check_op_count(name, "bytes read", read);
    bytes_written[i] += check_op_count(name, "bytes written", written);
    check_op_count(name, "bytes read", bytes_read[i]);
    check_op_count(name, "bytes written", bytes_written[i]);
}

void OpCost::add_dram(double read, double written) {
    add_level(Level::dram, read, written);
    add_level(Level::l2, read, written);
}

bool from_l2(OpCost& op, double l2_bytes) {
    const auto dram = static_cast<std::size_t>(Level::dram);
    const double bytes = op.bytes(Level::dram);
    if (!(l2_bytes > 0) || !(bytes > 0) || bytes > l2_bytes) return false;
    op.bytes_read[dram] = 0;
    op.bytes_written[dram] = 0;
    return true;
}

OpCost& OpCost::operator+=(const OpCost& other) {
    for (const auto& t : other.flop_terms) add_flops(t.unit, t.format, t.flops, t.utilization, t.overlapped, t.issue);
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        bytes_read[i] += other.bytes_read[i];
        bytes_written[i] += other.bytes_written[i];
    }
    launches += other.launches;
    return *this;
}

OpCost OpCost::scaled(double factor) const {
    check_size("scale factor", factor);
    OpCost out = *this;
    for (auto& t : out.flop_terms) t.flops *= factor;
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        out.bytes_read[i] *= factor;
        out.bytes_written[i] *= factor;
    }
    out.launches *= factor;
    return out;
}

OpCost operator+(OpCost a, const OpCost& b) {
    a += b;
    return a;
}

}  // namespace roofline
