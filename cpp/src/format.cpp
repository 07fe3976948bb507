#include "roofline/format.hpp"

#include "roofline/errors.hpp"

#include <utility>

namespace roofline {

namespace {
struct DTypeInfo {
    DType dtype;
    const char* name;
    double bits;
};
// Storage size of one element.
constexpr std::array<DTypeInfo, kNumDTypes> kDTypes{{
    {DType::fp64, "fp64", 64},
    {DType::fp32, "fp32", 32},
    {DType::tf32, "tf32", 32},  // 19 significant bits, stored in a 32-bit word
    {DType::fp16, "fp16", 16},
    {DType::bf16, "bf16", 16},
    {DType::fp8_e4m3, "fp8_e4m3", 8},
    {DType::fp8_e5m2, "fp8_e5m2", 8},
    {DType::int8, "int8", 8},
    {DType::int4, "int4", 4},
    {DType::fp4, "fp4", 4},  // e2m1 element alone; block scales belong to quantization formats
    {DType::int32, "int32", 32},
    {DType::fp16_acc16, "fp16_acc16", 16},  // fp16 elements; only the sums differ from fp16
}};

// Other spellings people type for the same number format.
const std::pair<const char*, DType> kAliases[] = {
    {"float64", DType::fp64}, {"double", DType::fp64},  {"f64", DType::fp64},
    {"float32", DType::fp32}, {"float", DType::fp32},   {"f32", DType::fp32},
    {"float16", DType::fp16}, {"half", DType::fp16},    {"f16", DType::fp16},
    {"bfloat16", DType::bf16}, {"bf16", DType::bf16},
    {"fp8", DType::fp8_e4m3}, {"e4m3", DType::fp8_e4m3}, {"float8_e4m3fn", DType::fp8_e4m3},
    {"e5m2", DType::fp8_e5m2}, {"float8_e5m2", DType::fp8_e5m2},
    {"i32", DType::int32},    {"i8", DType::int8},      {"i4", DType::int4},      {"e2m1", DType::fp4}, {"fp4_e2m1", DType::fp4},
    {"fp16acc16", DType::fp16_acc16},
};
}  // namespace

const std::array<DType, kNumDTypes>& all_dtypes() {
    static const std::array<DType, kNumDTypes> all = [] {
        std::array<DType, kNumDTypes> a{};
        for (std::size_t i = 0; i < kNumDTypes; ++i) a[i] = kDTypes[i].dtype;
        return a;
    }();
    return all;
}

std::string_view dtype_name(DType d) { return kDTypes[static_cast<std::size_t>(d)].name; }

double dtype_bits(DType d) { return kDTypes[static_cast<std::size_t>(d)].bits; }

std::vector<std::string> dtype_names() {
    std::vector<std::string> names;
    for (const auto& info : kDTypes) names.emplace_back(info.name);
    return names;
}

DType parse_dtype(std::string_view name) {
    const std::string lower = to_lower(name);
    for (const auto& info : kDTypes)
        if (lower == info.name) return info.dtype;
    for (const auto& [alias, dtype] : kAliases)
        if (lower == alias) return dtype;
    throw NotFound(unknown_name_message("number format", name, dtype_names()));
}

Format format_of(DType d) {
    return Format{std::string(dtype_name(d)), dtype_bits(d), d, 0.0};
}



}  // namespace roofline
