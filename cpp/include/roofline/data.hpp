// Where the core finds its data folders: hardware_db/, engine_db/ and model_db/ under one directory.
#pragma once

#include <string>

namespace roofline {

/// The environment variable naming the directory that holds hardware_db/, engine_db/ and model_db/.
inline constexpr const char* kDataDirVariable = "ROOFLINE_DATA_DIR";

/// The data directory, the first of: $ROOFLINE_DATA_DIR when set and not empty; the one given to
/// set_data_directory() (the Python package gives its installed data folder); the installed package's
/// (set_package_data_directory, done by this header in programs built against find_package(roofline), which
/// computes it from where the package is found, so a moved install prefix still works); the install prefix the
/// library was built for (CMAKE_INSTALL_PREFIX/share/roofline), when it holds hardware_db/; the source tree the
/// library was built from, when it still exists; else ".".
std::string data_directory();
/// The directory used when $ROOFLINE_DATA_DIR is not set. Databases loaded from the previous one stay loaded by
/// whoever holds them; the default engine database is reloaded on its next use.
void set_data_directory(const std::string& directory);
/// The data directory of the installed package a program was built against (below set_data_directory).
void set_package_data_directory(const std::string& directory);
/// data_directory() + "/" + folder.
std::string data_path(const std::string& folder);

#ifdef ROOFLINE_PACKAGE_DATA_DIR
// find_package(roofline) defines ROOFLINE_PACKAGE_DATA_DIR on its target: the installed data, wherever the prefix is
namespace detail {
inline const bool package_data_directory_registered = (set_package_data_directory(ROOFLINE_PACKAGE_DATA_DIR), true);
}  // namespace detail
#endif

}  // namespace roofline
