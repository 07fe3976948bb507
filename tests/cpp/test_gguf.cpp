#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/gguf.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

using namespace roofline;

namespace {

const std::string kDir = ROOFLINE_TEST_HARDWARE_DB "/../tests/data/gguf/";
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

std::vector<std::uint8_t> load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Builds GGUF bytes by hand, little-endian.
struct Bytes {
    std::vector<std::uint8_t> b;

    Bytes& uint(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        return *this;
    }
    Bytes& u8(std::uint64_t v) { return uint(v, 1); }
    Bytes& u32(std::uint64_t v) { return uint(v, 4); }
    Bytes& u64(std::uint64_t v) { return uint(v, 8); }
    Bytes& raw(const std::string& s) {
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& str(const std::string& s) { return u64(s.size()).raw(s); }
    Bytes& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    Bytes& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
    Bytes& kv_u32(const std::string& key, std::uint32_t v) { return str(key).u32(4).u32(v); }
    Bytes& tensor(const std::string& name, const std::vector<std::uint64_t>& ne, std::uint32_t type, std::uint64_t offset) {
        str(name).u32(ne.size());
        for (const auto d : ne) u64(d);
        return u32(type).u64(offset);
    }
    Bytes& pad(std::size_t align) {
        while (b.size() % align) b.push_back(0);
        return *this;
    }
    Bytes& zeros(std::size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
};

/// Two tensors; the second one's data ends exactly at the end of the file, so every shorter prefix is invalid.
std::vector<std::uint8_t> valid_file() {
    Bytes f;
    f.header(2, 3).kv_str("general.architecture", "llama").kv_u32("general.alignment", 32);
    f.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("a").str("bb").str("");
    f.tensor("a", {4}, 0, 0).tensor("b", {32, 2}, 8, 32).pad(32).zeros(32 + 68);
    return f.b;
}

/// Header + one architecture kv, followed by whatever the test appends (a kv pair or tensor infos).
Bytes start(std::uint64_t n_tensors, std::uint64_t n_kv_after_arch) {
    Bytes f;
    f.header(n_tensors, n_kv_after_arch + 1).kv_str("general.architecture", "llama");
    return f;
}

/// The InvalidArgument message of parsing `b`, or "" when it parses. Any other exception fails the test.
std::string error_of(const std::vector<std::uint8_t>& b, const GgufLimits& limits = {}) {
    try {
        parse_gguf(b.data(), b.size(), "test.gguf", limits);
    } catch (const InvalidArgument& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL("not an InvalidArgument: " << e.what());
    }
    return "";
}

#define CHECK_ERROR(bytes, text)                                                      \
    do {                                                                              \
        const std::string msg_ = error_of(bytes);                                     \
        CHECK_MESSAGE(msg_.find(text) != std::string::npos, "message: '" << msg_ << "'"); \
        CHECK_MESSAGE(msg_.rfind("test.gguf: ", 0) == 0, "message: '" << msg_ << "'"); \
    } while (0)

void check_value(const GgufValue& v, const nlohmann::ordered_json& e) {
    INFO("key " << v.key());
    const std::string type = e.at("type");
    CHECK(gguf_type_name(v.type()) == type);
    if (type == "array") {
        CHECK(gguf_type_name(v.element_type()) == e.at("element_type").get<std::string>());
        CHECK(v.array_count() == e.at("count").get<std::uint64_t>());
        const bool nested = e.at("element_type") == "array";
        const bool many_strings = e.at("element_type") == "string" && v.array_count() > 1024;
        CHECK(v.has_values() == !(nested || many_strings));
        const auto& values = e.contains("values") ? e.at("values") : e.contains("head") ? e.at("head") : nlohmann::ordered_json::array();
        if (v.has_values())
            for (std::size_t i = 0; i < values.size(); ++i) check_value(v.at(i), {{"type", e.at("element_type")}, {"value", values[i]}});
        return;
    }
    const auto& x = e.at("value");
    if (type == "string") CHECK(v.as_string() == x.get<std::string>());
    else if (type == "bool") CHECK(v.as_bool() == x.get<bool>());
    else if (type == "float32" || type == "float64") CHECK(v.as_double() == x.get<double>());
    else if (type[0] == 'u') CHECK(v.as_uint() == x.get<std::uint64_t>());
    else CHECK(v.as_int() == x.get<std::int64_t>());
}

void check_file(const GgufFile& f, const nlohmann::ordered_json& e) {
    CHECK(f.version == e.at("version").get<std::uint32_t>());
    CHECK(f.alignment == e.at("alignment").get<std::uint64_t>());
    CHECK(f.architecture() == e.at("architecture").get<std::string>());
    CHECK(f.file_size == e.at("file_size").get<std::uint64_t>());
    CHECK(f.data_offset == e.at("data_offset").get<std::uint64_t>());
    REQUIRE(f.metadata.size() == e.at("metadata_count").get<std::size_t>());
    std::size_t i = 0;
    for (const auto& [key, value] : e.at("metadata").items()) {
        CHECK(f.metadata[i].first == key);  // file order
        CHECK(f.metadata[i].second.key() == key);
        REQUIRE(f.find(key) != nullptr);
        check_value(*f.find(key), value);
        ++i;
    }
    REQUIRE(f.tensors.size() == e.at("tensor_count").get<std::size_t>());
    for (std::size_t j = 0; j < f.tensors.size(); ++j) {
        const GgufTensor& t = f.tensors[j];
        const auto& et = e.at("tensors")[j];
        INFO("tensor " << t.name);
        CHECK(t.name == et.at("name").get<std::string>());
        CHECK(t.shape == et.at("shape").get<std::vector<std::uint64_t>>());
        CHECK(t.type == et.at("type_id").get<int>());
        CHECK(std::string(t.type_name()) == et.at("type").get<std::string>());
        CHECK(t.n_elements == et.at("n_elements").get<double>());
        CHECK(t.bytes == et.at("bytes").get<double>());
        CHECK(t.offset == et.at("offset").get<std::uint64_t>());
        CHECK(f.find_tensor(t.name) == &t);
    }
    CHECK(f.total_tensor_bytes() == e.at("total_tensor_bytes").get<double>());
}

}  // namespace

TEST_CASE("GGUF fixtures written by the gguf package read back as expected.json says") {
    const auto expected = nlohmann::ordered_json::parse(load(kDir + "expected.json"));
    REQUIRE(expected.at("files").size() >= 6);
    for (const auto& e : expected.at("files")) {
        const std::string path = kDir + e.at("file").get<std::string>();
        SUBCASE(e.at("file").get<std::string>().c_str()) {
            const GgufFile f = read_gguf(path);
            CHECK(f.origin == path);
            check_file(f, e);
            const auto bytes = load(path);
            check_file(parse_gguf(bytes.data(), bytes.size(), path), e);  // memory and stream agree
        }
    }
}

TEST_CASE("GGUF fixture details: skipped vocabularies, nested arrays, every scalar type") {
    const GgufFile q = read_gguf(kDir + "qwen3.gguf");
    CHECK(q.architecture() == "qwen3");
    const GgufValue& tokens = q.get("tokenizer.ggml.tokens");
    CHECK(tokens.is_array());
    CHECK(tokens.array_count() == 1100);
    CHECK_FALSE(tokens.has_values());  // 1100 strings > max_stored_strings: counted, not kept
    CHECK_THROWS_WITH_AS(tokens.as_string_array(), doctest::Contains("whose values were skipped"), InvalidArgument);
    CHECK(q.get("tokenizer.ggml.token_type").as_int_array().size() == 1100);
    CHECK(q.get("tokenizer.ggml.merges").as_string_array() == std::vector<std::string>{"t o", "to k", "tok 1", "tok 2"});
    const GgufTensor* exps = q.find_tensor("blk.0.ffn_gate_exps.weight");
    REQUIRE(exps);
    CHECK(exps->shape == std::vector<std::uint64_t>{256, 4, 2});
    CHECK(exps->bytes == 8 * 144);
    CHECK(q.find_tensor("nope") == nullptr);

    // Smaller limits keep less and reject more.
    GgufLimits small;
    small.max_stored_strings = 2;
    CHECK_FALSE(read_gguf(kDir + "qwen3.gguf", small).get("tokenizer.ggml.merges").has_values());
    small.max_array = 1000;
    CHECK_THROWS_WITH_AS(read_gguf(kDir + "qwen3.gguf", small), doctest::Contains("at most 1000 are allowed"), InvalidArgument);

    const GgufFile g = read_gguf(kDir + "gpt2.gguf");
    CHECK(g.get("test.u64").as_uint() == kU64Max);
    CHECK_THROWS_WITH_AS(g.get("test.u64").as_int(), doctest::Contains("too large"), InvalidArgument);
    CHECK(g.get("test.i64").as_int() == std::numeric_limits<std::int64_t>::min());
    CHECK_THROWS_WITH_AS(g.get("test.i8").as_uint(), doctest::Contains("not a non-negative integer"), InvalidArgument);
    CHECK(g.get("test.i8").as_double() == -100);
    CHECK(g.get("test.f32").as_double() == static_cast<double>(0.1f));
    CHECK(g.get("test.string").as_string() == "h\xc3\xa9llo w\xc3\xb6rld");
    const GgufValue& nested = g.get("test.nested");
    CHECK(nested.element_type() == GgufType::array);
    CHECK(nested.array_count() == 2);
    CHECK_FALSE(nested.has_values());
    CHECK(g.get("test.floats").as_double_array() == std::vector<double>{0.5, -1.25, 3.0});
    CHECK(g.get("test.ints100").as_int_array().front() == -50);
    CHECK(g.get("test.bools").as_int_array() == std::vector<std::int64_t>{1, 0, 1});
    CHECK(g.get("test.bools").at(1).as_bool() == false);
    CHECK(g.get("test.bools").at(1).key() == "test.bools[1]");
    CHECK_THROWS_WITH_AS(g.get("test.bools").at(3), doctest::Contains("out of range"), InvalidArgument);
    CHECK(g.find_tensor("test.four_dims")->shape.size() == 4);

    const GgufFile v = read_gguf(kDir + "vocab_only.gguf");
    CHECK(v.tensors.empty());
    CHECK(v.total_tensor_bytes() == 0);
    CHECK(v.data_offset % 32 == 0);
    CHECK(v.get("tokenizer.ggml.tokens").as_string_array().back() == "\xe6\x97\xa5\xe6\x9c\xac");
}

TEST_CASE("GGUF value accessors name the key and the actual type") {
    const GgufFile f = read_gguf(kDir + "llama.gguf");
    const GgufValue& n = f.get("llama.block_count");
    CHECK(n.as_int() == 1);
    CHECK(n.as_double() == 1);
    CHECK_THROWS_WITH_AS(n.as_string(), "GGUF metadata 'llama.block_count' is a uint32 1, not a string", InvalidArgument);
    CHECK_THROWS_WITH_AS(n.as_bool(), doctest::Contains("'llama.block_count' is a uint32 1, not a bool"), InvalidArgument);
    CHECK_THROWS_WITH_AS(n.array_count(), doctest::Contains("not an array"), InvalidArgument);
    CHECK_THROWS_WITH_AS(f.get("general.name").as_int(), doctest::Contains("is a string 'tiny llama', not an integer"), InvalidArgument);
    CHECK_THROWS_WITH_AS(f.get("general.name").as_double(), doctest::Contains("not a number"), InvalidArgument);
    CHECK_THROWS_WITH_AS(f.get("llama.nope"), doctest::Contains("llama.gguf: GGUF metadata key 'llama.nope' is missing"), InvalidArgument);
    CHECK(f.find("llama.nope") == nullptr);

    const GgufFile g = read_gguf(kDir + "gpt2.gguf");
    CHECK_THROWS_WITH_AS(g.get("test.floats").as_int_array(), doctest::Contains("an array of 3 float32, not an integer array"), InvalidArgument);
    CHECK_THROWS_WITH_AS(g.get("test.floats").as_string_array(), doctest::Contains("not a string array"), InvalidArgument);

    // architecture() needs general.architecture, as a string
    auto b = Bytes().header(0, 1).kv_u32("general.name", 3).b;
    CHECK_THROWS_WITH_AS(parse_gguf(b.data(), b.size(), "x.gguf").architecture(),
                         "x.gguf: GGUF metadata key 'general.architecture' is missing", InvalidArgument);
    b = Bytes().header(0, 1).kv_u32("general.architecture", 3).b;
    CHECK_THROWS_WITH_AS(parse_gguf(b.data(), b.size(), "x.gguf").architecture(), doctest::Contains("not a string"), InvalidArgument);
}

TEST_CASE("a hand-built GGUF header parses") {
    const auto b = valid_file();
    const GgufFile f = parse_gguf(b.data(), b.size(), "test.gguf");
    CHECK(f.architecture() == "llama");
    CHECK(f.alignment == 32);
    CHECK(f.data_offset % 32 == 0);
    CHECK(f.data_offset + 32 + 68 == b.size());
    CHECK(f.get("tokenizer.ggml.tokens").as_string_array() == std::vector<std::string>{"a", "bb", ""});
    REQUIRE(f.tensors.size() == 2);
    CHECK(f.tensors[1].name == "b");
    CHECK(f.tensors[1].bytes == 68);
    CHECK(f.tensors[1].n_elements == 64);
    CHECK(f.total_tensor_bytes() == 84);
}

TEST_CASE("every prefix of a valid GGUF file is an InvalidArgument, never a crash") {
    const auto b = valid_file();
    for (std::size_t n = 0; n < b.size(); ++n) {
        const std::vector<std::uint8_t> prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
        const std::string msg = error_of(prefix);
        INFO("prefix of " << n << " bytes: " << msg);
        CHECK(msg.rfind("test.gguf: ", 0) == 0);
    }
    // Prefixes through the tensor infos say what they were reading.
    const std::vector<std::uint8_t> cut(b.begin(), b.begin() + 10);
    CHECK(error_of(cut) == "test.gguf: truncated at byte 8 while reading the tensor count (8 bytes needed, 2 left)");
    CHECK(error_of({}) == "test.gguf: truncated at byte 0 while reading the magic bytes 'GGUF' (4 bytes needed, 0 left)");
    CHECK_THROWS_AS(parse_gguf(nullptr, 0), InvalidArgument);

    // The same prefixes through the file reader: the path is named.
    const auto path = (std::filesystem::temp_directory_path() / "roofline_test_gguf_prefix.gguf").string();
    for (const std::size_t n : {std::size_t(0), std::size_t(3), std::size_t(30), std::size_t(70), b.size() - 1}) {
        {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(n));
        }
        CHECK_THROWS_WITH_AS(read_gguf(path), doctest::Contains((path + ": ").c_str()), InvalidArgument);
    }
    std::filesystem::remove(path);
}

TEST_CASE("GGUF files are read only up to their header") {
    // A file whose tensor data is larger than max_header_bytes still reads: the data is never read.
    GgufLimits limits;
    limits.max_header_bytes = 1024;
    CHECK_NOTHROW(read_gguf(kDir + "llama.gguf", limits));  // 29 KB file, 992-byte header
    limits.max_header_bytes = 256;
    CHECK_THROWS_WITH_AS(read_gguf(kDir + "llama.gguf", limits), doctest::Contains("the header is larger than the limit of 256 bytes"),
                         InvalidArgument);

    // A 16 GiB model (a sparse file): its header is read, its data is not, and the data must fit in the file.
    const auto path = (std::filesystem::temp_directory_path() / "roofline_test_gguf_big.gguf").string();
    const std::uint64_t n = std::uint64_t(1) << 32;  // F32 elements: 16 GiB
    const auto head = start(1, 0).tensor("big", {n}, 0, 0).pad(32).b;
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
    }
    std::error_code ec;
    std::filesystem::resize_file(path, head.size() + 4 * n, ec);
    if (!ec) {
        const GgufFile f = read_gguf(path);
        CHECK(f.tensors[0].bytes == 4.0 * static_cast<double>(n));
        CHECK(f.file_size == head.size() + 4 * n);
        std::filesystem::resize_file(path, head.size() + 4 * n - 1, ec);
        CHECK_THROWS_WITH_AS(read_gguf(path), doctest::Contains("runs past the end of the file"), InvalidArgument);
    }
    std::filesystem::remove(path, ec);
}

