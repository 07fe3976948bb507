#include "roofline/calibration.hpp"

#include "json_reader.hpp"
#include "roofline/errors.hpp"

// The fit solves 3x3 normal equations with fixed-size Eigen types. (The calibration kernels compile Eigen with
// -march=native under a renamed namespace, so their instantiations never merge with the core's.)
#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

namespace roofline {

namespace {
constexpr const char* kKind = "rooflinepy-calibration-profile";

// 4 significant digits with an SI prefix: "3.35 TB/s", "1.2 us".
std::string si(double x, std::string_view unit) {
    struct P {
        double f;
        const char* p;
    };
    static constexpr P prefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""},
                                     {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}};
    const P* chosen = &prefixes[5];
    for (const auto& p : prefixes)
        if (std::abs(x) >= p.f) {
            chosen = &p;
            break;
        }
    if (x == 0) chosen = &prefixes[5];
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g %s", x / chosen->f, chosen->p);
    return std::string(buf) + std::string(unit);
}

std::string slug(std::string_view s) {
    std::string out;
    for (char c : to_lower(s)) {
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

bool is_iso8601_utc(const std::string& s) {
    // YYYY-MM-DDTHH:MM:SS[.fff]Z
    if (s.size() < 20 || s.back() != 'Z') return false;
    const char* pattern = "dddd-dd-ddTdd:dd:dd";
    for (std::size_t i = 0; i < 19; ++i) {
        const char p = pattern[i];
        if (p == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != p) return false;
    }
    if (s.size() > 20) {
        if (s[19] != '.' || s.size() < 22) return false;
        for (std::size_t i = 20; i + 1 < s.size(); ++i)
            if (!(s[i] >= '0' && s[i] <= '9')) return false;
    }
    const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
    const int hour = std::stoi(s.substr(11, 2)), minute = std::stoi(s.substr(14, 2)), sec = std::stoi(s.substr(17, 2));
    return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour < 24 && minute < 60 && sec <= 60;
}

std::vector<std::string> dtype_list() { return dtype_names(); }
}  // namespace

std::string_view ceiling_name(Ceiling c) {
    switch (c) {
        case Ceiling::bandwidth: return "bandwidth";
        case Ceiling::peak_flops: return "peak_flops";
        case Ceiling::gemm_flops: return "gemm_flops";
        case Ceiling::launch_overhead: return "launch_overhead";
    }
    return "bandwidth";
}

std::string_view ceiling_si_unit(Ceiling c) {
    switch (c) {
        case Ceiling::bandwidth: return "B/s";
        case Ceiling::peak_flops:
        case Ceiling::gemm_flops: return "FLOP/s";
        case Ceiling::launch_overhead: return "s";
    }
    return "B/s";
}

std::string utc_now_iso8601() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
#if defined(_WIN32)
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// ------------------------------------------------------------------------------------------------
// Fit

double RooflineFit::predict(double flops, double bytes) const {
    const double mem = bandwidth_Bps > 0 ? bytes / bandwidth_Bps : 0.0;
    const double comp = peak_flops > 0 ? flops / peak_flops : 0.0;
    return std::max(mem, comp) + launch_overhead_s;
}

namespace {
struct LinearFit {
    bool ok = false;
    double inv_bw = 0, inv_peak = 0, t0 = 0;
};

// Weighted linear least squares for (1/B, 1/F, t0): memory points give bytes/B + t0, compute points flops/F + t0.
// Columns are scaled to unit weighted norm before solving the 3x3 normal equations.
LinearFit solve_split(const std::vector<SweepPoint>& pts, const std::vector<bool>& memory_side, bool fit_t0, double t0_fixed) {
    using Eigen::Matrix3d;
    using Eigen::Vector3d;
    Vector3d scale = Vector3d::Zero();
    std::array<int, 3> count{0, 0, 0};
    for (std::size_t i = 0; i < pts.size(); ++i) {
        const double w = 1.0 / pts[i].seconds;
        const double x = memory_side[i] ? pts[i].bytes : pts[i].flops;
        const int col = memory_side[i] ? 0 : 1;
        scale[col] += (x * w) * (x * w);
        if (x > 0) ++count[static_cast<std::size_t>(col)];
        scale[2] += w * w;
        ++count[2];
    }
    const std::array<bool, 3> active{count[0] > 0, count[1] > 0, fit_t0};
    for (int c = 0; c < 3; ++c) scale[c] = scale[c] > 0 ? 1.0 / std::sqrt(scale[c]) : 1.0;

    Matrix3d ata = Matrix3d::Zero();
    Vector3d atb = Vector3d::Zero();
    for (std::size_t i = 0; i < pts.size(); ++i) {
        const double w = 1.0 / pts[i].seconds;
        Vector3d row = Vector3d::Zero();
        if (memory_side[i]) row[0] = pts[i].bytes * w * scale[0];
        else row[1] = pts[i].flops * w * scale[1];
        row[2] = fit_t0 ? w * scale[2] : 0.0;
        ata += row * row.transpose();
        atb += row * ((pts[i].seconds - (fit_t0 ? 0.0 : t0_fixed)) * w);
    }
    int n_active = 0;
    for (int c = 0; c < 3; ++c) {
        if (active[static_cast<std::size_t>(c)]) {
            ++n_active;
            continue;
        }
        ata.row(c).setZero();
        ata.col(c).setZero();
        ata(c, c) = 1.0;
        atb[c] = 0.0;
    }
    if (n_active == 0) return {};
    const auto qr = ata.colPivHouseholderQr();
    if (qr.rank() < 3) return {};
    const Vector3d y = qr.solve(atb);
    LinearFit f;
    f.inv_bw = active[0] ? y[0] * scale[0] : 0.0;
    f.inv_peak = active[1] ? y[1] * scale[1] : 0.0;
    f.t0 = active[2] ? y[2] * scale[2] : t0_fixed;
    f.ok = std::isfinite(f.inv_bw) && std::isfinite(f.inv_peak) && std::isfinite(f.t0) &&
           (!active[0] || f.inv_bw > 0) && (!active[1] || f.inv_peak > 0);
    return f;
}

// A split's fit, t0 constrained to >= 0.
LinearFit fit_split(const std::vector<SweepPoint>& pts, const std::vector<bool>& memory_side, const FitOptions& o) {
    LinearFit f = solve_split(pts, memory_side, o.fit_overhead, o.fixed_overhead_s);
    if (f.ok && f.t0 < 0) f = solve_split(pts, memory_side, false, 0.0);
    return f;
}

double rms_rel(const std::vector<SweepPoint>& pts, const RooflineFit& fit) {
    double sum = 0;
    for (const auto& p : pts) {
        const double r = (fit.predict(p.flops, p.bytes) - p.seconds) / p.seconds;
        sum += r * r;
    }
    return std::sqrt(sum / static_cast<double>(pts.size()));
}

RooflineFit to_fit(const LinearFit& f) {
    RooflineFit r;
    r.bandwidth_Bps = f.inv_bw > 0 ? 1.0 / f.inv_bw : 0.0;
    r.peak_flops = f.inv_peak > 0 ? 1.0 / f.inv_peak : 0.0;
    r.launch_overhead_s = std::max(0.0, f.t0);
    return r;
}
}  // namespace

RooflineFit fit_roofline(const std::vector<SweepPoint>& points, const FitOptions& options) {
    if (points.size() < 3)
        throw InvalidArgument("fit_roofline: needs at least 3 sweep points, got " + std::to_string(points.size()));
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        const std::string where = "fit_roofline: point " + std::to_string(i);
        if (!(std::isfinite(p.seconds) && p.seconds > 0))
            throw InvalidArgument(where + ": seconds must be finite and > 0, got " + std::to_string(p.seconds));
        if (!(std::isfinite(p.flops) && p.flops >= 0))
            throw InvalidArgument(where + ": flops must be finite and >= 0, got " + std::to_string(p.flops));
        if (!(std::isfinite(p.bytes) && p.bytes >= 0))
            throw InvalidArgument(where + ": bytes must be finite and >= 0, got " + std::to_string(p.bytes));
        if (p.flops == 0 && p.bytes == 0)
            throw InvalidArgument(where + ": flops and bytes are both 0; a sweep point must do work");
    }
    if (!(std::isfinite(options.fixed_overhead_s) && options.fixed_overhead_s >= 0))
        throw InvalidArgument("fit_roofline: fixed_overhead_s must be finite and >= 0, got " +
                              std::to_string(options.fixed_overhead_s));
    if (options.max_iterations < 1)
        throw InvalidArgument("fit_roofline: max_iterations must be >= 1, got " + std::to_string(options.max_iterations));

    // Order by arithmetic intensity; a split at s puts the first s points on the memory side.
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    auto ai = [&](std::size_t i) {
        return points[i].bytes > 0 ? points[i].flops / points[i].bytes : std::numeric_limits<double>::infinity();
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ai(a) < ai(b); });

    const std::size_t n = points.size();
    RooflineFit best;
    std::vector<bool> best_side;
    double best_res = std::numeric_limits<double>::infinity();
    for (std::size_t s = 0; s <= n; ++s) {
        std::vector<bool> side(n, false);
        bool consistent = true;
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t i = order[j];
            side[i] = j < s;
            // A point with no bytes cannot be memory-bound, one with no FLOPs cannot be compute-bound.
            if ((side[i] && points[i].bytes == 0) || (!side[i] && points[i].flops == 0)) consistent = false;
        }
        if (!consistent) continue;
        const LinearFit lf = fit_split(points, side, options);
        if (!lf.ok) continue;
        RooflineFit f = to_fit(lf);
        const double res = rms_rel(points, f);
        if (res < best_res) {
            best_res = res;
            best = f;
            best_side = side;
        }
    }
    if (best_side.empty())
        throw InvalidArgument("fit_roofline: no split of the " + std::to_string(n) +
                              " points gives a positive bandwidth and peak; are the points from one sweep?");

    // Reclassify by the fitted ridge and refit until the classification is stable.
    int iterations = 0;
    for (; iterations < options.max_iterations; ++iterations) {
        std::vector<bool> side(n);
        for (std::size_t i = 0; i < n; ++i) {
            const double mem = best.bandwidth_Bps > 0 ? points[i].bytes / best.bandwidth_Bps : 0.0;
            const double comp = best.peak_flops > 0 ? points[i].flops / best.peak_flops : 0.0;
            side[i] = points[i].flops == 0 || (points[i].bytes > 0 && mem >= comp);
        }
        if (side == best_side) break;
        const LinearFit lf = fit_split(points, side, options);
        if (!lf.ok) break;
        RooflineFit f = to_fit(lf);
        const double res = rms_rel(points, f);
        if (!(res <= best_res)) break;  // the exhaustive split is already better: keep it
        best = f;
        best_res = res;
        best_side = side;
    }
    best.iterations = iterations + 1;
    best.residual_rms_rel = best_res;
    for (bool m : best_side) (m ? best.memory_points : best.compute_points)++;
    return best;
}

