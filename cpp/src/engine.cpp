#include "roofline/engine.hpp"

#include "roofline/kv_cache.hpp"
#include "roofline/quant.hpp"

#include "json_reader.hpp"
#include "roofline/data.hpp"
#include "roofline/errors.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <mutex>

namespace roofline {

using detail::JsonObject;

std::string_view all_reduce_name(AllReduce a) {
    return a == AllReduce::ring ? "ring" : a == AllReduce::one_shot ? "one-shot" : "two-shot";
}

namespace {
bool is_f16(const Format& f) { return f.compute == DType::fp16 && f.bits_per_element == 16; }
}  // namespace

bool KvToF16::converts(const Format& kv, double queries, const std::string& family) const {
    if (formats.empty() || queries < min_queries) return false;
    if (std::find(except_families.begin(), except_families.end(), family) != except_families.end()) return false;
    if (is_f16(kv)) return false;  // already f16
    if (formats.front() == "*") return true;
    const std::string name = to_lower(kv.name);
    return std::find(formats.begin(), formats.end(), name) != formats.end();
}

const std::vector<std::string>& EngineBackend::op_kernel_names() {
    static const std::vector<std::string> names = {
        "embedding", "rope", "kv_append", "attention_standard", "attention_flash", "decode_attention_standard",
        "decode_attention_flash", "residual_add", "ffn_act", "moe_topk", "moe_combine"};
    return names;
}

const std::vector<std::string>& backend_names() {
    static const std::vector<std::string> names = {"any", "cuda", "rocm", "metal", "vulkan", "cpu"};
    return names;
}

bool Engine::runs(const Format& weight) const {
    if (weight_formats.empty()) return true;
    // GGML's F16 / F32 and the GPU names fp16 / fp32 are the same numbers
    auto canonical = [](std::string s) {
        s = to_lower(s);
        return s == "f16" ? std::string("fp16") : s == "f32" ? std::string("fp32") : s;
    };
    const std::string format = canonical(weight.name);
    for (const auto& w : weight_formats) {
        if (canonical(w) == format) return true;
        if (w == "ggml" && is_ggml_type_name(weight.name)) {
            // GGML's own type of that name: a GPU scheme named like one (nvfp4: FP4 on tensor cores, no
            // dequantization) is not what ggml's kernels do with the type
            const std::string lower = to_lower(weight.name);
            const Format g = format_of(ggml_type_info(lower == "fp16" ? "F16" : lower == "fp32" ? "F32" : weight.name));
            if (g.compute == weight.compute && g.dequant_flops_per_element == weight.dequant_flops_per_element) return true;
        }
        if (w == "float" && weight.dequant_flops_per_element == 0) return true;
        if (w == "quantized" && weight.dequant_flops_per_element > 0) return true;
        if (w != "float" && w != "quantized" && w != "ggml") {  // a spelling of the format ("fp8" is fp8_e4m3)
            try {
                if (canonical(parse_format(w).name) == format) return true;
            } catch (const NotFound&) {
            }
        }
    }
    return false;
}

void Engine::check_runs(const Format& weight, std::string_view quant) const {
    if (runs(weight)) return;
    std::string list;
    for (const auto& w : weight_formats)
        list += (list.empty() ? "" : ", ") + (w == "ggml" ? std::string("GGML tensor types (F32, F16, BF16, Q4_0 ... Q8_0, "
                                                                       "the K- and IQ-quants, MXFP4) and their mixes") : w);
    const bool ggml_named = std::find(weight_formats.begin(), weight_formats.end(), "ggml") != weight_formats.end() &&
                            is_ggml_type_name(weight.name);
    throw InvalidArgument("engine '" + id + "' does not run weights in " + weight.name +
                          (quant != weight.name ? " (quantization '" + std::string(quant) + "')" : std::string()) +
                          "; it runs: " + list +
                          (ggml_named ? std::string("; '") + weight.name + "' here is the GPU checkpoint format, computed on "
                                        "FP4 tensor cores: GGML's type of that name is read from a GGUF file that holds it "
                                        "(rp.model(path), quant='gguf')"
                                      : std::string()));
}

std::string Engine::quant_for(std::string_view quant) const {
    // llama-quantize writes MXFP4 as the MXFP4_MOE file type (stacked experts in MXFP4, the other matrices in Q8_0;
    // llama_quant.cpp has the rule), the type gpt-oss GGUFs carry; read as the GPU checkpoint format, the name would
    // put every matrix in FP4 on tensor cores with no dequantization, which no ggml kernel does
    if (to_lower(quant) == "mxfp4" && std::find(weight_formats.begin(), weight_formats.end(), "ggml") != weight_formats.end())
        return "MXFP4_MOE";
    return std::string(quant);
}

std::string ServingPolicy::kv_dtype_for(const std::string& quant, const std::string& activation_format) const {
    auto it = kv_dtype_by_weights.find(to_lower(quant));
    return it != kv_dtype_by_weights.end() ? it->second : activation_format;
}

bool LinearKernel::handles(const Format& weight) const {
    const std::string format = to_lower(weight.name);
    for (const auto& w : weights) {
        if (w == "*" || w == format) return true;
        if (w == "float" && weight.dequant_flops_per_element == 0) return true;
        if (w == "quantized" && weight.dequant_flops_per_element > 0) return true;
    }
    return false;
}

double LinearKernel::alu_ops_for(const Format& weight) const {
    if (alu_ops_scale.empty()) return alu_ops_per_mac;
    const auto it = alu_ops_scale.find(to_lower(weight.name));
    return it == alu_ops_scale.end() ? alu_ops_per_mac : alu_ops_per_mac * it->second;
}

std::string LinearKernel::alu_format_name() const {
    return alu_on_issue ? std::string("issue") : std::string(dtype_name(alu_format));
}

KernelOccupancy LinearKernel::occupancy_on(const std::string& family) const {
    KernelOccupancy o{efficiency, tiles_per_unit, split_k, stream_k};
    const auto it = by_family.find(family);
    if (it == by_family.end()) return o;
    const FamilyOccupancy& f = it->second;
    return {f.efficiency.value_or(o.efficiency), f.tiles_per_unit.value_or(o.tiles_per_unit), f.split_k.value_or(o.split_k),
            f.stream_k.value_or(o.stream_k), f.alu_ops_scale.value_or(o.alu_ops_scale)};
}

std::vector<const LinearKernel*> kernels_for(const std::vector<LinearKernel>& kernels, const Format& weight,
                                             std::string_view backend, std::string_view engine_id) {
    std::vector<const LinearKernel*> out;
    double reach = 0;  // rows the kernels of every family listed so far take
    for (const auto& k : kernels) {
        if (!k.handles(weight) || k.max_rows <= reach) continue;  // shadowed by an earlier kernel
        out.push_back(&k);
        if (!k.unconditional()) continue;  // elsewhere (other families, more experts) the kernels after it run these rows
        reach = k.max_rows;
        if (!(reach < std::numeric_limits<double>::infinity())) return out;
    }
    throw InvalidArgument("engine '" + std::string(engine_id) + "' on backend '" + std::string(backend) +
                          "' has no linear kernel for weights in " + weight.name +
                          (reach == 0 ? std::string(out.empty() ? "" : " on every device family and expert count")
                                      : " above " + std::to_string(static_cast<long long>(reach)) + " rows"));
}

std::vector<LinearKernel> EngineBackend::kernels_for(const Format& weight, std::string_view engine_id) const {
    std::vector<LinearKernel> out;
    for (const LinearKernel* k : roofline::kernels_for(linear_kernels, weight, backend, engine_id)) out.push_back(*k);
    return out;
}

namespace {

Provenance provenance_of(JsonObject& o) {
    Provenance p;
    p.source = o.nonempty_string("source");
    p.uncertain = o.opt_string("uncertain");
    return p;
}

// {"value": ..., "source": ..., "uncertain": ...}: the value, its provenance recorded under `key`.
double number_value(JsonObject& o, const std::string& key, EngineBackend& b, double lo, double hi) {
    JsonObject p = o.object(key);
    const double v = p.number("value", lo, hi);
    b.sources[key] = provenance_of(p);
    p.finish();
    return v;
}
bool flag_value(JsonObject& o, const std::string& key, EngineBackend& b) {
    JsonObject p = o.object(key);
    const auto& v = p.raw("value");
    if (!v.is_boolean()) p.fail("value", "must be true or false, got " + v.dump());
    b.sources[key] = provenance_of(p);
    p.finish();
    return v.get<bool>();
}
std::string text_value(JsonObject& o, const std::string& key, EngineBackend& b, const std::vector<std::string>* allowed) {
    JsonObject p = o.object(key);
    const std::string v = allowed ? p.choice("value", *allowed) : p.nonempty_string("value");
    b.sources[key] = provenance_of(p);
    p.finish();
    return v;
}

// A hardware_db family as engine_db names it (kernel families, by_family, flash_attention_issue): lower-case
// letters, digits, '.', '_', '-' (the schemas' pattern ^[a-z0-9_.-]+$).
bool is_family_name(const std::string& s) {
    return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.-") == std::string::npos;
}

// The hardware_db families listed at `key` (a kernel's families, a KV conversion's except_families), each one
// named once.
std::vector<std::string> family_names(JsonObject& o, const std::string& key) {
    const auto& fams = o.array(key, true);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < fams.size(); ++i) {
        const std::string at = key + "[" + std::to_string(i) + "]";
        if (!fams[i].is_string() || !is_family_name(fams[i].get<std::string>()))
            o.fail(at, "must be a hardware_db family in lower case (letters, digits, '.', '_', '-'), got " + fams[i].dump());
        if (std::find(out.begin(), out.end(), fams[i].get<std::string>()) != out.end())
            o.fail(at, "names " + fams[i].dump() + " twice");
        out.push_back(fams[i].get<std::string>());
    }
    return out;
}

LinearKernel parse_kernel(JsonObject& k) {
    LinearKernel x;
    x.name = k.nonempty_string("name");
    x.weights.clear();
    const auto& w = k.array("weights", true);
    if (w.empty()) k.fail("weights", "must list at least one weight format ('*' for all)");
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (!w[i].is_string()) k.fail("weights", "must hold strings, got " + w[i].dump());
        const std::string name = to_lower(w[i].get<std::string>());
        if (name != "*" && name != "float" && name != "quantized") {
            try {
                parse_format(name);
            } catch (const NotFound& e) {
                k.fail("weights[" + std::to_string(i) + "]", std::string("is not a format: ") + e.what());
            }
        }
        x.weights.push_back(name);
    }
    if (auto r = k.opt_number("max_rows", 1, 1e15)) x.max_rows = *r;
    if (k.has("families")) {
        x.families = family_names(k, "families");
        if (x.families.empty()) k.fail("families", "must name at least one hardware_db family (absent: every family)");
    }
    if (auto e = k.opt_number("max_experts", 1, 1e9)) x.max_experts = *e;
    x.unit = k.choice("unit", {"vector", "matrix"}) == "vector" ? Unit::vector : Unit::matrix;
    x.compute = to_lower(k.nonempty_string("compute"));
    if (x.compute != "activation" && x.compute != "weights") {
        try {
            parse_dtype(x.compute);
        } catch (const NotFound& e) {
            k.fail("compute", std::string("must be 'activation', 'weights' or a number format: ") + e.what());
        }
    }
    if (auto t = k.opt_number("tile_m", 1, 1e6)) x.tile_m = *t;
    if (auto t = k.opt_number("tile_n", 1, 1e6)) x.tile_n = *t;
    x.stream_k = k.opt_bool("stream_k", false);
    if (k.has("moe_row_tile")) x.moe_tile_from_batch = k.choice("moe_row_tile", {"expert", "batch"}) == "batch";
    if (auto s = k.opt_number("row_tile_step", 1, 1e6)) x.row_tile_step = *s;
    if (auto d = k.opt_number("dequant_every_rows", 0, 1e9)) x.dequant_every_rows = *d;
    x.dequant_overlapped = k.opt_bool("dequant_overlapped", true);
    if (auto e = k.opt_number("efficiency", 1e-3, 1)) x.efficiency = *e;
    if (auto t = k.opt_number("tiles_per_unit", 1.0 / 64, 64)) x.tiles_per_unit = *t;
    x.split_k = k.opt_bool("split_k", true);
    if (auto fams = k.opt_object("by_family")) {
        for (const std::string& family : fams->keys()) {
            if (!is_family_name(family))
                fams->fail(family, "must be a hardware_db family in lower case (such as 'amd-rdna3.5')");
            JsonObject f = fams->object(family);
            LinearKernel::FamilyOccupancy o;
            o.efficiency = f.opt_number("efficiency", 1e-3, 1);
            o.tiles_per_unit = f.opt_number("tiles_per_unit", 1.0 / 64, 64);
            if (f.has("split_k")) o.split_k = f.opt_bool("split_k", true);
            if (f.has("stream_k")) o.stream_k = f.opt_bool("stream_k", false);
            o.alu_ops_scale = f.opt_number("alu_ops_scale", 0.01, 100);
            o.provenance = provenance_of(f);
            f.finish();
            if (!o.efficiency && !o.tiles_per_unit && !o.split_k && !o.stream_k && !o.alu_ops_scale)
                fams->fail(family, "must set at least one of efficiency, tiles_per_unit, split_k, stream_k, alu_ops_scale");
            if (o.alu_ops_scale && x.unit != Unit::matrix)
                fams->fail(family, "alu_ops_scale: only a matrix kernel (\"unit\": \"matrix\") scales its ALU work by family");
            x.by_family[family] = o;
        }
        fams->finish();
    }
    if (auto a = k.opt_number("alu_ops_per_mac", 0, 1e3)) x.alu_ops_per_mac = *a;
    if (auto share = k.opt_number("alu_weight_share", 0, 1)) x.alu_weight_share = *share;
    if (k.has("alu_format")) {
        const std::string f = k.choice("alu_format", {"int32", "fp32", "fp16", "issue"});
        x.alu_on_issue = f == "issue";
        if (!x.alu_on_issue) x.alu_format = parse_dtype(f);
    }
    if (auto scale = k.opt_object("alu_ops_scale")) {
        for (const std::string& name : scale->keys()) {
            try {
                parse_format(name);
            } catch (const NotFound& e) {
                scale->fail(name, std::string("is not a weight format: ") + e.what());
            }
            if (to_lower(name) != name) scale->fail(name, "must be written in lower case, as 'weights' names formats");
            x.alu_ops_scale[name] = scale->number(name, 0, 100, true);
        }
        scale->finish();
    }
    if (k.has("fallback_compute")) {
        x.fallback_compute = to_lower(k.nonempty_string("fallback_compute"));
        if (x.fallback_compute != "activation") {
            try {
                parse_dtype(x.fallback_compute);
            } catch (const NotFound& e) {
                k.fail("fallback_compute", std::string("must be 'activation' or a number format: ") + e.what());
            }
        }
    }
    if (auto l = k.opt_number("launches", 1, 64)) {
        if (std::floor(*l) != *l) k.fail("launches", "must be a whole number of kernels, got " + std::to_string(*l));
        x.launches = *l;
    }
    if (auto l = k.opt_number("moe_launches", 1, 64)) {
        if (std::floor(*l) != *l) k.fail("moe_launches", "must be a whole number of kernels, got " + std::to_string(*l));
        x.moe_launches = *l;
    }
    x.provenance = provenance_of(k);
    k.finish();
    return x;
}

