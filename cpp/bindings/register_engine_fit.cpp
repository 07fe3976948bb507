#include "bindings.hpp"

#include "roofline/engine_fit.hpp"

using namespace roofline;

namespace {
std::vector<ValidationCase> cases_of(const std::vector<py::dict>& rows, const std::vector<const Model*>& models,
                                     const std::vector<const Device*>& devices) {
    if (rows.size() != models.size() || rows.size() != devices.size())
        throw InvalidArgument("one model and one device per point are needed");
    std::vector<ValidationCase> out;
    for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(validation_case(rows[i], models[i], devices[i]));
    return out;
}
std::vector<EngineParameter> parameters_of(const std::vector<std::tuple<std::string, std::string, double, double>>& ps) {
    std::vector<EngineParameter> out;
    for (const auto& [backend, key, lo, hi] : ps) out.push_back(EngineParameter{backend, key, lo, hi});
    return out;
}
}  // namespace

void register_engine_fit(py::module_& m) {
    py::class_<EngineFitResult>(m, "EngineFitResult", "An engine with fitted parameters, and how well it fits")
        .def_readonly("engine", &EngineFitResult::engine)
        .def_readonly("values", &EngineFitResult::values, "per parameter, in the order given")
        .def_readonly("predicted", &EngineFitResult::predicted, "tokens/s per point after the fit")
        .def_readonly("rms_log_error", &EngineFitResult::rms_log_error)
        .def_readonly("iterations", &EngineFitResult::iterations);

    m.def(
        "engine_parameter",
        [](const Engine& e, const std::string& backend, const std::string& key) {
            return engine_parameter(e, EngineParameter{backend, key, 1e-3, 1e3});
        },
        py::arg("engine"), py::arg("backend"), py::arg("key"), "The value of a fit parameter of an engine backend");
    m.def(
        "predict_points",
        [](const Engine& e, const std::vector<py::dict>& rows, const std::vector<const Model*>& models,
           const std::vector<const Device*>& devices) {
            const auto cases = cases_of(rows, models, devices);
            py::gil_scoped_release release;
            return predict_points(e, cases);
        },
        py::arg("engine"), py::arg("rows"), py::arg("models"), py::arg("devices"),
        "Tokens/s of each point's phase with this engine (rows as validate() takes them)");
    m.def(
        "fit_engine",
        [](const Engine& e, const std::vector<std::tuple<std::string, std::string, double, double>>& params,
           const std::vector<py::dict>& rows, const std::vector<const Model*>& models,
           const std::vector<const Device*>& devices, int max_iterations) {
            const auto cases = cases_of(rows, models, devices);
            const auto ps = parameters_of(params);
            py::gil_scoped_release release;
            return fit_engine(e, ps, cases, max_iterations);
        },
        py::arg("engine"), py::arg("parameters"), py::arg("rows"), py::arg("models"), py::arg("devices"),
        py::arg("max_iterations") = 60,
        "parameters: (backend, key, lo, hi); least squares on log(predicted / measured) (engine_fit.hpp)");
    m.def(
        "cross_validate_engine",
        [](const Engine& e, const std::vector<std::tuple<std::string, std::string, double, double>>& params,
           const std::vector<py::dict>& rows, const std::vector<const Model*>& models,
           const std::vector<const Device*>& devices, const std::vector<std::string>& groups, int max_iterations) {
            const auto cases = cases_of(rows, models, devices);
            const auto ps = parameters_of(params);
            py::gil_scoped_release release;
            return cross_validate(e, ps, cases, groups, max_iterations);
        },
        py::arg("engine"), py::arg("parameters"), py::arg("rows"), py::arg("models"), py::arg("devices"),
        py::arg("groups"), py::arg("max_iterations") = 60,
        "Each point predicted by a fit without its group (engine_fit.hpp)");
}
