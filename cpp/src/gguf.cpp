#include "roofline/gguf.hpp"

#include "roofline/errors.hpp"
#include "roofline/quant.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace roofline {

// Layout (ggml docs/gguf.md; v2 and v3 share it, v3 only added big-endian files, v1 had 32-bit counts):
//   "GGUF" u32 version, u64 tensor_count, u64 metadata_kv_count,
//   kv pairs:     string key (u64 length + bytes), u32 value type, value
//                 (array value: u32 element type, u64 count, the elements back to back),
//   tensor infos: string name, u32 n_dims, u64 ne[n_dims] (ne0 first), u32 ggml type, u64 offset
//                 (from the start of the data section, a multiple of the alignment),
//   zero padding to general.alignment (32 when absent), then the data section.
// Where the spec and ggml's reader (gguf.cpp) differ, this reader follows ggml: alignment is any power of two
// up to 1 MiB (the spec says "a multiple of 8"), dimensions are at most INT64_MAX and so is their product.

namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kI64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr std::uint64_t kMaxAlignment = std::uint64_t(1) << 20;  // ggml's GGUF_MAX_ALIGNMENT
constexpr std::uint64_t kMaxKeyLength = 65535;                   // the spec: keys are at most 2^16-1 bytes
constexpr std::uint32_t kNumTypes = 13;
constexpr std::uint32_t kMaxArrayDepth = 64;  // arrays are parsed recursively: bound the stack whatever the limits say
// Smallest possible encodings: a kv pair with a one-byte key and a uint8 value; a tensor info with an empty
// name and no dimensions. Used to reject counts that cannot fit in the bytes left, before allocating.
constexpr std::uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr std::uint64_t kMinTensorBytes = 8 + 4 + 4 + 8;

std::size_t fixed_size(GgufType t) {
    switch (t) {
        case GgufType::uint8: case GgufType::int8: case GgufType::boolean: return 1;
        case GgufType::uint16: case GgufType::int16: return 2;
        case GgufType::uint32: case GgufType::int32: case GgufType::float32: return 4;
        case GgufType::uint64: case GgufType::int64: case GgufType::float64: return 8;
        case GgufType::string: case GgufType::array: return 0;
    }
    return 0;
}

/// Smallest encoding of one array element: strings have an 8-byte length, arrays a 4-byte type and 8-byte count.
std::uint64_t min_element_size(GgufType t) {
    if (t == GgufType::string) return 8;
    if (t == GgufType::array) return 12;
    return fixed_size(t);
}

bool is_unsigned(GgufType t) {
    return t == GgufType::uint8 || t == GgufType::uint16 || t == GgufType::uint32 || t == GgufType::uint64;
}
bool is_signed(GgufType t) {
    return t == GgufType::int8 || t == GgufType::int16 || t == GgufType::int32 || t == GgufType::int64;
}

/// A name or key for a message: printable ASCII kept, other bytes as \xNN, long ones shortened.
std::string quote(std::string_view s) {
    static const char* hex = "0123456789abcdef";
    std::string out = "'";
    std::size_t n = 0;
    for (const char c : s) {
        if (++n > 80) {
            out += "...";
            break;
        }
        const auto b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7f && b != '\\' && b != '\'') {
            out += c;
        } else {
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 15];
        }
    }
    return out + "'";
}

std::string u64s(std::uint64_t v) { return std::to_string(v); }

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) { return (a != 0 && b > kU64Max / a) ? kU64Max : a * b; }
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return b > kU64Max - a ? kU64Max : a + b; }

std::string shape_string(const std::vector<std::uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + u64s(shape[i]);
    return s + "]";
}

}  // namespace

const char* gguf_type_name(GgufType t) {
    switch (t) {
        case GgufType::uint8: return "uint8";
        case GgufType::int8: return "int8";
        case GgufType::uint16: return "uint16";
        case GgufType::int16: return "int16";
        case GgufType::uint32: return "uint32";
        case GgufType::int32: return "int32";
        case GgufType::float32: return "float32";
        case GgufType::boolean: return "bool";
        case GgufType::string: return "string";
        case GgufType::array: return "array";
        case GgufType::uint64: return "uint64";
        case GgufType::int64: return "int64";
        case GgufType::float64: return "float64";
    }
    return "unknown";
}

// ---- GgufValue ----------------------------------------------------------------------------------------

