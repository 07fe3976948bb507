#include "roofline/plan.hpp"

#include "plan_impl.hpp"
#include "roofline/errors.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/serving.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>

namespace roofline {

// -------------------------------------------------------------------------------------------------------------
// Times of ops and collectives

OpTimes times_of(const OpCost& op, const Device& device) {
    OpTimes t;
    evaluate_both(op, device, t.derated, t.ideal);
    t.flops = op.flops();
    t.bytes = op.bytes();
    return t;
}

// The ways of an all-reduce (plan_impl.hpp). Bytes each rank moves of a message of S bytes: ring and two-shot
// 2(N−1)/N · S (a reduce-scatter then an all-gather), one-shot (N−1) · S (every peer's partial sum read). Latency:
// ring 2(N−1) steps, one-shot 2 (signal, wait), two-shot 4; the library's protocols base + 2(N−1) steps of their
// link kind's latency (NCCL's tuner model), over the measured all-reduce bus bandwidth where the links have one.
std::vector<AllReduceWay> all_reduce_ways(const EngineBackend& e, const Interconnect& link, double tensor_parallel,
                                          double bytes_per_row, double hidden) {
    const double n = tensor_parallel;
    const double ring_share = 2.0 * (n - 1) / n;
    // the pure roofline: a ring's bytes over the links' datasheet bandwidth, or over the measured bus bandwidth
    // where that is higher (NVLink SHARP reduces in the switch, moving fewer bytes per rank than a ring)
    const double ideal_per_row = ring_share * bytes_per_row / std::max(link.bandwidth_Bps, link.all_reduce_busbw_Bps);
    std::vector<AllReduceWay> ways;
    const bool library = !e.collective_protocols.empty();
    if (e.all_reduce != AllReduce::ring || !library) {
        AllReduceWay w;
        w.name = std::string(all_reduce_name(e.all_reduce));
        const double steps = e.all_reduce == AllReduce::ring ? 2.0 * (n - 1) : e.all_reduce == AllReduce::one_shot ? 2.0 : 4.0;
        w.latency_s = steps * e.collective_step_latency_s;
        w.per_row_s = (e.all_reduce == AllReduce::one_shot ? n - 1 : ring_share) * bytes_per_row / link.bandwidth_Bps;
        w.ideal_per_row_s = w.per_row_s;
        if (library) {  // the custom kernel within its workspace, on a GPU fabric, for the hidden sizes it takes
            double max_bytes = e.custom_all_reduce_max_bytes.empty() ? std::numeric_limits<double>::infinity() : 0.0;
            for (const auto& [ranks, bytes] : e.custom_all_reduce_max_bytes)
                if (n <= ranks) {
                    max_bytes = bytes;
                    break;
                }
            if ((link.link != "nvlink" && n > 2) || (e.custom_all_reduce_max_hidden > 0 && hidden > e.custom_all_reduce_max_hidden))
                max_bytes = 0;
            w.max_rows = bytes_per_row > 0 ? max_bytes / bytes_per_row : std::numeric_limits<double>::infinity();
        }
        if (w.max_rows > 0) ways.push_back(w);
    }
    if (!library) return ways;
    const std::size_t kind = link.link == "pcie" ? 1 : link.link == "network" ? 2 : 0;
    const double busbw = link.all_reduce_busbw_Bps > 0 ? link.all_reduce_busbw_Bps : link.bandwidth_Bps;
    for (const CollectiveProtocol& p : e.collective_protocols) {
        AllReduceWay w;
        w.name = p.name;
        w.library = true;
        w.latency_s = p.base_latency_s + 2.0 * (n - 1) * p.step_latency_s[kind];
        w.per_row_s = ring_share * bytes_per_row / (busbw * p.bandwidth_share);
        w.ideal_per_row_s = ideal_per_row;
        ways.push_back(w);
    }
    return ways;
}

const std::vector<std::string>& split_mode_names() {
    static const std::vector<std::string> names{"none", "layer", "tensor"};  // Impl::split_code's order
    return names;
}

std::size_t all_reduce_way(const std::vector<AllReduceWay>& ways, double rows) {
    const std::size_t library_from = ways.empty() || ways[0].library ? 0 : 1;  // at most one custom way, first
    return pick_all_reduce_way(ways.size(), library_from, ways.empty() ? 0.0 : ways[0].max_rows, rows,
                               [&](std::size_t i) { return ways[i].latency_s + rows * ways[i].per_row_s; });
}

namespace {

// The links tensor parallelism runs over (NVLink within its domain, else the network); nullptr for one rank.
const Interconnect* interconnect_for(const Device& device, int tp) {
    if (tp <= 1) return nullptr;
    const Interconnect* link = device.interconnect_for(tp);
    if (!link || link->bandwidth_Bps <= 0)
        throw InvalidArgument("tensor_parallel " + std::to_string(tp) + " needs an interconnect joining " +
                              std::to_string(tp) + " devices; device '" + device.id + "' lists none");
    return link;
}

// Bytes one of `tp` tensor-parallel ranks holds of `total`, of which `replicated` every rank holds whole.
double rank_bytes(double total, double replicated, double tp) {
    return tp > 1 ? (total - replicated) / tp + replicated : total;
}

void check_tensor_parallel(int tp) {
    if (tp < 1 || tp > 1024) throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(tp));
}

// The split mode a configuration runs under on `backend`: "none" on one device, else the one asked for (which the
// engine must list in split_modes) or the engine's default (the first it lists).
std::string resolve_split_mode(const PlanConfig& c, const EngineBackend& backend, const std::string& engine_id) {
    const std::vector<std::string>& modes = backend.split_modes;
    auto listed = [&] {
        std::string s;
        for (const std::string& m : modes) s += (s.empty() ? "\"" : ", \"") + m + "\"";
        return s;
    };
    if (!c.split_mode.empty() && c.split_mode != "layer" && c.split_mode != "tensor" && c.split_mode != "none")
        throw InvalidArgument("split_mode must be \"layer\", \"tensor\" or \"none\" (one device), got \"" + c.split_mode + "\"");
    if (c.tensor_parallel <= 1) return "none";
    if (c.split_mode == "none")
        throw InvalidArgument("split_mode \"none\" is one device, but tensor_parallel is " + std::to_string(c.tensor_parallel));
    if (c.split_mode.empty()) return modes.empty() ? std::string("tensor") : modes.front();
    if (std::find(modes.begin(), modes.end(), c.split_mode) == modes.end())
        throw InvalidArgument("engine '" + engine_id + "' (" + backend.backend + ") does not split a model by \"" + c.split_mode +
                              "\"; it splits by " + listed() + " (engine_db split_modes)");
    return c.split_mode;
}

// Ideal compute − DRAM seconds: > 0 where an op is compute-bound against DRAM (no serial part when ideal).
inline double ideal_balance(const OpTimes& t) { return t.ideal.matrix_s + t.ideal.vector_s - t.ideal.memory_s[0]; }

std::string op_bound(const OpTimes& t, double util, bool collective) {
    const Bound b = t.derated.bound(util);
    if (collective && (b == Bound::dram || b == Bound::l2 || b == Bound::sram)) return "interconnect";
    return bound_name(b);
}

// A phase being summed: every component × count, and the timing rule of each op × count.
struct Acc {
    PhaseSums p;
    void add(double count, const OpTimes& t, double util) {
        const CeilingTimes& d = t.derated;
        p.seconds += count * d.total(util);
        p.ideal_seconds += count * t.ideal.total();
        CeilingTimes& s = p.derated;  // Σ count × components, matrix compute ÷ utilization
        s.matrix_s += count * (d.matrix_s / util);
        s.vector_s += count * d.vector_s;
        s.serial_s += count * d.serial_s;
        for (std::size_t i = 0; i < kNumLevels; ++i) s.memory_s[i] += count * d.memory_s[i];
        s.overhead_s += count * d.overhead_s;
        p.flops += count * t.flops;
        p.bytes += count * t.bytes;
    }
};

// Breakdown rows of one phase, merged by op name (the first op of a name gives the row its bound).
struct RowSink {
    std::vector<BreakdownRow>* rows;
    std::vector<long> index;  // name id -> row position, -1 before the first
    const char* phase;
    RowSink(std::vector<BreakdownRow>* r, std::size_t names, const char* ph) : rows(r), index(r ? names : 0, -1), phase(ph) {}
    void add(std::uint32_t name, const std::vector<std::string>& names, double instances, double flops, double bytes,
             double seconds, const std::function<std::string()>& bound,
             const std::function<std::string()>& compute = nullptr) {
        if (!rows) return;
        long& at = index[name];
        if (at >= 0) {
            BreakdownRow& r = (*rows)[static_cast<std::size_t>(at)];
            r.count += instances;
            r.flops += flops;
            r.bytes += bytes;
            r.seconds += seconds;
            return;
        }
        at = static_cast<long>(rows->size());
        rows->push_back({phase, names[name], instances, flops, bytes, seconds, bound(), compute ? compute() : std::string()});
    }
};

// The path a linear slot's `rows` rows run (linear_path, on the plan's copy of the thresholds).
inline std::size_t plan_path(const PlanSlot& s, double rows) {
    std::size_t k = 0;
    while (k + 1 < s.paths.size() && rows > s.paths[k].max_rows) ++k;
    return k;
}

// BreakdownRow::compute of a slot at `rows` rows: the format and unit of the linear kernel those rows run.
std::function<std::string()> slot_compute(const PlanSlot& s, double rows) {
    return [&s, rows] {
        if ((s.op->kind != SlotKind::linear && s.op->kind != SlotKind::moe) || s.paths.empty() ||
            s.paths.size() != s.op->paths.size())
            return std::string();
        const std::size_t i = plan_path(s, rows);
        return std::string(dtype_name(s.paths[i].compute)) + " " + std::string(unit_name(s.op->paths[i].unit));
    };
}

// Utilizations of matrix paths of linear slots, computed once per group and rows within one phase.
struct UtilCache {
    static constexpr std::size_t kGroups = 16;
    std::array<double, kGroups> rows{};
    std::array<ops::TileUse, kGroups> use{};
    UtilCache() { rows.fill(-1); }
    ops::TileUse get(const PlanSlot& s, const PlanSlot::Path& p, std::size_t path, const PhaseOptions& options, double r) {
        const LinearPath& lp = s.op->paths[path];
        if (p.group >= kGroups) return linear_tile_use(*s.op, options, r, lp, p.occupancy);
        if (rows[p.group] != r) {
            rows[p.group] = r;
            use[p.group] = linear_tile_use(*s.op, options, r, lp, p.occupancy);
        }
        return use[p.group];
    }
};

// The path of an all_reduce slot at `rows` rows: its custom kernel within its rows, else the library's protocol of
// least time (all_reduce_way over the plan's paths).
inline std::size_t all_reduce_path(const PlanSlot& s, double rows) {
    return pick_all_reduce_way(s.paths.size(), s.library_from, s.paths[0].max_rows, rows, [&](std::size_t i) {
        return s.paths[i].base.derated.memory_s[0] + rows * s.paths[i].per_row.derated.memory_s[0];
    });
}

// A rows slot's way at `rows` (it has two: in L2 up to paths[0].max_rows, then DRAM).
inline std::size_t rows_way(const PlanSlot& s, double rows) { return rows <= s.paths[0].max_rows ? 0 : 1; }
// The way a slot that switches ways with its rows (an all-reduce, a rows slot with an L2 way) takes at `rows`.
inline std::size_t way_at(const PlanSlot& s, double rows) {
    return s.op->kind == SlotKind::rows ? rows_way(s, rows) : all_reduce_path(s, rows);
}

// A tiled kernel's tiles scale its ALU work per multiply-add as slot_cost times it (alu_tile_factor): a matrix path's
// vector seconds per row are that work alone (its dequantization is per weight), so `rows` of them × the factor here;
// the matrix seconds ÷ the utilization returned, where it is passed on.
inline double use_tiles(OpTimes& t, const LinearPath& lp, const ops::TileUse& u, const OpTimes& per_row, double rows) {
    t.derated.vector_s += rows * per_row.derated.vector_s * (alu_tile_factor(lp, u) - 1);
    return u.utilization();
}

// A moe slot's path `k` over `routed` rows and `active` experts: its times into `t`, its matrix utilization returned.
inline double moe_path_times(OpTimes& t, const PlanSlot& s, std::size_t k, const PhaseOptions& options, double routed,
                             double active) {
    const PlanSlot::Path& p = s.paths[k];
    set_affine(t, p.base, routed, p.per_row, active, p.pass);
    return p.matrix ? use_tiles(t, s.op->paths[k], moe_tile_use(*s.op, options, routed, active, s.op->paths[k], p.occupancy),
                                p.per_row, routed)
                    : 1.0;
}

// A slot other than attention at `rows` rows; `util` gets the utilization its matrix compute is divided by (its ALU
// work is scaled by alu_tile_factor already).
inline void slot_times(OpTimes& t, const PlanSlot& s, const PhaseOptions& options, double rows, double& util, UtilCache& cache) {
    util = 1;
    switch (s.op->kind) {
        case SlotKind::linear: {
            const std::size_t k = plan_path(s, rows);
            const PlanSlot::Path& p = s.paths[k];
            const double passes = p.dequant_every_rows > 0 ? std::ceil(rows / p.dequant_every_rows) - 1 : 0.0;
            set_affine(t, p.base, rows, p.per_row, passes, p.pass);  // linear_extra_dequant_passes
            if (p.matrix) util = use_tiles(t, s.op->paths[k], cache.get(s, p, k, options, rows), p.per_row, rows);
            break;
        }
        case SlotKind::moe: {
            util = moe_path_times(t, s, plan_path(s, rows), options, rows * s.op->top_k,
                                  ops::expected_active_experts(s.op->experts, s.op->top_k, rows));
            break;
        }
        case SlotKind::all_reduce: {
            const PlanSlot::Path& p = s.paths[all_reduce_path(s, rows)];
            set_affine(t, p.base, rows, p.per_row);
            break;
        }
        default:  // rows: its L2 or DRAM way, where it has both
            if (s.paths.empty()) {
                set_affine(t, s.base, rows, s.per_row);
            } else {
                const PlanSlot::Path& p = s.paths[rows_way(s, rows)];
                set_affine(t, p.base, rows, p.per_row);
            }
            break;
    }
    if (merged_away(*s.op, rows)) t.derated.overhead_s = 0;  // its kernels are the mat-vec's before it
}

inline OpTimes decode_attention_times(const PlanSlot& s, double batch, double context) {
    OpTimes per_seq = s.per_row;
    per_seq.axpy(context, s.extra);
    OpTimes t = s.base;
    return t.axpy(batch, per_seq);
}

// Decode attention of one slot over contexts c0..c1 in closed form: its components are affine in the context up to
// the slot's window and constant beyond it, so each segment is sum_of_totals of an affine sequence.
PhaseSums attention_sum(const PlanSlot& s, double batch, double c0, double c1) {
    PhaseSums r;
    const double w = s.op->window;
    struct Segment {
        double from, to;
        bool grows;
    };
    std::array<Segment, 2> segs{};
    std::size_t nseg = 0;
    if (w > 0 && w < c0) {
        segs[nseg++] = {c0, c1, false};
    } else if (w > 0 && w < c1) {
        segs[nseg++] = {c0, w, true};
        segs[nseg++] = {w + 1, c1, false};
    } else {
        segs[nseg++] = {c0, c1, true};
    }
    for (std::size_t g = 0; g < nseg; ++g) {
        const Segment& seg = segs[g];
        const double m = seg.to - seg.from + 1;
        const double arith = m * (m - 1) / 2;  // Σ x for x = 0..m-1
        const OpTimes first = decode_attention_times(s, batch, seg.grows ? seg.from : w);
        OpTimes step;  // per step: batch × per_ctx while the context grows, nothing beyond the window
        if (seg.grows) step.axpy(batch, s.extra);
        step.derated.overhead_s = step.ideal.overhead_s = 0;  // one launch per step whatever the context
        r.seconds += sum_of_totals(first.derated, step.derated, m);
        r.ideal_seconds += sum_of_totals(first.ideal, step.ideal, m);
        r.derated.axpy(m, first.derated).axpy(arith, step.derated);
        r.flops += m * first.flops + step.flops * arith;
        r.bytes += m * first.bytes + step.bytes * arith;
    }
    return r;
}

// The envelope at `rows`: derated and ideal time of its slots, and their components, added to a phase.
inline void add_envelope(Acc& acc, const Envelope& env, double rows) {
    if (env.x.empty()) return;
    const auto k = static_cast<std::size_t>(std::upper_bound(env.x.begin(), env.x.end(), rows) - env.x.begin());
    const std::array<double, 4>& l = env.lines[k == 0 ? 0 : k - 1];
    acc.p.seconds += l[0] + l[1] * rows;
    acc.p.ideal_seconds += l[2] + l[3] * rows;
    OpTimes t = affine(env.base, rows, env.per_row);
    if (!env.switching.empty()) {
        const auto& [b, r] = env.switching[k == 0 ? 0 : k - 1];
        t.axpy(1.0, affine(b, rows, r));
    }
    acc.p.derated += t.derated;
    acc.p.flops += t.flops;
    acc.p.bytes += t.bytes;
    if (rows == 1 && env.fused_one_row_derated > 0) {  // the epilogues run inside their mat-vecs
        acc.p.seconds -= env.fused_one_row_derated;
        acc.p.ideal_seconds -= env.fused_one_row_ideal;
        acc.p.derated -= env.fused_one_row.derated;
        acc.p.flops -= env.fused_one_row.flops;
        acc.p.bytes -= env.fused_one_row.bytes;
    }
}
inline bool in_envelope(const OpSlot& op) { return op.kind == SlotKind::rows || op.kind == SlotKind::all_reduce; }

// The ops a slot's times are taken from.
std::vector<OpCost> probes_of(const OpSlot& op, const PhaseOptions& o) {
    switch (op.kind) {
        case SlotKind::rows:  // 0 and 1 rows
            return {slot_cost(op, o, 0, 1, 0), slot_cost(op, o, 1, 1, 0)};
        case SlotKind::all_reduce:  // timed from bytes_per_row on the device's interconnect
            return {};
        case SlotKind::linear: {  // per path: 0 and 1 rows, and one more dequantization
            std::vector<OpCost> p;
            for (const LinearPath& lp : op.paths) {
                p.push_back(linear_gemm(op, o, 0, lp));
                p.push_back(linear_gemm(op, o, 1, lp));
                // a further dequantization pass, for kernels that dequantize per block of rows (else never used)
                p.push_back(linear_extra_dequant_passes(op, lp, 2 * lp.dequant_every_rows) > 0 ? linear_dequant_pass(op, lp) : OpCost{});
            }
            return p;
        }
        case SlotKind::moe: {
            // per kernel path, one expert picked by every token: 0 tokens route nothing; 1 token 1 row to 1 active
            // expert, 2 tokens 2 rows to 1
            OpSlot one = op;
            one.experts = 1;
            one.top_k = 1;
            std::vector<OpCost> p;
            p.reserve(3 * op.paths.size());
            for (const LinearPath& lp : op.paths)
                for (double rows : {0.0, 1.0, 2.0}) p.push_back(moe_path_gemm(one, o, rows, lp));
            return p;
        }
        case SlotKind::attention: {
            OpSlot full = op;  // no sequence; one sequence at contexts 1 and 2 (inside any window)
            full.window = 0;
            return {slot_cost(full, o, 0, 1, 0), slot_cost(full, o, 1, 1, 0), slot_cost(full, o, 1, 1, 1)};
        }
    }
    return {};
}

}  // namespace

