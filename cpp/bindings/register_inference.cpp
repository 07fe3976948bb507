#include "bindings.hpp"

#include "roofline/gguf.hpp"
#include "roofline/inference.hpp"

using namespace roofline;

namespace {
py::dict memory_dict(const MemoryUse& m) {
    py::dict d;
    d["weights"] = m.weights;
    d["kv_cache"] = m.kv_cache;
    d["activations"] = m.activations;
    d["overhead"] = m.overhead;
    d["total"] = m.total;
    d["capacity"] = m.capacity;
    d["fits"] = m.fits;
    return d;
}
}  // namespace

void register_inference(py::module_& m) {
    py::class_<Architecture>(m, "Architecture")
        .def_readonly("id", &Architecture::id)
        .def_readonly("name", &Architecture::name)
        .def_readonly("model_type", &Architecture::model_type)
        .def_readonly("gguf_arch", &Architecture::gguf_arch)
        .def_readonly("source", &Architecture::source)
        .def_readonly("n_layer", &Architecture::n_layer)
        .def_readonly("n_head", &Architecture::n_head)
        .def_readonly("n_kv_head", &Architecture::n_kv_head)
        .def_readonly("hidden", &Architecture::hidden)
        .def_readonly("head_dim", &Architecture::head_dim)
        .def_readonly("ffn", &Architecture::ffn)
        .def_readonly("vocab", &Architecture::vocab)
        .def_readonly("max_context", &Architecture::max_context)
        .def_readonly("tied_embeddings", &Architecture::tied_embeddings)
        .def_readonly("window", &Architecture::window)
        .def_readonly("n_expert", &Architecture::n_expert)
        .def_readonly("n_expert_used", &Architecture::n_expert_used)
        .def_readonly("expert_ffn", &Architecture::expert_ffn)
        .def_readonly("parameters_reported", &Architecture::parameters_reported)
        .def_property_readonly("norm", [](const Architecture& a) { return a.norm == NormKind::rmsnorm ? "rmsnorm" : "layernorm"; })
        .def_property_readonly("mlp", [](const Architecture& a) { return a.mlp == MlpKind::gated ? "gated" : "plain"; })
        .def_property_readonly("position", [](const Architecture& a) { return a.position == PositionKind::rope ? "rope" : "learned"; });

    py::class_<Model>(m, "Model", "A decoder-only transformer: architecture and weight tensors")
        .def_static("from_hf_config", &Model::from_hf_config, py::arg("json_text"), py::arg("origin") = "<config>")
        .def_static("from_catalog_entry", &Model::from_catalog_entry, py::arg("json_text"), py::arg("origin"))
        .def_static(
            "from_gguf", [](const std::string& path) { return Model::from_gguf(read_gguf(path)); }, py::arg("path"))
        .def_readonly("arch", &Model::arch)
        .def_property_readonly("parameters", &Model::parameters)
        .def(
            "weight_bytes",
            [](const Model& mod, const std::string& quant) { return mod.weight_bytes(quant, format_of(DType::bf16)); },
            py::arg("quant"))
        .def(
            "tensors",
            [](const Model& mod, const std::string& quant) {
                py::list out;
                const auto formats = mod.tensor_formats(quant, format_of(DType::bf16));
                for (std::size_t i = 0; i < mod.tensors.size(); ++i) {
                    py::dict d;
                    d["name"] = mod.tensors[i].name;
                    d["role"] = mod.tensors[i].role;
                    d["layer"] = mod.tensors[i].layer;
                    d["shape"] = mod.tensors[i].shape;
                    d["elements"] = mod.tensors[i].elements();
                    d["type"] = formats[i].type_name;
                    d["bytes"] = formats[i].bytes;
                    out.append(d);
                }
                return out;
            },
            py::arg("quant"), "Every weight tensor with its format and bytes under `quant`")
        .def("__repr__", [](const Model& mod) {
            return "<Model " + (mod.arch.id.empty() ? mod.arch.model_type : mod.arch.id) + ": " +
                   std::to_string(mod.arch.n_layer) + " layers, " + std::to_string(mod.parameters() / 1e9).substr(0, 5) + " B params>";
        });

    m.def("supported_model_types", &supported_model_types);
    m.def("quant_names", &quant_names);
    m.def("engine_names", &engine_names);
    m.def(
        "engine_info",
        [](const std::string& name) {
            const Engine e = engine(name);
            py::dict d;
            d["name"] = e.name;
            d["launch_overhead_scale"] = e.launch_overhead_scale;
            d["gemv_max_rows"] = e.gemv_max_rows;
            d["gemm_tile_m"] = e.gemm_tile_m;
            d["gemm_tile_n"] = e.gemm_tile_n;
            d["dequant_tile_rows"] = e.dequant_tile_rows;
            d["dequant_overlapped"] = e.dequant_overlapped;
            d["fused_qkv"] = e.fused_qkv;
            d["vocab_parallel"] = e.vocab_parallel;
            d["all_reduce"] = e.all_reduce == AllReduce::ring ? "ring" : "one-shot";
            d["collective_latency_s"] = e.collective_latency_s;
            d["activation"] = e.activation;
            d["logits_last_token_only"] = e.logits_last_token_only;
            d["runtime_overhead_bytes"] = e.runtime_overhead_bytes;
            d["source"] = e.source;
            return d;
        },
        py::arg("name"), "What an engine does to the op list, with its source");
    m.def("kv_cache_bytes",
          [](const Model& mod, double batch, double context, const std::string& kv) {
              return kv_cache_bytes(mod.arch, batch, context, to_lower(kv) == "f16" ? format_of(DType::fp16) : parse_format(kv));
          },
          py::arg("model"), py::arg("batch"), py::arg("context"), py::arg("kv_dtype") = "f16");
    m.def("kv_cache_bytes_read",
          [](const Model& mod, double batch, double prompt, double gen, const std::string& kv) {
              return kv_cache_bytes_read(mod.arch, batch, prompt, gen,
                                         to_lower(kv) == "f16" ? format_of(DType::fp16) : parse_format(kv));
          },
          py::arg("model"), py::arg("batch"), py::arg("prompt"), py::arg("gen"), py::arg("kv_dtype") = "f16",
          "KV-cache bytes read by `gen` decode steps after `prompt` tokens (each step reads the whole cache)");

    py::class_<Estimate>(m, "Estimate")
        .def_readonly("model", &Estimate::model)
        .def_readonly("quant", &Estimate::quant)
        .def_readonly("device", &Estimate::device)
        .def_readonly("engine", &Estimate::engine)
        .def_readonly("parameters", &Estimate::parameters)
        .def_readonly("weight_bytes", &Estimate::weight_bytes)
        .def_readonly("bits_per_weight", &Estimate::bits_per_weight)
        .def_readonly("batch", &Estimate::batch)
        .def_readonly("prompt_tokens", &Estimate::prompt_tokens)
        .def_readonly("gen_tokens", &Estimate::gen_tokens)
        .def_readonly("tensor_parallel", &Estimate::tensor_parallel)
        .def_readonly("prefill_s", &Estimate::prefill_s)
        .def_readonly("prefill_tokens_per_s", &Estimate::prefill_tokens_per_s)
        .def_readonly("ttft_s", &Estimate::ttft_s)
        .def_readonly("decode_s", &Estimate::decode_s)
        .def_readonly("decode_tokens_per_s", &Estimate::decode_tokens_per_s)
        .def_readonly("decode_tokens_per_s_total", &Estimate::decode_tokens_per_s_total)
        .def_readonly("total_s", &Estimate::total_s)
        .def_readonly("prefill_bound", &Estimate::prefill_bound)
        .def_readonly("decode_bound", &Estimate::decode_bound)
        .def_readonly("ceiling_decode_weights", &Estimate::ceiling_decode_weights)
        .def_readonly("ceiling_decode", &Estimate::ceiling_decode)
        .def_readonly("ceiling_prefill", &Estimate::ceiling_prefill)
        .def_readonly("decode_intensity", &Estimate::decode_intensity)
        .def_readonly("compute_bound_batch", &Estimate::compute_bound_batch)
        .def_property_readonly("memory", [](const Estimate& e) { return memory_dict(e.memory); })
        .def_readonly("max_batch", &Estimate::max_batch)
        .def_readonly("max_context", &Estimate::max_context)
        .def_readonly("speculative_tokens_per_cycle", &Estimate::speculative_tokens_per_cycle)
        .def(
            "values",
            [](const Estimate& e) {
                const MemoryUse& m = e.memory;
                return py::make_tuple(
                    e.model, e.quant, e.device, e.engine, e.parameters, e.weight_bytes, e.bits_per_weight, e.batch,
                    e.prompt_tokens, e.gen_tokens, e.tensor_parallel, e.prefill_s, e.prefill_tokens_per_s, e.ttft_s,
                    e.decode_s, e.decode_tokens_per_s, e.decode_tokens_per_s_total, e.total_s, e.prefill_bound,
                    e.decode_bound, e.decode_intensity, e.compute_bound_batch, e.max_batch, e.max_context,
                    e.speculative_tokens_per_cycle, e.ceiling_decode_weights, e.ceiling_decode, e.ceiling_prefill,
                    m.weights, m.kv_cache, m.activations, m.overhead, m.total, m.capacity, m.fits);
            },
            "Every field in one tuple: the Python Estimate's _FIELDS, then ceiling_decode_weights, ceiling_decode, "
            "ceiling_prefill, then memory weights, kv_cache, activations, overhead, total, capacity, fits")
        .def_property_readonly("breakdown_rows", [](const Estimate& e) {
            py::list out;
            for (const auto& r : e.breakdown)
                out.append(py::make_tuple(r.phase, r.op, r.count, r.flops, r.bytes, r.intensity(), r.seconds, r.bound));
            return out;
        });

    m.def(
        "estimate",
        [](const Model& model, const Device& device, const std::string& quant, double batch, double prompt_tokens,
           double gen_tokens, const std::string& kv_dtype, bool flash_attention, const std::string& engine,
           double tensor_parallel, const Model* draft, const std::string& draft_quant, double draft_tokens, double acceptance) {
            // a Python int of any size arrives as a double; only whole numbers in the core's range become an int
            check_range("tensor_parallel", tensor_parallel, 1, 1024);
            check_count("tensor_parallel", tensor_parallel);
            Workload w;
            w.quant = quant;
            w.batch = batch;
            w.prompt_tokens = prompt_tokens;
            w.gen_tokens = gen_tokens;
            w.kv_dtype = kv_dtype;
            w.flash_attention = flash_attention;
            w.engine = engine;
            w.tensor_parallel = static_cast<int>(tensor_parallel);
            w.draft = draft;
            w.draft_quant = draft_quant;
            w.draft_tokens = draft_tokens;
            w.acceptance = acceptance;
            py::gil_scoped_release release;
            return estimate(model, device, w);
        },
        py::arg("model"), py::arg("device"), py::arg("quant"), py::arg("batch") = 1.0, py::arg("prompt_tokens") = 512.0,
        py::arg("gen_tokens") = 128.0, py::arg("kv_dtype") = "f16", py::arg("flash_attention") = false,
        py::arg("engine") = "llama.cpp", py::arg("tensor_parallel") = 1, py::arg("draft") = py::none(),
        py::arg("draft_quant") = "", py::arg("draft_tokens") = 0.0, py::arg("acceptance") = 0.0);

    py::class_<EstimatePlan, std::shared_ptr<EstimatePlan>>(
        m, "EstimatePlan",
        "A model × device × configuration ready to be estimated at any batch, prompt and generated tokens in O(1)")
        .def(py::init([](const Model& model, const Device& device, const std::string& quant, const std::string& kv_dtype,
                         bool flash_attention, const std::string& engine, double tensor_parallel) {
                 check_range("tensor_parallel", tensor_parallel, 1, 1024);
                 check_count("tensor_parallel", tensor_parallel);
                 const PlanConfig config{quant, kv_dtype, flash_attention, engine, static_cast<int>(tensor_parallel)};
                 py::gil_scoped_release release;
                 return std::make_shared<EstimatePlan>(model, device, config);
             }),
             py::arg("model"), py::arg("device"), py::arg("quant"), py::arg("kv_dtype") = "f16",
             py::arg("flash_attention") = false, py::arg("engine") = "llama.cpp", py::arg("tensor_parallel") = 1)
        .def(
            "estimate",
            [](const EstimatePlan& p, double batch, double prompt_tokens, double gen_tokens, bool breakdown) {
                py::gil_scoped_release release;
                return p.estimate(batch, prompt_tokens, gen_tokens, breakdown);
            },
            py::arg("batch"), py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("breakdown") = true)
        .def_property_readonly("model", &EstimatePlan::model_id)
        .def_property_readonly("device", &EstimatePlan::device_id)
        .def_property_readonly("engine", &EstimatePlan::engine_name)
        .def_property_readonly("quant", [](const EstimatePlan& p) { return p.config().quant; })
        .def_property_readonly("kv_dtype", [](const EstimatePlan& p) { return p.config().kv_dtype; })
        .def_property_readonly("flash_attention", [](const EstimatePlan& p) { return p.config().flash_attention; })
        .def_property_readonly("tensor_parallel", [](const EstimatePlan& p) { return p.config().tensor_parallel; })
        .def_property_readonly("op_slots", &EstimatePlan::op_slots, "distinct ops of a forward pass")
        .def("__repr__", [](const EstimatePlan& p) {
            return "<EstimatePlan " + p.model_id() + " " + p.config().quant + " on " + p.device_id() + " (" + p.engine_name() + ")>";
        });

    py::class_<FitReport>(m, "FitReport")
        .def_readonly("labels", &FitReport::labels)
        .def_readonly("measured", &FitReport::measured)
        .def_readonly("predicted_before", &FitReport::predicted_before)
        .def_readonly("predicted_after", &FitReport::predicted_after)
        .def_readonly("rms_relative_error_before", &FitReport::rms_relative_error_before)
        .def_readonly("rms_relative_error_after", &FitReport::rms_relative_error_after)
        .def_readonly("dram_bandwidth", &FitReport::dram_bandwidth)
        .def_readonly("compute", &FitReport::compute)
        .def_readonly("launch_overhead_s", &FitReport::launch_overhead_s)
        .def_readonly("iterations", &FitReport::iterations);

    m.def(
        "calibrate_efficiency",
        [](const Device& device, const std::vector<std::tuple<const Model*, std::string, double, double, double, double, std::string>>& pts,
           const std::string& engine, const std::string& kv_dtype) {
            std::vector<ThroughputMeasurement> ms;
            for (const auto& [model, quant, batch, prompt, gen, tps, label] : pts)
                ms.push_back(ThroughputMeasurement{model, quant, batch, prompt, gen, tps, label});
            FitReport rep;
            Device d;
            {
                py::gil_scoped_release release;
                d = calibrate_efficiency(device, ms, engine, kv_dtype, &rep);
            }
            return py::make_tuple(d, rep);
        },
        py::arg("device"), py::arg("points"), py::arg("engine") = "llama.cpp", py::arg("kv_dtype") = "f16",
        "points: (model, quant, batch, prompt_tokens, gen_tokens, tokens_per_s, label); returns (device, FitReport)");
}