bool GgufValue::is_integer() const { return is_unsigned(type_) || is_signed(type_); }

void GgufValue::wrong_type(const char* wanted) const {
    throw InvalidArgument("GGUF metadata " + quote(key_) + " is " + describe() + ", not " + wanted);
}

std::int64_t GgufValue::as_int() const {
    if (is_signed(type_)) return i_;
    if (!is_unsigned(type_)) wrong_type("an integer");
    if (u_ > kI64Max) throw InvalidArgument("GGUF metadata " + quote(key_) + " is " + describe() + ", too large for a signed 64-bit integer");
    return static_cast<std::int64_t>(u_);
}

std::uint64_t GgufValue::as_uint() const {
    if (is_unsigned(type_)) return u_;
    if (!is_signed(type_)) wrong_type("an integer");
    if (i_ < 0) throw InvalidArgument("GGUF metadata " + quote(key_) + " is " + describe() + ", not a non-negative integer");
    return static_cast<std::uint64_t>(i_);
}

double GgufValue::as_double() const {
    if (is_float()) return f_;
    if (is_unsigned(type_)) return static_cast<double>(u_);
    if (is_signed(type_)) return static_cast<double>(i_);
    wrong_type("a number");
}

bool GgufValue::as_bool() const {
    if (type_ != GgufType::boolean) wrong_type("a bool");
    return u_ != 0;
}

const std::string& GgufValue::as_string() const {
    if (type_ != GgufType::string) wrong_type("a string");
    return s_;
}

GgufType GgufValue::element_type() const {
    if (!is_array()) wrong_type("an array");
    return elem_;
}

std::uint64_t GgufValue::array_count() const {
    if (!is_array()) wrong_type("an array");
    return count_;
}

bool GgufValue::has_values() const { return is_array() && stored_; }

void GgufValue::require_values(const char* wanted) const {
    if (!is_array()) wrong_type(wanted);
    if (!stored_)
        throw InvalidArgument("GGUF metadata " + quote(key_) + " is " + describe() +
                              " whose values were skipped, not kept (arrays of arrays never are; larger arrays than "
                              "GgufLimits::max_stored_array / max_stored_strings are not)");
}

GgufValue GgufValue::at(std::size_t i) const {
    require_values("an array");
    if (i >= count_)
        throw InvalidArgument("GGUF metadata " + quote(key_) + " has " + u64s(count_) + " elements; index " +
                              std::to_string(i) + " is out of range");
    GgufValue v;
    v.key_ = key_ + "[" + std::to_string(i) + "]";
    v.type_ = elem_;
    if (is_unsigned(elem_) || elem_ == GgufType::boolean) v.u_ = us_[i];
    else if (is_signed(elem_)) v.i_ = is_[i];
    else if (elem_ == GgufType::string) v.s_ = ss_[i];
    else v.f_ = fs_[i];
    return v;
}

std::vector<std::int64_t> GgufValue::as_int_array() const {
    require_values("an integer array");
    if (is_signed(elem_)) return is_;
    if (!is_unsigned(elem_) && elem_ != GgufType::boolean) wrong_type("an integer array");
    std::vector<std::int64_t> out;
    out.reserve(us_.size());
    for (std::size_t i = 0; i < us_.size(); ++i) {
        if (us_[i] > kI64Max)
            throw InvalidArgument("GGUF metadata " + quote(key_) + "[" + std::to_string(i) + "] is " + u64s(us_[i]) +
                                  ", too large for a signed 64-bit integer");
        out.push_back(static_cast<std::int64_t>(us_[i]));
    }
    return out;
}

std::vector<double> GgufValue::as_double_array() const {
    require_values("a numeric array");
    if (elem_ == GgufType::float32 || elem_ == GgufType::float64) return fs_;
    std::vector<double> out;
    if (is_signed(elem_)) {
        for (const auto x : is_) out.push_back(static_cast<double>(x));
    } else if (is_unsigned(elem_)) {
        for (const auto x : us_) out.push_back(static_cast<double>(x));
    } else {
        wrong_type("a numeric array");
    }
    return out;
}

const std::vector<std::string>& GgufValue::as_string_array() const {
    require_values("a string array");
    if (elem_ != GgufType::string) wrong_type("a string array");
    return ss_;
}

