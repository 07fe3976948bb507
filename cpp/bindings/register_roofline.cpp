#include "bindings.hpp"

#include <sstream>

using namespace roofline;

namespace {
py::dict timing_to_dict(const Timing& t) {
    py::dict d;
    d["seconds"] = t.seconds;
    d["bound"] = bound_name(t.bound);
    d["compute_seconds"] = t.times.compute_s();
    d["serial_seconds"] = t.times.serial_s;
    for (std::size_t i = 0; i < kNumLevels; ++i)
        d[("memory_seconds_" + std::string(level_name(static_cast<Level>(i)))).c_str()] =
            t.level_evaluated[i] ? py::object(py::float_(t.times.memory_s[i])) : py::object(py::none());
    d["overhead_seconds"] = t.times.overhead_s;
    d["flops"] = t.flops;
    d["attainable_flops"] = t.attainable_flops;
    d["achieved_flops"] = t.achieved_flops;
    d["ceilings"] = t.ceilings == Ceilings::ideal ? "ideal" : "derated";
    return d;
}
}  // namespace

void register_roofline(py::module_& m) {
    py::class_<CeilingTimes>(m, "CeilingTimes",
                             "Seconds against each ceiling; total = max(overlapped compute, each memory level) + serial + overhead")
        .def(py::init<>())
        .def_readwrite("matrix_s", &CeilingTimes::matrix_s, "compute on matrix units overlapped with memory traffic")
        .def_readwrite("vector_s", &CeilingTimes::vector_s, "compute on vector units overlapped with memory traffic")
        .def_readwrite("serial_s", &CeilingTimes::serial_s, "compute not overlapped with memory traffic")
        .def_readwrite("memory_s", &CeilingTimes::memory_s, "DRAM, L2, SRAM seconds")
        .def_readwrite("overhead_s", &CeilingTimes::overhead_s, "fixed cost of the kernels")
        .def("total", &CeilingTimes::total, py::arg("matrix_utilization") = 1.0, "the timing rule")
        .def("bound", [](const CeilingTimes& c, double u) { return bound_name(c.bound(u)); }, py::arg("matrix_utilization") = 1.0);
    m.def("sum_of_totals", &sum_of_totals, py::arg("first"), py::arg("step"), py::arg("n"),
          "Σ_{x<n} total(first + x·step), exactly");

    py::class_<Timing>(m, "Timing", "The roofline time of an op on a device and what bounds it")
        .def_readonly("seconds", &Timing::seconds)
        .def_property_readonly("bound", [](const Timing& t) { return bound_name(t.bound); },
                               "'compute' | 'memory:dram' | 'memory:l2' | 'memory:sram' | 'overhead' | 'none'")
        .def_readonly("times", &Timing::times, "seconds against each ceiling")
        .def_property_readonly("compute_seconds", [](const Timing& t) { return t.times.compute_s(); },
                               "all compute, matrix and vector, its serial part included")
        .def_property_readonly("serial_seconds", [](const Timing& t) { return t.times.serial_s; },
                               "the part of compute_seconds not overlapped with memory traffic (derated only)")
        .def_property_readonly("memory_seconds",
                               [](const Timing& t) {
                                   py::dict d;
                                   for (std::size_t i = 0; i < kNumLevels; ++i)
                                       if (t.level_evaluated[i])
                                           d[py::str(std::string(level_name(static_cast<Level>(i))))] = t.times.memory_s[i];
                                   return d;
                               })
        .def_property_readonly("overhead_seconds", [](const Timing& t) { return t.times.overhead_s; })
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
                const CeilingTimes& c = t.times;
                return py::make_tuple(t.seconds, static_cast<int>(t.bound), c.matrix_s, c.vector_s, c.serial_s, c.memory_s,
                                      c.overhead_s, t.level_evaluated, t.flops, t.attainable_flops, t.achieved_flops,
                                      static_cast<int>(t.ceilings));
            },
            [](const py::tuple& p) {
                if (p.size() != 12) throw InvalidArgument("Timing pickle must hold 12 values, got " + std::to_string(p.size()));
                Timing t;
                t.seconds = p[0].cast<double>();
                const int bound = p[1].cast<int>(), ceilings = p[11].cast<int>();
                if (bound < 0 || bound > static_cast<int>(Bound::overhead) || ceilings < 0 || ceilings > 1)
                    throw InvalidArgument("Timing pickle holds an unknown bound or ceilings");
                t.bound = static_cast<Bound>(bound);
                t.times.matrix_s = p[2].cast<double>();
                t.times.vector_s = p[3].cast<double>();
                t.times.serial_s = p[4].cast<double>();
                t.times.memory_s = p[5].cast<std::array<double, kNumLevels>>();
                t.times.overhead_s = p[6].cast<double>();
                t.level_evaluated = p[7].cast<std::array<bool, kNumLevels>>();
                t.flops = p[8].cast<double>();
                t.attainable_flops = p[9].cast<double>();
                t.achieved_flops = p[10].cast<double>();
                t.ceilings = static_cast<Ceilings>(ceilings);
                return t;
            }));
}

// The functions that take a Device: registered after it, so their signatures name the Python classes.
void register_roofline_functions(py::module_& m) {
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
