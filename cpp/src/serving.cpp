// The serving model (docs/serving.md). One scheduler runs iterations of its running decodes plus, while prompts wait,
// a prefill chunk filling the token budget (decode-first continuous batching). Its steady state is closed-form: with
// B sequences decoding and each request needing ISL prefill tokens and n = OSL - 1 decode steps, completions per
// iteration are B / n, so a fraction f = B·ISL / (P·n) of iterations carries a chunk of P tokens; the mean iteration
// is t = f·t_mixed + (1 − f)·t_decode, the inter-token latency; output tokens/s = B·OSL / (n·t). Loads fix B: the
// scheduler's limit at max load, Little's law for clients and arrival rates.
#include "roofline/serving.hpp"

#include "plan_impl.hpp"
#include "roofline/engine.hpp"
#include "roofline/errors.hpp"
#include "roofline/format.hpp"
#include "roofline/kv_cache.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/speculative.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <array>

namespace roofline {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxRanks = 1024;

int parse_degree(const std::string& term, std::size_t prefix, std::string_view text) {
    const std::string digits = term.substr(prefix);
    if (digits.empty() || digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
        throw InvalidArgument("parallel: term '" + term + "' of '" + std::string(text) +
                              "' must be TP, PP, EP or DEP followed by a whole number (e.g. 'TP2,PP2', 'DEP8')");
    const int n = std::stoi(digits);
    if (n < 1 || n > kMaxRanks)
        throw InvalidArgument("parallel: term '" + term + "' must have a degree within [1, " + std::to_string(kMaxRanks) + "]");
    return n;
}
}  // namespace

std::string Parallelism::notation() const {
    std::string s;
    auto add = [&](const std::string& t) { s += (s.empty() ? "" : ",") + t; };
    if (attention_data && expert == tensor) {
        add("DEP" + std::to_string(tensor));
    } else {
        add("TP" + std::to_string(tensor));
        if (expert > 1) add("EP" + std::to_string(expert));
        if (attention_data) add("ADP");
    }
    if (pipeline > 1) add("PP" + std::to_string(pipeline));
    return s;
}

Parallelism parse_parallelism(std::string_view text) {
    Parallelism p;
    if (text.size() > 64) throw InvalidArgument("parallel: at most 64 characters, got " + std::to_string(text.size()));
    bool tp = false, pp = false, ep = false;
    std::size_t start = 0;
    std::string all(text);
    if (all.find_first_not_of(" \t") == std::string::npos)
        throw InvalidArgument("parallel: empty; write e.g. 'TP4', 'TP2,PP2' or 'DEP8'");
    while (start <= all.size()) {
        std::size_t end = all.find(',', start);
        if (end == std::string::npos) end = all.size();
        std::string term;
        for (char c : all.substr(start, end - start))
            if (!std::isspace(static_cast<unsigned char>(c))) term += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        auto once = [&](bool& seen) {
            if (seen) throw InvalidArgument("parallel: '" + all + "' sets the same degree twice ('" + term + "')");
            seen = true;
        };
        if (term.rfind("DEP", 0) == 0) {
            once(tp);
            once(ep);
            p.tensor = p.expert = parse_degree(term, 3, text);
            p.attention_data = true;
        } else if (term.rfind("TP", 0) == 0) {
            once(tp);
            p.tensor = parse_degree(term, 2, text);
        } else if (term.rfind("PP", 0) == 0) {
            once(pp);
            p.pipeline = parse_degree(term, 2, text);
        } else if (term.rfind("EP", 0) == 0) {
            once(ep);
            p.expert = parse_degree(term, 2, text);
        } else {
            throw InvalidArgument("parallel: term '" + term + "' of '" + all +
                                  "' is not TPn, PPn, EPn or DEPn (e.g. 'TP4', 'TP2,PP2', 'DEP8')");
        }
        start = end + 1;
    }
    if (ep && !tp) p.tensor = p.expert;  // "EP8": the experts over the 8 ranks of a group of 8
    if (p.tensor % p.expert != 0)
        throw InvalidArgument("parallel: expert parallel " + std::to_string(p.expert) + " must divide tensor parallel " +
                              std::to_string(p.tensor) + " (the experts are split over ranks of the tensor-parallel group)");
    return p;
}

const std::vector<FieldInfo>& serving_fields() {
    static const std::vector<FieldInfo> f = {
#define ROOFLINE_X(name, type, unit, meaning) FieldInfo{#name, #type, unit, meaning, false},
        ROOFLINE_SERVING_FIELDS(ROOFLINE_X)
#undef ROOFLINE_X
    };
    return f;
}

struct ServingPlan::Impl {
    ServingConfig config;
    EstimatePlan plan;
    const EstimatePlan::Impl* p = nullptr;
    explicit Impl(EstimatePlan plan_) : plan(std::move(plan_)), p(&plan.impl()) {}
    // MTP speculative decoding: the draft module's plan (same device, quantization, engine and split), the tokens
    // it drafts per iteration and the tokens a sequence gains per iteration
    std::optional<EstimatePlan> mtp;
    const EstimatePlan::Impl* q = nullptr;
    double draft = 0, gain = 1, mtp_moe_layers = 0;
    ServingPolicy policy;
    std::string model_id, device_id, kv_dtype;
    double pp = 1, units = 1;       // pipeline stages; schedulers (attention data-parallel ranks, else 1)
    double ep_ranks = 1;            // ranks the experts are split over
    bool dep = false;               // attention data parallel: experts split across schedulers
    double interconnect_Bps = 0;    // between stages and for the all-to-all
    double step_latency_s = 0;      // one synchronisation over the links
    double hidden = 0, act_bytes = 2, moe_layers = 0;
    double capacity = 0, weights = 0, reserve = 0, frac = 0;
    double fixed_cost_s = 0;        // the device's fixed cost per kernel under this engine
    double kv_token_bytes = 0;      // one token of one sequence on one rank (full-attention layers; PP split)
    bool user_batch = false, user_tokens = false;
    // the last few prompts' chunked attention (a pure function of prompt and chunk: sharing it changes no bit)
    struct PromptAttention {
        double prompt = -1, chunk = -1;
        PhaseSums sums;
    };
    mutable std::mutex attention_mutex;
    mutable std::array<PromptAttention, 4> attention_cache;
    mutable std::size_t attention_next = 0;
    PhaseSums prompt_attention(double prompt, double chunk) const {
        {
            std::lock_guard<std::mutex> lock(attention_mutex);
            for (const PromptAttention& a : attention_cache)
                if (a.prompt == prompt && a.chunk == chunk) return a.sums;
        }
        PromptAttention a{prompt, chunk, p->chunked_attention(p->prefill_attention(prompt, 0, chunk), 1)};
        std::lock_guard<std::mutex> lock(attention_mutex);
        attention_cache[attention_next++ % attention_cache.size()] = a;
        return a.sums;
    }

