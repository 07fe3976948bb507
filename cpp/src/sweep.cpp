#include "roofline/sweep.hpp"

#include "plan_impl.hpp"

#include "roofline/errors.hpp"

#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <sstream>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

namespace roofline {

namespace detail {
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}
void* allocate_column(std::size_t bytes) {
    if (bytes < kHugeColumnBytes) return ::operator new(bytes);
    void* p = ::operator new(bytes, std::align_val_t{kHugePage});
#if defined(__linux__)
    (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the column is ordinary pages
#endif
    return p;
}
void deallocate_column(void* p, std::size_t bytes) noexcept {
    if (bytes < kHugeColumnBytes)
        ::operator delete(p);
    else
        ::operator delete(p, std::align_val_t{kHugePage});
}
}  // namespace detail

// -------------------------------------------------------------------------------------------------------------
// Plans kept between sweeps

bool PlanCache::Key::operator<(const Key& o) const {
    return std::tie(model, device, engine, quant, kv_dtype, flash_attention, tensor_parallel, ubatch_tokens, split_mode) <
           std::tie(o.model, o.device, o.engine, o.quant, o.kv_dtype, o.flash_attention, o.tensor_parallel, o.ubatch_tokens,
                    o.split_mode);
}

struct PlanCache::State {
    struct Entry {
        std::shared_ptr<const EstimatePlan::Impl> plan;
        std::uint64_t used = 0;  // the tick of its last use
    };
    std::size_t max_plans = 1;
    mutable std::mutex mutex;
    mutable std::uint64_t tick = 0;
    mutable std::size_t hits = 0;
    std::map<const void*, Owner> pins;
    using Plans = std::map<Key, Entry>;
    mutable Plans plans;
    mutable std::map<std::uint64_t, Plans::iterator> by_use;  // the plans by their last use, oldest first
    bool pinned(const Key& k) const { return pins.count(k.model) && pins.count(k.device); }
    // every pin and plan moved into the caller's, to be released after the lock
    void take_all(std::map<const void*, Owner>& pins_out, Plans& plans_out) {
        pins_out.swap(pins);
        plans_out.swap(plans);
        by_use.clear();
    }
};

PlanCache::PlanCache(std::size_t max_plans) : state_(std::make_unique<State>()) {
    state_->max_plans = std::max<std::size_t>(1, max_plans);
}
PlanCache::~PlanCache() = default;

// Owners and plans are released after the lock: an owner's deleter may take locks of its own (the GIL).
void PlanCache::pin(const std::vector<std::pair<const void*, Owner>>& objects) {
    std::map<const void*, Owner> dropped;
    State::Plans dropped_plans;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        State& st = *state_;
        std::size_t fresh = 0;
        for (const auto& o : objects) fresh += st.pins.count(o.first) ? 0u : 1u;
        if (st.pins.size() + fresh > 4 * st.max_plans) st.take_all(dropped, dropped_plans);
        for (const auto& o : objects)
            if (o.first && o.second) st.pins.emplace(o.first, o.second);
    }
}

std::size_t PlanCache::release(const std::function<bool(const Owner&)>& unused) {
    std::vector<Owner> dropped;
    std::vector<std::shared_ptr<const EstimatePlan::Impl>> dropped_plans;
    std::lock_guard<std::mutex> lock(state_->mutex);
    State& st = *state_;
    for (auto it = st.pins.begin(); it != st.pins.end();) {
        if (!unused(it->second)) {
            ++it;
            continue;
        }
        const void* object = it->first;
        for (auto p = st.plans.begin(); p != st.plans.end();) {
            if (p->first.model == object || p->first.device == object) {
                dropped_plans.push_back(std::move(p->second.plan));
                st.by_use.erase(p->second.used);
                p = st.plans.erase(p);
            } else {
                ++p;
            }
        }
        dropped.push_back(std::move(it->second));
        it = st.pins.erase(it);
    }
    return dropped.size();  // the lock is released before `dropped` is
}

std::size_t PlanCache::plans() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->plans.size();
}
std::size_t PlanCache::pins() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->pins.size();
}
std::size_t PlanCache::hits() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->hits;
}
void PlanCache::clear() {
    std::map<const void*, Owner> dropped;
    State::Plans dropped_plans;
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->take_all(dropped, dropped_plans);
}

std::shared_ptr<const EstimatePlan::Impl> PlanCache::find(const Key& key) const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const State& st = *state_;
    if (!st.pinned(key)) return nullptr;
    const auto it = st.plans.find(key);
    if (it == st.plans.end()) return nullptr;
    st.by_use.erase(it->second.used);
    it->second.used = ++st.tick;
    st.by_use.emplace(it->second.used, it);
    ++st.hits;
    return it->second.plan;
}

void PlanCache::insert(const Key& key, std::shared_ptr<const EstimatePlan::Impl> plan) {
    std::shared_ptr<const EstimatePlan::Impl> evicted;
    std::lock_guard<std::mutex> lock(state_->mutex);
    State& st = *state_;
    if (!plan || !st.pinned(key) || st.plans.count(key)) return;
    if (st.plans.size() >= st.max_plans) {  // the least recently used goes
        const auto oldest = st.by_use.begin();
        evicted = std::move(oldest->second->second.plan);
        st.plans.erase(oldest->second);
        st.by_use.erase(oldest);
    }
    const auto it = st.plans.emplace(key, State::Entry{std::move(plan), ++st.tick}).first;
    st.by_use.emplace(st.tick, it);
}

