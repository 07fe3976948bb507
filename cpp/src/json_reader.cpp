#include "json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace roofline::detail {

namespace {
std::string show(const nlohmann::json& v) {
    std::string s = v.dump();
    if (s.size() > 60) s.replace(57, std::string::npos, "...");
    return s;
}
}  // namespace

nlohmann::json parse_json_text(std::string_view text, std::string_view origin) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." without the library's tag
        std::string what = e.what();
        if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
        throw InvalidArgument(std::string(origin) + ": not valid JSON: " + what);
    }
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
    check_path(path);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw FileError("cannot open '" + path + "': it is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError("cannot open '" + path + "': no such file or not readable");
    in.seekg(0, std::ios::end);
    const auto size = in.tellg();
    if (size < 0) throw FileError("cannot read '" + path + "'");
    if (static_cast<std::size_t>(size) > max_bytes)
        throw InvalidArgument("'" + path + "' is " + std::to_string(size) + " bytes; at most " +
                              std::to_string(max_bytes) + " are read");
    in.seekg(0);
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), size);
    if (!in) throw FileError("cannot read '" + path + "'");
    return text;
}

std::vector<std::string> database_files(const std::string& directory, const std::string& what) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(directory, ec))
        throw FileError(what + " directory '" + directory + "' does not exist or is not a directory");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
        if (entry.path().filename() == "schema.json") continue;
        files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

JsonObject::JsonObject(const nlohmann::json& j, std::string path, std::string origin)
    : j_(&j), path_(std::move(path)), origin_(std::move(origin)) {
    if (!j.is_object())
        throw InvalidArgument(origin_ + ": " + (path_.empty() ? std::string("the document") : "field '" + path_ + "'") +
                              " must be a JSON object, got " + show(j));
}

void JsonObject::fail(const std::string& key, const std::string& what) const {
    throw InvalidArgument(origin_ + ": field '" + field(key) + "' " + what);
}

bool JsonObject::has(const std::string& key) const { return j_->contains(key) && !(*j_)[key].is_null(); }

const nlohmann::json& JsonObject::get(const std::string& key, bool required) {
    seen_.insert(key);
    static const nlohmann::json null_value;
    auto it = j_->find(key);
    if (it == j_->end() || it->is_null()) {
        if (required) fail(key, "is required but missing");
        return null_value;
    }
    return *it;
}

std::optional<double> JsonObject::opt_number(const std::string& key, double lo, double hi, bool lo_exclusive) {
    const auto& v = get(key, false);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) fail(key, "must be a number, got " + show(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_exclusive && x == lo)) {
        std::ostringstream os;
        os << "must be within " << (lo_exclusive ? "(" : "[") << lo << ", " << hi << "], got " << show(v);
        fail(key, os.str());
    }
    return x;
}

double JsonObject::number(const std::string& key, double lo, double hi, bool lo_exclusive) {
    get(key, true);
    return *opt_number(key, lo, hi, lo_exclusive);
}

std::optional<long long> JsonObject::opt_integer(const std::string& key, long long lo, long long hi) {
    const auto& v = get(key, false);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + show(v));
    long long x = 0;
    if (v.is_number_unsigned()) {
        const auto u = v.get<unsigned long long>();
        if (u > static_cast<unsigned long long>(hi)) fail(key, "must be at most " + std::to_string(hi) + ", got " + show(v));
        x = static_cast<long long>(u);
    } else {
        x = v.get<long long>();
    }
    if (x < lo || x > hi)
        fail(key, "must be within [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + show(v));
    return x;
}

long long JsonObject::integer(const std::string& key, long long lo, long long hi) {
    get(key, true);
    return *opt_integer(key, lo, hi);
}

std::string JsonObject::string(const std::string& key) {
    const auto& v = get(key, true);
    if (!v.is_string()) fail(key, "must be a string, got " + show(v));
    return v.get<std::string>();
}

std::string JsonObject::nonempty_string(const std::string& key) {
    std::string s = string(key);
    if (s.empty()) fail(key, "must not be empty");
    return s;
}

std::string JsonObject::opt_string(const std::string& key, std::string fallback) {
    const auto& v = get(key, false);
    if (v.is_null()) return fallback;
    if (!v.is_string()) fail(key, "must be a string, got " + show(v));
    return v.get<std::string>();
}

bool JsonObject::opt_bool(const std::string& key, bool fallback) {
    const auto& v = get(key, false);
    if (v.is_null()) return fallback;
    if (!v.is_boolean()) fail(key, "must be true or false, got " + show(v));
    return v.get<bool>();
}

std::string JsonObject::choice(const std::string& key, const std::vector<std::string>& allowed) {
    const std::string s = string(key);
    for (const auto& a : allowed)
        if (s == a) return s;
    fail(key, "must be one of " + join(allowed) + ", got '" + s + "'");
}

JsonObject JsonObject::object(const std::string& key) { return JsonObject(get(key, true), field(key), origin_); }

std::optional<JsonObject> JsonObject::opt_object(const std::string& key) {
    const auto& v = get(key, false);
    if (v.is_null()) return std::nullopt;
    return JsonObject(v, field(key), origin_);
}

const nlohmann::json& JsonObject::array(const std::string& key, bool required) {
    const auto& v = get(key, required);
    if (!v.is_null() && !v.is_array()) fail(key, "must be an array, got " + show(v));
    static const nlohmann::json empty = nlohmann::json::array();
    return v.is_null() ? empty : v;
}

const nlohmann::json& JsonObject::raw(const std::string& key) { return get(key, false); }

std::vector<std::string> JsonObject::keys() const {
    std::vector<std::string> out;
    for (auto it = j_->begin(); it != j_->end(); ++it) out.push_back(it.key());
    return out;
}

void JsonObject::finish() const {
    for (auto it = j_->begin(); it != j_->end(); ++it) {
        if (!seen_.count(it.key())) {
            std::vector<std::string> known(seen_.begin(), seen_.end());
            std::string msg = "is not a known field";
            const std::string hint = closest_match(it.key(), known);
            if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
            msg += " allowed here: " + join(known);
            fail(it.key(), msg);
        }
    }
}

}  // namespace roofline::detail