    double seq_kv(double tokens) const {  // one sequence's KV on one rank, in whole blocks (the MTP layers' too)
        const double blk = policy.kv_block_tokens, t = std::ceil(tokens / blk) * blk;
        return p->kv_bytes_per_sequence(t) / pp + (q ? q->kv_bytes_per_sequence(t) : 0.0);
    }
};

namespace {

std::string serving_engines_list() {
    std::string s;
    for (const Engine& e : default_engines()->engines())
        for (const EngineBackend& b : e.backends)
            if (b.serving.defined) {
                s += (s.empty() ? "" : ", ") + e.id;
                break;
            }
    return s;
}

// The KV-cache budget of one rank (ServingPolicy::KvBudget): the memory fraction of all memory less the weights, the
// activations of one full-budget pass and the reserves (vLLM); of the memory free after them (TensorRT-LLM); of all
// memory less the weights alone, the rest holding the others (SGLang).
double kv_budget(const ServingPlan::Impl& s, const ServingPolicy& policy, double activations) {
    const double used = s.weights + activations + s.reserve;
    switch (policy.kv_memory_of) {
        case ServingPolicy::KvBudget::free: return s.frac * (s.capacity - used);
        case ServingPolicy::KvBudget::static_share: return s.frac * s.capacity - s.weights;  // the rest holds A and R
        case ServingPolicy::KvBudget::total: break;
    }
    return s.frac * s.capacity - used;
}

}  // namespace

ServingPlan::ServingPlan(const Model& model, const Device& device, const ServingConfig& c) {
    const std::shared_ptr<const Engine> eng = c.engine_object ? c.engine_object : engine(c.engine);
    const EngineBackend& backend = eng->on(device);
    if (!backend.serving.defined)
        throw InvalidArgument("engine '" + eng->id + "' on " + backend.backend +
                              " has no continuous batching in engine_db; serving engines: " + serving_engines_list() +
                              " (a static batch of any engine: estimate())");
    const Parallelism& par = c.parallel;
    for (auto [name, v] : {std::pair<const char*, int>{"tensor_parallel", par.tensor}, {"pipeline_parallel", par.pipeline},
                           {"expert_parallel", par.expert}})
        if (v < 1 || v > kMaxRanks)
            throw InvalidArgument(std::string(name) + " must be a whole number within [1, " + std::to_string(kMaxRanks) +
                                  "], got " + std::to_string(v));
    if (par.tensor % par.expert != 0)
        throw InvalidArgument("expert_parallel " + std::to_string(par.expert) + " must divide tensor_parallel " +
                              std::to_string(par.tensor));
    const Architecture& a = model.arch;
    if ((par.expert > 1 || par.attention_data) && a.n_expert == 0)
        throw InvalidArgument("model '" + a.id + "' has no experts: expert_parallel and attention_data_parallel need a MoE "
                              "model (a dense model runs replicas, or tensor_parallel)");
    if (par.expert > 1 && a.n_expert % par.expert != 0)
        throw InvalidArgument("expert_parallel " + std::to_string(par.expert) + " must divide the " +
                              std::to_string(a.n_expert) + " experts of model '" + a.id + "'");
    if (par.pipeline > a.n_layer)
        throw InvalidArgument("pipeline_parallel " + std::to_string(par.pipeline) + " exceeds the " +
                              std::to_string(a.n_layer) + " layers of model '" + a.id + "'");
    for (auto [name, v] : {std::pair<const char*, double>{"max_batch", c.max_batch}, {"max_num_tokens", c.max_num_tokens}}) {
        check_size(name, v);
        if (v != std::floor(v) || v > (1 << 24))
            throw InvalidArgument(std::string(name) + " must be a whole number within [1, 16777216] (0 or None: the engine's), got " +
                                  std::to_string(v));
    }
    check_size("gpu_memory_fraction", c.gpu_memory_fraction);
    if (c.gpu_memory_fraction > 1)
        throw InvalidArgument("gpu_memory_fraction must be within (0, 1] (0 or None: the engine's), got " + std::to_string(c.gpu_memory_fraction));

    check_size("mtp_tokens", c.mtp_tokens);
    if (c.mtp_tokens != std::floor(c.mtp_tokens) || c.mtp_tokens > 16)
        throw InvalidArgument("mtp_tokens must be a whole number within [0, 16] (0: no speculative decoding), got " +
                              std::to_string(c.mtp_tokens));
    const bool accepted_given = !std::isnan(c.acceptance);
    if (c.mtp_tokens > 0 && !accepted_given)
        throw InvalidArgument("mtp_tokens " + std::to_string(static_cast<int>(c.mtp_tokens)) + " needs acceptance, the "
                              "probability within [0, 1] that a drafted token is accepted");
    if (c.mtp_tokens == 0 && accepted_given)
        throw InvalidArgument("acceptance " + std::to_string(c.acceptance) + " given without mtp_tokens: give the tokens the MTP "
                              "module drafts per iteration (mtp_tokens >= 1)");
    if (accepted_given && !(c.acceptance >= 0 && c.acceptance <= 1))
        throw InvalidArgument("acceptance must be within [0, 1] (the probability that a drafted token is accepted), got " +
                              std::to_string(c.acceptance));
    if (c.mtp_tokens > 0 && model.arch.n_nextn_layer > 1)
        throw InvalidArgument("model '" + model.arch.id + "' has " + std::to_string(model.arch.n_nextn_layer) +
                              " MTP layers; MTP speculative decoding is modelled for one (each draft step through it)");
    if (c.mtp_tokens > 0 && par.pipeline > 1)
        throw InvalidArgument("MTP speculative decoding with pipeline_parallel " + std::to_string(par.pipeline) +
                              " is not modelled: use tensor, expert or attention data parallelism");
    const std::string kv = c.kv_dtype.empty() ? backend.serving.kv_dtype_for(c.quant, backend.activation_format) : c.kv_dtype;
    const int plan_tp = par.attention_data ? 1 : par.tensor;  // attention data parallel: each rank runs attention whole
    PlanConfig pc(c.quant, kv, false, eng->id, plan_tp, 0, eng);
    pc.split_mode = "tensor";  // the deployment's tensor parallelism; its pipeline stages are timed here
    pc.flash_attention_from_engine = true;  // the attention backend the serving engine runs (flash_attention_default)
    auto s = std::make_shared<Impl>(EstimatePlan(model, device, pc));
    if (c.mtp_tokens > 0) {  // the draft: the model's MTP module, split and quantized as the model
        s->mtp.emplace(mtp_module(model), device, pc);
        s->q = &s->mtp->impl();
        s->draft = c.mtp_tokens;
        s->gain = speculative_tokens_per_cycle(c.mtp_tokens, c.acceptance);
        s->mtp_moe_layers = a.n_expert > 0 ? a.n_nextn_layer : 0;
    }
    s->config = c;
    s->policy = backend.serving;
    s->dep = par.attention_data;
    s->units = par.attention_data ? par.tensor : 1;
    s->ep_ranks = par.expert;
    s->pp = par.pipeline;
    s->kv_dtype = kv;
    s->config.kv_dtype = kv;
    const EstimatePlan::Impl& p = *s->p;
    if (par.pipeline > 1 || par.attention_data) {
        s->interconnect_Bps = device.interconnect_bandwidth(par.devices());  // NVLink within its domain, else the network
        if (s->interconnect_Bps <= 0)
            throw InvalidArgument(par.notation() + " needs an interconnect joining " + std::to_string(par.devices()) +
                                  " devices; device '" + device.id + "' lists none");
    }
    s->step_latency_s = backend.collective_step_latency_s;
    s->model_id = a.id;
    s->device_id = device.id;
    s->hidden = a.hidden;
    s->act_bytes = p.act_bytes;
    for (std::size_t i = 0; i < a.moe_layer.size(); ++i) s->moe_layers += a.moe_layer[i] ? 1 : 0;
    s->capacity = p.capacity_bytes;
    // weights of one rank: the plan's split; under attention DP the experts split over the expert ranks; layers
    // over the pipeline stages
    auto rank_weights = [&](const EstimatePlan::Impl& plan) {
        const double experts = plan.expert_weight_bytes();
        return par.attention_data ? plan.device_weight_bytes - experts + experts / par.expert : plan.device_weight_bytes;
    };
    s->weights = rank_weights(p) / s->pp;
    // the MTP module's weights, on every rank like the last stage's layers, but for its embedding and head: the engines
    // point the draft at the target's (vLLM's spec-decode load_eagle_model: shared when the draft has no copy or its
    // copy equals the target's, as DeepSeek-V3's does, its report §2.2; SGLang speculative/eagle_worker_v2.py
    // set_embed_and_head), so their checkpoint copies take no memory
    if (s->q) s->weights += rank_weights(*s->q) - s->q->vocab_table_device_bytes();
    s->reserve = s->policy.graph_reserve_bytes + backend.runtime_overhead_bytes;
    s->frac = c.gpu_memory_fraction > 0 ? c.gpu_memory_fraction : s->policy.kv_memory_fraction;
    s->fixed_cost_s = p.device->efficiency.launch_overhead_s;
    s->kv_token_bytes = p.kv_bytes_per_sequence(1) / s->pp + (s->q ? s->q->kv_bytes_per_sequence(1) : 0.0);
    for (const auto& [gib, tokens, batch] : s->policy.limits_by_memory)  // the device's memory tier
        if (s->capacity >= gib * 1073741824.0) {
            s->policy.max_num_tokens = tokens;
            s->policy.max_batch = batch;
        }
    s->user_batch = c.max_batch > 0;
    s->user_tokens = c.max_num_tokens > 0;
    if (s->user_batch) s->policy.max_batch = c.max_batch;
    if (s->user_tokens) s->policy.max_num_tokens = c.max_num_tokens;
    if (kv_budget(*s, s->policy, p.activation_bytes(s->policy.max_num_tokens, std::min(s->policy.max_batch, s->policy.max_num_tokens))) <= 0)
        throw InvalidArgument("model '" + a.id + "' in " + c.quant + " does not fit " + par.notation() + " on '" + device.id +
                              "': " + std::to_string(s->weights / 1e9).substr(0, 6) + " GB of weights per device leave no KV cache in " +
                              std::to_string(s->capacity / 1e9).substr(0, 6) + " GB (more devices, or a smaller quantization)");
    impl_ = std::move(s);
}

const ServingConfig& ServingPlan::config() const { return impl_->config; }
const EstimatePlan& ServingPlan::plan() const { return impl_->plan; }

namespace {

// The iterations of one scheduler at a running batch, and what they cost.
struct Iterations {
    double b = 0;            // decodes per micro-batch
    double micro = 1;        // micro-batches in flight (pipeline stages busy)
    double chunk = 0;        // prefill tokens of a mixed iteration
    double f = 0;            // share of iterations carrying a chunk
    double t_decode = 0, t_mixed = 0, t_mean = 0;  // per micro-batch period (the ITL)
    double ideal_decode = 0, ideal_mixed = 0, ideal_mean = 0;  // the same at the datasheet roofline (no overhead)
    double chunks_per_prompt = 1;
    PhaseBound decode_bound = PhaseBound::absent, prefill_bound = PhaseBound::absent;
};

class Evaluator {
    using Impl_ExpertSplit = EstimatePlan::Impl::ExpertSplit;

public:
    Evaluator(const ServingPlan::Impl& s, const ServingPolicy& policy, const ServingLoad& l)
        : s_(s), policy_(policy), p_(*s.p), isl_(l.prompt_tokens), osl_(l.gen_tokens) {
        // decode iterations per request: gen_tokens - 1 tokens after the first, s.gain per iteration (MTP: the
        // accepted drafts and the verifier's own token)
        n_ = osl_ > 1 ? std::max(1.0, (osl_ - 1) / s.gain) : 0.0;  // at least one iteration after the first token
        tok_ = 1 + s.draft;      // tokens a decoding sequence puts through the target per iteration
        ctx_ = isl_ + osl_ / 2;  // mean context of a decoding sequence (staggered)
    }

