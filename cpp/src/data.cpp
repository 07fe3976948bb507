#include "roofline/data.hpp"

#include <cstdlib>
#include <mutex>

namespace roofline {

namespace {
std::mutex& data_mutex() {
    static std::mutex m;
    return m;
}
std::string& configured() {
    static std::string dir;
    return dir;
}
}  // namespace

std::string data_directory() {
    if (const char* env = std::getenv(kDataDirVariable); env && *env) return env;
    {
        const std::lock_guard<std::mutex> lock(data_mutex());
        if (!configured().empty()) return configured();
    }
#ifdef ROOFLINE_SOURCE_DATA_DIR
    return ROOFLINE_SOURCE_DATA_DIR;
#else
    return ".";
#endif
}

void set_data_directory(const std::string& directory) {
    const std::lock_guard<std::mutex> lock(data_mutex());
    configured() = directory;
}

std::string data_path(const std::string& folder) { return data_directory() + "/" + folder; }

}  // namespace roofline
