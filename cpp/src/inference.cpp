#include "roofline/inference.hpp"

#include "roofline/errors.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/quant.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
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
        x.logits_last_token_only = true;  // serving engines keep only the last position's logits
        x.runtime_overhead_bytes = 1.0e9;
        x.source = "a compiled engine replaying CUDA graphs (torch.compile mode=reduce-overhead, as gpt-fast): no CPU "
                   "launch cost, but each kernel still pays the device's fixed per-kernel time (ramp-up, tail, "
                   "dependency wait)";
        e.push_back(x);
    }
    {
        // cuda-graphs as pytorch-labs/gpt-fast builds the model (model.py, tp.py, quantize.py).
        Engine x = e.back();
        x.name = "gpt-fast";
        x.fused_qkv = true;          // model.py: one wqkv linear per attention
        x.vocab_parallel = false;    // tp.py shards only the attention and feed-forward linears
        x.dequant_overlapped = false;
        x.all_reduce = AllReduce::one_shot;  // README: tensor parallel runs with ENABLE_INTRA_NODE_COMM=1
        x.source = "pytorch-labs/gpt-fast: torch.compile mode=reduce-overhead (CUDA graphs); model.py projects Q, K, V "
                   "with one wqkv linear; tp.py shards wqkv/wo/w1/w3/w2 and all-reduces after attention and the "
                   "feed-forward, leaving the embedding and output head whole on every rank; the README runs tensor "
                   "parallel with ENABLE_INTRA_NODE_COMM=1 (PyTorch's intra-node all-reduce through direct peer "
                   "access, not NCCL's ring); quantize.py's int8 (weight.to(bf16) inside the compiled GEMV) and int4 "
                   "(_weight_int4pack_mm) kernels convert each weight before its multiply-add, so dequantization adds "
                   "to the loads (the README's achieved bandwidths fall from 1397 GB/s in bf16 to 1069 in int8 and "
                   "863 in int4 on Llama-2-7B)";
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

// Unquantized tensors of GPU schemes are kept in the model's training format; bf16 unless fp16 was asked.
std::vector<TensorFormat> tensor_formats_for(const Model& model, const std::string& quant) {
    return model.tensor_formats(quant, to_lower(quant) == "fp16" ? format_of(DType::fp16) : format_of(DType::bf16));
}

// What the engine and configuration decide of the phase options (the device decides the rest: apply_device).
PhaseOptions engine_options(const Engine& eng, const std::string& kv_dtype, bool flash, int tp) {
    PhaseOptions o;
    o.activation = parse_format(eng.activation);
    o.kv = parse_kv(kv_dtype);
    o.attention = flash ? ops::AttentionKind::flash : ops::AttentionKind::standard;
    o.logits_last_token_only = eng.logits_last_token_only;
    o.dequant_tile_rows = eng.dequant_tile_rows;
    o.dequant_overlapped = eng.dequant_overlapped;
    o.fused_qkv = eng.fused_qkv;
    o.vocab_parallel = eng.vocab_parallel;
    o.tensor_parallel = tp;
    o.gemv_max_rows = eng.gemv_max_rows;
    o.gemm_tile_m = eng.gemm_tile_m;
    o.gemm_tile_n = eng.gemm_tile_n;
    return o;
}

void apply_device(PhaseOptions& o, const Device& device) {
    if (o.attention == ops::AttentionKind::flash) {
        o.sram_bytes = device.has_level(Level::sram) ? device.sram_per_unit_bytes() : 32.0 * 1024;
        o.l2_bytes = device.has_level(Level::l2) ? device.capacity(Level::l2) : 0.0;
    }
    o.compute_units = device.compute_units;
}

double interconnect_for(const Device& device, int tp) {
    if (tp <= 1) return 0;
    const double bps = device.interconnect_bandwidth();
    if (bps <= 0)
        throw InvalidArgument("tensor_parallel " + std::to_string(tp) + " needs an interconnect; device '" + device.id +
                              "' lists none");
    return bps;
}

void check_formats(const Model& model, const std::vector<TensorFormat>& formats) {
    if (formats.size() != model.tensors.size())
        throw InvalidArgument("estimate plan: one format per weight tensor is needed (" + std::to_string(model.tensors.size()) +
                              "), got " + std::to_string(formats.size()));
}

Context make_context(const Model& model, const Device& device, const std::string& quant, const std::string& kv_dtype,
                     bool flash, const std::string& engine_name, int tp, const std::vector<TensorFormat>* formats = nullptr) {
    Context c{device, engine(engine_name), {}, {}, 0};
    c.device.efficiency.launch_overhead_s *= c.eng.launch_overhead_scale;
    c.opt = engine_options(c.eng, kv_dtype, flash, tp);
    apply_device(c.opt, device);
    if (formats) {
        check_formats(model, *formats);
        c.formats = *formats;
    } else {
        c.formats = tensor_formats_for(model, quant);
    }
    c.interconnect_Bps = interconnect_for(device, tp);
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

// An all-reduce of `bytes` per rank over N ranks (Engine::all_reduce), without its kernel's launch: the steps'
// latency (derated only) and the bytes each rank moves over its links. ring: 2(N−1) steps of bytes/N each;
// one_shot: 2 steps (signal, wait) and the N−1 peers' partial sums read.
Parts all_reduce_parts(AllReduce algorithm, double tensor_parallel, double step_latency_s, double interconnect_Bps,
                       double bytes, Ceilings ceilings) {
    const double n = tensor_parallel;
    const bool ring = algorithm == AllReduce::ring;
    const double steps = ring ? 2.0 * (n - 1) : 2.0;
    Parts p;
    p.overhead = ceilings == Ceilings::derated ? steps * step_latency_s : 0.0;
    p.memory[0] = (ring ? 2.0 * (n - 1) / n : n - 1) * bytes / interconnect_Bps;
    return p;
}

// ---- op times (see OpTimes)
constexpr std::size_t kMat = 0, kOther = 1, kSer = 2, kMem = 3, kOvh = 6, kIdeal = 7, kFlops = 14, kBytes = 15;
constexpr std::size_t kOffsets[2] = {0, kIdeal};

// An op's times at both ceilings. `split`: matrix-unit compute in kMat and the rest in kOther, for ops whose matrix
// work a utilization divides; otherwise all compute in kOther (the ops no utilization divides).
OpTimes times_of(const OpCost& op, const Device& device, bool split = true) {
    OpTimes t;
    for (std::size_t k = 0; k < 2; ++k) {
        const std::size_t o = kOffsets[k];
        const Timing r = evaluate(op, device, k == 0 ? Ceilings::derated : Ceilings::ideal);
        t.v[o + kMat] = split ? r.compute_seconds_by_unit[static_cast<std::size_t>(Unit::matrix)] : 0.0;
        t.v[o + kOther] = split ? r.compute_seconds_by_unit[static_cast<std::size_t>(Unit::vector)] : r.compute_seconds - r.serial_seconds;
        t.v[o + kSer] = r.serial_seconds;
        for (std::size_t i = 0; i < kNumLevels; ++i) t.v[o + kMem + i] = r.memory_seconds[i];
        t.v[o + kOvh] = r.overhead_seconds;
    }
    t.v[kFlops] = op.flops();
    t.v[kBytes] = op.bytes();
    return t;
}

OpTimes minus(OpTimes a, const OpTimes& b) {
    for (std::size_t j = 0; j < OpTimes::kSize; ++j) a.v[j] -= b.v[j];
    return a;
}

inline void axpy(OpTimes& y, double a, const OpTimes& x) {
    for (std::size_t j = 0; j < OpTimes::kSize; ++j) y.v[j] += a * x.v[j];
}

// Every component but the launch overhead × factor: an op `factor` times as large, launched once.
inline OpTimes scaled_work(OpTimes t, double factor) {
    for (std::size_t j = 0; j < OpTimes::kSize; ++j)
        if (j != kOvh && j != kIdeal + kOvh) t.v[j] *= factor;
    return t;
}

// Ideal compute − DRAM seconds: > 0 where an op is compute-bound against DRAM (no serial part when ideal).
inline double ideal_balance(const OpTimes& t) { return t.v[kIdeal + kMat] + t.v[kIdeal + kOther] - t.v[kIdeal + kMem]; }

PhaseBound bound_code(double compute, const double* memory, double overhead) {
    double best = compute;
    PhaseBound b = compute > 0 ? PhaseBound::compute : PhaseBound::none;
    for (std::size_t i = 0; i < kNumLevels; ++i)
        if (memory[i] > best) {
            best = memory[i];
            b = static_cast<PhaseBound>(static_cast<int>(PhaseBound::dram) + static_cast<int>(i));
        }
    if (overhead > best) b = PhaseBound::overhead;
    return b;
}

// One op's derated time, ideal time and derated compute time (its serial part included); matrix compute ÷ `util`
// when derated.
struct OpTotal {
    double derated = 0, ideal = 0, compute = 0;
};
inline OpTotal op_total(const OpTimes& t, double util) {
    const double* v = t.v.data();
    OpTotal r;
    double m = v[kMat] / util + v[kOther];
    r.compute = m + v[kSer];
    for (std::size_t i = 0; i < kNumLevels; ++i) m = std::max(m, v[kMem + i]);
    r.derated = m + v[kSer] + v[kOvh];
    double mi = v[kIdeal + kMat] + v[kIdeal + kOther];
    for (std::size_t i = 0; i < kNumLevels; ++i) mi = std::max(mi, v[kIdeal + kMem + i]);
    r.ideal = mi + v[kIdeal + kOvh];
    return r;
}

// A phase being summed: every component × count, and the per-op totals.
struct Acc {
    OpTimes sum;
    double seconds = 0, ideal = 0, compute = 0;
    void add(double count, const OpTimes& t, const OpTotal& total) {
        seconds += count * total.derated;
        ideal += count * total.ideal;
        compute += count * total.compute;
        for (std::size_t j = 0; j < OpTimes::kSize; ++j) sum.v[j] += count * t.v[j];
    }
    PhaseSums sums() const {
        PhaseSums p;
        p.seconds = seconds;
        p.ideal_seconds = ideal;
        p.compute = compute;
        for (std::size_t i = 0; i < kNumLevels; ++i) p.memory[i] = sum.v[kMem + i];
        p.overhead = sum.v[kOvh];
        p.flops = sum.v[kFlops];
        p.bytes = sum.v[kBytes];
        return p;
    }
};

std::string op_bound(const OpTimes& t, double util, bool collective) {
    const double compute = t.v[kMat] / util + t.v[kOther] + t.v[kSer];
    const PhaseBound b = bound_code(compute, t.v.data() + kMem, t.v[kOvh]);
    if (collective && (b == PhaseBound::dram || b == PhaseBound::l2 || b == PhaseBound::sram)) return "interconnect";
    return phase_bound_names()[static_cast<std::size_t>(b)];
}

// Breakdown rows of one phase, merged by op name (the first op of a name gives the row its bound).
struct RowSink {
    std::vector<BreakdownRow>* rows;
    std::vector<long> index;  // name id -> row position, -1 before the first
    const char* phase;
    RowSink(std::vector<BreakdownRow>* r, std::size_t names, const char* ph)
        : rows(r), index(r ? names : 0, -1), phase(ph) {}
    void add(std::uint32_t name, const std::vector<std::string>& names, double instances, double flops, double bytes,
             double seconds, const std::function<std::string()>& bound) {
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
        rows->push_back({phase, names[name], instances, flops, bytes, seconds, bound()});
    }
};

// Σ_{x=0}^{n-1} max_k (a_k + b_k·x), exactly: split [0, n-1] where the upper envelope changes line. The line
// highest at both ends is highest throughout (a difference of affine functions is affine): one piece.
double sum_max_affine(const double* a, const double* b, std::size_t k, double n) {
    if (n <= 0 || k == 0) return 0;
    const double last = n - 1;
    std::size_t top = 0;
    for (std::size_t i = 1; i < k; ++i)
        if (a[i] > a[top]) top = i;
    bool dominates = true;
    for (std::size_t i = 0; i < k && dominates; ++i) dominates = !(a[i] + b[i] * last > a[top] + b[top] * last);
    if (dominates) return n * a[top] + b[top] * last * n / 2;
    std::array<double, 2 + 2 * 28> cuts{};  // up to 8 lines: 2 ends + 2 per pair
    std::size_t nc = 0;
    cuts[nc++] = 0;
    cuts[nc++] = last;
    for (std::size_t i = 0; i < k && i < 8; ++i)
        for (std::size_t j = i + 1; j < k && j < 8; ++j) {
            const double db = b[i] - b[j];
            if (db == 0) continue;
            const double x = (a[j] - a[i]) / db;
            if (x > 0 && x < last) {
                cuts[nc++] = std::floor(x);
                cuts[nc++] = std::floor(x) + 1;
            }
        }
    std::sort(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(nc));
    nc = static_cast<std::size_t>(std::unique(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(nc)) - cuts.begin());
    double total = 0, lo = 0;
    for (std::size_t c = 0; c < nc; ++c) {
        const double hi = cuts[c];
        if (hi < lo) continue;
        const double mid = (lo + hi) / 2;
        std::size_t best = 0;
        for (std::size_t i = 1; i < k; ++i)
            if (a[i] + b[i] * mid > a[best] + b[best] * mid) best = i;
        const double count = hi - lo + 1;
        total += count * a[best] + b[best] * (lo + hi) * count / 2;
        lo = hi + 1;
    }
    return total;
}

void check_workload(const Workload& w) {
    EstimatePlan::check_point(w.batch, w.prompt_tokens, w.gen_tokens);
    if (w.tensor_parallel < 1 || w.tensor_parallel > 1024)
        throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(w.tensor_parallel));
    if (w.draft) {
        check_count("draft_tokens", w.draft_tokens);
        if (w.draft_tokens < 1 || w.draft_tokens > 1024)
            throw InvalidArgument("draft_tokens (gamma) must be within [1, 1024] with a draft model, got " +
                                  std::to_string(w.draft_tokens));
        check_range("acceptance", w.acceptance, 0.0, 1.0);
    }
}

// Decode attention of one slot over contexts c0..c1 in closed form: its time components are affine in the
// context up to the slot's window and constant beyond it.
struct AttentionSum {
    double seconds = 0, ideal_seconds = 0, compute = 0, overhead = 0, flops = 0, bytes = 0;
    std::array<double, kNumLevels> memory{};
};

// base + x × per_row (+ y × extra), in one pass.
inline void affine(OpTimes& t, const OpTimes& base, double x, const OpTimes& per_x) {
    for (std::size_t j = 0; j < OpTimes::kSize; ++j) t.v[j] = base.v[j] + x * per_x.v[j];
}
inline void affine(OpTimes& t, const OpTimes& base, double x, const OpTimes& per_x, double y, const OpTimes& per_y) {
    for (std::size_t j = 0; j < OpTimes::kSize; ++j) t.v[j] = base.v[j] + x * per_x.v[j] + y * per_y.v[j];
}

// Utilizations of tiled linear slots, computed once per group (output features) and rows within one phase.
struct UtilCache {
    static constexpr std::size_t kGroups = 16;
    std::array<double, kGroups> rows{}, util{};
    UtilCache() { rows.fill(-1); }
    double get(const EstimatePlan::Slot& s, const PhaseOptions& options, double r) {
        if (s.group >= kGroups) return linear_utilization(*s.op, options, r);
        if (rows[s.group] != r) {
            rows[s.group] = r;
            util[s.group] = linear_utilization(*s.op, options, r);
        }
        return util[s.group];
    }
};

// A slot other than attention at `rows` rows; `util` gets the utilization its matrix compute is divided by.
inline void slot_times(OpTimes& t, const EstimatePlan::Slot& s, const PhaseOptions& options, double rows, double& util,
                       UtilCache& cache) {
    util = 1;
    switch (s.op->kind) {
        case SlotKind::linear:
            if (rows <= options.gemv_max_rows) {
                affine(t, s.base, rows, s.per_row);
            } else {
                affine(t, s.tiled_base, rows, s.tiled_row, linear_extra_dequant_passes(*s.op, options, rows), s.tiled_pass);
                util = cache.get(s, options, rows);
            }
            break;
        case SlotKind::moe:
            affine(t, s.base, rows * s.op->top_k, s.per_row, ops::expected_active_experts(s.op->experts, s.op->top_k, rows), s.extra);
            break;
        default:  // rows, all_reduce
            affine(t, s.base, rows, s.per_row);
            break;
    }
}

}  // namespace

