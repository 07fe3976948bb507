// Replays every file of fuzz/regressions/<target>/ (inputs a fuzzer once crashed on, kept after the fix) and of the
// seed corpus fuzz/corpus/<target>/ through the fuzz harnesses: each must be accepted or rejected with a
// roofline::Error, never crash, and every number from an accepted one must be finite (fuzz/harness.hpp).
#include <doctest/doctest.h>

#include "harness.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifdef ROOFLINE_FUZZ_DIR

namespace {
namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file() && e.path().filename().string().front() != '.') out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::uint8_t> bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t replay(const char* folder) {
    std::size_t n = 0;
    for (const auto& t : roofline::fuzz::targets()) {
        for (const auto& f : files_in(fs::path(ROOFLINE_FUZZ_DIR) / folder / t.name)) {
            const auto b = bytes_of(f);
            CAPTURE(f.string());
            CHECK_NOTHROW(t.run(b.data(), b.size()));
            ++n;
        }
    }
    return n;
}
}  // namespace

TEST_CASE("fuzz regressions: every input a fuzzer crashed on is now accepted or rejected cleanly") {
    replay("regressions");
}

TEST_CASE("fuzz seed corpus: every seed goes through its harness cleanly") {
    CHECK(replay("corpus") >= 5);
}

TEST_CASE("fuzz harnesses: empty and one-byte inputs") {
    const std::uint8_t byte = 0x7b;  // '{'
    for (const auto& t : roofline::fuzz::targets()) {
        CAPTURE(t.name);
        CHECK_NOTHROW(t.run(nullptr, 0));
        CHECK_NOTHROW(t.run(&byte, 1));
    }
}

#endif
