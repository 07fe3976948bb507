// GGUF model files (ggml / llama.cpp), versions 2 and 3, little-endian: the header only — the metadata
// key-value pairs and the tensor infos (name, shape, ggml type, offset). Tensor data is never read.
//
// The reader treats every file as hostile: each count is checked against GgufLimits and against the bytes
// that remain before anything is allocated, every size product and offset sum is overflow-checked, and any
// defect is an InvalidArgument naming the origin, the byte offset and what was wrong
// ("model.gguf: truncated at byte 1234 while reading tensor 7's name (8 bytes needed, 3 left)").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roofline {

/// GGUF metadata value types; the numbers are the ones stored in the file.
enum class GgufType : std::uint32_t {
    uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6, boolean = 7,
    string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12,
};
/// "uint8", "int8", ..., "float32", "bool", "string", "array", "uint64", "int64", "float64".
const char* gguf_type_name(GgufType t);

namespace detail {
class GgufParser;
}

/// One metadata value. Scalars keep their value; arrays keep their element type and count, and their values
/// only when they are small (GgufLimits::max_stored_array numbers, max_stored_strings strings; nested arrays
/// never): a 150k-token vocabulary is skipped over, not stored. Accessors of the wrong type throw
/// InvalidArgument naming the key and the actual type.
class GgufValue {
public:
    GgufValue() = default;

    const std::string& key() const { return key_; }
    GgufType type() const { return type_; }
    bool is_array() const { return type_ == GgufType::array; }
    bool is_string() const { return type_ == GgufType::string; }
    bool is_bool() const { return type_ == GgufType::boolean; }
    bool is_float() const { return type_ == GgufType::float32 || type_ == GgufType::float64; }
    /// uint8 ... int64 (not bool, not floats).
    bool is_integer() const;

    /// Any integer type; a uint64 above INT64_MAX throws.
    std::int64_t as_int() const;
    /// Any integer type; a negative value throws.
    std::uint64_t as_uint() const;
    /// Any integer or float type.
    double as_double() const;
    bool as_bool() const;
    const std::string& as_string() const;

    /// Arrays only (these throw on scalars).
    GgufType element_type() const;
    std::uint64_t array_count() const;
    /// Whether the array's values were kept (small arrays of scalars or strings).
    bool has_values() const;
    /// Element i as a scalar value whose key is "key[i]"; throws when the values were not kept.
    GgufValue at(std::size_t i) const;
    /// Integer (or bool) arrays.
    std::vector<std::int64_t> as_int_array() const;
    /// Integer or float arrays.
    std::vector<double> as_double_array() const;
    const std::vector<std::string>& as_string_array() const;

    /// "uint32 4096", "string 'llama'", "array of 151936 string", for messages.
    std::string describe() const;

private:
    friend class detail::GgufParser;
    [[noreturn]] void wrong_type(const char* wanted) const;
    void require_values(const char* wanted) const;

    std::string key_;
    GgufType type_ = GgufType::uint8;
    // Scalars: exactly one of these is meaningful, chosen by type_ (bool lives in u_ as 0/1).
    std::uint64_t u_ = 0;
    std::int64_t i_ = 0;
    double f_ = 0;
    std::string s_;
    // Arrays.
    GgufType elem_ = GgufType::uint8;
    std::uint64_t count_ = 0;
    bool stored_ = false;
    std::vector<std::uint64_t> us_;  ///< unsigned integer and bool elements
    std::vector<std::int64_t> is_;   ///< signed integer elements
    std::vector<double> fs_;         ///< float elements
    std::vector<std::string> ss_;    ///< string elements
};

struct GgufTensor {
    std::string name;
    std::vector<std::uint64_t> shape;  ///< ne0 (the contiguous row) first, as GGUF stores it
    int type = 0;                      ///< ggml type id (see ggml_type_info)
    std::uint64_t offset = 0;          ///< from the start of the data section (GgufFile::data_offset)
    double n_elements = 0;             ///< product of the shape (1 for a 0-dimensional tensor)
    double bytes = 0;                  ///< n_elements / block_size * type_size of the ggml type
    const char* type_name() const;     ///< "Q4_K", "F16", ...
};

struct GgufFile {
    std::string origin;             ///< file path or the origin given to parse_gguf
    std::uint32_t version = 3;
    std::uint64_t alignment = 32;   ///< general.alignment, 32 when absent
    std::uint64_t data_offset = 0;  ///< file offset of the tensor data section (aligned)
    std::uint64_t file_size = 0;    ///< bytes in the file (or buffer)
    std::vector<std::pair<std::string, GgufValue>> metadata;  ///< in file order
    std::vector<GgufTensor> tensors;                          ///< in file order

    /// nullptr when absent.
    const GgufValue* find(std::string_view key) const;
    /// InvalidArgument naming the origin when absent.
    const GgufValue& get(std::string_view key) const;
    /// nullptr when absent.
    const GgufTensor* find_tensor(std::string_view name) const;
    /// general.architecture ("llama", "qwen3", ...); InvalidArgument when missing or not a string.
    std::string architecture() const;
    /// Sum of the tensors' bytes (without the alignment padding between them).
    double total_tensor_bytes() const;
};

/// Upper bounds that a file must respect; they keep a hostile header from costing unbounded memory or time.
struct GgufLimits {
    std::uint64_t max_tensors = 1u << 20;
    std::uint64_t max_kv = 1u << 20;
    std::uint64_t max_string = 1u << 24;         ///< bytes of one string (keys, values, tensor names)
    std::uint64_t max_array = 1ull << 32;        ///< elements of one metadata array
    std::uint32_t max_dims = 4;                  ///< ggml's GGML_MAX_DIMS
    std::uint64_t max_header_bytes = 1ull << 31; ///< everything before the data section
    std::uint64_t max_stored_array = 1u << 16;   ///< numeric arrays up to this count keep their values
    std::uint64_t max_stored_strings = 1024;     ///< string arrays up to this count keep their values
    std::uint32_t max_array_depth = 8;           ///< nesting of arrays of arrays (64 at most, whatever is set)
};

/// Parses a GGUF header from memory. `data`/`size` is the whole file: tensor data must lie inside it.
GgufFile parse_gguf(const std::uint8_t* data, std::size_t size, std::string_view origin = "<memory>",
                    const GgufLimits& limits = {});
/// Reads only the header of a GGUF file, streaming (real files are many GB; their tensor data is never read).
/// FileError when the file cannot be opened; InvalidArgument when it is not a valid GGUF file.
GgufFile read_gguf(const std::string& path, const GgufLimits& limits = {});

}  // namespace roofline