// -------------------------------------------------------------------------------------------------------------
// EstimatePlan

const std::vector<std::string>& phase_bound_names() {
    static const std::vector<std::string> names = {"", "none", "compute", "memory:dram", "memory:l2", "memory:sram", "overhead"};
    return names;
}

void EstimatePlan::check_point(double batch, double prompt, double gen) {
    // Upper bounds far beyond any deployment, low enough that the ops of any catalogued model stay within
    // kMaxOpCount and the estimate's searches stay bounded.
    constexpr double kMaxBatch = 1 << 20, kMaxTokens = 1 << 30;
    check_count("batch", batch);
    if (batch < 1) throw InvalidArgument("batch must be >= 1, got " + std::to_string(batch));
    if (batch > kMaxBatch) throw InvalidArgument("batch must be within [1, 1048576 = 2^20], got " + std::to_string(batch));
    check_count("prompt_tokens", prompt);
    check_count("gen_tokens", gen);
    if (prompt + gen < 1) throw InvalidArgument("prompt_tokens + gen_tokens must be >= 1 (nothing to estimate), got 0");
    if (prompt + gen > kMaxTokens)
        throw InvalidArgument("prompt_tokens + gen_tokens (the context) must be at most 1073741824 = 2^30, got " +
                              std::to_string(prompt) + " + " + std::to_string(gen));
}

