#include "roofline/device.hpp"

#include "roofline/data.hpp"

#include "json_reader.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

namespace roofline {

namespace {
constexpr double kGB = 1e9;
constexpr double kKiB = 1024.0, kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * 1024.0 * 1024.0;
// Floors of the ceilings (1 B/s, 1 FLOP/s, 0.1 % of a ceiling): any positive number the hardware could have, and
// enough to keep every time finite (an op counts at most kMaxOpCount FLOPs or bytes).
constexpr double kMinGBps = 1e-9, kMinTFLOPS = 1e-12, kMinEfficiency = 1e-3;
constexpr const char* kLevelNames[kNumLevels] = {"dram", "l2", "sram"};
}  // namespace

std::string_view level_name(Level l) { return kLevelNames[static_cast<std::size_t>(l)]; }

Level parse_level(std::string_view name) {
    const std::string s = to_lower(name);
    if (s == "dram" || s == "hbm" || s == "memory" || s == "gddr" || s == "unified") return Level::dram;
    if (s == "l2" || s == "slc" || s == "llc") return Level::l2;
    if (s == "sram" || s == "smem" || s == "shared") return Level::sram;
    throw NotFound(unknown_name_message("memory level", name, {"dram", "l2", "sram"}));
}

std::string_view unit_name(Unit u) { return u == Unit::vector ? "vector" : "matrix"; }

Unit parse_unit(std::string_view name) {
    const std::string s = to_lower(name);
    if (s == "vector" || s == "simd" || s == "cuda-core") return Unit::vector;
    if (s == "matrix" || s == "tensor" || s == "tensor-core") return Unit::matrix;
    throw NotFound(unknown_name_message("compute unit", name, {"vector", "matrix"}));
}

const ComputePeak* Device::find_peak(DType format, Unit unit) const {
    const ComputePeak* vector_peak = nullptr;
    for (const auto& p : compute) {
        if (p.format != format) continue;
        if (p.unit == unit) return &p;
        if (p.unit == Unit::vector) vector_peak = &p;
    }
    return unit == Unit::matrix ? vector_peak : nullptr;
}

double Device::peak_flops(DType format, Unit unit) const {
    if (const auto* p = find_peak(format, unit)) return p->flops_per_s;
    std::vector<std::string> have;
    for (const auto& p : compute) have.push_back(std::string(dtype_name(p.format)) + "/" + std::string(unit_name(p.unit)));
    throw NotFound("device '" + id + "' has no " + std::string(unit_name(unit)) + " peak for '" +
                   std::string(dtype_name(format)) + "'" + (unit == Unit::matrix ? " (nor a vector one)" : "") +
                   "; it has: " + join(have));
}

namespace {
// The format arithmetic is carried out in when a device has no units for `d`; d itself at the end of the chain.
DType widened(DType d) {
    switch (d) {
        // representations a device without their units computes in a wider format without changing the result's
        // meaning: bf16 / fp16 / tf32 arithmetic at the fp32 rate (Apple M1-M3 bf16, CPUs' fp16), integer ALU work
        // on the fp32 lanes, fp16 products with fp16 sums on units that sum in fp32 (where a device lists no
        // separate rate for them, the fp16 rate). Low-precision formats (fp8, fp4, int8, int4) are never widened: a device without their
        // units cannot run a kernel written for them (Device::execution_peak's error names what it has).
        case DType::fp16:
        case DType::bf16:
        case DType::tf32: return DType::fp32;
        case DType::int32: return DType::fp32;
        case DType::fp16_acc16: return DType::fp16;  // fp16 units with fp32 sums compute it at least as well
        case DType::fp4:
        case DType::fp8_e4m3:
        case DType::fp8_e5m2:
        case DType::int4:
        case DType::int8:
        case DType::fp32:
        case DType::fp64: return d;
    }
    return d;
}
}  // namespace

const ComputePeak& Device::execution_peak(DType format, Unit unit) const {
    for (DType d = format;; d = widened(d)) {
        if (const auto* p = find_peak(d, unit)) return *p;
        if (widened(d) == d) break;
    }
    peak_flops(format, unit);  // throws the error listing what the device has
    throw NotFound("unreachable");
}

bool Device::has_bandwidth(Level l) const {
    const auto& m = level(l);
    return m.present && m.bandwidth_Bps > 0;
}

double Device::bandwidth(Level l) const {
    if (!has_bandwidth(l))
        throw NotFound("device '" + id + "' has no " + std::string(level_name(l)) +
                       " bandwidth in its database entry" + (has_level(l) ? " (capacity only)" : ""));
    return level(l).bandwidth_Bps;
}

double Device::capacity(Level l) const {
    if (!has_level(l) || level(l).capacity_bytes <= 0)
        throw NotFound("device '" + id + "' has no " + std::string(level_name(l)) + " capacity in its database entry");
    return level(l).capacity_bytes;
}

double Device::l2_working_set() const {
    if (!has_level(Level::l2)) return 0;
    const MemoryLevel& m = level(Level::l2);
    return m.working_set_bytes > 0 ? m.working_set_bytes : m.capacity_bytes;
}

double Device::sram_per_unit_bytes() const {
    const auto& s = level(Level::sram);
    if (!s.present || s.per_unit_bytes <= 0)
        throw NotFound("device '" + id + "' has no on-chip SRAM size in its database entry; pass sram_bytes");
    return s.per_unit_bytes;
}

double Device::ridge_point(DType format, Level l, Unit unit) const {
    return peak_flops(format, unit) / bandwidth(l);
}

double Device::interconnect_bandwidth() const {
    double best = 0;
    for (const auto& i : interconnect) best = std::max(best, i.bandwidth_Bps);
    return best;
}

double Device::interconnect_bandwidth(double devices) const {
    const Interconnect* i = interconnect_for(devices);
    return i ? i->bandwidth_Bps : 0.0;
}

const Interconnect* Device::interconnect_for(double devices) const {
    const Interconnect* best = nullptr;
    for (const auto& i : interconnect)
        if ((i.domain_devices == 0 || i.domain_devices >= devices) && (!best || i.bandwidth_Bps > best->bandwidth_Bps))
            best = &i;
    return best;
}

// ------------------------------------------------------------------------------------------------
// JSON <-> Device
namespace {
using detail::JsonObject;

// Interconnect::link when the entry does not say it: from the name (see the field's comment).
std::string link_of_name(const std::string& name) {
    if (name.rfind("PCIe", 0) == 0) return "pcie";
    for (const char* net : {"InfiniBand", "Ethernet", "RoCE", "ConnectX", "GbE"})
        if (name.find(net) != std::string::npos) return "network";
    return "nvlink";
}

Provenance read_provenance(JsonObject& o) {
    Provenance p;
    p.source = o.string("source");
    if (p.source.size() < 8) o.fail("source", "must say where the numbers come from (at least 8 characters)");
    p.uncertain = o.opt_string("uncertain");
    return p;
}

void check_id(JsonObject& o, const std::string& key, const std::string& value) {
    if (value.empty()) o.fail(key, "must not be empty");
    for (char c : value) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
        if (!ok) o.fail(key, "must use lower-case letters, digits, '-' and '.', got '" + value + "'");
    }
}

MemoryLevel read_dram(JsonObject o) {
    MemoryLevel m;
    m.present = true;
    m.type = o.string("type");
    m.bandwidth_Bps = o.number("bandwidth_GBps", kMinGBps, 1e6) * kGB;
    m.capacity_bytes = o.number("capacity_GiB", 0, 1e6, true) * kGiB;
    for (const auto& v : o.array("capacity_options_GiB", false)) {
        if (!v.is_number() || v.get<double>() <= 0) o.fail("capacity_options_GiB", "must hold numbers > 0");
        m.capacity_options_bytes.push_back(v.get<double>() * kGiB);
    }
    m.bus_width_bits = static_cast<int>(o.opt_integer("bus_width_bits", 1, 1 << 20).value_or(0));
    m.measured = o.opt_bool("measured", false);
    m.provenance = read_provenance(o);
    o.finish();
    return m;
}

MemoryLevel read_l2(JsonObject o) {
    MemoryLevel m;
    m.present = true;
    m.type = o.string("type");
    m.capacity_bytes = o.number("capacity_MiB", 0, 1e6, true) * kMiB;
    m.working_set_bytes = o.opt_number("working_set_MiB", 0, m.capacity_bytes / kMiB, true).value_or(0) * kMiB;
    m.bandwidth_Bps = o.opt_number("bandwidth_GBps", kMinGBps, 1e7).value_or(0) * kGB;
    m.measured = o.opt_bool("measured", false);
    m.provenance = read_provenance(o);
    o.finish();
    return m;
}

MemoryLevel read_sram(JsonObject o, int units) {
    MemoryLevel m;
    m.present = true;
    m.type = o.string("type");
    m.per_unit_bytes = o.number("per_unit_KiB", 0, 1e6, true) * kKiB;
    m.capacity_bytes = m.per_unit_bytes * units;
    m.bandwidth_Bps = o.opt_number("bandwidth_GBps", kMinGBps, 1e8).value_or(0) * kGB;
    m.measured = o.opt_bool("measured", false);
    m.provenance = read_provenance(o);
    o.finish();
    return m;
}
}  // namespace

