// The device as the runtime reports it, for the profile's device record.
#include "bench.hpp"
#include "common.cuh"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>

namespace rcal {

namespace {

std::string version_text(int v) {  // 13000 -> "13.0"
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    return s;
}

// One line of a command's output, or "" when the command is missing or fails.
std::string command_line_output(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>/dev/null").c_str(), "r"), pclose);
    if (!p) return "";
    std::array<char, 512> buf{};
    std::string out;
    if (fgets(buf.data(), static_cast<int>(buf.size()), p.get())) out = buf.data();
    return trim(out);
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

__global__ void busy_kernel(float* out, unsigned long long ns, float x, float y) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    float a = static_cast<float>(threadIdx.x) * 1e-3f + 1.0f;
    do {
#pragma unroll
        for (int i = 0; i < 256; ++i) a = fmaf(a, x, y);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
    if (a == 0.0f) out[0] = a;  // never true; keeps the loop
}

}  // namespace

void warm_up(const Context& ctx, double seconds) {
    DeviceBuffer<float> sink(1);
    busy_kernel<<<ctx.sm_count * 4, kBlock>>>(sink.ptr, static_cast<unsigned long long>(seconds * 1e9), 0.999f, 0.001f);
    RCAL_LAUNCHED();
    RCAL_CUDA(cudaDeviceSynchronize());
}

Context open_device(int device, bool quick, roofline::ProfileDevice& rec) {
    int count = 0;
    RCAL_CUDA(cudaGetDeviceCount(&count));
    if (device >= count) {
        std::fprintf(stderr, "--device %d: only %d CUDA device(s) present\n", device, count);
        std::exit(1);
    }
    RCAL_CUDA(cudaSetDevice(device));
    cudaDeviceProp p{};
    RCAL_CUDA(cudaGetDeviceProperties(&p, device));
    int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
    RCAL_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    RCAL_CUDA(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device));
    RCAL_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    int driver = 0, runtime = 0;
    RCAL_CUDA(cudaDriverGetVersion(&driver));
    RCAL_CUDA(cudaRuntimeGetVersion(&runtime));
    std::size_t free_b = 0, total_b = 0;
    RCAL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    char pci[32] = {0};
    RCAL_CUDA(cudaDeviceGetPCIBusId(pci, sizeof pci, device));

    Context ctx;
    ctx.device = device;
    ctx.quick = quick;
    ctx.sm_count = p.multiProcessorCount;
    ctx.cc_major = p.major;
    ctx.cc_minor = p.minor;
    ctx.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    ctx.free_bytes = free_b;
    ctx.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    ctx.shared_per_sm_bytes = p.sharedMemPerMultiprocessor;

    rec.name = p.name;
    rec.vendor = "nvidia";
    rec.kind = "gpu";
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) rec.host = host;
    utsname u{};
    if (uname(&u) == 0) rec.os = std::string(u.sysname) + " " + u.release;
    rec.compiler = "nvcc " + std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) + "." +
                   std::to_string(__CUDACC_VER_BUILD__);
#if defined(__clang__)
    rec.compiler += " / Clang " __clang_version__;
#elif defined(__GNUC__)
    rec.compiler += " / GCC " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                    std::to_string(__GNUC_PATCHLEVEL__);
#endif
    const std::string smi = command_line_output(std::string("nvidia-smi --query-gpu=driver_version --format=csv,noheader -i ") + pci);
    rec.driver = (smi.empty() ? std::string() : smi + ", ") + "CUDA driver API " + version_text(driver);
    rec.toolkit = "CUDA runtime " + version_text(runtime) + " (built with CUDA " + std::to_string(__CUDACC_VER_MAJOR__) +
                  "." + std::to_string(__CUDACC_VER_MINOR__) + ")";
    rec.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    rec.sm_count = p.multiProcessorCount;
    if (clock_khz > 0) rec.clock_hz = clock_khz * 1e3;
    rec.memory_bytes = static_cast<double>(p.totalGlobalMem);
    if (p.l2CacheSize > 0) rec.l2_bytes = static_cast<double>(p.l2CacheSize);
    if (p.sharedMemPerMultiprocessor > 0) rec.shared_memory_per_unit_bytes = static_cast<double>(p.sharedMemPerMultiprocessor);
    {
        // ROOFLINE_CUDA_TARGETS: the machine-code targets CMake built, '/'-separated ("sm_80/sm_90/sm_90a").
        const std::string targets = ROOFLINE_CUDA_TARGETS;
        std::size_t start = 0;
        while (start <= targets.size()) {
            const std::size_t end = std::min(targets.find('/', start), targets.size());
            if (end > start) rec.features.push_back(targets.substr(start, end - start));
            start = end + 1;
        }
    }
    rec.extra.emplace_back("pci_bus_id", json_string(pci));
    rec.extra.emplace_back("memory_clock_MHz", std::to_string(mem_clock_khz / 1000));
    rec.extra.emplace_back("memory_bus_width_bits", std::to_string(bus_bits));
    rec.extra.emplace_back("memory_free_bytes_at_start", std::to_string(free_b));
    rec.extra.emplace_back("max_threads_per_sm", std::to_string(p.maxThreadsPerMultiProcessor));
    rec.extra.emplace_back("ecc_enabled", p.ECCEnabled ? "true" : "false");
    const std::string clocks = command_line_output(
        std::string("nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader,nounits -i ") + pci);
    if (!clocks.empty()) rec.extra.emplace_back("nvidia_smi_max_sm_MHz_max_mem_MHz_power_limit_W", json_string(clocks));

    std::printf("device %d: %s (compute capability %d.%d, %d SMs, L2 %.1f MiB, %.1f GiB, %s)\n", device, p.name, p.major,
                p.minor, p.multiProcessorCount, p.l2CacheSize / 1048576.0, static_cast<double>(p.totalGlobalMem) / 1073741824.0,
                rec.driver.c_str());
    std::printf("built for: %s; SM clock %d MHz, memory clock %d MHz, bus %d bits\n", ROOFLINE_CUDA_TARGETS, clock_khz / 1000,
                mem_clock_khz / 1000, bus_bits);
    std::fflush(stdout);
    return ctx;
}

}  // namespace rcal
