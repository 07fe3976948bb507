#include <doctest/doctest.h>

#include "roofline/calibrate_cpu.hpp"
#include "roofline/errors.hpp"

#include <atomic>
#include <stdexcept>

using namespace roofline;
using namespace roofline::cpu;

namespace {
int team_size() { return std::min(2, std::max(1, host_info().physical_cores)); }
}  // namespace

TEST_CASE("host_info reads the OS") {
    const HostInfo h = host_info();
    CHECK(h.logical_cpus >= 1);
    CHECK(h.physical_cores >= 1);
    CHECK(h.cpu_order.size() == static_cast<std::size_t>(h.logical_cpus));
    CHECK_FALSE(h.model_name.empty());
#if defined(__linux__)
    CHECK(h.memory_bytes > 0);
#endif
#if defined(__x86_64__)
    CHECK(measure_clock_hz(1) > 1e8);
#endif
}

TEST_CASE("a thread team runs every thread once per region and passes exceptions on") {
    const HostInfo h = host_info();
    ThreadTeam team(team_size(), h.cpu_order);
    std::atomic<int> sum{0};
    for (int r = 0; r < 100; ++r) team.run([&](int t) { sum += t + 1; });
    const int n = team.size();
    CHECK(sum.load() == 100 * n * (n + 1) / 2);
    CHECK_THROWS_AS(team.run([](int t) {
                        if (t == team_size() - 1) throw std::runtime_error("boom");
                    }),
                    std::runtime_error);
    team.run([&](int) { sum += 1; });  // still usable
    CHECK_THROWS_AS(ThreadTeam(0, h.cpu_order), InvalidArgument);
}

TEST_CASE("every CPU kernel verifies at a tiny size") {
    ThreadTeam team(team_size(), host_info().cpu_order);
    for (const KernelRun& k : run_stream(team, {Stream::copy, Stream::scale, Stream::add, Stream::triad, Stream::read}, 4096, 3, 1, 2)) {
        CAPTURE(k.kernel);
        CHECK(k.verified);
        CHECK(k.seconds.median > 0);
        CHECK(k.bytes_per_run > 0);
    }
    for (DType dt : {DType::fp32, DType::fp64}) {
        const KernelRun f = run_fma(team, dt, 2000, 3, 1);
        CAPTURE(f.kernel);
        CHECK(f.verified);
        CHECK(f.flops_per_run > 0);
        const KernelRun g = run_gemm(team, dt, 33, 47, 29, 2, 1);
        CHECK(g.verified);
        CHECK(g.flops_per_run == doctest::Approx(2.0 * 33 * 47 * 29));
        const KernelRun v = run_gemv(team, dt, 61, 37, 2, 1);
        CHECK(v.verified);
    }
    for (const KernelRun& s : run_sweep(team, {0, 3, 17}, 1000, 2, 1)) {
        CAPTURE(s.detail);
        CHECK(s.verified);
    }
    const KernelRun e = run_empty_region(team, 3, 10);
    CHECK(e.verified);
    CHECK(e.seconds.median > 0);
    CHECK_THROWS_AS(run_fma(team, DType::fp16, 10, 1, 0), InvalidArgument);
    CHECK_THROWS_AS(run_gemm(team, DType::fp32, 0, 1, 1, 1, 0), InvalidArgument);
}

TEST_CASE("stats_of takes min, median and max") {
    const Stats s = stats_of({3, 1, 2, 10});
    CHECK(s.min == 1);
    CHECK(s.median == 2.5);
    CHECK(s.max == 10);
    CHECK(s.repetitions == 4);
    CHECK_THROWS_AS(stats_of({}), InvalidArgument);
}