namespace {

// Run task(i) for i in [0, n) on up to `threads` threads (0: one per core); the calling thread works too. If tasks
// throw, the others still run and the exception of the lowest index is rethrown here (whatever the thread count).
template <class Task>
void parallel_for(std::size_t n, int threads, const Task& task) {
    if (n == 0) return;
    std::size_t workers = threads > 0 ? static_cast<std::size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
    workers = std::min(workers, n);
    std::atomic<std::size_t> next{0};
    std::mutex failed_mutex;
    std::size_t failed_at = n;
    std::exception_ptr failed;
    auto work = [&] {
        for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
            try {
                task(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failed_mutex);
                if (i < failed_at) {
                    failed_at = i;
                    failed = std::current_exception();
                }
            }
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    if (failed) std::rethrow_exception(failed);
}

// An error of one configuration, kept with its type to be rethrown with the configuration named.
struct Failure {
    std::string message;
    bool not_found = false;
};

[[noreturn]] void rethrow(const Failure& f) {
    if (f.not_found) throw NotFound(f.message);
    throw InvalidArgument(f.message);
}

template <class F>
bool capture(Failure& out, const std::function<std::string()>& what, F&& f) {
    try {
        f();
        return true;
    } catch (const NotFound& e) {
        out = {what() + ": " + e.what(), true};
    } catch (const std::exception& e) {
        out = {what() + ": " + e.what(), false};
    }
    return false;
}

void check_axes(const SweepAxes& a, bool need_points) {
    auto nonempty = [](std::size_t n, const char* axis) {
        if (n == 0) throw InvalidArgument(std::string("sweep: '") + axis + "' must list at least one value");
    };
    nonempty(a.models.size(), "models");
    nonempty(a.quants.size(), "quants");
    nonempty(a.devices.size(), "devices");
    nonempty(a.engines.size(), "engines");
    nonempty(a.kv_dtypes.size(), "kv_dtypes");
    nonempty(a.flash_attention.size(), "flash_attention");
    nonempty(a.tensor_parallel.size(), "tensor_parallel");
    nonempty(a.ubatch_tokens.size(), "ubatch_tokens");
    nonempty(a.split_modes.size(), "split_modes");
    for (double u : a.ubatch_tokens) check_count("ubatch_tokens", u);
    for (std::size_t i = 0; i < a.models.size(); ++i)
        if (!a.models[i]) throw InvalidArgument("sweep: models[" + std::to_string(i) + "] is null");
    for (std::size_t i = 0; i < a.devices.size(); ++i)
        if (!a.devices[i]) throw InvalidArgument("sweep: devices[" + std::to_string(i) + "] is null");
    for (int f : a.flash_attention)
        if (f != 0 && f != 1 && f != -1)
            throw InvalidArgument("sweep: flash_attention values must be 0, 1 or -1 (the engine's default), got " + std::to_string(f));
    if (!need_points) return;
    nonempty(a.batch.size(), "batch");
    nonempty(a.prompt_tokens.size(), "prompt_tokens");
    nonempty(a.gen_tokens.size(), "gen_tokens");
    nonempty(a.context_tokens.size(), "context_tokens");
    for (double c : a.context_tokens) check_count("context_tokens", c);
    for (double b : a.batch) EstimatePlan::check_point(b, 1, 0);
    for (double p : a.prompt_tokens) check_count("prompt_tokens", p);
    for (double g : a.gen_tokens) check_count("gen_tokens", g);
    for (double p : a.prompt_tokens)
        for (double g : a.gen_tokens)
            if (p + g < 1)
                throw InvalidArgument("sweep: prompt_tokens 0 with gen_tokens 0 leaves nothing to estimate; drop 0 from one of them");
}

// A configuration: indices into the axes' configuration lists.
using Config = std::array<std::uint32_t, 9>;  // model, quant, device, engine, kv, flash, tp, ubatch, split

std::string describe(const SweepAxes& a, const Config& c) {
    std::ostringstream os;
    os << "model '" << a.models[c[0]]->arch.id << "', quant '" << a.quants[c[1]] << "', device '" << a.devices[c[2]]->id
       << "', engine '" << a.engines[c[3]] << "', kv_dtype '" << a.kv_dtypes[c[4]] << "', flash_attention "
       << (a.flash_attention[c[5]] < 0 ? "the engine's default" : a.flash_attention[c[5]] ? "on" : "off")
       << ", tensor_parallel " << a.tensor_parallel[c[6]];
    if (a.ubatch_tokens.size() > 1 || a.ubatch_tokens[c[7]] != 0) os << ", ubatch_tokens " << a.ubatch_tokens[c[7]];
    if (a.split_modes.size() > 1 || !a.split_modes[c[8]].empty())
        os << ", split_mode " << (a.split_modes[c[8]].empty() ? std::string("the engine's default") : a.split_modes[c[8]]);
    return os.str();
}

// Plans for a list of configurations, built in parallel; formats shared per (model, quant).
struct Plans {
    std::vector<std::unique_ptr<EstimatePlan>> plans;  // null where the configuration failed
    std::vector<Failure> failures;
};

Plans build_plans(const SweepAxes& a, const std::vector<Config>& configs, int threads, PlanCache* cache) {
    // Each engine on each device: the backend it runs on there (an index into backend_names()), or why it cannot.
    const std::size_t ne = a.engines.size(), nd = a.devices.size();
    std::vector<std::shared_ptr<const Engine>> engines(ne);
    std::vector<Failure> engine_failures(ne);
    for (std::size_t e = 0; e < ne; ++e) capture(engine_failures[e], [] { return std::string(); }, [&] { engines[e] = engine(a.engines[e]); });
    std::vector<std::uint32_t> backend_of(nd * ne, 0);
    std::vector<Failure> backend_failures(nd * ne);
    std::vector<char> backend_ok(nd * ne, 0);
    std::vector<std::shared_ptr<const Device>> engine_devices(nd * ne);  // each device as each engine sees it
    std::vector<std::shared_ptr<const Device>> layer_devices(nd * ne);   // ... under a layer split (pipeline stages)
    for (std::size_t d = 0; d < nd; ++d)
        for (std::size_t e = 0; e < ne; ++e) {
            if (!engines[e]) {
                backend_failures[d * ne + e] = engine_failures[e];
                continue;
            }
            backend_ok[d * ne + e] = capture(backend_failures[d * ne + e], [] { return std::string(); }, [&] {
                const EngineBackend& b = engines[e]->on(*a.devices[d]);
                backend_of[d * ne + e] = static_cast<std::uint32_t>(
                    std::find(backend_names().begin(), backend_names().end(), b.backend) - backend_names().begin());
                engine_devices[d * ne + e] = device_for_engine(*a.devices[d], b);
                // a layer split's kernels cost the engine's more per launch: that device made once for it
                layer_devices[d * ne + e] = b.layer_split_kernel_fixed_cost_add == 0 ? engine_devices[d * ne + e]
                                                                                     : device_for_engine(*a.devices[d], b, true);
            });
        }
    // Structures (the device-independent part of a plan) per (model, quant, backend, engine, kv, flash, tp), then a
    // plan per configuration from its structure and device: no op is built per device.
    auto structure_key = [&](const Config& c) {
        return Config{c[0], c[1], backend_of[c[2] * ne + c[3]], c[3], c[4], c[5], c[6], c[7], c[8]};
    };
    // plans kept from earlier sweeps: those configurations need no structure
    auto cache_key = [&](const Config& c, const Engine* e) {
        return PlanCache::Key{a.models[c[0]], a.devices[c[2]], e, a.quants[c[1]], a.kv_dtypes[c[4]],
                              a.flash_attention[c[5]], a.tensor_parallel[c[6]], a.ubatch_tokens[c[7]], a.split_modes[c[8]]};
    };
    Plans out;
    out.plans.resize(configs.size());
    out.failures.resize(configs.size());
    std::vector<char> kept(configs.size(), 0);
    if (cache)
        for (std::size_t i = 0; i < configs.size(); ++i)
            if (backend_ok[configs[i][2] * ne + configs[i][3]])
                if (auto hit = cache->find(cache_key(configs[i], engines[configs[i][3]].get()))) {
                    out.plans[i] = std::make_unique<EstimatePlan>(std::move(hit));
                    kept[i] = 1;
                }
    std::vector<Config> keys;
    for (std::size_t i = 0; i < configs.size(); ++i)
        if (!kept[i] && backend_ok[configs[i][2] * ne + configs[i][3]]) keys.push_back(structure_key(configs[i]));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    // tensor formats per (model, quant), shared by the structures
    const std::size_t nq = a.quants.size();
    std::vector<std::size_t> mq;
    for (const auto& k : keys) mq.push_back(k[0] * nq + k[1]);
    std::sort(mq.begin(), mq.end());
    mq.erase(std::unique(mq.begin(), mq.end()), mq.end());
    std::vector<std::vector<TensorFormat>> formats(mq.size());
    std::vector<Failure> format_failures(mq.size());
    std::vector<char> format_ok(mq.size(), 0);
    parallel_for(mq.size(), threads, [&](std::size_t i) {
        const std::size_t m = mq[i] / nq, q = mq[i] % nq;
        format_ok[i] = capture(format_failures[i], [] { return std::string(); },
                               [&] { formats[i] = estimate_tensor_formats(*a.models[m], a.quants[q]); });
    });
    std::vector<std::shared_ptr<const PlanStructure>> structures(keys.size());
    std::vector<Failure> structure_failures(keys.size());
    // keys of one configuration on several backends are adjacent (the backend is the third key): the first is built,
    // the others take its slots with their own kernels where their options make the same slots
    auto same_but_backend = [](const Config& x, const Config& y) {
        return x[0] == y[0] && x[1] == y[1] && x[3] == y[3] && x[4] == y[4] && x[5] == y[5] && x[6] == y[6] && x[7] == y[7] &&
               x[8] == y[8];
    };
    std::vector<std::size_t> first(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        first[i] = i;
        for (std::size_t j = i; j-- > 0 && keys[j][0] == keys[i][0] && keys[j][1] == keys[i][1];)
            if (same_but_backend(keys[j], keys[i])) first[i] = first[j];
    }
    auto build = [&](std::size_t i) {
        const Config& k = keys[i];
        const std::size_t f = static_cast<std::size_t>(std::lower_bound(mq.begin(), mq.end(), k[0] * nq + k[1]) - mq.begin());
        capture(structure_failures[i], [] { return std::string(); }, [&] {
            // the engine object resolved above (its backend and device were chosen with it), not looked up again
            PlanConfig pc{a.quants[k[1]], a.kv_dtypes[k[4]], a.flash_attention[k[5]] > 0, a.engines[k[3]],
                          a.tensor_parallel[k[6]], a.ubatch_tokens[k[7]], engines[k[3]]};
            pc.flash_attention_from_engine = a.flash_attention[k[5]] < 0;
            pc.split_mode = a.split_modes[k[8]];
            // the order EstimatePlan validates in: KV format, then the quantization
            parse_kv_format(pc.kv_dtype);
            if (!format_ok[f]) rethrow(format_failures[f]);
            if (first[i] != i && structures[first[i]])
                structures[i] = structure_for_backend(*structures[first[i]], backend_names()[k[2]]);
            // formats shared per (model, quant) unless the engine reads the quantization's name its own way
            const bool own = engines[k[3]]->quant_for(pc.quant) != pc.quant;
            if (!structures[i]) structures[i] = make_structure(*a.models[k[0]], pc, backend_names()[k[2]], own ? nullptr : &formats[f]);
        });
    };
    std::vector<std::size_t> firsts, others;
    for (std::size_t i = 0; i < keys.size(); ++i) (first[i] == i ? firsts : others).push_back(i);
    parallel_for(firsts.size(), threads, [&](std::size_t i) { build(firsts[i]); });
    parallel_for(others.size(), threads, [&](std::size_t i) { build(others[i]); });
    parallel_for(configs.size(), threads, [&](std::size_t i) {
        if (kept[i]) return;
        const Config& c = configs[i];
        const std::size_t de = c[2] * ne + c[3];
        if (!backend_ok[de]) {
            out.failures[i] = {describe(a, c) + ": " + backend_failures[de].message.substr(2), backend_failures[de].not_found};
            return;
        }
        const std::size_t k = static_cast<std::size_t>(
            std::lower_bound(keys.begin(), keys.end(), structure_key(c)) - keys.begin());
        if (!structures[k]) {
            out.failures[i] = {describe(a, c) + structure_failures[k].message, structure_failures[k].not_found};
            return;
        }
        capture(out.failures[i], [&] { return describe(a, c); }, [&] {
            const bool layers = structures[k]->options.pipeline_stages > 1;
            out.plans[i] = std::make_unique<EstimatePlan>(std::make_shared<const EstimatePlan::Impl>(
                layers ? layer_devices[de] : engine_devices[de], structures[k]));
        });
    });
    if (cache)  // newest last: of more new plans than the cache holds, the last ones stay
        for (std::size_t i = 0; i < configs.size(); ++i)
            if (!kept[i] && out.plans[i]) cache->insert(cache_key(configs[i], engines[configs[i][3]].get()), out.plans[i]->impl_ptr());
    return out;
}

// Columns of a table being filled.
struct Writer {
    SweepTable& t;
    void resize(std::size_t rows, bool points) {
        t.rows = rows;
        for (auto* v : {&t.model, &t.quant, &t.device, &t.engine, &t.kv_dtype, &t.tensor_parallel}) v->resize(rows);
        t.flash_attention.resize(rows);
        t.ubatch_tokens.resize(rows);
        t.split_mode.resize(rows);
        if (points) t.point.resize(rows);
        t.columns.resize(sweep_columns().size());
        for (auto& c : t.columns) c.resize(rows);
        t.codes.resize(sweep_code_columns().size());
        for (auto& c : t.codes) c.resize(rows);
    }
    void write(std::size_t r, const SweepAxes& a, const Config& c, const EstimatePlan& plan, const EstimateRow& e) {
        t.model[r] = static_cast<std::int32_t>(c[0]);
        t.quant[r] = static_cast<std::int32_t>(c[1]);
        t.device[r] = static_cast<std::int32_t>(c[2]);
        t.engine[r] = static_cast<std::int32_t>(c[3]);
        t.kv_dtype[r] = static_cast<std::int32_t>(c[4]);
        t.flash_attention[r] = plan.config().flash_attention ? 1 : 0;  // the engine's default resolved
        t.tensor_parallel[r] = a.tensor_parallel[c[6]];
        t.ubatch_tokens[r] = plan.ubatch_tokens();
        t.split_mode[r] = plan.impl().split_code;
        write_values(r, e);
    }
    void write_values(std::size_t r, const EstimateRow& e) {
        SweepColumn<double>* col = t.columns.data();
        SweepColumn<std::uint8_t>* code = t.codes.data();
#define ROOFLINE_X(name, type, unit, meaning) put(col, code, r, e.name);
        ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    }
    static void put(SweepColumn<double>*& col, SweepColumn<std::uint8_t>*&, std::size_t r, double v) { (*col++)[r] = v; }
    static void put(SweepColumn<double>*&, SweepColumn<std::uint8_t>*& code, std::size_t r, bool v) { (*code++)[r] = v ? 1 : 0; }
    static void put(SweepColumn<double>*&, SweepColumn<std::uint8_t>*& code, std::size_t r, PhaseBound v) {
        (*code++)[r] = static_cast<std::uint8_t>(v);
    }
};

std::vector<Config> all_configs(const SweepAxes& a) {
    std::vector<Config> out;
    const auto n = [](const auto& v) { return static_cast<std::uint32_t>(v.size()); };
    for (std::uint32_t m = 0; m < n(a.models); ++m)
        for (std::uint32_t q = 0; q < n(a.quants); ++q)
            for (std::uint32_t d = 0; d < n(a.devices); ++d)
                for (std::uint32_t e = 0; e < n(a.engines); ++e)
                    for (std::uint32_t k = 0; k < n(a.kv_dtypes); ++k)
                        for (std::uint32_t f = 0; f < n(a.flash_attention); ++f)
                            for (std::uint32_t t = 0; t < n(a.tensor_parallel); ++t)
                                for (std::uint32_t s = 0; s < n(a.split_modes); ++s)
                                    for (std::uint32_t u = 0; u < n(a.ubatch_tokens); ++u)
                                        out.push_back({m, q, d, e, k, f, t, u, s});
    return out;
}

// Keep the configurations whose plans were built; throw the first failure unless skipping.
std::vector<std::size_t> valid_configs(const SweepAxes& a, const std::vector<Config>& configs, const Plans& plans,
                                       const SweepOptions& options, SweepTable& table) {
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < configs.size(); ++i) {
        if (plans.plans[i]) {
            ok.push_back(i);
            continue;
        }
        if (!options.skip_invalid) rethrow(plans.failures[i]);
        table.skipped.push_back(plans.failures[i].message);
    }
    (void)a;
    table.plans = ok.size();
    return ok;
}

}  // namespace

