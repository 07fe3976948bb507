#include "roofline/engine_fit.hpp"

#include "roofline/errors.hpp"
#include "roofline/plan.hpp"
#include "roofline/weights.hpp"

#include "least_squares.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

namespace roofline {

namespace {

EngineBackend& backend_of(Engine& e, const std::string& name) {
    for (auto& b : e.backends)
        if (b.backend == name) return b;
    throw InvalidArgument("engine '" + e.id + "' describes no backend '" + name + "' (fit parameters name a described backend)");
}

// The numbers a key names in a backend: one, or for "linear_kernels[<prefix>*]..." that field of every kernel whose
// name starts with the prefix (kernels that share a parameter, e.g. one GEMM kernel listed per weight format).
std::vector<double*> parameter_slots(EngineBackend& b, const std::string& key, const std::string& engine_id) {
    if (key == "bandwidth_fraction") return {&b.bandwidth_fraction};
    if (key == "kernel_fixed_cost_scale") return {&b.kernel_fixed_cost_scale};
    const std::string prefix = "linear_kernels[";
    std::vector<double*> out;
    if (key.rfind(prefix, 0) == 0) {
        const auto close = key.rfind("].");
        if (close != std::string::npos && close > prefix.size()) {
            std::string name = key.substr(prefix.size(), close - prefix.size());
            const std::string field = key.substr(close + 2);
            const bool glob = name.back() == '*';
            if (glob) name.pop_back();
            for (auto& k : b.linear_kernels) {
                if (glob ? k.name.rfind(name, 0) != 0 : k.name != name) continue;
                if (field == "efficiency") out.push_back(&k.efficiency);
                else if (field == "alu_ops_per_mac") out.push_back(&k.alu_ops_per_mac);
            }
            if (out.empty()) {
                std::vector<std::string> names;
                for (const auto& k : b.linear_kernels) names.push_back("'" + k.name + "'");
                std::string have;
                for (const auto& n : names) have += (have.empty() ? "" : ", ") + n;
                throw InvalidArgument("engine '" + engine_id + "' backend '" + b.backend + "': '" + key +
                                      "' names no kernel field (fields: efficiency, alu_ops_per_mac; kernels: " + have + ")");
            }
            return out;
        }
    }
    throw InvalidArgument("engine '" + engine_id + "' backend '" + b.backend + "': '" + key +
                          "' is not a fit parameter (bandwidth_fraction, kernel_fixed_cost_scale, "
                          "linear_kernels[<name>].efficiency, linear_kernels[<name>].alu_ops_per_mac; a name ending "
                          "in * stands for every kernel it begins)");
}

void check_points(const std::vector<ValidationCase>& points) {
    if (points.empty()) throw InvalidArgument("an engine fit needs at least one measurement");
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (!points[i].model || !points[i].device) throw InvalidArgument("fit point " + std::to_string(i) + " has no model or device");
        check_size("fit point " + std::to_string(i) + " measured tokens/s", points[i].measured_tokens_per_s, true);
    }
}

// Predictions, sharing each (model, quant)'s tensor formats between the points.
struct Predictor {
    const std::vector<ValidationCase>& points;
    std::map<std::pair<const Model*, std::string>, std::vector<TensorFormat>> formats;
    explicit Predictor(const std::vector<ValidationCase>& p) : points(p) {
        for (const auto& x : p) {
            auto key = std::make_pair(x.model, x.workload.quant);
            if (!formats.count(key)) formats.emplace(key, estimate_tensor_formats(*x.model, x.workload.quant));
        }
    }
    double one(const std::shared_ptr<const Engine>& e, const ValidationCase& x) const {
        const Workload& w = x.workload;
        const bool own = e->quant_for(w.quant) != w.quant;  // the engine reads the name its own way
        const EstimatePlan plan(*x.model, *x.device, PlanConfig::of(w, e), own ? nullptr : &formats.at(std::make_pair(x.model, w.quant)));
        const EstimateRow r = plan.evaluate(w.batch, w.prompt_tokens, w.gen_tokens, w.context_tokens, nullptr);
        return w.gen_tokens > 0 ? r.decode_tokens_per_s : r.prefill_tokens_per_s;
    }
    std::vector<double> all(const Engine& e, const std::vector<std::size_t>& which) const {
        const auto shared = std::make_shared<const Engine>(e);
        std::vector<double> out;
        out.reserve(which.size());
        for (std::size_t i : which) out.push_back(one(shared, points[i]));
        return out;
    }
};

std::vector<std::size_t> all_indices(std::size_t n) {
    std::vector<std::size_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = i;
    return v;
}

EngineFitResult fit_subset(const Engine& start, const std::vector<EngineParameter>& params, const Predictor& pred,
                           const std::vector<std::size_t>& which, int max_iterations) {
    const auto n = static_cast<Eigen::Index>(which.size());
    const auto p = static_cast<Eigen::Index>(params.size());
    EngineFitResult r;
    r.engine = start;
    Eigen::VectorXd x(p), lo(p), hi(p);  // log of each parameter
    for (Eigen::Index j = 0; j < p; ++j) {
        const EngineParameter& q = params[static_cast<std::size_t>(j)];
        lo(j) = std::log(q.lo);
        hi(j) = std::log(q.hi);
        x(j) = std::clamp(std::log(std::max(engine_parameter(start, q), q.lo)), lo(j), hi(j));
    }
    auto engine_at = [&](const Eigen::VectorXd& v) {
        Engine e = start;
        for (Eigen::Index j = 0; j < p; ++j) set_engine_parameter(e, params[static_cast<std::size_t>(j)], std::exp(v(j)));
        return e;
    };
    auto residuals = [&](const Eigen::VectorXd& v) {
        const std::vector<double> y = pred.all(engine_at(v), which);
        Eigen::VectorXd res(n);
        for (Eigen::Index i = 0; i < n; ++i)
            res(i) = std::log(y[static_cast<std::size_t>(i)] / pred.points[which[static_cast<std::size_t>(i)]].measured_tokens_per_s);
        return res;
    };
    const detail::LeastSquaresResult ls = detail::least_squares(residuals, x, lo, hi, max_iterations);
    x = ls.x;
    const double cost = ls.cost;
    r.iterations = ls.iterations;
    r.engine = engine_at(x);
    for (Eigen::Index j = 0; j < p; ++j) r.values.push_back(std::exp(x(j)));
    r.rms_log_error = n > 0 ? std::sqrt(cost / static_cast<double>(n)) : 0.0;
    return r;
}

}  // namespace