Device parse_device(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    JsonObject o(j, "", std::string(origin));
    Device d;
    d.origin = origin;
    o.integer("schema_version", 1, 1);
    d.id = o.string("id");
    check_id(o, "id", d.id);
    d.name = o.string("name");
    d.vendor = o.choice("vendor", {"nvidia", "amd", "apple", "intel", "google", "host"});
    d.family = to_lower(o.string("family"));  // engine_db names families in lower case (by_family, families)
    d.kind = o.choice("kind", {"gpu", "soc", "cpu"});
    const auto& aliases = o.array("aliases", true);
    for (const auto& a : aliases) {
        if (!a.is_string()) o.fail("aliases", "must hold strings, got " + a.dump());
        d.aliases.push_back(a.get<std::string>());
        check_id(o, "aliases", d.aliases.back());
    }
    d.architecture = o.opt_string("architecture");
    d.release_year = static_cast<int>(o.opt_integer("release_year", 1990, 2100).value_or(0));
    d.notes = o.opt_string("notes");
    {
        auto cu = o.object("compute_units");
        d.compute_units = static_cast<int>(cu.integer("count", 1, 1000000));
        d.compute_unit_name = cu.string("name");
        d.lanes_issued_per_clock = cu.opt_number("lanes_issued_per_clock", 1, 1e5).value_or(0.0);
        d.compute_units_provenance = read_provenance(cu);
        cu.finish();
    }
    {
        auto cl = o.object("clocks");
        d.boost_clock_hz = cl.number("boost_MHz", 0, 1e5, true) * 1e6;
        d.base_clock_hz = cl.opt_number("base_MHz", 0, 1e5, true).value_or(0) * 1e6;
        d.vector_clock_hz = cl.opt_number("vector_boost_MHz", 0, 1e5, true).value_or(0) * 1e6;
        d.clocks_provenance = read_provenance(cl);
        cl.finish();
    }
    {
        auto mem = o.object("memory");
        d.memory[0] = read_dram(mem.object("dram"));
        if (auto l2 = mem.opt_object("l2")) d.memory[1] = read_l2(*l2);
        if (auto sram = mem.opt_object("sram")) d.memory[2] = read_sram(*sram, d.compute_units);
        mem.finish();
    }
    const auto& compute = o.array("compute", true);
    if (compute.empty()) o.fail("compute", "must list at least one peak");
    for (std::size_t i = 0; i < compute.size(); ++i) {
        JsonObject c(compute[i], "compute[" + std::to_string(i) + "]", d.origin);
        ComputePeak p;
        const std::string fmt = c.choice("format", dtype_names());
        p.format = parse_dtype(fmt);
        p.unit = parse_unit(c.choice("unit", {"vector", "matrix"}));
        p.flops_per_s = c.number("peak_TFLOPS", kMinTFLOPS, 1e6) * 1e12;
        p.measured = c.opt_bool("measured", false);
        if (auto f = c.opt_number("achievable_fraction", kMinEfficiency, 1)) p.achievable_fraction = *f;
        p.provenance = read_provenance(c);
        c.finish();
        for (const auto& q : d.compute)
            if (q.format == p.format && q.unit == p.unit)
                c.fail("format", "duplicates an earlier " + fmt + "/" + std::string(unit_name(p.unit)) + " peak");
        d.compute.push_back(p);
    }
    const auto& links = o.array("interconnect", false);
    for (std::size_t i = 0; i < links.size(); ++i) {
        JsonObject c(links[i], "interconnect[" + std::to_string(i) + "]", d.origin);
        Interconnect ic;
        ic.name = c.string("name");
        ic.bandwidth_Bps = c.number("bandwidth_GBps", kMinGBps, 1e6) * kGB;
        if (auto dd = c.opt_number("domain_devices", 1, 1e6)) {
            if (*dd != std::floor(*dd)) c.fail("domain_devices", "must be a whole number of devices, got " + std::to_string(*dd));
            ic.domain_devices = *dd;
        }
        const std::string link = c.opt_string("link");
        if (!link.empty() && link != "nvlink" && link != "pcie" && link != "network")
            c.fail("link", "must be one of nvlink, pcie, network, got '" + link + "'");
        ic.link = link.empty() ? link_of_name(ic.name) : link;
        if (auto bw = c.opt_number("all_reduce_busbw_GBps", kMinGBps, 1e6)) {
            ic.all_reduce_busbw_Bps = *bw * kGB;
            ic.all_reduce_provenance.source = c.string("all_reduce_source");
            if (ic.all_reduce_provenance.source.size() < 8)
                c.fail("all_reduce_source", "must say where the measured bus bandwidth comes from (at least 8 characters)");
        } else if (c.has("all_reduce_source")) {
            c.fail("all_reduce_source", "is the source of all_reduce_busbw_GBps, which is missing");
        }
        ic.provenance = read_provenance(c);
        c.finish();
        d.interconnect.push_back(ic);
    }
    if (auto p = o.opt_object("power")) {
        d.tdp_w = p->number("tdp_W", 0, 1e5, true);
        d.power_provenance = read_provenance(*p);
        p->finish();
    }
    {
        auto e = o.object("efficiency");
        d.efficiency.dram_bandwidth_fraction = e.number("dram_bandwidth_fraction", kMinEfficiency, 1);
        d.efficiency.dram_applies_to_measured = e.opt_bool("dram_applies_to_measured", false);
        d.efficiency.compute_fraction = e.number("compute_fraction", kMinEfficiency, 1);
        d.efficiency.launch_overhead_s = e.number("launch_overhead_us", 0, 1e6) * 1e-6;
        d.efficiency.provenance = read_provenance(e);
        e.finish();
    }
    o.finish();
    return d;
}