std::string GgufValue::describe() const {
    const std::string t = gguf_type_name(type_);
    if (is_array()) return "an array of " + u64s(count_) + " " + gguf_type_name(elem_);
    if (is_string()) {
        std::string s = quote(s_);
        return "a string " + s;
    }
    if (is_bool()) return std::string("a bool ") + (u_ ? "true" : "false");
    if (is_unsigned(type_)) return "a " + t + " " + u64s(u_);
    if (is_signed(type_)) return "an " + t + " " + std::to_string(i_);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", f_);
    return "a " + t + " " + buf;
}

// ---- GgufTensor / GgufFile ----------------------------------------------------------------------------

const char* GgufTensor::type_name() const {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info ? info->name : "unknown";
}

const GgufValue* GgufFile::find(std::string_view key) const {
    for (const auto& kv : metadata)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

const GgufValue& GgufFile::get(std::string_view key) const {
    if (const GgufValue* v = find(key)) return *v;
    throw InvalidArgument(origin + ": GGUF metadata key " + quote(key) + " is missing");
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

std::string GgufFile::architecture() const {
    const GgufValue* v = find("general.architecture");
    if (!v) throw InvalidArgument(origin + ": GGUF metadata key 'general.architecture' is missing");
    if (!v->is_string())
        throw InvalidArgument(origin + ": GGUF metadata 'general.architecture' is " + v->describe() + ", not a string");
    return v->as_string();
}

double GgufFile::total_tensor_bytes() const {
    double sum = 0;
    for (const auto& t : tensors) sum += t.bytes;
    return sum;
}

// ---- the parser ---------------------------------------------------------------------------------------

namespace detail {

/// A borrowed description of what is being read ("tensor 7's name"), built only when a message needs it.
/// Binds to a lambda that outlives the call it is passed to.
class Describe {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Describe>>>
    Describe(const F& f)  // NOLINT: implicit on purpose
        : obj_(&f), call_([](const void* o) { return std::string((*static_cast<const F*>(o))()); }) {}
    std::string operator()() const { return call_(obj_); }

private:
    const void* obj_;
    std::string (*call_)(const void*);
};

/// Reads from memory (`mem`) or from a stream (`in`); `size` is the whole file's size either way.
class GgufParser {
public:
    GgufParser(const std::uint8_t* mem, std::istream* in, std::uint64_t size, std::string origin, const GgufLimits& limits)
        : mem_(mem), in_(in), size_(size), origin_(std::move(origin)), lim_(limits) {}

    GgufFile parse();

private:
    [[noreturn]] void fail_at(std::uint64_t at, const std::string& what) const {
        throw InvalidArgument(origin_ + ": at byte " + u64s(at) + ", " + what);
    }

    void need(std::uint64_t n, const Describe& what) const {
        const std::uint64_t left = size_ - pos_;
        if (n > left)
            throw InvalidArgument(origin_ + ": truncated at byte " + u64s(pos_) + " while reading " + what() + " (" +
                                  u64s(n) + " bytes needed, " + u64s(left) + " left)");
        if (n > lim_.max_header_bytes || pos_ > lim_.max_header_bytes - n)
            fail_at(pos_, "the header is larger than the limit of " + u64s(lim_.max_header_bytes) +
                              " bytes (GgufLimits::max_header_bytes) while reading " + what());
    }

    void read_raw(void* dst, std::uint64_t n, const Describe& what) {
        need(n, what);
        if (n == 0) return;
        if (mem_) {
            std::memcpy(dst, mem_ + pos_, static_cast<std::size_t>(n));
        } else {
            in_->read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
            if (!*in_ || static_cast<std::uint64_t>(in_->gcount()) != n)
                throw InvalidArgument(origin_ + ": truncated at byte " + u64s(pos_) + " while reading " + what() +
                                      " (the file ended early or could not be read)");
        }
        pos_ += n;
    }

    void skip(std::uint64_t n, const Describe& what) {
        need(n, what);
        if (n == 0) return;
        if (!mem_) {
            // Short skips (a vocabulary's strings, one by one) go through the stream's buffer; a seek would
            // drop the buffer and cost a system call each time.
            if (n <= (std::uint64_t(1) << 20)) {
                in_->ignore(static_cast<std::streamsize>(n));
                if (static_cast<std::uint64_t>(in_->gcount()) != n) in_->setstate(std::ios::failbit);
            } else {
                in_->seekg(static_cast<std::streamoff>(n), std::ios::cur);
            }
            if (!*in_)
                throw InvalidArgument(origin_ + ": truncated at byte " + u64s(pos_) + " while skipping " + what() +
                                      " (the file could not be read)");
        }
        pos_ += n;
    }

    /// A little-endian unsigned integer of `n` (1, 2, 4 or 8) bytes.
    std::uint64_t uint(std::size_t n, const Describe& what) {
        std::uint8_t b[8] = {};
        read_raw(b, n, what);
        std::uint64_t v = 0;
        for (std::size_t i = n; i-- > 0;) v = (v << 8) | b[i];
        return v;
    }
    std::uint32_t u32(const Describe& what) {
        return static_cast<std::uint32_t>(uint(4, what));
    }
    std::uint64_t u64(const Describe& what) {
        return uint(8, what);
    }

    /// A GGUF string (u64 length + bytes) of at most `max_len` bytes.
    std::string string(const Describe& what, std::uint64_t max_len) {
        const std::uint64_t at = pos_;
        const std::uint64_t len = u64([&] { return what() + "'s length"; });
        check_string_length(at, len, max_len, what);
        std::string s(static_cast<std::size_t>(len), '\0');
        read_raw(s.data(), len, what);
        return s;
    }
    void skip_string(const Describe& what) {
        const std::uint64_t at = pos_;
        const std::uint64_t len = u64([&] { return what() + "'s length"; });
        check_string_length(at, len, lim_.max_string, what);
        skip(len, what);
    }
    void check_string_length(std::uint64_t at, std::uint64_t len, std::uint64_t max_len, const Describe& what) const {
        if (len > max_len)
            fail_at(at, what() + " is " + u64s(len) + " bytes long; at most " + u64s(max_len) + " are allowed");
        need(len, what);  // before allocating: the bytes must be there
    }

    GgufType value_type(const Describe& what) {
        const std::uint64_t at = pos_;
        const std::uint32_t t = u32(what);
        if (t >= kNumTypes) fail_at(at, what() + " is " + std::to_string(t) + ", not a GGUF value type (0 to 12)");
        return static_cast<GgufType>(t);
    }

    /// A scalar of type `t` into `v` (v.type_ is set by the caller).
    void scalar(GgufType t, GgufValue& v, const Describe& what) {
        const std::uint64_t at = pos_;
        switch (t) {
            case GgufType::uint8: case GgufType::uint16: case GgufType::uint32: case GgufType::uint64:
                v.u_ = uint(fixed_size(t), what);
                break;
            case GgufType::int8: v.i_ = signed_of<std::int8_t, std::uint8_t>(uint(1, what)); break;
            case GgufType::int16: v.i_ = signed_of<std::int16_t, std::uint16_t>(uint(2, what)); break;
            case GgufType::int32: v.i_ = signed_of<std::int32_t, std::uint32_t>(uint(4, what)); break;
            case GgufType::int64: v.i_ = signed_of<std::int64_t, std::uint64_t>(uint(8, what)); break;
            case GgufType::float32: {
                const auto bits = static_cast<std::uint32_t>(uint(4, what));
                float x = 0;
                std::memcpy(&x, &bits, sizeof x);
                v.f_ = static_cast<double>(x);
                break;
            }
            case GgufType::float64: {
                const std::uint64_t bits = uint(8, what);
                double x = 0;
                std::memcpy(&x, &bits, sizeof x);
                v.f_ = x;
                break;
            }
            case GgufType::boolean:
                v.u_ = uint(1, what);
                if (v.u_ > 1) fail_at(at, what() + " is a bool stored as " + u64s(v.u_) + "; only 0 and 1 are allowed");
                break;
            case GgufType::string: v.s_ = string(what, lim_.max_string); break;
            case GgufType::array: break;  // handled by array()
        }
    }
    template <class S, class U>
    static std::int64_t signed_of(std::uint64_t raw) {
        const auto u = static_cast<U>(raw);
        S s = 0;
        std::memcpy(&s, &u, sizeof s);
        return s;
    }

    /// An array's element type, count and elements (after its value type).
    void array(GgufValue& v, std::uint32_t depth, const Describe& what) {
        const std::uint32_t max_depth = std::min(lim_.max_array_depth, kMaxArrayDepth);
        if (depth > max_depth)
            fail_at(pos_, what() + " nests arrays " + std::to_string(depth) + " deep; at most " +
                              std::to_string(max_depth) + " levels are allowed");
        v.elem_ = value_type([&] { return "the element type of " + what(); });
        const std::uint64_t count_at = pos_;
        v.count_ = u64([&] { return "the element count of " + what(); });
        const GgufType e = v.elem_;
        const char* ename = gguf_type_name(e);
        if (v.count_ > lim_.max_array)
            fail_at(count_at, what() + " has " + u64s(v.count_) + " " + ename + " elements; at most " +
                                  u64s(lim_.max_array) + " are allowed (GgufLimits::max_array)");
        const std::uint64_t min = min_element_size(e);
        const std::uint64_t left = size_ - pos_;
        if (v.count_ > left / min)
            fail_at(count_at, what() + " claims " + u64s(v.count_) + " " + ename + " elements, at least " +
                                  u64s(sat_mul(v.count_, min)) + " bytes, but only " + u64s(left) +
                                  " bytes are left (truncated or corrupt)");
        const std::uint64_t cap = e == GgufType::string ? lim_.max_stored_strings : lim_.max_stored_array;
        v.stored_ = e != GgufType::array && v.count_ <= cap;
        const auto n = static_cast<std::size_t>(v.count_);  // <= bytes left, which fit in memory or a file

        auto element = [&](std::uint64_t i) {
            return [&what, i] { return "element " + u64s(i) + " of " + what(); };
        };
        if (e == GgufType::array) {
            for (std::uint64_t i = 0; i < v.count_; ++i) {
                GgufValue inner;
                inner.type_ = GgufType::array;
                array(inner, depth + 1, element(i));
            }
        } else if (!v.stored_) {
            if (e == GgufType::string)
                for (std::uint64_t i = 0; i < v.count_; ++i) skip_string(element(i));
            else
                skip(v.count_ * min, [&] { return what(); });  // no overflow: count <= left / min
        } else {
            if (e == GgufType::string) v.ss_.reserve(n);
            else if (is_signed(e)) v.is_.reserve(n);
            else if (e == GgufType::float32 || e == GgufType::float64) v.fs_.reserve(n);
            else v.us_.reserve(n);
            GgufValue x;
            for (std::uint64_t i = 0; i < v.count_; ++i) {
                scalar(e, x, element(i));
                if (e == GgufType::string) v.ss_.push_back(std::move(x.s_));
                else if (is_signed(e)) v.is_.push_back(x.i_);
                else if (e == GgufType::float32 || e == GgufType::float64) v.fs_.push_back(x.f_);
                else v.us_.push_back(x.u_);
            }
        }
    }

    std::uint64_t alignment(const GgufFile& f, std::uint64_t value_at) const;

    const std::uint8_t* mem_;
    std::istream* in_;
    std::uint64_t size_;
    std::uint64_t pos_ = 0;
    std::string origin_;
    GgufLimits lim_;
};

std::uint64_t GgufParser::alignment(const GgufFile& f, std::uint64_t value_at) const {
    const GgufValue* a = f.find("general.alignment");
    if (!a) return 32;
    const std::string bad = "general.alignment is " + a->describe();
    if (!a->is_integer()) fail_at(value_at, bad + "; it must be an integer (a uint32)");
    if (is_signed(a->type()) && a->as_int() <= 0) fail_at(value_at, bad + "; it must be a power of two");
    const std::uint64_t v = is_signed(a->type()) ? static_cast<std::uint64_t>(a->as_int()) : a->as_uint();
    if (v == 0 || (v & (v - 1)) != 0) fail_at(value_at, bad + "; it must be a power of two");
    if (v > kMaxAlignment) fail_at(value_at, bad + "; at most " + u64s(kMaxAlignment) + " is allowed");
    return v;
}

GgufFile GgufParser::parse() {
    GgufFile f;
    f.origin = origin_;
    f.file_size = size_;

    // ---- header
    std::uint8_t magic[4] = {};
    read_raw(magic, 4, [] { return std::string("the magic bytes 'GGUF'"); });
    if (std::memcmp(magic, "GGUF", 4) != 0)
        fail_at(0, "not a GGUF file: it starts with " +
                       quote(std::string_view(reinterpret_cast<const char*>(magic), 4)) + ", not 'GGUF'");
    const std::uint32_t version = u32([] { return std::string("the version"); });
    const std::uint32_t swapped = ((version & 0xffu) << 24) | ((version & 0xff00u) << 8) | ((version >> 8) & 0xff00u) |
                                  (version >> 24);
    if (version == 1)
        fail_at(4, "GGUF version 1 is not supported (it stored counts and lengths in 32 bits); versions 2 and 3 are; "
                   "convert the model again with a current llama.cpp");
    if ((version & 0xffffu) == 0 && (swapped == 2 || swapped == 3))
        fail_at(4, "this is a big-endian GGUF file (version " + std::to_string(swapped) +
                       " stored big-endian); only little-endian files are supported");
    if (version != 2 && version != 3)
        fail_at(4, "GGUF version " + std::to_string(version) + " is not supported; versions 2 and 3 are");
    f.version = version;

    const std::uint64_t n_tensors = u64([] { return std::string("the tensor count"); });
    const std::uint64_t n_kv = u64([] { return std::string("the metadata count"); });
    if (n_tensors > lim_.max_tensors)
        fail_at(8, "the tensor count " + u64s(n_tensors) + " exceeds the limit of " + u64s(lim_.max_tensors) +
                       " (GgufLimits::max_tensors)");
    if (n_kv > lim_.max_kv)
        fail_at(16, "the metadata count " + u64s(n_kv) + " exceeds the limit of " + u64s(lim_.max_kv) +
                        " (GgufLimits::max_kv)");
    {
        const std::uint64_t left = size_ - pos_;
        const std::uint64_t least = sat_add(sat_mul(n_kv, kMinKvBytes), sat_mul(n_tensors, kMinTensorBytes));
        if (least > left)
            fail_at(8, "the header claims " + u64s(n_tensors) + " tensors and " + u64s(n_kv) +
                           " metadata pairs, at least " + u64s(least) + " bytes, but only " + u64s(left) +
                           " bytes are left (truncated or corrupt)");
    }

    // ---- metadata
    std::unordered_set<std::string> keys;
    std::uint64_t alignment_at = 0;
    // Reserve a little only: entries grow with what the file really holds, not with what its header claims.
    f.metadata.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n_kv, 4096)));
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        const std::uint64_t key_at = pos_;
        std::string key = string([i] { return "metadata pair " + u64s(i) + "'s key"; }, std::min(kMaxKeyLength, lim_.max_string));
        if (key.empty()) fail_at(key_at, "metadata pair " + u64s(i) + " has an empty key");
        if (!keys.insert(key).second) fail_at(key_at, "metadata key " + quote(key) + " appears twice");
        const auto what = [&key] { return "metadata " + quote(key); };
        GgufValue v;
        v.key_ = key;
        v.type_ = value_type([&] { return "the value type of " + what(); });
        if (key == "general.alignment") alignment_at = pos_;
        if (v.type_ == GgufType::array) array(v, 1, what);
        else scalar(v.type_, v, what);
        f.metadata.emplace_back(std::move(key), std::move(v));
    }
    f.alignment = alignment(f, alignment_at);

    // ---- tensor infos
    std::unordered_map<std::string, std::uint64_t> names;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> extents;  // (offset field position, exact bytes)
    f.tensors.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n_tensors, 4096)));
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t;
        const std::uint64_t name_at = pos_;
        t.name = string([i] { return "tensor " + u64s(i) + "'s name"; }, lim_.max_string);
        const auto it = names.emplace(t.name, i);
        if (!it.second)
            fail_at(name_at, "tensor " + u64s(i) + " is named " + quote(t.name) + " like tensor " +
                                 u64s(it.first->second) + "; tensor names must be unique");
        const std::string label = "tensor " + u64s(i) + " (" + quote(t.name) + ")";

        const std::uint64_t dims_at = pos_;
        const std::uint32_t n_dims = u32([&] { return label + "'s dimension count"; });
        if (n_dims > lim_.max_dims)
            fail_at(dims_at, label + " has " + std::to_string(n_dims) + " dimensions; at most " +
                                 std::to_string(lim_.max_dims) + " are allowed");
        bool zero = false;
        for (std::uint32_t j = 0; j < n_dims; ++j) {
            const std::uint64_t at = pos_;
            const std::uint64_t ne = u64([&] { return label + "'s dimension " + std::to_string(j); });
            if (ne > kI64Max)
                fail_at(at, label + "'s dimension " + std::to_string(j) + " is " + u64s(ne) + "; at most 2^63-1 is allowed");
            zero = zero || ne == 0;
            t.shape.push_back(ne);
        }
        std::uint64_t elements = zero ? 0 : 1;
        for (const std::uint64_t ne : t.shape) {
            if (zero) break;
            if (elements > kI64Max / ne)
                fail_at(dims_at, label + " has shape " + shape_string(t.shape) + ", more than 2^63-1 elements");
            elements *= ne;
        }

        const std::uint64_t type_at = pos_;
        const std::uint32_t type_id = u32([&] { return label + "'s ggml type"; });
        const GgmlTypeInfo* info = type_id <= static_cast<std::uint32_t>(INT_MAX) ? ggml_type_info(static_cast<int>(type_id)) : nullptr;
        if (!info)
            fail_at(type_at, label + " has unknown ggml type id " + std::to_string(type_id) + "; known: " +
                                 join(ggml_type_names()));
        t.type = info->id;
        const auto block = static_cast<std::uint64_t>(info->block_size);
        const auto type_size = static_cast<std::uint64_t>(info->type_size);
        const std::uint64_t ne0 = n_dims > 0 ? t.shape[0] : 1;
        if (ne0 % block != 0)
            fail_at(type_at, label + " has rows of " + u64s(ne0) + " elements (ne0), not a multiple of " + info->name +
                                 "'s block of " + u64s(block));
        const std::uint64_t blocks = elements / block;  // exact: ne0 is a multiple of the block
        if (blocks > kU64Max / type_size)
            fail_at(type_at, label + " of shape " + shape_string(t.shape) + " and type " + info->name +
                                 " would take more than 2^64 bytes");
        const std::uint64_t bytes = blocks * type_size;

        const std::uint64_t offset_at = pos_;
        t.offset = u64([&] { return label + "'s data offset"; });
        if (t.offset % f.alignment != 0)
            fail_at(offset_at, label + " has data offset " + u64s(t.offset) + ", not a multiple of the alignment " +
                                   u64s(f.alignment));
        t.n_elements = static_cast<double>(elements);
        t.bytes = static_cast<double>(bytes);
        f.tensors.push_back(std::move(t));
        extents.emplace_back(offset_at, bytes);
    }

    // ---- data section: aligned after the tensor infos; every tensor's bytes must lie inside the file
    const std::uint64_t pad = (f.alignment - pos_ % f.alignment) % f.alignment;
    if (pad > kU64Max - pos_) fail_at(pos_, "the data section's offset overflows");
    f.data_offset = pos_ + pad;
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
        const GgufTensor& t = f.tensors[i];
        const std::uint64_t at = extents[i].first, bytes = extents[i].second;
        const std::string label = "tensor " + std::to_string(i) + " (" + quote(t.name) + ")";
        if (t.offset > kU64Max - f.data_offset || bytes > kU64Max - f.data_offset - t.offset)
            fail_at(at, label + "'s data offset " + u64s(t.offset) + " overflows");
        const std::uint64_t begin = f.data_offset + t.offset, end = begin + bytes;
        if (end > size_)
            fail_at(at, label + "'s data, bytes " + u64s(begin) + " to " + u64s(end) + ", runs past the end of the file (" +
                            u64s(size_) + " bytes; truncated?)");
    }
    return f;
}

}  // namespace detail

GgufFile parse_gguf(const std::uint8_t* data, std::size_t size, std::string_view origin, const GgufLimits& limits) {
    static const std::uint8_t empty = 0;
    detail::GgufParser p(data ? data : &empty, nullptr, data ? size : 0, std::string(origin), limits);
    return p.parse();
}

GgufFile read_gguf(const std::string& path, const GgufLimits& limits) {
    check_path(path);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw FileError("cannot open '" + path + "': it is a directory");
    std::vector<char> buffer(std::size_t(1) << 16);
    std::ifstream in;
    in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    in.open(path, std::ios::binary);
    if (!in) throw FileError("cannot open '" + path + "': no such file or not readable");
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(in.tellg());
    if (size < 0) throw FileError("cannot read '" + path + "': its size is unknown");
    in.seekg(0);
    detail::GgufParser p(nullptr, &in, static_cast<std::uint64_t>(size), path, limits);
    return p.parse();
}

}  // namespace roofline
