#include "roofline/inference.hpp"

#include "roofline/errors.hpp"
#include "roofline/quant.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace roofline {

// -------------------------------------------------------------------------------------------------------------
// Engines
namespace {
std::vector<Engine> make_engines() {
    std::vector<Engine> e;
    {
        Engine x;
        x.name = "llama.cpp";
        x.launch_overhead_scale = 1.0;
        x.gemv_max_rows = 8;           // mat-vec kernels (mul_mv / mmvq) up to 8 rows
        x.gemm_tile_m = 64;            // kernel_mul_mm / mmq output tiles
        x.gemm_tile_n = 32;
        x.dequant_tile_rows = 32;      // each 32-row block of activations dequantizes the weight tile it reads
        x.activation = "fp32";         // ggml keeps activations in f32 between ops
        x.logits_last_token_only = true;
        x.runtime_overhead_bytes = 0.5e9;
        x.source = "ggml-metal / ggml-cuda kernel structure: mat-vec kernels for <= 8 rows, 64x32 tiled matmul "
                   "dequantizing per tile; f32 activations; compute buffers ~0.5 GB (uncertain)";
        e.push_back(x);
    }
    {
        Engine x;
        x.name = "generic";
        x.launch_overhead_scale = 2.5;
        x.gemv_max_rows = 1;
        x.gemm_tile_m = 128;
        x.gemm_tile_n = 128;
        x.activation = "bf16";
        x.logits_last_token_only = false;
        x.runtime_overhead_bytes = 1.0e9;
        x.source = "an eager framework: one launch per op dispatched from Python (about 2.5x a bare kernel's fixed cost), "
                   "cuBLAS-style 128x128 tiles, bf16 activations, logits for every prompt token; ~1 GB of context and "
                   "allocator slack (uncertain)";
        e.push_back(x);
    }
    {
        Engine x;
        x.name = "cuda-graphs";
        x.launch_overhead_scale = 1.0;
        x.gemv_max_rows = 8;
        x.gemm_tile_m = 128;
        x.gemm_tile_n = 128;
        x.activation = "bf16";
        x.logits_last_token_only = false;
        x.runtime_overhead_bytes = 1.0e9;
        x.source = "a compiled engine replaying CUDA graphs (torch.compile mode=reduce-overhead, as gpt-fast): no CPU "
                   "launch cost, but each kernel still pays the device's fixed per-kernel time (ramp-up, tail, "
                   "dependency wait)";
        e.push_back(x);
    }
    return e;
}
const std::vector<Engine>& engines() {
    static const std::vector<Engine> e = make_engines();
    return e;
}
}  // namespace

Engine engine(std::string_view name) {
    const std::string l = to_lower(name);
    for (const auto& e : engines())
        if (to_lower(e.name) == l || (l == "llamacpp" && e.name == "llama.cpp")) return e;
    throw NotFound(unknown_name_message("engine", name, engine_names()));
}

std::vector<std::string> engine_names() {
    std::vector<std::string> n;
    for (const auto& e : engines()) n.push_back(e.name);
    return n;
}