PhaseBound phase_bound(const CeilingTimes& t) {
    return static_cast<PhaseBound>(static_cast<int>(t.bound()) + 1);  // Bound::none -> PhaseBound::none, ...
}

// -------------------------------------------------------------------------------------------------------------
// Structure and plan construction

const std::vector<std::string>& phase_bound_names() {
    static const std::vector<std::string> names = {"", "none", "compute", "memory:dram", "memory:l2", "memory:sram", "overhead"};
    return names;
}

void EstimatePlan::check_point(double batch, double prompt, double gen, double context) {
    // Upper bounds far beyond any deployment, low enough that the ops of any catalogued model stay within
    // kMaxOpCount and the estimate's searches stay bounded.
    constexpr double kMaxBatch = 1 << 20, kMaxTokens = 1 << 30;
    check_count("batch", batch);
    if (batch < 1) throw InvalidArgument("batch must be >= 1, got " + std::to_string(batch));
    if (batch > kMaxBatch) throw InvalidArgument("batch must be within [1, 1048576 = 2^20], got " + std::to_string(batch));
    check_count("prompt_tokens", prompt);
    check_count("gen_tokens", gen);
    check_count("context_tokens", context);
    if (prompt + gen < 1) throw InvalidArgument("prompt_tokens + gen_tokens must be >= 1 (nothing to estimate), got 0");
    if (context + prompt + gen > kMaxTokens)
        throw InvalidArgument("context_tokens + prompt_tokens + gen_tokens (the context) must be at most 1073741824 = 2^30, got " +
                              std::to_string(context) + " + " + std::to_string(prompt) + " + " + std::to_string(gen));
}

