#include "bindings.hpp"

using namespace roofline;

namespace {
py::dict provenance(const Provenance& p) {
    py::dict d;
    d["source"] = p.source;
    d["uncertain"] = p.uncertain.empty() ? py::object(py::none()) : py::object(py::str(p.uncertain));
    return d;
}
}  // namespace

void register_device(py::module_& m) {
    py::class_<Device>(m, "Device", "A device of the hardware database: ceilings with their sources")
        .def_readonly("id", &Device::id)
        .def_readonly("name", &Device::name)
        .def_readonly("vendor", &Device::vendor)
        .def_readonly("family", &Device::family)
        .def_readonly("kind", &Device::kind)
        .def_readonly("architecture", &Device::architecture)
        .def_readonly("aliases", &Device::aliases)
        .def_readonly("release_year", &Device::release_year)
        .def_readonly("compute_units", &Device::compute_units)
        .def_readonly("compute_unit_name", &Device::compute_unit_name)
        .def_readonly("boost_clock_hz", &Device::boost_clock_hz)
        .def_readonly("vector_clock_hz", &Device::vector_clock_hz)
        .def("issue_lanes_per_s", &Device::issue_lanes_per_s)
        .def_readonly("tdp_w", &Device::tdp_w)
        .def_readonly("notes", &Device::notes)
        .def_readonly("origin", &Device::origin)
        .def(
            "peak_flops",
            [](const Device& d, const std::string& dtype, const std::string& unit) {
                return d.peak_flops(parse_dtype(dtype), parse_unit(unit));
            },
            py::arg("dtype"), py::arg("unit") = "matrix",
            "Dense peak FLOP/s; unit 'matrix' falls back to 'vector' where the device has no matrix units")
        .def(
            "bandwidth", [](const Device& d, const std::string& level) { return d.bandwidth(parse_level(level)); },
            py::arg("level") = "dram", "Bytes/s of a memory level: 'dram', 'l2' or 'sram'")
        .def(
            "capacity", [](const Device& d, const std::string& level) { return d.capacity(parse_level(level)); },
            py::arg("level") = "dram", "Bytes of a memory level (SRAM: summed over compute units)")
        .def_property_readonly("sram_per_unit_bytes", &Device::sram_per_unit_bytes)
        .def_property_readonly("l2_working_set", &Device::l2_working_set,
                               "Bytes of L2 a working set can count on: its measured working set, else its capacity "
                               "(0: no L2 in the data)")
        .def(
            "ridge_point",
            [](const Device& d, const std::string& dtype, const std::string& level, const std::string& unit) {
                return d.ridge_point(parse_dtype(dtype), parse_level(level), parse_unit(unit));
            },
            py::arg("dtype"), py::arg("level") = "dram", py::arg("unit") = "matrix",
            "Peak FLOP/s over bandwidth: the arithmetic intensity (FLOP/byte) where an op stops being memory-bound")
        .def(
            "peak_unit",
            [](const Device& d, const std::string& dtype, const std::string& unit) {
                const ComputePeak* p = d.find_peak(parse_dtype(dtype), parse_unit(unit));
                if (!p) d.peak_flops(parse_dtype(dtype), parse_unit(unit));  // throws NotFound, listing what it has
                return std::string(unit_name(p->unit));
            },
            py::arg("dtype"), py::arg("unit") = "matrix",
            "The unit whose peak peak_flops(dtype, unit) returns: 'matrix' falls back to 'vector' where a device has none")
        .def(
            "ridge_multiple",
            [](const Device& d, const OpCost& op, const std::string& dtype, const std::string& level, const std::string& unit) {
                return ridge_multiple(op, d, parse_dtype(dtype), parse_level(level), parse_unit(unit));
            },
            py::arg("op"), py::arg("dtype"), py::arg("level") = "dram", py::arg("unit") = "matrix",
            "The op's arithmetic intensity as a multiple of this device's ridge point")
        .def_property_readonly("interconnect_bandwidth", py::overload_cast<>(&Device::interconnect_bandwidth, py::const_))
        .def("interconnect_bandwidth_for", py::overload_cast<double>(&Device::interconnect_bandwidth, py::const_),
             py::arg("devices"), "The fastest interconnect joining that many devices (B/s per direction; 0: none)")
        .def(
            "time",
            [](const Device& d, const OpCost& op, bool ideal) {
                return evaluate(op, d, ideal ? Ceilings::ideal : Ceilings::derated);
            },
            py::arg("op"), py::arg("ideal") = false,
            "Roofline time of an op. ideal=True: datasheet ceilings, no launch overhead; default: derated by the "
            "device's efficiency and with launch overhead")
        .def(
            "compute_peaks",
            [](const Device& d) {
                py::list out;
                for (const auto& p : d.compute) {
                    py::dict e = provenance(p.provenance);
                    e["dtype"] = std::string(dtype_name(p.format));
                    e["unit"] = std::string(unit_name(p.unit));
                    e["flops_per_s"] = p.flops_per_s;
                    out.append(e);
                }
                return out;
            },
            "Every compute peak with its source")
        .def(
            "memory_levels",
            [](const Device& d) {
                py::list out;
                for (std::size_t i = 0; i < kNumLevels; ++i) {
                    const auto& lv = d.memory[i];
                    if (!lv.present) continue;
                    py::dict e = provenance(lv.provenance);
                    e["level"] = std::string(level_name(static_cast<Level>(i)));
                    e["type"] = lv.type;
                    e["bandwidth"] = lv.bandwidth_Bps > 0 ? py::object(py::float_(lv.bandwidth_Bps)) : py::object(py::none());
                    e["capacity"] = lv.capacity_bytes;
                    if (lv.per_unit_bytes > 0) e["per_unit"] = lv.per_unit_bytes;
                    if (lv.working_set_bytes > 0) e["working_set"] = lv.working_set_bytes;
                    out.append(e);
                }
                return out;
            },
            "Every memory level with bandwidth (bytes/s), capacity (bytes), working_set (bytes: an L2's measured working "
            "set, where recorded) and source")
        .def_property_readonly("efficiency",
                               [](const Device& d) {
                                   py::dict e = provenance(d.efficiency.provenance);
                                   e["dram_bandwidth_fraction"] = d.efficiency.dram_bandwidth_fraction;
                                   e["dram_applies_to_measured"] = d.efficiency.dram_applies_to_measured;
                                   e["compute_fraction"] = d.efficiency.compute_fraction;
                                   e["launch_overhead_s"] = d.efficiency.launch_overhead_s;
                                   return e;
                               })
        .def("to_json", &Device::to_json, py::arg("indent") = 2, "Schema-conforming JSON of this device")
        .def("__repr__",
             [](const Device& d) {
                 return "<Device " + d.id + ": " + d.name + ">";
             })
        .def(py::pickle([](const Device& d) { return py::make_tuple(d.to_json(-1), d.origin); },
                        [](const py::tuple& t) {
                            Device d = parse_device(t[0].cast<std::string>(), "<pickle>");
                            d.origin = t[1].cast<std::string>();
                            return d;
                        }));

    m.def("parse_device", &parse_device, py::arg("json_text"), py::arg("origin") = "<string>",
          "Parse and validate one device from JSON text");
    m.def("load_device", &load_device, py::arg("path"), "Load and validate one device JSON file");

    py::class_<DeviceDB>(m, "DeviceDB", "Devices by id or alias, case-insensitive")
        .def(py::init<>())
        .def_static("load_directory", &DeviceDB::load_directory, py::arg("directory"))
        .def_static("default_directory", &DeviceDB::default_directory)
        .def("add", &DeviceDB::add, py::arg("device"))
        .def("get", &DeviceDB::get, py::arg("name"), py::return_value_policy::copy)
        .def("ids", &DeviceDB::ids)
        .def("__len__", &DeviceDB::size)
        .def("__contains__", &DeviceDB::contains);
}