// -------------------------------------------------------------------------------------------------------------
namespace {

struct Context {
    const Model& model;
    Device device;  // launch overhead scaled by the engine
    Engine eng;
    PhaseOptions opt;
    std::vector<TensorFormat> formats;
    double interconnect_Bps = 0;
};

Format parse_kv(const std::string& name) {
    const std::string l = to_lower(name);
    if (l == "f16") return format_of(DType::fp16);
    if (l == "bf16") return format_of(DType::bf16);
    if (l == "f32") return format_of(DType::fp32);
    static const std::vector<std::string> allowed = {"f16", "bf16", "f32", "fp8", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};
    if (std::find(allowed.begin(), allowed.end(), l) == allowed.end())
        throw NotFound(unknown_name_message("KV cache format", name, allowed));
    return parse_format(l);
}

Context make_context(const Model& model, const Device& device, const std::string& quant, const std::string& kv_dtype,
                     bool flash, const std::string& engine_name, int tp) {
    Context c{model, device, engine(engine_name), {}, {}, 0};
    c.device.efficiency.launch_overhead_s *= c.eng.launch_overhead_scale;
    const Format act = parse_format(c.eng.activation);
    c.opt.activation = act;
    c.opt.kv = parse_kv(kv_dtype);
    c.opt.attention = flash ? ops::AttentionKind::flash : ops::AttentionKind::standard;
    if (flash) {
        c.opt.sram_bytes = device.has_level(Level::sram) ? device.sram_per_unit_bytes() : 32.0 * 1024;
        c.opt.l2_bytes = device.has_level(Level::l2) ? device.capacity(Level::l2) : 0.0;
    }
    c.opt.logits_last_token_only = c.eng.logits_last_token_only;
    c.opt.dequant_tile_rows = c.eng.dequant_tile_rows;
    c.opt.tensor_parallel = tp;
    c.opt.gemv_max_rows = c.eng.gemv_max_rows;
    c.opt.gemm_tile_m = c.eng.gemm_tile_m;
    c.opt.gemm_tile_n = c.eng.gemm_tile_n;
    c.opt.compute_units = device.compute_units;
    // Unquantized tensors of GPU schemes are kept in the model's training format; bf16 unless fp16 was asked.
    c.formats = model.tensor_formats(quant, to_lower(quant) == "fp16" ? format_of(DType::fp16) : format_of(DType::bf16));
    if (tp > 1) {
        c.interconnect_Bps = device.interconnect_bandwidth();
        if (c.interconnect_Bps <= 0)
            throw InvalidArgument("tensor_parallel " + std::to_string(tp) + " needs an interconnect; device '" + device.id +
                                  "' lists none");
    }
    return c;
}

// Time components of one op instance: compute, each memory level, overhead (seconds).
struct Parts {
    double compute = 0;
    std::array<double, kNumLevels> memory{};
    double overhead = 0;
    double total() const {
        double m = compute;
        for (double x : memory) m = std::max(m, x);
        return m + overhead;
    }
};

Parts parts_of(const Context& c, const PhaseOp& op, Ceilings ceilings) {
    Parts p;
    if (op.name == "all_reduce") {
        const double n = c.opt.tensor_parallel;
        // ring all-reduce: 2(N−1) steps, each moving 1/N of the message over the link and paying a step latency
        p.overhead = (ceilings == Ceilings::derated ? 2.0 * (n - 1) * c.eng.collective_latency_s : 0.0);
        p.memory[0] = 2.0 * (n - 1) / n * op.collective_bytes / c.interconnect_Bps;
        return p;
    }
    const Timing t = evaluate(op.cost, c.device, ceilings);
    p.compute = t.compute_seconds;
    p.memory = t.memory_seconds;
    p.overhead = t.overhead_seconds;
    return p;
}

std::string bound_of(const Parts& p, bool collective) {
    double best = p.compute;
    std::string b = p.compute > 0 ? "compute" : "none";
    for (std::size_t i = 0; i < kNumLevels; ++i)
        if (p.memory[i] > best) {
            best = p.memory[i];
            b = collective ? "interconnect" : "memory:" + std::string(level_name(static_cast<Level>(i)));
        }
    if (p.overhead > best) b = "overhead";
    return b;
}

struct PhaseTotals {
    double seconds = 0;
    Parts sum;  // components summed over ops (for the phase's bound)
    double flops = 0, bytes = 0;
    std::vector<BreakdownRow> rows;
};

void add_row(PhaseTotals& tot, const std::string& phase, const PhaseOp& op, double instances, double flops, double bytes,
             double seconds, const Parts& parts) {
    for (auto& r : tot.rows)
        if (r.op == op.name) {
            r.count += instances;
            r.flops += flops;
            r.bytes += bytes;
            r.seconds += seconds;
            return;
        }
    tot.rows.push_back({phase, op.name, instances, flops, bytes, seconds, bound_of(parts, op.name == "all_reduce")});
}

PhaseTotals phase_time(const Context& c, const std::vector<PhaseOp>& ops, Ceilings ceilings, const std::string& phase) {
    PhaseTotals tot;
    for (const auto& op : ops) {
        const Parts p = parts_of(c, op, ceilings);
        const double s = op.count * p.total();
        tot.seconds += s;
        tot.sum.compute += op.count * p.compute;
        for (std::size_t i = 0; i < kNumLevels; ++i) tot.sum.memory[i] += op.count * p.memory[i];
        tot.sum.overhead += op.count * p.overhead;
        tot.flops += op.count * op.cost.flops();
        tot.bytes += op.count * op.cost.bytes();
        add_row(tot, phase, op, op.count, op.count * op.cost.flops(), op.count * op.cost.bytes(), s, p);
    }
    return tot;
}

// Σ_{x=0}^{n-1} max_k (a_k + b_k·x), exactly: split [0, n-1] where the upper envelope changes line.
double sum_max_affine(const std::vector<std::pair<double, double>>& lines, double n) {
    if (n <= 0 || lines.empty()) return 0;
    std::vector<double> cuts{0, n - 1};
    for (std::size_t i = 0; i < lines.size(); ++i)
        for (std::size_t j = i + 1; j < lines.size(); ++j) {
            const double db = lines[i].second - lines[j].second;
            if (db == 0) continue;
            const double x = (lines[j].first - lines[i].first) / db;
            if (x > 0 && x < n - 1) cuts.push_back(std::floor(x)), cuts.push_back(std::floor(x) + 1);
        }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    double total = 0, lo = 0;
    for (std::size_t k = 0; k < cuts.size(); ++k) {
        const double hi = cuts[k];
        if (hi < lo) continue;
        const double mid = (lo + hi) / 2;
        std::size_t best = 0;
        for (std::size_t i = 1; i < lines.size(); ++i)
            if (lines[i].first + lines[i].second * mid > lines[best].first + lines[best].second * mid) best = i;
        const double count = hi - lo + 1;
        total += count * lines[best].first + lines[best].second * (lo + hi) * count / 2;
        lo = hi + 1;
    }
    return total;
}

// Decode steps at contexts c0..c1 (each step: one new token per sequence, attending c tokens), in closed form:
// every op's components are affine in c between sliding-window boundaries, and the sum of a max of affine
// functions over an integer range is summed piecewise.
PhaseTotals decode_time(const Context& c, double batch, double c0, double c1, Ceilings ceilings) {
    PhaseTotals tot;
    if (c1 < c0) return tot;
    std::set<double> breaks;
    for (double w : c.model.arch.window)
        if (w > 0 && w >= c0 && w < c1) breaks.insert(w);
    std::vector<std::pair<double, double>> segments;
    double lo = c0;
    for (double w : breaks) {
        segments.push_back({lo, w});
        lo = w + 1;
    }
    segments.push_back({lo, c1});
    for (const auto& [s0, s1] : segments) {
        const double n = s1 - s0 + 1;
        const auto ops0 = forward_ops(c.model, c.formats, batch, 1, s0 - 1, c.opt);
        std::vector<PhaseOp> ops1;
        bool aligned = false;
        if (n > 1) {
            ops1 = forward_ops(c.model, c.formats, batch, 1, s0, c.opt);
            aligned = ops1.size() == ops0.size();
            for (std::size_t i = 0; aligned && i < ops0.size(); ++i)
                aligned = ops0[i].name == ops1[i].name && ops0[i].count == ops1[i].count;
        }
        if (n > 1 && !aligned) {  // a structure change inside the segment: sum step by step
            for (double x = s0; x <= s1; ++x) {
                PhaseTotals step = phase_time(c, forward_ops(c.model, c.formats, batch, 1, x - 1, c.opt), ceilings, "decode");
                tot.seconds += step.seconds;
                tot.flops += step.flops;
                tot.bytes += step.bytes;
                tot.sum.compute += step.sum.compute;
                for (std::size_t i = 0; i < kNumLevels; ++i) tot.sum.memory[i] += step.sum.memory[i];
                tot.sum.overhead += step.sum.overhead;
                for (const auto& r : step.rows) {
                    PhaseOp tmp{r.op, {}, 1, 0};
                    add_row(tot, "decode", tmp, r.count, r.flops, r.bytes, r.seconds, Parts{});
                }
            }
            continue;
        }
        for (std::size_t i = 0; i < ops0.size(); ++i) {
            const PhaseOp& op = ops0[i];
            const Parts p0 = parts_of(c, op, ceilings);
            const Parts p1 = n > 1 ? parts_of(c, ops1[i], ceilings) : p0;
            std::vector<std::pair<double, double>> lines{{p0.compute, p1.compute - p0.compute}};
            for (std::size_t k = 0; k < kNumLevels; ++k) lines.push_back({p0.memory[k], p1.memory[k] - p0.memory[k]});
            const double seconds = op.count * (sum_max_affine(lines, n) + n * p0.overhead);
            const double arith = n * (n - 1) / 2;  // Σ x for x = 0..n-1
            const double f0 = op.cost.flops(), f1 = n > 1 ? ops1[i].cost.flops() : f0;
            const double b0 = op.cost.bytes(), b1 = n > 1 ? ops1[i].cost.bytes() : b0;
            const double flops = op.count * (n * f0 + (f1 - f0) * arith);
            const double bytes = op.count * (n * b0 + (b1 - b0) * arith);
            tot.seconds += seconds;
            tot.flops += flops;
            tot.bytes += bytes;
            tot.sum.compute += op.count * (n * p0.compute + (p1.compute - p0.compute) * arith);
            for (std::size_t k = 0; k < kNumLevels; ++k)
                tot.sum.memory[k] += op.count * (n * p0.memory[k] + (p1.memory[k] - p0.memory[k]) * arith);
            tot.sum.overhead += op.count * n * p0.overhead;
            add_row(tot, "decode", op, op.count * n, flops, bytes, seconds, p0);
        }
    }
    return tot;
}

double memory_total(const Context& c, double batch, double prompt, double gen, MemoryUse* out) {
    const Architecture& a = c.model.arch;
    const double tp = c.opt.tensor_parallel;
    MemoryUse m;
    double w = 0;
    for (const auto& f : c.formats) w += f.bytes;
    m.weights = w / tp;
    m.kv_cache = kv_cache_bytes(a, batch, prompt + gen, c.opt.kv) / tp;
    const double rows = batch * std::max(1.0, prompt);
    const double widest = std::max({a.q_dim() + 2 * a.kv_dim(), (a.mlp == MlpKind::gated ? 2.0 : 1.0) * a.ffn,
                                    2.0 * a.expert_ffn * std::max(1, a.n_expert_used)});
    double act = rows * (2 * a.hidden + widest / tp) * c.opt.activation.bytes_per_element();
    if (c.opt.attention == ops::AttentionKind::standard && prompt > 1)
        act += batch * (a.n_head / tp) * prompt * prompt * c.opt.activation.bytes_per_element() * 2;  // S and P
    act += (c.opt.logits_last_token_only ? batch : rows) * a.vocab * 4.0;  // f32 logits
    m.activations = act;
    m.overhead = c.eng.runtime_overhead_bytes;
    m.total = m.weights + m.kv_cache + m.activations + m.overhead;
    m.capacity = c.device.capacity(Level::dram);
    m.fits = m.total <= m.capacity;
    if (out) *out = m;
    return m.total;
}

void check_workload(const Workload& w) {
    check_count("batch", w.batch);
    if (w.batch < 1) throw InvalidArgument("batch must be >= 1, got " + std::to_string(w.batch));
    check_count("prompt_tokens", w.prompt_tokens);
    check_count("gen_tokens", w.gen_tokens);
    if (w.prompt_tokens + w.gen_tokens < 1)
        throw InvalidArgument("prompt_tokens + gen_tokens must be >= 1 (nothing to estimate), got 0");
    if (w.tensor_parallel < 1 || w.tensor_parallel > 1024)
        throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(w.tensor_parallel));
    if (w.draft) {
        check_count("draft_tokens", w.draft_tokens);
        if (w.draft_tokens < 1) throw InvalidArgument("draft_tokens (gamma) must be >= 1 with a draft model");
        check_range("acceptance", w.acceptance, 0.0, 1.0);
    }
}

}  // namespace

