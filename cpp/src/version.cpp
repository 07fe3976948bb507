#include "roofline/version.hpp"
namespace roofline {
const char* version() { return ROOFLINE_VERSION; }
}  // namespace roofline
