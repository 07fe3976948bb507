// Calibration: profiles, calibrated devices, the roofline fit, and the host-CPU measurement (GIL released).
#include "bindings.hpp"

#include "roofline/calibrate_cpu.hpp"
#include "roofline/calibration.hpp"

#include <cstdio>

using namespace roofline;

namespace {
py::dict measurement_dict(const CeilingMeasurement& m) {
    py::dict d;
    d["ceiling"] = std::string(ceiling_name(m.ceiling));
    d["level"] = m.ceiling == Ceiling::bandwidth ? py::object(py::str(std::string(level_name(m.level)))) : py::object(py::none());
    const bool flops = m.ceiling == Ceiling::peak_flops || m.ceiling == Ceiling::gemm_flops;
    d["dtype"] = flops ? py::object(py::str(std::string(dtype_name(m.dtype)))) : py::object(py::none());
    d["unit"] = flops ? py::object(py::str(std::string(unit_name(m.unit)))) : py::object(py::none());
    d["cache"] = m.cache;
    d["kernel"] = m.kernel;
    py::dict sizes;
    for (const auto& [k, v] : m.sizes) sizes[py::str(k)] = v;
    d["sizes"] = sizes;
    d["threads"] = m.threads;
    d["repetitions"] = m.repetitions;
    d["si_unit"] = std::string(ceiling_si_unit(m.ceiling));
    d["min"] = m.min;
    d["median"] = m.median;
    d["max"] = m.max;
    d["verified"] = m.verified;
    d["feeds_model"] = m.feeds_model;
    d["notes"] = m.notes;
    return d;
}

py::dict fit_dict(const RooflineFit& f) {
    py::dict d;
    d["bandwidth_Bps"] = f.bandwidth_Bps;
    d["peak_flops"] = f.peak_flops;
    d["launch_overhead_s"] = f.launch_overhead_s;
    d["residual_rms_rel"] = f.residual_rms_rel;
    d["iterations"] = f.iterations;
    d["memory_points"] = f.memory_points;
    d["compute_points"] = f.compute_points;
    return d;
}

py::dict kernel_dict(const cpu::KernelRun& k) {
    py::dict d;
    d["kernel"] = k.kernel;
    d["min_s"] = k.seconds.min;
    d["median_s"] = k.seconds.median;
    d["max_s"] = k.seconds.max;
    d["repetitions"] = k.seconds.repetitions;
    d["bytes"] = k.bytes_per_run;
    d["flops"] = k.flops_per_run;
    d["verified"] = k.verified;
    d["detail"] = k.detail;
    return d;
}

DType float_dtype(const std::string& name) {
    const DType d = parse_dtype(name);
    if (d != DType::fp32 && d != DType::fp64)
        throw InvalidArgument("dtype must be 'fp32' or 'fp64' for the CPU kernels, got '" + name + "'");
    return d;
}
}  // namespace