// The continuous-batching keys (ServingPolicy): required together, of serving engines only.
const std::vector<std::string>& serving_keys() {
    static const std::vector<std::string> keys = {
        "max_num_tokens", "max_batch", "kv_memory_fraction", "kv_memory_of", "kv_block_tokens", "kv_reservation",
        "chunked_prefill", "cuda_graph_max_batch", "iteration_overhead_us", "eager_launch_us", "graph_reserve_GB",
        "kv_dtype_by_weights", "max_batch_tuning", "mixed_batches", "limits_by_memory", "host_per_sequence_us"};
    return keys;
}
bool is_serving_key(const std::string& key) {
    return std::find(serving_keys().begin(), serving_keys().end(), key) != serving_keys().end();
}

const std::vector<std::string>& backend_keys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k = {
            "kernel_fixed_cost_scale", "activation_format", "attention_format", "linear_kernels", "fused_qkv",
            "matvec_fused_bias", "matvec_fused_glu", "logits_last_token_only",
            "runtime_overhead_GB", "all_reduce", "collective_step_latency_us", "collective_protocols",
            "custom_all_reduce_max_bytes", "custom_all_reduce_max_hidden", "vocab_parallel", "bandwidth_fraction",
            "op_kernels", "prefill_ubatch_tokens", "split_modes", "prefill_batch_tokens", "layer_handoff_latency_us",
            "layer_split_kernel_fixed_cost_add", "flash_attention_version", "flash_attention_default",
            "decode_attention_per_query_head",
            "decode_attention_alu_ops_per_mac", "attention_score_bytes", "unfused_attention_bytes", "flash_attention_formats",
            "flash_attention_issue", "flash_attention_head_dims", "flash_attention_kv_to_f16", "prediction_interval"};
        k.insert(k.end(), serving_keys().begin(), serving_keys().end());
        return k;
    }();
    return keys;
}