TEST_CASE("GGUF magic and version errors") {
    auto b = valid_file();
    b[3] = 'L';
    CHECK(error_of(b) == "test.gguf: at byte 0, not a GGUF file: it starts with 'GGUL', not 'GGUF'");
    auto elf = b;
    elf[0] = 0x7f;
    CHECK_ERROR(elf, "it starts with '\\x7fGUL'");
    CHECK_ERROR(Bytes().header(0, 0, 1).b, "GGUF version 1 is not supported (it stored counts and lengths in 32 bits)");
    CHECK_ERROR(Bytes().header(0, 0, 4).b, "at byte 4, GGUF version 4 is not supported; versions 2 and 3 are");
    CHECK_ERROR(Bytes().header(0, 0, 0).b, "GGUF version 0 is not supported");
    CHECK_ERROR(Bytes().header(0, 0, 0x03000000).b, "big-endian GGUF file");
    CHECK(error_of(Bytes().header(0, 0, 2).b).empty());
    CHECK(error_of(Bytes().header(0, 0, 3).b).empty());
}

TEST_CASE("GGUF counts, strings and arrays are bounded before anything is allocated") {
    const std::uint64_t huge = std::uint64_t(1) << 63;
    CHECK_ERROR(Bytes().header(huge, 0).b, "at byte 8, the tensor count 9223372036854775808 exceeds the limit of 1048576");
    CHECK_ERROR(Bytes().header(0, huge).b, "at byte 16, the metadata count 9223372036854775808 exceeds the limit");
    CHECK_ERROR(Bytes().header(kU64Max, kU64Max).b, "exceeds the limit");
    // Within the limits but not within the bytes left.
    CHECK_ERROR(Bytes().header(1000, 0).b, "claims 1000 tensors and 0 metadata pairs, at least 24000 bytes, but only 0 bytes are left");
    GgufLimits unlimited;
    unlimited.max_tensors = unlimited.max_kv = kU64Max;
    CHECK(error_of(Bytes().header(huge, huge).b, unlimited).find("but only 0 bytes are left") != std::string::npos);

    // Strings: keys at most 65535 bytes, others at most max_string, none longer than what is left.
    CHECK_ERROR(Bytes().header(0, 1).u64(std::uint64_t(1) << 62).zeros(16).b, "metadata pair 0's key is 4611686018427387904 bytes long; at most 65535");
    CHECK_ERROR(Bytes().header(0, 1).u64(kU64Max).zeros(16).b, "at most 65535 are allowed");
    CHECK_ERROR(Bytes().header(0, 1).u64(100).raw("abcdefghijklmnop").b, "truncated at byte 32 while reading metadata pair 0's key (100 bytes needed, 16 left)");
    CHECK_ERROR(start(0, 1).str("k").u32(8).u64(std::uint64_t(1) << 40).b, "metadata 'k' is 1099511627776 bytes long; at most 16777216");
    CHECK_ERROR(start(1, 0).u64(std::uint64_t(1) << 60).zeros(30).b, "tensor 0's name is 1152921504606846976 bytes long");
    CHECK_ERROR(start(1, 0).u64(1000).zeros(30).b, "truncated at byte 77 while reading tensor 0's name (1000 bytes needed, 30 left)");

    // Arrays: count <= max_array, and count * the smallest element size <= bytes left.
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(4).u64(std::uint64_t(1) << 40).b,
                "metadata 'k' has 1099511627776 uint32 elements; at most 4294967296 are allowed");
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(4).u64(std::uint64_t(1) << 31).zeros(64).b,
                "metadata 'k' claims 2147483648 uint32 elements, at least 8589934592 bytes, but only 64 bytes are left");
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(8).u64(1000).zeros(64).b, "claims 1000 string elements, at least 8000 bytes");
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(8).u64(2).str("ok").u64(kU64Max).b, "element 1 of metadata 'k' is 18446744073709551615 bytes long");
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(9).u64(1).u32(9).u64(1).u32(4).u64(100).zeros(20).b,
                "element 0 of element 0 of metadata 'k' claims 100 uint32 elements");
    // Long arrays are skipped (strings one by one: a truncated skipped vocabulary is still caught).
    GgufLimits keep1;
    keep1.max_stored_strings = 1;
    keep1.max_stored_array = 1;
    auto skipped = start(0, 1).str("k").u32(9).u32(8).u64(3).str("a").str("b").u64(5).raw("c").b;
    CHECK(error_of(skipped, keep1).find("truncated at byte 120 while reading element 2 of metadata 'k' (5 bytes needed, 1 left)") != std::string::npos);
    CHECK(error_of(start(0, 1).str("k").u32(9).u32(5).u64(3).zeros(11).b, keep1).find("truncated") != std::string::npos);
    CHECK(error_of(start(0, 1).str("k").u32(9).u32(5).u64(3).zeros(12).b, keep1).empty());
    // Nesting is bounded.
    Bytes deep = start(0, 1).str("k").u32(9);
    for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
    CHECK_ERROR(deep.u32(4).u64(0).b, "nests arrays 9 deep; at most 8 levels are allowed");
}