struct EstimatePlan::Structure {
    PlanConfig config;
    Engine engine;
    PhaseOptions options;  // without the device's parts (apply_device)
    std::string model_id;
    Architecture arch;
    double parameters = 0, weight_bytes = 0;
    double replicated_bytes = 0;  // weights every tensor-parallel rank holds whole (norms, whole-vocabulary tables)
    std::vector<OpSlot> slots;
    std::vector<std::string> names;        // slot name ids, first appearance order
    std::vector<std::uint32_t> slot_name;  // per slot, its index in names
    // per slot, the op built at the points its times are taken from (see the constructor)
    std::vector<std::vector<OpCost>> probes;
};

std::shared_ptr<const EstimatePlan::Structure> EstimatePlan::structure(const Model& model, const PlanConfig& config,
                                                                       const std::vector<TensorFormat>* formats) {
    if (config.tensor_parallel < 1 || config.tensor_parallel > 1024)
        throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(config.tensor_parallel));
    auto st = std::make_shared<Structure>();
    Structure& s = *st;
    s.config = config;
    s.engine = engine(config.engine);
    s.options = engine_options(s.engine, config.kv_dtype, config.flash_attention, config.tensor_parallel);
    std::vector<TensorFormat> own;
    if (formats) check_formats(model, *formats);
    else own = tensor_formats_for(model, config.quant);
    const std::vector<TensorFormat>& f = formats ? *formats : own;
    s.model_id = model.arch.id;
    s.arch = model.arch;
    s.parameters = model.parameters();
    for (std::size_t i = 0; i < f.size(); ++i) {
        s.weight_bytes += f[i].bytes;
        if (replicated_under_tensor_parallel(model.tensors[i], s.options)) s.replicated_bytes += f[i].bytes;
    }
    s.slots = forward_slots(model, f, s.options);
    for (const OpSlot& op : s.slots) {
        const auto found = std::find(s.names.begin(), s.names.end(), op.name);
        s.slot_name.push_back(static_cast<std::uint32_t>(found - s.names.begin()));
        if (found == s.names.end()) s.names.push_back(op.name);
    }
    const PhaseOptions& o = s.options;
    for (const OpSlot& op : s.slots) {
        std::vector<OpCost> p;
        switch (op.kind) {
            case SlotKind::rows:  // 0 and 1 rows
                p = {slot_cost(op, o, 0, 1, 0), slot_cost(op, o, 1, 1, 0)};
                break;
            case SlotKind::all_reduce:  // timed from bytes_per_row on the device's interconnect
                break;
            case SlotKind::linear:  // 0 and 1 rows through mat-vec and tiled kernels, and one more dequantization
                p = {linear_gemm(op, o, 0, Unit::vector), linear_gemm(op, o, 1, Unit::vector),
                     linear_gemm(op, o, 0, Unit::matrix), linear_gemm(op, o, 1, Unit::matrix), linear_dequant_pass(op, o)};
                break;
            case SlotKind::moe: {
                // one expert picked by every token: 0 tokens route nothing; 1 token 1 row to 1 active expert, 2 tokens
                // 2 rows to 1
                OpSlot one = op;
                one.experts = 1;
                one.top_k = 1;
                p = {slot_cost(one, o, 0, 1, 0), slot_cost(one, o, 1, 1, 0), slot_cost(one, o, 2, 1, 0)};
                break;
            }
            case SlotKind::attention: {
                OpSlot full = op;  // no sequence; one sequence at contexts 1 and 2 (inside any window)
                full.window = 0;
                p = {slot_cost(full, o, 0, 1, 0), slot_cost(full, o, 1, 1, 0), slot_cost(full, o, 1, 1, 1)};
                break;
            }
        }
        s.probes.push_back(std::move(p));
    }
    return st;
}

