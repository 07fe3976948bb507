#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/format.hpp"

using namespace roofline;

TEST_CASE("number formats have their storage sizes") {
    CHECK(dtype_bytes(DType::fp64) == 8);
    CHECK(dtype_bytes(DType::fp32) == 4);
    CHECK(dtype_bytes(DType::tf32) == 4);
    CHECK(dtype_bytes(DType::fp16) == 2);
    CHECK(dtype_bytes(DType::bf16) == 2);
    CHECK(dtype_bytes(DType::fp8_e4m3) == 1);
    CHECK(dtype_bytes(DType::fp8_e5m2) == 1);
    CHECK(dtype_bytes(DType::int8) == 1);
    CHECK(dtype_bytes(DType::int4) == 0.5);
    CHECK(dtype_bytes(DType::fp4) == 0.5);
}

TEST_CASE("names parse case-insensitively, with common spellings") {
    CHECK(parse_dtype("FP16") == DType::fp16);
    CHECK(parse_dtype("bfloat16") == DType::bf16);
    CHECK(parse_dtype("Half") == DType::fp16);
    CHECK(parse_dtype("fp8") == DType::fp8_e4m3);
    CHECK(parse_dtype("E5M2") == DType::fp8_e5m2);
    for (auto d : all_dtypes()) CHECK(parse_dtype(dtype_name(d)) == d);
}

TEST_CASE("an unknown name lists the valid ones and suggests the closest") {
    try {
        parse_dtype("fp17");
        FAIL("expected NotFound");
    } catch (const NotFound& e) {
        const std::string msg = e.what();
        CHECK(msg.find("'fp17'") != std::string::npos);
        CHECK(msg.find("did you mean 'fp16'") != std::string::npos);
        CHECK(msg.find("bf16") != std::string::npos);
    }
}

TEST_CASE("format_of a number format stores it plainly") {
    const Format f = format_of(DType::bf16);
    CHECK(f.name == "bf16");
    CHECK(f.bytes_per_element() == 2);
    CHECK(f.compute == DType::bf16);
    CHECK(f.dequant_flops_per_element == 0);
}
