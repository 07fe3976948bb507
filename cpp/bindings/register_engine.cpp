#include "bindings.hpp"

#include "roofline/engine.hpp"
#include "roofline/model.hpp"
#include "roofline/weights.hpp"

using namespace roofline;

void register_engine(py::module_& m) {
    py::class_<LinearKernel>(m, "LinearKernel", "A kernel an engine runs linear layers with")
        .def_readonly("name", &LinearKernel::name)
        .def_readonly("weights", &LinearKernel::weights, "weight formats it handles ('*', 'float', 'quantized' or names)")
        .def_readonly("max_rows", &LinearKernel::max_rows, "used up to this many rows (inf: no limit)")
        .def_readonly("families", &LinearKernel::families,
                      "hardware_db families the engine runs it on ([]: every family)")
        .def_readonly("max_experts", &LinearKernel::max_experts,
                      "the most experts of a MoE layer it runs (inf: any; dense layers always)")
        .def_property_readonly("unit", [](const LinearKernel& k) { return std::string(unit_name(k.unit)); })
        .def_readonly("compute", &LinearKernel::compute, "'activation' or the format of its multiply-adds")
        .def_readonly("tile_m", &LinearKernel::tile_m)
        .def_readonly("tile_n", &LinearKernel::tile_n)
        .def_readonly("dequant_every_rows", &LinearKernel::dequant_every_rows)
        .def_readonly("dequant_overlapped", &LinearKernel::dequant_overlapped)
        .def_readonly("efficiency", &LinearKernel::efficiency, "fraction of the unit's achievable peak it reaches")
        .def_readonly("stream_k", &LinearKernel::stream_k, "whether it splits its tiles' K loop over the processors")
        .def_readonly("row_tile_step", &LinearKernel::row_tile_step,
                      "its row tiles' step (0: powers of two from 16)")
        .def_property_readonly(
            "moe_row_tile", &LinearKernel::moe_row_tile_name,
            "a MoE call's row tile: 'expert' (each expert's share) or 'batch' (one tile for the batch's tokens)")
        .def_readonly("tiles_per_unit", &LinearKernel::tiles_per_unit, "tiles resident on one compute unit at once")
        .def_readonly("split_k", &LinearKernel::split_k,
                      "fewer tiles than processors: the K loop split over the idle ones (False: they stay idle)")
        .def_property_readonly(
            "by_family",
            [](const LinearKernel& k) {
                std::map<std::string, py::dict> out;
                for (const auto& [family, f] : k.by_family) {
                    const KernelOccupancy o = k.occupancy_on(family);  // the family's values, the kernel's where unset
                    py::dict d;
                    d["efficiency"] = o.efficiency;
                    d["tiles_per_unit"] = o.tiles_per_unit;
                    d["split_k"] = o.split_k;
                    d["stream_k"] = o.stream_k;
                    d["alu_ops_scale"] = o.alu_ops_scale;
                    d["source"] = f.provenance.source;
                    d["uncertain"] = f.provenance.uncertain;
                    out[family] = d;
                }
                return out;
            },
            "device family -> its efficiency, tiles_per_unit, split_k, stream_k, alu_ops_scale, source, uncertain (where they differ)")
        .def_readonly("alu_ops_per_mac", &LinearKernel::alu_ops_per_mac, "ALU operations beside each multiply-add")
        .def_readonly("alu_ops_scale", &LinearKernel::alu_ops_scale,
                      "alu_ops_per_mac of each weight format relative to the one it was fitted on (absent: 1)")
        .def_property_readonly("alu_format", &LinearKernel::alu_format_name)
        .def_readonly("alu_weight_share", &LinearKernel::alu_weight_share,
                      "share of alu_ops_per_mac a tile spends once per weight, for all its rows")
        .def_readonly("moe_launches", &LinearKernel::moe_launches,
                      "kernels per call of a mixture-of-experts layer (0: launches)")
        .def_readonly("launches", &LinearKernel::launches, "kernels launched per linear layer")
        .def_property_readonly("source", [](const LinearKernel& k) { return k.provenance.source; })
        .def_property_readonly("uncertain", [](const LinearKernel& k) { return k.provenance.uncertain; });

    py::class_<EngineBackend>(m, "EngineBackend", "An engine on one backend, every property resolved")
        .def_readonly("backend", &EngineBackend::backend)
        .def_readonly("kernel_fixed_cost_scale", &EngineBackend::kernel_fixed_cost_scale)
        .def_readonly("activation_format", &EngineBackend::activation_format)
        .def_readonly("linear_kernels", &EngineBackend::linear_kernels)
        .def_readonly("fused_qkv", &EngineBackend::fused_qkv)
        .def_readonly("matvec_fused_bias", &EngineBackend::matvec_fused_bias)
        .def_readonly("matvec_fused_glu", &EngineBackend::matvec_fused_glu)
        .def_readonly("attention_format", &EngineBackend::attention_format,
                      "format of the unfused attention's Q·Kᵀ ('activation': the activation format)")
        .def_readonly("attention_pv_format", &EngineBackend::attention_pv_format, "format of its P·V")
        .def_readonly("logits_last_token_only", &EngineBackend::logits_last_token_only)
        .def_readonly("runtime_overhead_bytes", &EngineBackend::runtime_overhead_bytes)
        .def_property_readonly("all_reduce", [](const EngineBackend& b) { return std::string(all_reduce_name(b.all_reduce)); })
        .def_readonly("collective_step_latency_s", &EngineBackend::collective_step_latency_s)
        .def_readonly("vocab_parallel", &EngineBackend::vocab_parallel)
        .def_readonly("bandwidth_fraction", &EngineBackend::bandwidth_fraction,
                      "fraction of the device's achievable bandwidth its streaming kernels reach")
        .def_readonly("op_kernels", &EngineBackend::op_kernels, "kernels per op where the engine launches other than one")
        .def_readonly("prefill_ubatch_tokens", &EngineBackend::prefill_ubatch_tokens, "prompt micro-batch (0: whole prompt)")
        .def_readonly("split_modes", &EngineBackend::split_modes,
                      "how it spreads a model over devices, its default first: layer, tensor")
        .def_readonly("prefill_batch_tokens", &EngineBackend::prefill_batch_tokens,
                      "under a layer split: tokens per call whose micro-batches the devices overlap (0: none)")
        .def_readonly("layer_handoff_latency_s", &EngineBackend::layer_handoff_latency_s,
                      "under a layer split: fixed time of handing the hidden state to the next device [s]")
        .def_readonly("layer_split_kernel_fixed_cost_add", &EngineBackend::layer_split_kernel_fixed_cost_add,
                      "under a layer split: added to kernel_fixed_cost_scale")
        .def_readonly("flash_attention_version", &EngineBackend::flash_attention_version)
        .def_readonly("flash_attention_default", &EngineBackend::flash_attention_default,
                      "whether it runs flash attention unless told otherwise")
        .def_readonly("decode_attention_per_query_head", &EngineBackend::decode_attention_per_query_head)
        .def_readonly("decode_attention_alu_ops_per_mac", &EngineBackend::decode_attention_alu_ops_per_mac)
        .def_readonly("flash_qk_format", &EngineBackend::flash_qk_format)
        .def_readonly("flash_pv_format", &EngineBackend::flash_pv_format)
        .def_readonly("flash_issue_per_score", &EngineBackend::flash_issue_per_score)
        .def_readonly("flash_attention_head_dims", &EngineBackend::flash_attention_head_dims)
        .def_property_readonly(
            "flash_attention_kv_to_f16",
            [](const EngineBackend& b) {
                py::dict d;
                d["formats"] = b.flash_attention_kv_to_f16.formats;
                d["min_queries"] = static_cast<long long>(b.flash_attention_kv_to_f16.min_queries);
                d["except_families"] = b.flash_attention_kv_to_f16.except_families;
                return d;
            },
            "{'formats': K/V cache formats converted ('*': all but f16), 'min_queries': from this many queries, "
            "'except_families': device families that read the cache as stored}")
        .def_property_readonly(
            "sources",
            [](const EngineBackend& b) {
                std::map<std::string, std::pair<std::string, std::string>> out;
                for (const auto& [k, p] : b.sources) out[k] = {p.source, p.uncertain};
                return out;
            },
            "property -> (source, uncertain)");

    py::class_<Engine, std::shared_ptr<Engine>>(m, "Engine", "An inference engine of engine_db, per backend")
        .def_readonly("id", &Engine::id)
        .def_readonly("name", &Engine::name)
        .def_readonly("summary", &Engine::summary)
        .def_readonly("aliases", &Engine::aliases)
        .def_readonly("based_on", &Engine::based_on)
        .def_readonly("origin", &Engine::origin)
        .def_readonly("backends", &Engine::backends)
        .def_readonly("native_backend", &Engine::native_backend)
        .def("backend", &Engine::backend, py::arg("name"), py::return_value_policy::copy,
             "The engine on a backend (any, cuda, rocm, metal, vulkan, cpu)")
        .def("on", &Engine::on, py::arg("device"), py::return_value_policy::copy, "The backend the engine runs on for a device")
        .def(
            "runs_quantization",
            [](const Engine& e, const Model& model, const std::string& quant) {
                const auto formats = estimate_tensor_formats(model, e.quant_for(quant));
                for (std::size_t i = 0; i < formats.size(); ++i)
                    if (model.tensors[i].shape.size() >= 2 && !e.runs(formats[i].format)) return false;
                return true;
            },
            py::arg("model"), py::arg("quant"), "Whether the engine runs every weight matrix of the model under the quantization")
        .def("quant_for", &Engine::quant_for, py::arg("quant"),
             "The quantization a name means on this engine: 'mxfp4' is the MXFP4_MOE file type on engines that load GGUF files")
        .def("to_json", &Engine::to_json, py::arg("indent") = 2)
        .def("__repr__", [](const Engine& e) { return "<Engine " + e.id + ": " + e.name + ">"; });

    m.def("engine_names", &engine_names, "Ids of the engines of the default engine_db");
    m.def(
        "engine", [](const std::string& name) { return Engine(*engine(name)); }, py::arg("name"),
        "An engine of the default engine_db by id or alias (case-insensitive)");
    m.def("load_engine_directory", [](const std::string& dir) { return EngineDB::load_directory(dir).engines(); },
          py::arg("directory"), "Every engine of an engine_db folder (validated)");
}