TEST_CASE("GGUF metadata errors") {
    CHECK_ERROR(start(0, 1).str("k").u32(13).u32(0).b, "at byte 78, the value type of metadata 'k' is 13, not a GGUF value type (0 to 12)");
    CHECK_ERROR(start(0, 1).str("k").u32(9).u32(99).u64(0).b, "the element type of metadata 'k' is 99");
    CHECK_ERROR(start(0, 1).str("k").u32(7).u8(2).b, "metadata 'k' is a bool stored as 2; only 0 and 1 are allowed");
    CHECK(error_of(start(0, 1).str("k").u32(7).u8(1).b).empty());
    CHECK_ERROR(start(0, 1).str("").u32(4).u32(0).b, "metadata pair 1 has an empty key");
    CHECK_ERROR(start(0, 1).kv_str("general.architecture", "gpt2").b, "at byte 69, metadata key 'general.architecture' appears twice");
    CHECK_ERROR(start(0, 1).str("k\n\xff").u32(4).b, "metadata 'k\\x0a\\xff'");  // unprintable bytes are escaped

    // general.alignment: a power of two up to 1 MiB
    CHECK_ERROR(start(0, 1).kv_u32("general.alignment", 48).b, "general.alignment is a uint32 48; it must be a power of two");
    CHECK_ERROR(start(0, 1).kv_u32("general.alignment", 0).b, "it must be a power of two");
    CHECK_ERROR(start(0, 1).kv_u32("general.alignment", 1u << 21).b, "at most 1048576 is allowed");
    CHECK_ERROR(start(0, 1).kv_str("general.alignment", "32").b, "general.alignment is a string '32'; it must be an integer");
    CHECK_ERROR(start(0, 1).str("general.alignment").u32(5).u32(static_cast<std::uint32_t>(-64)).b, "it must be a power of two");
    const auto b8 = start(0, 1).str("general.alignment").u32(10).u64(8).b;
    CHECK(parse_gguf(b8.data(), b8.size()).alignment == 8);  // any integer type
}

