#include <doctest/doctest.h>

#include "roofline/device.hpp"
#include "roofline/errors.hpp"

#include <string>

using namespace roofline;

namespace {
const char* kMinimal = R"({
  "schema_version": 1, "id": "toy", "name": "Toy GPU", "vendor": "nvidia", "family": "toy", "kind": "gpu",
  "aliases": ["toy-gpu"],
  "compute_units": {"count": 10, "name": "SM", "source": "made up for a test"},
  "clocks": {"boost_MHz": 1000, "source": "made up for a test"},
  "memory": {"dram": {"type": "HBM", "bandwidth_GBps": 1000, "capacity_GiB": 16, "source": "made up for a test"},
             "sram": {"type": "smem", "per_unit_KiB": 100, "bandwidth_GBps": 10000, "source": "made up for a test"}},
  "compute": [{"format": "fp16", "unit": "matrix", "peak_TFLOPS": 100, "source": "made up for a test"},
              {"format": "fp32", "unit": "vector", "peak_TFLOPS": 10, "source": "made up for a test"}],
  "efficiency": {"dram_bandwidth_fraction": 0.8, "compute_fraction": 0.5, "launch_overhead_us": 2, "source": "made up for a test"}
})";

std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
    return text;
}
}  // namespace

TEST_CASE("a device parses with units converted to SI") {
    const Device d = parse_device(kMinimal, "toy.json");
    CHECK(d.id == "toy");
    CHECK(d.bandwidth(Level::dram) == doctest::Approx(1e12));
    CHECK(d.capacity(Level::dram) == doctest::Approx(16.0 * (1ull << 30)));
    CHECK(d.peak_flops(DType::fp16) == doctest::Approx(1e14));
    CHECK(d.sram_per_unit_bytes() == doctest::Approx(102400));
    CHECK(d.capacity(Level::sram) == doctest::Approx(1024000));
    CHECK(d.ridge_point(DType::fp16) == doctest::Approx(100));
    CHECK(d.efficiency.launch_overhead_s == doctest::Approx(2e-6));
    CHECK_FALSE(d.has_bandwidth(Level::l2));
}

TEST_CASE("matrix peaks fall back to vector peaks of the same format") {
    const Device d = parse_device(kMinimal);
    CHECK(d.peak_flops(DType::fp32, Unit::matrix) == doctest::Approx(1e13));
    CHECK_THROWS_AS(d.peak_flops(DType::fp16, Unit::vector), NotFound);
    CHECK_THROWS_AS(d.peak_flops(DType::int4), NotFound);
    CHECK_THROWS_WITH_AS(d.bandwidth(Level::l2), doctest::Contains("no l2 bandwidth"), NotFound);
}

TEST_CASE("a device's family is read in lower case, as engine_db's kernel families and occupancies name it") {
    CHECK(parse_device(with(kMinimal, R"("family": "toy")", R"("family": "NVIDIA-GB10")"), "upper.json").family == "nvidia-gb10");
}

TEST_CASE("a device round-trips through to_json") {
    const Device d = parse_device(kMinimal);
    const Device e = parse_device(d.to_json(), "roundtrip");
    CHECK(e.to_json() == d.to_json());
}

TEST_CASE("loader errors name the origin, the field and the value") {
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, "\"bandwidth_GBps\": 1000", "\"bandwidth_GBps\": -5"), "bad.json"),
                         doctest::Contains("bad.json: field 'memory.dram.bandwidth_GBps' must be within"), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, "\"bandwidth_GBps\": 1000", "\"bandwidth_GBps\": \"fast\""), "bad.json"),
                         doctest::Contains("must be a number, got \"fast\""), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, "\"vendor\": \"nvidia\",", ""), "bad.json"),
                         doctest::Contains("field 'vendor' is required"), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, "\"kind\": \"gpu\",", "\"kind\": \"gpu\", \"bandwith\": 3,"), "bad.json"),
                         doctest::Contains("'bandwith' is not a known field"), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, "\"format\": \"fp16\"", "\"format\": \"fp17\""), "bad.json"),
                         doctest::Contains("compute[0].format' must be one of"), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device("{not json", "bad.json"), doctest::Contains("bad.json: not valid JSON"), InvalidArgument);
    CHECK_THROWS_WITH_AS(parse_device("[1, 2]", "bad.json"), doctest::Contains("must be a JSON object"), InvalidArgument);
    CHECK_THROWS_AS(load_device("/nonexistent/device.json"), FileError);
}

