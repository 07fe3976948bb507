// Host-CPU calibration: micro-kernels that measure the host's real ceilings (STREAM bandwidth from DRAM and from
// each cache level, FMA peak fp64/fp32, an Eigen GEMM, the dispatch cost of an empty parallel region, an
// arithmetic-intensity sweep) and write them as a calibration profile (calibration/README.md).
// Threads are pinned one per core where the OS allows; every kernel is warmed up, timed many times (median kept)
// and its output verified against a reference on random non-zero data.
#pragma once

#include "roofline/calibration.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace roofline::cpu {

/// What the OS tells about the host (Linux: /proc/cpuinfo, /proc/meminfo, /sys/devices/system/cpu).
struct HostInfo {
    std::string model_name, vendor, hostname, os, compiler;
    int logical_cpus = 0;           ///< CPUs this process may run on
    int physical_cores = 0;         ///< distinct cores among them
    std::vector<int> cpu_order;     ///< allowed CPUs, one per core first (the order threads are pinned in)
    double clock_hz = 0;            ///< cpufreq max when the OS exposes it, else /proc/cpuinfo "cpu MHz"
    std::string clock_source;       ///< where clock_hz came from
    double memory_bytes = 0;        ///< /proc/meminfo MemTotal
    double memory_available_bytes = 0;
    std::vector<CacheInfo> caches;  ///< data and unified caches of cpu_order[0], L1 first (instances for all cores)
    std::vector<std::string> flags; ///< ISA flags of interest (sse2 avx avx2 fma avx512f asimd ...)
    int simd_bytes = 0;             ///< vector width the kernels were compiled for (64 with AVX-512)
};
HostInfo host_info();

/// A team of threads, pinned one per core where the OS allows; thread 0 is the caller (pinned while the team
/// lives, its affinity restored after). run() is an OpenMP-style parallel region: workers spin briefly, then sleep.
class ThreadTeam {
public:
    ThreadTeam(int threads, const std::vector<int>& cpus, bool pin = true);
    ~ThreadTeam();
    ThreadTeam(const ThreadTeam&) = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;
    int size() const;
    bool pinned() const;
    /// fn(thread index) on every thread; returns when all are done; rethrows the first exception.
    void run(const std::function<void(int)>& fn);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The most threads a team may have per CPU the process may run on: more only queue behind each other (a
/// measurement of minutes that measures nothing), so ThreadTeam refuses them.
inline constexpr int kMaxThreadsPerCpu = 4;
/// The most bytes the operands of one timed Eigen kernel (run_gemm, run_gemv) may take: half the host's memory
/// (64 GiB where it is not known); larger ones are refused before anything is allocated.
double max_kernel_operand_bytes();
/// The most repetitions (and warm-up runs) of one timed kernel.
inline constexpr int kMaxRepetitions = 100000;

/// A team on this host: `threads` threads (0: one per physical core), pinned in the OS's core order.
std::unique_ptr<ThreadTeam> host_team(int threads = 0);

struct Stats {
    double min = 0, median = 0, max = 0;
    long long repetitions = 0;
};
/// min / median / max of samples (not empty).
Stats stats_of(std::vector<double> samples);

/// One kernel's timed runs: seconds per run, and what one run moves and computes.
struct KernelRun {
    std::string kernel;
    Stats seconds;
    double bytes_per_run = 0;
    double flops_per_run = 0;
    bool verified = false;
    std::string detail;  ///< sizes and how it was verified
};

enum class Stream { copy, scale, add, triad, read };
const char* stream_name(Stream s);
/// STREAM kernels (fp64) over per-thread arrays of `elements_per_thread`; `inner` passes per timed run (for
/// cache-resident sizes, so one run lasts long enough to time). Bytes counted the STREAM way (no write-allocate).
std::vector<KernelRun> run_stream(ThreadTeam& team, const std::vector<Stream>& kernels, std::size_t elements_per_thread,
                                  int repetitions, int warmup, int inner = 1);
/// "copy", "scale", "add", "triad" or "read"; InvalidArgument naming the valid ones otherwise.
Stream parse_stream(std::string_view name);
/// run_stream over arrays of `array_bytes` each (>= 64), split evenly across the team's threads.
std::vector<KernelRun> run_stream_bytes(ThreadTeam& team, const std::vector<Stream>& kernels, double array_bytes,
                                        int repetitions, int warmup);
/// Peak FMA throughput: independent accumulator chains, `iterations` FMAs per chain per run. dtype fp32 or fp64.
KernelRun run_fma(ThreadTeam& team, DType dtype, long long iterations, int repetitions, int warmup);
/// C[m×n] = A[m×k]·B[k×n] with Eigen; the n columns split across the threads, one Eigen GEMM per thread on its block
/// (Eigen's own threading is off). dtype fp32 or fp64.
KernelRun run_gemm(ThreadTeam& team, DType dtype, long long m, long long n, long long k, int repetitions, int warmup);
/// y[n] = W[n×k]·x[k] with Eigen (W row-major); the n rows split across the threads.
KernelRun run_gemv(ThreadTeam& team, DType dtype, long long n, long long k, int repetitions, int warmup);
/// The intensity sweep kernel (fp32): y[i] = x[i] after k FMAs (x = x·a + b), over `elements_per_thread`; one
/// run per k in `ks` (8 bytes and 2k FLOPs per element).
std::vector<KernelRun> run_sweep(ThreadTeam& team, const std::vector<int>& ks, std::size_t elements_per_thread,
                                 int repetitions, int warmup);
/// The core clock the calling thread runs at, measured with a chain of dependent 64-bit integer multiplies (3 cycles
/// each on Intel since Nehalem and AMD since Zen); 0 where not implemented (non-x86).
double measure_clock_hz(int repetitions = 5);
/// Dispatch cost of an empty parallel region: seconds per region, over batches of `per_batch` regions.
KernelRun run_empty_region(ThreadTeam& team, int batches, int per_batch);

struct CpuCalibrationOptions {
    int threads = 0;             ///< 0: one per physical core the process may run on
    bool quick = false;          ///< small sizes and few repetitions (seconds; DRAM arrays may fit in the LLC)
    bool pin = true;
    double dram_array_bytes = 0; ///< per array of the DRAM STREAM kernels; 0: 4 × the LLC, within a quarter of free memory
    int repetitions = 0;         ///< 0: by mode (10, quick 3)
    std::string tool_name = "roofline-calibrate-cpu";
    std::string options_text;    ///< the command line, recorded in the profile
    std::function<void(const std::string&)> progress;  ///< one line per step (may be empty)
};

/// Run every kernel and return the profile (also usable while the Python GIL is released).
Profile calibrate_cpu(const CpuCalibrationOptions& options = {});

}  // namespace roofline::cpu