// Applies the properties present in `o` (one backend object of a file) onto `b`.
void apply_backend(EngineBackend& b, JsonObject o, const nlohmann::json& raw) {
    for (auto it = raw.begin(); it != raw.end(); ++it)  // a typo names the field and the nearest property
        if (std::find(backend_keys().begin(), backend_keys().end(), it.key()) == backend_keys().end())
            o.fail(it.key(), "is not a known field; " + unknown_name_message("engine property", it.key(), backend_keys()));
    if (o.has("kernel_fixed_cost_scale")) b.kernel_fixed_cost_scale = number_value(o, "kernel_fixed_cost_scale", b, 0, 1e3);
    if (o.has("activation_format")) {
        static const std::vector<std::string> formats = {"fp32", "fp16", "bf16"};
        b.activation_format = text_value(o, "activation_format", b, &formats);
    }
    if (o.has("attention_format")) {  // one format for both products, or {"qk": ..., "pv": ...}
        static const std::vector<std::string> formats = {"activation", "fp32", "tf32", "fp16", "bf16", "fp16_acc16"};
        JsonObject p = o.object("attention_format");
        if (p.raw("value").is_object()) {
            JsonObject v = p.object("value");
            b.attention_format = v.choice("qk", formats);
            b.attention_pv_format = v.choice("pv", formats);
            v.finish();
        } else {
            b.attention_format = b.attention_pv_format = p.choice("value", formats);
        }
        b.sources["attention_format"] = provenance_of(p);
        p.finish();
    }
    if (o.has("flash_attention_formats")) {
        static const std::vector<std::string> formats = {"attention", "activation", "fp32", "fp16", "bf16", "fp16_acc16"};
        JsonObject p = o.object("flash_attention_formats");
        JsonObject v = p.object("value");
        b.flash_qk_format = v.choice("qk", formats);
        b.flash_pv_format = v.choice("pv", formats);
        v.finish();
        b.sources["flash_attention_formats"] = provenance_of(p);
        p.finish();
    }
    if (o.has("flash_attention_issue")) {
        JsonObject p = o.object("flash_attention_issue");
        const auto& v = p.raw("value");
        if (!v.is_object())  // {}: not counted
            p.fail("value", "must map device families (or \"default\") to [head_dim, one_head, grouped] rows, got " + v.dump());
        b.flash_issue_per_score.clear();
        for (auto it = v.begin(); it != v.end(); ++it) {
            const std::string at = "value." + it.key();
            if (it.key() != "default" && !is_family_name(it.key()))
                p.fail(at, "must be \"default\" or a hardware_db family in lower case");
            const auto& rows = *it;
            if (!rows.is_array() || rows.empty()) p.fail(at, "must list [head_dim, one_head, grouped] rows, got " + rows.dump());
            std::vector<std::array<double, 3>> table;
            for (const auto& row : rows) {
                if (!row.is_array() || row.size() != 3 || !row[0].is_number() || !row[1].is_number() || !row[2].is_number())
                    p.fail(at, "rows must be [head_dim, one_head, grouped] (instructions per score element), got " + row.dump());
                const std::array<double, 3> x{row[0].get<double>(), row[1].get<double>(), row[2].get<double>()};
                if (!(x[0] >= 1 && x[0] <= 4096) || !(x[1] > 0 && x[1] <= 1e4) || !(x[2] > 0 && x[2] <= 1e4) ||
                    (!table.empty() && !(x[0] > table.back()[0])))
                    p.fail(at, "rows must have head_dim ascending in 1..4096 and instructions in (0, 10000], got " + row.dump());
                table.push_back(x);
            }
            b.flash_issue_per_score[it.key()] = std::move(table);
        }
        b.sources["flash_attention_issue"] = provenance_of(p);
        p.finish();
    }
    if (o.has("flash_attention_head_dims")) {
        JsonObject p = o.object("flash_attention_head_dims");
        const auto& v = p.raw("value");
        if (!v.is_array()) p.fail("value", "must list head sizes ([]: every head size), got " + v.dump());
        b.flash_attention_head_dims.clear();
        for (const auto& x : v) {
            if (!x.is_number() || std::floor(x.get<double>()) != x.get<double>() || x.get<double>() < 1 || x.get<double>() > 4096 ||
                (!b.flash_attention_head_dims.empty() && !(x.get<double>() > b.flash_attention_head_dims.back())))
                p.fail("value", "must list head sizes as ascending integers in 1..4096, got " + v.dump());
            b.flash_attention_head_dims.push_back(x.get<double>());
        }
        b.sources["flash_attention_head_dims"] = provenance_of(p);
        p.finish();
    }
    if (o.has("flash_attention_kv_to_f16")) {
        JsonObject p = o.object("flash_attention_kv_to_f16");
        JsonObject v = p.object("value");
        KvToF16 k;
        const auto& formats = v.raw("formats");
        std::vector<std::string> others;  // the KV cache formats a kernel could convert: all but f16
        for (const auto& n : kv_format_names())
            if (n != "f16") others.push_back(n);
        const std::string allowed =
            "\"*\" alone (every format but f16) or KV cache formats other than f16 (" + join(others) + "), [] for none";
        if (!formats.is_array()) v.fail("formats", "must list " + allowed + ", got " + formats.dump());
        for (const auto& f : formats) {
            // the cache format's own name (f32 -> fp32), as converts() compares it; "" where not allowed
            std::string name = f.is_string() ? to_lower(f.get<std::string>()) : "";
            if (name == "*") {
                if (formats.size() != 1) name.clear();
            } else if (!name.empty()) {
                try {
                    const Format kv = parse_kv_format(name);
                    name = is_f16(kv) ? "" : to_lower(kv.name);
                } catch (const NotFound&) {
                    name.clear();
                }
            }
            if (name.empty()) v.fail("formats", "must list " + allowed + ", got " + formats.dump());
            k.formats.push_back(name);
        }
        k.min_queries = static_cast<double>(v.integer("min_queries", 1, 65536));
        if (v.has("except_families")) k.except_families = family_names(v, "except_families");
        v.finish();
        b.flash_attention_kv_to_f16 = std::move(k);
        b.sources["flash_attention_kv_to_f16"] = provenance_of(p);
        p.finish();
    }
    if (o.has("linear_kernels")) {
        JsonObject lk = o.object("linear_kernels");
        const auto& list = lk.array("value", true);
        if (list.empty()) lk.fail("value", "must list at least one kernel");
        b.linear_kernels.clear();
        for (auto it = b.sources.begin(); it != b.sources.end();)  // a base's kernels are replaced, their sources too
            it = it->first.rfind("linear_kernels[", 0) == 0 ? b.sources.erase(it) : std::next(it);
        for (std::size_t i = 0; i < list.size(); ++i) {
            JsonObject k(list[i], lk.field("value[" + std::to_string(i) + "]"), lk.origin());
            b.linear_kernels.push_back(parse_kernel(k));
            b.sources["linear_kernels[" + std::to_string(i) + "]"] = b.linear_kernels.back().provenance;
        }
        lk.finish();
    }
    if (o.has("fused_qkv")) b.fused_qkv = flag_value(o, "fused_qkv", b);
    if (o.has("matvec_fused_bias")) b.matvec_fused_bias = flag_value(o, "matvec_fused_bias", b);
    if (o.has("matvec_fused_glu")) b.matvec_fused_glu = flag_value(o, "matvec_fused_glu", b);
    if (o.has("logits_last_token_only")) b.logits_last_token_only = flag_value(o, "logits_last_token_only", b);
    if (o.has("runtime_overhead_GB")) b.runtime_overhead_bytes = number_value(o, "runtime_overhead_GB", b, 0, 1e4) * 1e9;
    if (o.has("all_reduce")) {
        static const std::vector<std::string> algorithms = {"ring", "one-shot", "two-shot"};
        const std::string a = text_value(o, "all_reduce", b, &algorithms);
        b.all_reduce = a == "ring" ? AllReduce::ring : a == "one-shot" ? AllReduce::one_shot : AllReduce::two_shot;
    }
    if (o.has("collective_step_latency_us"))
        b.collective_step_latency_s = number_value(o, "collective_step_latency_us", b, 0, 1e6) * 1e-6;
    if (o.has("collective_protocols")) {
        JsonObject p = o.object("collective_protocols");
        const auto& list = p.array("value", true);
        b.collective_protocols.clear();
        for (std::size_t i = 0; i < list.size(); ++i) {
            JsonObject c(list[i], p.field("value[" + std::to_string(i) + "]"), p.origin());
            CollectiveProtocol cp;
            cp.name = c.string("name");
            cp.base_latency_s = c.number("base_latency_us", 0, 1e4) / 1e6;  // ÷ 1e6: round-trips through to_json's × 1e6
            JsonObject steps = c.object("step_latency_us");
            const char* kinds[] = {"nvlink", "pcie", "network"};
            for (std::size_t k = 0; k < 3; ++k) cp.step_latency_s[k] = steps.number(kinds[k], 0, 1e4) / 1e6;
            steps.finish();
            cp.bandwidth_share = c.number("bandwidth_share", 1e-3, 1);
            c.finish();
            b.collective_protocols.push_back(cp);
        }
        b.sources["collective_protocols"] = provenance_of(p);
        p.finish();
    }
    if (o.has("custom_all_reduce_max_bytes")) {
        JsonObject p = o.object("custom_all_reduce_max_bytes");
        const auto& v = p.raw("value");
        if (!v.is_array()) p.fail("value", "must list [up_to_ranks, max_bytes] rows ([]: no limit), got " + v.dump());
        b.custom_all_reduce_max_bytes.clear();
        double last = 1;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const auto& row = v[i];
            const std::string at = "value[" + std::to_string(i) + "]";
            if (!row.is_array() || row.size() != 2 || !row[0].is_number() || !row[1].is_number())
                p.fail(at, "must be [up_to_ranks, max_bytes], got " + row.dump());
            const std::array<double, 2> x{row[0].get<double>(), row[1].get<double>()};
            if (!(x[0] > last) || x[0] > 1024 || !(x[1] > 0) || x[1] > 1e12)
                p.fail(at, "must have up_to_ranks ascending within [2, 1024] and max_bytes within (0, 1e12], got " + row.dump());
            last = x[0];
            b.custom_all_reduce_max_bytes.push_back(x);
        }
        b.sources["custom_all_reduce_max_bytes"] = provenance_of(p);
        p.finish();
    }
    if (o.has("custom_all_reduce_max_hidden"))
        b.custom_all_reduce_max_hidden = number_value(o, "custom_all_reduce_max_hidden", b, 0, 1e7);
    if (o.has("vocab_parallel")) b.vocab_parallel = flag_value(o, "vocab_parallel", b);
    if (o.has("bandwidth_fraction")) b.bandwidth_fraction = number_value(o, "bandwidth_fraction", b, 1e-3, 1.5);
    if (o.has("op_kernels")) {
        JsonObject p = o.object("op_kernels");
        const auto& v = p.raw("value");
        if (!v.is_object()) p.fail("value", "must map op names to kernel counts, got " + v.dump());
        b.op_kernels.clear();
        for (auto it = v.begin(); it != v.end(); ++it) {
            const auto& names = EngineBackend::op_kernel_names();
            if (std::find(names.begin(), names.end(), it.key()) == names.end())
                p.fail("value." + it.key(), "is not an op; " + unknown_name_message("op", it.key(), names));
            if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > 64 ||
                std::floor(it->get<double>()) != it->get<double>())
                p.fail("value." + it.key(), "must be a whole number of kernels within [0, 64], got " + it->dump());
            b.op_kernels[it.key()] = it->get<double>();
        }
        b.sources["op_kernels"] = provenance_of(p);
        p.finish();
    }
    if (o.has("prefill_ubatch_tokens")) b.prefill_ubatch_tokens = number_value(o, "prefill_ubatch_tokens", b, 0, 1 << 24);
    if (o.has("split_modes")) {
        JsonObject p = o.object("split_modes");
        const auto& list = p.array("value", true);
        if (list.empty()) p.fail("value", "must list \"layer\", \"tensor\" or both, the default first");
        b.split_modes.clear();
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = "value[" + std::to_string(i) + "]";
            if (!list[i].is_string() || (list[i] != "layer" && list[i] != "tensor"))
                p.fail(at, "must be \"layer\" or \"tensor\", got " + list[i].dump());
            const std::string m = list[i].get<std::string>();
            if (std::find(b.split_modes.begin(), b.split_modes.end(), m) != b.split_modes.end()) p.fail(at, "repeats \"" + m + "\"");
            b.split_modes.push_back(m);
        }
        b.sources["split_modes"] = provenance_of(p);
        p.finish();
    }
    if (o.has("prefill_batch_tokens")) b.prefill_batch_tokens = number_value(o, "prefill_batch_tokens", b, 0, 1 << 24);
    if (o.has("layer_handoff_latency_us"))
        b.layer_handoff_latency_s = number_value(o, "layer_handoff_latency_us", b, 0, 1e6) / 1e6;  // round-trips
    if (o.has("layer_split_kernel_fixed_cost_add"))
        b.layer_split_kernel_fixed_cost_add = number_value(o, "layer_split_kernel_fixed_cost_add", b, 0, 100);
    if (o.has("flash_attention_version")) {
        const double v = number_value(o, "flash_attention_version", b, 1, 3);
        if (std::floor(v) != v) o.fail("flash_attention_version", "must be 1, 2 or 3");
        b.flash_attention_version = static_cast<int>(v);
    }
    if (o.has("flash_attention_default")) b.flash_attention_default = flag_value(o, "flash_attention_default", b);
    if (o.has("decode_attention_per_query_head"))
        b.decode_attention_per_query_head = flag_value(o, "decode_attention_per_query_head", b);
    if (o.has("decode_attention_alu_ops_per_mac"))
        b.decode_attention_alu_ops_per_mac = number_value(o, "decode_attention_alu_ops_per_mac", b, 0, 1000);
    if (o.has("attention_score_bytes")) b.attention_score_bytes = number_value(o, "attention_score_bytes", b, 0, 64);
    if (o.has("unfused_attention_bytes")) {
        JsonObject p = o.object("unfused_attention_bytes");
        JsonObject v = p.object("value");
        b.unfused_attention_bytes.per_cached_k = v.number("per_cached_k", 0, 64);
        b.unfused_attention_bytes.per_output = v.number("per_output", 0, 64);
        v.finish();
        b.sources["unfused_attention_bytes"] = provenance_of(p);
        p.finish();
    }
    // continuous batching (ServingPolicy): any of its keys makes the backend a serving one
    ServingPolicy& sv = b.serving;
    if (std::any_of(serving_keys().begin(), serving_keys().end(), [&](const std::string& k) { return o.has(k); }))
        sv.defined = true;
    // unit: the key's unit in SI (1e-6 for _us: divided by 1e6, which round-trips through to_json's × 1e6)
    auto serving_number = [&](const char* key, double& into, double lo, double hi, double unit = 1) {
        if (!o.has(key)) return;
        const double v = number_value(o, key, b, lo, hi);
        into = unit < 1 ? v / (1 / unit) : v * unit;
    };
    serving_number("max_num_tokens", sv.max_num_tokens, 1, 1 << 24);
    serving_number("max_batch", sv.max_batch, 1, 1 << 20);
    serving_number("kv_memory_fraction", sv.kv_memory_fraction, 0.01, 1);
    serving_number("kv_block_tokens", sv.kv_block_tokens, 1, 1 << 16);
    serving_number("cuda_graph_max_batch", sv.cuda_graph_max_batch, 0, 1 << 20);
    serving_number("iteration_overhead_us", sv.iteration_overhead_s, 0, 1e6, 1e-6);
    serving_number("host_per_sequence_us", sv.host_per_sequence_s, 0, 1e4, 1e-6);
    serving_number("eager_launch_us", sv.eager_launch_s, 0, 1e4, 1e-6);
    serving_number("graph_reserve_GB", sv.graph_reserve_bytes, 0, 1e4, 1e9);
    if (o.has("kv_memory_of")) {
        static const std::vector<std::string> of = {"total", "free", "static"};
        const std::string v = text_value(o, "kv_memory_of", b, &of);
        sv.kv_memory_of = v == "free" ? ServingPolicy::KvBudget::free
                          : v == "static" ? ServingPolicy::KvBudget::static_share : ServingPolicy::KvBudget::total;
    }
    if (o.has("kv_reservation")) {
        static const std::vector<std::string> r = {"full", "incremental"};
        sv.kv_reserve_full = text_value(o, "kv_reservation", b, &r) == "full";
    }
    if (o.has("chunked_prefill")) sv.chunked_prefill = flag_value(o, "chunked_prefill", b);
    if (o.has("mixed_batches")) sv.mixed_batches = flag_value(o, "mixed_batches", b);
    if (o.has("limits_by_memory")) {
        JsonObject p = o.object("limits_by_memory");
        const auto& v = p.raw("value");
        if (!v.is_array() || v.empty()) p.fail("value", "must list [min_GiB, max_num_tokens, max_batch] rows, got " + v.dump());
        sv.limits_by_memory.clear();
        double last = -1;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const auto& row = v[i];
            const std::string at = "value[" + std::to_string(i) + "]";
            if (!row.is_array() || row.size() != 3 || !row[0].is_number() || !row[1].is_number() || !row[2].is_number())
                p.fail(at, "must be [min_GiB, max_num_tokens, max_batch], got " + row.dump());
            const std::array<double, 3> x{row[0].get<double>(), row[1].get<double>(), row[2].get<double>()};
            if (!(x[0] >= 0) || !(x[0] > last) || !(x[1] >= 1) || !(x[2] >= 1) || x[1] > (1 << 24) || x[2] > (1 << 20))
                p.fail(at, "must have min_GiB ascending from 0 and token and batch limits >= 1, got " + row.dump());
            last = x[0];
            sv.limits_by_memory.push_back(x);
        }
        b.sources["limits_by_memory"] = provenance_of(p);
        p.finish();
    }
    if (o.has("max_batch_tuning")) {
        static const std::vector<std::string> t = {"fixed", "trtllm-bench"};
        sv.bench_tuning = text_value(o, "max_batch_tuning", b, &t) == "trtllm-bench";
    }
    if (o.has("kv_dtype_by_weights")) {
        JsonObject p = o.object("kv_dtype_by_weights");
        const auto& v = p.raw("value");
        if (!v.is_object()) p.fail("value", "must map weight formats to KV formats, got " + v.dump());
        sv.kv_dtype_by_weights.clear();
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!it->is_string()) p.fail("value." + it.key(), "must name a KV format, got " + it->dump());
            try {
                parse_format(it.key());
                parse_kv_format(it->get<std::string>());
            } catch (const Error& e) {
                p.fail("value." + it.key(), e.what());
            }
            sv.kv_dtype_by_weights[to_lower(it.key())] = it->get<std::string>();
        }
        b.sources["kv_dtype_by_weights"] = provenance_of(p);
        p.finish();
    }
    if (o.has("prediction_interval")) {
        JsonObject p = o.object("prediction_interval");
        const auto& raw_value = p.raw("value");
        if (!raw_value.is_object()) p.fail("value", "must be an object {coverage, decode, prefill, device_families, weight_formats, widen}");
        JsonObject v(raw_value, p.field("value"), p.origin());
        PredictionInterval x;
        auto strings = [&](const char* key) {
            std::vector<std::string> out;
            for (const auto& s : v.array(key, true)) {
                if (!s.is_string() || s.get<std::string>().empty()) v.fail(key, "must list non-empty names, got " + s.dump());
                out.push_back(s.get<std::string>());
            }
            return out;
        };
        x.coverage = v.number("coverage", 0.01, 0.999);
        auto pair = [&](const char* phase, double& lo, double& hi) {
            const auto& a = v.raw(phase);
            if (!a.is_array() || a.size() != 2 || !a[0].is_number() || !a[1].is_number())
                v.fail(phase, "must be [lo, hi], the ratios measured / predicted, got " + a.dump());
            lo = a[0].get<double>();
            hi = a[1].get<double>();
            if (!(lo > 0) || !(lo <= 1) || !(hi >= 1) || !std::isfinite(hi))
                v.fail(phase, "must be [lo, hi] with 0 < lo <= 1 <= hi, got " + a.dump());
        };
        pair("decode", x.decode_lo, x.decode_hi);
        pair("prefill", x.prefill_lo, x.prefill_hi);
        x.device_families = strings("device_families");
        x.weight_formats = strings("weight_formats");
        x.widen = v.number("widen", 1, 10);
        if (const auto m = v.opt_integer("max_devices", 0, 1024)) x.max_devices = static_cast<double>(*m);
        v.finish();
        b.interval = x;
        b.sources["prediction_interval"] = provenance_of(p);
        p.finish();
    }
    o.finish();
}

}  // namespace