Device load_device(const std::string& path) {
    Device d = parse_device(detail::read_text_file(path), path);
    const std::string stem = std::filesystem::path(path).stem().string();
    if (stem != d.id)
        throw InvalidArgument(path + ": field 'id' is '" + d.id + "' but the file is named '" + stem +
                              ".json'; they must match");
    return d;
}

namespace {
// The number to write for a value parse_device reads as `written * scale` (bandwidth_GBps * 1e9, ...): the double
// whose product with `scale` gives `si` back exactly when there is one (si / scale often is not: 9.5 us * 1e-6 * 1e6
// is 9.499999999999998), so that to_json -> parse_device -> to_json is stable.
double unscaled(double si, double scale) {
    const double v = si / scale;
    if (v * scale == si) return v;
    double up = v, down = v;
    for (int i = 0; i < 4; ++i) {
        up = std::nextafter(up, std::numeric_limits<double>::infinity());
        if (up * scale == si) return up;
        down = std::nextafter(down, -std::numeric_limits<double>::infinity());
        if (down * scale == si) return down;
    }
    return v;
}

nlohmann::ordered_json provenance_json(nlohmann::ordered_json j, const Provenance& p) {
    j["source"] = p.source;
    if (!p.uncertain.empty()) j["uncertain"] = p.uncertain;
    return j;
}
}  // namespace

