#include "bindings.hpp"

#include "roofline/deployment.hpp"

using namespace roofline;

void register_deployment(py::module_& m) {
    py::class_<Deployment>(m, "Deployment", "One candidate deployment: count devices × replicas running the model")
        .def_readonly("device", &Deployment::device)
        .def_readonly("count", &Deployment::count)
        .def_readonly("split_mode", &Deployment::split_mode, "the split it ran: none, layer or tensor")
        .def_readonly("quant", &Deployment::quant)
        .def_readonly("feasible", &Deployment::feasible)
        .def_readonly("batch", &Deployment::batch)
        .def_readonly("replicas", &Deployment::replicas)
        .def_readonly("tokens_per_s", &Deployment::tokens_per_s)
        .def_readonly("capacity_tokens_per_s", &Deployment::capacity_tokens_per_s)
        .def_readonly("tpot_s", &Deployment::tpot_s)
        .def_readonly("ttft_s", &Deployment::ttft_s)
        .def_readonly("cost_per_hour", &Deployment::cost_per_hour)
        .def_readonly("cost_per_million_tokens", &Deployment::cost_per_million_tokens)
        .def_readonly("cost_per_million_tokens_at_capacity", &Deployment::cost_per_million_tokens_at_capacity)
        .def_readonly("reason", &Deployment::reason);
    m.def(
        "cheapest_deployments",
        [](const Model& model, const std::vector<const Device*>& devices, const std::vector<double>& prices,
           const std::vector<std::string>& quants, const std::vector<int>& counts, double prompt_tokens, double gen_tokens,
           double target, double tpot_s, double ttft_s, const std::string& kv_dtype, std::optional<bool> flash_attention,
           const std::string& engine, bool replicas, const std::string& split_mode) {
            DeploymentRequest r;
            r.model = &model;
            r.devices = devices;
            r.price_per_hour = prices;
            r.quants = quants;
            r.counts = counts;
            r.prompt_tokens = prompt_tokens;
            r.gen_tokens = gen_tokens;
            r.target_tokens_per_s = target;
            r.tpot_s = tpot_s;
            r.ttft_s = ttft_s;
            r.kv_dtype = kv_dtype;
            r.flash_attention = flash_attention.value_or(false);
            r.flash_attention_from_engine = !flash_attention;  // None: the engine's default
            r.engine = engine;
            r.replicas = replicas;
            r.split_mode = split_mode;
            py::gil_scoped_release release;
            return cheapest_deployments(r);
        },
        py::arg("model"), py::arg("devices"), py::arg("price_per_hour"), py::arg("quants"), py::arg("counts"),
        py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("target_tokens_per_s"), py::arg("tpot_s"),
        py::arg("ttft_s"), py::arg("kv_dtype"), py::arg("flash_attention"), py::arg("engine"), py::arg("replicas"),
        py::arg("split_mode") = "",
        "Every (device, count, quant) candidate serving the target, cheapest first (deployment.hpp)");
}