Engine parse_engine(std::string_view json_text, std::string_view origin, const std::vector<Engine>* bases) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    JsonObject o(j, "", std::string(origin));
    Engine e;
    e.origin = std::string(origin);
    o.opt_string("$schema");
    if (o.integer("schema_version", 1, 1) != 1) o.fail("schema_version", "must be 1");
    e.id = o.nonempty_string("id");
    if (e.id != to_lower(e.id) || e.id.find_first_of(" \t/\\") != std::string::npos)
        o.fail("id", "must be lower case without spaces or slashes, got '" + e.id + "'");
    e.name = o.nonempty_string("name");
    e.summary = o.nonempty_string("summary");
    for (const auto& a : o.array("aliases", false)) {
        if (!a.is_string() || a.get<std::string>().empty()) o.fail("aliases", "must hold non-empty strings, got " + a.dump());
        e.aliases.push_back(a.get<std::string>());
    }
    const Engine* base = nullptr;
    e.based_on = o.opt_string("based_on");
    if (!e.based_on.empty()) {
        if (bases)
            for (const auto& b : *bases)
                if (b.id == e.based_on) base = &b;
        if (!base) o.fail("based_on", "names '" + e.based_on + "', which is not an engine read before this one");
        e.native_backend = base->native_backend;
        e.native_backend_provenance = base->native_backend_provenance;
    }
    if (auto nb = o.opt_object("native_backend")) {
        const auto& v = nb->raw("value");
        if (!v.is_object() || v.empty()) nb->fail("value", "must map device vendors to backends, got " + v.dump());
        e.native_backend.clear();
        for (auto it = v.begin(); it != v.end(); ++it) {
            const std::string be = it->is_string() ? it->get<std::string>() : "";
            if (std::find(backend_names().begin() + 1, backend_names().end(), be) == backend_names().end())
                nb->fail("value." + it.key(), "must be one of cuda, rocm, metal, vulkan, cpu, got " + it->dump());
            e.native_backend[it.key()] = be;
        }
        e.native_backend_provenance = provenance_of(*nb);
        nb->finish();
    }
    if (base) {
        e.weight_formats = base->weight_formats;
        e.weight_formats_provenance = base->weight_formats_provenance;
    }
    if (auto wf = o.opt_object("weight_formats")) {
        e.weight_formats.clear();
        for (const auto& s : wf->array("value", true)) {
            if (!s.is_string() || s.get<std::string>().empty())
                wf->fail("value", "must list weight formats ('ggml', 'float', 'quantized' or format names), got " + s.dump());
            e.weight_formats.push_back(to_lower(s.get<std::string>()));
        }
        if (e.weight_formats.empty()) wf->fail("value", "must list at least one weight format");
        e.weight_formats_provenance = provenance_of(*wf);
        wf->finish();
    }
    JsonObject backends = o.object("backends");
    std::vector<std::string> described;
    for (const auto& name : backend_names())
        if (backends.has(name) || (base && std::any_of(base->backends.begin(), base->backends.end(),
                                                       [&](const EngineBackend& b) { return b.backend == name; })))
            described.push_back(name);
    if (described.empty() || described.front() != "any") backends.fail("any", "is required: the properties of every backend");
    for (const auto& name : backend_names())
        if (backends.has(name)) backends.raw(name);
    backends.finish();
    const nlohmann::json& jb = j.at("backends");
    for (const auto& name : described) {
        EngineBackend b = base ? base->backend(name) : EngineBackend{};
        b.backend = name;
        if (jb.contains("any")) apply_backend(b, JsonObject(jb.at("any"), "backends.any", e.origin), jb.at("any"));
        if (name != "any" && jb.contains(name))
            apply_backend(b, JsonObject(jb.at(name), "backends." + name, e.origin), jb.at(name));
        if (b.linear_kernels.empty()) backends.fail(name, "needs linear_kernels (here or in 'any')");
        for (const auto& key : backend_keys())  // every property has a value and its source, here or in a base
            if (key != "linear_kernels" && !b.sources.count(key) && !(is_serving_key(key) && !b.serving.defined))
                backends.fail(name + "." + key, "is required: every property needs a value and its source (in 'any', "
                                                "in this backend or in the engine it is based_on)");
        if (b.linear_kernels.back().max_rows < std::numeric_limits<double>::infinity())
            backends.fail(name + ".linear_kernels", "must end with a kernel without max_rows (one for any number of rows)");
        if (!b.linear_kernels.back().unconditional())
            backends.fail(name + ".linear_kernels",
                          "must end with a kernel without families or max_experts (one for every device and layer)");
        e.backends.push_back(std::move(b));
    }
    o.finish();
    return e;
}