// ------------------------------------------------------------------------------------------------
// Profile: parse / write

namespace {
using detail::JsonObject;

Level read_level(JsonObject& o, const std::string& key) {
    return parse_level(o.choice(key, {"dram", "l2", "sram"}));
}

std::optional<Level> opt_level(JsonObject& o, const std::string& key) {
    if (!o.has(key)) {
        o.raw(key);
        return std::nullopt;
    }
    return read_level(o, key);
}

std::optional<DType> opt_dtype(JsonObject& o, const std::string& key) {
    if (!o.has(key)) {
        o.raw(key);
        return std::nullopt;
    }
    return parse_dtype(o.choice(key, dtype_list()));
}

std::optional<Unit> opt_unit(JsonObject& o, const std::string& key) {
    if (!o.has(key)) {
        o.raw(key);
        return std::nullopt;
    }
    return parse_unit(o.choice(key, {"vector", "matrix"}));
}

ProfileDevice read_device(JsonObject o) {
    ProfileDevice d;
    d.name = o.nonempty_string("name");
    d.vendor = o.nonempty_string("vendor");
    d.kind = o.choice("kind", {"cpu", "gpu"});
    d.host = o.opt_string("host");
    d.os = o.opt_string("os");
    d.compiler = o.opt_string("compiler");
    d.driver = o.opt_string("driver");
    d.toolkit = o.opt_string("toolkit");
    d.compute_capability = o.opt_string("compute_capability");
    d.threads = static_cast<int>(o.opt_integer("threads", 1, 1 << 24).value_or(0));
    d.cores = static_cast<int>(o.opt_integer("cores", 1, 1 << 24).value_or(0));
    d.sm_count = static_cast<int>(o.opt_integer("sm_count", 1, 1 << 24).value_or(0));
    d.clock_hz = o.opt_number("clock_MHz", 0, 1e6, true).value_or(0) * 1e6;
    d.memory_bytes = o.opt_number("memory_bytes", 0, 1e18, true).value_or(0);
    d.l2_bytes = o.opt_number("l2_bytes", 0, 1e15, true).value_or(0);
    d.shared_memory_per_unit_bytes = o.opt_number("shared_memory_per_unit_bytes", 0, 1e12, true).value_or(0);
    const auto& caches = o.array("caches", false);
    std::set<Level> mapped;
    for (std::size_t i = 0; i < caches.size(); ++i) {
        JsonObject c(caches[i], o.field("caches") + "[" + std::to_string(i) + "]", o.origin());
        CacheInfo ci;
        ci.name = c.nonempty_string("name");
        ci.size_bytes = c.number("size_bytes", 0, 1e15, true);
        ci.instances = static_cast<int>(c.integer("instances", 1, 1 << 24));
        ci.shared_by_threads = static_cast<int>(c.opt_integer("shared_by_threads", 1, 1 << 24).value_or(0));
        ci.model_level = opt_level(c, "model_level");
        c.finish();
        if (ci.model_level && !mapped.insert(*ci.model_level).second)
            c.fail("model_level", "'" + std::string(level_name(*ci.model_level)) +
                                      "' is already taken by an earlier cache; at most one cache per model level");
        d.caches.push_back(ci);
    }
    const auto& features = o.array("features", false);
    for (const auto& f : features) {
        if (!f.is_string()) o.fail("features", "must hold strings, got " + f.dump());
        d.features.push_back(f.get<std::string>());
    }
    const auto& extra = o.raw("extra");
    if (!extra.is_null()) {
        if (!extra.is_object()) o.fail("extra", "must be a JSON object, got " + extra.dump());
        for (auto it = extra.begin(); it != extra.end(); ++it) {
            if (!(it->is_string() || it->is_number() || it->is_boolean()))
                o.fail("extra." + it.key(), "must be a string, number or boolean, got " + it->dump());
            d.extra.emplace_back(it.key(), it->dump());
        }
    }
    o.finish();
    return d;
}

CeilingMeasurement read_measurement(JsonObject o) {
    CeilingMeasurement m;
    const std::string ceiling = o.choice("ceiling", {"bandwidth", "peak_flops", "gemm_flops", "launch_overhead"});
    m.ceiling = ceiling == "bandwidth"    ? Ceiling::bandwidth
                : ceiling == "peak_flops" ? Ceiling::peak_flops
                : ceiling == "gemm_flops" ? Ceiling::gemm_flops
                                          : Ceiling::launch_overhead;
    const auto level = opt_level(o, "level");
    const auto dtype = opt_dtype(o, "dtype");
    const auto unit = opt_unit(o, "unit");
    if (m.ceiling == Ceiling::bandwidth) {
        if (!level) o.fail("level", "is required for a bandwidth measurement (one of dram, l2, sram)");
        m.level = *level;
    } else if (level) {
        o.fail("level", "is only allowed for a bandwidth measurement, this one is " + ceiling);
    }
    if (m.ceiling == Ceiling::peak_flops || m.ceiling == Ceiling::gemm_flops) {
        if (!dtype) o.fail("dtype", "is required for a " + ceiling + " measurement (one of " + join(dtype_list()) + ")");
        if (!unit) o.fail("unit", "is required for a " + ceiling + " measurement (vector or matrix)");
        m.dtype = *dtype;
        m.unit = *unit;
        if (m.ceiling == Ceiling::gemm_flops && m.unit != Unit::matrix)
            o.fail("unit", "must be 'matrix' for gemm_flops (the model's matrix ops are GEMMs), got 'vector'");
    } else {
        if (dtype) o.fail("dtype", "is only allowed for peak_flops and gemm_flops, this one is " + ceiling);
        if (unit) o.fail("unit", "is only allowed for peak_flops and gemm_flops, this one is " + ceiling);
    }
    m.cache = o.opt_string("cache");
    m.kernel = o.nonempty_string("kernel");
    const auto& sizes = o.raw("sizes");
    if (!sizes.is_null()) {
        if (!sizes.is_object()) o.fail("sizes", "must be a JSON object of named numbers, got " + sizes.dump());
        for (auto it = sizes.begin(); it != sizes.end(); ++it) {
            if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
                o.fail("sizes." + it.key(), "must be a number >= 0, got " + it->dump());
            m.sizes.emplace_back(it.key(), it->get<double>());
        }
    }
    m.threads = static_cast<int>(o.opt_integer("threads", 1, 1LL << 40).value_or(0));
    m.repetitions = o.integer("repetitions", 1, 1LL << 40);
    m.warmup = o.opt_integer("warmup", 0, 1LL << 40).value_or(0);
    const std::string want = std::string(ceiling_si_unit(m.ceiling));
    const std::string su = o.choice("si_unit", {"B/s", "FLOP/s", "s"});
    if (su != want) o.fail("si_unit", "must be '" + want + "' for a " + ceiling + " measurement, got '" + su + "'");
    m.min = o.number("min", 0, 1e30, true);
    m.median = o.number("median", 0, 1e30, true);
    m.max = o.number("max", 0, 1e30, true);
    // A measured bandwidth or peak is at least 1 B/s or 1 FLOP/s: every time on a device built from it stays finite.
    if (m.ceiling != Ceiling::launch_overhead)
        for (const auto& [key, v] : {std::pair<const char*, double>{"min", m.min}, {"median", m.median}, {"max", m.max}})
            if (v < 1.0) {
                std::ostringstream os;
                os << "must be at least 1 " << want << " for a " << ceiling << " measurement, got " << v;
                o.fail(key, os.str());
            }
    if (!(m.min <= m.median && m.median <= m.max)) {
        std::ostringstream os;
        os << "must lie within [min, max] = [" << m.min << ", " << m.max << "], got " << m.median;
        o.fail("median", os.str());
    }
    const auto& verified = o.raw("verified");
    if (verified.is_null()) o.fail("verified", "is required but missing (true when the output matched a reference)");
    m.verified = o.opt_bool("verified", false);
    m.feeds_model = o.opt_bool("feeds_model", true);
    m.notes = o.opt_string("notes");
    o.finish();
    return m;
}

ProfileFit read_fit(JsonObject o) {
    ProfileFit f;
    f.name = o.nonempty_string("name");
    f.kernel = o.nonempty_string("kernel");
    f.dtype = opt_dtype(o, "dtype");
    f.unit = opt_unit(o, "unit");
    f.level = opt_level(o, "level");
    f.model = o.opt_string("model", f.model);
    f.fit.bandwidth_Bps = o.number("bandwidth_Bps", 0, 1e30);
    f.fit.peak_flops = o.number("peak_flops_per_s", 0, 1e30);
    f.fit.launch_overhead_s = o.number("launch_overhead_s", 0, 1e6);
    f.fit.residual_rms_rel = o.number("residual_rms_rel", 0, 1e6);
    f.fit.iterations = static_cast<int>(o.opt_integer("iterations", 0, 1 << 20).value_or(0));
    const auto& pts = o.array("points", true);
    if (pts.size() < 3) o.fail("points", "must hold at least 3 points, got " + std::to_string(pts.size()));
    for (std::size_t i = 0; i < pts.size(); ++i) {
        JsonObject p(pts[i], o.field("points") + "[" + std::to_string(i) + "]", o.origin());
        SweepPoint sp;
        sp.k = p.opt_number("k", 0, 1e30).value_or(-1);
        sp.flops = p.number("flops", 0, 1e30);
        sp.bytes = p.number("bytes", 0, 1e30);
        sp.seconds = p.number("seconds", 0, 1e9, true);
        p.finish();
        f.points.push_back(sp);
    }
    for (const auto& sp : f.points) {
        const double mem = f.fit.bandwidth_Bps > 0 ? sp.bytes / f.fit.bandwidth_Bps : 0.0;
        const double comp = f.fit.peak_flops > 0 ? sp.flops / f.fit.peak_flops : 0.0;
        (sp.bytes > 0 && mem >= comp ? f.fit.memory_points : f.fit.compute_points)++;
    }
    o.finish();
    return f;
}
}  // namespace

