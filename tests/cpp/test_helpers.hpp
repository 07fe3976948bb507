// Shared by the doctest files: the source tree's databases and a toy device.
#pragma once

#include <doctest/doctest.h>

#include "roofline/device.hpp"
#include "roofline/format.hpp"
#include "roofline/model.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace roofline::test {

/// The text of model_db/<id>.json in the source tree.
inline std::string model_db_file(const std::string& id) {
    std::ifstream in(std::string(ROOFLINE_TEST_HARDWARE_DB) + "/../model_db/" + id + ".json");
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
/// A model_db entry as a Model.
inline Model catalog(const std::string& id) { return Model::from_catalog_entry(model_db_file(id), id + ".json"); }

/// The source tree's hardware_db, loaded once.
inline const DeviceDB& hardware_db() {
    static const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    return db;
}

inline const Format kBf16 = format_of(DType::bf16);

/// A two-layer llama-style config: 4 heads of 64, 2 KV heads.
inline const char* const kTiny = R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048})";

/// A made-up NVIDIA GPU with round numbers.
inline const char* const kToyDevice = R"({
  "schema_version": 1, "id": "toy", "name": "Toy", "vendor": "nvidia", "family": "toy", "kind": "gpu", "aliases": [],
  "compute_units": {"count": 100, "name": "SM", "source": "made up for a test"},
  "clocks": {"boost_MHz": 1000, "source": "made up for a test"},
  "memory": {"dram": {"type": "HBM", "bandwidth_GBps": 1000, "capacity_GiB": 16, "source": "made up for a test"},
             "l2": {"type": "L2", "capacity_MiB": 40, "source": "made up for a test"},
             "sram": {"type": "smem", "per_unit_KiB": 192, "source": "made up for a test"}},
  "compute": [{"format": "bf16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "fp16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "int8", "unit": "matrix", "peak_TFLOPS": 200, "source": "made up for a test"},
              {"format": "fp32", "unit": "vector", "peak_TFLOPS": 10, "source": "made up for a test"},
              {"format": "int32", "unit": "vector", "peak_TFLOPS": 5, "source": "made up for a test"}],
  "interconnect": [{"name": "link", "bandwidth_GBps": 100, "source": "made up for a test"}],
  "efficiency": {"dram_bandwidth_fraction": 0.8, "compute_fraction": 0.7, "launch_overhead_us": 3, "source": "made up for a test"}
})";

}  // namespace roofline::test
