// Uses the installed library and its installed data only: prints the data directory, then an estimate from the
// default hardware, engine and model databases. Exit 1 when anything is missing.
#include "roofline/roofline_all.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

int main() {
    using namespace roofline;
    try {
        std::printf("data directory: %s\n", data_directory().c_str());
        const DeviceDB db = DeviceDB::load_directory(DeviceDB::default_directory());
        std::ifstream in(data_path("model_db") + "/llama-3.1-8b.json");
        if (!in) {
            std::fprintf(stderr, "model_db/llama-3.1-8b.json not found under %s\n", data_directory().c_str());
            return 1;
        }
        std::stringstream text;
        text << in.rdbuf();
        const Model m = Model::from_catalog_entry(text.str(), "llama-3.1-8b.json");
        Workload w;
        w.quant = "Q4_K_M";
        w.engine = "llama.cpp";  // engine_db, through the default engine database
        const Estimate e = estimate(m, db.get("h100-sxm"), w);
        std::printf("%zu devices, %zu engines; llama-3.1-8b Q4_K_M on h100-sxm: %.1f tokens/s decode\n",
                    db.devices().size(), engine_names().size(), e.decode_tokens_per_s);
        return e.decode_tokens_per_s > 0 ? 0 : 1;
    } catch (const std::exception& err) {
        std::fprintf(stderr, "consumer: %s\n", err.what());
        return 1;
    }
}
