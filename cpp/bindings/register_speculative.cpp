#include "bindings.hpp"

#include "roofline/speculative.hpp"

void register_speculative(py::module_& m) {
    m.def("speculative_tokens_per_cycle", &roofline::speculative_tokens_per_cycle, py::arg("draft_tokens"),
          py::arg("acceptance"), "Expected tokens per draft-and-verify cycle: (1 - a^(g+1)) / (1 - a)");
}
