#include "harness.hpp"

#include "roofline/calibration.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/forward.hpp"
#include "roofline/gguf.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/model.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "roofline/roofline.hpp"
#include "roofline/weights.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace roofline::fuzz {

namespace {

// Every model the loaders accept is run through a forward pass and an estimate, up to the loaders' own limits
// (kMaxLayers layers, GgufLimits::max_tensors tensors): building a pass is linear in its layers and tensors, so a
// large accepted input costs milliseconds per thousand layers, and a superlinear regression shows as a slow input.
constexpr int kMaxLayersForOps = kMaxLayers;
constexpr std::size_t kMaxTensorsForOps = std::size_t{1} << 20;

std::string text_of(const std::uint8_t* data, std::size_t size) {
    return size == 0 ? std::string() : std::string(reinterpret_cast<const char*>(data), size);
}

[[noreturn]] void violated(const std::string& what) { throw InvariantViolation(what); }

void finite_nonnegative(const char* what, double x) {
    if (!std::isfinite(x) || x < 0) {
        std::ostringstream os;
        os << what << " is " << x << "; every result must be finite and >= 0";
        violated(os.str());
    }
}

void check_timing(const Timing& t) {
    finite_nonnegative("Timing::seconds", t.seconds);
    finite_nonnegative("Timing::times.compute_s()", t.times.compute_s());
    finite_nonnegative("Timing::times.matrix_s", t.times.matrix_s);
    finite_nonnegative("Timing::times.vector_s", t.times.vector_s);
    finite_nonnegative("Timing::times.serial_s", t.times.serial_s);
    for (double s : t.times.memory_s) finite_nonnegative("Timing::times.memory_s", s);
    finite_nonnegative("Timing::times.overhead_s", t.times.overhead_s);
    finite_nonnegative("Timing::attainable_flops", t.attainable_flops);
    finite_nonnegative("Timing::achieved_flops", t.achieved_flops);
    if (t.seconds + 1e-300 < t.times.compute_s()) violated("Timing::seconds is below its compute time");
    if (t.seconds != t.times.total()) violated("Timing::seconds is not the timing rule of its CeilingTimes");
}

void check_op(const OpCost& op) {
    finite_nonnegative("OpCost::flops", op.flops());
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        finite_nonnegative("OpCost::bytes_read", op.bytes_read[i]);
        finite_nonnegative("OpCost::bytes_written", op.bytes_written[i]);
    }
    finite_nonnegative("OpCost::launches", op.launches);
}

// Ops of every kind against a device, both ceilings. Errors the core raises for a device lacking something
// (no peak for a format: NotFound) are answers, not bugs.
void evaluate_ops(const Device& d) {
    std::vector<OpCost> ops;
    ops.push_back(ops::gemm(4096, 4096, 4096, DType::fp16));
    ops.push_back(ops::gemm(1, 1, 1, DType::fp32));
    ops.push_back(ops::gemm(0, 0, 0, DType::fp32));
    ops.push_back(ops::gemm(1, 14336, 4096, format_of(DType::fp16), parse_format("Q4_K"), format_of(DType::fp16)));
    ops.push_back(ops::elementwise(1e9, 1, 2, 1, format_of(DType::bf16)));
    ops.push_back(ops::decode_attention(8, 32, 8, 4096, 128, format_of(DType::fp16), format_of(DType::fp16)));
    if (d.has_level(Level::sram) && d.sram_per_unit_bytes() >= 4 * 128 * 2)
        ops.push_back(ops::attention({1, 32, 2048, 2048, 128, true}, format_of(DType::fp16), ops::AttentionKind::flash,
                                     false, ops::FlashTiles{d.sram_per_unit_bytes(),
                                                            d.has_level(Level::l2) ? d.capacity(Level::l2) : 0.0}));
    for (const auto& op : ops) {
        check_op(op);
        for (Ceilings c : {Ceilings::ideal, Ceilings::derated}) {
            try {
                check_timing(evaluate(op, d, c));
            } catch (const NotFound&) {
            }
        }
    }
    for (const auto& p : d.compute) {
        finite_nonnegative("ComputePeak::flops_per_s", p.flops_per_s);
        if (d.has_bandwidth(Level::dram)) finite_nonnegative("ridge point", d.ridge_point(p.format, Level::dram, p.unit));
    }
}