const EngineBackend& Engine::backend(std::string_view backend_name) const {
    const std::string n = to_lower(backend_name);
    if (std::find(backend_names().begin(), backend_names().end(), n) == backend_names().end())
        throw NotFound(unknown_name_message("backend", backend_name, backend_names()));
    for (const auto& b : backends)
        if (b.backend == n) return b;
    return backends.front();
}

const EngineBackend& Engine::on(const Device& device) const {
    if (native_backend.empty()) return backends.front();
    // a CPU runs the engine's CPU build whoever made it (the "cpu" entry; a measured host also its "host" one), never
    // the GPU backend of its vendor; any other device the backend of its vendor
    const bool cpu = device.kind == "cpu";
    auto it = native_backend.find(cpu ? "cpu" : device.vendor);
    if (cpu && it == native_backend.end() && device.vendor == "host") it = native_backend.find("host");
    if (it == native_backend.end()) {
        std::vector<std::string> runs_on;
        for (const auto& [v, b] : native_backend) runs_on.push_back(v == "cpu" ? "cpu (CPUs of any vendor)" : v);
        throw InvalidArgument("engine '" + id + "' does not run on " + (cpu ? std::string("cpu") : device.vendor) +
                              " devices ('" + device.id + "'); it runs on: " + join(runs_on));
    }
    return backend(it->second);
}