    double budget() const { return policy_.max_num_tokens; }

    // Prefill tokens one mixed iteration of a micro-batch with b decodes carries.
    double chunk_of(double b) const {
        // prompts waiting in the steady state: the B / n completions of an iteration are replaced (at least one)
        const double waiting = isl_ * std::max(1.0, std::ceil(b / std::max(n_, 1.0)));
        const double room = std::floor(policy_.mixed_batches ? budget() - b * tok_ : budget());
        if (room < 1) return 0;
        if (policy_.chunked_prefill) return std::min(room, waiting);
        return std::min(std::floor(room / isl_) * isl_, waiting);  // whole prompts only
    }

    // The largest decodes per micro-batch the token budget sustains: b·ISL <= chunk(b)·n, a decode taking tok_ of
    // the budget.
    double budget_batch() const {
        if (n_ <= 0) return 0;
        if (!policy_.mixed_batches) return kInf;  // prefill batches apart: the budget does not bound the decodes
        if (policy_.chunked_prefill) return std::floor(budget() * n_ / (isl_ + tok_ * n_));
        double best = 0;
        const double m_star = budget() / (tok_ * n_ + isl_);
        for (double m = std::max(1.0, std::floor(m_star) - 1); m <= std::floor(m_star) + 2; ++m) {
            const double b = std::min(m * n_, (budget() - m * isl_) / tok_);
            if (b >= 1) best = std::max(best, std::floor(b));
        }
        return best;
    }

