#include "roofline/efficiency_fit.hpp"

#include "plan_impl.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"
#include "roofline/forward.hpp"
#include "roofline/kv_cache.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace roofline {

// -------------------------------------------------------------------------------------------------------------
// Calibration of the efficiency parameters

namespace {
// Seconds of a measurement split into what each parameter scales: DRAM time at full bandwidth, compute time
// at full peak (shape utilisation included), launches × 1 s, plus what no parameter touches.
struct Split {
    double dram = 0, compute = 0, launches = 0, fixed = 0;
};

// What the fit needs of one measurement's configuration.
struct FitContext {
    std::shared_ptr<const Device> device;  // the fixed cost per kernel as the engine sees it
    EngineBackend backend;
    PhaseOptions options;
    std::vector<TensorFormat> formats;
};

FitContext fit_context(const Model& model, const Device& device, const Engine& eng, const std::string& quant, const std::string& kv) {
    FitContext c;
    c.backend = eng.on(device);
    c.device = device_for_engine(device, c.backend);
    c.options = phase_options(c.backend, eng.id, parse_kv_format(kv), false, 1);
    with_device(c.options, device);
    c.formats = estimate_tensor_formats(model, quant);
    return c;
}

Split split_time(const FitContext& c, const ThroughputMeasurement& m, const Efficiency& eff) {
    Split s;
    const Device& dev = *c.device;
    auto take = [&](const std::vector<PhaseOp>& ops, double repeats) {
        for (const auto& op : ops) {
            if (op.name == "all_reduce") {  // tensor parallel 1 in a fit: never reached, kept for completeness
                const CeilingTimes t = all_reduce_times(c.backend, c.options.tensor_parallel, dev.interconnect_bandwidth(),
                                                        op.collective_bytes, Ceilings::derated);
                s.fixed += repeats * op.count * t.total();
                s.launches += repeats * op.count;  // its kernel
                continue;
            }
            const Timing ideal = evaluate(op.cost, dev, Ceilings::ideal);
            double util_compute = 0, serial_compute = 0;  // overlapped with memory or not (FlopTerm::overlapped)
            for (const auto& t : op.cost.flop_terms)
                (t.overlapped ? util_compute : serial_compute) +=
                    t.flops / (dev.execution_peak(t.format, t.unit).flops_per_s * t.utilization);
            // the ceiling that binds at the current parameters carries this op's time: the timing rule's bound of
            // the op's components scaled by them
            CeilingTimes at;
            at.matrix_s = util_compute / eff.compute_fraction;
            at.memory_s = ideal.times.memory_s;
            at.memory_s[0] /= eff.dram_bandwidth_fraction;
            switch (at.bound()) {
                case Bound::compute: s.compute += repeats * op.count * util_compute; break;
                case Bound::dram: s.dram += repeats * op.count * ideal.times.memory_s[0]; break;
                case Bound::l2:
                case Bound::sram: s.fixed += repeats * op.count * std::max(ideal.times.memory_s[1], ideal.times.memory_s[2]); break;
                default: break;
            }
            s.compute += repeats * op.count * serial_compute;  // follows whichever ceiling binds
            s.launches += repeats * op.count * op.cost.launches;
        }
    };
    const double B = m.batch, P = m.prompt_tokens, n = m.gen_tokens;
    if (n > 0) {  // a tgN point times the decode steps only; the mean context stands for them (affine in c)
        const double mid = std::floor(P + (n + 1) / 2);
        take(forward_ops(*m.model, c.formats, B, 1, mid - 1, c.options), n);
    } else {
        take(forward_ops(*m.model, c.formats, B, P, 0, c.options), 1);
    }
    return s;
}
}  // namespace

