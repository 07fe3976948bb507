#include "bindings.hpp"

#include "roofline/kv_cache.hpp"

using namespace roofline;

void register_kv_cache(py::module_& m) {
    m.def("kv_format_names", &kv_format_names, "The KV-cache formats");
    m.def(
        "kv_cache_bytes",
        [](const Model& mod, double batch, double context, const std::string& kv) {
            return kv_cache_bytes(mod.arch, batch, context, parse_kv_format(kv));
        },
        py::arg("model"), py::arg("batch"), py::arg("context"), py::arg("kv_dtype") = "f16",
        "KV-cache bytes of `batch` sequences of `context` tokens");
    m.def(
        "kv_cache_bytes_read",
        [](const Model& mod, double batch, double prompt, double gen, const std::string& kv) {
            return kv_cache_bytes_read(mod.arch, batch, prompt, gen, parse_kv_format(kv));
        },
        py::arg("model"), py::arg("batch"), py::arg("prompt"), py::arg("gen"), py::arg("kv_dtype") = "f16",
        "KV-cache bytes read by `gen` decode steps after `prompt` tokens (each step reads the whole cache)");
}
