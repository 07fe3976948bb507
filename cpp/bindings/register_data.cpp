#include "bindings.hpp"

#include "roofline/data.hpp"

void register_data(py::module_& m) {
    m.attr("DATA_DIR_VARIABLE") = roofline::kDataDirVariable;
    m.def("data_directory", &roofline::data_directory,
          "The folder holding hardware_db/, engine_db/ and model_db/ ($ROOFLINE_DATA_DIR when set)");
    m.def("set_data_directory", &roofline::set_data_directory, py::arg("directory"),
          "The folder used when $ROOFLINE_DATA_DIR is not set");
}
