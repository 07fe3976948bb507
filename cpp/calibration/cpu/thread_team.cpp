#include "detail.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace roofline::cpu {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

bool pin_current_thread(int cpu) {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<std::size_t>(cpu), &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
#else
    (void)cpu;
    return false;
#endif
}
}  // namespace

struct ThreadTeam::Impl {
    int n = 1;
    bool pinned = false;
    std::vector<std::thread> workers;
    std::atomic<std::uint64_t> generation{0};
    std::atomic<int> remaining{0};
    const std::function<void(int)>* fn = nullptr;
    std::mutex m;
    std::condition_variable cv;
    bool stop = false;
    std::exception_ptr error;
    std::mutex error_m;
#if defined(__linux__)
    cpu_set_t saved{};
    bool restore = false;
#endif

    void record(std::exception_ptr e) {
        std::lock_guard<std::mutex> lk(error_m);
        if (!error) error = e;
    }

    void worker(int tid) {
        std::uint64_t seen = 0;
        for (;;) {
            // Spin about 2 ms for the next region, then sleep until it comes.
            const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
            std::uint64_t g;
            unsigned spins = 0;
            while ((g = generation.load(std::memory_order_acquire)) == seen) {
                cpu_relax();
                if ((++spins & 1023u) == 0 && std::chrono::steady_clock::now() > spin_until) {
                    std::unique_lock<std::mutex> lk(m);
                    cv.wait(lk, [&] { return generation.load(std::memory_order_acquire) != seen; });
                }
            }
            seen = g;
            if (stop) return;
            try {
                (*fn)(tid);
            } catch (...) {
                record(std::current_exception());
            }
            remaining.fetch_sub(1, std::memory_order_acq_rel);
        }
    }
};

ThreadTeam::ThreadTeam(int threads, const std::vector<int>& cpus, bool pin) : impl_(std::make_unique<Impl>()) {
    const int cpus_known = std::max<int>({1, static_cast<int>(cpus.size()), static_cast<int>(std::thread::hardware_concurrency())});
    const int most = kMaxThreadsPerCpu * cpus_known;
    if (threads < 1 || threads > most)
        throw InvalidArgument("threads must be within [1, " + std::to_string(most) + "] (at most " +
                              std::to_string(kMaxThreadsPerCpu) + " per CPU of the " + std::to_string(cpus_known) +
                              " this process may run on), got " + std::to_string(threads));
    impl_->n = threads;
    const bool can_pin = pin && static_cast<int>(cpus.size()) >= threads;
    bool all_pinned = can_pin;
#if defined(__linux__)
    if (can_pin) {
        impl_->restore = pthread_getaffinity_np(pthread_self(), sizeof impl_->saved, &impl_->saved) == 0;
        all_pinned = pin_current_thread(cpus[0]);
    }
#endif
    std::vector<std::atomic<bool>> ok(static_cast<std::size_t>(threads));
    for (auto& o : ok) o = true;
    for (int t = 1; t < threads; ++t) {
        impl_->workers.emplace_back([this, t, can_pin, &cpus] {
            if (can_pin) pin_current_thread(cpus[static_cast<std::size_t>(t)]);
            impl_->worker(t);
        });
    }
    // Check the workers' pinning by running a region that asks each where it may run.
    if (can_pin) {
        run([&](int t) {
#if defined(__linux__)
            cpu_set_t set;
            CPU_ZERO(&set);
            const bool got = pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0;
            ok[static_cast<std::size_t>(t)] = got && CPU_COUNT(&set) == 1 &&
                                              CPU_ISSET(static_cast<std::size_t>(cpus[static_cast<std::size_t>(t)]), &set);
#else
            ok[static_cast<std::size_t>(t)] = false;
#endif
        });
        for (auto& o : ok) all_pinned = all_pinned && o;
    }
    impl_->pinned = all_pinned;
}

ThreadTeam::~ThreadTeam() {
    {
        std::lock_guard<std::mutex> lk(impl_->m);
        impl_->stop = true;
        impl_->generation.fetch_add(1, std::memory_order_acq_rel);
    }
    impl_->cv.notify_all();
    for (auto& w : impl_->workers) w.join();
#if defined(__linux__)
    if (impl_->restore) pthread_setaffinity_np(pthread_self(), sizeof impl_->saved, &impl_->saved);
#endif
}

int ThreadTeam::size() const { return impl_->n; }
bool ThreadTeam::pinned() const { return impl_->pinned; }

void ThreadTeam::run(const std::function<void(int)>& fn) {
    Impl& im = *impl_;
    im.fn = &fn;
    im.error = nullptr;
    im.remaining.store(im.n - 1, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lk(im.m);
        im.generation.fetch_add(1, std::memory_order_acq_rel);
    }
    im.cv.notify_all();
    try {
        fn(0);
    } catch (...) {
        im.record(std::current_exception());
    }
    while (im.remaining.load(std::memory_order_acquire) != 0) cpu_relax();
    if (im.error) std::rethrow_exception(im.error);
}

Stats stats_of(std::vector<double> s) {
    if (s.empty()) throw InvalidArgument("stats_of: no samples");
    std::sort(s.begin(), s.end());
    Stats st;
    st.min = s.front();
    st.max = s.back();
    const std::size_t n = s.size();
    st.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    st.repetitions = static_cast<long long>(n);
    return st;
}

namespace detail {
Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
    const std::size_t align = bytes >= (std::size_t(4) << 20) ? (std::size_t(2) << 20) : 4096;
    const std::size_t rounded = (bytes + align - 1) / align * align;
#if defined(__linux__)
    if (posix_memalign(&p_, align, rounded) != 0) p_ = nullptr;
    if (p_ && align > 4096) madvise(p_, rounded, MADV_HUGEPAGE);
#else
    p_ = std::aligned_alloc(align, rounded);
#endif
    if (!p_) throw Error("calibration: cannot allocate " + fmt_bytes(static_cast<double>(bytes)));
}
Buffer::~Buffer() { std::free(p_); }
Buffer::Buffer(Buffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        std::free(p_);
        p_ = o.p_;
        bytes_ = o.bytes_;
        o.p_ = nullptr;
        o.bytes_ = 0;
    }
    return *this;
}

std::string fmt_bytes(double b) {
    char buf[48];
    if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.3g GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.3g MiB", b / (1024.0 * 1024));
    else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.3g KiB", b / 1024.0);
    else std::snprintf(buf, sizeof buf, "%.0f B", b);
    return buf;
}
}  // namespace detail

std::unique_ptr<ThreadTeam> host_team(int threads) {
    const HostInfo h = host_info();
    return std::make_unique<ThreadTeam>(threads > 0 ? threads : std::max(1, h.physical_cores), h.cpu_order);
}

}  // namespace roofline::cpu