Profile parse_profile(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    JsonObject o(j, "", std::string(origin));
    Profile p;
    p.origin = origin;
    p.schema_version = static_cast<int>(o.integer("schema_version", 1, 1));
    const std::string kind = o.string("kind");
    if (kind != kKind)
        o.fail("kind", "must be '" + std::string(kKind) + "' (is this a calibration profile?), got '" + kind + "'");
    p.date = o.string("date");
    if (!is_iso8601_utc(p.date))
        o.fail("date", "must be ISO 8601 UTC like 2025-06-01T12:00:00Z, got '" + p.date + "'");
    {
        auto t = o.object("tool");
        p.tool_name = t.nonempty_string("name");
        p.tool_version = t.nonempty_string("version");
        p.tool_options = t.opt_string("options");
        t.finish();
    }
    p.device = read_device(o.object("device"));
    const auto& ms = o.array("measurements", true);
    for (std::size_t i = 0; i < ms.size(); ++i)
        p.measurements.push_back(read_measurement(JsonObject(ms[i], "measurements[" + std::to_string(i) + "]", p.origin)));
    const auto& fits = o.array("fits", false);
    for (std::size_t i = 0; i < fits.size(); ++i)
        p.fits.push_back(read_fit(JsonObject(fits[i], "fits[" + std::to_string(i) + "]", p.origin)));
    p.notes = o.opt_string("notes");
    o.finish();
    return p;
}