namespace {
bool is_column(const char* type) { return std::string(type) == "double"; }
std::vector<std::string> row_field_names(bool columns) {
    std::vector<std::string> names;
    for (const FieldInfo& f : estimate_fields())
        if (!f.config && is_column(f.type) == columns) names.push_back(f.name);
    return names;
}
}  // namespace

const std::vector<std::string>& sweep_columns() {
    static const std::vector<std::string> names = row_field_names(true);
    return names;
}

const std::vector<std::string>& sweep_code_columns() {
    static const std::vector<std::string> names = row_field_names(false);
    return names;
}

std::vector<double> sweep_row_values(const EstimateRow& e) {
    SweepTable t;
    Writer w{t};
    w.resize(1, false);
    w.write_values(0, e);
    std::vector<double> out;
    for (const auto& c : t.columns) out.push_back(c[0]);
    return out;
}

SweepTable sweep(const SweepAxes& a, const SweepOptions& options) {
    check_axes(a, true);
    SweepTable table;
    const std::vector<Config> configs = all_configs(a);
    const Plans plans = build_plans(a, configs, options.threads, options.plans);
    const std::vector<std::size_t> ok = valid_configs(a, configs, plans, options, table);

    const std::size_t nb = a.batch.size(), np = a.prompt_tokens.size(), ng = a.gen_tokens.size(), nc = a.context_tokens.size();
    const std::size_t per_config = nc * np * ng * nb;
    Writer w{table};
    w.resize(ok.size() * per_config, false);
    for (const double c : a.context_tokens)  // the points are valid before any is estimated
        for (const double p : a.prompt_tokens)
            for (const double g : a.gen_tokens)
                if (p + g >= 1) EstimatePlan::check_point(1, p, g, c);

    // Work in chunks of (configuration, context, prompts): whole configurations when there are enough to keep every
    // thread busy, else one prompt each. Pieces shared between points are computed once per chunk; each is a pure
    // function of its arguments, so chunking changes no value.
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = options.threads > 0 ? static_cast<std::size_t>(options.threads) : hw;
    const std::size_t prompts_per_chunk = ok.size() * nc >= 4 * threads ? np : 1;
    const std::size_t chunks_per_context = (np + prompts_per_chunk - 1) / prompts_per_chunk;
    parallel_for(ok.size() * nc * chunks_per_context, options.threads, [&](std::size_t chunk) {
        const std::size_t g = chunk / (nc * chunks_per_context), ci = chunk / chunks_per_context % nc;
        const std::size_t p0 = (chunk % chunks_per_context) * prompts_per_chunk, p1 = std::min(np, p0 + prompts_per_chunk);
        const Config& c = configs[ok[g]];
        const EstimatePlan& the_plan = *plans.plans[ok[g]];
        const EstimatePlan::Impl& plan = the_plan.impl();
        const double C = a.context_tokens[ci];
        std::vector<PhaseSums> step(nb), prefill(nb);
        std::vector<std::vector<std::pair<double, PhaseSums>>> static_sums(nb);  // per batch, over the prompts
        for (auto& sums : static_sums) sums.reserve(2 * (p1 - p0));  // a full and a last micro-batch size per prompt
        std::vector<double> max_context(nb);
        std::vector<char> batch_done(nb, 0);
        EstimatePlan::Impl::AttentionMemo attention_memo;  // micro-batches at the same positions, across the prompts
        for (std::size_t pi = p0; pi < p1; ++pi) {
            const double P = a.prompt_tokens[pi];
            if (P > 0) {
                const PrefillChunks chunks = plan.prefill_attention(P, C, plan.ubatch, &attention_memo);
                for (std::size_t bi = 0; bi < nb; ++bi) prefill[bi] = plan.prefill(a.batch[bi], chunks, nullptr, &static_sums[bi]);
            }
            for (std::size_t gi = 0; gi < ng; ++gi) {
                const double n = a.gen_tokens[gi];
                const double cbb = plan.compute_bound_batch(P, n, C), mb = plan.max_batch(P, n, C);
                std::size_t row = (((g * nc + ci) * np + pi) * ng + gi) * nb;
                for (std::size_t bi = 0; bi < nb; ++bi, ++row) {
                    const double B = a.batch[bi];
                    if (!batch_done[bi]) {
                        step[bi] = plan.decode_step(B);
                        max_context[bi] = plan.max_context(B);
                        batch_done[bi] = 1;
                    }
                    const PhaseSums decode = n > 0 ? plan.decode(B, C + P, n, step[bi]) : PhaseSums{};
                    const EstimateRow e =
                        plan.assemble(B, P, n, C, P > 0 ? prefill[bi] : PhaseSums{}, decode, max_context[bi], cbb, mb);
                    w.write(row, a, c, the_plan, e);
                }
            }
        }
    });
    return table;
}

