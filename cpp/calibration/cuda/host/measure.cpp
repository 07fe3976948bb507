#include "measure.hpp"

#include "stats.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace rcal {

namespace {

roofline::CeilingMeasurement base(roofline::Ceiling ceiling, const std::string& kernel, const Summary& s, long long warmup,
                           bool verified, Sizes sizes) {
    roofline::CeilingMeasurement m;
    m.ceiling = ceiling;
    m.kernel = kernel;
    m.repetitions = static_cast<long long>(s.count);
    m.warmup = warmup;
    m.min = s.min;
    m.median = s.median;
    m.max = s.max;
    m.verified = verified;
    m.sizes = std::move(sizes);
    return m;
}

}  // namespace

roofline::CeilingMeasurement bandwidth_measurement(roofline::Level level, const std::string& cache, const std::string& kernel,
                                            double bytes, const std::vector<double>& seconds, long long warmup,
                                            bool verified, Sizes sizes) {
    sizes.emplace_back("bytes_per_run", bytes);
    auto m = base(roofline::Ceiling::bandwidth, kernel, rates(bytes, seconds), warmup, verified, std::move(sizes));
    m.level = level;
    m.cache = cache;
    return m;
}

roofline::CeilingMeasurement flops_measurement(roofline::Ceiling ceiling, roofline::DType dtype, roofline::Unit unit,
                                        const std::string& kernel, double flops, const std::vector<double>& seconds,
                                        long long warmup, bool verified, Sizes sizes) {
    sizes.emplace_back("flops_per_run", flops);
    auto m = base(ceiling, kernel, rates(flops, seconds), warmup, verified, std::move(sizes));
    m.dtype = dtype;
    m.unit = unit;
    return m;
}

roofline::CeilingMeasurement overhead_measurement(const std::string& kernel, const std::vector<double>& seconds,
                                           long long warmup, Sizes sizes) {
    for (const double s : seconds)
        if (!(s > 0) || !std::isfinite(s)) throw std::invalid_argument("launch overhead: a time is not > 0");
    return base(roofline::Ceiling::launch_overhead, kernel, summarize(seconds), warmup, true, std::move(sizes));
}

std::string format_si(double value, const std::string& si_unit) {
    char buf[64];
    if (si_unit == "s") {
        if (value < 1e-3)
            std::snprintf(buf, sizeof buf, "%.2f us", value * 1e6);
        else
            std::snprintf(buf, sizeof buf, "%.3f ms", value * 1e3);
        return buf;
    }
    const std::string base_unit = si_unit == "B/s" ? "B/s" : "FLOP/s";
    const char* prefix = "";
    double v = value;
    if (value >= 1e12) {
        v = value / 1e12;
        prefix = "T";
    } else if (value >= 1e9) {
        v = value / 1e9;
        prefix = "G";
    } else if (value >= 1e6) {
        v = value / 1e6;
        prefix = "M";
    }
    std::snprintf(buf, sizeof buf, "%.3f %s%s", v, prefix, base_unit.c_str());
    return buf;
}

std::string describe(const roofline::CeilingMeasurement& m) {
    const std::string unit(roofline::ceiling_si_unit(m.ceiling));
    std::string what(roofline::ceiling_name(m.ceiling));
    if (m.ceiling == roofline::Ceiling::bandwidth)
        what += " " + std::string(roofline::level_name(m.level));
    else if (m.ceiling != roofline::Ceiling::launch_overhead)
        what += " " + std::string(roofline::dtype_name(m.dtype)) + " " + std::string(roofline::unit_name(m.unit));
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-26s %-26s %16s  [%s .. %s]  n=%lld  %s", what.c_str(), m.kernel.c_str(),
                  format_si(m.median, unit).c_str(), format_si(m.min, unit).c_str(), format_si(m.max, unit).c_str(),
                  m.repetitions, m.verified ? "verified" : "NOT VERIFIED");
    return buf;
}

bool resolve_datasheet(const std::string& spec, const std::string& hardware_db, const std::string& runtime_name,
                       roofline::Device& out, std::string& message) {
    struct stat st {};
    if (spec != "auto" && ::stat(spec.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        out = roofline::load_device(spec);
        return true;
    }
    const std::string dir = hardware_db.empty() ? roofline::DeviceDB::default_directory() : hardware_db;
    const auto db = roofline::DeviceDB::load_directory(dir);
    std::string id = spec;
    if (spec == "auto") {
        id = roofline::datasheet_device_id(runtime_name, db);
        if (id.empty()) {
            message = "no hardware_db datasheet matches '" + runtime_name + "' (in " + dir + ")";
            return false;
        }
    }
    out = db.get(id);
    return true;
}

const Target* target_for(const roofline::ReportRow& row) {
    static const Target dram{"DRAM bandwidth >= 90% of datasheet", 0.90};
    static const Target fp32{"FP32 FMA >= 90% of datasheet peak", 0.90};
    static const Target bf16{"bf16 tensor >= 75% of datasheet dense peak", 0.75};
    if (row.ceiling == "bandwidth" && row.level == "dram") return &dram;
    if (row.ceiling == "peak_flops" && row.dtype == "fp32" && row.unit == "vector") return &fp32;
    if ((row.ceiling == "peak_flops" || row.ceiling == "gemm_flops") && row.dtype == "bf16" && row.unit == "matrix")
        return &bf16;
    return nullptr;
}

std::string format_report(const std::vector<roofline::ReportRow>& rows, bool* all_targets_met) {
    std::ostringstream out;
    char buf[320];
    std::snprintf(buf, sizeof buf, "%-16s %-5s %-6s %-5s %-26s %16s %16s %7s  %s\n", "ceiling", "dtype", "unit", "level",
                  "kernel", "measured", "datasheet", "ratio", "flags");
    out << buf;
    std::map<const Target*, const roofline::ReportRow*> best;
    for (const auto& r : rows) {
        const std::string unit = r.si_unit.empty() ? "FLOP/s" : r.si_unit;
        const std::string ds = r.datasheet > 0 ? format_si(r.datasheet, unit) : "-";
        char ratio[32] = "-";
        if (r.ratio > 0) std::snprintf(ratio, sizeof ratio, "%.1f%%", 100.0 * r.ratio);
        std::string flags;
        if (!r.verified) flags += "UNVERIFIED ";
        if (r.applied) flags += "applied ";
        if (!r.feeds_model) flags += "reference ";
        std::snprintf(buf, sizeof buf, "%-16s %-5s %-6s %-5s %-26s %16s %16s %7s  %s\n", r.ceiling.c_str(),
                      r.dtype.c_str(), r.unit.c_str(), r.level.c_str(), r.kernel.c_str(),
                      format_si(r.measured, unit).c_str(), ds.c_str(), ratio, flags.c_str());
        out << buf;
        const Target* t = target_for(r);
        if (t && r.verified && r.ratio > 0 && (!best[t] || r.ratio > best[t]->ratio)) best[t] = &r;
        if (t && !best.count(t)) best[t] = nullptr;
    }
    bool met = true;
    for (const auto& [t, r] : best) {
        if (!r) {
            out << "target  " << t->name << ": no verified measurement with a datasheet value\n";
            continue;
        }
        const bool ok = r->ratio >= t->fraction;
        met = met && ok;
        std::snprintf(buf, sizeof buf, "target  %s: %s (%.1f%%, %s)\n", t->name.c_str(), ok ? "MET" : "MISSED",
                      100.0 * r->ratio, r->kernel.c_str());
        out << buf;
    }
    if (all_targets_met) *all_targets_met = met;
    return out.str();
}

}  // namespace rcal
