// roofline-calibrate-cpu: measure the host's ceilings and write a calibration profile (calibration/README.md).
#include "roofline/calibrate_cpu.hpp"
#include "roofline/errors.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

namespace {
int usage(int code) {
    std::fprintf(code ? stderr : stdout,
                 "usage: roofline-calibrate-cpu -o PROFILE.json [--quick] [--threads N] [--no-pin] [--dram-array-bytes B]\n"
                 "Measures this host's DRAM and cache bandwidth, FMA peak (fp64, fp32), Eigen GEMM, the dispatch cost of\n"
                 "an empty parallel region and an arithmetic-intensity sweep; writes them as a calibration profile.\n");
    return code;
}
}  // namespace

int main(int argc, char** argv) {
    roofline::cpu::CpuCalibrationOptions o;
    std::string out;
    std::string cmdline;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* what) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "roofline-calibrate-cpu: %s needs a value\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-o" || a == "--output") out = value("-o");
        else if (a == "--quick") o.quick = true, cmdline += " --quick";
        else if (a == "--no-pin") o.pin = false, cmdline += " --no-pin";
        else if (a == "--threads") {
            const std::string v = value("--threads");
            o.threads = std::atoi(v.c_str());
            cmdline += " --threads " + v;
        } else if (a == "--dram-array-bytes") {
            const std::string v = value("--dram-array-bytes");
            o.dram_array_bytes = std::atof(v.c_str());
            cmdline += " --dram-array-bytes " + v;
        } else if (a == "-h" || a == "--help") return usage(0);
        else {
            std::fprintf(stderr, "roofline-calibrate-cpu: unknown argument '%s'\n", a.c_str());
            return usage(2);
        }
    }
    if (out.empty()) return usage(2);
    o.options_text = cmdline.empty() ? "" : cmdline.substr(1);
    o.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
    try {
        const roofline::Profile p = roofline::cpu::calibrate_cpu(o);
        const std::string text = roofline::profile_to_json(p) + "\n";
        if (out == "-") {
            std::cout << text;
        } else {
            std::ofstream f(out);
            if (!f || !(f << text)) {
                std::fprintf(stderr, "roofline-calibrate-cpu: cannot write '%s'\n", out.c_str());
                return 1;
            }
            std::fprintf(stderr, "wrote %s\n", out.c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "roofline-calibrate-cpu: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