Device calibrate_efficiency(const Device& device, const std::vector<ThroughputMeasurement>& points, std::string_view engine_name,
                            const std::string& kv_dtype, FitReport* report) {
    if (points.empty()) throw InvalidArgument("calibration needs at least one measurement");
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        if (!p.model) throw InvalidArgument("measurement " + std::to_string(i) + " has no model");
        check_size("measurement " + std::to_string(i) + " tokens_per_s", p.tokens_per_s, true);
        check_count("measurement " + std::to_string(i) + " batch", p.batch);
        if (p.batch < 1) throw InvalidArgument("measurement " + std::to_string(i) + " batch must be >= 1, got " + std::to_string(p.batch));
        check_count("measurement " + std::to_string(i) + " prompt_tokens", p.prompt_tokens);
        check_count("measurement " + std::to_string(i) + " gen_tokens", p.gen_tokens);
        if (p.prompt_tokens + p.gen_tokens < 1)
            throw InvalidArgument("measurement " + std::to_string(i) + " has neither prompt nor generated tokens");
    }
    const std::shared_ptr<const Engine> eng_ptr = engine(engine_name);
    const Engine& eng = *eng_ptr;
    const double scale = eng.on(device).kernel_fixed_cost_scale;
    Device dev = device;
    // x = (1/η_dram, launch overhead as seen by the engine, 1/η_compute)
    Eigen::Vector3d x(1 / device.efficiency.dram_bandwidth_fraction, device.efficiency.launch_overhead_s * scale,
                      1 / device.efficiency.compute_fraction);
    const Eigen::Vector3d prior = x;
    auto measured_seconds = [](const ThroughputMeasurement& m) {
        const double tokens = m.gen_tokens > 0 ? m.batch * m.gen_tokens : m.batch * m.prompt_tokens;
        return tokens / m.tokens_per_s;
    };
    auto predict = [&](const Device& d) {
        std::vector<double> out;
        for (const auto& m : points) {
            Workload w;
            w.quant = m.quant;
            w.batch = m.batch;
            w.prompt_tokens = m.prompt_tokens;
            w.gen_tokens = m.gen_tokens;
            w.engine = eng.id;
            w.kv_dtype = kv_dtype;
            const Estimate e = estimate(*m.model, d, w);
            out.push_back(m.gen_tokens > 0 ? e.decode_tokens_per_s_total : e.prefill_tokens_per_s);
        }
        return out;
    };
    FitReport rep;
    for (const auto& m : points) {
        rep.labels.push_back(m.label);
        rep.measured.push_back(m.tokens_per_s);
    }
    rep.predicted_before = predict(device);

    const auto rows = static_cast<Eigen::Index>(points.size());
    constexpr double kPrior = 0.05;  // weak pull towards the starting values, relative
    for (int it = 0; it < 8; ++it) {
        Efficiency eff = device.efficiency;
        eff.dram_bandwidth_fraction = 1 / x(0);
        eff.compute_fraction = 1 / x(2);
        Eigen::MatrixXd A(rows + 3, 3);
        Eigen::VectorXd b(rows + 3);
        for (Eigen::Index r = 0; r < rows; ++r) {
            const ThroughputMeasurement& m = points[static_cast<std::size_t>(r)];
            const FitContext c = fit_context(*m.model, device, eng, m.quant, kv_dtype);
            const Split s = split_time(c, m, eff);
            const double t = measured_seconds(m);
            // decode: time of all steps of the batch; prefill: time of the prompt
            A(r, 0) = s.dram / t;
            A(r, 1) = s.launches / t;
            A(r, 2) = s.compute / t;
            b(r) = 1.0 - s.fixed / t;
        }
        for (int k = 0; k < 3; ++k) {
            A.row(rows + k).setZero();
            A(rows + k, k) = kPrior / prior(k);
            b(rows + k) = kPrior;
        }
        Eigen::Vector3d next = A.colPivHouseholderQr().solve(b);
        next(0) = std::clamp(next(0), 1.0, 1e3);  // efficiencies within [0.001, 1], as a device file allows
        next(2) = std::clamp(next(2), 1.0, 1e3);
        next(1) = std::max(next(1), 0.0);
        rep.iterations = it + 1;
        const bool done = (next - x).cwiseAbs().maxCoeff() < 1e-9 * std::max(1.0, x.cwiseAbs().maxCoeff());
        x = next;
        if (done) break;
    }
    dev.efficiency.dram_bandwidth_fraction = 1 / x(0);
    dev.efficiency.compute_fraction = 1 / x(2);
    dev.efficiency.launch_overhead_s = x(1) / scale;
    dev.efficiency.provenance.source = "fitted to " + std::to_string(points.size()) + " measurement(s) with engine " +
                                       eng.id + " (least squares on relative error; started from: " +
                                       device.efficiency.provenance.source + ")";
    dev.efficiency.provenance.uncertain = "";
    rep.predicted_after = predict(dev);
    auto rms = [&](const std::vector<double>& pred) {
        double s = 0;
        for (std::size_t i = 0; i < pred.size(); ++i) s += std::pow(pred[i] / rep.measured[i] - 1, 2);
        return std::sqrt(s / static_cast<double>(pred.size()));
    };
    rep.rms_relative_error_before = rms(rep.predicted_before);
    rep.rms_relative_error_after = rms(rep.predicted_after);
    rep.dram_bandwidth_fraction = dev.efficiency.dram_bandwidth_fraction;
    rep.compute_fraction = dev.efficiency.compute_fraction;
    rep.launch_overhead_s = dev.efficiency.launch_overhead_s;
    if (report) *report = rep;
    return dev;
}

}  // namespace roofline