namespace {
// One point as EstimatePlan::evaluate computes it (checked by the caller), with the pieces consecutive points share
// kept in a memo of the caller's (one chunk of points) instead of the plan's own: a plan kept between sweeps would
// keep what one sweep's points left in it.
struct PointMemo {
    const EstimatePlan::Impl* plan = nullptr;
    double prompt = -1, context = -1;
    PrefillChunks chunks;
    double mc_batch = -1, max_context = 0;
    std::array<double, 3> cb_at{-1, -1, -1};
    double compute_bound_batch = 0;
};
EstimateRow evaluate_point(const EstimatePlan::Impl& p, double batch, double prompt, double gen, double context, PointMemo& m) {
    if (m.plan != &p) {
        m = PointMemo();
        m.plan = &p;
    }
    PhaseSums pre, dec;
    if (prompt > 0) {
        if (m.prompt != prompt || m.context != context) {
            m.chunks = p.prefill_attention(prompt, context);
            m.prompt = prompt;
            m.context = context;
        }
        pre = p.prefill(batch, m.chunks);
    }
    if (gen > 0) dec = p.decode(batch, context + prompt, gen, p.decode_step(batch));
    if (m.mc_batch != batch) {
        m.max_context = p.max_context(batch);
        m.mc_batch = batch;
    }
    if (m.cb_at != std::array<double, 3>{prompt, gen, context}) {
        m.compute_bound_batch = p.compute_bound_batch(prompt, gen, context);
        m.cb_at = {prompt, gen, context};
    }
    return p.assemble(batch, prompt, gen, context, pre, dec, m.max_context, m.compute_bound_batch, p.max_batch(prompt, gen, context));
}
}  // namespace