Estimate estimate(const Model& model, const Device& device, const Workload& w) {
    check_workload(w);
    const Context c = make_context(model, device, w.quant, w.kv_dtype, w.flash_attention, w.engine, w.tensor_parallel);
    Estimate e;
    e.model = model.arch.id;
    e.quant = w.quant;
    e.device = device.id;
    e.engine = c.eng.name;
    e.parameters = model.parameters();
    for (const auto& f : c.formats) e.weight_bytes += f.bytes;
    e.bits_per_weight = e.parameters > 0 ? 8 * e.weight_bytes / e.parameters : 0;
    e.batch = w.batch;
    e.prompt_tokens = w.prompt_tokens;
    e.gen_tokens = w.gen_tokens;
    e.tensor_parallel = w.tensor_parallel;
    const double B = w.batch, P = w.prompt_tokens, n = w.gen_tokens;

    // Prefill
    if (P > 0) {
        const auto ops = forward_ops(model, c.formats, B, P, 0, c.opt);
        PhaseTotals pre = phase_time(c, ops, Ceilings::derated, "prefill");
        const PhaseTotals ideal = phase_time(c, ops, Ceilings::ideal, "prefill");
        e.prefill_s = pre.seconds;
        e.prefill_tokens_per_s = B * P / pre.seconds;
        e.ceiling_prefill = B * P / ideal.seconds;
        e.prefill_bound = bound_of(pre.sum, false);
        for (auto& r : pre.rows) e.breakdown.push_back(r);
    }
    // Decode: n steps at contexts P+1 .. P+n
    if (n > 0) {
        PhaseTotals dec = decode_time(c, B, P + 1, P + n, Ceilings::derated);
        const PhaseTotals ideal = decode_time(c, B, P + 1, P + n, Ceilings::ideal);
        e.decode_s = dec.seconds;
        e.decode_tokens_per_s = n / dec.seconds;
        e.decode_tokens_per_s_total = B * n / dec.seconds;
        e.ceiling_decode = n / ideal.seconds;
        e.decode_bound = bound_of(dec.sum, false);
        e.decode_intensity = dec.bytes > 0 ? dec.flops / dec.bytes : 0;
        for (auto& r : dec.rows) e.breakdown.push_back(r);
    }
    e.ceiling_decode_weights = device.bandwidth(Level::dram) / (e.weight_bytes / w.tensor_parallel);
    e.ttft_s = e.prefill_s;
    if (P == 0 && n > 0) e.ttft_s = e.decode_s / n;

    // Speculative decoding: γ draft steps, then one target pass over γ + 1 tokens, at the mean context.
    if (w.draft && n > 0) {
        const double gamma = w.draft_tokens, alpha = w.acceptance;
        const double tau = alpha >= 1 ? gamma + 1 : (1 - std::pow(alpha, gamma + 1)) / (1 - alpha);
        const double mid = std::floor(P + (n + 1) / 2);
        const Context dc = make_context(*w.draft, device, w.draft_quant.empty() ? w.quant : w.draft_quant, w.kv_dtype,
                                        w.flash_attention, w.engine, 1);
        const double draft_step = phase_time(dc, forward_ops(*w.draft, dc.formats, B, 1, mid - 1, dc.opt), Ceilings::derated, "draft").seconds;
        const double verify = phase_time(c, forward_ops(model, c.formats, B, gamma + 1, mid - 1, c.opt), Ceilings::derated, "verify").seconds;
        const double cycle = gamma * draft_step + verify;
        e.speculative_tokens_per_cycle = tau;
        e.decode_tokens_per_s = tau / cycle;
        e.decode_tokens_per_s_total = B * tau / cycle;
        e.decode_s = n / e.decode_tokens_per_s;
    }
    e.total_s = e.prefill_s + e.decode_s;

    // Memory
    memory_total(c, B, P, n, &e.memory);
    const double m1 = memory_total(c, 1, P, n, nullptr), m2 = memory_total(c, 2, P, n, nullptr);
    const double per_seq = m2 - m1, fixed = m1 - per_seq;
    e.max_batch = per_seq > 0 ? std::max(0.0, std::floor((e.memory.capacity - fixed) / per_seq)) : 0;
    {
        double lo = 0, hi = std::max(1.0, model.arch.max_context > 0 ? model.arch.max_context : 1e7);
        if (memory_total(c, B, hi, 0, nullptr) <= e.memory.capacity) lo = hi;
        else
            while (hi - lo > 1) {
                const double mid = std::floor((lo + hi) / 2);
                (memory_total(c, B, mid, 0, nullptr) <= e.memory.capacity ? lo : hi) = mid;
            }
        e.max_context = lo;
    }
    // Batch at which a decode step turns compute-bound (ideal roofline, mean context)
    {
        const double mid = std::max(1.0, std::floor(P + (n + 1) / 2));
        auto compute_bound = [&](double b) {
            const PhaseTotals t = phase_time(c, forward_ops(model, c.formats, b, 1, mid - 1, c.opt), Ceilings::ideal, "decode");
            return t.sum.compute >= t.sum.memory[0];
        };
        double lo = 1, hi = 1 << 20;
        if (!compute_bound(hi)) e.compute_bound_batch = 0;
        else if (compute_bound(lo)) e.compute_bound_batch = 1;
        else {
            while (hi - lo > 1) {
                const double m = std::floor((lo + hi) / 2);
                (compute_bound(m) ? hi : lo) = m;
            }
            e.compute_bound_batch = hi;
        }
    }
    return e;
}