Profile load_profile(const std::string& path) { return parse_profile(detail::read_text_file(path), path); }

std::string profile_to_json(const Profile& p, int indent) {
    using J = nlohmann::ordered_json;
    J j;
    j["schema_version"] = p.schema_version;
    j["kind"] = kKind;
    j["date"] = p.date;
    J tool{{"name", p.tool_name}, {"version", p.tool_version}};
    if (!p.tool_options.empty()) tool["options"] = p.tool_options;
    j["tool"] = tool;
    const auto& d = p.device;
    J dev{{"name", d.name}, {"vendor", d.vendor}, {"kind", d.kind}};
    auto opt_s = [&](const char* k, const std::string& v) {
        if (!v.empty()) dev[k] = v;
    };
    opt_s("host", d.host);
    opt_s("os", d.os);
    opt_s("compiler", d.compiler);
    opt_s("driver", d.driver);
    opt_s("toolkit", d.toolkit);
    opt_s("compute_capability", d.compute_capability);
    if (d.threads) dev["threads"] = d.threads;
    if (d.cores) dev["cores"] = d.cores;
    if (d.sm_count) dev["sm_count"] = d.sm_count;
    if (d.clock_hz > 0) dev["clock_MHz"] = d.clock_hz / 1e6;
    if (d.memory_bytes > 0) dev["memory_bytes"] = d.memory_bytes;
    if (d.l2_bytes > 0) dev["l2_bytes"] = d.l2_bytes;
    if (d.shared_memory_per_unit_bytes > 0) dev["shared_memory_per_unit_bytes"] = d.shared_memory_per_unit_bytes;
    if (!d.caches.empty()) {
        J cs = J::array();
        for (const auto& c : d.caches) {
            J cj{{"name", c.name}, {"size_bytes", c.size_bytes}, {"instances", c.instances}};
            if (c.shared_by_threads) cj["shared_by_threads"] = c.shared_by_threads;
            if (c.model_level) cj["model_level"] = level_name(*c.model_level);
            cs.push_back(cj);
        }
        dev["caches"] = cs;
    }
    if (!d.features.empty()) dev["features"] = d.features;
    if (!d.extra.empty()) {
        J ex = J::object();
        for (const auto& [k, v] : d.extra) ex[k] = J::parse(v);
        dev["extra"] = ex;
    }
    j["device"] = dev;
    J ms = J::array();
    for (const auto& m : p.measurements) {
        J mj{{"ceiling", ceiling_name(m.ceiling)}};
        if (m.ceiling == Ceiling::bandwidth) mj["level"] = level_name(m.level);
        if (!m.cache.empty()) mj["cache"] = m.cache;
        if (m.ceiling == Ceiling::peak_flops || m.ceiling == Ceiling::gemm_flops) {
            mj["dtype"] = dtype_name(m.dtype);
            mj["unit"] = unit_name(m.unit);
        }
        mj["kernel"] = m.kernel;
        if (!m.sizes.empty()) {
            J s = J::object();
            for (const auto& [k, v] : m.sizes) s[k] = v;
            mj["sizes"] = s;
        }
        if (m.threads) mj["threads"] = m.threads;
        mj["repetitions"] = m.repetitions;
        if (m.warmup) mj["warmup"] = m.warmup;
        mj["si_unit"] = ceiling_si_unit(m.ceiling);
        mj["min"] = m.min;
        mj["median"] = m.median;
        mj["max"] = m.max;
        mj["verified"] = m.verified;
        if (!m.feeds_model) mj["feeds_model"] = false;
        if (!m.notes.empty()) mj["notes"] = m.notes;
        ms.push_back(mj);
    }
    j["measurements"] = ms;
    if (!p.fits.empty()) {
        J fs = J::array();
        for (const auto& f : p.fits) {
            J fj{{"name", f.name}, {"kernel", f.kernel}};
            if (f.dtype) fj["dtype"] = dtype_name(*f.dtype);
            if (f.unit) fj["unit"] = unit_name(*f.unit);
            if (f.level) fj["level"] = level_name(*f.level);
            if (!f.model.empty()) fj["model"] = f.model;
            fj["bandwidth_Bps"] = f.fit.bandwidth_Bps;
            fj["peak_flops_per_s"] = f.fit.peak_flops;
            fj["launch_overhead_s"] = f.fit.launch_overhead_s;
            fj["residual_rms_rel"] = f.fit.residual_rms_rel;
            fj["iterations"] = f.fit.iterations;
            J pts = J::array();
            for (const auto& sp : f.points) {
                J pj;
                if (sp.k >= 0) pj["k"] = sp.k;
                pj["flops"] = sp.flops;
                pj["bytes"] = sp.bytes;
                pj["seconds"] = sp.seconds;
                pts.push_back(pj);
            }
            fj["points"] = pts;
            fs.push_back(fj);
        }
        j["fits"] = fs;
    }
    if (!p.notes.empty()) j["notes"] = p.notes;
    return j.dump(indent);
}