std::string Device::to_json(int indent) const {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["id"] = id;
    j["name"] = name;
    j["vendor"] = vendor;
    j["family"] = family;
    j["kind"] = kind;
    j["aliases"] = aliases;
    if (!architecture.empty()) j["architecture"] = architecture;
    if (release_year) j["release_year"] = release_year;
    nlohmann::ordered_json units{{"count", compute_units}, {"name", compute_unit_name}};
    if (lanes_issued_per_clock > 0) units["lanes_issued_per_clock"] = lanes_issued_per_clock;
    j["compute_units"] = provenance_json(units, compute_units_provenance);
    nlohmann::ordered_json clocks{{"boost_MHz", unscaled(boost_clock_hz, 1e6)}};
    if (base_clock_hz > 0) clocks["base_MHz"] = unscaled(base_clock_hz, 1e6);
    if (vector_clock_hz > 0) clocks["vector_boost_MHz"] = unscaled(vector_clock_hz, 1e6);
    j["clocks"] = provenance_json(clocks, clocks_provenance);
    nlohmann::ordered_json mem;
    {
        const auto& m = level(Level::dram);
        nlohmann::ordered_json dram{{"type", m.type}, {"bandwidth_GBps", unscaled(m.bandwidth_Bps, kGB)}, {"capacity_GiB", m.capacity_bytes / kGiB}};
        if (!m.capacity_options_bytes.empty()) {
            std::vector<double> opts;
            for (double b : m.capacity_options_bytes) opts.push_back(b / kGiB);
            dram["capacity_options_GiB"] = opts;
        }
        if (m.bus_width_bits) dram["bus_width_bits"] = m.bus_width_bits;
        if (m.measured) dram["measured"] = true;
        mem["dram"] = provenance_json(dram, m.provenance);
    }
    if (has_level(Level::l2)) {
        const auto& m = level(Level::l2);
        nlohmann::ordered_json l2{{"type", m.type}, {"capacity_MiB", m.capacity_bytes / kMiB}};
        if (m.working_set_bytes > 0) l2["working_set_MiB"] = m.working_set_bytes / kMiB;
        if (m.bandwidth_Bps > 0) l2["bandwidth_GBps"] = unscaled(m.bandwidth_Bps, kGB);
        if (m.measured) l2["measured"] = true;
        mem["l2"] = provenance_json(l2, m.provenance);
    }
    if (has_level(Level::sram)) {
        const auto& m = level(Level::sram);
        nlohmann::ordered_json s{{"type", m.type}, {"per_unit_KiB", m.per_unit_bytes / kKiB}};
        if (m.bandwidth_Bps > 0) s["bandwidth_GBps"] = unscaled(m.bandwidth_Bps, kGB);
        if (m.measured) s["measured"] = true;
        mem["sram"] = provenance_json(s, m.provenance);
    }
    j["memory"] = mem;
    j["compute"] = nlohmann::ordered_json::array();
    for (const auto& p : compute) {
        nlohmann::ordered_json c{{"format", dtype_name(p.format)}, {"unit", unit_name(p.unit)}, {"peak_TFLOPS", unscaled(p.flops_per_s, 1e12)}};
        if (p.measured) c["measured"] = true;
        if (p.achievable_fraction > 0) c["achievable_fraction"] = p.achievable_fraction;
        j["compute"].push_back(provenance_json(c, p.provenance));
    }
    if (!interconnect.empty()) {
        j["interconnect"] = nlohmann::ordered_json::array();
        for (const auto& i : interconnect)
        {
            nlohmann::ordered_json ij{{"name", i.name}, {"bandwidth_GBps", unscaled(i.bandwidth_Bps, kGB)}};
            if (i.domain_devices > 0) ij["domain_devices"] = static_cast<long long>(i.domain_devices);  // whole
            if (i.link != link_of_name(i.name)) ij["link"] = i.link;
            if (i.all_reduce_busbw_Bps > 0) {
                ij["all_reduce_busbw_GBps"] = unscaled(i.all_reduce_busbw_Bps, kGB);
                ij["all_reduce_source"] = i.all_reduce_provenance.source;
            }
            j["interconnect"].push_back(provenance_json(ij, i.provenance));
        }
    }
    if (tdp_w > 0) j["power"] = provenance_json({{"tdp_W", tdp_w}}, power_provenance);
    nlohmann::ordered_json eff = {{"dram_bandwidth_fraction", efficiency.dram_bandwidth_fraction}};
    if (efficiency.dram_applies_to_measured) eff["dram_applies_to_measured"] = true;
    eff["compute_fraction"] = efficiency.compute_fraction;
    eff["launch_overhead_us"] = unscaled(efficiency.launch_overhead_s, 1e-6);
    j["efficiency"] = provenance_json(eff, efficiency.provenance);
    if (!notes.empty()) j["notes"] = notes;
    return j.dump(indent);
}