// -------------------------------------------------------------------------------------------------------------
// Calibration of the efficiency parameters

namespace {
// Seconds of a measurement split into what each parameter scales: DRAM time at full bandwidth, compute time
// at full peak (shape utilisation included), launches × 1 s, plus what no parameter touches.
struct Split {
    double dram = 0, compute = 0, launches = 0, fixed = 0;
};

Split split_time(const Context& c, const ThroughputMeasurement& m, const Efficiency& eff) {
    Split s;
    auto take = [&](const std::vector<PhaseOp>& ops, double repeats) {
        for (const auto& op : ops) {
            if (op.name == "all_reduce") {
                const Parts p = parts_of(c, op, Ceilings::derated);
                s.fixed += repeats * op.count * p.total();
                continue;
            }
            const Timing ideal = evaluate(op.cost, c.device, Ceilings::ideal);
            double util_compute = 0;
            for (const auto& t : op.cost.flop_terms)
                util_compute += t.flops / (c.device.execution_peak(t.format, t.unit).flops * t.utilization);
            const double mem = ideal.memory_seconds[0];
            const double other = std::max(ideal.memory_seconds[1], ideal.memory_seconds[2]);
            const double t_mem = mem / eff.dram_bandwidth, t_cmp = util_compute / eff.compute;
            // the ceiling that binds at the current parameters carries this op's time
            if (t_cmp >= t_mem && t_cmp >= other) s.compute += repeats * op.count * util_compute;
            else if (t_mem >= other) s.dram += repeats * op.count * mem;
            else s.fixed += repeats * op.count * other;
            s.launches += repeats * op.count * op.cost.launches;
        }
    };
    const double B = m.batch, P = m.prompt_tokens, n = m.gen_tokens;
    if (n > 0) {  // a tgN point times the decode steps only; the mean context stands for them (affine in c)
        const double mid = std::floor(P + (n + 1) / 2);
        take(forward_ops(*m.model, c.formats, B, 1, mid - 1, c.opt), n);
    } else {
        take(forward_ops(*m.model, c.formats, B, P, 0, c.opt), 1);
    }
    return s;
}
}  // namespace

