// Fuzz harnesses shared by the libFuzzer targets (fuzz/fuzz_<target>.cpp) and the regression test
// (tests/cpp/test_fuzz_regressions.cpp, which replays fuzz/corpus/ and fuzz/regressions/ under doctest).
//
// A harness feeds one input to one loader. Input the loader rejects with a roofline::Error (InvalidArgument,
// NotFound, FileError) is a correct answer. Input it accepts is then used — serialised and parsed again, turned
// into ops and evaluated — and every number that comes out must be finite and >= 0; a broken invariant throws
// InvariantViolation. Anything else (another exception type, a crash, a sanitizer report, a leak, an
// allocation above the cap scripts/fuzz.sh sets) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace roofline::fuzz {

struct InvariantViolation : std::logic_error {
    using std::logic_error::logic_error;
};

/// GGUF bytes -> parse_gguf; accepted files -> Model::from_gguf, its tensor formats, a forward pass.
void gguf(const std::uint8_t* data, std::size_t size);
/// Device JSON -> parse_device; accepted devices -> to_json round trip, ops evaluated against it.
void device(const std::uint8_t* data, std::size_t size);
/// HF config.json -> Model::from_hf_config; accepted models -> weights under a few quants, a forward pass,
/// the KV cache and, for small models, a whole estimate.
void hf_config(const std::uint8_t* data, std::size_t size);
/// model_db entry -> Model::from_catalog_entry; then as hf_config.
void model_entry(const std::uint8_t* data, std::size_t size);
/// Calibration profile JSON -> parse_profile; accepted profiles -> JSON round trip, the report, the device built
/// from the profile and a datasheet device calibrated with it (never above the datasheet without saying so).
void profile(const std::uint8_t* data, std::size_t size);

using Harness = void (*)(const std::uint8_t*, std::size_t);
struct Target {
    const char* name;
    Harness run;
};
/// Every target: {"gguf", gguf}, {"device", device}, {"hf_config", hf_config}, {"model_entry", model_entry},
/// {"profile", profile}. The names are the folders of fuzz/corpus and fuzz/regressions.
const std::vector<Target>& targets();

}  // namespace roofline::fuzz
