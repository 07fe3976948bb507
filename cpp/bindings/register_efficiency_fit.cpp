#include "bindings.hpp"

#include "roofline/efficiency_fit.hpp"

using namespace roofline;

void register_efficiency_fit(py::module_& m) {
    py::class_<FitReport>(m, "FitReport", "Residuals and parameters of an efficiency fit")
        .def_readonly("labels", &FitReport::labels)
        .def_readonly("measured", &FitReport::measured)
        .def_readonly("predicted_before", &FitReport::predicted_before)
        .def_readonly("predicted_after", &FitReport::predicted_after)
        .def_readonly("rms_relative_error_before", &FitReport::rms_relative_error_before)
        .def_readonly("rms_relative_error_after", &FitReport::rms_relative_error_after)
        .def_readonly("dram_bandwidth_fraction", &FitReport::dram_bandwidth_fraction)
        .def_readonly("compute_fraction", &FitReport::compute_fraction)
        .def_readonly("launch_overhead_s", &FitReport::launch_overhead_s)
        .def_readonly("iterations", &FitReport::iterations);

    m.def(
        "calibrate_efficiency",
        [](const Device& device, const std::vector<std::tuple<const Model*, std::string, double, double, double, double, std::string>>& pts,
           const std::string& engine, const std::string& kv_dtype, std::optional<bool> flash_attention) {
            std::vector<ThroughputMeasurement> ms;
            for (const auto& [model, quant, batch, prompt, gen, tps, label] : pts)
                ms.push_back(ThroughputMeasurement{model, quant, batch, prompt, gen, tps, label});
            FitReport rep;
            Device d;
            {
                py::gil_scoped_release release;
                d = calibrate_efficiency(device, ms, engine, kv_dtype, &rep, flash_attention);
            }
            return py::make_tuple(d, rep);
        },
        py::arg("device"), py::arg("points"), py::arg("engine") = "llama.cpp", py::arg("kv_dtype") = "f16",
        py::arg("flash_attention") = py::none(),
        "flash_attention: None for the engine's default; points: (model, quant, batch, prompt_tokens, gen_tokens, tokens_per_s, label); returns (device, FitReport)");
}