double engine_parameter(const Engine& engine, const EngineParameter& parameter) {
    Engine e = engine;  // parameter_slots gives writable slots; read the first from a copy
    return *parameter_slots(backend_of(e, parameter.backend), parameter.key, engine.id).front();
}

void set_engine_parameter(Engine& engine, const EngineParameter& parameter, double value) {
    check_size("engine parameter " + parameter.key, value);
    for (double* slot : parameter_slots(backend_of(engine, parameter.backend), parameter.key, engine.id)) *slot = value;
    // a parameter of 'any' is also that of every backend that does not describe it differently: the fit changes the
    // backend it names only
}

std::vector<double> predict_points(const Engine& engine, const std::vector<ValidationCase>& points) {
    check_points(points);
    const Predictor pred(points);
    return pred.all(engine, all_indices(points.size()));
}

EngineFitResult fit_engine(const Engine& start, const std::vector<EngineParameter>& parameters,
                           const std::vector<ValidationCase>& points, int max_iterations) {
    check_points(points);
    for (const auto& q : parameters) {
        engine_parameter(start, q);  // names a parameter
        if (!(q.lo > 0) || !(q.hi >= q.lo)) throw InvalidArgument("fit parameter " + q.key + ": bounds must be 0 < lo <= hi");
    }
    const Predictor pred(points);
    EngineFitResult r = fit_subset(start, parameters, pred, all_indices(points.size()), max_iterations);
    r.predicted = pred.all(r.engine, all_indices(points.size()));
    return r;
}

std::vector<double> cross_validate(const Engine& start, const std::vector<EngineParameter>& parameters,
                                   const std::vector<ValidationCase>& points, const std::vector<std::string>& groups_of,
                                   int max_iterations) {
    check_points(points);
    if (groups_of.size() != points.size())
        throw InvalidArgument("cross_validate: one group per point is needed (" + std::to_string(points.size()) +
                              " points, " + std::to_string(groups_of.size()) + " groups)");
    const Predictor pred(points);
    std::vector<std::string> groups;
    for (const auto& g : groups_of)
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    std::vector<double> out(points.size(), 0.0);
    for (const auto& g : groups) {
        std::vector<std::size_t> train, test;
        for (std::size_t i = 0; i < points.size(); ++i) (groups_of[i] == g ? test : train).push_back(i);
        if (train.empty()) throw InvalidArgument("cross-validation needs at least two groups; all points are in '" + g + "'");
        const EngineFitResult fit = fit_subset(start, parameters, pred, train, max_iterations);
        const std::vector<double> y = pred.all(fit.engine, test);
        for (std::size_t k = 0; k < test.size(); ++k) out[test[k]] = y[k];
    }
    return out;
}

}  // namespace roofline