    // Expert split and all-to-all of a pass over `rows` rows per scheduler.
    Impl_ExpertSplit split(double rows) const { return split_of(p_, rows); }
    Impl_ExpertSplit split_of(const EstimatePlan::Impl& plan, double rows) const {
        Impl_ExpertSplit e;
        const double E = s_.ep_ranks;
        if (E <= 1) return e;
        const double k = plan.structure->arch.n_expert_used;
        // rows each rank's experts receive on average, and the busiest rank's share of them: the maximum of E
        // balanced multinomial loads, m + sqrt(2 m ln E (1 - 1/E)) (random routing; a skewed router is worse)
        const double mean_rows = s_.dep ? rows * k : rows * k / E;
        e.imbalance = mean_rows > 0 ? 1 + std::sqrt(2 * std::log(E) * (1 - 1 / E) / mean_rows) : 1;
        if (s_.dep) {
            e.ranks = E;
            e.global_tokens = rows * E;
        }
        return e;
    }
    // `ideal`: the bytes at the interconnect's bandwidth alone, no step latency (the roofline's share, as the plan's
    // all-reduce bytes are in its ideal sums)
    double all_to_all_s(double rows, double layers = -1, bool ideal = false) const {
        if (!s_.dep || s_.ep_ranks <= 1 || rows <= 0) return 0;
        const double E = s_.ep_ranks, k = p_.structure->arch.n_expert_used;
        const double bytes = rows * k * s_.hidden * s_.act_bytes * (E - 1) / E;  // each way
        return (layers < 0 ? s_.moe_layers : layers) * 2 * (bytes / s_.interconnect_Bps + (ideal ? 0.0 : s_.step_latency_s));
    }
    // The MTP module's dispatch and combine over its MoE layers, per drafted token of b sequences.
    double draft_all_to_all_s(double b, bool ideal = false) const {
        return s_.draft * all_to_all_s(b, s_.mtp_moe_layers, ideal);
    }

    // Attention of b decoding sequences at context ctx: one token each, or with MTP tok_ tokens each, which the
    // engines' decode kernels (FlashMLA, FlashInfer) take in one pass over the sequence's cache (the cache read once,
    // the FLOPs tok_ times a token's: EstimatePlan::Impl::verify_attention).
    PhaseSums verify_attention(double b, double ctx, std::vector<BreakdownRow>* breakdown) const {
        if (tok_ <= 1) return p_.decode_attention(b, ctx, breakdown, "decode iteration");
        if (breakdown) (void)p_.decode_attention(b, ctx, breakdown, "decode iteration");  // its rows only: one token's
        return p_.verify_attention(b, ctx, tok_);
    }
    // The MTP module's drafting of an iteration: s.draft steps of b sequences, one token each, over its own cache.
    PhaseSums drafts(double b, double ctx, std::vector<BreakdownRow>* breakdown) const {
        if (!s_.q) return PhaseSums{};
        Impl_ExpertSplit e = split_of(*s_.q, b);
        PhaseSums one = s_.q->step(b, b, &e, breakdown, "MTP draft step");
        add_sums(one, 1, s_.q->decode_attention(b, ctx, breakdown, "MTP draft step"));
        PhaseSums all;
        add_sums(all, s_.draft, one);
        return all;
    }
    double send_recv_s(double rows, bool ideal = false) const {  // hidden states handed from stage to stage, one pass
        if (s_.pp <= 1) return 0;
        return (s_.pp - 1) * (rows * s_.hidden * s_.act_bytes / p_.options.tensor_parallel / s_.interconnect_Bps +
                              (ideal ? 0.0 : s_.step_latency_s));
    }
    // An iteration's communication over `rows` rows: the experts' all-to-all, the MTP module's (its drafts of `drafting`
    // sequences and its pass over `module_rows` prompt tokens) and the stage hand-offs; `ideal`: their bytes alone.
    double comm_s(double rows, double drafting, double module_rows, bool ideal = false) const {
        return all_to_all_s(rows, -1, ideal) + draft_all_to_all_s(drafting, ideal) +
               all_to_all_s(module_rows, s_.mtp_moe_layers, ideal) + send_recv_s(rows, ideal);
    }
    // Host time of an iteration that does not replay a CUDA graph: its kernels launched one by one, hidden under
    // the GPU's time unless they are shorter.
    double host_bound(const PhaseSums& gpu, double seconds, bool graph) const {
        if (graph || policy_.eager_launch_s <= 0 || s_.fixed_cost_s <= 0) return seconds;
        const double kernels = gpu.derated.overhead_s / s_.fixed_cost_s;
        return std::max(seconds, kernels * (s_.fixed_cost_s + policy_.eager_launch_s));
    }

    // A pass of prompt tokens alone (the ramp-up's): whole-budget prefill, its prompts' share of attention.
    double prefill_pass_s(double tokens) {
        Impl_ExpertSplit e = split(tokens);
        const double chunk = policy_.chunked_prefill ? std::min(tokens, isl_) : isl_;
        PhaseSums pass = p_.step(tokens, std::max(1.0, tokens / isl_), &e);
        add_sums(pass, tokens / isl_, prompt_attention(chunk));
        add_sums(pass, 1, mtp_prefill(tokens, chunk, nullptr, ""));
        const double gpu = host_bound(pass, pass.seconds, false) + comm_s(tokens, 0, tokens);
        return std::max(gpu, host_s(1, tokens / isl_));
    }