void register_calibration(py::module_& m) {
    auto c = m.def_submodule("calibration", "Calibration profiles, calibrated devices, the roofline fit, host kernels");

    py::class_<Profile>(c, "Profile", "A calibration profile: what a tool measured on one device")
        .def_readonly("date", &Profile::date)
        .def_readonly("tool_name", &Profile::tool_name)
        .def_readonly("tool_version", &Profile::tool_version)
        .def_readonly("origin", &Profile::origin)
        .def_readonly("notes", &Profile::notes)
        .def_property_readonly("device_name", [](const Profile& p) { return p.device.name; })
        .def_property_readonly("device_kind", [](const Profile& p) { return p.device.kind; })
        .def_property_readonly("measurements",
                               [](const Profile& p) {
                                   py::list out;
                                   for (const auto& ms : p.measurements) out.append(measurement_dict(ms));
                                   return out;
                               })
        .def_property_readonly("fits",
                               [](const Profile& p) {
                                   py::list out;
                                   for (const auto& f : p.fits) {
                                       py::dict d = fit_dict(f.fit);
                                       d["name"] = f.name;
                                       d["kernel"] = f.kernel;
                                       d["model"] = f.model;
                                       py::list pts;
                                       for (const auto& sp : f.points)
                                           pts.append(py::make_tuple(sp.k, sp.flops, sp.bytes, sp.seconds));
                                       d["points"] = pts;  // (k, flops, bytes, seconds)
                                       out.append(d);
                                   }
                                   return out;
                               })
        .def("to_json", &profile_to_json, py::arg("indent") = 2, "The profile as schema-conforming JSON text")
        .def("__repr__", [](const Profile& p) {
            return "<Profile " + p.device.name + " by " + p.tool_name + " on " + p.date + ", " +
                   std::to_string(p.measurements.size()) + " measurements>";
        });

    c.def("parse_profile", &parse_profile, py::arg("json_text"), py::arg("origin") = "<string>",
          "Parse and validate a calibration profile from JSON text");
    c.def("load_profile", &load_profile, py::arg("path"), "Load and validate a calibration profile file");
    c.def("calibrated", &calibrated, py::arg("device"), py::arg("profile"),
          "The device with the profile's measured ceilings in place of the datasheet's");
    c.def("device_from_profile", &device_from_profile, py::arg("profile"), "The measured device alone");
    c.def(
        "datasheet_device_id",
        [](const std::string& name, const DeviceDB& db) { return datasheet_device_id(name, db); },
        py::arg("runtime_name"), py::arg("db"), "The database id whose datasheet a runtime-reported name describes, or ''");
    c.def(
        "report",
        [](const Profile& p, const Device* ds) {
            py::list out;
            for (const auto& r : calibration_report(p, ds)) {
                py::dict d;
                auto opt = [](const std::string& s) { return s.empty() ? py::object(py::none()) : py::object(py::str(s)); };
                auto optd = [](double v) { return v > 0 ? py::object(py::float_(v)) : py::object(py::none()); };
                d["ceiling"] = r.ceiling;
                d["dtype"] = opt(r.dtype);
                d["unit"] = opt(r.unit);
                d["level"] = opt(r.level);
                d["measured"] = r.measured;
                d["datasheet"] = optd(r.datasheet);
                d["ratio"] = optd(r.ratio);
                d["si_unit"] = r.si_unit;
                d["kernel"] = r.kernel;
                d["cache"] = opt(r.cache);
                d["min"] = r.min;
                d["max"] = r.max;
                d["repetitions"] = r.repetitions;
                d["verified"] = r.verified;
                d["feeds_model"] = r.feeds_model;
                d["applied"] = r.applied;
                d["source"] = opt(r.source);
                d["note"] = opt(r.note);
                out.append(d);
            }
            return out;
        },
        py::arg("profile"), py::arg("datasheet") = nullptr,
        "Rows of measured vs datasheet ceilings (dicts), numbers from the core");
    c.def(
        "fit_roofline",
        [](const std::vector<std::tuple<double, double, double>>& points, bool fit_overhead, double fixed_overhead_s) {
            std::vector<SweepPoint> pts;
            for (const auto& [flops, bytes, seconds] : points) pts.push_back({flops, bytes, seconds, -1});
            FitOptions o;
            o.fit_overhead = fit_overhead;
            o.fixed_overhead_s = fixed_overhead_s;
            return fit_dict(fit_roofline(pts, o));
        },
        py::arg("points"), py::arg("fit_overhead") = true, py::arg("fixed_overhead_s") = 0.0,
        "Fit seconds = max(bytes/B, flops/F) + t0 to (flops, bytes, seconds) points by least squares");
    c.def(
        "calibrate_cpu",
        [](bool quick, int threads, bool pin, double dram_array_bytes, int repetitions, const std::string& options_text,
           bool verbose, const std::string& tool_name) {
            cpu::CpuCalibrationOptions o;
            o.quick = quick;
            o.threads = threads;
            o.pin = pin;
            o.dram_array_bytes = dram_array_bytes;
            o.repetitions = repetitions;
            o.options_text = options_text;
            o.tool_name = tool_name;
            if (verbose) o.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
            py::gil_scoped_release release;
            return cpu::calibrate_cpu(o);
        },
        py::arg("quick") = false, py::arg("threads") = 0, py::arg("pin") = true, py::arg("dram_array_bytes") = 0.0,
        py::arg("repetitions") = 0, py::arg("options_text") = "", py::arg("verbose") = false,
        py::arg("tool_name") = "rooflinepy calibrate cpu",
        "Measure the host CPU's ceilings (about a minute; quick: seconds) and return the profile");
    c.def(
        "time_stream",
        [](const std::vector<std::string>& kernels, double array_bytes, int threads, int repetitions, int warmup) {
            std::vector<cpu::Stream> ks;
            for (const auto& k : kernels) ks.push_back(cpu::parse_stream(k));
            std::vector<cpu::KernelRun> runs;
            {
                py::gil_scoped_release release;
                runs = cpu::run_stream_bytes(*cpu::host_team(threads), ks, array_bytes, repetitions, warmup);
            }
            py::list out;
            for (const auto& r : runs) out.append(kernel_dict(r));
            return out;
        },
        py::arg("kernels"), py::arg("array_bytes"), py::arg("threads") = 0, py::arg("repetitions") = 10,
        py::arg("warmup") = 2,
        "Time the calibration's STREAM kernels (fp64 arrays of array_bytes each, split across pinned threads)");
    c.def(
        "time_fma",
        [](const std::string& dtype, long long iterations, int threads, int repetitions) {
            const DType dt = float_dtype(dtype);
            cpu::KernelRun r;
            {
                py::gil_scoped_release release;
                r = cpu::run_fma(*cpu::host_team(threads), dt, iterations, repetitions, 2);
            }
            return kernel_dict(r);
        },
        py::arg("dtype"), py::arg("iterations") = 2000000, py::arg("threads") = 0, py::arg("repetitions") = 15,
        "Time the calibration's FMA-peak kernel");
    c.def(
        "host_info",
        []() {
            const cpu::HostInfo h = cpu::host_info();
            py::dict d;
            d["model_name"] = h.model_name;
            d["vendor"] = h.vendor;
            d["logical_cpus"] = h.logical_cpus;
            d["physical_cores"] = h.physical_cores;
            d["clock_hz"] = h.clock_hz;
            d["clock_source"] = h.clock_source;
            d["memory_bytes"] = h.memory_bytes;
            d["flags"] = h.flags;
            d["simd_bytes"] = h.simd_bytes;
            py::list caches;
            for (const auto& c : h.caches) caches.append(py::make_tuple(c.name, c.size_bytes, c.shared_by_threads));
            d["caches"] = caches;  // (name, bytes per instance, threads sharing it)
            return d;
        },
        "What the OS tells about the host (model, cores, clock, memory, caches, ISA flags)");
    c.def(
        "measure_clock_hz",
        [](int repetitions) {
            py::gil_scoped_release release;
            return cpu::measure_clock_hz(repetitions);
        },
        py::arg("repetitions") = 5, "The calling thread's core clock from a chain of dependent integer multiplies");
    c.def(
        "time_eigen",
        [](const std::string& op, long long m, long long n, long long k, const std::string& dtype, int threads,
           int repetitions, int warmup) {
            const DType dt = float_dtype(dtype);
            if (op != "gemm" && op != "gemv")
                throw InvalidArgument("op must be 'gemm' or 'gemv', got '" + op + "'");
            cpu::KernelRun r;
            {
                py::gil_scoped_release release;
                const auto team = cpu::host_team(threads);
                r = op == "gemm" ? cpu::run_gemm(*team, dt, m, n, k, repetitions, warmup)
                                 : cpu::run_gemv(*team, dt, n, k, repetitions, warmup);
            }
            return kernel_dict(r);
        },
        py::arg("op"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "fp32", py::arg("threads") = 0,
        py::arg("repetitions") = 5, py::arg("warmup") = 1,
        "Time an Eigen GEMM (C[m×n] = A[m×k]·B[k×n]) or GEMV (y[n] = W[n×k]·x[k], m ignored) on the host's "
        "pinned threads, split as the calibration does: seconds (min/median/max) with the run's FLOPs and bytes");
}
