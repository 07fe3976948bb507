#include "bindings.hpp"

#include <pybind11/numpy.h>

#include "roofline/estimate.hpp"
#include "roofline/plan.hpp"
#include "roofline/sweep.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

using namespace roofline;

namespace {

// A column handed to numpy without a copy: the vector moves into a capsule that the array owns.
template <class T>
py::array column(SweepColumn<T>&& v, const char* dtype = nullptr) {
    auto* holder = new SweepColumn<T>(std::move(v));
    py::capsule owner(holder, [](void* p) { delete static_cast<SweepColumn<T>*>(p); });
    const py::dtype dt = dtype ? py::dtype(dtype) : py::dtype::of<T>();
    return py::array(dt, {static_cast<py::ssize_t>(holder->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                     holder->data(), owner);
}

py::dict table_dict(SweepTable&& t) {
    py::dict d;
    const auto& names = sweep_columns();
    for (std::size_t i = 0; i < names.size(); ++i) d[py::str(names[i])] = column(std::move(t.columns[i]));
    const auto& codes = sweep_code_columns();
    for (std::size_t i = 0; i < codes.size(); ++i) {
        const bool flag = std::any_of(estimate_fields().begin(), estimate_fields().end(), [&](const FieldInfo& f) {
            return f.name == codes[i] && std::string(f.type) == "bool";
        });
        d[py::str(codes[i])] = column(std::move(t.codes[i]), flag ? "bool" : nullptr);
    }
    d["model"] = column(std::move(t.model));
    d["quant"] = column(std::move(t.quant));
    d["device"] = column(std::move(t.device));
    d["engine"] = column(std::move(t.engine));
    d["kv_dtype"] = column(std::move(t.kv_dtype));
    d["flash_attention"] = column(std::move(t.flash_attention), "bool");
    d["tensor_parallel"] = column(std::move(t.tensor_parallel));
    d["ubatch_tokens"] = column(std::move(t.ubatch_tokens));
    d["split_mode"] = column(std::move(t.split_mode));
    if (!t.point.empty() || t.rows == 0) d["point"] = column(std::move(t.point));
    d["skipped"] = t.skipped;
    d["plans"] = t.plans;
    d["rows"] = t.rows;
    return d;
}

// One row as a dict: the plan's configuration, then every field of the row.
py::dict row_dict(const EstimatePlan& plan, const EstimateRow& r) {
    py::dict d;
    d["model"] = plan.model_id();
    d["quant"] = plan.config().quant;
    d["device"] = plan.device_id();
    d["engine"] = plan.engine_id();
    d["kv_dtype"] = plan.config().kv_dtype;
    d["flash_attention"] = plan.config().flash_attention;
    d["tensor_parallel"] = plan.config().tensor_parallel;
    d["ubatch_tokens"] = plan.ubatch_tokens();
    d["split_mode"] = plan.config().split_mode;
#define ROOFLINE_X(name, type, unit, meaning) d[#name] = to_py(r.name);
    ROOFLINE_ESTIMATE_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    return d;
}

py::dict batch_answer_dict(const EstimatePlan& plan, const BatchAnswer& a) {
    py::dict d;
    d["feasible"] = a.feasible;
    d["batch"] = a.batch;
    d["limit"] = a.limit;
    d["reason"] = a.reason;
    d["at"] = row_dict(plan, a.at);
    d["beyond"] = row_dict(plan, a.beyond);
    d["evaluations"] = a.evaluations;
    return d;
}

template <class T>
std::vector<T> to_vector(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, const char* what) {
    if (a.ndim() != 1) throw py::value_error(std::string("sweep points: '") + what + "' must be one-dimensional");
    std::vector<T> v(static_cast<std::size_t>(a.shape(0)));
    if (!v.empty()) std::memcpy(v.data(), a.data(), v.size() * sizeof(T));
    return v;
}

SweepAxes axes_of(const std::vector<const Model*>& models, const std::vector<std::string>& quants,
                  const std::vector<const Device*>& devices, const std::vector<std::string>& engines,
                  const std::vector<std::string>& kv_dtypes, const std::vector<int>& flash, const std::vector<int>& tp) {
    SweepAxes a;
    a.models = models;
    a.quants = quants;
    a.devices = devices;
    a.engines = engines;
    a.kv_dtypes = kv_dtypes;
    a.flash_attention = flash;
    a.tensor_parallel = tp;
    return a;
}

// The plans every Python sweep keeps for the next (PlanCache): the models and devices of a sweep are pinned with
// their Python objects, which Python cannot change. Never destroyed (its owners are Python objects, which must not
// be released once the interpreter is gone): emptied at interpreter exit instead (register_sweep).
PlanCache& sweep_plans() {
    static PlanCache* cache = new PlanCache(1024);  // ~20 KB a plan: ~20 MB at most
    return *cache;
}

// Pin the axes' models and devices (the GIL held): each is kept by the Python object that wraps it. Objects that
// only the cache still holds (refcount 1) are unpinned first, with their plans: no sweep can name them again.
// `hold` gets the Python objects, for the caller to keep until the sweep is done (another thread's sweep may
// unpin them meanwhile, and the argument list alone does not keep them).
SweepOptions options_for(const SweepAxes& a, int threads, bool skip_invalid, std::vector<py::object>& hold) {
    sweep_plans().release([](const PlanCache::Owner& o) { return Py_REFCNT(static_cast<const py::object*>(o.get())->ptr()) == 1; });
    std::vector<std::pair<const void*, PlanCache::Owner>> pins;
    auto owner = [](py::handle h) {
        return PlanCache::Owner(new py::object(py::reinterpret_borrow<py::object>(h)), [](const void* p) {
            py::gil_scoped_acquire gil;
            delete static_cast<const py::object*>(p);
        });
    };
    auto pin = [&](const auto* x) {
        hold.push_back(py::cast(x, py::return_value_policy::reference));
        pins.emplace_back(x, owner(hold.back()));
    };
    for (const Model* x : a.models) pin(x);
    for (const Device* x : a.devices) pin(x);
    sweep_plans().pin(pins);
    return SweepOptions{threads, skip_invalid, &sweep_plans()};
}

}  // namespace

void register_sweep(py::module_& m) {
    m.def(
        "sweep_plan_cache",
        [](bool clear) {
            if (clear) sweep_plans().clear();
            py::dict d;
            d["plans"] = sweep_plans().plans();
            d["pins"] = sweep_plans().pins();
            d["hits"] = sweep_plans().hits();
            return d;
        },
        py::arg("clear") = false,
        "The plans sweeps keep for the next sweep (plans; pins: the models and devices they are kept for; hits: plans "
        "taken from it so far); clear=True drops them first");
    // the owners are Python objects: released while the interpreter still runs
    py::module_::import("atexit").attr("register")(py::cpp_function([] { sweep_plans().clear(); }));
    m.def("sweep_columns", &sweep_columns, "Names of a sweep's numeric columns, in order");
    m.def("sweep_code_columns", &sweep_code_columns, "Names of a sweep's code columns (bounds, flags), in order");
    m.def("split_mode_names", &split_mode_names, "The resolved split modes by a sweep's split_mode codes");

    m.def(
        "sweep",
        [](const std::vector<const Model*>& models, const std::vector<std::string>& quants,
           const std::vector<const Device*>& devices, const std::vector<std::string>& engines,
           const std::vector<std::string>& kv_dtypes, const std::vector<int>& flash_attention,
           const std::vector<int>& tensor_parallel, const std::vector<double>& batch, const std::vector<double>& prompt_tokens,
           const std::vector<double>& gen_tokens, int threads, bool skip_invalid, const std::vector<double>& context_tokens,
           const std::vector<double>& ubatch_tokens, const std::vector<std::string>& split_modes) {
            SweepAxes a = axes_of(models, quants, devices, engines, kv_dtypes, flash_attention, tensor_parallel);
            a.split_modes = split_modes;
            a.batch = batch;
            a.prompt_tokens = prompt_tokens;
            a.gen_tokens = gen_tokens;
            a.context_tokens = context_tokens;
            a.ubatch_tokens = ubatch_tokens;
            std::vector<py::object> hold;  // released with the GIL held, after the sweep
            const SweepOptions options = options_for(a, threads, skip_invalid, hold);
            SweepTable t;
            {
                py::gil_scoped_release release;
                t = sweep(a, options);
            }
            return table_dict(std::move(t));
        },
        py::arg("models"), py::arg("quants"), py::arg("devices"), py::arg("engines"), py::arg("kv_dtypes"),
        py::arg("flash_attention"), py::arg("tensor_parallel"), py::arg("batch"), py::arg("prompt_tokens"),
        py::arg("gen_tokens"), py::arg("threads") = 0, py::arg("skip_invalid") = false,
        py::arg("context_tokens") = std::vector<double>{0.0}, py::arg("ubatch_tokens") = std::vector<double>{0.0},
        py::arg("split_modes") = std::vector<std::string>{""},
        "Estimates over the product of the axes, as a dict of column arrays (numpy, not copied) and codes");

    m.def(
        "sweep_points",
        [](const std::vector<const Model*>& models, const std::vector<std::string>& quants,
           const std::vector<const Device*>& devices, const std::vector<std::string>& engines,
           const std::vector<std::string>& kv_dtypes, const std::vector<int>& flash_attention,
           const std::vector<int>& tensor_parallel, const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& model,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& quant,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& device,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& engine,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& kv_dtype,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& flash,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& tp,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& batch,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& prompt_tokens,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& gen_tokens, int threads, bool skip_invalid,
           const std::vector<double>& ubatch_tokens,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& ubatch,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& context_tokens,
           const std::vector<std::string>& split_modes,
           const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& split) {
            SweepAxes a = axes_of(models, quants, devices, engines, kv_dtypes, flash_attention, tensor_parallel);
            a.ubatch_tokens = ubatch_tokens;
            a.split_modes = split_modes;
            SweepPoints p;
            p.model = to_vector(model, "model");
            p.quant = to_vector(quant, "quant");
            p.device = to_vector(device, "device");
            p.engine = to_vector(engine, "engine");
            p.kv_dtype = to_vector(kv_dtype, "kv_dtype");
            p.flash_attention = to_vector(flash, "flash_attention");
            p.tensor_parallel = to_vector(tp, "tensor_parallel");
            p.batch = to_vector(batch, "batch");
            p.prompt_tokens = to_vector(prompt_tokens, "prompt_tokens");
            p.gen_tokens = to_vector(gen_tokens, "gen_tokens");
            p.ubatch = to_vector(ubatch, "ubatch");
            p.context_tokens = to_vector(context_tokens, "context_tokens");
            p.split = to_vector(split, "split");
            std::vector<py::object> hold;  // released with the GIL held, after the sweep
            const SweepOptions options = options_for(a, threads, skip_invalid, hold);
            SweepTable t;
            {
                py::gil_scoped_release release;
                t = sweep(a, p, options);
            }
            return table_dict(std::move(t));
        },
        py::arg("models"), py::arg("quants"), py::arg("devices"), py::arg("engines"), py::arg("kv_dtypes"),
        py::arg("flash_attention"), py::arg("tensor_parallel"), py::arg("model"), py::arg("quant"), py::arg("device"),
        py::arg("engine"), py::arg("kv_dtype"), py::arg("flash"), py::arg("tp"), py::arg("batch"),
        py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("threads") = 0, py::arg("skip_invalid") = false,
        py::arg("ubatch_tokens") = std::vector<double>{0.0},
        py::arg("ubatch") = py::array_t<std::uint32_t>(0), py::arg("context_tokens") = py::array_t<double>(0),
        py::arg("split_modes") = std::vector<std::string>{""}, py::arg("split") = py::array_t<std::uint32_t>(0),
        "Estimates of explicit points (indices into the configuration lists), as sweep() returns them");

    m.def(
        "max_batch_for_latency",
        [](const EstimatePlan& plan, double prompt_tokens, double gen_tokens, double tpot_s, double ttft_s) {
            BatchAnswer a;
            {
                py::gil_scoped_release release;
                a = max_batch_for_latency(plan, prompt_tokens, gen_tokens, tpot_s, ttft_s);
            }
            return batch_answer_dict(plan, a);
        },
        py::arg("plan"), py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("tpot_s"), py::arg("ttft_s") = 0.0,
        "The largest batch that fits and meets the latency targets (<= 0: none), by bisection");

    m.def(
        "min_batch_for_throughput",
        [](const EstimatePlan& plan, double prompt_tokens, double gen_tokens, double tokens_per_s, double tpot_s,
           double ttft_s) {
            ThroughputAnswer a;
            {
                py::gil_scoped_release release;
                a = min_batch_for_throughput(plan, prompt_tokens, gen_tokens, tokens_per_s, tpot_s, ttft_s);
            }
            py::dict d;
            d["feasible"] = a.feasible;
            d["batch"] = a.batch;
            d["reason"] = a.reason;
            d["at"] = row_dict(plan, a.at);
            d["capacity"] = batch_answer_dict(plan, a.capacity);
            d["evaluations"] = a.evaluations;
            return d;
        },
        py::arg("plan"), py::arg("prompt_tokens"), py::arg("gen_tokens"), py::arg("tokens_per_s"), py::arg("tpot_s") = 0.0,
        py::arg("ttft_s") = 0.0,
        "The smallest batch whose aggregate decode tokens/s reaches the target within the latency targets, by bisection");
}