Device calibrate_efficiency(const Device& device, const std::vector<ThroughputMeasurement>& points, std::string_view engine_name,
                            const std::string& kv_dtype, FitReport* report) {
    if (points.empty()) throw InvalidArgument("calibration needs at least one measurement");
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        if (!p.model) throw InvalidArgument("measurement " + std::to_string(i) + " has no model");
        check_size("measurement " + std::to_string(i) + " tokens_per_s", p.tokens_per_s, true);
        check_count("measurement " + std::to_string(i) + " prompt_tokens", p.prompt_tokens);
        check_count("measurement " + std::to_string(i) + " gen_tokens", p.gen_tokens);
        if (p.prompt_tokens + p.gen_tokens < 1)
            throw InvalidArgument("measurement " + std::to_string(i) + " has neither prompt nor generated tokens");
    }
    const Engine eng = engine(engine_name);
    Device dev = device;
    // x = (1/η_dram, launch overhead as seen by the engine, 1/η_compute)
    Eigen::Vector3d x(1 / device.efficiency.dram_bandwidth, device.efficiency.launch_overhead_s * eng.launch_overhead_scale,
                      1 / device.efficiency.compute);
    const Eigen::Vector3d prior = x;
    auto measured_seconds = [](const ThroughputMeasurement& m) {
        const double tokens = m.gen_tokens > 0 ? m.batch * m.gen_tokens : m.batch * m.prompt_tokens;
        return tokens / m.tokens_per_s;
    };
    auto predict = [&](const Device& d) {
        std::vector<double> out;
        for (const auto& m : points) {
            Workload w;
            w.quant = m.quant;
            w.batch = m.batch;
            w.prompt_tokens = m.prompt_tokens;
            w.gen_tokens = m.gen_tokens;
            w.engine = eng.name;
            w.kv_dtype = kv_dtype;
            const Estimate e = estimate(*m.model, d, w);
            out.push_back(m.gen_tokens > 0 ? e.decode_tokens_per_s_total : e.prefill_tokens_per_s);
        }
        return out;
    };
    FitReport rep;
    for (const auto& m : points) {
        rep.labels.push_back(m.label);
        rep.measured.push_back(m.tokens_per_s);
    }
    rep.predicted_before = predict(device);

    const auto rows = static_cast<Eigen::Index>(points.size());
    constexpr double kPrior = 0.05;  // weak pull towards the starting values, relative
    for (int it = 0; it < 8; ++it) {
        Efficiency eff = device.efficiency;
        eff.dram_bandwidth = 1 / x(0);
        eff.compute = 1 / x(2);
        Eigen::MatrixXd A(rows + 3, 3);
        Eigen::VectorXd b(rows + 3);
        for (Eigen::Index r = 0; r < rows; ++r) {
            const ThroughputMeasurement& m = points[static_cast<std::size_t>(r)];
            Context c = make_context(*m.model, device, m.quant, kv_dtype, false, eng.name, 1);
            const Split s = split_time(c, m, eff);
            const double t = measured_seconds(m);
            // decode: time of all steps of the batch; prefill: time of the prompt
            A(r, 0) = s.dram / t;
            A(r, 1) = s.launches / t;
            A(r, 2) = s.compute / t;
            b(r) = 1.0 - s.fixed / t;
        }
        for (int k = 0; k < 3; ++k) {
            A.row(rows + k).setZero();
            A(rows + k, k) = kPrior / prior(k);
            b(rows + k) = kPrior;
        }
        Eigen::Vector3d next = A.colPivHouseholderQr().solve(b);
        next(0) = std::max(next(0), 1.0);  // efficiencies cannot exceed 1
        next(2) = std::max(next(2), 1.0);
        next(1) = std::max(next(1), 0.0);
        rep.iterations = it + 1;
        const bool done = (next - x).cwiseAbs().maxCoeff() < 1e-9 * std::max(1.0, x.cwiseAbs().maxCoeff());
        x = next;
        if (done) break;
    }
    dev.efficiency.dram_bandwidth = 1 / x(0);
    dev.efficiency.compute = 1 / x(2);
    dev.efficiency.launch_overhead_s = x(1) / eng.launch_overhead_scale;
    dev.efficiency.provenance.source = "fitted to " + std::to_string(points.size()) + " measurement(s) with engine " +
                                       eng.name + " (least squares on relative error; started from: " +
                                       device.efficiency.provenance.source + ")";
    dev.efficiency.provenance.uncertain = "";
    rep.predicted_after = predict(dev);
    auto rms = [&](const std::vector<double>& pred) {
        double s = 0;
        for (std::size_t i = 0; i < pred.size(); ++i) s += std::pow(pred[i] / rep.measured[i] - 1, 2);
        return std::sqrt(s / static_cast<double>(pred.size()));
    };
    rep.rms_relative_error_before = rms(rep.predicted_before);
    rep.rms_relative_error_after = rms(rep.predicted_after);
    rep.dram_bandwidth = dev.efficiency.dram_bandwidth;
    rep.compute = dev.efficiency.compute;
    rep.launch_overhead_s = dev.efficiency.launch_overhead_s;
    if (report) *report = rep;
    return dev;
}

}  // namespace roofline