SweepTable sweep(const SweepAxes& a, const SweepPoints& pts, const SweepOptions& options) {
    check_axes(a, false);
    const std::size_t n = pts.batch.size();
    for (const auto* v : {&pts.model, &pts.quant, &pts.device, &pts.engine, &pts.kv_dtype, &pts.flash_attention, &pts.tensor_parallel})
        if (v->size() != n) throw InvalidArgument("sweep points: every column must have one entry per point (" + std::to_string(n) + ")");
    if (pts.prompt_tokens.size() != n || pts.gen_tokens.size() != n || (!pts.ubatch.empty() && pts.ubatch.size() != n) ||
        (!pts.split.empty() && pts.split.size() != n))
        throw InvalidArgument("sweep points: every column must have one entry per point (" + std::to_string(n) + ")");
    const std::size_t sizes[9] = {a.models.size(), a.quants.size(), a.devices.size(), a.engines.size(), a.kv_dtypes.size(),
                                  a.flash_attention.size(), a.tensor_parallel.size(), a.ubatch_tokens.size(),
                                  a.split_modes.size()};
    static const char* axis_names[9] = {"model", "quant", "device", "engine", "kv_dtype", "flash_attention",
                                        "tensor_parallel", "ubatch_tokens", "split_mode"};
    const std::vector<std::uint32_t> zeros(pts.ubatch.empty() || pts.split.empty() ? n : 0, 0);
    const std::vector<std::uint32_t>* cols[9] = {&pts.model, &pts.quant, &pts.device, &pts.engine, &pts.kv_dtype,
                                                 &pts.flash_attention, &pts.tensor_parallel,
                                                 pts.ubatch.empty() ? &zeros : &pts.ubatch,
                                                 pts.split.empty() ? &zeros : &pts.split};
    const std::vector<double> no_context(pts.context_tokens.empty() ? n : 0, 0.0);
    const std::vector<double>& context = pts.context_tokens.empty() ? no_context : pts.context_tokens;
    if (context.size() != n)
        throw InvalidArgument("sweep points: every column must have one entry per point (" + std::to_string(n) + ")");
    // the distinct configurations, in order of first use
    std::map<Config, std::size_t> index;
    std::vector<Config> configs;
    std::vector<std::size_t> config_of(n);
    for (std::size_t i = 0; i < n; ++i) {
        Config c{};
        for (std::size_t k = 0; k < 9; ++k) {
            c[k] = (*cols[k])[i];
            if (c[k] >= sizes[k])
                throw InvalidArgument("sweep points: point " + std::to_string(i) + " has " + axis_names[k] + " index " +
                                      std::to_string(c[k]) + ", beyond the " + std::to_string(sizes[k]) + " given");
        }
        try {
            EstimatePlan::check_point(pts.batch[i], pts.prompt_tokens[i], pts.gen_tokens[i], context[i]);
        } catch (const InvalidArgument& e) {
            throw InvalidArgument("sweep points: point " + std::to_string(i) + ": " + e.what());
        }
        auto [it, added] = index.emplace(c, configs.size());
        if (added) configs.push_back(c);
        config_of[i] = it->second;
    }
    SweepTable table;
    const Plans plans = build_plans(a, configs, options.threads, options.plans);
    valid_configs(a, configs, plans, options, table);
    std::vector<std::size_t> kept;  // the points whose configuration has a plan
    for (std::size_t i = 0; i < n; ++i)
        if (plans.plans[config_of[i]]) kept.push_back(i);
    Writer w{table};
    w.resize(kept.size(), true);
    constexpr std::size_t kChunk = 512;
    parallel_for((kept.size() + kChunk - 1) / kChunk, options.threads, [&](std::size_t chunk) {
        // the chunk's points in the order that lets the memo serve them (each row still written at its own place)
        std::array<std::size_t, kChunk> order{};
        const std::size_t r0 = chunk * kChunk, r1 = std::min(kept.size(), r0 + kChunk);
        for (std::size_t r = r0; r < r1; ++r) order[r - r0] = r;
        std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(r1 - r0), [&](std::size_t x, std::size_t y) {
            const std::size_t i = kept[x], j = kept[y];
            return std::make_tuple(config_of[i], context[i], pts.prompt_tokens[i], pts.batch[i], pts.gen_tokens[i], x) <
                   std::make_tuple(config_of[j], context[j], pts.prompt_tokens[j], pts.batch[j], pts.gen_tokens[j], y);
        });
        PointMemo memo;
        for (std::size_t k = 0; k < r1 - r0; ++k) {
            const std::size_t r = order[k];
            const std::size_t i = kept[r];
            const std::size_t ci = config_of[i];
            const EstimatePlan& plan = *plans.plans[ci];
            w.write(r, a, configs[ci], plan, evaluate_point(plan.impl(), pts.batch[i], pts.prompt_tokens[i], pts.gen_tokens[i], context[i], memo));
            table.point[r] = static_cast<std::int64_t>(i);
        }
    });
    return table;
}