std::shared_ptr<const PlanStructure> make_structure(const Model& model, const PlanConfig& config, const std::string& backend,
                                                    const std::vector<TensorFormat>* formats) {
    check_tensor_parallel(config.tensor_parallel);
    check_count("ubatch_tokens", config.ubatch_tokens);  // 0: the engine's micro-batch
    auto st = std::make_shared<PlanStructure>();
    PlanStructure& s = *st;
    s.config = config;
    s.engine = config.engine_object ? config.engine_object : engine(config.engine);
    s.backend = s.engine->backend(backend);
    s.config.engine = s.engine->id;
    if (config.flash_attention_from_engine) s.config.flash_attention = s.backend.flash_attention_default;
    s.config.split_mode = resolve_split_mode(config, s.backend, s.engine->id);
    const bool layers = s.config.split_mode == "layer";
    if (layers && config.tensor_parallel > model.arch.n_layer)
        throw InvalidArgument("tensor_parallel " + std::to_string(config.tensor_parallel) + " devices split by layers need at least as many layers; model '" +
                              model.arch.id + "' has " + std::to_string(model.arch.n_layer) + " (split_mode \"tensor\" splits each layer)");
    s.options = phase_options(s.backend, s.engine->id, parse_kv_format(config.kv_dtype), s.config.flash_attention,
                              layers ? 1 : config.tensor_parallel);
    s.options.pipeline_stages = layers ? config.tensor_parallel : 1;
    std::vector<TensorFormat> own;
    if (formats) {
        if (formats->size() != model.tensors.size())
            throw InvalidArgument("estimate plan: one format per weight tensor is needed (" + std::to_string(model.tensors.size()) +
                                  "), got " + std::to_string(formats->size()));
    } else {
        own = estimate_tensor_formats(model, s.engine->quant_for(config.quant));
    }
    const std::vector<TensorFormat>& f = formats ? *formats : own;
    {  // matrices: norms and biases are stored as the engine likes; each distinct format checked once
        std::vector<const std::string*> checked;
        for (std::size_t i = 0; i < f.size(); ++i) {
            if (model.tensors[i].shape.size() < 2) continue;
            const std::string& name = f[i].format.name;
            if (std::any_of(checked.begin(), checked.end(), [&](const std::string* c) { return *c == name; })) continue;
            s.engine->check_runs(f[i].format, config.quant);
            checked.push_back(&name);
        }
    }
    s.model_id = model.arch.id;
    s.arch = model.arch;
    s.kv_layout = KvLayout::of(model.arch);
    s.parameters = model.parameters();
    for (std::size_t i = 0; i < f.size(); ++i) {
        const bool replicated = replicated_under_tensor_parallel(model.tensors[i], s.options);
        s.weight_bytes += f[i].bytes;
        if (replicated) s.replicated_bytes += f[i].bytes;
        if (const std::string& r = model.tensors[i].role; r == "token_embd" || r == "output") {
            s.vocab_table_bytes += f[i].bytes;
            if (replicated) s.vocab_table_replicated_bytes += f[i].bytes;
        }
    }
    s.slots = forward_slots(model, f, s.options);
    for (const OpSlot& op : s.slots) {
        const auto found = std::find(s.names.begin(), s.names.end(), op.name);
        s.slot_name.push_back(static_cast<std::uint32_t>(found - s.names.begin()));
        if (found == s.names.end()) s.names.push_back(op.name);
    }
    for (const OpSlot& op : s.slots) s.probes.push_back(probes_of(op, s.options));
    return st;
}

std::shared_ptr<const PlanStructure> structure_for_backend(const PlanStructure& sibling, const std::string& backend) {
    auto st = std::make_shared<PlanStructure>(sibling);
    PlanStructure& s = *st;
    s.backend = s.engine->backend(backend);
    if (s.config.flash_attention_from_engine) s.config.flash_attention = s.backend.flash_attention_default;
    if (resolve_split_mode(sibling.config, s.backend, s.engine->id) != sibling.config.split_mode) return nullptr;
    s.options = phase_options(s.backend, s.engine->id, sibling.options.kv, s.config.flash_attention,
                              sibling.options.tensor_parallel);
    s.options.pipeline_stages = sibling.options.pipeline_stages;
    if (!same_slots_under(s.options, sibling.options)) return nullptr;
    assign_paths(s.slots, s.options);
    s.probes.clear();
    for (const OpSlot& op : s.slots) s.probes.push_back(probes_of(op, s.options));
    return st;
}

std::shared_ptr<const Device> device_for_engine(const Device& device, const EngineBackend& backend, bool layer_split) {
    auto d = std::make_shared<Device>(device);
    d->efficiency.launch_overhead_s *=
        backend.kernel_fixed_cost_scale + (layer_split ? backend.layer_split_kernel_fixed_cost_add : 0.0);
    // an engine's kernels may reach more of the bandwidth than the device's STREAM-like microbenchmark did, never
    // more than the datasheet's
    d->efficiency.dram_bandwidth_fraction = std::min(1.0, d->efficiency.dram_bandwidth_fraction * backend.bandwidth_fraction);
    return d;
}

std::shared_ptr<const Device> device_for_engine(const Device& device, const PlanStructure& structure) {
    return device_for_engine(device, structure.backend, structure.options.pipeline_stages > 1);
}

