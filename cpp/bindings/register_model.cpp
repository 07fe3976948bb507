#include "bindings.hpp"

#include "roofline/gguf.hpp"
#include "roofline/model.hpp"

using namespace roofline;

void register_model(py::module_& m) {
    py::class_<Architecture>(m, "Architecture", "A decoder-only transformer's shape (HF config.json or GGUF header values)")
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
        .def_readonly("n_nextn_layer", &Architecture::n_nextn_layer)
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
        .def("__repr__", [](const Model& mod) {
            return "<Model " + (mod.arch.id.empty() ? mod.arch.model_type : mod.arch.id) + ": " +
                   std::to_string(mod.arch.n_layer) + " layers, " + std::to_string(mod.parameters() / 1e9).substr(0, 5) + " B params>";
        });
    m.def("supported_model_types", &supported_model_types);
    m.def("mtp_module", &mtp_module, py::arg("model"),
          "The model's multi-token-prediction module as a model of its own (the draft of MTP speculative decoding)");
}
