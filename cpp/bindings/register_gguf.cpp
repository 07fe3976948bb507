#include "bindings.hpp"

#include "roofline/gguf.hpp"

using namespace roofline;

namespace {
// Arrays up to this many elements become Python lists; longer ones (vocabularies) {"type", "count"}.
constexpr std::uint64_t kMaxListed = 64;

// GGUF strings should be UTF-8 but a file may hold anything: undecodable bytes become U+FFFD.
py::str text(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

py::object scalar(const GgufValue& v) {
    if (v.is_string()) return text(v.as_string());
    if (v.is_bool()) return py::bool_(v.as_bool());
    if (v.is_float()) return py::float_(v.as_double());
    if (v.type() == GgufType::uint64) return py::int_(v.as_uint());
    return py::int_(v.as_int());
}

py::object value(const GgufValue& v) {
    if (!v.is_array()) return scalar(v);
    if (v.has_values() && v.array_count() <= kMaxListed) {
        py::list items;
        for (std::size_t i = 0; i < v.array_count(); ++i) items.append(scalar(v.at(i)));
        return std::move(items);
    }
    py::dict d;
    d["type"] = gguf_type_name(v.element_type());
    d["count"] = v.array_count();
    return std::move(d);
}

py::dict to_dict(const GgufFile& f) {
    py::dict d;
    d["version"] = f.version;
    d["alignment"] = f.alignment;
    d["data_offset"] = f.data_offset;
    d["file_size"] = f.file_size;
    d["architecture"] = f.find("general.architecture") && f.find("general.architecture")->is_string()
                            ? py::object(text(f.architecture()))
                            : py::object(py::none());
    py::dict metadata;
    for (const auto& kv : f.metadata) metadata[text(kv.first)] = value(kv.second);
    d["metadata"] = metadata;
    py::list tensors;
    for (const auto& t : f.tensors) {
        py::dict e;
        e["name"] = text(t.name);
        e["shape"] = py::tuple(py::cast(t.shape));
        e["type"] = t.type_name();
        e["type_id"] = t.type;
        e["offset"] = t.offset;
        e["n_elements"] = t.n_elements;
        e["bytes"] = t.bytes;
        tensors.append(e);
    }
    d["tensors"] = tensors;
    d["total_tensor_bytes"] = f.total_tensor_bytes();
    return d;
}
}  // namespace

void register_gguf(py::module_& m) {
    m.def(
        "read_gguf",
        [](const py::object& path) {
            const auto p = py::module_::import("os").attr("fspath")(path).cast<std::string>();
            GgufFile f;
            {
                py::gil_scoped_release release;
                f = read_gguf(p);
            }
            return to_dict(f);
        },
        py::arg("path"),
        "Reads the header of a GGUF model file (never its tensor data): version, alignment, data_offset, "
        "file_size, architecture, metadata (arrays longer than 64 elements as {'type', 'count'}) and tensors "
        "(name, shape with ne0 first, type name, type_id, offset into the data section, n_elements, bytes). "
        "ValueError names the file and byte offset of any defect.");
}
