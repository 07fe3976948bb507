// The CPU calibration run: every kernel at sizes chosen from the host's caches and memory, into a profile.
#include "detail.hpp"
#include "roofline/errors.hpp"
#include "roofline/version.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace roofline::cpu {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

void say(const CpuCalibrationOptions& o, const std::string& line) {
    if (o.progress) o.progress(line);
}

std::string si(double x, const char* unit) {
    char buf[64];
    const char* p = "";
    double f = 1;
    if (x >= 1e12) p = "T", f = 1e12;
    else if (x >= 1e9) p = "G", f = 1e9;
    else if (x >= 1e6) p = "M", f = 1e6;
    else if (x >= 1e3) p = "k", f = 1e3;
    else if (x < 1e-6) p = "n", f = 1e-9;
    else if (x < 1e-3) p = "u", f = 1e-6;
    else if (x < 1) p = "m", f = 1e-3;
    std::snprintf(buf, sizeof buf, "%.4g %s%s", x / f, p, unit);
    return buf;
}

CeilingMeasurement measurement(const KernelRun& k, Ceiling c, int threads, int warmup, double per_run) {
    CeilingMeasurement m;
    m.ceiling = c;
    m.kernel = k.kernel;
    m.threads = threads;
    m.repetitions = k.seconds.repetitions;
    m.warmup = warmup;
    m.verified = k.verified;
    m.notes = k.detail;
    if (c == Ceiling::launch_overhead) {
        m.min = k.seconds.min;
        m.median = k.seconds.median;
        m.max = k.seconds.max;
    } else {  // a rate: per_run / seconds, so the fastest run is the max
        m.min = per_run / k.seconds.max;
        m.median = per_run / k.seconds.median;
        m.max = per_run / k.seconds.min;
    }
    return m;
}

// Runs one run of `probe` seconds-per-pass and returns passes per run so one run lasts about `target` seconds.
int passes_for(double seconds_one_pass, double target) {
    if (!(seconds_one_pass > 0)) return 1;
    return std::max(1, std::min(1 << 20, static_cast<int>(std::ceil(target / seconds_one_pass))));
}
}  // namespace