std::string Engine::to_json(int indent) const {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["id"] = id;
    j["name"] = name;
    if (!aliases.empty()) j["aliases"] = aliases;
    j["summary"] = summary;
    auto prop = [](const EngineBackend& b, const std::string& key, nlohmann::ordered_json value) {
        nlohmann::ordered_json p{{"value", std::move(value)}};
        if (auto it = b.sources.find(key); it != b.sources.end()) {
            p["source"] = it->second.source;
            if (!it->second.uncertain.empty()) p["uncertain"] = it->second.uncertain;
        }
        return p;
    };
    nlohmann::ordered_json bs = nlohmann::ordered_json::object();
    for (const auto& b : backends) {
        nlohmann::ordered_json x;
        x["kernel_fixed_cost_scale"] = prop(b, "kernel_fixed_cost_scale", b.kernel_fixed_cost_scale);
        x["activation_format"] = prop(b, "activation_format", b.activation_format);
        x["attention_format"] =
            b.attention_format == b.attention_pv_format
                ? prop(b, "attention_format", b.attention_format)
                : prop(b, "attention_format", nlohmann::ordered_json{{"qk", b.attention_format}, {"pv", b.attention_pv_format}});
        nlohmann::ordered_json ks = nlohmann::ordered_json::array();
        for (const auto& k : b.linear_kernels) {
            nlohmann::ordered_json kj{{"name", k.name}, {"weights", k.weights}};
            if (k.max_rows < std::numeric_limits<double>::infinity()) kj["max_rows"] = k.max_rows;
            if (!k.families.empty()) kj["families"] = k.families;
            if (k.max_experts < std::numeric_limits<double>::infinity()) kj["max_experts"] = k.max_experts;
            kj["unit"] = std::string(unit_name(k.unit));
            kj["compute"] = k.compute;
            if (k.unit == Unit::matrix) {
                kj["tile_m"] = k.tile_m;
                kj["tile_n"] = k.tile_n;
                if (k.stream_k) kj["stream_k"] = true;
                if (k.moe_tile_from_batch) kj["moe_row_tile"] = k.moe_row_tile_name();
                if (k.row_tile_step > 0) kj["row_tile_step"] = k.row_tile_step;
            }
            if (k.dequant_every_rows > 0) kj["dequant_every_rows"] = k.dequant_every_rows;
            kj["dequant_overlapped"] = k.dequant_overlapped;
            if (k.efficiency != 1) kj["efficiency"] = k.efficiency;
            if (k.tiles_per_unit != 1) kj["tiles_per_unit"] = k.tiles_per_unit;
            if (!k.split_k) kj["split_k"] = false;
            if (!k.by_family.empty()) {
                nlohmann::ordered_json fj = nlohmann::ordered_json::object();
                for (const auto& [family, f] : k.by_family) {
                    nlohmann::ordered_json o = nlohmann::ordered_json::object();
                    if (f.efficiency) o["efficiency"] = *f.efficiency;
                    if (f.tiles_per_unit) o["tiles_per_unit"] = *f.tiles_per_unit;
                    if (f.split_k) o["split_k"] = *f.split_k;
                    if (f.stream_k) o["stream_k"] = *f.stream_k;
                    if (f.alu_ops_scale) o["alu_ops_scale"] = *f.alu_ops_scale;
                    o["source"] = f.provenance.source;
                    if (!f.provenance.uncertain.empty()) o["uncertain"] = f.provenance.uncertain;
                    fj[family] = o;
                }
                kj["by_family"] = fj;
            }
            if (k.alu_ops_per_mac > 0) {
                kj["alu_ops_per_mac"] = k.alu_ops_per_mac;
                kj["alu_format"] = k.alu_format_name();
                if (k.alu_weight_share > 0) kj["alu_weight_share"] = k.alu_weight_share;
                if (!k.alu_ops_scale.empty()) kj["alu_ops_scale"] = k.alu_ops_scale;
            }
            if (k.launches != 1) kj["launches"] = k.launches;
            if (k.moe_launches > 0) kj["moe_launches"] = k.moe_launches;
            if (!k.fallback_compute.empty()) kj["fallback_compute"] = k.fallback_compute;
            kj["source"] = k.provenance.source;
            if (!k.provenance.uncertain.empty()) kj["uncertain"] = k.provenance.uncertain;
            ks.push_back(kj);
        }
        x["linear_kernels"] = {{"value", ks}};
        x["fused_qkv"] = prop(b, "fused_qkv", b.fused_qkv);
        x["matvec_fused_bias"] = prop(b, "matvec_fused_bias", b.matvec_fused_bias);
        x["matvec_fused_glu"] = prop(b, "matvec_fused_glu", b.matvec_fused_glu);
        x["logits_last_token_only"] = prop(b, "logits_last_token_only", b.logits_last_token_only);
        x["runtime_overhead_GB"] = prop(b, "runtime_overhead_GB", b.runtime_overhead_bytes / 1e9);
        x["all_reduce"] = prop(b, "all_reduce", std::string(all_reduce_name(b.all_reduce)));
        x["collective_step_latency_us"] = prop(b, "collective_step_latency_us", b.collective_step_latency_s * 1e6);
        {
            nlohmann::ordered_json ps = nlohmann::ordered_json::array();
            for (const CollectiveProtocol& cp : b.collective_protocols)
                ps.push_back({{"name", cp.name},
                              {"base_latency_us", cp.base_latency_s * 1e6},
                              {"step_latency_us", {{"nvlink", cp.step_latency_s[0] * 1e6}, {"pcie", cp.step_latency_s[1] * 1e6},
                                                   {"network", cp.step_latency_s[2] * 1e6}}},
                              {"bandwidth_share", cp.bandwidth_share}});
            x["collective_protocols"] = prop(b, "collective_protocols", ps);
        }
        {
            nlohmann::ordered_json rows = nlohmann::ordered_json::array();
            for (const auto& r : b.custom_all_reduce_max_bytes) rows.push_back({r[0], r[1]});
            x["custom_all_reduce_max_bytes"] = prop(b, "custom_all_reduce_max_bytes", rows);
        }
        x["custom_all_reduce_max_hidden"] = prop(b, "custom_all_reduce_max_hidden", b.custom_all_reduce_max_hidden);
        x["vocab_parallel"] = prop(b, "vocab_parallel", b.vocab_parallel);
        x["bandwidth_fraction"] = prop(b, "bandwidth_fraction", b.bandwidth_fraction);
        x["op_kernels"] = prop(b, "op_kernels", b.op_kernels);
        x["prefill_ubatch_tokens"] = prop(b, "prefill_ubatch_tokens", b.prefill_ubatch_tokens);
        x["split_modes"] = prop(b, "split_modes", b.split_modes);
        x["prefill_batch_tokens"] = prop(b, "prefill_batch_tokens", b.prefill_batch_tokens);
        x["layer_handoff_latency_us"] = prop(b, "layer_handoff_latency_us", b.layer_handoff_latency_s * 1e6);
        x["layer_split_kernel_fixed_cost_add"] = prop(b, "layer_split_kernel_fixed_cost_add", b.layer_split_kernel_fixed_cost_add);
        x["flash_attention_version"] = prop(b, "flash_attention_version", b.flash_attention_version);
        x["flash_attention_default"] = prop(b, "flash_attention_default", b.flash_attention_default);
        x["decode_attention_per_query_head"] = prop(b, "decode_attention_per_query_head", b.decode_attention_per_query_head);
        x["decode_attention_alu_ops_per_mac"] = prop(b, "decode_attention_alu_ops_per_mac", b.decode_attention_alu_ops_per_mac);
        x["attention_score_bytes"] = prop(b, "attention_score_bytes", b.attention_score_bytes);
        x["unfused_attention_bytes"] = prop(b, "unfused_attention_bytes",
                                            nlohmann::ordered_json{{"per_cached_k", b.unfused_attention_bytes.per_cached_k},
                                                                   {"per_output", b.unfused_attention_bytes.per_output}});
        x["flash_attention_formats"] = prop(b, "flash_attention_formats",
                                            nlohmann::ordered_json{{"qk", b.flash_qk_format}, {"pv", b.flash_pv_format}});
        {
            nlohmann::ordered_json by = nlohmann::ordered_json::object();
            for (const auto& [family, rows] : b.flash_issue_per_score) {
                by[family] = nlohmann::ordered_json::array();
                for (const auto& r : rows) by[family].push_back({r[0], r[1], r[2]});
            }
            x["flash_attention_issue"] = prop(b, "flash_attention_issue", by);
        }
        x["flash_attention_head_dims"] = prop(b, "flash_attention_head_dims", b.flash_attention_head_dims);
        x["flash_attention_kv_to_f16"] =
            prop(b, "flash_attention_kv_to_f16",
                 nlohmann::ordered_json{{"formats", b.flash_attention_kv_to_f16.formats},
                                        {"min_queries", static_cast<long long>(b.flash_attention_kv_to_f16.min_queries)},
                                        {"except_families", b.flash_attention_kv_to_f16.except_families}});
        const PredictionInterval& pi = b.interval;
        x["prediction_interval"] = prop(b, "prediction_interval",
                                        nlohmann::ordered_json{{"coverage", pi.coverage},
                                                               {"decode", {pi.decode_lo, pi.decode_hi}},
                                                               {"prefill", {pi.prefill_lo, pi.prefill_hi}},
                                                               {"device_families", pi.device_families},
                                                               {"weight_formats", pi.weight_formats},
                                                               {"widen", pi.widen}});
        if (pi.max_devices > 0) x["prediction_interval"]["value"]["max_devices"] = static_cast<long long>(pi.max_devices);
        if (b.serving.defined) {
            const ServingPolicy& sv = b.serving;
            x["max_num_tokens"] = prop(b, "max_num_tokens", sv.max_num_tokens);
            x["max_batch"] = prop(b, "max_batch", sv.max_batch);
            x["kv_memory_fraction"] = prop(b, "kv_memory_fraction", sv.kv_memory_fraction);
            x["kv_memory_of"] = prop(b, "kv_memory_of", std::string(sv.kv_memory_of == ServingPolicy::KvBudget::free ? "free"
                                                                  : sv.kv_memory_of == ServingPolicy::KvBudget::static_share ? "static"
                                                                                                                             : "total"));
            x["kv_block_tokens"] = prop(b, "kv_block_tokens", sv.kv_block_tokens);
            x["kv_reservation"] = prop(b, "kv_reservation", std::string(sv.kv_reserve_full ? "full" : "incremental"));
            x["chunked_prefill"] = prop(b, "chunked_prefill", sv.chunked_prefill);
            x["cuda_graph_max_batch"] = prop(b, "cuda_graph_max_batch", sv.cuda_graph_max_batch);
            x["iteration_overhead_us"] = prop(b, "iteration_overhead_us", sv.iteration_overhead_s * 1e6);
            x["host_per_sequence_us"] = prop(b, "host_per_sequence_us", sv.host_per_sequence_s * 1e6);
            x["eager_launch_us"] = prop(b, "eager_launch_us", sv.eager_launch_s * 1e6);
            x["graph_reserve_GB"] = prop(b, "graph_reserve_GB", sv.graph_reserve_bytes / 1e9);
            x["kv_dtype_by_weights"] = prop(b, "kv_dtype_by_weights", sv.kv_dtype_by_weights);
            x["max_batch_tuning"] = prop(b, "max_batch_tuning", std::string(sv.bench_tuning ? "trtllm-bench" : "fixed"));
            x["mixed_batches"] = prop(b, "mixed_batches", sv.mixed_batches);
            nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
            for (const auto& t : sv.limits_by_memory) tiers.push_back({t[0], t[1], t[2]});
            x["limits_by_memory"] = prop(b, "limits_by_memory", tiers);
        }
        bs[b.backend] = x;
    }
    j["backends"] = bs;
    if (!native_backend.empty())
        j["native_backend"] = {{"value", native_backend}, {"source", native_backend_provenance.source}};
    if (!weight_formats.empty())
        j["weight_formats"] = {{"value", weight_formats}, {"source", weight_formats_provenance.source}};
    return j.dump(indent);
}