namespace {
// Validate in the order estimate() always has (engine, formats, KV, quantization, interconnect, heads), then build.
std::shared_ptr<const EstimatePlan::Structure> checked_structure(const Model& model, const Device& device, const PlanConfig& config,
                                                                 const std::vector<TensorFormat>* formats) {
    if (config.tensor_parallel < 1 || config.tensor_parallel > 1024)
        throw InvalidArgument("tensor_parallel must be within [1, 1024], got " + std::to_string(config.tensor_parallel));
    const Context c = make_context(model, device, config.quant, config.kv_dtype, config.flash_attention, config.engine,
                                   config.tensor_parallel, formats);
    return EstimatePlan::structure(model, config, &c.formats);
}
}  // namespace

EstimatePlan::EstimatePlan(const Model& model, const Device& device, const PlanConfig& config,
                           const std::vector<TensorFormat>* formats)
    : EstimatePlan(device, checked_structure(model, device, config, formats)) {}

std::shared_ptr<const Device> EstimatePlan::device_for_engine(const Device& device, std::string_view engine_name) {
    auto d = std::make_shared<Device>(device);
    d->efficiency.launch_overhead_s *= engine(engine_name).launch_overhead_scale;
    return d;
}

const std::string& EstimatePlan::model_id() const { return structure_->model_id; }
const std::string& EstimatePlan::engine_name() const { return engine_->name; }

EstimatePlan::EstimatePlan(const Device& device, const std::shared_ptr<const Structure>& structure)
    : EstimatePlan(device_for_engine(device, structure ? structure->config.engine : "llama.cpp"), structure) {}

