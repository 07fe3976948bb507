#include "roofline/errors.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace roofline {

void check_path(const std::string& path) {
    const auto nul = path.find('\0');
    if (nul != std::string::npos)
        throw InvalidArgument("the path '" + path.substr(0, nul) + "\\0" + path.substr(nul + 1) +
                              "' contains a NUL character (at byte " + std::to_string(nul) +
                              "); a file name cannot hold one");
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

std::string to_lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}
}  // namespace

std::string closest_match(std::string_view bad, const std::vector<std::string>& candidates) {
    const std::string b = to_lower(bad);
    std::string best;
    std::size_t best_d = static_cast<std::size_t>(-1);
    for (const auto& c : candidates) {
        const std::string lc = to_lower(c);
        std::size_t d = edit_distance(b, lc);
        // A candidate that starts with what was typed ("h100" -> "h100-sxm") is a strong hint.
        if (!b.empty() && lc.rfind(b, 0) == 0) d = std::min<std::size_t>(d, 1);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    const std::size_t limit = std::max<std::size_t>(2, b.size() / 3);
    return best_d <= limit ? best : std::string{};
}

std::string unknown_name_message(std::string_view what, std::string_view bad,
                                 const std::vector<std::string>& candidates) {
    std::ostringstream os;
    os << "unknown " << what << " '" << bad << "'";
    const std::string hint = closest_match(bad, candidates);
    if (!hint.empty()) os << "; did you mean '" << hint << "'?";
    constexpr std::size_t kShown = 40;
    std::vector<std::string> shown(candidates.begin(),
                                   candidates.begin() + static_cast<std::ptrdiff_t>(std::min(kShown, candidates.size())));
    os << " valid: " << join(shown);
    if (candidates.size() > kShown) os << ", ... (" << candidates.size() << " in all)";
    return os.str();
}

namespace detail {
void throw_size_error(std::string_view name, double value, bool strictly_positive) {
    std::ostringstream os;
    os << name << " must be a finite number " << (strictly_positive ? "> 0" : ">= 0") << ", got " << value;
    throw InvalidArgument(os.str());
}

void throw_range_error(std::string_view name, double value, double lo, double hi) {
    std::ostringstream os;
    os << name << " must be within [" << lo << ", " << hi << "], got " << value;
    throw InvalidArgument(os.str());
}

void throw_count_error(std::string_view name, double value) {
    std::ostringstream os;
    if (!std::isfinite(value) || value < 0 || std::floor(value) != value) {
        os << name << " must be a whole number >= 0, got " << value;
    } else {
        os.precision(17);
        os << name << " must be a whole number >= 0 and at most 2^53 = " << kMaxCount
           << " (the largest count a double holds exactly), got " << value;
    }
    throw InvalidArgument(os.str());
}
}  // namespace detail


}  // namespace roofline