// ------------------------------------------------------------------------------------------------
// Applying a profile

namespace {
bool same_target(const CeilingMeasurement& m, Ceiling ceiling, Level level, DType dtype, Unit unit) {
    const bool flops = ceiling == Ceiling::peak_flops || ceiling == Ceiling::gemm_flops;
    const bool m_flops = m.ceiling == Ceiling::peak_flops || m.ceiling == Ceiling::gemm_flops;
    if (flops) return m_flops && m.dtype == dtype && m.unit == unit;
    if (m.ceiling != ceiling) return false;
    return ceiling != Ceiling::bandwidth || m.level == level;
}
}  // namespace

const CeilingMeasurement* Profile::best(Ceiling ceiling, Level level, DType dtype, Unit unit) const {
    const CeilingMeasurement* chosen = nullptr;
    for (const auto& m : measurements) {
        if (!m.verified || !m.feeds_model || !same_target(m, ceiling, level, dtype, unit)) continue;
        const bool better = !chosen || (ceiling == Ceiling::launch_overhead ? m.median < chosen->median
                                                                            : m.median > chosen->median);
        if (better) chosen = &m;
    }
    return chosen;
}

std::string Profile::provenance_prefix() const {
    return "measured by " + tool_name + " " + tool_version + " on " + date + " (" + device.name + ")";
}

