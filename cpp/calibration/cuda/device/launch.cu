// Launch overhead of an empty kernel:
//  - back-to-back: a batch of launches into one stream, timed with events: the per-kernel cost a stream of small
//    kernels pays (the host enqueues faster than the GPU retires, so this is the GPU-side launch interval);
//  - the same with a full grid (one block per SM), since real kernels fill the GPU;
//  - launch-to-completion: host clock around one launch and its stream synchronisation (a reference: it includes
//    the synchronisation's wake-up, which a stream of kernels does not pay).
#include "bench.hpp"
#include "common.cuh"

#include "../host/stats.hpp"

#include <chrono>
#include <cstdio>

namespace rcal {

namespace {

__global__ void empty_kernel() {}

void log_line(const roofline::CeilingMeasurement& m) { std::printf("  %s\n", describe(m).c_str()); std::fflush(stdout); }

}  // namespace

GroupResult run_launch(const Context& ctx) {
    GroupResult out;
    const int batch = ctx.quick ? 200 : 1000;
    const int reps = ctx.quick ? 5 : 20;
    const int warmup = 100;
    {
        const auto t = time_events([] { empty_kernel<<<1, 1>>>(); }, warmup, reps, batch);
        auto m = overhead_measurement("empty_kernel_back_to_back", t, warmup, {{"launches_per_run", batch}, {"blocks", 1}});
        m.notes = "seconds per launch: event-timed batches of back-to-back empty launches <<<1,1>>> in one stream";
        log_line(m);
        out.measurements.push_back(m);
    }
    {
        const int grid = ctx.sm_count;
        const auto t = time_events([grid] { empty_kernel<<<grid, kBlock>>>(); }, warmup, reps, batch);
        auto m = overhead_measurement("empty_kernel_full_grid_back_to_back", t, warmup,
                                      {{"launches_per_run", batch}, {"blocks", grid}, {"threads_per_block", kBlock}});
        m.notes = "as empty_kernel_back_to_back with one 256-thread block per SM";
        log_line(m);
        out.measurements.push_back(m);
    }
    {
        for (int i = 0; i < warmup; ++i) empty_kernel<<<1, 1>>>();
        RCAL_LAUNCHED();
        RCAL_CUDA(cudaDeviceSynchronize());
        const int n = ctx.quick ? 200 : 2000;
        std::vector<double> t;
        t.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            empty_kernel<<<1, 1>>>();
            RCAL_CUDA(cudaStreamSynchronize(0));
            const auto t1 = std::chrono::steady_clock::now();
            t.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        RCAL_LAUNCHED();
        auto m = overhead_measurement("empty_kernel_launch_to_completion", t, warmup, {{"blocks", 1}});
        m.feeds_model = false;
        m.notes = "host steady_clock around one launch + cudaStreamSynchronize; reference, not the per-kernel cost "
                  "inside a stream";
        log_line(m);
        out.measurements.push_back(m);
    }
    return out;
}

}  // namespace rcal
