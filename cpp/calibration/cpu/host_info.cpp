#include "detail.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>
#endif

namespace roofline::cpu {

namespace {
std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    if (in) std::getline(in, s);
    return s;
}

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t\n");
    const auto e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "48K" -> 49152
double parse_size(const std::string& s) {
    if (s.empty()) return 0;
    double v = 0;
    try {
        v = std::stod(s);
    } catch (...) {
        return 0;
    }
    const char suffix = s.back();
    if (suffix == 'K') v *= 1024.0;
    if (suffix == 'M') v *= 1024.0 * 1024.0;
    if (suffix == 'G') v *= 1024.0 * 1024.0 * 1024.0;
    return v;
}

// "0-3,8" -> {0,1,2,3,8}
std::set<int> parse_cpu_list(const std::string& s) {
    std::set<int> out;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        part = trim(part);
        if (part.empty()) continue;
        try {
            const auto dash = part.find('-');
            if (dash == std::string::npos) {
                out.insert(std::stoi(part));
            } else {
                for (int c = std::stoi(part.substr(0, dash)); c <= std::stoi(part.substr(dash + 1)); ++c) out.insert(c);
            }
        } catch (...) {
        }
    }
    return out;
}

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(static_cast<std::size_t>(c), &set)) cpus.push_back(c);
#endif
    if (cpus.empty()) {
        const unsigned n = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned c = 0; c < n; ++c) cpus.push_back(static_cast<int>(c));
    }
    return cpus;
}

std::string compiler_version() {
#if defined(__clang__)
    return std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("GCC ") + __VERSION__;
#elif defined(_MSC_VER)
    return "MSVC " + std::to_string(_MSC_VER);
#else
    return "unknown compiler";
#endif
}
}  // namespace

HostInfo host_info() {
    HostInfo h;
    h.compiler = compiler_version();
    // /proc/cpuinfo: the first processor's block.
    std::map<std::string, std::string> info;
    {
        std::ifstream in("/proc/cpuinfo");
        std::string line;
        while (std::getline(in, line)) {
            if (trim(line).empty()) {
                if (!info.empty()) break;
                continue;
            }
            const auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            info.emplace(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
        }
    }
    h.model_name = info.count("model name") ? info["model name"] : "";
    const std::string vendor_id = info.count("vendor_id") ? info["vendor_id"] : "";
    h.vendor = vendor_id == "GenuineIntel"   ? "intel"
               : vendor_id == "AuthenticAMD" ? "amd"
               : info.count("CPU implementer") ? "arm"
                                               : "unknown";
    if (h.model_name.empty()) h.model_name = info.count("Hardware") ? info["Hardware"] : "unknown CPU";
    {
        std::set<std::string> have;
        std::stringstream ss(info.count("flags") ? info["flags"] : (info.count("Features") ? info["Features"] : ""));
        std::string f;
        while (ss >> f) have.insert(f);
        for (const char* want : {"sse2", "avx", "avx2", "fma", "avx512f", "avx512_fp16", "avx512_bf16", "amx_tile", "asimd", "sve"})
            if (have.count(want)) h.flags.push_back(want);
    }
#if defined(__AVX512F__)
    h.simd_bytes = 64;
#elif defined(__AVX__)
    h.simd_bytes = 32;
#else
    h.simd_bytes = 16;
#endif
    // CPUs and cores.
    const std::vector<int> cpus = allowed_cpus();
    h.logical_cpus = static_cast<int>(cpus.size());
    std::vector<int> first, second;
    std::set<std::pair<std::string, std::string>> cores;
    for (int c : cpus) {
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
        const auto key = std::make_pair(read_line(base + "physical_package_id"), read_line(base + "core_id"));
        const bool known = !key.second.empty();
        if (!known || cores.insert(key).second) first.push_back(c);
        else second.push_back(c);
    }
    h.physical_cores = static_cast<int>(first.size());
    h.cpu_order = first;
    h.cpu_order.insert(h.cpu_order.end(), second.begin(), second.end());
    // Clock.
    const std::string cpu0 = "/sys/devices/system/cpu/cpu" + std::to_string(h.cpu_order.front());
    const std::string max_khz = read_line(cpu0 + "/cpufreq/cpuinfo_max_freq");
    if (!max_khz.empty()) {
        h.clock_hz = std::stod(max_khz) * 1e3;
        h.clock_source = "cpufreq cpuinfo_max_freq";
    } else if (info.count("cpu MHz")) {
        h.clock_hz = std::stod(info["cpu MHz"]) * 1e6;
        h.clock_source = "/proc/cpuinfo cpu MHz";
    }
    // Memory.
    {
        std::ifstream in("/proc/meminfo");
        std::string key, unit;
        double value = 0;
        while (in >> key >> value) {
            std::getline(in, unit);
            if (key == "MemTotal:") h.memory_bytes = value * 1024.0;
            if (key == "MemAvailable:") h.memory_available_bytes = value * 1024.0;
        }
    }
    // Caches of the first CPU (data and unified), with the instances the threads span.
    for (int idx = 0; idx < 16; ++idx) {
        const std::string base = cpu0 + "/cache/index" + std::to_string(idx) + "/";
        const std::string type = read_line(base + "type");
        if (type.empty()) {
            if (idx > 4) break;
            continue;
        }
        if (type != "Data" && type != "Unified") continue;
        CacheInfo c;
        const std::string level = read_line(base + "level");
        c.name = "L" + level + (type == "Data" ? "d" : "");
        c.size_bytes = parse_size(read_line(base + "size"));
        const auto shared = parse_cpu_list(read_line(base + "shared_cpu_list"));
        c.shared_by_threads = std::max(1, static_cast<int>(shared.size()));
        if (c.size_bytes <= 0) continue;
        h.caches.push_back(c);
    }
    std::sort(h.caches.begin(), h.caches.end(), [](const CacheInfo& a, const CacheInfo& b) { return a.name < b.name; });
#if defined(__linux__)
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) h.hostname = host;
    struct utsname u {};
    if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
#endif
    return h;
}

}  // namespace roofline::cpu