TEST_CASE("GGUF tensor info errors") {
    // n_dims, dimensions and their product
    CHECK_ERROR(start(1, 0).str("t").u32(100).zeros(40).b, "tensor 0 ('t') has 100 dimensions; at most 4 are allowed");
    CHECK_ERROR(start(1, 0).tensor("t", {4, std::uint64_t(1) << 63}, 0, 0).b, "tensor 0 ('t')'s dimension 1 is 9223372036854775808; at most 2^63-1");
    CHECK_ERROR(start(1, 0).tensor("t", {std::uint64_t(1) << 32, std::uint64_t(1) << 32}, 0, 0).b,
                "tensor 0 ('t') has shape [4294967296, 4294967296], more than 2^63-1 elements");
    CHECK_ERROR(start(1, 0).tensor("t", {std::uint64_t(1) << 62, 2}, 0, 0).b, "more than 2^63-1 elements");
    CHECK_ERROR(start(1, 0).tensor("t", {std::uint64_t(1) << 62}, 28, 0).b, "tensor 0 ('t') of shape [4611686018427387904] and type F64 would take more than 2^64 bytes");
    // Zero-sized dimensions are fine (no division by zero) and take no bytes.
    const auto empty_t = start(1, 0).tensor("t", {0, kU64Max >> 1, kU64Max >> 1}, 0, 0).pad(32).b;
    const GgufFile ef = parse_gguf(empty_t.data(), empty_t.size());
    CHECK(ef.tensors[0].n_elements == 0);
    CHECK(ef.tensors[0].bytes == 0);
    // 0-dimensional tensors are scalars
    const auto scalar = start(1, 0).tensor("s", {}, 0, 0).pad(32).zeros(4).b;
    CHECK(parse_gguf(scalar.data(), scalar.size()).tensors[0].n_elements == 1);

    // types
    CHECK_ERROR(start(1, 0).tensor("t", {32}, 99, 0).b, "tensor 0 ('t') has unknown ggml type id 99; known: F32, F16");
    CHECK_ERROR(start(1, 0).tensor("t", {32}, 4, 0).b, "unknown ggml type id 4");  // Q4_2, removed from ggml
    CHECK_ERROR(start(1, 0).tensor("t", {32}, 0xffffffffu, 0).b, "unknown ggml type id 4294967295");
    CHECK_ERROR(start(1, 0).tensor("t", {100, 2}, 12, 0).b, "tensor 0 ('t') has rows of 100 elements (ne0), not a multiple of Q4_K's block of 256");
    CHECK_ERROR(start(1, 0).tensor("t", {}, 8, 0).b, "rows of 1 elements");

    // offsets: aligned, inside the file, no overflow
    CHECK_ERROR(start(1, 0).tensor("t", {4}, 0, 8).pad(32).zeros(64).b, "tensor 0 ('t') has data offset 8, not a multiple of the alignment 32");
    CHECK_ERROR(start(1, 1).kv_u32("general.alignment", 64).tensor("t", {4}, 0, 32).pad(64).zeros(64).b, "not a multiple of the alignment 64");
    const auto past = start(2, 0).tensor("a", {4}, 0, 0).tensor("b", {4}, 0, 32).pad(32).zeros(40).b;
    CHECK_ERROR(past, "at byte 127, tensor 1 ('b')'s data, bytes 192 to 208, runs past the end of the file (200 bytes; truncated?)");
    CHECK_ERROR(start(1, 0).tensor("t", {4}, 0, kU64Max - 31).pad(32).b, "tensor 0 ('t')'s data offset 18446744073709551584 overflows");
    CHECK_ERROR(start(1, 0).tensor("t", {4}, 0, std::uint64_t(1) << 40).pad(32).b, "runs past the end of the file");
    CHECK_ERROR(start(1, 0).tensor("t", {4}, 0, 0).b, "runs past the end of the file");  // no data section at all

    // names
    CHECK_ERROR(start(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad(32).zeros(64).b,
                "tensor 1 is named 'w' like tensor 0; tensor names must be unique");
}

TEST_CASE("GGUF reader survives random corruption of real headers") {
    // Every mutation of a fixture either parses or is an InvalidArgument: never another exception or a crash
    // (run under ASan/UBSan to also rule out undefined behaviour).
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    int parsed = 0, rejected = 0;
    for (const char* name : {"gpt2.gguf", "qwen3.gguf", "aligned64.gguf"}) {
        const auto original = load(kDir + name);
        const GgufFile f = parse_gguf(original.data(), original.size());
        const auto header = static_cast<std::size_t>(f.data_offset);
        for (int round = 0; round < 3000; ++round) {
            auto b = original;
            const int edits = 1 + static_cast<int>(next() % 4);
            for (int k = 0; k < edits; ++k) {
                const std::size_t at = static_cast<std::size_t>(next() % header);
                switch (next() % 4) {
                    case 0: b[at] = static_cast<std::uint8_t>(next()); break;
                    case 1: b[at] ^= static_cast<std::uint8_t>(1u << (next() % 8)); break;
                    case 2: b[at] = 0xff; break;
                    default: b.resize(std::max<std::size_t>(at, 1)); break;
                }
                if (b.size() <= header) break;
            }
            const std::string msg = error_of(b);
            (msg.empty() ? parsed : rejected)++;
        }
    }
    CHECK(rejected > 0);
    MESSAGE("corrupted headers: " << parsed << " still parsed, " << rejected << " rejected");
}

TEST_CASE("read_gguf: files that cannot be opened are a FileError") {
    CHECK_THROWS_WITH_AS(read_gguf("/nonexistent/model.gguf"), "cannot open '/nonexistent/model.gguf': no such file or not readable", FileError);
    CHECK_THROWS_WITH_AS(read_gguf(kDir), doctest::Contains("it is a directory"), FileError);
}
