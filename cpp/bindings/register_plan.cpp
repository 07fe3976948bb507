#include "bindings.hpp"

#include "roofline/plan.hpp"

using namespace roofline;

void register_plan(py::module_& m) {
    py::class_<EstimatePlan, std::shared_ptr<EstimatePlan>>(
        m, "EstimatePlan",
        "A model × device × configuration ready to be estimated at any batch, prompt and generated tokens in O(1)")
        .def(py::init([](const Model& model, const Device& device, const std::string& quant, const std::string& kv_dtype,
                         std::optional<bool> flash_attention, const std::string& engine, double tensor_parallel, double ubatch_tokens,
                         const Engine* engine_object, const std::string& split_mode) {
                 check_range("tensor_parallel", tensor_parallel, 1, 1024);
                 check_count("tensor_parallel", tensor_parallel);
                 check_count("ubatch_tokens", ubatch_tokens);
                 PlanConfig config{quant, kv_dtype, flash_attention.value_or(false), engine, static_cast<int>(tensor_parallel),
                                   ubatch_tokens, engine_object ? std::make_shared<const Engine>(*engine_object) : nullptr};
                 config.flash_attention_from_engine = !flash_attention;  // None: the engine's default
                 config.split_mode = split_mode;  // "": the engine's default
                 py::gil_scoped_release release;
                 return std::make_shared<EstimatePlan>(model, device, config);
             }),
             py::arg("model"), py::arg("device"), py::arg("quant"), py::arg("kv_dtype") = "f16",
             py::arg("flash_attention") = py::none(), py::arg("engine") = "llama.cpp", py::arg("tensor_parallel") = 1,
             py::arg("ubatch_tokens") = 0.0, py::arg("engine_object") = nullptr, py::arg("split_mode") = "")
        .def(
            "estimate",
            [](const EstimatePlan& p, double batch, double prompt_tokens, double gen_tokens, bool breakdown, double context) {
                py::gil_scoped_release release;
                return p.estimate(batch, prompt_tokens, gen_tokens, breakdown, context);
            },
            py::arg("batch"), py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("breakdown") = true,
            py::arg("context_tokens") = 0.0)
        .def_property_readonly("model", &EstimatePlan::model_id)
        .def_property_readonly("device", &EstimatePlan::device_id)
        .def_property_readonly("engine", &EstimatePlan::engine_id)
        .def_property_readonly("backend", &EstimatePlan::backend)
        .def_property_readonly("quant", [](const EstimatePlan& p) { return p.config().quant; })
        .def_property_readonly("kv_dtype", [](const EstimatePlan& p) { return p.config().kv_dtype; })
        .def_property_readonly("flash_attention", [](const EstimatePlan& p) { return p.config().flash_attention; })
        .def_property_readonly("split_mode", [](const EstimatePlan& p) { return p.config().split_mode; },
                               "how the tensor_parallel devices share the model: none (one device), layer or tensor")
        .def_property_readonly("tensor_parallel", [](const EstimatePlan& p) { return p.config().tensor_parallel; })
        .def_property_readonly("ubatch_tokens", &EstimatePlan::ubatch_tokens, "the prompt micro-batch in use (0: whole)")
        .def_property_readonly("op_slots", &EstimatePlan::op_slots, "distinct ops of a forward pass")
        .def("weights_read_per_step", &EstimatePlan::weights_read_per_step, py::arg("batch") = 1.0,
             "weight bytes one decode step reads on one rank (no embedding table; the active experts)")
        .def("__repr__", [](const EstimatePlan& p) {
            return "<EstimatePlan " + p.model_id() + " " + p.config().quant + " on " + p.device_id() + " (" + p.engine_id() + ")>";
        });
}
