// One libFuzzer entry point, compiled once per target with -DROOFLINE_FUZZ_TARGET=<harness name> (see the
// ROOFLINE_FUZZ block of the top-level CMakeLists.txt and scripts/fuzz.sh).
#include "harness.hpp"

#include <cstddef>
#include <cstdint>

#ifndef ROOFLINE_FUZZ_TARGET
#error "compile with -DROOFLINE_FUZZ_TARGET=gguf|device|hf_config|model_entry|profile"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    roofline::fuzz::ROOFLINE_FUZZ_TARGET(data, size);
    return 0;
}
