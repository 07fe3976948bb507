#include "bindings.hpp"

#include "roofline/validation.hpp"

using namespace roofline;

ValidationCase validation_case(const py::dict& r, const Model* model, const Device* device) {
    // the keys of a point (Python validation.py): table, source, test, quant, engine, batch, prompt_tokens,
    // gen_tokens, flash_attention, tensor_parallel, measured_tokens_per_s, tolerance; optional kv_dtype,
    // context_tokens, ubatch_tokens
    auto opt = [&](const char* key, double dflt) { return r.contains(key) ? r[key].cast<double>() : dflt; };
    ValidationCase c;
    c.table = r["table"].cast<std::string>();
    c.source = r["source"].cast<std::string>();
    c.test = r["test"].cast<std::string>();
    c.model = model;
    c.device = device;
    c.workload.quant = r["quant"].cast<std::string>();
    c.workload.engine = r["engine"].cast<std::string>();
    c.workload.batch = r["batch"].cast<double>();
    c.workload.prompt_tokens = r["prompt_tokens"].cast<double>();
    c.workload.gen_tokens = r["gen_tokens"].cast<double>();
    c.workload.flash_attention = r["flash_attention"].cast<bool>();
    c.workload.tensor_parallel = r["tensor_parallel"].cast<int>();
    if (r.contains("kv_dtype")) c.workload.kv_dtype = r["kv_dtype"].cast<std::string>();
    c.workload.context_tokens = opt("context_tokens", 0);
    c.workload.ubatch_tokens = opt("ubatch_tokens", 0);
    c.measured_tokens_per_s = r["measured_tokens_per_s"].cast<double>();
    c.tolerance = opt("tolerance", 0);
    return c;
}

void register_validation(py::module_& m) {
    m.def(
        "validate",
        [](const std::vector<py::dict>& rows, const std::vector<const Model*>& models, const std::vector<const Device*>& devices) {
            // rows: dicts of a validation table (strings and numbers already typed by the Python loader)
            if (rows.size() != models.size() || rows.size() != devices.size())
                throw InvalidArgument("validate: one model and one device per row are needed");
            std::vector<ValidationCase> cases;
            for (std::size_t i = 0; i < rows.size(); ++i) cases.push_back(validation_case(rows[i], models[i], devices[i]));
            std::vector<ValidationResult> res;
            {
                py::gil_scoped_release release;
                res = validate(cases);
            }
            py::list out;
            for (const auto& v : res) {
                py::dict d;
                d["table"] = v.point.table;
                d["device"] = v.point.device->id;
                d["model"] = v.point.model->arch.id;
                d["quant"] = v.point.workload.quant;
                d["test"] = v.point.test;
                d["tp"] = v.point.workload.tensor_parallel;
                d["measured"] = v.point.measured_tokens_per_s;
                d["predicted"] = v.predicted_tokens_per_s;
                d["error"] = v.error;
                d["roofline"] = v.roofline_tokens_per_s;
                d["roofline_error"] = v.roofline_error;
                d["tolerance"] = v.point.tolerance;
                d["bound"] = v.bound;
                d["source"] = v.point.source;
                out.append(d);
            }
            return out;
        },
        py::arg("rows"), py::arg("models"), py::arg("devices"),
        "Each measured point predicted, with its error and the pure roofline's (validation.hpp)");
    m.def(
        "summarize_validation",
        [](const std::vector<std::tuple<std::string, double, double>>& points) {
            // (table, error, roofline_error) per point, as validate() returned them
            std::vector<ValidationResult> res;
            for (const auto& [table, err, rerr] : points) {
                ValidationResult v;
                v.point.table = table;
                v.error = err;
                v.roofline_error = rerr;
                res.push_back(v);
            }
            py::dict out;
            for (const ErrorSummary& s : summarize(res)) {
                py::dict d;
                d["estimator"] = s.estimator_mape_percent;
                d["roofline"] = s.roofline_mape_percent;
                d["estimator_max"] = s.estimator_max_percent;
                d["roofline_max"] = s.roofline_max_percent;
                d["points"] = s.points;
                out[py::str(s.group)] = d;
            }
            return out;
        },
        py::arg("points"), "MAPE and largest error per table and over all points, in percent");
    m.def(
        "static_batch_rates",
        [](const EstimatePlan& plan, double batch, double prompt_tokens, double gen_tokens) {
            StaticBatchRates r;
            {
                py::gil_scoped_release release;
                r = static_batch_rates(plan, batch, prompt_tokens, gen_tokens);
            }
            py::dict d;
            d["output_tokens_per_s_per_device"] = r.output_tokens_per_s_per_device;
            d["roofline_output_tokens_per_s_per_device"] = r.roofline_output_tokens_per_s_per_device;
            d["ttft_s"] = r.ttft_s;
            d["roofline_ttft_s"] = r.roofline_ttft_s;
            return d;
        },
        py::arg("plan"), py::arg("batch"), py::arg("prompt_tokens"), py::arg("gen_tokens"),
        "One static batch's output tokens/s per device and TTFT, and both at the pure roofline (validation.hpp)");
}