namespace {
std::string measured_source(const Profile& p, const CeilingMeasurement& m) {
    return p.provenance_prefix() + ": " + m.kernel + ", median of " + std::to_string(m.repetitions) + " runs";
}

std::string above_text(double measured, double datasheet, std::string_view unit) {
    return "measured above datasheet: " + si(measured, unit) + " vs " + si(datasheet, unit);
}

// The distinct (dtype, unit) targets of the profile's applicable FLOP measurements, in order of appearance.
std::vector<std::pair<DType, Unit>> flop_targets(const Profile& p) {
    std::vector<std::pair<DType, Unit>> out;
    for (const auto& m : p.measurements) {
        if (m.ceiling != Ceiling::peak_flops && m.ceiling != Ceiling::gemm_flops) continue;
        if (!m.verified || !m.feeds_model) continue;
        const std::pair<DType, Unit> key{m.dtype, m.unit};
        if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
    return out;
}

const CacheInfo* cache_for(const Profile& p, Level l) {
    for (const auto& c : p.device.caches)
        if (c.model_level && *c.model_level == l) return &c;
    return nullptr;
}

// What the profile says about a level's capacity: total bytes, and bytes per compute unit for SRAM.
std::pair<double, double> profile_capacity(const Profile& p, Level l, int units) {
    if (const auto* c = cache_for(p, l)) {
        if (l == Level::sram) return {c->size_bytes * units, c->size_bytes};
        return {c->size_bytes * c->instances, 0.0};
    }
    if (l == Level::l2 && p.device.l2_bytes > 0) return {p.device.l2_bytes, 0.0};
    if (l == Level::sram && p.device.shared_memory_per_unit_bytes > 0)
        return {p.device.shared_memory_per_unit_bytes * units, p.device.shared_memory_per_unit_bytes};
    if (l == Level::dram && p.device.memory_bytes > 0) return {p.device.memory_bytes, 0.0};
    return {0.0, 0.0};
}

std::string level_type(const Profile& p, Level l) {
    if (const auto* c = cache_for(p, l)) return c->name;
    switch (l) {
        case Level::dram: return p.device.kind == "gpu" ? "device memory" : "DRAM";
        case Level::l2: return "L2";
        case Level::sram: return p.device.kind == "gpu" ? "shared memory per SM" : "cache per core";
    }
    return "";
}

void append_note(std::string& notes, const std::string& text) {
    if (!notes.empty()) notes += " ";
    notes += text;
}
}  // namespace

Device calibrated(const Device& base, const Profile& p) {
    if ((base.kind == "gpu" && p.device.kind == "cpu") || (base.kind == "cpu" && p.device.kind == "gpu"))
        throw InvalidArgument(p.origin + ": field 'device.kind' is '" + p.device.kind + "' ('" + p.device.name +
                              "') but device '" + base.id + "' is a " + base.kind +
                              "; apply a profile to the kind of device it measured");
    // a GPU measured by one vendor's tool says nothing about another vendor's part (an NVIDIA profile on an Apple
    // GPU or SoC); a CPU profile measures the host, which may be any vendor's, so only GPU profiles are held to it
    if (base.kind != "cpu" && p.device.kind == "gpu" && !p.device.vendor.empty() && !base.vendor.empty() &&
        to_lower(p.device.vendor) != to_lower(base.vendor))
        throw InvalidArgument(p.origin + ": field 'device.vendor' is '" + p.device.vendor + "' ('" + p.device.name +
                              "') but device '" + base.id + "' is made by '" + base.vendor +
                              "'; apply a profile to the device it measured");
    Device d = base;
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        const auto l = static_cast<Level>(i);
        const CeilingMeasurement* m = p.best(Ceiling::bandwidth, l);
        if (!m) continue;
        MemoryLevel& lv = d.memory[i];
        const std::string src = measured_source(p, *m);
        if (!lv.present) {
            const auto [total, per_unit] = profile_capacity(p, l, d.compute_units);
            if (total <= 0 || (l == Level::sram && per_unit <= 0)) {
                append_note(d.notes, "Calibration (" + p.origin + "): " + std::string(level_name(l)) +
                                         " bandwidth measured but the device has no " + std::string(level_name(l)) +
                                         " level and the profile gives no capacity; not applied.");
                continue;
            }
            lv.present = true;
            lv.type = level_type(p, l);
            lv.capacity_bytes = total;
            lv.per_unit_bytes = per_unit;
            lv.bandwidth_Bps = m->median;
            lv.measured = true;
            lv.provenance = {src + "; capacity from the profile", ""};
            continue;
        }
        const double old = lv.bandwidth_Bps;
        const Provenance old_prov = lv.provenance;
        lv.bandwidth_Bps = m->median;
        lv.measured = true;
        lv.provenance.source = src + (old > 0 ? "; datasheet " + si(old, "B/s") : "") + "; capacity and type: " + old_prov.source;
        if (old > 0 && m->median > old)
            lv.provenance.uncertain =
                above_text(m->median, old, "B/s") + (old_prov.uncertain.empty() ? "" : "; " + old_prov.uncertain);
    }
    for (const auto& [dtype, unit] : flop_targets(p)) {
        const CeilingMeasurement* m = p.best(Ceiling::peak_flops, Level::dram, dtype, unit);
        if (!m) continue;
        const std::string src = measured_source(p, *m);
        auto it = std::find_if(d.compute.begin(), d.compute.end(),
                               [&, dt = dtype, un = unit](const ComputePeak& c) { return c.format == dt && c.unit == un; });
        if (it == d.compute.end()) {
            ComputePeak c;
            c.format = dtype;
            c.unit = unit;
            c.flops_per_s = m->median;
            c.measured = true;
            c.provenance = {src + "; the datasheet lists no " + std::string(dtype_name(dtype)) + "/" +
                                std::string(unit_name(unit)) + " peak",
                            ""};
            d.compute.push_back(c);
            continue;
        }
        const double old = it->flops_per_s;
        const Provenance old_prov = it->provenance;
        it->flops_per_s = m->median;
        it->measured = true;
        it->provenance.source = src + "; datasheet " + si(old, "FLOP/s") + " (" + old_prov.source + ")";
        it->provenance.uncertain =
            m->median > old ? above_text(m->median, old, "FLOP/s") + (old_prov.uncertain.empty() ? "" : "; " + old_prov.uncertain)
                            : old_prov.uncertain;
    }
    if (const CeilingMeasurement* m = p.best(Ceiling::launch_overhead)) {
        const double old = d.efficiency.launch_overhead_s;
        d.efficiency.launch_overhead_s = m->median;
        d.efficiency.provenance.source += "; launch overhead " + measured_source(p, *m) + " (was " + si(old, "s") + ")";
    }
    append_note(d.notes, "Calibrated with " + p.origin + ", " + p.provenance_prefix() + ".");
    return d;
}

