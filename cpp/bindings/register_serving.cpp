#include "bindings.hpp"

#include "roofline/engine.hpp"
#include "roofline/serving.hpp"

using namespace roofline;

namespace {
py::dict row_dict(const ServingRow& e) {
    py::dict d;
#define ROOFLINE_X(name, type, unit, meaning) d[#name] = to_py(e.name);
    ROOFLINE_SERVING_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    return d;
}
// Every field in serving_fields() order.
py::tuple row_tuple(const ServingRow& e) {
    py::list v;
#define ROOFLINE_X(name, type, unit, meaning) v.append(to_py(e.name));
    ROOFLINE_SERVING_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    return py::tuple(v);
}
}  // namespace

void register_serving(py::module_& m) {
    m.def(
        "all_reduce_time",
        [](const Engine& engine, const Device& device, int devices, double message_bytes, double hidden) {
            const AllReduceTiming t = all_reduce_time(engine, device, devices, message_bytes, hidden);
            py::dict d;
            d["seconds"] = t.seconds;
            d["ideal_seconds"] = t.ideal_seconds;
            d["way"] = t.way;
            return d;
        },
        py::arg("engine"), py::arg("device"), py::arg("devices"), py::arg("message_bytes"), py::arg("hidden") = 0.0,
        "One all-reduce of message_bytes per rank over `devices` ranks as the engine runs it (serving.hpp): seconds, "
        "ideal_seconds, way");
    m.def("is_serving_engine", py::overload_cast<std::string_view, const Device&>(&is_serving_engine), py::arg("engine"),
          py::arg("device"), "Whether the engine has continuous batching in engine_db on the device's backend");
    m.def("is_serving_engine",
          py::overload_cast<std::string_view, const Device&, std::string_view, std::string_view>(&is_serving_engine),
          py::arg("engine"), py::arg("device"), py::arg("split_mode"), py::arg("where"),
          "is_serving_engine; for a serving engine a split_mode other than '' or 'tensor' raises ValueError naming "
          "`where` (its deployments are tensor parallel)");
    m.def(
        "max_concurrency_for_latency",
        [](const ServingPlan& plan, double prompt_tokens, double gen_tokens, double tpot_s, double ttft_s) {
            ServingLatencyAnswer a;
            {
                py::gil_scoped_release release;
                a = max_concurrency_for_latency(plan, prompt_tokens, gen_tokens, tpot_s, ttft_s);
            }
            py::dict d;
            d["feasible"] = a.feasible;
            d["batch"] = a.concurrency;
            d["limit"] = a.limit;
            d["reason"] = a.reason;
            d["at"] = row_dict(a.at);
            d["beyond"] = row_dict(a.beyond);
            d["evaluations"] = a.evaluations;
            return d;
        },
        py::arg("plan"), py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("tpot_s"), py::arg("ttft_s") = 0.0,
        "The most closed-loop clients within the latency targets (batch = the concurrency; at / beyond: the fields)");
    m.def(
        "serving_fields",
        [] {
            py::list out;
            for (const FieldInfo& f : serving_fields()) out.append(py::make_tuple(f.name, f.type, f.unit, f.meaning, f.config));
            return out;
        },
        "The serving estimate's field table: (name, C++ type, unit, meaning, False), in order");

    py::class_<Parallelism>(m, "Parallelism", "Tensor / pipeline / expert parallelism and attention data parallelism")
        .def(py::init([](int tensor, int pipeline, int expert, bool attention_data) {
                 Parallelism p;
                 p.tensor = tensor;
                 p.pipeline = pipeline;
                 p.expert = expert;
                 p.attention_data = attention_data;
                 return p;
             }),
             py::arg("tensor") = 1, py::arg("pipeline") = 1, py::arg("expert") = 1, py::arg("attention_data") = false)
        .def_readonly("tensor", &Parallelism::tensor)
        .def_readonly("pipeline", &Parallelism::pipeline)
        .def_readonly("expert", &Parallelism::expert)
        .def_readonly("attention_data", &Parallelism::attention_data)
        .def_property_readonly("devices", &Parallelism::devices)
        .def("notation", &Parallelism::notation)
        .def("__repr__", [](const Parallelism& p) { return "Parallelism('" + p.notation() + "')"; });
    m.def(
        "parse_engine",
        [](const std::string& json_text, const std::string& origin) {
            const auto db = default_engines();
            return parse_engine(json_text, origin, &db->engines());
        },
        py::arg("json_text"), py::arg("origin") = "<string>",
        "An engine from engine_db JSON text (its based_on looked up in the default engine_db): a fit's trial engine");
    m.def("parse_parallelism", &parse_parallelism, py::arg("text"),
          "TensorRT-LLM's notation ('TP4', 'TP2,PP2', 'DEP8', 'TP8,EP8') as a Parallelism");

    py::class_<ServingEstimate> cls(m, "ServingEstimate", "A serving estimate (fields: serving_fields())");
#define ROOFLINE_X(name, type, unit, meaning) \
    cls.def_property_readonly(#name, [](const ServingEstimate& e) { return to_py(e.name); }, meaning " [" unit "]");
    ROOFLINE_SERVING_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    cls.def_readonly("model", &ServingEstimate::model)
        .def_readonly("quant", &ServingEstimate::quant)
        .def_readonly("device", &ServingEstimate::device)
        .def_readonly("engine", &ServingEstimate::engine)
        .def_readonly("kv_dtype", &ServingEstimate::kv_dtype)
        .def_readonly("parallel", &ServingEstimate::parallel)
        .def_readonly("mode", &ServingEstimate::mode)
        .def_readonly("batch_limit", &ServingEstimate::batch_limit)
        .def_property_readonly("prompt_tokens", [](const ServingEstimate& e) { return e.load.prompt_tokens; })
        .def_property_readonly("gen_tokens", [](const ServingEstimate& e) { return e.load.gen_tokens; })
        .def_property_readonly("concurrency", [](const ServingEstimate& e) { return e.load.concurrency; })
        .def_property_readonly("request_rate", [](const ServingEstimate& e) { return e.load.request_rate; })
        .def_property_readonly("num_requests", [](const ServingEstimate& e) { return e.load.num_requests; })
        .def("values", [](const ServingEstimate& e) { return row_tuple(e); }, "Every field in serving_fields() order")
        .def_property_readonly(
            "breakdown_rows",
            [](const ServingEstimate& e) {
                py::list out;
                for (const auto& r : e.breakdown)
                    out.append(py::make_tuple(r.phase, r.op, r.count, r.flops, r.bytes, r.intensity(), r.seconds, r.bound,
                                              r.flops_per_s(), r.compute));
                return out;
            },
            "(phase, op, count, flops, bytes, intensity, seconds, bound, flops_per_s, compute) per op of one decode "
            "iteration and one mixed iteration");

    py::class_<ServingPlan>(m, "ServingPlan", "A deployment built once, evaluated under any load")
        .def(py::init([](const Model& model, const Device& device, const std::string& quant, const std::string& engine,
                         const std::string& kv_dtype, const Parallelism& parallel, double max_batch, double max_num_tokens,
                         double gpu_memory_fraction, const Engine* engine_object, double mtp_tokens, double acceptance) {
                 ServingConfig c;
                 c.mtp_tokens = mtp_tokens;
                 c.acceptance = acceptance;
                 c.quant = quant;
                 c.engine = engine;
                 c.kv_dtype = kv_dtype;
                 c.parallel = parallel;
                 c.max_batch = max_batch;
                 c.max_num_tokens = max_num_tokens;
                 c.gpu_memory_fraction = gpu_memory_fraction;
                 if (engine_object) c.engine_object = std::make_shared<const Engine>(*engine_object);
                 py::gil_scoped_release release;
                 return ServingPlan(model, device, c);
             }),
             py::arg("model"), py::arg("device"), py::arg("quant"), py::arg("engine") = "vllm", py::arg("kv_dtype") = "",
             py::arg("parallel") = Parallelism{}, py::arg("max_batch") = 0.0, py::arg("max_num_tokens") = 0.0,
             py::arg("gpu_memory_fraction") = 0.0, py::arg("engine_object") = nullptr, py::arg("mtp_tokens") = 0.0,
             py::arg("acceptance") = std::numeric_limits<double>::quiet_NaN())
        .def(
            "estimate",
            [](const ServingPlan& p, double prompt_tokens, double gen_tokens, double concurrency, double request_rate,
               double num_requests, bool breakdown) {
                const ServingLoad l{prompt_tokens, gen_tokens, concurrency, request_rate, num_requests};
                py::gil_scoped_release release;
                return p.estimate(l, breakdown);
            },
            py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("concurrency") = 0.0, py::arg("request_rate") = 0.0,
            py::arg("num_requests") = 0.0, py::arg("breakdown") = true)
        .def(
            "rows",
            [](const ServingPlan& p, const std::vector<std::array<double, 5>>& loads) {
                // (prompt, gen, concurrency, rate, requests) per point -> one tuple of fields per point
                std::vector<ServingRow> rows(loads.size());
                {
                    py::gil_scoped_release release;
                    for (std::size_t i = 0; i < loads.size(); ++i) {
                        const auto& x = loads[i];
                        rows[i] = p.evaluate(ServingLoad{x[0], x[1], x[2], x[3], x[4]});
                    }
                }
                py::list out;
                for (const ServingRow& e : rows) out.append(row_tuple(e));
                return out;
            },
            py::arg("loads"), "The fields of every load (prompt, gen, concurrency, rate, requests), in serving_fields() order");
}
