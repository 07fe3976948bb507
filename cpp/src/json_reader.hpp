// Internal: a validating reader over nlohmann::json. Every error names the origin (file), the field path,
// the bad value and what is allowed; unknown fields are errors too (they are usually typos).
#pragma once

#include "roofline/errors.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace roofline::detail {

nlohmann::json parse_json_text(std::string_view text, std::string_view origin);
std::string read_text_file(const std::string& path, std::size_t max_bytes = std::size_t(64) << 20);
/// The database files of a folder: every *.json but schema.json, sorted by name. FileError naming `what` (e.g.
/// "hardware database") when the folder does not exist.
std::vector<std::string> database_files(const std::string& directory, const std::string& what);

class JsonObject {
public:
    JsonObject(const nlohmann::json& j, std::string path, std::string origin);

    bool has(const std::string& key) const;
    double number(const std::string& key, double lo, double hi, bool lo_exclusive = false);
    std::optional<double> opt_number(const std::string& key, double lo, double hi, bool lo_exclusive = false);
    long long integer(const std::string& key, long long lo, long long hi);
    std::optional<long long> opt_integer(const std::string& key, long long lo, long long hi);
    std::string string(const std::string& key);
    /// A string that must not be empty ("must not be empty" names the field otherwise).
    std::string nonempty_string(const std::string& key);
    std::string opt_string(const std::string& key, std::string fallback = "");
    bool opt_bool(const std::string& key, bool fallback);
    /// One of `allowed` (exact match).
    std::string choice(const std::string& key, const std::vector<std::string>& allowed);
    JsonObject object(const std::string& key);
    std::optional<JsonObject> opt_object(const std::string& key);
    /// An array (empty when absent and not required).
    const nlohmann::json& array(const std::string& key, bool required);
    /// The object's keys, sorted (as nlohmann::json keeps them): for an object whose keys are data, a table by name.
    std::vector<std::string> keys() const;
    /// Mark a key as read without reading it (kept for the caller to parse itself).
    const nlohmann::json& raw(const std::string& key);

    std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
    const std::string& origin() const { return origin_; }
    /// Throws on any key that was not read.
    void finish() const;
    [[noreturn]] void fail(const std::string& key, const std::string& what) const;

private:
    const nlohmann::json& get(const std::string& key, bool required);
    const nlohmann::json* j_;
    std::string path_, origin_;
    std::set<std::string> seen_;
};

}  // namespace roofline::detail
