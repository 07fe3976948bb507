// OpCost: what one operator costs, independent of any device — FLOPs by unit and number format,
// bytes read and written at each memory level, kernel launches.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace roofline {

struct FlopTerm {
    Unit unit = Unit::matrix;
    DType format = DType::fp16;
    double flops = 0;
    /// Fraction of the units this work can keep busy (tile and wave quantization of a small GEMM); the derated
    /// roofline divides by it. 1 for the ideal roofline and for ops whose shape fills the device.
    double utilization = 1.0;
    /// false: work the kernel cannot overlap with its memory traffic (dequantization sitting between a load and
    /// the multiply-adds that use it, in a kernel that does not pipeline the two): under derated ceilings it adds
    /// to the op's time instead of hiding under the memory time. The ideal roofline overlaps everything.
    bool overlapped = true;
    /// true: the count is issue slots (one thread instruction each: a lane of a GPU warp instruction, one instruction
    /// of a CPU core; whichever unit executes it), timed at the device's instruction issue rate
    /// (Device::issue_lanes_per_s) where the device gives one, else as `format` operations on `unit`.
    bool issue = false;
};

/// An op's FLOP terms: up to four held in place (ops have one to three: an OpCost is built without allocating
/// for them), more on the heap. A vector's interface, as far as the code uses one.
class FlopTerms {
public:
    using value_type = FlopTerm;
    using iterator = FlopTerm*;
    using const_iterator = const FlopTerm*;

    FlopTerms() = default;
    FlopTerms(const FlopTerms&) = default;
    FlopTerms& operator=(const FlopTerms&) = default;
    /// A move leaves the source empty (as a vector's does), whichever storage held its terms.
    FlopTerms(FlopTerms&& o) noexcept : in_place_(o.in_place_), heap_(std::move(o.heap_)), size_(o.size_) { o.clear(); }
    FlopTerms& operator=(FlopTerms&& o) noexcept {
        if (this != &o) {
            in_place_ = o.in_place_;
            heap_ = std::move(o.heap_);
            size_ = o.size_;
            o.clear();
        }
        return *this;
    }
    ~FlopTerms() = default;

    void clear() noexcept {
        heap_.clear();
        size_ = 0;
    }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    FlopTerm* begin() { return data(); }
    FlopTerm* end() { return data() + size_; }
    const FlopTerm* begin() const { return data(); }
    const FlopTerm* end() const { return data() + size_; }
    FlopTerm& operator[](std::size_t i) { return data()[i]; }
    const FlopTerm& operator[](std::size_t i) const { return data()[i]; }
    const FlopTerm& at(std::size_t i) const {
        if (i >= size_) throw std::out_of_range("FlopTerms::at: index " + std::to_string(i) + " of " + std::to_string(size_));
        return data()[i];
    }
    void push_back(const FlopTerm& t) {
        if (heap_.empty() && size_ < kInPlace) {
            in_place_[size_++] = t;
            return;
        }
        if (heap_.empty()) heap_.assign(in_place_.begin(), in_place_.end());  // the fifth: all move to the heap
        heap_.push_back(t);
        ++size_;
    }

private:
    static constexpr std::size_t kInPlace = 4;
    FlopTerm* data() { return heap_.empty() ? in_place_.data() : heap_.data(); }
    const FlopTerm* data() const { return heap_.empty() ? in_place_.data() : heap_.data(); }
    std::array<FlopTerm, kInPlace> in_place_{};
    std::vector<FlopTerm> heap_;  // empty while the terms fit in place, else all of them
    std::size_t size_ = 0;
};

/// Counts are doubles: exact for integers below 2^53, and closed-form sums over millions of steps stay exact
/// enough while never overflowing: one op counts at most kMaxOpCount FLOPs, and bytes per level (errors.hpp). Bytes at a level are the bytes that cross that level's interface.
/// Every DRAM byte also passes through L2, so the builders charge DRAM traffic to L2 as well.
struct OpCost {
    std::string name;
    FlopTerms flop_terms;
    std::array<double, kNumLevels> bytes_read{};
    std::array<double, kNumLevels> bytes_written{};
    double launches = 0;

    double flops() const;
    double flops(Unit unit, DType format) const;
    /// Read + written at a level (DRAM by default).
    double bytes(Level l = Level::dram) const;
    /// FLOP per byte at a level; +inf when the op moves no bytes but does FLOPs, 0 when it does neither.
    double arithmetic_intensity(Level l = Level::dram) const;

    void add_flops(Unit unit, DType format, double flops, double utilization = 1.0, bool overlapped = true, bool issue = false);
    /// Dequantizing `elements` stored elements of `f`: f.dequant_flops_per_element each, counted on vector units
    /// at the 32-bit lane rate (fp32): unpacking bits, integer-to-float conversion and the scale are 32-bit integer
    /// and float lane operations, which packed half-precision math does not speed up. `overlapped` as FlopTerm's.
    void add_dequant(const Format& f, double elements, bool overlapped = true);
    /// Sets the utilization of every term on `unit`.
    void set_utilization(Unit unit, double utilization);
    /// DRAM traffic, also counted at L2 (DRAM reaches the cores through L2).
    void add_dram(double read, double written);
    void add_level(Level l, double read, double written);

    OpCost& operator+=(const OpCost& other);
    /// Every count multiplied by `factor` (>= 0): `count` repetitions of the same op.
    OpCost scaled(double factor) const;
};

OpCost operator+(OpCost a, const OpCost& b);

/// An op whose DRAM traffic, read and written, fits in `l2_bytes` (> 0) keeps it in L2: its DRAM bytes are dropped
/// and their L2 count stays. For kernels of one pass that read what the kernel just before them wrote and whose
/// output the next one reads (NVIDIA's L2 is write-back: a line is written to DRAM when evicted, and the graph's
/// buffers are reused while their lines are still in L2). Returns whether it moved them.
bool from_l2(OpCost& op, double l2_bytes);

}  // namespace roofline