EstimatePlan::Impl::Impl(std::shared_ptr<const Device> engine_device, std::shared_ptr<const PlanStructure> st_ptr) {
    if (!st_ptr) throw InvalidArgument("estimate plan: no structure");
    if (!engine_device) throw InvalidArgument("estimate plan: no device");
    const PlanStructure& st = *st_ptr;
    stages = st.options.pipeline_stages;
    const auto& split_names = split_mode_names();
    split_code = static_cast<std::uint8_t>(std::find(split_names.begin(), split_names.end(), st.config.split_mode) -
                                           split_names.begin());
    const Device& dev = *engine_device;
    options = st.options;
    with_device(options, dev);
    ubatch = st.config.ubatch_tokens > 0 ? st.config.ubatch_tokens : st.backend.prefill_ubatch_tokens;
    const Interconnect* tp_link = interconnect_for(dev, st.config.tensor_parallel);
    device = std::move(engine_device);
    device_id = dev.id;
    structure = std::move(st_ptr);
    const double tp = options.tensor_parallel;
    device_weight_bytes = rank_bytes(st.weight_bytes, st.replicated_bytes, tp);
    if (stages > 1) {  // the busiest device of a layer split: its share of the layers, and the vocabulary tables
        layer_share = std::ceil(st.arch.n_layer / stages) / std::max(1.0, static_cast<double>(st.arch.n_layer));
        device_weight_bytes = (st.weight_bytes - st.vocab_table_bytes) * layer_share + st.vocab_table_bytes;
        pipeline_tokens = st.backend.prefill_batch_tokens;
    }
    dram_bandwidth_Bps = dev.bandwidth(Level::dram);
    capacity_bytes = dev.capacity(Level::dram);
    for (const OpSlot& s : st.slots) {
        if (!runs_in(s.phase, 1)) continue;  // a decode step's weights
        const double bytes = s.count * s.n * s.k * s.groups * s.format.bytes_per_element();
        if (s.kind == SlotKind::linear) step_dense_weight_bytes += bytes;
        if (s.kind == SlotKind::moe) step_expert_weights.push_back({s.experts, s.top_k, bytes});
    }
    {
        const PredictionInterval& pi = st.backend.interval;
        auto covered = [](const std::vector<std::string>& names, const std::string& x) {
            auto same = [&](const std::string& n) {
                return n.size() == x.size() && std::equal(n.begin(), n.end(), x.begin(), [](char p, char q) {
                           return std::tolower(static_cast<unsigned char>(p)) == std::tolower(static_cast<unsigned char>(q));
                       });
            };
            return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n == "*" || same(n); });
        };
        double w = 1;
        if (!covered(pi.device_families, dev.family)) w *= pi.widen;
        if (!covered(pi.weight_formats, st.config.quant)) w *= pi.widen;
        if (pi.max_devices > 0 && st.config.tensor_parallel > pi.max_devices) w *= pi.widen;  // more devices than measured
        decode_lo = std::pow(pi.decode_lo, w);
        decode_hi = std::pow(pi.decode_hi, w);
        prefill_lo = std::pow(pi.prefill_lo, w);
        prefill_hi = std::pow(pi.prefill_hi, w);
    }

    // Flash attention's tiles must fit the device's SRAM: checked here, not at the first prefill.
    if (options.attention == ops::AttentionKind::flash)
        for (const OpSlot& op : st.slots)
            if (op.kind == SlotKind::attention) {
                slot_cost(op, options, 1, 2, 0);
                break;
            }

    slots.reserve(st.slots.size());
    // utilization groups: output features, per sequence, tile, stream-K, the occupancy on this device
    std::vector<std::array<double, 9>> group_keys;
    group_keys.reserve(st.slots.size());
    for (std::size_t k = 0; k < st.slots.size(); ++k) {
        const OpSlot& op = st.slots[k];
        const std::vector<OpCost>& p = st.probes[k];
        PlanSlot s;
        s.op = &op;
        s.name = st.slot_name[k];
        // a kernel whose compute format has no matrix units here runs in its fallback format (W4A16 where FP4
        // tensor cores are missing); without one, timing it raises the device's NotFound naming what it has
        std::vector<std::pair<DType, DType>> retag;
        if (op.kind == SlotKind::linear || op.kind == SlotKind::moe)
            for (const LinearPath& lp : op.paths) {
                if (lp.unit != Unit::matrix || !lp.runs(dev.family, op.experts)) continue;
                try {
                    dev.execution_peak(lp.compute, Unit::matrix);  // its units, or wider ones doing the same arithmetic
                    continue;
                } catch (const NotFound&) {
                }
                if (lp.has_fallback) retag.emplace_back(lp.compute, lp.fallback);  // else: the device's NotFound
            }
        auto times = [&](std::size_t i) {
            if (retag.empty()) return times_of(p[i], dev);
            OpCost c = p[i];
            for (FlopTerm& f : c.flop_terms)
                for (const auto& [from, to] : retag)
                    if (f.unit == Unit::matrix && f.format == from) f.format = to;
            return times_of(c, dev);
        };
        // a linear or moe path's kernel thresholds, unit and compute format here (its fallback where retagged); a
        // kernel the engine does not run on this device's family or for this many experts takes no rows (plan_path
        // passes over it) and has no times
        auto kernel_path = [&retag, &dev, &op](const LinearPath& lp) {
            PlanSlot::Path path;
            path.max_rows = lp.runs(dev.family, op.experts) ? lp.max_rows : -std::numeric_limits<double>::infinity();
            path.matrix = lp.unit == Unit::matrix;
            path.compute = lp.compute;
            if (path.matrix) path.occupancy = lp.occupancy_on(dev.family);
            for (const auto& [from, to] : retag)
                if (path.matrix && lp.compute == from) path.compute = to;
            return path;
        };
        // the probes count a kernel's ALU work as compiled for the architecture it was counted on (the structure
        // knows no device); this family's alu_ops_scale applies here. A matrix path's vector seconds per row are
        // that work alone (the loader allows the scale on matrix kernels only), so scaling them is exact.
        auto scale_alu = [](OpTimes& per_row, const PlanSlot::Path& path) {
            if (!path.matrix) return;
            per_row.derated.vector_s *= path.occupancy.alu_ops_scale;
            per_row.ideal.vector_s *= path.occupancy.alu_ops_scale;
        };
        switch (op.kind) {
            case SlotKind::rows:
                s.base = times(0);
                s.per_row = times(1) - s.base;
                // activations that fit in L2 pass through it (slot_cost's from_l2 at a point): a way with no DRAM
                // traffic up to the rows whose bytes fill the L2 working set, then the DRAM way (s.base, s.per_row,
                // which compute_bound_batch keeps: a decode batch's activations are rarely what bounds it)
                if (passes_through_l2(op) && options.l2_reuse_bytes > 0) {
                    const double b0 = p[0].bytes(Level::dram), b1 = p[1].bytes(Level::dram) - b0;
                    const double last = b1 > 0 ? (options.l2_reuse_bytes - b0) / b1 : std::numeric_limits<double>::infinity();
                    if (last > 0) {
                        OpCost c0 = p[0], c1 = p[1];
                        from_l2(c0, std::numeric_limits<double>::infinity());
                        from_l2(c1, std::numeric_limits<double>::infinity());
                        PlanSlot::Path in_l2, in_dram;
                        in_l2.base = times_of(c0, dev);
                        in_l2.per_row = times_of(c1, dev) - in_l2.base;
                        in_l2.max_rows = last;
                        in_dram.base = s.base;
                        in_dram.per_row = s.per_row;
                        in_dram.max_rows = std::numeric_limits<double>::infinity();
                        s.paths = {in_l2, in_dram};
                    }
                }
                break;
            case SlotKind::all_reduce: {
                if (op.name == "layer_handoff") {  // a copy to the next device: its latency, its bytes over the link
                    PlanSlot::Path path;
                    path.max_rows = std::numeric_limits<double>::infinity();
                    path.base.derated.memory_s[0] = st.backend.layer_handoff_latency_s;
                    path.per_row.derated.memory_s[0] = op.bytes_per_row / tp_link->bandwidth_Bps;
                    path.per_row.ideal.memory_s[0] = path.per_row.derated.memory_s[0];
                    s.paths.push_back(path);
                    s.library_from = 1;
                    s.base = path.base;
                    s.per_row = path.per_row;
                    break;
                }
                // one kernel: its launch, then the way's latency and transfer over the links
                const std::vector<AllReduceWay> ways = all_reduce_ways(st.backend, *tp_link, tp, op.bytes_per_row, st.arch.hidden);
                s.library_from = static_cast<std::uint32_t>(ways.size());
                for (const AllReduceWay& w : ways) {
                    if (w.library && s.library_from == ways.size()) s.library_from = static_cast<std::uint32_t>(s.paths.size());
                    PlanSlot::Path path;
                    path.max_rows = w.max_rows;
                    path.base.derated.overhead_s = dev.efficiency.launch_overhead_s;
                    path.base.derated.memory_s[0] = w.latency_s;
                    path.per_row.derated.memory_s[0] = w.per_row_s;
                    path.per_row.ideal.memory_s[0] = w.ideal_per_row_s;
                    s.paths.push_back(path);
                }
                s.base = s.paths[0].base;  // the first way's (ideal_balance: the ideal is the same way's)
                s.per_row = s.paths[0].per_row;
                break;
            }
            case SlotKind::linear:
                s.paths.reserve(op.paths.size());
                for (std::size_t i = 0; i < op.paths.size(); ++i) {
                    const LinearPath& lp = op.paths[i];
                    PlanSlot::Path path = kernel_path(lp);
                    if (!lp.runs(dev.family, op.experts)) {
                        s.paths.push_back(path);
                        continue;
                    }
                    // linear_extra_dequant_passes(op, lp, rows) = ceil(rows / every) - 1 where it is not 0
                    path.dequant_every_rows = linear_extra_dequant_passes(op, lp, 2 * lp.dequant_every_rows) > 0 ? lp.dequant_every_rows : 0.0;
                    path.base = times(3 * i);
                    path.per_row = times(3 * i + 1) - path.base;
                    scale_alu(path.per_row, path);
                    if (!p[3 * i + 2].flop_terms.empty()) path.pass = times(3 * i + 2);
                    // the utilization group: matrix paths with the same output features, tile and rows
                    std::uint32_t g = 0;
                    if (lp.unit == Unit::matrix) {
                        const KernelOccupancy& o = path.occupancy;
                        const std::array<double, 9> key{op.n * op.groups, op.per_sequence ? 1.0 : 0.0, lp.tile_m, lp.tile_n,
                                                        o.stream_k ? 1.0 : 0.0, o.efficiency, o.tiles_per_unit,
                                                        o.split_k ? 1.0 : 0.0, lp.row_tile_step};
                        while (g < group_keys.size() && group_keys[g] != key) ++g;
                        if (g == group_keys.size()) group_keys.push_back(key);
                        groups = static_cast<std::uint32_t>(group_keys.size());
                    }
                    path.group = g;
                    s.paths.push_back(path);
                }
                break;
            case SlotKind::moe:
                // per path: a fixed part, a part per routed row and one per active expert (the last in `pass`); the
                // slot's own base / per_row / extra are its first path's (a decode step's balance, compute_bound_batch)
                s.paths.reserve(op.paths.size());
                for (std::size_t i = 0; i < op.paths.size(); ++i) {
                    PlanSlot::Path path = kernel_path(op.paths[i]);
                    if (op.paths[i].runs(dev.family, op.experts)) {
                        path.base = times(3 * i);
                        const OpTimes t1 = times(3 * i + 1), t2 = times(3 * i + 2);
                        path.per_row = t2 - t1;
                        path.pass = (t1 - path.base) - path.per_row;
                        scale_alu(path.per_row, path);
                    }
                    s.paths.push_back(path);
                }
                {
                    const PlanSlot::Path& first = s.paths[plan_path(s, 1)];  // the first path that runs here
                    s.base = first.base;
                    s.per_row = first.per_row;
                    s.extra = first.pass;
                }
                break;
            case SlotKind::attention: {
                s.base = times(0);
                const OpTimes c1 = times(1), c2 = times(2);
                s.extra = c2 - c1;
                s.per_row = (c1 - s.base) - s.extra;
                attention.push_back(slots.size());
                break;
            }
        }
        slots.push_back(std::move(s));
    }

    // memory
    const Architecture& a = st.arch;
    act_bytes = options.activation.bytes_per_element();
    kv_token_layer_bytes = st.kv_layout.token_layer_bytes(options.kv, tp) * layer_share;
    // MLA: q and the per-head K (nope part) and V its prefill expands the latent into
    widest = std::max({a.mla() ? a.q_dim() + a.n_head * (a.qk_nope_dim() + a.v_head_dim) : a.q_dim() + 2 * a.kv_dim(), (a.mlp == MlpKind::gated ? 2.0 : 1.0) * a.ffn,
                       2.0 * a.expert_ffn * std::max(1, a.n_expert_used)});

    // compute_bound_batch: a decode step's Σ ideal (compute − DRAM) as a function of the batch
    for (const PlanSlot& s : slots) {
        if (!runs_in(s.op->phase, 1)) continue;
        const double n = s.op->count;
        switch (s.op->kind) {
            case SlotKind::rows:
            case SlotKind::all_reduce:
                cb_common0 += n * ideal_balance(s.base);
                cb_common1 += n * ideal_balance(s.per_row);
                break;
            case SlotKind::linear: {
                auto same = [&](const BalanceGroup& g) {  // the same kernel thresholds
                    if (g.max_rows.size() != s.paths.size()) return false;
                    for (std::size_t i = 0; i < s.paths.size(); ++i)
                        if (g.max_rows[i] != s.paths[i].max_rows || g.dequant_every_rows[i] != s.op->paths[i].dequant_every_rows)
                            return false;
                    return true;
                };
                auto it = std::find_if(cb_groups.begin(), cb_groups.end(), same);
                if (it == cb_groups.end()) {
                    BalanceGroup key;
                    key.max_rows.reserve(s.paths.size());
                    key.dequant_every_rows.reserve(s.paths.size());
                    for (std::size_t i = 0; i < s.paths.size(); ++i) {
                        key.max_rows.push_back(s.paths[i].max_rows);
                        key.dequant_every_rows.push_back(s.op->paths[i].dequant_every_rows);
                    }
                    key.coef.assign(key.max_rows.size(), {0, 0, 0});
                    cb_groups.push_back(key);
                    it = cb_groups.end() - 1;
                }
                for (std::size_t i = 0; i < s.paths.size(); ++i) {
                    it->coef[i][0] += n * ideal_balance(s.paths[i].base);
                    it->coef[i][1] += n * ideal_balance(s.paths[i].per_row);
                    it->coef[i][2] += n * ideal_balance(s.paths[i].pass);
                }
                break;
            }
            case SlotKind::moe: {
                cb_common0 += n * ideal_balance(s.base);
                cb_common1 += n * s.op->top_k * ideal_balance(s.per_row);
                bool merged = false;
                for (auto& e : cb_active)
                    if (e[0] == s.op->experts && e[1] == s.op->top_k) {
                        e[2] += n * ideal_balance(s.extra);
                        merged = true;
                    }
                if (!merged) cb_active.push_back({s.op->experts, s.op->top_k, n * ideal_balance(s.extra)});
                break;
            }
            case SlotKind::attention:
                cb_common0 += n * ideal_balance(s.base);
                cb_attention.push_back({s.op->window, n * ideal_balance(s.per_row), n * ideal_balance(s.extra)});
                break;
        }
    }

    // envelopes of the slots affine in their rows alone, an all-reduce switching ways with the rows included: in
    // each interval between the rows where a line overtakes another or a way stops, each slot's top racing line
    for (std::size_t g = 0; g < 2; ++g) {
        Envelope& env = envelope[g];
        std::vector<const PlanSlot*> members;
        members.reserve(slots.size());
        for (const PlanSlot& s : slots)
            if (in_envelope(*s.op) && s.op->per_sequence == (g == 1)) members.push_back(&s);
        auto switches = [](const PlanSlot& s) {
            return (s.op->kind == SlotKind::all_reduce || s.op->kind == SlotKind::rows) && s.paths.size() > 1;
        };
        // the racing lines of one way of a slot at one ceiling: overlapped compute, each memory level (a + b·rows)
        auto lines = [](const OpTimes& base, const OpTimes& per_row, std::size_t c, std::array<std::array<double, 2>, 4>& out) {
            const auto rb = (c == 0 ? base.derated : base.ideal).racing(), rr = (c == 0 ? per_row.derated : per_row.ideal).racing();
            for (std::size_t i = 0; i < 4; ++i) out[i] = {rb[i], rr[i]};
        };
        std::vector<std::pair<const OpTimes*, const OpTimes*>> w;  // (base, per_row) of each way of one slot
        auto ways = [&w](const PlanSlot& s) {
            w.clear();
            if (!s.paths.empty())
                for (const PlanSlot::Path& p : s.paths) w.emplace_back(&p.base, &p.per_row);
            else
                w.emplace_back(&s.base, &s.per_row);
        };
        std::vector<double> cuts{0};
        cuts.reserve(1 + 13 * members.size());  // a way's 6 crossings per ceiling, and a custom kernel's last row
        auto cut = [&](double a0, double b0, double a1, double b1) {
            const double db = b0 - b1;
            if (db == 0) return;
            const double x = (a1 - a0) / db;
            if (x > 0 && std::isfinite(x)) cuts.push_back(x);
        };
        std::array<std::array<double, 2>, 4> l{};
        for (const PlanSlot* s : members) {
            if (!switches(*s)) {
                env.base.axpy(s->op->count, s->base);
                env.per_row.axpy(s->op->count, s->per_row);
            }
            if (s->op->fused_at_one_row) {
                const PlanSlot::Path* at_one = switches(*s) ? &s->paths[way_at(*s, 1)] : nullptr;
                const OpTimes one = at_one ? affine(at_one->base, 1, at_one->per_row) : affine(s->base, 1, s->per_row);
                env.fused_one_row.axpy(s->op->count, one);
                env.fused_one_row_derated += s->op->count * one.derated.total();
                env.fused_one_row_ideal += s->op->count * one.ideal.total();
            }
            ways(*s);
            for (std::size_t c = 0; c < 2; ++c) {
                for (const auto& [b, r] : w) {  // where a way's own lines cross
                    lines(*b, *r, c, l);
                    for (std::size_t i = 0; i < 4; ++i)
                        for (std::size_t j = i + 1; j < 4; ++j) cut(l[i][0], l[i][1], l[j][0], l[j][1]);
                }
                for (std::size_t i = 0; i < w.size(); ++i)  // where one way's time overtakes another's
                    for (std::size_t j = i + 1; j < w.size(); ++j) {
                        const CeilingTimes& bi = c == 0 ? w[i].first->derated : w[i].first->ideal;
                        const CeilingTimes& ri = c == 0 ? w[i].second->derated : w[i].second->ideal;
                        const CeilingTimes& bj = c == 0 ? w[j].first->derated : w[j].first->ideal;
                        const CeilingTimes& rj = c == 0 ? w[j].second->derated : w[j].second->ideal;
                        cut(bi.memory_s[0] + bi.overhead_s, ri.memory_s[0], bj.memory_s[0] + bj.overhead_s, rj.memory_s[0]);
                    }
            }
            // the custom kernel's last row; the last row of a rows slot's L2 way
            if (switches(*s) && (s->library_from > 0 || s->op->kind == SlotKind::rows) && std::isfinite(s->paths[0].max_rows))
                cuts.push_back(std::nextafter(s->paths[0].max_rows, std::numeric_limits<double>::infinity()));
        }
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        env.x = cuts;
        const bool any_switching = std::any_of(members.begin(), members.end(), [&](const PlanSlot* s) { return switches(*s); });
        env.lines.reserve(cuts.size());
        if (any_switching) env.switching.reserve(cuts.size());
        for (std::size_t k = 0; k < cuts.size(); ++k) {
            // which line is on top inside the interval: look at its middle (past the last cut: one beyond it)
            const double probe = k + 1 < cuts.size() ? (cuts[k] + cuts[k + 1]) / 2 : 2 * cuts[k] + 1;
            std::array<double, 4> sum{};
            std::pair<OpTimes, OpTimes> parts;
            for (const PlanSlot* s : members) {
                const PlanSlot::Path* way = switches(*s) ? &s->paths[way_at(*s, probe)] : nullptr;
                const OpTimes& base = way ? way->base : s->base;
                const OpTimes& per_row = way ? way->per_row : s->per_row;
                if (way) {
                    parts.first.axpy(s->op->count, base);
                    parts.second.axpy(s->op->count, per_row);
                }
                for (std::size_t c = 0; c < 2; ++c) {
                    lines(base, per_row, c, l);
                    std::size_t top = 0;
                    for (std::size_t i = 1; i < 4; ++i)
                        if (l[i][0] + l[i][1] * probe > l[top][0] + l[top][1] * probe) top = i;
                    const CeilingTimes& b = c == 0 ? base.derated : base.ideal;
                    const CeilingTimes& r = c == 0 ? per_row.derated : per_row.ideal;
                    // the timing rule: the top racing line, then serial compute and overhead
                    sum[2 * c] += s->op->count * (l[top][0] + b.serial_s + b.overhead_s);
                    sum[2 * c + 1] += s->op->count * (l[top][1] + r.serial_s + r.overhead_s);
                }
            }
            env.lines.push_back(sum);
            if (any_switching) env.switching.push_back(parts);
        }
    }
}