void check_model(const Model& m, bool from_gguf) {
    finite_nonnegative("Model::parameters", m.parameters());
    for (const auto& t : m.tensors) finite_nonnegative("WeightTensor::elements", t.elements());
    const Format act = format_of(DType::bf16);
    for (const char* q : {"Q4_K_M", "Q8_0", "fp16", "int4-g128", "gguf"}) {
        if (std::string(q) == "gguf" && !from_gguf) continue;
        try {
            finite_nonnegative("weight_bytes", weight_bytes(m, q, act));
        } catch (const InvalidArgument&) {
            // a quantization that does not fit this model's shapes (rows not a multiple of a block, ...)
        }
    }
    finite_nonnegative("kv_cache_bytes", kv_cache_bytes(m.arch, 2, 4096, format_of(DType::fp16)));
    if (m.arch.n_layer > kMaxLayersForOps || m.tensors.size() > kMaxTensorsForOps) return;

    std::vector<TensorFormat> formats;
    try {
        formats = tensor_formats(m, from_gguf ? "gguf" : "fp16", format_of(DType::fp16));
    } catch (const InvalidArgument&) {
        return;
    }
    PhaseOptions opt;
    opt.activation = format_of(DType::fp16);
    opt.kv = format_of(DType::fp16);
    opt.compute_units = 100;
    for (const auto& [tokens, past] : {std::pair<double, double>{16, 0}, {1, 100}})
        for (const auto& op : forward_ops(m, formats, 2, tokens, past, opt)) {
            check_op(op.cost);
            finite_nonnegative("PhaseOp::count", op.count);
        }
}

const Device& reference_device() {
    static const Device d = parse_device(R"({
      "schema_version": 1, "id": "fuzz-gpu", "name": "Fuzz GPU", "vendor": "nvidia", "family": "fuzz", "kind": "gpu",
      "aliases": [],
      "compute_units": {"count": 100, "name": "SM", "source": "made up for the fuzz harness"},
      "clocks": {"boost_MHz": 1500, "source": "made up for the fuzz harness"},
      "memory": {"dram": {"type": "HBM", "bandwidth_GBps": 2000, "capacity_GiB": 80, "source": "made up for the fuzz harness"},
                 "l2": {"type": "L2", "capacity_MiB": 40, "bandwidth_GBps": 6000, "source": "made up for the fuzz harness"},
                 "sram": {"type": "smem", "per_unit_KiB": 192, "source": "made up for the fuzz harness"}},
      "compute": [{"format": "fp16", "unit": "matrix", "peak_TFLOPS": 300, "source": "made up for the fuzz harness"},
                  {"format": "bf16", "unit": "matrix", "peak_TFLOPS": 300, "source": "made up for the fuzz harness"},
                  {"format": "fp32", "unit": "vector", "peak_TFLOPS": 20, "source": "made up for the fuzz harness"}],
      "interconnect": [{"name": "link", "bandwidth_GBps": 300, "source": "made up for the fuzz harness"}],
      "efficiency": {"dram_bandwidth_fraction": 0.8, "compute_fraction": 0.7, "launch_overhead_us": 4, "source": "made up for the fuzz harness"}
    })", "<fuzz reference device>");
    return d;
}

// Every number of the field table (ROOFLINE_ESTIMATE_FIELDS); bounds and flags are codes, not numbers.
void field_finite_nonnegative(const char* name, double x) { finite_nonnegative(name, x); }
template <class T>
void field_finite_nonnegative(const char*, const T&) {}

void check_estimate(const Estimate& e) {
#define ROOFLINE_X(name, type, unit, meaning) field_finite_nonnegative("Estimate::" #name, e.name);
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    for (const auto& r : e.breakdown) {
        finite_nonnegative("BreakdownRow::seconds", r.seconds);
        finite_nonnegative("BreakdownRow::flops", r.flops);
        finite_nonnegative("BreakdownRow::bytes", r.bytes);
    }
}

void small_estimate(const Model& m, const char* quant = "fp16") {
    if (m.arch.n_layer > kMaxLayersForOps || m.tensors.size() > kMaxTensorsForOps) return;
    Workload w;
    w.quant = quant;
    w.batch = 2;
    w.prompt_tokens = 16;
    w.gen_tokens = 4;
    w.engine = "generic";
    w.flash_attention = true;
    try {
        check_estimate(estimate(m, reference_device(), w));
    } catch (const InvalidArgument&) {
        // shapes a scheme cannot hold, heads a tensor-parallel split cannot divide, ...: answers
    }
}

