#include <sstream>
#include "roofline/efficiency_fit.hpp"

#include "least_squares.hpp"
#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/estimate.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <memory>

namespace roofline {

// -------------------------------------------------------------------------------------------------------------
// Calibration of the efficiency parameters: least squares on log(predicted / measured) over the estimator itself

Device calibrate_efficiency(const Device& device, const std::vector<ThroughputMeasurement>& points, std::string_view engine_name,
                            const std::string& kv_dtype, FitReport* report, std::optional<bool> flash_attention) {
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
    Device dev = device;
    auto with = [&](const Eigen::VectorXd& x) {  // x = log(η_dram, launch overhead [s], η_compute)
        Device d = device;
        d.efficiency.dram_bandwidth_fraction = std::exp(x(0));
        d.efficiency.launch_overhead_s = std::exp(x(1));
        d.efficiency.compute_fraction = std::exp(x(2));
        return d;
    };
    auto workload_of = [&](const ThroughputMeasurement& m) {
        Workload w;
        w.quant = m.quant;
        w.batch = m.batch;
        w.prompt_tokens = m.prompt_tokens;
        w.gen_tokens = m.gen_tokens;
        w.engine = eng.id;
        w.kv_dtype = kv_dtype;
        w.flash_attention = flash_attention.value_or(false);
        w.flash_attention_from_engine = !flash_attention;
        return w;
    };
    // what a point measured, in its estimate: the batch's decode rate, or the prefill's without generated tokens
    auto rate_of = [](const ThroughputMeasurement& m, const Estimate& e) {
        return m.gen_tokens > 0 ? e.decode_tokens_per_s_total : e.prefill_tokens_per_s;
    };
    auto predict = [&](const Device& d) {
        std::vector<double> out;
        for (const auto& m : points) out.push_back(rate_of(m, estimate(*m.model, d, workload_of(m))));
        return out;
    };
    FitReport rep;
    for (const auto& m : points) {
        rep.labels.push_back(m.label);
        rep.measured.push_back(m.tokens_per_s);
    }
    for (std::size_t i = 0; i < points.size(); ++i) {  // the starting prediction; a measurement far above the roofline is not one
        const auto& m = points[i];
        const Estimate e = estimate(*m.model, device, workload_of(m));
        rep.predicted_before.push_back(rate_of(m, e));
        const double ceiling = m.gen_tokens > 0 ? e.ceiling_decode_total : e.ceiling_prefill;
        if (ceiling > 0 && m.tokens_per_s > kMaxMeasuredOverRoofline * ceiling) {
            std::ostringstream os;
            os.precision(4);
            os << "measurement " << i << (m.label.empty() ? "" : " (" + m.label + ")") << ": tokens_per_s " << m.tokens_per_s
               << " is " << m.tokens_per_s / ceiling << "x the pure roofline of that workload on '" << device.id << "' ("
               << ceiling << " tokens/s from its datasheet ceilings); at most " << kMaxMeasuredOverRoofline
               << "x is accepted (a typo, or another model, quantization or device?)";
            throw InvalidArgument(os.str());
        }
    }

    // least squares on log(predicted / measured), in the log of each parameter, with a weak pull towards the
    // starting values (so that what the points do not determine — compute from decode points only — stays put)
    const Eigen::Vector3d prior(std::log(device.efficiency.dram_bandwidth_fraction),
                                std::log(std::max(device.efficiency.launch_overhead_s, 1e-9)),
                                std::log(device.efficiency.compute_fraction));
    const Eigen::Vector3d lo(std::log(1e-3), std::log(1e-9), std::log(1e-3)), hi(0.0, std::log(1e-2), 0.0);
    constexpr double kPrior = 0.05;
    const auto rows = static_cast<Eigen::Index>(points.size());
    auto residuals = [&](const Eigen::VectorXd& x) {
        const std::vector<double> y = predict(with(x));
        Eigen::VectorXd r(rows + 3);
        for (Eigen::Index i = 0; i < rows; ++i) r(i) = std::log(y[static_cast<std::size_t>(i)] / points[static_cast<std::size_t>(i)].tokens_per_s);
        for (Eigen::Index k = 0; k < 3; ++k) r(rows + k) = kPrior * (x(k) - prior(k));
        return r;
    };
    const detail::LeastSquaresResult ls = detail::least_squares(residuals, prior, lo, hi, 30);
    rep.iterations = ls.iterations;
    dev = with(ls.x);
    dev.efficiency.provenance.source = "fitted to " + std::to_string(points.size()) + " measurement(s) with engine " +
                                       eng.id + " (least squares on log(predicted / measured); started from: " +
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