EstimatePlan::EstimatePlan(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {
    if (!impl_) throw InvalidArgument("estimate plan: no parts");
}

EstimatePlan::EstimatePlan(const Model& model, const Device& device, const PlanConfig& config,
                           const std::vector<TensorFormat>* formats) {
    check_tensor_parallel(config.tensor_parallel);
    const std::shared_ptr<const Engine> eng = config.engine_object ? config.engine_object : engine(config.engine);
    const EngineBackend& backend = eng->on(device);
    parse_kv_format(config.kv_dtype);
    std::vector<TensorFormat> own;  // an unknown quantization is named before the interconnect
    if (!formats) own = estimate_tensor_formats(model, eng->quant_for(config.quant));
    interconnect_for(device, config.tensor_parallel);
    std::shared_ptr<const PlanStructure> st = make_structure(model, config, backend.backend, formats ? formats : &own);
    impl_ = std::make_shared<const Impl>(device_for_engine(device, *st), std::move(st));
}

// -------------------------------------------------------------------------------------------------------------
// Evaluation

PhaseSums EstimatePlan::Impl::sum_slots(double batch, double tokens, double past, const std::vector<OpTimes>* attn,
                                        std::vector<BreakdownRow>* breakdown, const char* phase, SlotParts parts) const {
    Acc acc;
    UtilCache cache;
    RowSink sink(breakdown, structure->names.size(), phase);
    std::size_t a = 0;
    OpTimes t;
    for (const PlanSlot& s : slots) {
        double util = 1;
        if (!runs_in(s.op->phase, tokens)) continue;
        if ((s.op->kind == SlotKind::attention) == (parts == SlotParts::static_only) && parts != SlotParts::all) {
            if (s.op->kind == SlotKind::attention) ++a;
            continue;
        }
        if (s.op->kind == SlotKind::attention) {
            if (tokens == 1) {
                const double context = past + 1;
                t = decode_attention_times(s, batch, s.op->window > 0 ? std::min(context, s.op->window) : context);
            } else if (attn) {
                t = work_scaled((*attn)[a], batch);
            } else {
                t = work_scaled(times_of(slot_cost(*s.op, options, 1, tokens, past), *device), batch);
            }
            ++a;
        } else {
            const bool envelope_slot = in_envelope(*s.op);
            if (envelope_slot && !breakdown) continue;  // summed below
            if (fused_away(*s.op, slot_rows(*s.op, batch, tokens))) continue;  // inside its mat-vec
            slot_times(t, s, options, slot_rows(*s.op, batch, tokens), util, cache);
            if (envelope_slot) {  // a breakdown row only: the phase's numbers come from the envelope
                sink.add(s.name, structure->names, s.op->count, s.op->count * t.flops, s.op->count * t.bytes,
                         s.op->count * t.derated.total(util), [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); },
                         slot_compute(s, slot_rows(*s.op, batch, tokens)));
                continue;
            }
        }
        acc.add(s.op->count, t, util);
        if (breakdown)
            sink.add(s.name, structure->names, s.op->count, s.op->count * t.flops, s.op->count * t.bytes,
                     s.op->count * t.derated.total(util), [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); },
                     slot_compute(s, slot_rows(*s.op, batch, tokens)));
    }
    if (parts != SlotParts::attention_only) {
        add_envelope(acc, envelope[0], batch * tokens);
        add_envelope(acc, envelope[1], batch);
    }
    return acc.p;
}