EstimatePlan::EstimatePlan(std::shared_ptr<const Device> engine_device, const std::shared_ptr<const Structure>& structure) {
    if (!structure) throw InvalidArgument("estimate plan: no structure");
    if (!engine_device) throw InvalidArgument("estimate plan: no device");
    const Structure& st = *structure;
    const Device& device = *engine_device;
    config_ = st.config;
    engine_ = &st.engine;
    options_ = st.options;
    apply_device(options_, device);
    interconnect_Bps_ = interconnect_for(device, config_.tensor_parallel);
    device_ = std::move(engine_device);
    device_id_ = device.id;
    structure_ = structure;
    parameters_ = st.parameters;
    weight_bytes_ = st.weight_bytes;
    const double tp_ranks = config_.tensor_parallel;
    device_weight_bytes_ = tp_ranks > 1 ? (st.weight_bytes - st.replicated_bytes) / tp_ranks + st.replicated_bytes : st.weight_bytes;
    dram_bandwidth_ = device.bandwidth(Level::dram);
    capacity_ = device.capacity(Level::dram);

    // Flash attention's tiles must fit the device's SRAM: checked here, not at the first prefill.
    if (options_.attention == ops::AttentionKind::flash)
        for (const OpSlot& op : st.slots)
            if (op.kind == SlotKind::attention) {
                slot_cost(op, options_, 1, 2, 0);
                break;
            }

    slots_.reserve(st.slots.size());
    const double tp = options_.tensor_parallel;
    for (std::size_t k = 0; k < st.slots.size(); ++k) {
        const OpSlot& op = st.slots[k];
        const std::vector<OpCost>& p = st.probes[k];
        Slot s;
        s.op = &op;
        s.name = st.slot_name[k];
        auto times = [&](std::size_t i) { return times_of(p[i], device); };
        switch (op.kind) {
            case SlotKind::rows:
                s.base = times(0);
                s.per_row = minus(times(1), s.base);
                break;
            case SlotKind::all_reduce:
                for (std::size_t c = 0; c < 2; ++c) {
                    const Ceilings ceil = c == 0 ? Ceilings::derated : Ceilings::ideal;
                    const Parts parts = all_reduce_parts(engine_->all_reduce, tp, engine_->collective_latency_s,
                                                         interconnect_Bps_, op.bytes_per_row, ceil);
                    // one kernel: its launch, then the steps
                    s.base.v[kOffsets[c] + kOvh] = parts.overhead + (c == 0 ? device.efficiency.launch_overhead_s : 0.0);
                    s.per_row.v[kOffsets[c] + kMem] = parts.memory[0];
                }
                break;
            case SlotKind::linear: {
                std::uint32_t g = 0;  // the utilization group: same output features and rows
                for (; g < groups_; ++g) {
                    const auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& o) {
                        return o.op->kind == SlotKind::linear && o.group == g;
                    });
                    if (it != slots_.end() && it->op->n == op.n && it->op->per_sequence == op.per_sequence) break;
                }
                if (g == groups_) ++groups_;
                s.group = g;
                s.base = times(0);
                s.per_row = minus(times(1), s.base);
                s.tiled_base = times(2);
                s.tiled_row = minus(times(3), s.tiled_base);
                s.tiled_pass = times(4);
                break;
            }
            case SlotKind::moe: {
                s.base = times(0);
                const OpTimes t1 = times(1), t2 = times(2);
                s.per_row = minus(t2, t1);
                s.extra = minus(minus(t1, s.base), s.per_row);
                break;
            }
            case SlotKind::attention: {
                s.base = times(0);
                const OpTimes c1 = times(1), c2 = times(2);
                s.extra = minus(c2, c1);
                s.per_row = minus(minus(c1, s.base), s.extra);
                attention_.push_back(slots_.size());
                break;
            }
        }
        slots_.push_back(std::move(s));
    }

    // memory
    for (int l = 0; l < structure_->arch.n_layer; ++l) {
        const double w = structure_->arch.window.empty() ? 0 : structure_->arch.window[static_cast<std::size_t>(l)];
        if (w > 0) windows_.push_back({w, 1});
        else full_layers_ += 1;
    }
    std::sort(windows_.begin(), windows_.end());
    {
        std::vector<std::pair<double, double>> merged;
        for (const auto& [w, n] : windows_)
            if (!merged.empty() && merged.back().first == w) merged.back().second += n;
            else merged.push_back({w, n});
        windows_ = std::move(merged);
    }
    act_bytes_ = options_.activation.bytes_per_element();
    kv_bytes_ = options_.kv.bytes_per_element();
    widest_ = std::max({structure_->arch.q_dim() + 2 * structure_->arch.kv_dim(), (structure_->arch.mlp == MlpKind::gated ? 2.0 : 1.0) * structure_->arch.ffn,
                        2.0 * structure_->arch.expert_ffn * std::max(1, structure_->arch.n_expert_used)});

    // compute_bound_batch: a decode step's Σ ideal (compute − DRAM) as a function of the batch
    for (const Slot& s : slots_) {
        const double n = s.op->count;
        switch (s.op->kind) {
            case SlotKind::rows:
            case SlotKind::all_reduce:
                cb_vec0_ += n * ideal_balance(s.base);
                cb_mat0_ += n * ideal_balance(s.base);
                cb_vec1_ += n * ideal_balance(s.per_row);
                cb_mat1_ += n * ideal_balance(s.per_row);
                break;
            case SlotKind::linear:
                cb_vec0_ += n * ideal_balance(s.base);
                cb_vec1_ += n * ideal_balance(s.per_row);
                cb_mat0_ += n * ideal_balance(s.tiled_base);
                cb_mat1_ += n * ideal_balance(s.tiled_row);
                cb_pass_ += n * ideal_balance(s.tiled_pass);
                break;
            case SlotKind::moe: {
                cb_vec0_ += n * ideal_balance(s.base);
                cb_mat0_ += n * ideal_balance(s.base);
                cb_vec1_ += n * s.op->top_k * ideal_balance(s.per_row);
                cb_mat1_ += n * s.op->top_k * ideal_balance(s.per_row);
                bool merged = false;
                for (auto& e : cb_active_)
                    if (e[0] == s.op->experts && e[1] == s.op->top_k) {
                        e[2] += n * ideal_balance(s.extra);
                        merged = true;
                    }
                if (!merged) cb_active_.push_back({s.op->experts, s.op->top_k, n * ideal_balance(s.extra)});
                break;
            }
            case SlotKind::attention:
                cb_vec0_ += n * ideal_balance(s.base);
                cb_mat0_ += n * ideal_balance(s.base);
                cb_attention_.push_back({s.op->window, n * ideal_balance(s.per_row), n * ideal_balance(s.extra)});
                break;
        }
    }

    // envelopes of the slots affine in their rows alone
    for (std::size_t g = 0; g < 2; ++g) {
        Envelope& env = envelope_[g];
        std::vector<const Slot*> members;
        members.reserve(slots_.size());
        for (const Slot& s : slots_)
            if ((s.op->kind == SlotKind::rows || s.op->kind == SlotKind::all_reduce) && s.op->per_sequence == (g == 1))
                members.push_back(&s);
        // the lines of one slot at one ceiling: compute, each memory level (overhead is added to all)
        auto lines = [](const Slot& s, std::size_t c, std::array<std::array<double, 2>, 4>& out) {
            const std::size_t o = kOffsets[c];
            out[0] = {s.base.v[o + kMat] + s.base.v[o + kOther], s.per_row.v[o + kMat] + s.per_row.v[o + kOther]};
            for (std::size_t i = 0; i < kNumLevels; ++i) out[1 + i] = {s.base.v[o + kMem + i], s.per_row.v[o + kMem + i]};
        };
        std::vector<double> cuts{0};
        std::array<std::array<double, 2>, 4> l{};
        for (const Slot* s : members) {
            axpy(env.base, s->op->count, s->base);
            axpy(env.per_row, s->op->count, s->per_row);
            for (std::size_t c = 0; c < 2; ++c) {
                lines(*s, c, l);
                for (std::size_t i = 0; i < 4; ++i)
                    for (std::size_t j = i + 1; j < 4; ++j) {
                        const double db = l[i][1] - l[j][1];
                        if (db == 0) continue;
                        const double x = (l[j][0] - l[i][0]) / db;
                        if (x > 0 && std::isfinite(x)) cuts.push_back(x);
                    }
            }
        }
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        env.x = cuts;
        for (std::size_t k = 0; k < cuts.size(); ++k) {
            // which line is on top inside the interval: look at its middle (past the last cut: one beyond it)
            const double probe = k + 1 < cuts.size() ? (cuts[k] + cuts[k + 1]) / 2 : 2 * cuts[k] + 1;
            std::array<double, 4> sum{};
            for (const Slot* s : members)
                for (std::size_t c = 0; c < 2; ++c) {
                    lines(*s, c, l);
                    std::size_t top = 0;
                    for (std::size_t i = 1; i < 4; ++i)
                        if (l[i][0] + l[i][1] * probe > l[top][0] + l[top][1] * probe) top = i;
                    const std::size_t o = kOffsets[c];
                    sum[2 * c] += s->op->count * (l[top][0] + s->base.v[o + kSer] + s->base.v[o + kOvh]);
                    sum[2 * c + 1] += s->op->count * (l[top][1] + s->per_row.v[o + kSer] + s->per_row.v[o + kOvh]);
                }
            env.lines.push_back(sum);
        }
    }
}

