#pragma once
namespace roofline {
/// The library version (from CMakeLists.txt's project(), the only place it is written).
const char* version();
}  // namespace roofline