    // The MTP module over `tokens` prompt tokens (in chunks of `chunk`), filling its own layer's cache as the target
    // prefills them: its layers, the prompts' share of its attention over them, and a sampled row (its first draft)
    // for each prompt the tokens complete, as the target samples them.
    PhaseSums mtp_prefill(double tokens, double chunk, std::vector<BreakdownRow>* breakdown, const char* phase) {
        if (!s_.q || tokens <= 0) return PhaseSums{};
        Impl_ExpertSplit eq = split_of(*s_.q, tokens);
        PhaseSums m = s_.q->step(tokens, std::max(1.0, tokens / isl_), &eq, breakdown, phase);
        if (chunk != mtp_attn_chunk_) {
            mtp_attn_chunk_ = chunk;
            mtp_attn_ = s_.q->chunked_attention(s_.q->prefill_attention(isl_, 0, policy_.chunked_prefill ? chunk : 0), 1);
        }
        add_sums(m, tokens / isl_, mtp_attn_);
        prompt_attention_row(breakdown, phase, *s_.q, mtp_attn_, tokens / isl_);
        return m;
    }

    // A breakdown row for `share` of one prompt's attention over its chunks (`sums`) in `plan`'s attention layers.
    static void prompt_attention_row(std::vector<BreakdownRow>* rows, const char* phase, const EstimatePlan::Impl& plan,
                                     const PhaseSums& sums, double share) {
        if (!rows || share <= 0) return;
        double layers = 0;
        for (std::size_t i : plan.attention) layers += plan.slots[i].op->count;
        rows->push_back({phase, "prompt_attention", layers, share * sums.flops, share * sums.bytes, share * sums.seconds,
                         phase_bound_names()[static_cast<std::size_t>(phase_bound(sums.derated))], ""});
    }

    double host_s(double micro, double sequences) const {
        return micro * (policy_.iteration_overhead_s + policy_.host_per_sequence_s * sequences);
    }

    const PhaseSums& prompt_attention(double chunk) {
        if (chunk != attn_chunk_) {
            attn_chunk_ = chunk;
            attn_ = s_.prompt_attention(isl_, policy_.chunked_prefill ? chunk : 0);
        }
        return attn_;
    }

    // The iterations at B decodes per scheduler (all micro-batches together).
    Iterations at(double B, std::vector<BreakdownRow>* breakdown = nullptr) {
        Iterations it;
        it.micro = std::min(s_.pp, std::max(1.0, B));
        it.b = std::max(B / it.micro, 0.0);
        // ops see whole rows: a fractional mean batch (Little's law) runs as the nearest whole one
        const double b = it.b > 0 ? std::max(1.0, std::round(it.b)) : 0.0;
        it.chunk = chunk_of(std::max(b, 1.0));
        // mixed: the share of iterations carrying a chunk; apart: prefill iterations per decode iteration
        if (n_ > 0 && b > 0 && it.chunk > 0) it.f = it.b * isl_ / (it.chunk * n_);
        if (policy_.mixed_batches) it.f = std::min(1.0, it.f);
        if (n_ <= 0) it.f = 1;
        const double ctx = std::max(1.0, ctx_);
        // decode iteration: b sequences, tok_ tokens each through the target (MTP: the drafts and the verifier's own,
        // each sampled), their attention over the context; then the MTP module's drafting steps
        const double rows = b * tok_;
        Impl_ExpertSplit e = split(rows);
        const PhaseSums sd = p_.step(rows, rows, &e, breakdown, "decode iteration");
        const PhaseSums ad = b > 0 ? verify_attention(b, ctx, breakdown) : PhaseSums{};
        const PhaseSums dd = b > 0 ? drafts(b, ctx, breakdown) : PhaseSums{};
        PhaseSums dec = sd;
        add_sums(dec, 1, ad);
        add_sums(dec, 1, dd);
        const bool graph = b <= policy_.cuda_graph_max_batch;  // graphs captured per batch of sequences
        it.t_decode = b > 0 ? host_bound(dec, dec.seconds, graph) + comm_s(rows, b, 0) : 0;
        it.ideal_decode = b > 0 ? dec.ideal_seconds + comm_s(rows, b, 0, true) : 0;
        it.decode_bound = b > 0 ? phase_bound(dec.derated) : PhaseBound::absent;
        // mixed iteration: the decodes and a chunk (its share of one prompt's attention over its chunks)
        if (it.chunk > 0) {
            const double decodes = policy_.mixed_batches ? b : 0;
            const double mixed_rows = decodes * tok_ + it.chunk;
            Impl_ExpertSplit em = split(mixed_rows);
            // sampling rows: the decodes', and the prompts the chunk completes (P / ISL of them, at least the one it
            // carries), as the ramp-up's passes count them
            const PhaseSums sm = p_.step(mixed_rows, decodes * tok_ + std::max(1.0, it.chunk / isl_), &em, breakdown, "mixed iteration");
            PhaseSums mix = sm;
            if (decodes > 0) {
                add_sums(mix, 1, ad);
                add_sums(mix, 1, dd);
            }
            add_sums(mix, it.chunk / isl_, prompt_attention(it.chunk));  // the chunk's share of a prompt's attention
            prompt_attention_row(breakdown, "mixed iteration", p_, prompt_attention(it.chunk), it.chunk / isl_);
            add_sums(mix, 1, mtp_prefill(it.chunk, it.chunk, breakdown, "mixed iteration"));  // the module over the chunk
            it.t_mixed = host_bound(mix, mix.seconds, false) + comm_s(mixed_rows, decodes, it.chunk);
            it.ideal_mixed = mix.ideal_seconds + comm_s(mixed_rows, decodes, it.chunk, true);
            it.prefill_bound = phase_bound(mix.derated);
            it.chunks_per_prompt = std::ceil(isl_ / it.chunk);
        }
        // The scheduler's host work overlaps the GPU's (overlap / async schedulers): a micro-batch period lasts the
        // longer of its GPU time and the host's time for the period, a fixed part per iteration and a part per
        // sequence the iteration carries (scheduling, sampling, bookkeeping of each request), for every micro-batch.
        if (b > 0) it.t_decode = std::max(it.t_decode, host_s(it.micro, b));
        if (it.chunk > 0) it.t_mixed = std::max(it.t_mixed, host_s(it.micro, (policy_.mixed_batches ? b : 0) + it.chunk / isl_));
        // the mean period between two tokens of a decoding sequence
        auto mean = [&](double mixed, double decode) {
            return policy_.mixed_batches ? it.f * mixed + (1 - it.f) * decode : decode + it.f * mixed;
        };
        it.t_mean = mean(it.t_mixed, it.t_decode);
        it.ideal_mean = mean(it.ideal_mixed, it.ideal_decode);
        return it;
    }

