// roofline-calibrate-cuda: measures an NVIDIA GPU's ceilings and writes a rooflinepy calibration profile
// (calibration/README.md). Plain C++: the CUDA work lives in device/*.cu behind device/bench.hpp.
#include "device/bench.hpp"
#include "host/measure.hpp"
#include "host/options.hpp"

#include "roofline/calibration.hpp"
#include "roofline/device.hpp"
#include "roofline/errors.hpp"
#include "roofline/version.hpp"

#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>

namespace {

// Write atomically (temporary file, then rename) so a reader never sees half a profile.
void write_profile(const roofline::Profile& p, const std::string& path) {
    const std::string text = roofline::profile_to_json(p);
    (void)roofline::parse_profile(text, path);  // the core's own validation: what we write, it reads
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        if (!f) throw roofline::FileError("cannot write '" + tmp + "'");
        f << text << '\n';
        if (!f) throw roofline::FileError("error writing '" + tmp + "'");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw roofline::FileError("cannot rename '" + tmp + "' to '" + path + "'");
}

}  // namespace

int main(int argc, char** argv) {
    rcal::Options opt;
    try {
        opt = rcal::parse_options(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "roofline-calibrate-cuda: %s\n%s", e.what(), rcal::usage().c_str());
        return 1;
    }
    if (opt.help) {
        std::printf("%s", rcal::usage().c_str());
        return 0;
    }
    try {
        roofline::Profile profile;
        profile.date = roofline::utc_now_iso8601();
        profile.tool_name = "roofline-calibrate-cuda";
        profile.tool_version = roofline::version();
        profile.tool_options = opt.command_line;
        if (opt.quick) profile.notes = "--quick: small sizes and few repetitions (a smoke test, not a calibration)";
        const rcal::Context ctx = rcal::open_device(opt.device, opt.quick, profile.device);
        rcal::warm_up(ctx, opt.quick ? 0.1 : 0.5);  // clocks out of idle before the first timing

        const std::map<std::string, std::function<rcal::GroupResult(const rcal::Context&)>> runners = {
            {"launch", rcal::run_launch}, {"dram", rcal::run_dram},   {"l2", rcal::run_l2},
            {"fma", rcal::run_fma},       {"sweep", rcal::run_sweep}, {"mma", rcal::run_mma},
            {"cublas", rcal::run_cublas}, {"wgmma", rcal::run_wgmma}};
        std::vector<std::string> failures;
        for (const auto& group : rcal::all_groups()) {
            if (!opt.runs(group)) continue;
            std::printf("== %s\n", group.c_str());
            std::fflush(stdout);
            rcal::GroupResult r = runners.at(group)(ctx);
            for (auto& m : r.measurements) profile.measurements.push_back(std::move(m));
            for (auto& f : r.fits) profile.fits.push_back(std::move(f));
            for (auto& e : r.extra) profile.device.extra.push_back(std::move(e));
            for (const auto& f : r.failures) {
                std::printf("  CHECK FAILED: %s\n", f.c_str());
                failures.push_back(f);
            }
            write_profile(profile, opt.output);  // after every group: a later crash keeps what ran
        }
        std::printf("wrote %s (%zu measurements, %zu fits)\n", opt.output.c_str(), profile.measurements.size(),
                    profile.fits.size());

        roofline::Device datasheet;
        bool have_ds = false;
        if (!opt.datasheet.empty()) {
            std::string why;
            try {
                have_ds = rcal::resolve_datasheet(opt.datasheet, opt.hardware_db, profile.device.name, datasheet, why);
            } catch (const std::exception& e) {  // the profile is written; a bad --datasheet only loses the ratios
                why = e.what();
            }
            if (!have_ds) std::printf("--datasheet %s: %s; ratios not shown\n", opt.datasheet.c_str(), why.c_str());
        }
        const auto rows = roofline::calibration_report(profile, have_ds ? &datasheet : nullptr);
        std::printf("\n== report%s\n%s", have_ds ? (" against " + datasheet.id).c_str() : "",
                    rcal::format_report(rows).c_str());
        if (!failures.empty()) {
            std::printf("%zu check(s) failed; those measurements are marked unverified\n", failures.size());
            return 2;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "roofline-calibrate-cuda: %s\n", e.what());
        return 1;
    }
}