// -------------------------------------------------------------------------------------------------------------
// Inverse queries

namespace {
std::string fmt(double x, int digits = 4) {
    std::ostringstream os;
    os.precision(digits);
    os << x;
    return os.str();
}
std::string gb(double bytes) { return fmt(bytes / 1e9) + " GB"; }
std::string ms(double s) { return fmt(s * 1e3) + " ms"; }

void check_targets(double gen, double tpot_s, double ttft_s) {
    if (std::isnan(tpot_s) || std::isnan(ttft_s) || std::isinf(tpot_s) || std::isinf(ttft_s))
        throw InvalidArgument("latency targets must be finite numbers of seconds (<= 0: no target)");
    if (tpot_s > 0 && gen < 1)
        throw InvalidArgument("a time-per-output-token target needs gen_tokens >= 1, got " + fmt(gen));
}
}  // namespace

BatchAnswer max_batch_for_latency(const EstimatePlan& plan, double prompt, double gen, double tpot_s, double ttft_s) {
    EstimatePlan::check_point(1, prompt, gen);
    check_targets(gen, tpot_s, ttft_s);
    BatchAnswer ans;
    auto eval = [&](double b) {
        ++ans.evaluations;
        return plan.evaluate(b, prompt, gen);
    };
    auto tpot = [&](const EstimateRow& e) { return e.tpot_s; };
    // the first target a point misses: "" when it meets them all
    auto misses = [&](const EstimateRow& e) -> std::string {
        if (!e.fits) return "memory";
        if (tpot_s > 0 && tpot(e) > tpot_s) return "tpot";
        if (ttft_s > 0 && e.ttft_s > ttft_s) return "ttft";
        return "";
    };
    auto describe_miss = [&](const std::string& what, const EstimateRow& e) {
        if (what == "memory") return "needs " + gb(e.memory_total) + " of " + gb(e.memory_capacity) + " memory";
        if (what == "tpot") return "takes " + ms(tpot(e)) + " per output token (target " + ms(tpot_s) + ")";
        return "takes " + ms(e.ttft_s) + " to the first token (target " + ms(ttft_s) + ")";
    };
    const EstimateRow one = eval(1);
    if (const std::string m = misses(one); !m.empty()) {
        ans.limit = m;
        ans.reason = "no batch meets the targets: batch 1 already " + describe_miss(m, one);
        ans.at = one;
        ans.beyond = eval(2);
        return ans;
    }
    // The largest batch that fits: memory is affine in the batch, so the closed form is exact up to rounding;
    // checked, and found by bisection over fits() should it be off.
    auto fits = [&](double b) { return plan.memory(b, prompt, gen).fits; };
    double hi = std::max(1.0, plan.max_batch(prompt, gen));
    if (!fits(hi)) {
        double ok = 1;
        while (hi - ok > 1) {
            const double mid = std::floor((ok + hi) / 2);
            (fits(mid) ? ok : hi) = mid;
        }
        hi = ok;
    } else if (fits(hi + 1)) {
        double bad = hi + 1;
        while (fits(bad) && bad < 1e15) bad *= 2;
        while (bad - hi > 1) {
            const double mid = std::floor((hi + bad) / 2);
            (fits(mid) ? hi : bad) = mid;
        }
    }
    double lo = 1;  // meets every target
    EstimateRow at = one;
    // invariant: lo meets; hi either meets (checked below) or not
    EstimateRow top = eval(hi);
    if (misses(top).empty()) {
        lo = hi;
        at = top;
    } else {
        while (hi - lo > 1) {
            const double mid = std::floor((lo + hi) / 2);
            const EstimateRow e = eval(mid);
            if (misses(e).empty()) {
                lo = mid;
                at = e;
            } else {
                hi = mid;
            }
        }
    }
    ans.feasible = true;
    ans.batch = lo;
    ans.at = at;
    ans.beyond = eval(lo + 1);
    ans.limit = misses(ans.beyond);
    if (ans.limit.empty()) ans.limit = "memory";  // cannot happen when the model is monotone; keep a definite answer
    std::string what = "batch " + fmt(lo, 15) + " fits (" + gb(at.memory_total) + " of " + gb(at.memory_capacity) + ")";
    if (gen > 0) what += ", " + ms(tpot(at)) + " per output token";
    if (ttft_s > 0) what += ", " + ms(at.ttft_s) + " to the first token";
    ans.reason = what + "; batch " + fmt(lo + 1, 15) + " " + describe_miss(ans.limit, ans.beyond);
    return ans;
}

