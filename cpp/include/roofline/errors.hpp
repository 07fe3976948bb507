// Exceptions of the core. Every message names the input, the field, the bad value and what is allowed.
// The Python bindings map InvalidArgument -> ValueError, NotFound -> KeyError, FileError -> FileNotFoundError.
#pragma once

#include <stdexcept>
#include <limits>
#include <string>
#include <cmath>
#include <string_view>
#include <vector>

namespace roofline {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// A value outside what is allowed (negative size, malformed JSON field, ...).
struct InvalidArgument : Error {
    using Error::Error;
};
/// A name that is not in a catalogue (device, format, level, ...).
struct NotFound : Error {
    using Error::Error;
};
/// A file that cannot be opened or read.
struct FileError : Error {
    using Error::Error;
};

/// Throws InvalidArgument when `path` holds a NUL character (the OS would open the file named before it): every
/// file the core opens is checked with this first.
void check_path(const std::string& path);

/// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
/// Lower-case ASCII copy.
std::string to_lower(std::string_view s);
/// The candidate closest to `bad` by edit distance (case-insensitive), or "" when none is close.
std::string closest_match(std::string_view bad, const std::vector<std::string>& candidates);
/// "unknown <what> 'bad'; did you mean 'x'? valid: a, b, c" (the list is shortened for long catalogues).
std::string unknown_name_message(std::string_view what, std::string_view bad,
                                 const std::vector<std::string>& candidates);

namespace detail {
[[noreturn]] void throw_size_error(std::string_view name, double value, bool strictly_positive);
[[noreturn]] void throw_range_error(std::string_view name, double value, double lo, double hi);
[[noreturn]] void throw_count_error(std::string_view name, double value);
}  // namespace detail

/// Throws InvalidArgument unless `value` is finite and >= 0 (or > 0 when `strictly_positive`). Inline: the checks
/// sit on the estimator's hot paths, and a valid value costs two comparisons (NaN fails both).
inline double check_size(std::string_view name, double value, bool strictly_positive = false) {
    if (value >= 0 && value <= std::numeric_limits<double>::max() && !(strictly_positive && value == 0)) return value;
    detail::throw_size_error(name, value, strictly_positive);
}
/// The largest count (size, token count) the core accepts: 2^53, the largest whole number a double holds exactly.
inline constexpr double kMaxCount = 9007199254740992.0;
/// The most FLOPs, or bytes at one memory level, one operator may count: far beyond any machine (a whole-model
/// prefill is ~1e17 FLOPs), low enough that sums over ops and steps, and times on any valid device, stay finite.
inline constexpr double kMaxOpCount = 1e30;

/// Whether check_count accepts `value` (for a caller that builds the name only when it must report).
inline bool is_count(double value) { return value >= 0 && value <= kMaxCount && std::floor(value) == value; }
/// A count of things (a size, a token count): finite, >= 0, a whole number and at most kMaxCount. Returns it.
inline double check_count(std::string_view name, double value) {
    if (!is_count(value)) detail::throw_count_error(name, value);  // the hot path is one test, the message out of line
    return value;
}
/// Throws InvalidArgument unless `value` is finite and within [lo, hi].
inline double check_range(std::string_view name, double value, double lo, double hi) {
    if (value >= lo && value <= hi && value >= -std::numeric_limits<double>::max() &&
        value <= std::numeric_limits<double>::max())
        return value;
    detail::throw_range_error(name, value, lo, hi);
}

}  // namespace roofline