// -------------------------------------------------------------------------------------------------------------

void EngineDB::add(Engine e) {
    std::vector<std::string> keys{to_lower(e.id)};
    for (const auto& a : e.aliases) keys.push_back(to_lower(a));
    for (const auto& k : keys)
        if (auto it = index_.find(k); it != index_.end())
            throw InvalidArgument(e.origin + ": id or alias '" + k + "' is already used by engine '" +
                                  engines_[it->second].id + "' (" + engines_[it->second].origin + ")");
    for (const auto& k : keys) index_.emplace(k, engines_.size());
    engines_.push_back(std::move(e));
}

EngineDB EngineDB::load_directory(const std::string& directory) {
    namespace fs = std::filesystem;
    std::vector<std::string> files = detail::database_files(directory, "engine database");
    // llama.cpp first (the default engine), then in name order; an engine based on another after it
    std::stable_partition(files.begin(), files.end(),
                          [](const std::string& f) { return fs::path(f).filename() == "llama.cpp.json"; });
    std::vector<std::pair<std::string, std::string>> pending;  // path, text
    for (const auto& f : files) pending.emplace_back(f, detail::read_text_file(f, std::size_t(1) << 20));
    EngineDB db;
    while (!pending.empty()) {
        const std::size_t before = pending.size();
        for (auto it = pending.begin(); it != pending.end();) {
            const nlohmann::json j = detail::parse_json_text(it->second, it->first);
            const std::string base = j.is_object() && j.contains("based_on") && j["based_on"].is_string()
                                         ? j["based_on"].get<std::string>() : "";
            const bool ready = base.empty() || std::any_of(db.engines_.begin(), db.engines_.end(),
                                                           [&](const Engine& e) { return e.id == base; });
            if (!ready) {
                ++it;
                continue;
            }
            db.add(parse_engine(it->second, it->first, &db.engines_));
            it = pending.erase(it);
        }
        if (pending.size() == before)  // what is left names a base that is not in the folder (or a cycle)
            db.add(parse_engine(pending.front().second, pending.front().first, &db.engines_));
    }
    return db;
}