TEST_CASE("an L2's measured working set: what a working set counts on, at most its capacity") {
    const std::string sram = R"("sram": {"type": "smem")";
    const std::string l2 = R"("l2": {"type": "L2", "capacity_MiB": 40, "bandwidth_GBps": 5000, "working_set_MiB": 27.5, "source": "made up for a test"}, )";
    const Device d = parse_device(with(kMinimal, sram, l2 + sram), "l2.json");
    CHECK(d.l2_working_set() == doctest::Approx(27.5 * (1 << 20)));
    CHECK(d.capacity(Level::l2) == doctest::Approx(40.0 * (1 << 20)));
    CHECK(parse_device(d.to_json(), "roundtrip").l2_working_set() == d.l2_working_set());
    // not measured: the capacity; no L2 in the data: nothing
    const std::string no_ws = R"("l2": {"type": "L2", "capacity_MiB": 40, "source": "made up for a test"}, )";
    CHECK(parse_device(with(kMinimal, sram, no_ws + sram)).l2_working_set() == doctest::Approx(40.0 * (1 << 20)));
    CHECK(parse_device(kMinimal).l2_working_set() == 0);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, sram, with(l2, "27.5", "41") + sram), "bad.json"),
                         doctest::Contains("field 'memory.l2.working_set_MiB' must be within"), InvalidArgument);
}

TEST_CASE("the database finds devices by id or alias, case-insensitively, and suggests near misses") {
    DeviceDB db;
    db.add(parse_device(kMinimal));
    CHECK(db.get("TOY").id == "toy");
    CHECK(db.get("toy-gpu").id == "toy");
    CHECK_THROWS_WITH_AS(db.get("toi"), doctest::Contains("did you mean 'toy'"), NotFound);
    CHECK_THROWS_WITH_AS(db.add(parse_device(kMinimal, "again.json")), doctest::Contains("already used"), InvalidArgument);
}

TEST_CASE("every file of the shipped database loads") {
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    CHECK(db.size() >= 1);
    for (const auto& d : db.devices()) {
        CAPTURE(d.id);
        CHECK(d.bandwidth(Level::dram) > 0);
        CHECK(d.peak_flops(DType::fp32, Unit::vector) > 0);
        CHECK(parse_device(d.to_json()).to_json() == d.to_json());
    }
}

TEST_CASE("seed: A100 ridge point ~156 FLOP/byte (~312 FLOPs per fp16 element)") {
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    const Device& a100 = db.get("a100");
    CHECK(a100.id == "a100-sxm-80gb");
    const double ridge = a100.ridge_point(DType::bf16);
    CHECK(ridge == doctest::Approx(312e12 / 2039e9));
    CHECK(ridge == doctest::Approx(156).epsilon(0.02));  // the seed rounds the bandwidth to 2.0 TB/s
    CHECK(ridge * dtype_bytes(DType::fp16) == doctest::Approx(312).epsilon(0.02));
}

TEST_CASE("bf16, tf32 and int32 work without units of their own run in fp32; low-precision formats never widen") {
    const Device d = parse_device(kMinimal);
    CHECK(d.execution_peak(DType::fp16).flops_per_s == doctest::Approx(1e14));
    CHECK(d.execution_peak(DType::bf16).format == DType::fp32);
    CHECK(d.execution_peak(DType::tf32).format == DType::fp32);
    CHECK(d.execution_peak(DType::int32, Unit::vector).format == DType::fp32);
    // fp8 on a device without fp8 units (an A100, an M1) is not an fp16 kernel in disguise: an error naming what it has
    for (DType low : {DType::fp8_e4m3, DType::fp8_e5m2, DType::fp4, DType::int8, DType::int4}) {
        CAPTURE(dtype_name(low));
        CHECK_THROWS_WITH_AS(d.execution_peak(low), doctest::Contains("it has:"), NotFound);
    }
    CHECK_THROWS_AS(d.execution_peak(DType::fp64), NotFound);
    CHECK_THROWS_AS(d.peak_flops(DType::fp8_e4m3), NotFound);  // the datasheet query stays strict
}