void model_checks(const Model& m) {
    check_model(m, false);
    small_estimate(m);
}

}  // namespace

void gguf(const std::uint8_t* data, std::size_t size) {
    GgufFile f;
    try {
        f = parse_gguf(data, size, "<fuzz>");
    } catch (const Error&) {
        return;
    }
    // A file without tensors may end before its (empty) aligned data section, as ggml's reader allows.
    if (!f.tensors.empty() && f.data_offset > f.file_size) violated("GgufFile::data_offset lies past the end of the file");
    for (const auto& t : f.tensors) {
        finite_nonnegative("GgufTensor::bytes", t.bytes);
        if (f.data_offset + t.offset + static_cast<std::uint64_t>(t.bytes) > f.file_size)
            violated("a tensor's data lies past the end of the file");
    }
    for (const auto& [key, v] : f.metadata) (void)v.describe();
    finite_nonnegative("GgufFile::total_tensor_bytes", f.total_tensor_bytes());
    Model m;
    try {
        m = Model::from_gguf(f);
    } catch (const Error&) {
        return;
    }
    try {
        check_model(m, true);
        small_estimate(m, "gguf");
    } catch (const InvalidArgument&) {
        // a forward pass over shapes the architecture does not explain: an answer
    }
}

void device(const std::uint8_t* data, std::size_t size) {
    Device d;
    try {
        d = parse_device(text_of(data, size), "<fuzz>");
    } catch (const Error&) {
        return;
    }
    const std::string j = d.to_json();
    Device again;
    try {
        again = parse_device(j, "<round trip>");
    } catch (const Error& e) {
        violated(std::string("an accepted device does not round-trip through to_json: ") + e.what());
    }
    if (again.to_json() != j) violated("to_json -> parse_device -> to_json changed the device");
    evaluate_ops(d);
}

void hf_config(const std::uint8_t* data, std::size_t size) {
    Model m;
    try {
        m = Model::from_hf_config(text_of(data, size), "<fuzz>");
    } catch (const Error&) {
        return;
    }
    model_checks(m);
}

void model_entry(const std::uint8_t* data, std::size_t size) {
    Model m;
    try {
        m = Model::from_catalog_entry(text_of(data, size), "<fuzz>");
    } catch (const Error&) {
        return;
    }
    model_checks(m);
}

void profile(const std::uint8_t* data, std::size_t size) {
    Profile p;
    try {
        p = parse_profile(text_of(data, size), "<fuzz>");
    } catch (const Error&) {
        return;
    }
    const std::string j = profile_to_json(p);
    try {
        if (profile_to_json(parse_profile(j, "<round trip>")) != j)
            violated("profile_to_json -> parse_profile -> profile_to_json changed the profile");
    } catch (const Error& e) {
        violated(std::string("an accepted profile does not round-trip through profile_to_json: ") + e.what());
    }
    for (const auto& r : calibration_report(p, &reference_device())) {
        finite_nonnegative("ReportRow::measured", r.measured);
        finite_nonnegative("ReportRow::ratio", r.ratio);
    }
    try {
        const Device d = device_from_profile(p);
        evaluate_ops(d);
    } catch (const InvalidArgument&) {
        // the profile lacks what a device needs (a DRAM bandwidth, a peak, ...): an answer
    }
    const Device& base = reference_device();
    Device c;
    try {
        c = calibrated(base, p);
    } catch (const InvalidArgument&) {
        return;  // a CPU profile applied to a GPU
    }
    evaluate_ops(c);
    // A calibrated ceiling above the datasheet's must say so in its record.
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        const auto& old = base.memory[i];
        const auto& now = c.memory[i];
        if (old.bandwidth_Bps > 0 && now.bandwidth_Bps > old.bandwidth_Bps && now.provenance.uncertain.empty())
            violated("a calibrated bandwidth above the datasheet's does not say so");
    }
    for (const auto& now : c.compute)
        if (const ComputePeak* old = base.find_peak(now.format, now.unit);
            old && old->format == now.format && old->unit == now.unit && now.flops_per_s > old->flops_per_s &&
            now.provenance.uncertain.empty())
            violated("a calibrated peak above the datasheet's does not say so");
}

const std::vector<Target>& targets() {
    static const std::vector<Target> t = {
        {"gguf", gguf}, {"device", device}, {"hf_config", hf_config}, {"model_entry", model_entry}, {"profile", profile}};
    return t;
}

}  // namespace roofline::fuzz
