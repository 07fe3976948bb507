// Command line of roofline-calibrate-cuda. No CUDA include: parsed and tested on any host.
#pragma once

#include <string>
#include <vector>

namespace rcal {

/// The groups of measurements, in the order they run (the riskiest, wgmma, last).
const std::vector<std::string>& all_groups();

struct Options {
    std::string output;                 ///< -o / --output: the profile to write (required unless --help)
    bool quick = false;                 ///< --quick: small sizes and few repetitions, a smoke test of seconds
    int device = 0;                     ///< --device N
    std::vector<std::string> groups;    ///< --only a,b: subset of all_groups(); empty means all
    std::string datasheet;              ///< --datasheet ID|FILE: compare with a hardware_db device ("auto": by name)
    std::string hardware_db;            ///< --hardware-db DIR: where ids are looked up (default: the core's)
    bool help = false;
    std::string command_line;           ///< the options as given, for the profile's tool.options

    bool runs(const std::string& group) const;
};

/// Parse argv. Throws std::invalid_argument naming the bad option or value and what is allowed.
Options parse_options(int argc, const char* const* argv);
std::string usage();

}  // namespace rcal