    // Output tokens/s of one scheduler at B decodes (ideal: at the datasheet roofline).
    double rate(const Iterations& it, bool ideal = false) const {
        const double mixed = ideal ? it.ideal_mixed : it.t_mixed, period = ideal ? it.ideal_mean : it.t_mean;
        if (n_ <= 0) return mixed > 0 ? it.micro * it.chunk / isl_ * osl_ / mixed : 0;
        return period > 0 ? it.micro * it.b * osl_ / (n_ * period) : 0;
    }
    // Time to first token of a request that finds the scheduler at `it`, without queueing: the rest of the
    // current iteration, then its prompt's chunks.
    double ttft_service(const Iterations& it) const { return it.t_mean / 2 + it.chunks_per_prompt * it.t_mixed; }

    double n() const { return n_; }

private:
    const ServingPlan::Impl& s_;
    const ServingPolicy& policy_;
    const EstimatePlan::Impl& p_;
    double isl_, osl_, n_ = 0, ctx_ = 0, tok_ = 1;
    double attn_chunk_ = -1;
    PhaseSums attn_;
    double mtp_attn_chunk_ = -1;  // the MTP module's share of a prompt's attention, for this chunk
    PhaseSums mtp_attn_;
};

}  // namespace

ServingRow ServingPlan::evaluate(const ServingLoad& l, std::vector<BreakdownRow>* breakdown, std::string* limit) const {
    const Impl& s = *impl_;
    for (auto [name, v] : {std::pair<const char*, double>{"prompt_tokens", l.prompt_tokens}, {"gen_tokens", l.gen_tokens}}) {
        check_size(name, v, true);
        if (v != std::floor(v) || v > (1 << 24))
            throw InvalidArgument(std::string(name) + " must be a whole number within [1, 16777216], got " + std::to_string(v));
    }
    const double ctx_max = s.p->structure->arch.max_context;
    if (ctx_max > 0 && l.prompt_tokens + l.gen_tokens > ctx_max)
        throw InvalidArgument("prompt_tokens + gen_tokens = " + std::to_string(static_cast<long long>(l.prompt_tokens + l.gen_tokens)) +
                              " exceeds the " + std::to_string(static_cast<long long>(ctx_max)) + "-token context of model '" + s.model_id + "'");
    check_size("concurrency", l.concurrency);
    check_size("request_rate", l.request_rate);
    check_size("num_requests", l.num_requests);
    if (l.concurrency > 0 && l.request_rate > 0)
        throw InvalidArgument("concurrency and request_rate are exclusive: give one (or neither for offline max load)");
    if (l.concurrency != std::floor(l.concurrency) || l.num_requests != std::floor(l.num_requests))
        throw InvalidArgument("concurrency and num_requests must be whole numbers");
    if (l.concurrency > 1e7 || l.num_requests > 1e9 || l.request_rate > 1e9)
        throw InvalidArgument("concurrency (<= 1e7), num_requests (<= 1e9) and request_rate (<= 1e9 per s) are bounded");

    ServingPolicy policy = s.policy;
    const double isl = l.prompt_tokens, osl = l.gen_tokens;
    // trtllm-bench's tuning: max_batch and max_num_tokens from the KV capacity of the whole group
    // (tensorrt_llm/bench/tuning/heuristics.py: KV of every layer at max(TP, KV heads), the run's KV fraction of what
    // the weights leave). trtllm-bench tunes both unless both are given, then keeps the one given
    // (bench/benchmark/throughput.py: runtime_max_bs = max_batch_size or engine_bs, likewise the tokens).
    if (policy.bench_tuning && !(s.user_batch && s.user_tokens)) {
        const Architecture& a = s.p->structure->arch;
        const double tp = s.config.parallel.tensor, pp = s.pp;
        // its KV per token: every layer at max(TP, KV heads) heads, with attention DP too; MLA's latent once
        const double kv_elem = parse_kv_format(s.kv_dtype).bytes_per_element();
        const double kv_token = a.mla() ? s.p->kv_token_layer_bytes * a.n_layer
                                        : 2.0 * a.n_layer * std::max<double>(tp, a.n_kv_head) * a.head_dim * kv_elem;
        const double weights = s.p->structure->weight_bytes;
        const double available = s.dep ? s.capacity * pp - weights / tp : s.capacity * tp * pp - weights;
        const double requests = std::max(0.0, available * s.frac / (kv_token * (isl + osl)));  // the run's fraction
        const double raw_bs = std::min(requests, 4096.0) / pp;
        const double raw_tok = std::min(raw_bs * (1 + isl / osl), 32768.0);
        auto up = [](double x, double q) { return std::ceil(x / q) * q; };
        const double bs = raw_bs < 256 ? std::max(64.0, up(raw_bs, 32)) : raw_bs < 1024 ? up(raw_bs, 128) : up(raw_bs, 256);
        double tokens = raw_tok < 4096 ? std::max(2048.0, up(raw_tok, 256)) : raw_tok < 8192 ? up(raw_tok, 512) : up(raw_tok, 1024);
        if (!policy.chunked_prefill) tokens = std::max(tokens, isl + bs);  // get_settings, with its own batch
        if (!s.user_batch) policy.max_batch = bs;
        if (!s.user_tokens) policy.max_num_tokens = tokens;
    }
    Evaluator e(s, policy, l);
    if (!policy.chunked_prefill && isl > policy.max_num_tokens)
        throw InvalidArgument("prompt_tokens " + std::to_string(static_cast<long long>(isl)) + " exceed max_num_tokens " +
                              std::to_string(static_cast<long long>(policy.max_num_tokens)) + " of engine '" + s.config.engine +
                              "', which does not chunk prompts: raise max_num_tokens");

    ServingRow r;
    r.devices = s.config.parallel.devices();
    r.max_batch = policy.max_batch;
    r.max_num_tokens = policy.max_num_tokens;
    r.memory_capacity = s.capacity;
    r.memory_weights = s.weights;
    r.memory_reserved = s.reserve;
    r.memory_activations = s.p->activation_bytes(policy.max_num_tokens, std::min(policy.max_batch, policy.max_num_tokens));
    const double kv_bytes = kv_budget(s, policy, r.memory_activations);
    if (kv_bytes <= 0)
        throw InvalidArgument("model '" + s.model_id + "' leaves no KV cache on '" + s.device_id + "' with max_num_tokens " +
                              std::to_string(static_cast<long long>(policy.max_num_tokens)) + " (fewer tokens per iteration, or more devices)");
    r.memory_kv_cache = kv_bytes;
    r.kv_memory_fraction = kv_bytes / s.capacity;
    r.kv_capacity_tokens = std::floor(kv_bytes / s.kv_token_bytes);

    // the scheduler's limit: sequences per micro-batch, the KV cache (a request reserves its whole length, or holds
    // its mean length while the running batch is staggered), the token budget
    const double per_seq = policy.kv_reserve_full ? s.seq_kv(isl + osl) : s.seq_kv(isl + osl / 2);
    const double by_kv = std::floor(kv_bytes / per_seq);
    const double by_batch = s.pp * policy.max_batch;
    const double by_budget = s.pp * e.budget_batch();
    double cap = std::min({by_batch, by_kv, osl > 1 ? by_budget : kInf});
    r.max_running_batch = cap;
    if (limit) *limit = cap == by_kv ? "kv_cache" : cap == by_batch ? "max_batch" : "token_budget";
    if (cap < 1)
        throw InvalidArgument("not one request of " + std::to_string(static_cast<long long>(isl + osl)) + " tokens fits the KV cache of model '" +
                              s.model_id + "' on '" + s.device_id + "' (" + std::to_string(r.kv_capacity_tokens) + " tokens)");

    const double units = s.units;
    const double n = e.n();
    Iterations it;
    double rate_tok = 0, ttft = 0, e2e = 0;
    r.saturated = false;
    if (l.concurrency > 0) {
        const double c = std::max(1.0, l.concurrency / units);
        // the share of clients decoding: n decode iterations of every n + chunks + 1/2 a cycle takes
        double B = std::min(cap, std::max(1.0, c * n / (n + 1.5)));
        for (int i = 0; i < 6; ++i) {
            it = e.at(B);
            const double cycle = e.ttft_service(it) + n * it.t_mean;
            const double next = std::min(cap, std::max(n > 0 ? 1.0 : 0.0, c * n * it.t_mean / std::max(cycle, 1e-30)));
            if (std::abs(next - B) < 0.01 * B + 0.01) {
                B = next;
                break;
            }
            B = next;
        }
        it = e.at(B, breakdown);
        rate_tok = e.rate(it);
        const double cycle = e.ttft_service(it) + n * it.t_mean;
        if (c * osl / cycle > rate_tok * 1.0000001 && B >= cap) {  // more clients than the scheduler runs: they queue
            e2e = c * osl / rate_tok;
            ttft = e2e - n * it.t_mean;
        } else {
            rate_tok = c * osl / cycle;
            e2e = cycle;
            ttft = e.ttft_service(it);
        }
        r.running_batch = B;
    } else if (l.request_rate > 0) {
        const double lam = l.request_rate / units;  // requests/s per scheduler
        const Iterations full = e.at(cap);
        const double capacity_req = e.rate(full) / osl;
        if (lam >= capacity_req) {
            r.saturated = true;
            it = e.at(cap, breakdown);
            rate_tok = e.rate(it);
            ttft = e2e = kInf;
            r.running_batch = cap;
        } else {
            double B = std::max(n > 0 ? 1.0 : 0.0, std::min(cap, lam * n * e.at(1).t_mean));
            for (int i = 0; i < 12; ++i) {  // Little's law: B = λ · n · t(B), t increasing in B
                it = e.at(B);
                const double next = std::min(cap, std::max(n > 0 ? 1.0 : 0.0, lam * n * it.t_mean));
                if (std::abs(next - B) < 0.005 * B + 0.01) {
                    B = next;
                    break;
                }
                B = next;
            }
            it = e.at(B, breakdown);
            // prompts wait for the prefill share of iterations: M/D/1 whose service is a prompt's share of mixed
            // iterations (ISL / chunk of one, at least); a prompt's own prefill spans its chunks
            const double service = it.t_mixed * std::max(isl / std::max(it.chunk, 1.0), 1.0 / std::max(1.0, std::floor(it.chunk / isl)));
            const double rho = lam * service;
            if (rho >= 1) {
                r.saturated = true;
                ttft = e2e = kInf;
            } else {
                ttft = it.t_mean / 2 + rho / (2 * (1 - rho)) * service + it.chunks_per_prompt * it.t_mixed;
                e2e = ttft + n * it.t_mean;
            }
            rate_tok = lam * osl;
            r.running_batch = B;
        }
    } else {
        const double N = l.num_requests / units;
        const double B = N > 0 ? std::min(cap, std::max(1.0, std::floor(N))) : cap;
        it = e.at(B, breakdown);
        const double steady = e.rate(it);  // tokens/s
        const double period = it.t_mean;
        r.running_batch = B;
        if (N <= 0) {
            rate_tok = steady;
            ttft = e.ttft_service(it);
            e2e = ttft + n * period;
        } else {
            // ramp-up: the first B prompts in full-budget iterations; steady state; drain as the batch empties
            const double fill_iters = std::ceil(B * isl / (it.micro * policy.max_num_tokens));
            const double t_fill_iter = e.prefill_pass_s(std::min(policy.max_num_tokens, B * isl));
            const double t_fill = fill_iters * t_fill_iter;
            double total;
            const double tau = n > 0 ? n * period / B : t_fill_iter * isl / policy.max_num_tokens;  // per completion
            if (N <= cap || n <= 0) {
                total = t_fill + n * it.t_decode;
                ttft = (t_fill + t_fill_iter) / 2;
            } else {
                const Iterations half = e.at(std::max(1.0, B / 2));
                total = t_fill + (N - B) * tau + n / 2 * period + n * half.t_decode;
                const double later = N - B;
                ttft = (B * t_fill / 2 + later * t_fill + tau * later * (later + 1) / 2) / N + e.ttft_service(it);
            }
            r.run_s = total;
            rate_tok = N * osl / total;
            e2e = ttft + n * period;
        }
    }
    r.output_tokens_per_s = rate_tok * units;
    // the same iterations at the datasheet roofline: every pass's ideal time and the bytes of its collectives and
    // stage hand-offs at the interconnect's bandwidth; no fixed cost, step latency or host time
    r.roofline_output_tokens_per_s = e.rate(it, true) * units;
    r.requests_per_s = r.output_tokens_per_s / osl;
    r.output_tokens_per_s_per_device = r.output_tokens_per_s / r.devices;
    r.tokens_per_decode_iteration = s.gain;
    r.itl_s = it.t_mean / s.gain;  // a decoding sequence gains s.gain tokens per iteration on average
    r.ttft_s = ttft;
    r.e2e_s = e2e;
    r.tpot_s = n > 0 ? (std::isfinite(e2e) ? (e2e - ttft) / (osl - 1) : r.itl_s) : 0;
    r.prefill_chunk_tokens = it.chunk;
    r.mixed_fraction = it.f;
    r.decode_iteration_s = it.t_decode;
    r.mixed_iteration_s = it.t_mixed;
    r.decode_bound = it.decode_bound;
    r.prefill_bound = it.prefill_bound;
    const EstimatePlan::Impl& p = *s.p;
    r.output_tokens_per_s_lo = r.output_tokens_per_s * p.decode_lo;
    r.output_tokens_per_s_hi = r.output_tokens_per_s * p.decode_hi;
    r.itl_s_lo = r.itl_s / p.decode_hi;
    r.itl_s_hi = r.itl_s / p.decode_lo;
    r.ttft_s_lo = r.ttft_s / p.prefill_hi;
    r.ttft_s_hi = r.ttft_s / p.prefill_lo;
    return r;
}

ServingEstimate ServingPlan::estimate(const ServingLoad& load, bool breakdown) const {
    ServingEstimate e;
    static_cast<ServingRow&>(e) = evaluate(load, breakdown ? &e.breakdown : nullptr, &e.batch_limit);
    const Impl& s = *impl_;
    e.model = s.model_id;
    e.quant = s.config.quant;
    e.device = s.device_id;
    e.engine = s.plan.engine_id();
    e.kv_dtype = s.kv_dtype;
    e.parallel = s.config.parallel.notation();
    e.mode = load.concurrency > 0 ? "concurrency" : load.request_rate > 0 ? "rate" : "offline";
    e.load = load;
    return e;
}

ServingEstimate serve(const Model& model, const Device& device, const ServingConfig& config, const ServingLoad& load) {
    return ServingPlan(model, device, config).estimate(load);
}

}  // namespace roofline