namespace {
inline OpTimes decode_attention_times(const EstimatePlan::Slot& s, double batch, double context) {
    OpTimes per_seq = s.per_row;
    axpy(per_seq, context, s.extra);
    OpTimes t = s.base;
    axpy(t, batch, per_seq);
    return t;
}

AttentionSum attention_sum(const EstimatePlan::Slot& s, double batch, double c0, double c1) {
    AttentionSum r;
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
    const double* base = s.base.v.data();
    const double* per_seq = s.per_row.v.data();
    const double* per_ctx = s.extra.v.data();
    for (std::size_t g = 0; g < nseg; ++g) {
        const Segment& seg = segs[g];
        const double m = seg.to - seg.from + 1;
        const double context = seg.grows ? seg.from : w;
        const double slope = seg.grows ? batch : 0.0;  // d(component)/d(context) = batch × per_ctx
        const double arith = m * (m - 1) / 2;          // Σ x for x = 0..m-1
        // one step at the segment's first context: base + batch × (per_seq + context × per_ctx)
        auto at = [&](std::size_t j) { return base[j] + batch * (per_seq[j] + context * per_ctx[j]); };
        double sec[2];
        for (std::size_t k = 0; k < 2; ++k) {
            const std::size_t o = kOffsets[k];
            const double a[4] = {at(o + kMat) + at(o + kOther), at(o + kMem), at(o + kMem + 1), at(o + kMem + 2)};
            const double b[4] = {slope * (per_ctx[o + kMat] + per_ctx[o + kOther]), slope * per_ctx[o + kMem],
                                 slope * per_ctx[o + kMem + 1], slope * per_ctx[o + kMem + 2]};
            const double serial = m * at(o + kSer) + slope * per_ctx[o + kSer] * arith;
            sec[k] = sum_max_affine(a, b, 4, m) + serial + m * at(o + kOvh);
            if (k == 0) {
                r.compute += m * a[0] + b[0] * arith + serial;
                for (std::size_t i = 0; i < kNumLevels; ++i) r.memory[i] += m * a[1 + i] + b[1 + i] * arith;
            }
        }
        r.seconds += sec[0];
        r.ideal_seconds += sec[1];
        r.overhead += m * at(kOvh);
        r.flops += m * at(kFlops) + slope * per_ctx[kFlops] * arith;
        r.bytes += m * at(kBytes) + slope * per_ctx[kBytes] * arith;
    }
    return r;
}
}  // namespace

namespace {
// The envelope at `rows`: derated and ideal time of its slots, and their components, added to a phase.
inline void add_envelope(Acc& acc, const EstimatePlan::Envelope& env, double rows) {
    if (env.x.empty()) return;
    const auto k = static_cast<std::size_t>(std::upper_bound(env.x.begin(), env.x.end(), rows) - env.x.begin());
    const std::array<double, 4>& l = env.lines[k == 0 ? 0 : k - 1];
    acc.seconds += l[0] + l[1] * rows;
    acc.ideal += l[2] + l[3] * rows;
    const double* b = env.base.v.data();
    const double* r = env.per_row.v.data();
    acc.compute += b[kMat] + b[kOther] + b[kSer] + rows * (r[kMat] + r[kOther] + r[kSer]);
    for (std::size_t j = 0; j < OpTimes::kSize; ++j) acc.sum.v[j] += b[j] + rows * r[j];
}
inline bool in_envelope(const OpSlot& op) { return op.kind == SlotKind::rows || op.kind == SlotKind::all_reduce; }
}  // namespace

PhaseSums EstimatePlan::sum_slots(double batch, double tokens, double past, const std::vector<OpTimes>* attention,
                                  std::vector<BreakdownRow>* breakdown, const char* phase) const {
    Acc acc;
    UtilCache cache;
    RowSink sink(breakdown, structure_->names.size(), phase);
    std::size_t a = 0;
    OpTimes t;
    for (const Slot& s : slots_) {
        double util = 1;
        if (s.op->kind == SlotKind::attention) {
            if (tokens == 1) {
                const double context = past + 1;
                t = decode_attention_times(s, batch, s.op->window > 0 ? std::min(context, s.op->window) : context);
            } else if (attention) {
                t = scaled_work((*attention)[a], batch);
            } else {
                t = scaled_work(times_of(slot_cost(*s.op, options_, 1, tokens, past), *device_, false), batch);
            }
            ++a;
        } else {
            const bool envelope = in_envelope(*s.op);
            if (envelope && !breakdown) continue;  // summed below
            slot_times(t, s, options_, slot_rows(*s.op, batch, tokens), util, cache);
            if (envelope) {  // a breakdown row only: the phase's numbers come from the envelope
                const OpTotal tot = op_total(t, util);
                sink.add(s.name, structure_->names, s.op->count, s.op->count * t.v[kFlops], s.op->count * t.v[kBytes],
                         s.op->count * tot.derated, [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); });
                continue;
            }
        }
        const OpTotal tot = op_total(t, util);
        acc.add(s.op->count, t, tot);
        if (breakdown) {
            sink.add(s.name, structure_->names, s.op->count, s.op->count * t.v[kFlops], s.op->count * t.v[kBytes], s.op->count * tot.derated,
                     [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); });
        }
    }
    add_envelope(acc, envelope_[0], batch * tokens);
    add_envelope(acc, envelope_[1], batch);
    return acc.sums();
}

std::vector<OpTimes> EstimatePlan::prefill_attention(double prompt) const {
    std::vector<OpTimes> out;
    if (prompt <= 1) return out;  // one token: decode attention, affine in the batch
    out.reserve(attention_.size());
    for (std::size_t i : attention_) out.push_back(times_of(slot_cost(*slots_[i].op, options_, 1, prompt, 0), *device_, false));
    return out;
}

PhaseSums EstimatePlan::prefill(double batch, double prompt, const std::vector<OpTimes>& attention,
                                std::vector<BreakdownRow>* breakdown) const {
    return sum_slots(batch, prompt, 0, prompt > 1 ? &attention : nullptr, breakdown, "prefill");
}

PhaseSums EstimatePlan::decode_step(double batch) const {
    Acc acc;
    UtilCache cache;
    OpTimes t;
    for (const Slot& s : slots_) {
        if (s.op->kind == SlotKind::attention || in_envelope(*s.op)) continue;
        double util = 1;
        slot_times(t, s, options_, batch, util, cache);  // one new token per sequence
        acc.add(s.op->count, t, op_total(t, util));
    }
    add_envelope(acc, envelope_[0], batch);
    add_envelope(acc, envelope_[1], batch);
    return acc.sums();
}