ThroughputAnswer min_batch_for_throughput(const EstimatePlan& plan, double prompt, double gen, double tokens_per_s,
                                          double tpot_s, double ttft_s) {
    if (gen < 1) throw InvalidArgument("a throughput target needs gen_tokens >= 1, got " + fmt(gen));
    if (!(tokens_per_s > 0) || std::isinf(tokens_per_s))
        throw InvalidArgument("target tokens/s must be a finite number > 0, got " + fmt(tokens_per_s));
    ThroughputAnswer ans;
    ans.capacity = max_batch_for_latency(plan, prompt, gen, tpot_s, ttft_s);
    ans.evaluations = ans.capacity.evaluations;
    if (!ans.capacity.feasible) {
        ans.reason = ans.capacity.reason;
        ans.at = ans.capacity.at;
        return ans;
    }
    const double best = ans.capacity.at.decode_tokens_per_s_total;
    if (best < tokens_per_s) {
        ans.reason = "at most " + fmt(best) + " tokens/s (batch " + fmt(ans.capacity.batch, 15) + ", the largest that " +
                     (ans.capacity.limit == "memory" ? "fits in memory" : "meets the latency target") + "), below the target " +
                     fmt(tokens_per_s);
        ans.at = ans.capacity.at;
        return ans;
    }
    auto meets = [&](const EstimateRow& e) { return e.decode_tokens_per_s_total >= tokens_per_s; };
    double lo = 0, hi = ans.capacity.batch;  // lo: misses (0 stands for "none"), hi: meets
    EstimateRow at = ans.capacity.at;
    while (hi - lo > 1) {
        const double mid = std::max(1.0, std::floor((lo + hi) / 2));
        ++ans.evaluations;
        const EstimateRow e = plan.evaluate(mid, prompt, gen);
        if (meets(e)) {
            hi = mid;
            at = e;
        } else {
            lo = mid;
        }
    }
    ans.feasible = true;
    ans.batch = hi;
    ans.at = at;
    ans.reason = "batch " + fmt(hi, 15) + " reaches " + fmt(at.decode_tokens_per_s_total) + " tokens/s (target " +
                 fmt(tokens_per_s) + "); at most " + fmt(best) + " at batch " + fmt(ans.capacity.batch, 15);
    return ans;
}

}  // namespace roofline