TEST_CASE("fp16 with fp16 sums: its own rate where a GeForce file lists one, fp16's elsewhere") {
    const Device d = parse_device(kMinimal);
    CHECK(d.execution_peak(DType::fp16_acc16).format == DType::fp16);
    CHECK(d.execution_peak(DType::fp16_acc16).flops_per_s == doctest::Approx(1e14));
    const Device g = parse_device(with(kMinimal, R"({"format": "fp32", "unit": "vector")",
                                       R"({"format": "fp16_acc16", "unit": "matrix", "peak_TFLOPS": 200, "source": "made up for a test"},
              {"format": "fp32", "unit": "vector")"));
    CHECK(g.execution_peak(DType::fp16_acc16).flops_per_s == doctest::Approx(2e14));
    CHECK(g.execution_peak(DType::fp16).flops_per_s == doctest::Approx(1e14));
    CHECK(parse_dtype("FP16_ACC16") == DType::fp16_acc16);
    CHECK(dtype_bits(DType::fp16_acc16) == 16);
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    CHECK(db.get("rtx-4090").execution_peak(DType::fp16_acc16).flops_per_s == doctest::Approx(330.3e12));
    CHECK(db.get("rtx-4090").execution_peak(DType::fp16).flops_per_s == doctest::Approx(165.2e12));
    CHECK(db.get("a100-sxm-80gb").execution_peak(DType::fp16_acc16).flops_per_s == doctest::Approx(312e12));  // full rate either way
}

TEST_CASE("instruction issue: thread instructions per unit and clock, x units x boost clock") {
    CHECK(parse_device(kMinimal).issue_lanes_per_s() == 0);  // not in the data
    const Device d = parse_device(with(kMinimal, R"("name": "SM",)", R"("name": "SM", "lanes_issued_per_clock": 128,)"));
    CHECK(d.issue_lanes_per_s() == doctest::Approx(10 * 128 * 1e9));
    CHECK(parse_device(d.to_json()).lanes_issued_per_clock == 128);
    CHECK_THROWS_WITH_AS(parse_device(with(kMinimal, R"("name": "SM",)", R"("name": "SM", "lanes_issued_per_clock": 0,)"), "bad.json"),
                         doctest::Contains("lanes_issued_per_clock"), InvalidArgument);
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    for (const auto& dev : db.devices()) {
        CAPTURE(dev.id);
        CHECK((dev.vendor == "nvidia") == (dev.lanes_issued_per_clock == 128));  // every NVIDIA SM, no one else's yet
    }
    CHECK(db.get("a100-sxm-80gb").issue_lanes_per_s() == doctest::Approx(108 * 128 * 1.41e9));
}

TEST_CASE("interconnects join the devices of their domain; beyond it the network carries the collective") {
    const DeviceDB db = DeviceDB::load_directory(ROOFLINE_TEST_HARDWARE_DB);
    const Device& h100 = db.get("h100-sxm");
    CHECK(h100.interconnect_bandwidth(8) == doctest::Approx(450e9));   // NVLink 4 on an HGX board of 8
    CHECK(h100.interconnect_bandwidth(16) == doctest::Approx(50e9));   // two nodes: the 400 Gb/s NIC
    CHECK(h100.interconnect_bandwidth() == doctest::Approx(450e9));    // without a count: the fastest link
    const Device& gb200 = db.get("gb200");
    CHECK(gb200.interconnect_bandwidth(72) == doctest::Approx(900e9));  // the NVL72 domain
    CHECK(gb200.interconnect_bandwidth(73) == 0);                       // no network listed for GB200
    CHECK(gb200.interconnect_bandwidth(2) == doctest::Approx(900e9));   // NVLink-C2C (domain 1) never joins GPUs
    const Device round = parse_device(h100.to_json(), "<round trip>");
    CHECK(round.interconnect_bandwidth(16) == doctest::Approx(50e9));
    std::string bad = h100.to_json();
    const std::size_t at = bad.find("\"domain_devices\": 8");
    REQUIRE(at != std::string::npos);
    bad.replace(at, std::string("\"domain_devices\": 8").size(), "\"domain_devices\": 2.5");
    CHECK_THROWS_WITH_AS(parse_device(bad, "<t>"),
        doctest::Contains("domain_devices"), InvalidArgument);
}