std::string EngineDB::default_directory() { return data_path("engine_db"); }

bool EngineDB::contains(std::string_view id_or_alias) const { return index_.count(to_lower(id_or_alias)) > 0; }

const Engine& EngineDB::get(std::string_view id_or_alias) const {
    auto it = index_.find(to_lower(id_or_alias));
    if (it != index_.end()) return engines_[it->second];
    throw NotFound(unknown_name_message("engine", id_or_alias, ids()));
}

std::vector<std::string> EngineDB::ids() const {
    std::vector<std::string> out;
    for (const auto& e : engines_) out.push_back(e.id);
    // llama.cpp first (the default engine), the others by id
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
        return (a == "llama.cpp") != (b == "llama.cpp") ? a == "llama.cpp" : a < b;
    });
    return out;
}

std::shared_ptr<const EngineDB> default_engines() {
    static std::mutex mutex;
    static std::shared_ptr<const EngineDB> db;
    static std::string loaded_from;
    const std::string dir = EngineDB::default_directory();
    const std::lock_guard<std::mutex> lock(mutex);
    if (!db || loaded_from != dir) {
        db = std::make_shared<const EngineDB>(EngineDB::load_directory(dir));
        loaded_from = dir;
    }
    return db;
}

std::shared_ptr<const Engine> engine(std::string_view name) {
    std::shared_ptr<const EngineDB> db = default_engines();
    const Engine& e = db->get(name);
    return std::shared_ptr<const Engine>(db, &e);
}

std::vector<std::string> engine_names() { return default_engines()->ids(); }

}  // namespace roofline