// ------------------------------------------------------------------------------------------------
// DeviceDB

void DeviceDB::add(Device d) {
    std::vector<std::string> keys{to_lower(d.id)};
    for (const auto& a : d.aliases) keys.push_back(to_lower(a));
    for (const auto& k : keys) {
        auto it = index_.find(k);
        if (it != index_.end())
            throw InvalidArgument(d.origin + ": id or alias '" + k + "' is already used by device '" +
                                  devices_[it->second].id + "' (" + devices_[it->second].origin + ")");
    }
    for (const auto& k : keys) index_.emplace(k, devices_.size());
    devices_.push_back(std::move(d));
}

DeviceDB DeviceDB::load_directory(const std::string& directory) {
    const std::vector<std::string> files = detail::database_files(directory, "hardware database");
    DeviceDB db;
    for (const auto& f : files) db.add(load_device(f));
    return db;
}

std::string DeviceDB::default_directory() { return data_path("hardware_db"); }

bool DeviceDB::contains(std::string_view id_or_alias) const { return index_.count(to_lower(id_or_alias)) > 0; }

const Device& DeviceDB::get(std::string_view id_or_alias) const {
    auto it = index_.find(to_lower(id_or_alias));
    if (it != index_.end()) return devices_[it->second];
    std::vector<std::string> names;
    for (const auto& [k, v] : index_) names.push_back(k);
    std::string msg = "unknown device '" + std::string(id_or_alias) + "'";
    const std::string hint = closest_match(id_or_alias, names);
    if (!hint.empty()) msg += "; did you mean '" + devices_[index_.at(hint)].id + "'?";
    msg += "; " + std::to_string(devices_.size()) + " devices are known (rp.devices() in Python, `rooflinepy devices` in a shell)";
    throw NotFound(msg);
}

std::vector<std::string> DeviceDB::ids() const {
    std::vector<std::string> out;
    for (const auto& d : devices_) out.push_back(d.id);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace roofline