PhaseSums EstimatePlan::decode(double batch, double prompt, double gen, const PhaseSums& step,
                               std::vector<BreakdownRow>* breakdown) const {
    PhaseSums d;
    if (gen <= 0) return d;
    d.seconds = gen * step.seconds;
    d.ideal_seconds = gen * step.ideal_seconds;
    d.compute = gen * step.compute;
    for (std::size_t i = 0; i < kNumLevels; ++i) d.memory[i] = gen * step.memory[i];
    d.overhead = gen * step.overhead;
    d.flops = gen * step.flops;
    d.bytes = gen * step.bytes;
    const double c0 = prompt + 1, c1 = prompt + gen;
    for (std::size_t i : attention_) {
        const Slot& s = slots_[i];
        const double n = s.op->count;
        const AttentionSum a = attention_sum(s, batch, c0, c1);
        d.seconds += n * a.seconds;
        d.ideal_seconds += n * a.ideal_seconds;
        d.compute += n * a.compute;
        for (std::size_t k = 0; k < kNumLevels; ++k) d.memory[k] += n * a.memory[k];
        d.overhead += n * a.overhead;
        d.flops += n * a.flops;
        d.bytes += n * a.bytes;
    }
    if (breakdown) {  // rows in slot order; the numbers above do not depend on them
        RowSink sink(breakdown, structure_->names.size(), "decode");
        for (const Slot& s : slots_) {
            const double n = s.op->count;
            if (s.op->kind == SlotKind::attention) {
                const AttentionSum a = attention_sum(s, batch, c0, c1);
                sink.add(s.name, structure_->names, n * gen, n * a.flops, n * a.bytes, n * a.seconds,
                         [&] {  // the first step's bound
                             const double w = s.op->window;
                             return op_bound(decode_attention_times(s, batch, w > 0 ? std::min(c0, w) : c0), 1, false);
                         });
                continue;
            }
            double util = 1;
            UtilCache cache;
            OpTimes t;
            slot_times(t, s, options_, batch, util, cache);
            const OpTotal tot = op_total(t, util);
            sink.add(s.name, structure_->names, n * gen, n * gen * t.v[kFlops], n * gen * t.v[kBytes], n * gen * tot.derated,
                     [&] { return op_bound(t, util, s.op->kind == SlotKind::all_reduce); });
        }
    }
    return d;
}

PhaseSums EstimatePlan::phase(double batch, double tokens, double past) const {
    check_count("batch", batch);
    check_count("tokens", tokens);
    check_count("past tokens", past);
    if (batch * tokens == 0) return {};
    return sum_slots(batch, tokens, past, nullptr, nullptr, "phase");
}

MemoryUse EstimatePlan::memory(double batch, double prompt, double gen) const {
    const Architecture& a = structure_->arch;
    const double tp = options_.tensor_parallel;
    MemoryUse m;
    m.weights = device_weight_bytes_;
    const double context = prompt + gen;
    double per_token_layers = full_layers_ * context;  // kv_cache_bytes, with the layers grouped by window
    for (const auto& [w, layers] : windows_) per_token_layers += layers * std::min(context, w);
    m.kv_cache = batch * per_token_layers * 2 * a.kv_dim() * kv_bytes_ / tp;
    const double rows = batch * std::max(1.0, prompt);
    double act = rows * (2 * a.hidden + widest_ / tp) * act_bytes_;
    if (options_.attention == ops::AttentionKind::standard && prompt > 1)
        act += batch * (a.n_head / tp) * prompt * prompt * act_bytes_ * 2;  // S and P
    act += (options_.logits_last_token_only ? batch : rows) * a.vocab * 4.0;  // f32 logits
    m.activations = act;
    m.overhead = engine_->runtime_overhead_bytes;
    m.total = m.weights + m.kv_cache + m.activations + m.overhead;
    m.capacity = capacity_;
    m.fits = m.total <= m.capacity;
    return m;
}

double EstimatePlan::max_batch(double prompt, double gen) const {
    const double m1 = memory(1, prompt, gen).total, m2 = memory(2, prompt, gen).total;
    const double per_seq = m2 - m1, fixed = m1 - per_seq;
    return per_seq > 0 ? std::max(0.0, std::floor((capacity_ - fixed) / per_seq)) : 0;
}

double EstimatePlan::max_context(double batch) const {
    const double capacity = capacity_;
    double lo = 0, hi = std::max(1.0, structure_->arch.max_context > 0 ? structure_->arch.max_context : 1e7);
    if (memory(batch, hi, 0).total <= capacity) return hi;
    while (hi - lo > 1) {
        const double mid = std::floor((lo + hi) / 2);
        (memory(batch, mid, 0).total <= capacity ? lo : hi) = mid;
    }
    return lo;
}

