#include "options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace rcal {

const std::vector<std::string>& all_groups() {
    static const std::vector<std::string> groups = {"launch", "dram", "l2", "fma", "sweep", "mma", "cublas", "wgmma"};
    return groups;
}

bool Options::runs(const std::string& group) const {
    return groups.empty() || std::find(groups.begin(), groups.end(), group) != groups.end();
}

namespace {

std::string joined_groups() {
    std::string s;
    for (const auto& g : all_groups()) s += (s.empty() ? "" : ", ") + g;
    return s;
}

int parse_int(const std::string& option, const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || v < 0 || v > 1024)
        throw std::invalid_argument("option " + option + ": '" + text + "' is not a device index (0..1024)");
    return static_cast<int>(v);
}

std::vector<std::string> parse_groups(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        if (std::find(all_groups().begin(), all_groups().end(), item) == all_groups().end())
            throw std::invalid_argument("option --only: unknown group '" + item + "'; valid: " + joined_groups());
        if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
    if (out.empty()) throw std::invalid_argument("option --only: empty list; valid: " + joined_groups());
    return out;
}

}  // namespace

Options parse_options(int argc, const char* const* argv) {
    Options o;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        std::string value;
        bool has_inline_value = false;
        if (a.rfind("--", 0) == 0) {
            const auto eq = a.find('=');
            if (eq != std::string::npos) {
                value = a.substr(eq + 1);
                a.resize(eq);
                has_inline_value = true;
            }
        }
        auto take = [&](const std::string& name) -> std::string {
            if (has_inline_value) return value;
            if (i + 1 >= args.size()) throw std::invalid_argument("option " + name + " needs a value");
            return args[++i];
        };
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "-o" || a == "--output") {
            o.output = take(a);
            if (o.output.empty()) throw std::invalid_argument("option " + a + ": empty file name");
        } else if (a == "--quick") {
            if (has_inline_value) throw std::invalid_argument("option --quick takes no value");
            o.quick = true;
        } else if (a == "--device") {
            o.device = parse_int(a, take(a));
        } else if (a == "--only") {
            o.groups = parse_groups(take(a));
        } else if (a == "--datasheet") {
            o.datasheet = take(a);
        } else if (a == "--hardware-db") {
            o.hardware_db = take(a);
        } else {
            throw std::invalid_argument("unknown option '" + args[i] + "'; see --help");
        }
    }
    if (!o.help && o.output.empty()) throw std::invalid_argument("missing -o FILE (where the profile is written)");
    for (std::size_t i = 0; i < args.size(); ++i) o.command_line += (i ? " " : "") + args[i];
    return o;
}

std::string usage() {
    return "usage: roofline-calibrate-cuda -o PROFILE.json [--quick] [--device N] [--only GROUPS]\n"
           "                               [--datasheet ID|FILE|auto] [--hardware-db DIR]\n"
           "Measures an NVIDIA GPU's ceilings (DRAM and L2 bandwidth, FMA and tensor-core throughput, an\n"
           "arithmetic-intensity sweep, launch overhead) and writes a rooflinepy calibration profile.\n"
           "  -o, --output FILE   profile to write (rewritten after each group, so a crash keeps what ran)\n"
           "  --quick             small sizes, few repetitions: a smoke test of seconds\n"
           "  --device N          CUDA device index (default 0)\n"
           "  --only GROUPS       comma-separated subset of: " + joined_groups() + "\n"
           "  --datasheet X       print measured/datasheet ratios against hardware_db device X (an id, a\n"
           "                      JSON file, or 'auto' to find it by the device's name)\n"
           "  --hardware-db DIR   where --datasheet ids are looked up (default: the core's hardware_db)\n"
           "Exit status: 0 all measurements verified; 1 usage or CUDA error; 2 a kernel's output failed its check.\n";
}

}  // namespace rcal
