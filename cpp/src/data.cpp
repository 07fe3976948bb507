#include "roofline/data.hpp"

#include <cstdlib>
#include <filesystem>
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
std::string& package() {
    static std::string dir;
    return dir;
}
bool holds_databases(const std::string& dir) {
    std::error_code ec;
    return std::filesystem::is_directory(std::filesystem::path(dir) / "hardware_db", ec);
}
}  // namespace

std::string data_directory() {
    if (const char* env = std::getenv(kDataDirVariable); env && *env) return env;
    {
        const std::lock_guard<std::mutex> lock(data_mutex());
        if (!configured().empty()) return configured();
        if (!package().empty()) return package();
    }
#ifdef ROOFLINE_INSTALL_DATA_DIR
    if (holds_databases(ROOFLINE_INSTALL_DATA_DIR)) return ROOFLINE_INSTALL_DATA_DIR;
#endif
#ifdef ROOFLINE_SOURCE_DATA_DIR
    if (holds_databases(ROOFLINE_SOURCE_DATA_DIR)) return ROOFLINE_SOURCE_DATA_DIR;
#endif
    return ".";
}

void set_package_data_directory(const std::string& directory) {
    const std::lock_guard<std::mutex> lock(data_mutex());
    package() = directory;
}

void set_data_directory(const std::string& directory) {
    const std::lock_guard<std::mutex> lock(data_mutex());
    configured() = directory;
}

std::string data_path(const std::string& folder) { return data_directory() + "/" + folder; }

}  // namespace roofline