double EstimatePlan::compute_bound_batch(double prompt, double gen) const {
    // a decode step at the mean context, ideal roofline: compute-bound when Σ compute >= Σ DRAM time
    const double mid = std::max(1.0, std::floor(prompt + (gen + 1) / 2));
    double per_seq = 0;  // attention, per sequence at this context
    for (const auto& [w, a0, a1] : cb_attention_) per_seq += a0 + (w > 0 ? std::min(mid, w) : mid) * a1;
    auto compute_bound = [&](double b) {
        double g = b <= options_.gemv_max_rows ? cb_vec0_ + b * cb_vec1_ : cb_mat0_ + b * cb_mat1_;
        if (b > options_.gemv_max_rows && options_.dequant_tile_rows > 0)
            g += (std::ceil(b / options_.dequant_tile_rows) - 1) * cb_pass_;
        for (const auto& [experts, top_k, coef] : cb_active_) g += coef * ops::expected_active_experts(experts, top_k, b);
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

EstimateRow EstimatePlan::assemble(double batch, double prompt, double gen, const PhaseSums& pre, const PhaseSums& dec,
                                   double max_context, double compute_bound_batch, double max_batch) const {
    EstimateRow r;
    r.batch = batch;
    r.prompt_tokens = prompt;
    r.gen_tokens = gen;
    if (prompt > 0) {
        r.prefill_s = pre.seconds;
        r.prefill_tokens_per_s = batch * prompt / pre.seconds;
        r.ceiling_prefill = batch * prompt / pre.ideal_seconds;
        r.prefill_bound = bound_code(pre.compute, pre.memory.data(), pre.overhead);
    }
    if (gen > 0) {
        r.decode_s = dec.seconds;
        r.decode_tokens_per_s = gen / dec.seconds;
        r.decode_tokens_per_s_total = batch * gen / dec.seconds;
        r.ceiling_decode = gen / dec.ideal_seconds;
        r.decode_bound = bound_code(dec.compute, dec.memory.data(), dec.overhead);
        r.decode_intensity = dec.bytes > 0 ? dec.flops / dec.bytes : 0;
    }
    r.ceiling_decode_weights = device_weight_bytes_ > 0 ? dram_bandwidth_ / device_weight_bytes_ : 0.0;
    r.ttft_s = r.prefill_s;
    if (prompt == 0 && gen > 0) r.ttft_s = r.decode_s / gen;
    r.total_s = r.prefill_s + r.decode_s;
    r.memory = memory(batch, prompt, gen);
    r.max_batch = max_batch;
    r.max_context = max_context;
    r.compute_bound_batch = compute_bound_batch;
    return r;
}

std::vector<OpTimes> EstimatePlan::cached_prefill_attention(double prompt) const {
    if (prompt <= 1) return {};
    AttentionCache& c = *cache_;
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        for (std::size_t i = 0; i < c.prompt.size(); ++i)
            if (c.prompt[i] == prompt) return c.attention[i];
    }
    std::vector<OpTimes> a = prefill_attention(prompt);
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.prompt[c.next] = prompt;
    c.attention[c.next] = a;
    c.next = (c.next + 1) % c.prompt.size();
    return a;
}

EstimateRow EstimatePlan::evaluate(double batch, double prompt, double gen, std::vector<BreakdownRow>* breakdown) const {
    check_point(batch, prompt, gen);
    PhaseSums pre, dec;
    if (prompt > 0) pre = prefill(batch, prompt, cached_prefill_attention(prompt), breakdown);
    if (gen > 0) dec = decode(batch, prompt, gen, decode_step(batch), breakdown);
    return assemble(batch, prompt, gen, pre, dec, max_context(batch), compute_bound_batch(prompt, gen), max_batch(prompt, gen));
}

Estimate EstimatePlan::estimate(double batch, double prompt, double gen, bool breakdown) const {
    Estimate e;
    const EstimateRow r = evaluate(batch, prompt, gen, breakdown ? &e.breakdown : nullptr);
    e.model = model_id();
    e.quant = config_.quant;
    e.device = device_id_;
    e.engine = engine_name();
    e.parameters = parameters_;
    e.weight_bytes = weight_bytes_;
    e.bits_per_weight = bits_per_weight();
    e.batch = r.batch;
    e.prompt_tokens = r.prompt_tokens;
    e.gen_tokens = r.gen_tokens;
    e.tensor_parallel = config_.tensor_parallel;
    e.prefill_s = r.prefill_s;
    e.prefill_tokens_per_s = r.prefill_tokens_per_s;
    e.ttft_s = r.ttft_s;
    e.decode_s = r.decode_s;
    e.decode_tokens_per_s = r.decode_tokens_per_s;
    e.decode_tokens_per_s_total = r.decode_tokens_per_s_total;
    e.total_s = r.total_s;
    e.prefill_bound = phase_bound_names()[static_cast<std::size_t>(r.prefill_bound)];
    e.decode_bound = phase_bound_names()[static_cast<std::size_t>(r.decode_bound)];
    e.ceiling_decode_weights = r.ceiling_decode_weights;
    e.ceiling_decode = r.ceiling_decode;
    e.ceiling_prefill = r.ceiling_prefill;
    e.decode_intensity = r.decode_intensity;
    e.compute_bound_batch = r.compute_bound_batch;
    e.memory = r.memory;
    e.max_batch = r.max_batch;
    e.max_context = r.max_context;
    return e;
}

std::vector<TensorFormat> EstimatePlan::formats_for(const Model& model, const std::string& quant) {
    return tensor_formats_for(model, quant);
}

Estimate estimate(const Model& model, const Device& device, const Workload& w) {
    check_workload(w);
    const EstimatePlan plan(model, device, PlanConfig{w.quant, w.kv_dtype, w.flash_attention, w.engine, w.tensor_parallel});
    Estimate e = plan.estimate(w.batch, w.prompt_tokens, w.gen_tokens, true);
    const double B = w.batch, P = w.prompt_tokens, n = w.gen_tokens;
    // Speculative decoding: γ draft steps, then one target pass over γ + 1 tokens, at the mean context.
    if (w.draft && n > 0) {
        const double gamma = w.draft_tokens, alpha = w.acceptance;
        const double tau = alpha >= 1 ? gamma + 1 : (1 - std::pow(alpha, gamma + 1)) / (1 - alpha);
        const double mid = std::floor(P + (n + 1) / 2);
        const EstimatePlan draft(*w.draft, device,
                                 PlanConfig{w.draft_quant.empty() ? w.quant : w.draft_quant, w.kv_dtype, w.flash_attention, w.engine, 1});
        const double draft_step = draft.phase(B, 1, mid - 1).seconds;
        const double verify = plan.phase(B, gamma + 1, mid - 1).seconds;
        const double cycle = gamma * draft_step + verify;
        e.speculative_tokens_per_cycle = tau;
        e.decode_tokens_per_s = tau / cycle;
        e.decode_tokens_per_s_total = B * tau / cycle;
        e.decode_s = n / e.decode_tokens_per_s;
        e.total_s = e.prefill_s + e.decode_s;
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
                const Parts p = all_reduce_parts(c.eng.all_reduce, c.opt.tensor_parallel, c.eng.collective_latency_s,
                                                 c.interconnect_Bps, op.collective_bytes, Ceilings::derated);
                s.fixed += repeats * op.count * p.total();
                s.launches += repeats * op.count;  // its kernel
                continue;
            }
            const Timing ideal = evaluate(op.cost, c.device, Ceilings::ideal);
            double util_compute = 0, serial_compute = 0;  // overlapped with memory or not (FlopTerm::overlapped)
            for (const auto& t : op.cost.flop_terms)
                (t.overlapped ? util_compute : serial_compute) +=
                    t.flops / (c.device.execution_peak(t.format, t.unit).flops * t.utilization);
            const double mem = ideal.memory_seconds[0];
            const double other = std::max(ideal.memory_seconds[1], ideal.memory_seconds[2]);
            const double t_mem = mem / eff.dram_bandwidth, t_cmp = util_compute / eff.compute;
            // the ceiling that binds at the current parameters carries this op's time
            if (t_cmp >= t_mem && t_cmp >= other) s.compute += repeats * op.count * util_compute;
            else if (t_mem >= other) s.dram += repeats * op.count * mem;
            else s.fixed += repeats * op.count * other;
            s.compute += repeats * op.count * serial_compute;  // follows whichever ceiling binds
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
        check_count("measurement " + std::to_string(i) + " batch", p.batch);
        if (p.batch < 1) throw InvalidArgument("measurement " + std::to_string(i) + " batch must be >= 1, got " + std::to_string(p.batch));
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
        next(0) = std::clamp(next(0), 1.0, 1e3);  // efficiencies within [0.001, 1], as a device file allows
        next(2) = std::clamp(next(2), 1.0, 1e3);
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
