// Where the core finds its data folders: hardware_db/, engine_db/ and model_db/ under one directory.
#pragma once

#include <string>

namespace roofline {

/// The environment variable naming the directory that holds hardware_db/, engine_db/ and model_db/.
inline constexpr const char* kDataDirVariable = "ROOFLINE_DATA_DIR";

/// The data directory: $ROOFLINE_DATA_DIR when set and not empty; else the one given to set_data_directory()
/// (the Python package gives its installed data folder); else the source tree the core was built from.
std::string data_directory();
/// The directory used when $ROOFLINE_DATA_DIR is not set. Databases loaded from the previous one stay loaded by
/// whoever holds them; the default engine database is reloaded on its next use.
void set_data_directory(const std::string& directory);
/// data_directory() + "/" + folder.
std::string data_path(const std::string& folder);

}  // namespace roofline
