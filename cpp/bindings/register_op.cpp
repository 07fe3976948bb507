#include "bindings.hpp"

#include <sstream>

using namespace roofline;

namespace {
std::string short_number(double x) {
    std::ostringstream os;
    os.precision(4);
    os << x;
    return os.str();
}

py::dict op_to_dict(const OpCost& op) {
    py::dict d;
    d["name"] = op.name;
    d["flops"] = op.flops();
    py::list terms;
    for (const auto& t : op.flop_terms) {
        py::dict e;
        e["unit"] = std::string(unit_name(t.unit));
        e["dtype"] = std::string(dtype_name(t.format));
        e["flops"] = t.flops;
        e["overlapped"] = t.overlapped;
        e["issue"] = t.issue;
        terms.append(e);
    }
    d["flop_terms"] = terms;
    for (std::size_t i = 0; i < kNumLevels; ++i) {
        const std::string lv(level_name(static_cast<Level>(i)));
        d[("bytes_read_" + lv).c_str()] = op.bytes_read[i];
        d[("bytes_written_" + lv).c_str()] = op.bytes_written[i];
    }
    d["bytes"] = op.bytes();
    d["arithmetic_intensity"] = op.arithmetic_intensity();
    d["launches"] = op.launches;
    return d;
}
}  // namespace

void register_op(py::module_& m) {
    py::class_<OpCost>(m, "OpCost",
                       "FLOPs by unit and format, bytes read and written per memory level, and kernel launches of one op")
        .def(py::init<>())
        .def_readwrite("name", &OpCost::name)
        .def_property_readonly("flops", [](const OpCost& o) { return o.flops(); })
        .def_property_readonly("bytes", [](const OpCost& o) { return o.bytes(); }, "DRAM bytes read + written")
        .def_property_readonly("arithmetic_intensity", [](const OpCost& o) { return o.arithmetic_intensity(); },
                               "FLOP per DRAM byte")
        .def_readonly("launches", &OpCost::launches)
        .def(
            "bytes_at", [](const OpCost& o, const std::string& level) { return o.bytes(parse_level(level)); },
            py::arg("level"), "Bytes read + written at a memory level")
        .def(
            "bytes_read", [](const OpCost& o, const std::string& level) { return o.bytes_read[static_cast<std::size_t>(parse_level(level))]; },
            py::arg("level") = "dram")
        .def(
            "bytes_written",
            [](const OpCost& o, const std::string& level) { return o.bytes_written[static_cast<std::size_t>(parse_level(level))]; },
            py::arg("level") = "dram")
        .def(
            "intensity_at", [](const OpCost& o, const std::string& level) { return o.arithmetic_intensity(parse_level(level)); },
            py::arg("level"), "FLOP per byte at a memory level")
        .def(
            "flops_of",
            [](const OpCost& o, const std::string& unit, const std::string& dtype) {
                return o.flops(parse_unit(unit), parse_dtype(dtype));
            },
            py::arg("unit"), py::arg("dtype"))
        .def("scaled", &OpCost::scaled, py::arg("factor"), "Every count × factor (factor repetitions of the op)")
        .def("__add__", [](const OpCost& a, const OpCost& b) { return a + b; })
        .def("__mul__", [](const OpCost& a, double k) { return a.scaled(k); })
        .def("__rmul__", [](const OpCost& a, double k) { return a.scaled(k); })
        .def("to_dict", &op_to_dict)
        .def("__repr__",
             [](const OpCost& o) {
                 return "<OpCost " + o.name + ": " + short_number(o.flops()) + " FLOPs, " + short_number(o.bytes()) +
                        " DRAM bytes, AI " + short_number(o.arithmetic_intensity()) + " FLOP/B, " +
                        short_number(o.launches) + " launches>";
             })
        .def(py::pickle(
            [](const OpCost& o) {
                py::list terms;
                for (const auto& t : o.flop_terms)
                    terms.append(py::make_tuple(static_cast<int>(t.unit), static_cast<int>(t.format), t.flops,
                                                t.utilization, t.overlapped, t.issue));
                return py::make_tuple(o.name, terms, o.bytes_read, o.bytes_written, o.launches);
            },
            [](const py::tuple& t) {
                OpCost o;
                o.name = t[0].cast<std::string>();
                for (auto item : t[1].cast<py::list>()) {
                    auto tt = item.cast<py::tuple>();
                    const int unit = tt[0].cast<int>(), format = tt[1].cast<int>();
                    if (unit < 0 || unit > 1 || format < 0 || format >= static_cast<int>(kNumDTypes))
                        throw InvalidArgument("OpCost pickle holds an unknown unit or format");
                    o.add_flops(static_cast<Unit>(unit), static_cast<DType>(format), tt[2].cast<double>(),
                                tt.size() > 3 ? tt[3].cast<double>() : 1.0, tt.size() > 4 ? tt[4].cast<bool>() : true,
                                tt.size() > 5 && tt[5].cast<bool>());
                }
                o.bytes_read = t[2].cast<std::array<double, kNumLevels>>();
                o.bytes_written = t[3].cast<std::array<double, kNumLevels>>();
                o.launches = t[4].cast<double>();
                return o;
            }));
}