Profile calibrate_cpu(const CpuCalibrationOptions& o) {
    const HostInfo host = host_info();
    const int nt = o.threads > 0 ? o.threads : std::max(1, host.physical_cores);
    if (o.threads < 0) throw InvalidArgument("calibrate_cpu: threads must be >= 0 (0: one per core), got " + std::to_string(o.threads));
    if (o.repetitions < 0) throw InvalidArgument("calibrate_cpu: repetitions must be >= 0, got " + std::to_string(o.repetitions));
    if (o.dram_array_bytes < 0) throw InvalidArgument("calibrate_cpu: dram_array_bytes must be >= 0");
    const bool quick = o.quick;
    const int reps = o.repetitions > 0 ? o.repetitions : (quick ? 3 : 10);
    const int warmup = quick ? 1 : 2;

    Profile p;
    p.date = utc_now_iso8601();
    p.tool_name = o.tool_name;
    p.tool_version = version();
    p.tool_options = o.options_text;
    auto& d = p.device;
    d.name = host.model_name;
    d.vendor = host.vendor;
    d.kind = "cpu";
    d.host = host.hostname;
    d.os = host.os;
    d.compiler = host.compiler;
    d.threads = nt;
    d.cores = host.physical_cores;
    d.clock_hz = host.clock_hz;
    d.memory_bytes = host.memory_bytes;
    d.features = host.flags;

    // Caches: instances over the threads used; the last level stands for the model's l2 (LLC), the largest private
    // level below it for sram (per core); smaller private levels are measured but feed nothing.
    std::vector<CacheInfo> caches = host.caches;
    for (auto& c : caches) c.instances = std::max(1, (nt + c.shared_by_threads - 1) / c.shared_by_threads);
    const std::size_t nc = caches.size();
    if (nc >= 2) caches[nc - 1].model_level = Level::l2;
    if (nc >= 2) caches[nc - 2].model_level = Level::sram;
    if (nc == 1) caches[0].model_level = Level::l2;
    d.caches = caches;
    const double llc_total = nc ? caches.back().size_bytes * caches.back().instances : 32 * kMiB;

    say(o, "host: " + host.model_name + ", " + std::to_string(nt) + " thread(s) of " + std::to_string(host.logical_cpus) +
               " CPUs, clock " + si(host.clock_hz, "Hz") + " (" + host.clock_source + "), LLC " +
               detail::fmt_bytes(llc_total) + ", memory " + detail::fmt_bytes(host.memory_bytes));
    ThreadTeam team(nt, host.cpu_order, o.pin);
    d.extra.emplace_back("pinned", team.pinned() ? "true" : "false");
    d.extra.emplace_back("simd_bytes", std::to_string(host.simd_bytes));
    d.extra.emplace_back("clock_source", "\"" + host.clock_source + "\"");
    {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.0f", measure_clock_hz(3) / 1e6);
        d.extra.emplace_back("measured_clock_MHz", buf);  // dependent-imul chain on thread 0 (turbo included)
    }
    d.extra.emplace_back("quick", quick ? "true" : "false");

    // 1. Dispatch overhead of an empty parallel region.
    double dispatch_s = 0;
    {
        const KernelRun k = run_empty_region(team, quick ? 10 : 30, quick ? 100 : 500);
        CeilingMeasurement m = measurement(k, Ceiling::launch_overhead, nt, 100, 0);
        p.measurements.push_back(m);
        dispatch_s = m.median;
        say(o, "empty parallel region: " + si(m.median, "s"));
    }

    // 2. Peak FMA throughput, fp64 and fp32: a run lasts about 20 ms (quick 5 ms).
    for (DType dt : {DType::fp64, DType::fp32}) {
        const KernelRun probe = run_fma(team, dt, 20000, 1, 1);
        const double per_iter = probe.seconds.median / 20000.0;
        const auto iters = static_cast<long long>(std::max(1000.0, (quick ? 0.005 : 0.02) / per_iter));
        const KernelRun k = run_fma(team, dt, iters, quick ? 3 : 15, 2);
        CeilingMeasurement m = measurement(k, Ceiling::peak_flops, nt, 2, k.flops_per_run);
        m.dtype = dt;
        m.unit = Unit::vector;
        m.sizes = {{"chains_per_thread", k.flops_per_run / 2.0 / static_cast<double>(iters) / nt},
                   {"fmas_per_chain", static_cast<double>(iters)},
                   {"flops_per_run", k.flops_per_run}};
        p.measurements.push_back(m);
        say(o, std::string(k.kernel) + ": " + si(m.median, "FLOP/s") + (k.verified ? "" : "  NOT VERIFIED"));
    }

    // 3. Cache-resident read and triad, per level.
    double prev_per_thread = 0;
    for (const auto& c : caches) {
        const double per_thread_capacity = c.size_bytes * c.instances / nt;
        double ws = c.shared_by_threads <= 1 ? per_thread_capacity / 2 : per_thread_capacity / 4;
        ws = std::max(ws, std::min(4 * prev_per_thread, per_thread_capacity / 2));
        if (quick) ws = std::min(ws, 8 * kMiB);
        prev_per_thread = c.size_bytes * c.instances / nt;
        const auto elements = static_cast<std::size_t>(ws / 24.0);  // 3 arrays of fp64
        const std::vector<KernelRun> probe = run_stream(team, {Stream::read}, elements, 1, 1, 1);
        const int inner = passes_for(probe[0].seconds.median, quick ? 0.0005 : 0.002);
        for (const KernelRun& k : run_stream(team, {Stream::read, Stream::triad}, elements, quick ? 3 : 2 * reps, warmup, inner)) {
            CeilingMeasurement m = measurement(k, Ceiling::bandwidth, nt, warmup, k.bytes_per_run);
            m.level = c.model_level.value_or(Level::sram);
            m.feeds_model = c.model_level.has_value();
            m.kernel = k.kernel + "_" + c.name;
            m.cache = c.name;
            m.sizes = {{"working_set_bytes_per_thread", static_cast<double>(elements) * 24.0},
                       {"elements_per_thread", static_cast<double>(elements)},
                       {"passes_per_run", static_cast<double>(inner)},
                       {"bytes_per_run", k.bytes_per_run}};
            p.measurements.push_back(m);
            say(o, m.kernel + " (" + detail::fmt_bytes(static_cast<double>(elements) * 24.0) + " per thread): " +
                       si(m.median, "B/s") + (k.verified ? "" : "  NOT VERIFIED"));
        }
    }

    // 4. DRAM: STREAM over arrays 4x the LLC (within a quarter of the available memory).
    double array_bytes = o.dram_array_bytes;
    if (array_bytes <= 0) {
        array_bytes = quick ? std::min(32 * kMiB, 4 * llc_total) : 4 * llc_total;
        const double avail = host.memory_available_bytes > 0 ? host.memory_available_bytes : host.memory_bytes;
        if (avail > 0) array_bytes = std::min(array_bytes, avail / 4 / 3);
        array_bytes = std::max(array_bytes, quick ? 4 * kMiB : 64 * kMiB);
    }
    const auto dram_elements = static_cast<std::size_t>(array_bytes / 8.0 / nt);
    for (const KernelRun& k : run_stream(team, {Stream::copy, Stream::scale, Stream::add, Stream::triad, Stream::read},
                                         dram_elements, reps, warmup, 1)) {
        CeilingMeasurement m = measurement(k, Ceiling::bandwidth, nt, warmup, k.bytes_per_run);
        m.level = Level::dram;
        m.cache = "DRAM";
        m.sizes = {{"array_bytes", static_cast<double>(dram_elements) * 8.0 * nt},
                   {"elements_per_thread", static_cast<double>(dram_elements)},
                   {"bytes_per_run", k.bytes_per_run}};
        if (static_cast<double>(dram_elements) * 8.0 * nt < 2 * llc_total)
            m.notes += "; arrays smaller than 2x the LLC: partly cache-resident";
        p.measurements.push_back(m);
        say(o, k.kernel + " (" + detail::fmt_bytes(static_cast<double>(dram_elements) * 8.0 * nt) + " per array): " +
                   si(m.median, "B/s") + (k.verified ? "" : "  NOT VERIFIED"));
    }

    // 5. Eigen GEMM fp32 and fp64, large enough to reach the rate of large GEMMs (Eigen's blocking overhead still
    // shows at 1536^3 fp64: 63-76 GFLOP/s there vs 83 at 5120^3 on the build VM). About 0.3-0.5 s per run.
    for (DType dt : {DType::fp32, DType::fp64}) {
        const long long n = quick ? 256 : (dt == DType::fp32 ? 3072 : 2560);
        const KernelRun k = run_gemm(team, dt, n, n, n, quick ? 3 : 7, 1);
        CeilingMeasurement m = measurement(k, Ceiling::gemm_flops, nt, 1, k.flops_per_run);
        m.dtype = dt;
        m.unit = Unit::matrix;
        m.sizes = {{"m", static_cast<double>(n)}, {"n", static_cast<double>(n)}, {"k", static_cast<double>(n)},
                   {"flops_per_run", k.flops_per_run}};
        p.measurements.push_back(m);
        say(o, k.kernel + " " + std::to_string(n) + "^3: " + si(m.median, "FLOP/s") + (k.verified ? "" : "  NOT VERIFIED"));
    }

    // 5b. An Eigen GEMV (fp32) over a matrix as large as one DRAM array: the bandwidth a library's streaming kernel
    // reaches. It does not set the DRAM ceiling (the best STREAM kernel does); device_from_profile takes its ratio to
    // that ceiling as the host's DRAM efficiency for derated times.
    {
        const long long cols = quick ? 1024 : 8192;
        const long long rows = std::max<long long>(64, static_cast<long long>(static_cast<double>(dram_elements) * 8.0 * nt / 4.0 / static_cast<double>(cols)));
        const KernelRun k = run_gemv(team, DType::fp32, rows, cols, reps, warmup);
        CeilingMeasurement m = measurement(k, Ceiling::bandwidth, nt, warmup, k.bytes_per_run);
        m.level = Level::dram;
        m.cache = "DRAM";
        m.feeds_model = false;
        m.sizes = {{"n", static_cast<double>(rows)}, {"k", static_cast<double>(cols)}, {"bytes_per_run", k.bytes_per_run}};
        m.notes += "; the DRAM efficiency of derated times (this bandwidth over the DRAM ceiling), not a ceiling";
        p.measurements.push_back(m);
        say(o, k.kernel + " " + std::to_string(rows) + "x" + std::to_string(cols) + ": " + si(m.median, "B/s") +
                   (k.verified ? "" : "  NOT VERIFIED"));
    }

    // 6. Intensity sweep: x read, k FMAs, y written; arrays of about the LLC each (2x the LLC in all).
    {
        const double sweep_bytes = quick ? 8 * kMiB : std::min(llc_total, array_bytes);
        const auto elements = static_cast<std::size_t>(sweep_bytes / 4.0 / nt);
        const std::vector<int> ks = quick ? std::vector<int>{0, 4, 32, 256}
                                          : std::vector<int>{0, 1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024};
        ProfileFit f;
        f.kernel = "sweep_fma_fp32";
        f.dtype = DType::fp32;
        f.unit = Unit::vector;
        f.level = Level::dram;
        bool all_ok = true;
        for (const KernelRun& k : run_sweep(team, ks, elements, quick ? 2 : 3, 1)) {
            SweepPoint sp;
            sp.flops = k.flops_per_run;
            sp.bytes = k.bytes_per_run;
            sp.seconds = k.seconds.median;
            sp.k = f.points.empty() ? ks[0] : ks[f.points.size()];
            f.points.push_back(sp);
            all_ok = all_ok && k.verified;
        }
        // All points share one size, so the overhead is told apart from the bandwidth term only through the
        // compute side's intercept; when that comes out above 0.5 % of the fastest run it is noise, and the fit is
        // redone with the overhead fixed at the measured dispatch time. A sweep too noisy to fit at all (a loaded
        // machine) is kept without a fit rather than failing the run.
        double fastest = f.points.front().seconds;
        for (const auto& sp : f.points) fastest = std::min(fastest, sp.seconds);
        FitOptions fixed;
        fixed.fit_overhead = false;
        fixed.fixed_overhead_s = dispatch_s;
        bool fitted = false;
        try {
            f.fit = fit_roofline(f.points);
            fitted = f.fit.launch_overhead_s <= 0.005 * fastest;
        } catch (const InvalidArgument&) {
        }
        if (!fitted) {
            try {
                f.fit = fit_roofline(f.points, fixed);
                f.model += "; overhead fixed at the measured empty-region dispatch time (the free fit's intercept "
                           "was below the timing noise of a single-size sweep)";
                fitted = true;
            } catch (const InvalidArgument& e) {
                p.notes += std::string("The intensity sweep could not be fitted (") + e.what() + "). ";
            }
        }
        if (!all_ok) p.notes += "The intensity sweep's output did not verify; its fit is suspect. ";
        if (fitted) say(o, "intensity sweep fit (" + std::to_string(f.points.size()) + " points): bandwidth " +
                   si(f.fit.bandwidth_Bps, "B/s") + ", peak " + si(f.fit.peak_flops, "FLOP/s") + ", overhead " +
                   si(f.fit.launch_overhead_s, "s") + ", residual " + std::to_string(f.fit.residual_rms_rel * 100).substr(0, 4) + " %");
        if (fitted) p.fits.push_back(f);
    }
    if (!team.pinned()) p.notes += "Threads could not be pinned to cores. ";
    if (quick) p.notes += "Quick run: few repetitions and small arrays (DRAM figures may be partly cache-resident). ";
    if (!p.notes.empty() && p.notes.back() == ' ') p.notes.pop_back();
    return p;
}

}  // namespace roofline::cpu