namespace roofline {

namespace {
// Bisection over whole numbers between `good` (passes `ok`) and `bad` (fails; above or below it): the whole number
// next to the boundary on good's side, its evaluation left in `row`.
template <class Eval, class Ok>
double bisect_whole(double good, double bad, ServingRow& row, Eval&& eval, Ok&& ok) {
    while (std::abs(bad - good) > 1) {
        const double mid = std::floor((good + bad) / 2);
        ServingRow r = eval(mid);
        if (ok(r)) {
            good = mid;
            row = r;
        } else {
            bad = mid;
        }
    }
    return good;
}

std::string ms(double s) {
    if (!std::isfinite(s)) return "inf";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
    return b;
}
}  // namespace

bool is_serving_engine(std::string_view engine_name, const Device& device) {
    const std::shared_ptr<const Engine> e = engine(engine_name);
    return e->on(device).serving.defined;
}

bool is_serving_engine(std::string_view engine_name, const Device& device, std::string_view split_mode,
                       std::string_view where) {
    if (!is_serving_engine(engine_name, device)) return false;
    if (!split_mode.empty() && split_mode != "tensor")
        throw InvalidArgument(std::string(where) + ": engine '" + std::string(engine_name) +
                              "' serves a deployment split by \"tensor\" (tensor parallelism), got split_mode \"" +
                              std::string(split_mode) + "\"");
    return true;
}

ServingLatencyAnswer max_concurrency_for_latency(const ServingPlan& plan, double prompt, double gen, double tpot_s,
                                                 double ttft_s) {
    check_size("tpot_s", tpot_s);
    check_size("ttft_s", ttft_s);
    ServingLatencyAnswer a;
    std::string limit;
    auto at = [&](double c) {
        ++a.evaluations;
        return plan.evaluate(ServingLoad{prompt, gen, c}, nullptr, &limit);
    };
    auto why = [&](const ServingRow& r) -> std::string {
        if (r.saturated) return "queue";
        if (tpot_s > 0 && r.tpot_s > tpot_s) return "tpot";
        if (ttft_s > 0 && r.ttft_s > ttft_s) return "ttft";
        return "";
    };
    const ServingRow one = at(1);
    const double cap = std::max(1.0, one.max_running_batch);
    if (!why(one).empty()) {
        a.limit = why(one);
        a.at = one;
        a.beyond = at(2);
        a.reason = "one client already misses the " + a.limit + " target (TPOT " + ms(one.tpot_s) + ", TTFT " + ms(one.ttft_s) + ")";
        return a;
    }
    // 1 meets the targets; cap + 1 lies beyond the scheduler's limit
    ServingRow best = one;
    const double lo = bisect_whole(1, cap + 1, best, at, [&](const ServingRow& r) { return why(r).empty(); });
    a.feasible = true;
    a.concurrency = lo;
    a.at = best;
    a.beyond = at(lo + 1);
    const std::string w = why(a.beyond);
    a.limit = lo >= cap ? limit : w.empty() ? limit : w;
    a.reason = std::to_string(static_cast<long long>(lo)) + " clients: " + std::to_string(static_cast<long long>(best.output_tokens_per_s)) +
               " output tokens/s, TPOT " + ms(best.tpot_s) + ", TTFT " + ms(best.ttft_s) + "; more are limited by " + a.limit;
    return a;
}

ServingThroughputAnswer min_concurrency_for_throughput(const ServingPlan& plan, double prompt, double gen, double target,
                                                       double tpot_s, double ttft_s) {
    check_size("tokens_per_s", target, true);
    ServingThroughputAnswer t;
    t.capacity = max_concurrency_for_latency(plan, prompt, gen, tpot_s, ttft_s);
    if (!t.capacity.feasible) {
        t.reason = t.capacity.reason;
        t.at = t.capacity.at;
        return t;
    }
    if (t.capacity.at.output_tokens_per_s < target) {
        t.at = t.capacity.at;
        t.reason = "at most " + std::to_string(static_cast<long long>(t.capacity.at.output_tokens_per_s)) +
                   " output tokens/s within the targets (" + t.capacity.reason + ")";
        return t;
    }
    // the capacity's clients reach the target; 0 clients do not
    ServingRow best = t.capacity.at;
    const double hi = bisect_whole(t.capacity.concurrency, 0, best,
                                   [&](double c) { return plan.evaluate(ServingLoad{prompt, gen, c}); },
                                   [&](const ServingRow& r) { return r.output_tokens_per_s >= target; });
    t.feasible = true;
    t.concurrency = hi;
    t.at = best;
    t.reason = std::to_string(static_cast<long long>(hi)) + " clients reach " + std::to_string(static_cast<long long>(target)) +
               " output tokens/s (TPOT " + ms(best.tpot_s) + ", TTFT " + ms(best.ttft_s) + ")";
    return t;
}

}  // namespace roofline