Device device_from_profile(const Profile& p) {
    const auto& pd = p.device;
    const bool gpu = pd.kind == "gpu";
    auto missing = [&](const std::string& field, const std::string& why) {
        return InvalidArgument(p.origin + ": field '" + field + "' is required to build a device from the profile (" +
                               why + ")");
    };
    Device d;
    d.origin = p.origin;
    d.name = pd.name;
    d.kind = gpu ? "gpu" : "cpu";
    if (gpu) {
        static const std::vector<std::string> vendors{"nvidia", "amd", "apple", "intel", "google"};
        const std::string v = to_lower(pd.vendor);
        d.vendor = std::find(vendors.begin(), vendors.end(), v) != vendors.end() ? v : "host";
        d.family = "measured-gpu";
        if (pd.sm_count <= 0) throw missing("device.sm_count", "the device's compute units");
        d.compute_units = pd.sm_count;
        d.compute_unit_name = "SM";
        d.id = slug(pd.name);
    } else {
        d.vendor = "host";
        d.family = "host-cpu";
        if (pd.threads <= 0) throw missing("device.threads", "the device's compute units: the threads measured");
        d.compute_units = pd.threads;
        d.compute_unit_name = "core";
        d.id = "host-" + slug(pd.host.empty() ? pd.name : pd.host);
    }
    if (d.id.empty() || d.id == "host-") d.id = gpu ? "measured-gpu" : "host-cpu";
    d.architecture = pd.compute_capability.empty() ? "" : "compute capability " + pd.compute_capability;
    const std::string prefix = p.provenance_prefix();
    d.compute_units_provenance = {prefix + ": " + (gpu ? "multiprocessor count" : "threads the kernels ran on"), ""};
    if (pd.clock_hz <= 0) throw missing("device.clock_MHz", "the hardware_db schema needs a clock");
    d.boost_clock_hz = pd.clock_hz;
    d.clocks_provenance = {prefix + ": clock as the runtime reports it", ""};

    const CeilingMeasurement* dram = p.best(Ceiling::bandwidth, Level::dram);
    if (!dram) throw missing("measurements", "a verified bandwidth measurement at level 'dram' that feeds the model");
    if (pd.memory_bytes <= 0) throw missing("device.memory_bytes", "the DRAM capacity");
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        const auto l = static_cast<Level>(i);
        const CeilingMeasurement* m = p.best(Ceiling::bandwidth, l);
        const auto [total, per_unit] = profile_capacity(p, l, d.compute_units);
        if (total <= 0 || (l == Level::sram && per_unit <= 0)) continue;
        MemoryLevel& lv = d.memory[i];
        lv.present = true;
        lv.type = level_type(p, l);
        lv.capacity_bytes = total;
        lv.per_unit_bytes = per_unit;
        if (m) {
            lv.bandwidth_Bps = m->median;
            lv.measured = true;
        }
        lv.provenance = {m ? measured_source(p, *m) + "; capacity as the runtime reports it"
                           : prefix + ": capacity as the runtime reports it; bandwidth not measured",
                         ""};
    }
    for (const auto& [dtype, unit] : flop_targets(p)) {
        const CeilingMeasurement* m = p.best(Ceiling::peak_flops, Level::dram, dtype, unit);
        ComputePeak c;
        c.format = dtype;
        c.unit = unit;
        c.flops_per_s = m->median;
        c.measured = true;
        c.provenance = {measured_source(p, *m), ""};
        d.compute.push_back(c);
    }
    if (d.compute.empty())
        throw missing("measurements", "at least one verified peak_flops or gemm_flops measurement that feeds the model");
    d.efficiency.dram_bandwidth_fraction = 1.0;
    d.efficiency.compute_fraction = 1.0;
    // A library GEMV measured next to the STREAM kernels (a CPU profile): the fraction of the DRAM ceiling a real
    // matrix kernel reaches, applied to derated times (the ceiling itself stays the best measured bandwidth).
    const CeilingMeasurement* gemv = nullptr;
    for (const auto& m : p.measurements)
        if (m.ceiling == Ceiling::bandwidth && m.level == Level::dram && m.verified && !m.feeds_model &&
            m.kernel.rfind("eigen_gemv", 0) == 0 && m.median > 0 && (!gemv || m.median > gemv->median))
            gemv = &m;
    std::string derate = "every ceiling is measured, so none is derated";
    if (gemv) {
        d.efficiency.dram_bandwidth_fraction = std::clamp(gemv->median / dram->median, 1e-3, 1.0);
        d.efficiency.dram_applies_to_measured = true;
        derate = "DRAM efficiency " + std::to_string(d.efficiency.dram_bandwidth_fraction).substr(0, 5) + " = " + gemv->kernel +
                 " " + si(gemv->median, "B/s") + " over the DRAM ceiling " + si(dram->median, "B/s") + " (" + dram->kernel +
                 "), " + measured_source(p, *gemv) + "; compute not derated (measured)";
    }
    if (const CeilingMeasurement* m = p.best(Ceiling::launch_overhead)) {
        d.efficiency.launch_overhead_s = m->median;
        d.efficiency.provenance = {derate + "; launch overhead " + measured_source(p, *m), ""};
    } else {
        d.efficiency.provenance = {derate + "; launch overhead not measured (0)", ""};
    }
    d.notes = "The host as measured: " + prefix + ", profile " + p.origin + ".";
    return d;
}