PrefillChunks EstimatePlan::Impl::prefill_attention(double prompt, double past) const {
    return prefill_attention(prompt, past, ubatch);
}


namespace {
// Whether t equals a + k·d in each of its 16 doubles (to rounding): the micro-batches' attention affine in their
// position, as causal attention over a cache growing by a micro-batch each time is unless a re-read starts or stops
// fitting in L2 between them.
bool on_line(const OpTimes& t, const OpTimes& a, const OpTimes& d, double k) {
    const double *x = doubles(t), *x0 = doubles(a), *dx = doubles(d);
    for (std::size_t i = 0; i < kOpTimesDoubles; ++i) {
        const double want = x0[i] + k * dx[i];
        if (!(std::abs(x[i] - want) <= 1e-9 * std::max(std::abs(x[i]), std::abs(want)))) return false;  // NaN: off it
    }
    return true;
}

// Σ over n micro-batches of one attention slot's OpTimes a + i·d (i = 0..n-1) into a Total: each micro-batch's
// timing rule summed exactly (sum_of_totals: the racing lines are affine in i).
void add_line(PrefillChunks::Total& s, const OpTimes& a, const OpTimes& d, double n) {
    const double arith = n * (n - 1) / 2;
    const double derated = sum_of_totals(a.derated, d.derated, n), ideal = sum_of_totals(a.ideal, d.ideal, n);
    const double derated_overhead = n * a.derated.overhead_s + arith * d.derated.overhead_s;
    const double ideal_overhead = n * a.ideal.overhead_s + arith * d.ideal.overhead_s;
    s.derated_overhead += derated_overhead;
    s.derated_rest += derated - derated_overhead;
    s.ideal_overhead += ideal_overhead;
    s.ideal_rest += ideal - ideal_overhead;
    CeilingTimes comp = a.derated.scaled(n);
    comp.axpy(arith, d.derated);
    comp.overhead_s = 0;
    s.components += comp;
    s.flops += n * a.flops + arith * d.flops;
    s.bytes += n * a.bytes + arith * d.bytes;
}

void add_one(PrefillChunks::Total& s, const OpTimes& x) {
    s.derated_overhead += x.derated.overhead_s;
    s.derated_rest += x.derated.total() - x.derated.overhead_s;
    s.ideal_overhead += x.ideal.overhead_s;
    s.ideal_rest += x.ideal.total() - x.ideal.overhead_s;
    CeilingTimes comp = x.derated;
    comp.overhead_s = 0;
    s.components += comp;
    s.flops += x.flops;
    s.bytes += x.bytes;
}
}  // namespace

PrefillChunks EstimatePlan::Impl::prefill_attention(double prompt, double past, double chunk, AttentionMemo* memo) const {
    PrefillChunks c;
    c.prompt = prompt;
    c.past = past;
    const double u = chunk > 0 ? chunk : prompt;
    const auto micro_batches = static_cast<std::size_t>(std::ceil(prompt / u));
    c.tokens.reserve(micro_batches);
    c.past_of.reserve(micro_batches);
    for (double done = 0; done < prompt; done += u) {
        c.tokens.push_back(std::min(u, prompt - done));
        c.past_of.push_back(past + done);
    }
    c.totals.assign(attention.size(), PrefillChunks::Total{});
    c.last_is_one_token = !c.tokens.empty() && c.tokens.back() <= 1;
    const std::size_t n = c.tokens.size();
    // one sequence's attention of micro-batch i at one slot (a single token is decode attention: sum_slots)
    auto at = [&](std::size_t slot, std::size_t i) {
        if (!memo) return times_of(slot_cost(*slots[slot].op, options, 1, c.tokens[i], c.past_of[i]), *device);
        const std::array<double, 3> key{static_cast<double>(slot), c.tokens[i], c.past_of[i]};
        for (auto it = memo->rbegin(); it != memo->rend(); ++it)
            if (it->first == key) return it->second;
        memo->emplace_back(key, times_of(slot_cost(*slots[slot].op, options, 1, c.tokens[i], c.past_of[i]), *device));
        return memo->back().second;
    };
    if (n == 1) {  // kept for prefill(), which reads them in place of computing them again
        if (c.tokens[0] > 1) {
            c.attention.emplace_back();
            for (std::size_t i : attention) c.attention[0].push_back(at(i, 0));
            for (std::size_t a = 0; a < attention.size(); ++a) add_one(c.totals[a], c.attention[0][a]);
        }
        return c;
    }
    // the full micro-batches (all but perhaps the last) in closed form where their times lie on a line: checked at
    // the second, the middle and the last of them; else, and for the last partial one, one by one
    const std::size_t full = c.tokens.back() == c.tokens[0] ? n : n - 1;
    for (std::size_t a = 0; a < attention.size(); ++a) {
        PrefillChunks::Total& s = c.totals[a];
        const std::size_t slot = attention[a];
        std::size_t done = 0;
        if (full >= 5 && c.tokens[0] > 1) {
            const OpTimes first = at(slot, 0), step = at(slot, 1) - first;
            const std::size_t mid = full / 2, last = full - 1;
            if (on_line(at(slot, mid), first, step, static_cast<double>(mid)) &&
                on_line(at(slot, last), first, step, static_cast<double>(last))) {
                add_line(s, first, step, static_cast<double>(full));
                done = full;
            }
        }
        for (std::size_t i = done; i < n; ++i)
            if (c.tokens[i] > 1) add_one(s, at(slot, i));
    }
    return c;
}

namespace {
// Breakdown rows of one phase merged by op name into `into` (rows of several micro-batches).
void merge_rows(std::vector<BreakdownRow>& into, const std::vector<BreakdownRow>& rows) {
    for (const BreakdownRow& r : rows) {
        auto it = std::find_if(into.begin(), into.end(), [&](const BreakdownRow& x) { return x.phase == r.phase && x.op == r.op; });
        if (it == into.end()) {
            into.push_back(r);
            continue;
        }
        it->count += r.count;
        it->flops += r.flops;
        it->bytes += r.bytes;
        it->seconds += r.seconds;
    }
}
}  // namespace

PhaseSums EstimatePlan::Impl::prefill(double batch, const PrefillChunks& c, std::vector<BreakdownRow>* breakdown,
                                      std::vector<std::pair<double, PhaseSums>>* static_sums) const {
    const std::size_t n = c.tokens.size();
    if (n == 1)
        return sum_slots(batch, c.tokens[0], c.past_of[0], c.attention.empty() ? nullptr : &c.attention[0], breakdown,
                         "prefill");
    PhaseSums total;
    if (breakdown) {  // every micro-batch in full (its attention timed again here), its rows merged by op
        for (std::size_t i = 0; i < n; ++i) {
            std::vector<BreakdownRow> rows;
            add_sums(total, 1, sum_slots(batch, c.tokens[i], c.past_of[i], nullptr, &rows, "prefill"));
            merge_rows(*breakdown, rows);
        }
        return total;
    }
    // the static slots depend on the micro-batch's size alone: once for the full ones, once for the last
    auto static_of = [&](double tokens) {
        if (static_sums)
            for (const auto& [t, sums] : *static_sums)
                if (t == tokens) return sums;
        const PhaseSums sums = sum_slots(batch, tokens, 0, nullptr, nullptr, "prefill", SlotParts::static_only);
        if (static_sums) static_sums->emplace_back(tokens, sums);
        return sums;
    };
    const double full = c.tokens[0];
    const double n_full = static_cast<double>(std::count(c.tokens.begin(), c.tokens.end(), full));
    add_sums(total, n_full, static_of(full));
    if (c.tokens.back() != full) add_sums(total, 1, static_of(c.tokens.back()));
    add_sums(total, 1, chunked_attention(c, batch));
    return total;
}

PhaseSums EstimatePlan::Impl::chunked_attention(const PrefillChunks& c, double batch) const {
    // every micro-batch of more than one token at once (PrefillChunks::totals), a one-token last one as decode
    // attention
    PhaseSums total;
    for (std::size_t a = 0; a < attention.size(); ++a) {
        const double count = slots[attention[a]].op->count;
        const PrefillChunks::Total& s = c.totals[a];
        total.seconds += count * (s.derated_overhead + batch * s.derated_rest);
        total.ideal_seconds += count * (s.ideal_overhead + batch * s.ideal_rest);
        total.derated.axpy(count * batch, s.components);
        total.derated.overhead_s += count * s.derated_overhead;
        total.flops += count * batch * s.flops;
        total.bytes += count * batch * s.bytes;
    }
    if (c.last_is_one_token)
        add_sums(total, 1, sum_slots(batch, 1, c.past_of.back(), nullptr, nullptr, "prefill", SlotParts::attention_only));
    return total;
}

