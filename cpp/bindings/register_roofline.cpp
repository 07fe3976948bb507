#include "bindings.hpp"

#include <sstream>

using namespace roofline;

namespace {
py::dict timing_to_dict(const Timing& t) {
    py::dict d;
    d["seconds"] = t.seconds;
    d["bound"] = bound_name(t.bound);
    d["compute_seconds"] = t.compute_seconds;
    d["serial_seconds"] = t.serial_seconds;
    for (std::size_t i = 0; i < kNumLevels; ++i)
        d[("memory_seconds_" + std::string(level_name(static_cast<Level>(i)))).c_str()] =
            t.level_evaluated[i] ? py::object(py::float_(t.memory_seconds[i])) : py::object(py::none());
    d["overhead_seconds"] = t.overhead_seconds;
    d["flops"] = t.flops;
    d["attainable_flops"] = t.attainable_flops;
    d["achieved_flops"] = t.achieved_flops;
    d["ceilings"] = t.ceilings == Ceilings::ideal ? "ideal" : "derated";
    return d;
}
}  // namespace

void register_roofline(py::module_& m) {
    py::class_<Timing>(m, "Timing", "The roofline time of an op on a device and what bounds it")
        .def_readonly("seconds", &Timing::seconds)
        .def_property_readonly("bound", [](const Timing& t) { return bound_name(t.bound); },
                               "'compute' | 'memory:dram' | 'memory:l2' | 'memory:sram' | 'overhead' | 'none'")
        .def_readonly("compute_seconds", &Timing::compute_seconds)
        .def_readonly("serial_seconds", &Timing::serial_seconds,
                      "the part of compute_seconds not overlapped with memory traffic (derated only)")
        .def_property_readonly("memory_seconds",
                               [](const Timing& t) {
                                   py::dict d;
                                   for (std::size_t i = 0; i < kNumLevels; ++i)
                                       if (t.level_evaluated[i])
                                           d[py::str(std::string(level_name(static_cast<Level>(i))))] = t.memory_seconds[i];
                                   return d;
                               })
        .def_readonly("overhead_seconds", &Timing::overhead_seconds)
        .def_readonly("flops", &Timing::flops)
        .def_readonly("attainable_flops", &Timing::attainable_flops)
        .def_readonly("achieved_flops", &Timing::achieved_flops)
        .def_property_readonly("ceilings", [](const Timing& t) { return t.ceilings == Ceilings::ideal ? "ideal" : "derated"; })
        .def("to_dict", &timing_to_dict)
        .def("__repr__",
             [](const Timing& t) {
                 std::ostringstream os;
                 os.precision(4);
                 os << "<Timing " << t.seconds << " s, " << bound_name(t.bound) << "-bound, "
                    << t.achieved_flops / 1e12 << " TFLOP/s achieved, "
                    << (t.ceilings == Ceilings::ideal ? "ideal" : "derated") << ">";
                 return os.str();
             })
        .def(py::pickle(
            [](const Timing& t) {
                return py::make_tuple(t.seconds, static_cast<int>(t.bound), t.compute_seconds, t.memory_seconds,
                                      t.level_evaluated, t.overhead_seconds, t.flops, t.attainable_flops,
                                      t.achieved_flops, static_cast<int>(t.ceilings), t.serial_seconds);
            },
            [](const py::tuple& p) {
                Timing t;
                t.seconds = p[0].cast<double>();
                const int bound = p[1].cast<int>(), ceilings = p[9].cast<int>();
                if (bound < 0 || bound > static_cast<int>(Bound::overhead) || ceilings < 0 || ceilings > 1)
                    throw InvalidArgument("Timing pickle holds an unknown bound or ceilings");
                t.bound = static_cast<Bound>(bound);
                t.compute_seconds = p[2].cast<double>();
                t.memory_seconds = p[3].cast<std::array<double, kNumLevels>>();
                t.level_evaluated = p[4].cast<std::array<bool, kNumLevels>>();
                t.overhead_seconds = p[5].cast<double>();
                t.flops = p[6].cast<double>();
                t.attainable_flops = p[7].cast<double>();
                t.achieved_flops = p[8].cast<double>();
                t.ceilings = static_cast<Ceilings>(ceilings);
                if (p.size() > 10) t.serial_seconds = p[10].cast<double>();
                return t;
            }));

    m.def(
        "evaluate",
        [](const OpCost& op, const Device& device, bool ideal) {
            return evaluate(op, device, ideal ? Ceilings::ideal : Ceilings::derated);
        },
        py::arg("op"), py::arg("device"), py::arg("ideal") = false);
    m.def(
        "attainable_flops",
        [](const Device& device, double intensity, const std::string& dtype, const std::string& level,
           const std::string& unit, bool ideal) {
            return attainable_flops(device, intensity, parse_dtype(dtype), parse_level(level), parse_unit(unit),
                                    ideal ? Ceilings::ideal : Ceilings::derated);
        },
        py::arg("device"), py::arg("intensity"), py::arg("dtype"), py::arg("level") = "dram",
        py::arg("unit") = "matrix", py::arg("ideal") = true,
        "The roof at an arithmetic intensity (FLOP/byte at `level`): min(peak, intensity x bandwidth), FLOP/s");
}