std::string datasheet_device_id(std::string_view runtime_name, const DeviceDB& db) {
    static const std::set<std::string> drop{"nvidia", "amd", "intel", "apple", "r", "tm", "corporation"};
    std::vector<std::string> tokens;
    std::string cur;
    for (char c : to_lower(runtime_name) + " ") {
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum) {
            cur += c;
        } else if (!cur.empty()) {
            if (!drop.count(cur)) tokens.push_back(cur);
            cur.clear();
        }
    }
    for (std::size_t start = 0; start < tokens.size(); ++start)
        for (std::size_t end = tokens.size(); end > start; --end) {
            std::string key;
            for (std::size_t i = start; i < end; ++i) key += (i > start ? "-" : "") + tokens[i];
            if (db.contains(key)) return db.get(key).id;
        }
    return "";
}

std::vector<ReportRow> calibration_report(const Profile& p, const Device* ds) {
    std::vector<ReportRow> rows;
    for (const auto& m : p.measurements) {
        ReportRow r;
        r.ceiling = std::string(ceiling_name(m.ceiling));
        r.cache = m.cache;
        r.kernel = m.kernel;
        r.si_unit = std::string(ceiling_si_unit(m.ceiling));
        r.measured = m.median;
        r.min = m.min;
        r.max = m.max;
        r.repetitions = m.repetitions;
        r.verified = m.verified;
        r.feeds_model = m.feeds_model;
        r.applied = p.best(m.ceiling, m.level, m.dtype, m.unit) == &m;
        if (m.ceiling == Ceiling::bandwidth) {
            r.level = std::string(level_name(m.level));
            if (ds && ds->has_bandwidth(m.level)) {
                r.datasheet = ds->bandwidth(m.level);
                r.source = ds->level(m.level).provenance.source;
            }
        } else if (m.ceiling == Ceiling::launch_overhead) {
            if (ds && ds->efficiency.launch_overhead_s > 0) {
                r.datasheet = ds->efficiency.launch_overhead_s;
                r.source = ds->efficiency.provenance.source;
            }
        } else {
            r.dtype = std::string(dtype_name(m.dtype));
            r.unit = std::string(unit_name(m.unit));
            if (ds)
                if (const ComputePeak* pk = ds->find_peak(m.dtype, m.unit)) {
                    r.datasheet = pk->flops_per_s;
                    r.source = pk->provenance.source;
                }
        }
        if (r.datasheet > 0) r.ratio = r.measured / r.datasheet;
        rows.push_back(r);
    }
    for (const auto& f : p.fits) {
        char note[128];
        std::snprintf(note, sizeof note, "fit over %zu points, %d memory-side, residual %.2f %% rms",
                      f.points.size(), f.fit.memory_points, f.fit.residual_rms_rel * 100);
        auto base = [&](const std::string& what, const std::string& unit, double value) {
            ReportRow r;
            r.ceiling = f.name + ":" + what;
            r.kernel = f.kernel;
            r.si_unit = unit;
            r.measured = value;
            r.min = r.max = value;
            r.repetitions = static_cast<long long>(f.points.size());
            r.note = note;
            return r;
        };
        if (f.fit.bandwidth_Bps > 0) {
            ReportRow r = base("bandwidth", "B/s", f.fit.bandwidth_Bps);
            const Level l = f.level.value_or(Level::dram);
            r.level = std::string(level_name(l));
            if (ds && ds->has_bandwidth(l)) {
                r.datasheet = ds->bandwidth(l);
                r.source = ds->level(l).provenance.source;
            }
            rows.push_back(r);
        }
        if (f.fit.peak_flops > 0) {
            ReportRow r = base("peak_flops", "FLOP/s", f.fit.peak_flops);
            if (f.dtype) r.dtype = std::string(dtype_name(*f.dtype));
            if (f.unit) r.unit = std::string(unit_name(*f.unit));
            if (ds && f.dtype)
                if (const ComputePeak* pk = ds->find_peak(*f.dtype, f.unit.value_or(Unit::vector))) {
                    r.datasheet = pk->flops_per_s;
                    r.source = pk->provenance.source;
                }
            rows.push_back(r);
        }
        ReportRow r = base("launch_overhead", "s", f.fit.launch_overhead_s);
        if (ds && ds->efficiency.launch_overhead_s > 0) {
            r.datasheet = ds->efficiency.launch_overhead_s;
            r.source = ds->efficiency.provenance.source;
        }
        rows.push_back(r);
    }
    for (auto& r : rows)
        if (r.datasheet > 0) r.ratio = r.measured / r.datasheet;
    return rows;
}

}  // namespace roofline