PhaseSums EstimatePlan::Impl::step(double token_rows, double sequence_rows, const ExpertSplit* experts,
                                   std::vector<BreakdownRow>* breakdown, const char* phase) const {
    Acc acc;
    UtilCache cache;
    RowSink sink(breakdown, structure->names.size(), phase);
    OpTimes t;
    // a step with more token rows than sequences runs a prefill's slots (MLA's expanded kv_b_proj), else a decode's
    const double tokens_per_sequence = token_rows > sequence_rows ? 2 : 1;
    for (const PlanSlot& s : slots) {
        if (s.op->kind == SlotKind::attention || !runs_in(s.op->phase, tokens_per_sequence)) continue;
        const bool envelope_slot = in_envelope(*s.op);
        if (envelope_slot && !breakdown) continue;  // summed below
        const double rows = s.op->per_sequence ? sequence_rows : token_rows;
        if (envelope_slot && fused_away(*s.op, rows)) continue;  // a breakdown row only, and inside its mat-vec
        double util = 1;
        if (s.op->kind == SlotKind::moe && experts) {
            const double e = s.op->experts, k = s.op->top_k;
            double routed = rows * k, active = ops::expected_active_experts(e, k, rows);
            if (experts->ranks > 1) {  // this rank's experts and the rows of every rank's tokens routed to them
                routed = experts->global_tokens * k / experts->ranks;
                active = ops::expected_active_experts(e, k, experts->global_tokens) / experts->ranks;
            }
            // the kernel of this rank's token count
            util = moe_path_times(t, s, plan_path(s, rows), options, routed * experts->imbalance, active);
            if (merged_away(*s.op, rows)) t.derated.overhead_s = 0;
        } else {
            slot_times(t, s, options, rows, util, cache);
        }
        if (!envelope_slot) acc.add(s.op->count, t, util);
        if (breakdown)
            sink.add(s.name, structure->names, s.op->count, s.op->count * t.flops, s.op->count * t.bytes,
                     s.op->count * t.derated.total(util), [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); },
                     slot_compute(s, rows));
    }
    add_envelope(acc, envelope[0], token_rows);
    add_envelope(acc, envelope[1], sequence_rows);
    return acc.p;
}

PhaseSums EstimatePlan::Impl::verify_attention(double batch, double context, double queries) const {
    Acc acc;
    for (std::size_t i : attention) {
        OpSlot op = *slots[i].op;
        op.heads *= queries;
        acc.add(op.count, times_of(slot_cost(op, options, batch, 1, context - 1), *device), 1);
    }
    return acc.p;
}

PhaseSums EstimatePlan::Impl::decode_attention(double batch, double context, std::vector<BreakdownRow>* breakdown,
                                               const char* phase) const {
    return sum_slots(batch, 1, context - 1, nullptr, breakdown, phase, SlotParts::attention_only);
}

PhaseSums EstimatePlan::Impl::decode_attention_sum(double batch, double c0, double c1) const {
    PhaseSums d;
    if (c1 < c0) return d;
    for (std::size_t i : attention) add_sums(d, slots[i].op->count, attention_sum(slots[i], batch, c0, c1));
    return d;
}

double EstimatePlan::Impl::activation_bytes(double token_rows, double sequence_rows) const {
    const Architecture& a = structure->arch;
    return token_rows * (2 * a.hidden + widest / options.tensor_parallel) * act_bytes + sequence_rows * a.vocab * 4.0;
}

double EstimatePlan::Impl::vocab_table_device_bytes() const {
    const PlanStructure& st = *structure;
    return rank_bytes(st.vocab_table_bytes, st.vocab_table_replicated_bytes, options.tensor_parallel);
}

double EstimatePlan::Impl::expert_weight_bytes() const {
    double b = 0;
    for (const auto& [experts, top_k, bytes] : step_expert_weights) b += experts * bytes;
    return b;
}

PhaseSums EstimatePlan::Impl::decode_step(double batch) const {
    Acc acc;
    UtilCache cache;
    OpTimes t;
    for (const PlanSlot& s : slots) {
        if (s.op->kind == SlotKind::attention || in_envelope(*s.op) || !runs_in(s.op->phase, 1)) continue;
        double util = 1;
        slot_times(t, s, options, batch, util, cache);  // one new token per sequence
        acc.add(s.op->count, t, util);
    }
    add_envelope(acc, envelope[0], batch);
    add_envelope(acc, envelope[1], batch);
    return acc.p;
}

PhaseSums EstimatePlan::Impl::decode(double batch, double prompt, double gen, const PhaseSums& step,
                                     std::vector<BreakdownRow>* breakdown) const {
    PhaseSums d;
    if (gen <= 0) return d;
    add_sums(d, gen, step);
    const double c0 = prompt + 1, c1 = prompt + gen;
    for (std::size_t i : attention) add_sums(d, slots[i].op->count, attention_sum(slots[i], batch, c0, c1));
    if (breakdown) {  // rows in slot order; the numbers above do not depend on them
        RowSink sink(breakdown, structure->names.size(), "decode");
        for (const PlanSlot& s : slots) {
            const double n = s.op->count;
            if (!runs_in(s.op->phase, 1)) continue;
            if (s.op->kind == SlotKind::attention) {
                const PhaseSums a = attention_sum(s, batch, c0, c1);
                sink.add(s.name, structure->names, n * gen, n * a.flops, n * a.bytes, n * a.seconds, [&] {  // the first step's bound
                    const double w = s.op->window;
                    return op_bound(decode_attention_times(s, batch, w > 0 ? std::min(c0, w) : c0), 1, false);
                });
                continue;
            }
            if (fused_away(*s.op, batch)) continue;  // inside its mat-vec
            double util = 1;
            UtilCache cache;
            OpTimes t;
            slot_times(t, s, options, batch, util, cache);
            sink.add(s.name, structure->names, n * gen, n * gen * t.flops, n * gen * t.bytes, n * gen * t.derated.total(util),
                     [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); }, slot_compute(s, batch));
        }
    }
    return d;
}

PhaseSums EstimatePlan::Impl::phase(double batch, double tokens, double past) const {
    check_count("batch", batch);
    check_count("tokens", tokens);
    check_count("past tokens", past);
    if (batch * tokens == 0) return {};
    return sum_slots(batch, tokens, past, nullptr, nullptr, "phase");
}

MemoryUse EstimatePlan::Impl::memory(double batch, double prompt, double gen, double context) const {
    const Architecture& a = structure->arch;
    const double tp = options.tensor_parallel;
    MemoryUse m;
    m.weights = device_weight_bytes;
    m.kv_cache = batch * structure->kv_layout.token_layers(context + prompt + gen) * kv_token_layer_bytes;
    const double step = ubatch > 0 ? std::min(prompt, ubatch) : prompt;  // the tokens of the largest micro-batch
    const double rows = batch * std::max(1.0, step);
    double act = rows * (2 * a.hidden + widest / tp) * act_bytes;
    if (prompt_attention(options, a.head_dim) == ops::AttentionKind::standard && step > 1)  // S and P of a micro-batch over its context
        act += batch * (a.n_head / tp) * step * (context + prompt) * act_bytes * 2;
    act += (options.logits_last_token_only ? batch : rows) * a.vocab * 4.0;  // f32 logits
    m.activations = act;
    m.overhead = structure->backend.runtime_overhead_bytes;
    m.total = m.weights + m.kv_cache + m.activations + m.overhead;
    m.capacity = capacity_bytes;
    m.fits = m.total <= m.capacity;
    return m;
}

double EstimatePlan::Impl::max_batch(double prompt, double gen, double context) const {
    const double m1 = memory(1, prompt, gen, context).total, m2 = memory(2, prompt, gen, context).total;
    const double per_seq = m2 - m1, fixed = m1 - per_seq;
    return per_seq > 0 ? std::max(0.0, std::floor((capacity_bytes - fixed) / per_seq)) : 0;
}

double EstimatePlan::Impl::max_context(double batch) const {
    double lo = 0, hi = std::max(1.0, structure->arch.max_context > 0 ? structure->arch.max_context : 1e7);
    if (memory(batch, hi, 0).total <= capacity_bytes) return hi;
    while (hi - lo > 1) {
        const double mid = std::floor((lo + hi) / 2);
        (memory(batch, mid, 0).total <= capacity_bytes ? lo : hi) = mid;
    }
    return lo;
}

namespace {
// The decode step compute_bound_batch looks at: the generation's mean context.
double mean_decode_context(double prompt, double gen, double context) {
    return std::max(1.0, std::floor(context + prompt + (gen + 1) / 2));
}
}  // namespace

double EstimatePlan::Impl::compute_bound_batch(double prompt, double gen, double context) const {
    // a decode step at the mean context, ideal roofline: compute-bound when Σ compute >= Σ DRAM time
    const double mid = mean_decode_context(prompt, gen, context);
    double per_seq = 0;  // attention, per sequence at this context
    for (const auto& [w, a0, a1] : cb_attention) per_seq += a0 + (w > 0 ? std::min(mid, w) : mid) * a1;
    auto compute_bound = [&](double b) {
        double g = cb_common0 + b * cb_common1;
        for (const BalanceGroup& grp : cb_groups) {
            std::size_t i = 0;
            while (i + 1 < grp.max_rows.size() && b > grp.max_rows[i]) ++i;
            g += grp.coef[i][0] + b * grp.coef[i][1];
            if (grp.dequant_every_rows[i] > 0) g += (std::ceil(b / grp.dequant_every_rows[i]) - 1) * grp.coef[i][2];
        }
        for (const auto& [experts, top_k, coef] : cb_active) g += coef * ops::expected_active_experts(experts, top_k, b);
        return g + b * per_seq >= 0;
    };
    double lo = 1, hi = 1 << 20;
    if (!compute_bound(hi)) return 0;
    if (compute_bound(lo)) return 1;
    while (hi - lo > 1) {
        const double m = std::floor((lo + hi) / 2);
        (compute_bound(m) ? hi : lo) = m;
    }
    return hi;
}

