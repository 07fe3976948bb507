#include "bindings.hpp"

#include "roofline/estimate.hpp"

using namespace roofline;

void register_estimate(py::module_& m) {
    m.def("phase_bound_names", &phase_bound_names, "Bound names indexed by a sweep's prefill_bound / decode_bound codes");
    m.def(
        "estimate_fields",
        [] {
            py::list out;
            for (const FieldInfo& f : estimate_fields())
                out.append(py::make_tuple(f.name, f.type, f.unit, f.meaning, f.config));
            return out;
        },
        "The estimate's field table: (name, C++ type, unit, meaning, is a configuration field), in order");

    py::class_<Estimate> cls(m, "Estimate", "The estimate of one workload (fields: estimate_fields())");
#define ROOFLINE_X(name, type, unit, meaning) \
    cls.def_property_readonly(#name, [](const Estimate& e) { return to_py(e.name); }, meaning " [" unit "]");
    ROOFLINE_ESTIMATE_CONFIG_FIELDS(ROOFLINE_X)
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    cls.def_readonly("speculative_tokens_per_cycle", &Estimate::speculative_tokens_per_cycle,
                     "expected tokens per draft-and-verify cycle (0 without speculative decoding)");
    cls.def_property_readonly(
        "split_mode", [](const Estimate& e) { return std::string(e.split_mode); },
        "how the tensor_parallel devices share the model: none (one device), layer or tensor");
    cls.def(
        "values",
        [](const Estimate& e) {
            py::list v;
#define ROOFLINE_X(name, type, unit, meaning) v.append(to_py(e.name));
            ROOFLINE_ESTIMATE_CONFIG_FIELDS(ROOFLINE_X)
            ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
            v.append(e.speculative_tokens_per_cycle);
            return py::tuple(v);
        },
        "Every field in estimate_fields() order, then speculative_tokens_per_cycle");
    cls.def_property_readonly(
        "breakdown_rows",
        [](const Estimate& e) {
            py::list out;
            for (const auto& r : e.breakdown)
                out.append(py::make_tuple(r.phase, r.op, r.count, r.flops, r.bytes, r.intensity(), r.seconds, r.bound,
                                          r.flops_per_s(), r.compute));
            return out;
        },
        "(phase, op, count, flops, bytes, intensity, seconds, bound, flops_per_s, compute) per op");

    m.def(
        "estimate",
        [](const Model& model, const Device& device, const std::string& quant, double batch, double prompt_tokens,
           double gen_tokens, const std::string& kv_dtype, std::optional<bool> flash_attention, const std::string& engine,
           double tensor_parallel, const Model* draft, const std::string& draft_quant, double draft_tokens, double acceptance,
           double context_tokens, double ubatch_tokens, const std::string& split_mode) {
            // a Python int of any size arrives as a double; only whole numbers in the core's range become an int
            check_range("tensor_parallel", tensor_parallel, 1, 1024);
            check_count("tensor_parallel", tensor_parallel);
            Workload w;
            w.quant = quant;
            w.batch = batch;
            w.prompt_tokens = prompt_tokens;
            w.gen_tokens = gen_tokens;
            w.kv_dtype = kv_dtype;
            w.flash_attention = flash_attention.value_or(false);
            w.flash_attention_from_engine = !flash_attention;  // None: the engine's default
            w.engine = engine;
            w.tensor_parallel = static_cast<int>(tensor_parallel);
            w.draft = draft;
            w.draft_quant = draft_quant;
            w.draft_tokens = draft_tokens;
            w.acceptance = acceptance;
            w.context_tokens = context_tokens;
            w.ubatch_tokens = ubatch_tokens;
            w.split_mode = split_mode;
            py::gil_scoped_release release;
            return estimate(model, device, w);
        },
        py::arg("model"), py::arg("device"), py::arg("quant"), py::arg("batch") = 1.0, py::arg("prompt_tokens") = 512.0,
        py::arg("gen_tokens") = 128.0, py::arg("kv_dtype") = "f16", py::arg("flash_attention") = py::none(),
        py::arg("engine") = "llama.cpp", py::arg("tensor_parallel") = 1, py::arg("draft") = py::none(),
        py::arg("draft_quant") = "", py::arg("draft_tokens") = 0.0, py::arg("acceptance") = 0.0,
        py::arg("context_tokens") = 0.0, py::arg("ubatch_tokens") = 0.0, py::arg("split_mode") = "");
}