// A layer split over N devices runs each call of the engine's decode (pipeline_tokens, llama.cpp's n_batch) as a
// pipeline of its U micro-batches: device i takes micro-batch j + 1 while device i + 1 runs j, so with balanced
// stages of T / N a call takes (U + N − 1) · T / N instead of U · T. Over the prompt's calls, weighted by their
// tokens; 1 without a pipeline (one device, no n_batch, or the whole prompt in one micro-batch).
double EstimatePlan::Impl::pipeline_overlap(double prompt) const {
    if (stages <= 1 || pipeline_tokens <= 0 || ubatch <= 0 || prompt <= ubatch) return 1;
    const double call = std::max(pipeline_tokens, ubatch);  // llama.cpp takes n_ubatch <= n_batch
    auto factor = [&](double tokens) {  // one call of `tokens` tokens
        const double u = std::ceil(tokens / ubatch);
        return (u + stages - 1) / (u * stages);
    };
    const double full = std::floor(prompt / call), rest = prompt - full * call;  // full calls, then the rest
    return (full * call * factor(call) + (rest > 0 ? rest * factor(rest) : 0.0)) / prompt;
}

EstimateRow EstimatePlan::Impl::assemble(double batch, double prompt, double gen, double context, const PhaseSums& pre,
                                         const PhaseSums& dec, double max_ctx, double cb_batch, double max_b) const {
    const PlanStructure& st = *structure;
    EstimateRow r;
    r.parameters = st.parameters;
    r.weight_bytes = st.weight_bytes;
    r.bits_per_weight = st.parameters > 0 ? 8 * st.weight_bytes / st.parameters : 0;
    r.batch = batch;
    r.prompt_tokens = prompt;
    r.gen_tokens = gen;
    r.context_tokens = context;
    if (prompt > 0) {
        const double overlap = pipeline_overlap(prompt);  // 1 but under a layer split's pipeline
        r.prefill_s = pre.seconds * overlap;
        r.prefill_tokens_per_s = batch * prompt / r.prefill_s;
        r.prefill_tokens_per_s_lo = r.prefill_tokens_per_s * prefill_lo;
        r.prefill_tokens_per_s_hi = r.prefill_tokens_per_s * prefill_hi;
        r.ceiling_prefill = batch * prompt / (pre.ideal_seconds * overlap);
        r.prefill_bound = phase_bound(pre.derated);
    }
    if (gen > 0) {
        r.decode_s = dec.seconds;
        r.tpot_s = dec.seconds / gen;
        r.decode_tokens_per_s = gen / dec.seconds;
        r.decode_tokens_per_s_lo = r.decode_tokens_per_s * decode_lo;
        r.decode_tokens_per_s_hi = r.decode_tokens_per_s * decode_hi;
        r.decode_tokens_per_s_total = batch * gen / dec.seconds;
        r.ceiling_decode = gen / dec.ideal_seconds;
        r.ceiling_decode_total = r.ceiling_decode * batch;
        r.decode_bound = phase_bound(dec.derated);
        r.decode_intensity = dec.bytes > 0 ? dec.flops / dec.bytes : 0;
    }
    const double step_weights = weights_read_per_step(batch);
    r.ceiling_decode_weights = step_weights > 0 ? dram_bandwidth_Bps / step_weights : 0.0;
    r.ttft_s = r.prefill_s;
    if (prompt == 0 && gen > 0) r.ttft_s = r.decode_s / gen;
    r.total_s = r.prefill_s + r.decode_s;
    const MemoryUse m = memory(batch, prompt, gen, context);
    r.fits = m.fits;
    r.memory_weights = m.weights;
    r.memory_kv_cache = m.kv_cache;
    r.memory_activations = m.activations;
    r.memory_overhead = m.overhead;
    r.memory_total = m.total;
    r.memory_capacity = m.capacity;
    r.max_batch = max_b;
    r.max_context = max_ctx;
    r.compute_bound_batch = cb_batch;
    return r;
}

double EstimatePlan::Impl::weights_read_per_step(double batch) const {
    double b = step_dense_weight_bytes;
    for (const auto& [experts, top_k, bytes] : step_expert_weights)
        b += bytes * ops::expected_active_experts(experts, top_k, batch);  // bytes: one expert's, × count
    return b;
}

std::shared_ptr<const PrefillChunks> EstimatePlan::Impl::cached_prefill_attention(double prompt, double past) const {
    AttentionCache& c = *attention_cache;
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        for (const auto& x : c.chunks)
            if (x && x->prompt == prompt && x->past == past) return x;
    }
    auto a = std::make_shared<const PrefillChunks>(prefill_attention(prompt, past));
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.chunks[c.next] = a;
    c.next = (c.next + 1) % c.chunks.size();
    return a;
}

double EstimatePlan::Impl::cached_compute_bound_batch(double prompt, double gen, double context) const {
    AttentionCache& c = *attention_cache;
    const double mid = mean_decode_context(prompt, gen, context);  // all it depends on
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        for (const auto& x : c.compute_bound)
            if (x[0] == mid) return x[1];
    }
    const double v = compute_bound_batch(prompt, gen, context);
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.compute_bound[c.next_compute_bound] = {mid, v};
    c.next_compute_bound = (c.next_compute_bound + 1) % c.compute_bound.size();
    return v;
}

double EstimatePlan::Impl::cached_max_context(double batch) const {
    AttentionCache& c = *attention_cache;
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        for (const auto& x : c.max_context)
            if (x[0] == batch && batch > 0) return x[1];
    }
    const double v = max_context(batch);
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.max_context[c.next_max_context] = {batch, v};
    c.next_max_context = (c.next_max_context + 1) % c.max_context.size();
    return v;
}

EstimateRow EstimatePlan::evaluate(double batch, double prompt, double gen, std::vector<BreakdownRow>* breakdown) const {
    return evaluate(batch, prompt, gen, 0, breakdown);
}

EstimateRow EstimatePlan::evaluate(double batch, double prompt, double gen, double context,
                                   std::vector<BreakdownRow>* breakdown) const {
    check_point(batch, prompt, gen, context);
    const Impl& p = *impl_;
    PhaseSums pre, dec;
    if (prompt > 0) pre = p.prefill(batch, *p.cached_prefill_attention(prompt, context), breakdown);
    if (gen > 0) dec = p.decode(batch, context + prompt, gen, p.decode_step(batch), breakdown);
    return p.assemble(batch, prompt, gen, context, pre, dec, p.cached_max_context(batch), p.cached_compute_bound_batch(prompt, gen, context),
                      p.max_batch(prompt, gen, context));
}

Estimate EstimatePlan::estimate(double batch, double prompt, double gen, bool breakdown, double context) const {
    Estimate e;
    static_cast<EstimateRow&>(e) = evaluate(batch, prompt, gen, context, breakdown ? &e.breakdown : nullptr);
    const PlanConfig& c = config();
    e.model = model_id();
    e.quant = c.quant;
    e.device = device_id();
    e.engine = engine_id();
    e.kv_dtype = c.kv_dtype;
    e.flash_attention = c.flash_attention;
    e.tensor_parallel = c.tensor_parallel;
    e.split_mode = split_mode_names()[impl_->split_code].c_str();
    e.ubatch_tokens = impl_->ubatch;
    return e;
}

PhaseSums EstimatePlan::phase(double batch, double tokens, double past) const { return impl_->phase(batch, tokens, past); }
MemoryUse EstimatePlan::memory(double batch, double prompt, double gen, double context) const {
    return impl_->memory(batch, prompt, gen, context);
}
double EstimatePlan::max_batch(double prompt, double gen, double context) const { return impl_->max_batch(prompt, gen, context); }
double EstimatePlan::ubatch_tokens() const { return impl_->ubatch; }
double EstimatePlan::max_context(double batch) const { return impl_->max_context(batch); }
double EstimatePlan::compute_bound_batch(double prompt, double gen, double context) const {
    return impl_->compute_bound_batch(prompt, gen, context);
}

const std::string& EstimatePlan::model_id() const { return impl_->structure->model_id; }
const std::string& EstimatePlan::device_id() const { return impl_->device_id; }
const std::string& EstimatePlan::engine_id() const { return impl_->structure->engine->id; }
const std::string& EstimatePlan::backend() const { return impl_->structure->backend.backend; }
const PlanConfig& EstimatePlan::config() const { return impl_->structure->config; }
double EstimatePlan::parameters() const { return impl_->structure->parameters; }
double EstimatePlan::weight_bytes() const { return impl_->structure->weight_bytes; }
double EstimatePlan::weights_read_per_step(double batch) const {
    check_count("weights_read_per_step batch", batch);
    return impl_->weights_read_per_step(batch);
}
double EstimatePlan::bits_per_weight() const {
    return parameters() > 0 ? 8 * weight_bytes() / parameters() : 0;
}
std::size_t EstimatePlan::op_slots() const { return impl_->slots.size(); }

AllReduceTiming all_reduce_time(const Engine& engine, const Device& device, int devices, double message_bytes, double hidden) {
    if (devices < 2 || devices > 1024)
        throw InvalidArgument("all_reduce_time: devices must be within [2, 1024], got " + std::to_string(devices));
    check_size("all_reduce_time message_bytes", message_bytes);
    check_size("all_reduce_time hidden", hidden);
    const EngineBackend& backend = engine.on(device);
    const Interconnect* link = interconnect_for(device, devices);
    const std::vector<AllReduceWay> ways = all_reduce_ways(backend, *link, devices, 1.0, hidden);  // rows = bytes
    const AllReduceWay& w = ways[all_reduce_way(ways, message_bytes)];
    CeilingTimes derated, ideal;  // as a plan's all_reduce slot holds them: its launch, then the link term
    derated.overhead_s = device_for_engine(device, backend)->efficiency.launch_overhead_s;
    derated.memory_s[0] = w.latency_s + message_bytes * w.per_row_s;
    ideal.memory_s[0] = message_bytes * w.ideal_per_row_s;
    AllReduceTiming t;
    t.seconds = derated.total();
    t.ideal_seconds = ideal.total();
    t.way = w.name;
    return t;
}

}  // namespace roofline
