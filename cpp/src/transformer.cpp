#include "roofline/transformer.hpp"

#include "json_reader.hpp"
#include "roofline/errors.hpp"
#include "roofline/gguf.hpp"
#include "roofline/llama_quant.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "roofline/quant.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace roofline {

namespace {

const std::vector<std::string> kModelTypes = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe",
                                              "gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "gpt2"};

// GPU weight schemes accepted by tensor_formats besides llama.cpp's mixes.
const std::vector<std::string> kGpuSchemes = {"fp16", "bf16", "fp32", "fp8", "int8", "int8-wo", "int4-g32",
                                              "int4-g64", "int4-g128", "nvfp4", "mxfp4"};

double num(const nlohmann::json& j, const std::string& key, const std::string& origin, double fallback = -1) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (fallback >= 0) return fallback;
        throw InvalidArgument(origin + ": field '" + key + "' is required but missing");
    }
    if (!it->is_number()) throw InvalidArgument(origin + ": field '" + key + "' must be a number, got " + it->dump());
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0 || v > 1e12)
        throw InvalidArgument(origin + ": field '" + key + "' must be a finite number in [0, 1e12], got " + it->dump());
    return v;
}

int count_field(const nlohmann::json& j, const std::string& key, const std::string& origin, double fallback = -1) {
    const double v = num(j, key, origin, fallback);
    if (std::floor(v) != v || v > 1e7)
        throw InvalidArgument(origin + ": field '" + key + "' must be a whole number up to 1e7, got " + std::to_string(v));
    return static_cast<int>(v);
}

bool flag(const nlohmann::json& j, const std::string& key, bool fallback) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InvalidArgument("field '" + key + "' must be true or false, got " + it->dump());
    return it->get<bool>();
}

void check_architecture(Architecture& a, const std::string& origin) {
    auto bad = [&](const std::string& what) { throw InvalidArgument(origin + ": " + what); };
    if (a.n_layer < 1) bad("num_hidden_layers must be >= 1, got " + std::to_string(a.n_layer));
    if (a.n_head < 1) bad("num_attention_heads must be >= 1, got " + std::to_string(a.n_head));
    if (a.n_kv_head < 1 || a.n_kv_head > a.n_head || a.n_head % a.n_kv_head != 0)
        bad("num_key_value_heads (" + std::to_string(a.n_kv_head) + ") must divide num_attention_heads (" +
            std::to_string(a.n_head) + ")");
    if (a.hidden < 1) bad("hidden_size must be >= 1");
    if (a.head_dim < 1 || std::floor(a.head_dim) != a.head_dim)
        bad("head_dim must be a whole number >= 1 (hidden_size " + std::to_string(a.hidden) +
            " / num_attention_heads " + std::to_string(a.n_head) + " when the config has no head_dim)");
    if (a.vocab < 1) bad("vocab_size must be >= 1");
    if (a.ffn < 1 && a.n_expert == 0) bad("intermediate_size must be >= 1");
    if (a.n_expert > 0 && (a.n_expert_used < 1 || a.n_expert_used > a.n_expert))
        bad("num_experts_per_tok must be within [1, " + std::to_string(a.n_expert) + "], got " +
            std::to_string(a.n_expert_used));
    if (a.window.empty()) a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    if (a.moe_layer.empty()) a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), a.n_expert > 0);
}

// Sliding windows from the config: "layer_types" when present, else the model family's pattern.
void read_windows(Architecture& a, const nlohmann::json& c) {
    a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    double w = 0;
    if (auto it = c.find("sliding_window"); it != c.end() && it->is_number()) w = it->get<double>();
    if (w <= 0) return;
    if (auto it = c.find("layer_types"); it != c.end() && it->is_array()) {
        for (std::size_t i = 0; i < it->size() && i < a.window.size(); ++i)
            if ((*it)[i].is_string() && (*it)[i].get<std::string>() == "sliding_attention") a.window[i] = w;
        return;
    }
    const std::string& t = a.model_type;
    if (t == "qwen2" || t == "qwen3" || t == "qwen3_moe") {
        if (!flag(c, "use_sliding_window", false)) return;
        const int max_window_layers = static_cast<int>(num(c, "max_window_layers", "config", a.n_layer));
        for (int i = max_window_layers; i < a.n_layer; ++i) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    if (t == "gemma2") {  // even layers slide
        for (int i = 0; i < a.n_layer; i += 2) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    if (t == "gemma3" || t == "gemma3_text") {  // every pattern-th layer is global
        const int pattern = static_cast<int>(num(c, "sliding_window_pattern", "config", 6));
        for (int i = 0; i < a.n_layer; ++i)
            if (pattern <= 0 || (i + 1) % pattern != 0) a.window[static_cast<std::size_t>(i)] = w;
        return;
    }
    std::fill(a.window.begin(), a.window.end(), w);  // mistral, mixtral, phi3: every layer
}

Architecture architecture_from_config(const nlohmann::json& c, const std::string& origin) {
    if (!c.is_object()) throw InvalidArgument(origin + ": the config must be a JSON object");
    auto mt = c.find("model_type");
    if (mt == c.end() || !mt->is_string()) throw InvalidArgument(origin + ": field 'model_type' is required (a string)");
    Architecture a;
    a.model_type = mt->get<std::string>();
    if (std::find(kModelTypes.begin(), kModelTypes.end(), a.model_type) == kModelTypes.end())
        throw InvalidArgument(origin + ": model_type '" + a.model_type + "' is not supported; supported: " + join(kModelTypes));
    const std::string& t = a.model_type;
    if (t == "gpt2") {
        a.gguf_arch = "gpt2";
        a.hidden = num(c, "n_embd", origin);
        a.n_layer = count_field(c, "n_layer", origin);
        a.n_head = count_field(c, "n_head", origin);
        a.n_kv_head = a.n_head;
        a.ffn = num(c, "n_inner", origin, 4 * a.hidden);
        a.vocab = num(c, "vocab_size", origin);
        a.max_context = num(c, "n_positions", origin, 1024);
        a.norm = NormKind::layernorm;
        a.mlp = MlpKind::plain;
        a.position = PositionKind::learned;
        a.activation = c.value("activation_function", std::string("gelu_new"));
        a.tied_embeddings = true;
        a.qkv_bias = a.linear_bias = true;
        a.fused_qkv = true;
    } else {
        a.hidden = num(c, "hidden_size", origin);
        a.n_layer = count_field(c, "num_hidden_layers", origin);
        a.n_head = count_field(c, "num_attention_heads", origin);
        a.n_kv_head = count_field(c, "num_key_value_heads", origin, a.n_head);
        a.vocab = num(c, "vocab_size", origin);
        a.max_context = num(c, "max_position_embeddings", origin, 0);
        a.ffn = num(c, "intermediate_size", origin, 0);
        a.activation = c.value("hidden_act", c.value("hidden_activation", std::string("silu")));
        const bool gemma = t.rfind("gemma", 0) == 0;
        a.tied_embeddings = flag(c, "tie_word_embeddings", gemma);
        a.qkv_bias = flag(c, "attention_bias", t == "qwen2");
        a.qk_norm = (t == "qwen3" || t == "qwen3_moe" || t == "gemma3" || t == "gemma3_text");
        a.post_norms = (t == "gemma2" || t == "gemma3" || t == "gemma3_text");
        if (t == "phi3") a.fused_qkv = a.fused_gate_up = true;
        static const std::map<std::string, std::string> gguf = {
            {"llama", "llama"}, {"mistral", "llama"}, {"mixtral", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"},
            {"qwen3_moe", "qwen3moe"}, {"gemma", "gemma"}, {"gemma2", "gemma2"}, {"gemma3", "gemma3"},
            {"gemma3_text", "gemma3"}, {"phi3", "phi3"}};
        a.gguf_arch = gguf.at(t);
        if (t == "mixtral") {
            a.n_expert = count_field(c, "num_local_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = a.ffn;
        } else if (t == "qwen3_moe") {
            a.n_expert = count_field(c, "num_experts", origin);
            a.n_expert_used = count_field(c, "num_experts_per_tok", origin);
            a.expert_ffn = num(c, "moe_intermediate_size", origin);
            a.shared_ffn = num(c, "shared_expert_intermediate_size", origin, 0);
            a.n_shared_expert = a.shared_ffn > 0 ? 1 : 0;
        }
    }
    auto hd = c.find("head_dim");
    a.head_dim = (hd != c.end() && hd->is_number()) ? hd->get<double>() : a.hidden / a.n_head;
    if (a.n_layer > 0) read_windows(a, c);
    if (a.n_expert > 0) {
        a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), true);
        const int step = count_field(c, "decoder_sparse_step", origin, 1);
        std::set<int> dense;
        if (auto it = c.find("mlp_only_layers"); it != c.end() && it->is_array())
            for (const auto& v : *it)
                if (v.is_number_integer()) dense.insert(v.get<int>());
        for (int i = 0; i < a.n_layer; ++i)
            if (dense.count(i) || step < 1 || (i + 1) % step != 0) a.moe_layer[static_cast<std::size_t>(i)] = false;
    }
    check_architecture(a, origin);
    return a;
}

// The weight tensors of an architecture, named and shaped as llama.cpp's converter writes them.
std::vector<WeightTensor> tensors_of(const Architecture& a) {
    std::vector<WeightTensor> out;
    auto add = [&](std::string role, int layer, std::vector<double> shape, const char* suffix = "weight") {
        std::string name = layer < 0 ? role : "blk." + std::to_string(layer) + "." + role;
        out.push_back({name + "." + suffix, role, layer, std::move(shape)});
    };
    const double H = a.hidden;
    add("token_embd", -1, {H, a.vocab});
    if (a.position == PositionKind::learned) add("position_embd", -1, {H, a.max_context});
    for (int l = 0; l < a.n_layer; ++l) {
        const auto li = static_cast<std::size_t>(l);
        add("attn_norm", l, {H});
        if (a.norm == NormKind::layernorm) add("attn_norm", l, {H}, "bias");
        if (a.fused_qkv) {
            add("attn_qkv", l, {H, a.q_dim() + 2 * a.kv_dim()});
            if (a.qkv_bias) add("attn_qkv", l, {a.q_dim() + 2 * a.kv_dim()}, "bias");
        } else {
            add("attn_q", l, {H, a.q_dim()});
            add("attn_k", l, {H, a.kv_dim()});
            add("attn_v", l, {H, a.kv_dim()});
            if (a.qkv_bias) {
                add("attn_q", l, {a.q_dim()}, "bias");
                add("attn_k", l, {a.kv_dim()}, "bias");
                add("attn_v", l, {a.kv_dim()}, "bias");
            }
        }
        if (a.qk_norm) {
            add("attn_q_norm", l, {a.head_dim});
            add("attn_k_norm", l, {a.head_dim});
        }
        add("attn_output", l, {a.q_dim(), H});
        if (a.linear_bias) add("attn_output", l, {H}, "bias");
        if (a.post_norms) add("post_attention_norm", l, {H});
        add("ffn_norm", l, {H});
        if (a.norm == NormKind::layernorm) add("ffn_norm", l, {H}, "bias");
        if (a.n_expert > 0 && a.moe_layer[li]) {
            const double E = a.n_expert, F = a.expert_ffn;
            add("ffn_gate_inp", l, {H, E});
            add("ffn_gate_exps", l, {H, F, E});
            add("ffn_up_exps", l, {H, F, E});
            add("ffn_down_exps", l, {F, H, E});
            if (a.n_shared_expert > 0) {
                add("ffn_gate_shexp", l, {H, a.shared_ffn});
                add("ffn_up_shexp", l, {H, a.shared_ffn});
                add("ffn_down_shexp", l, {a.shared_ffn, H});
            }
        } else if (a.mlp == MlpKind::gated) {
            if (a.fused_gate_up) {
                add("ffn_up", l, {H, 2 * a.ffn});
            } else {
                add("ffn_gate", l, {H, a.ffn});
                add("ffn_up", l, {H, a.ffn});
            }
            add("ffn_down", l, {a.ffn, H});
        } else {
            add("ffn_up", l, {H, a.ffn});
            if (a.linear_bias) add("ffn_up", l, {a.ffn}, "bias");
            add("ffn_down", l, {a.ffn, H});
            if (a.linear_bias) add("ffn_down", l, {H}, "bias");
        }
        if (a.post_norms) add("post_ffw_norm", l, {H});
    }
    add("output_norm", -1, {H});
    if (a.norm == NormKind::layernorm) add("output_norm", -1, {H}, "bias");
    if (!a.tied_embeddings) add("output", -1, {H, a.vocab});
    return out;
}

bool is_linear_role(const std::string& role) {
    static const std::set<std::string> linear = {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate",
                                                 "ffn_up", "ffn_down", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps",
                                                 "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "output"};
    return linear.count(role) > 0;
}

std::string lower(std::string_view s) { return to_lower(s); }

}  // namespace

std::vector<std::string> supported_model_types() { return kModelTypes; }

double WeightTensor::elements() const {
    double n = 1;
    for (double d : shape) n *= d;
    return n;
}

Model Model::from_hf_config(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    Model m;
    // A multimodal config (gemma3) keeps the language model in text_config.
    const nlohmann::json* c = &j;
    if (j.is_object() && j.contains("text_config") && j["text_config"].is_object() && !j.contains("num_hidden_layers")) {
        c = &j["text_config"];
    }
    m.arch = architecture_from_config(*c, std::string(origin));
    m.tensors = tensors_of(m.arch);
    return m;
}

Model Model::from_catalog_entry(std::string_view json_text, std::string_view origin) {
    const nlohmann::json j = detail::parse_json_text(json_text, origin);
    detail::JsonObject o(j, "", std::string(origin));
    const std::string id = o.string("id");
    const std::string name = o.string("name");
    const std::string source = o.string("source");
    o.array("aliases", false);
    o.opt_string("hf_repo");
    o.raw("uncertain");
    double reported = 0;
    if (auto p = o.opt_object("parameters_reported")) {
        reported = p->number("value", 0, 1e15, true);
        p->string("source");
        p->finish();
    }
    const auto& config = o.raw("config");
    if (config.is_null()) o.fail("config", "is required but missing");
    o.finish();
    Model m;
    m.arch = architecture_from_config(config, std::string(origin) + " (config)");
    m.arch.id = id;
    m.arch.name = name;
    m.arch.source = source;
    m.arch.parameters_reported = reported;
    m.tensors = tensors_of(m.arch);
    return m;
}

Model Model::from_gguf(const GgufFile& f) {
    const std::string arch = f.architecture();
    auto key = [&](const std::string& k) { return arch + "." + k; };
    auto integer = [&](const std::string& k, double fallback) -> double {
        const GgufValue* v = f.find(key(k));
        if (!v) {
            if (fallback >= 0) return fallback;
            throw InvalidArgument(f.origin + ": metadata key '" + key(k) + "' is required for architecture '" + arch + "'");
        }
        if (v->is_array()) return static_cast<double>(v->as_int_array().empty() ? 0 : v->as_int_array().front());
        return v->as_double();
    };
    Model m;
    Architecture& a = m.arch;
    a.gguf_arch = arch;
    static const std::map<std::string, std::string> types = {
        {"llama", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"qwen3moe", "qwen3_moe"}, {"gemma", "gemma"},
        {"gemma2", "gemma2"}, {"gemma3", "gemma3_text"}, {"phi3", "phi3"}, {"gpt2", "gpt2"}};
    auto t = types.find(arch);
    if (t == types.end()) {
        std::vector<std::string> names;
        for (const auto& [k, v] : types) names.push_back(k);
        throw InvalidArgument(f.origin + ": general.architecture '" + arch + "' is not supported; supported: " + join(names));
    }
    a.model_type = t->second;
    if (const GgufValue* v = f.find("general.name"); v && v->is_string()) a.name = v->as_string();
    a.id = a.name.empty() ? arch : a.name;
    a.source = f.origin;
    a.n_layer = static_cast<int>(integer("block_count", -1));
    a.hidden = integer("embedding_length", -1);
    a.ffn = integer("feed_forward_length", 0);
    a.n_head = static_cast<int>(integer("attention.head_count", -1));
    a.n_kv_head = static_cast<int>(integer("attention.head_count_kv", a.n_head));
    a.max_context = integer("context_length", 0);
    a.head_dim = integer("attention.key_length", a.n_head > 0 ? a.hidden / a.n_head : 0);
    a.n_expert = static_cast<int>(integer("expert_count", 0));
    a.n_expert_used = static_cast<int>(integer("expert_used_count", 0));
    a.expert_ffn = integer("expert_feed_forward_length", a.ffn);
    const double window = integer("attention.sliding_window", 0);
    if (a.model_type == "gpt2") {
        a.norm = NormKind::layernorm;
        a.mlp = MlpKind::plain;
        a.position = PositionKind::learned;
        a.activation = "gelu";
        a.linear_bias = a.qkv_bias = a.fused_qkv = true;
    }
    a.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
    a.post_norms = f.find_tensor("blk.0.post_ffw_norm.weight") != nullptr;
    a.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    a.fused_gate_up = a.model_type == "phi3";
    a.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr || f.find_tensor("blk.0.attn_qkv.bias") != nullptr;
    a.tied_embeddings = f.find_tensor("output.weight") == nullptr;
    if (const GgufTensor* emb = f.find_tensor("token_embd.weight"); emb && emb->shape.size() >= 2)
        a.vocab = static_cast<double>(emb->shape[1]);
    else
        throw InvalidArgument(f.origin + ": tensor 'token_embd.weight' (2-D) is required");
    if (a.n_layer < 1 || a.n_layer > 100000) throw InvalidArgument(f.origin + ": " + key("block_count") + " must be within [1, 100000]");
    a.window.assign(static_cast<std::size_t>(a.n_layer), 0.0);
    if (window > 0) {
        Architecture tmp = a;  // reuse the family patterns of the HF reader
        nlohmann::json c{{"sliding_window", window}, {"use_sliding_window", true}};
        read_windows(tmp, c);
        a.window = tmp.window;
    }
    a.moe_layer.assign(static_cast<std::size_t>(a.n_layer), false);
    for (const auto& tensor : f.tensors) {
        WeightTensor w;
        w.name = tensor.name;
        std::string base = tensor.name;
        for (const char* suffix : {".weight", ".bias"}) {
            const std::string s(suffix);
            if (base.size() > s.size() && base.compare(base.size() - s.size(), s.size(), s) == 0) {
                base.resize(base.size() - s.size());
                break;
            }
        }
        if (base.rfind("blk.", 0) == 0) {
            const auto dot = base.find('.', 4);
            w.layer = dot == std::string::npos ? -1 : std::atoi(base.substr(4, dot - 4).c_str());
            w.role = dot == std::string::npos ? base : base.substr(dot + 1);
            if (w.layer >= 0 && w.layer < a.n_layer && w.role == "ffn_gate_exps")
                a.moe_layer[static_cast<std::size_t>(w.layer)] = true;
        } else {
            w.role = base;
        }
        for (auto d : tensor.shape) w.shape.push_back(static_cast<double>(d));
        m.tensors.push_back(std::move(w));
        m.file_types.push_back(tensor.type);
    }
    check_architecture(a, f.origin);
    return m;
}

double Model::parameters() const {
    double n = 0;
    for (const auto& t : tensors) n += t.elements();
    return n;
}

std::vector<std::string> quant_names() {
    std::vector<std::string> names = llama_mix_names();
    for (const auto& s : kGpuSchemes) names.push_back(s);
    return names;
}

bool is_quant_name(std::string_view name) {
    if (is_llama_mix(name)) return true;
    const std::string l = lower(name);
    return l == "gguf" || std::find(kGpuSchemes.begin(), kGpuSchemes.end(), l) != kGpuSchemes.end();
}

std::vector<TensorFormat> Model::tensor_formats(std::string_view quant, const Format& activation) const {
    std::vector<TensorFormat> out;
    out.reserve(tensors.size());
    const std::string q = lower(quant);
    if (q == "gguf") {
        if (file_types.size() != tensors.size())
            throw InvalidArgument("quant 'gguf' (the file's own tensor types) needs a model read from a GGUF file");
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const GgmlTypeInfo* t = ggml_type_info(file_types[i]);
            if (!t) throw InvalidArgument("tensor '" + tensors[i].name + "' has unknown ggml type " + std::to_string(file_types[i]));
            out.push_back({format_of(*t), ggml_tensor_bytes(*t, tensors[i].elements(), tensors[i].shape.empty() ? 1 : tensors[i].shape[0]), t->name});
        }
        return out;
    }
    if (is_llama_mix(q)) {
        std::vector<QuantTensor> qt;
        qt.reserve(tensors.size());
        for (const auto& t : tensors) qt.push_back({t.name, t.shape});
        const std::vector<int> types =
            llama_mix_types(quant, qt, QuantModelInfo{arch.gguf_arch, arch.n_layer, arch.n_head, arch.n_kv_head, arch.n_expert});
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const GgmlTypeInfo* t = ggml_type_info(types[i]);
            out.push_back({format_of(*t), ggml_tensor_bytes(*t, tensors[i].elements(), tensors[i].shape.empty() ? 1 : tensors[i].shape[0]), t->name});
        }
        return out;
    }
    if (std::find(kGpuSchemes.begin(), kGpuSchemes.end(), q) == kGpuSchemes.end())
        throw NotFound(unknown_name_message("quantization", quant, quant_names()));
    const Format weight = parse_format(q);
    for (const auto& t : tensors) {
        const bool quantized = is_linear_role(t.role) && t.is_matrix();
        const Format& f = quantized ? weight : activation;
        out.push_back({f, t.elements() * f.bytes_per_element(), f.name});
    }
    return out;
}

double Model::weight_bytes(std::string_view quant, const Format& activation) const {
    double total = 0;
    for (const auto& t : tensor_formats(quant, activation)) total += t.bytes;
    return total;
}

double kv_cache_bytes(const Architecture& a, double batch, double context, const Format& kv) {
    check_count("batch", batch);
    check_count("context", context);
    double per_token_layers = 0;
    for (int l = 0; l < a.n_layer; ++l) {
        const double w = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
        per_token_layers += (w > 0 ? std::min(context, w) : context);
    }
    return batch * per_token_layers * 2 * a.kv_dim() * kv.bytes_per_element();
}

// -------------------------------------------------------------------------------------------------------------
// Phase operators

namespace {

struct Builder {
    const Model& m;
    const std::vector<TensorFormat>& formats;
    const PhaseOptions& opt;
    double batch, tokens, past;
    std::vector<PhaseOp> ops;
    std::map<std::string, std::size_t> index;  // merge identical ops

    double rows() const { return batch * tokens; }
    double tp() const { return static_cast<double>(opt.tensor_parallel); }

    void push(const std::string& name, OpCost cost, double count = 1) {
        cost.name = name;
        std::ostringstream key;
        key.precision(17);
        key << name << '|' << cost.launches;
        for (const auto& t : cost.flop_terms)
            key << '|' << static_cast<int>(t.unit) << ':' << static_cast<int>(t.format) << ':' << t.flops << ':' << t.utilization;
        for (std::size_t i = 0; i < kNumLevels; ++i) key << '|' << cost.bytes_read[i] << ':' << cost.bytes_written[i];
        auto it = index.find(key.str());
        if (it != index.end()) {
            ops[it->second].count += count;
            return;
        }
        index.emplace(key.str(), ops.size());
        ops.push_back({name, std::move(cost), count});
    }

    // A projection through weight tensor i: x[rows × ne0] · W → [rows × ne1], split over tensor-parallel ranks.
    void linear(std::size_t i, double rows_, const std::string& name) {
        const WeightTensor& w = m.tensors[i];
        const Format& wf = formats[i].format;
        const double k = w.shape[0], n = w.shape[1] / tp();
        const Format& act = opt.activation;
        OpCost op;
        if (rows_ <= opt.gemv_max_rows) {
            // mat-vec kernels on vector units: each weight read once for all rows
            op = ops::gemm(rows_, n, k, act, wf, act, ops::GemmOptions{Unit::vector, 0, 1});
        } else {
            op = ops::gemm(rows_, n, k, act, wf, act);
            op.set_utilization(Unit::matrix,
                               ops::gemm_utilization(rows_, n, opt.gemm_tile_m, opt.gemm_tile_n, opt.compute_units));
            if (opt.dequant_tile_rows > 0 && wf.dequant_flops_per_element > 0) {
                // quantized weights are dequantized again for every tile of rows that reads them
                const double tiles = std::ceil(rows_ / opt.dequant_tile_rows);
                op.add_flops(Unit::vector, wf.compute, (tiles - 1) * wf.dequant_flops_per_element * k * n);
            }
        }
        push(name, std::move(op));
    }

    void moe(std::size_t i, double rows_, const std::string& name) {
        const WeightTensor& w = m.tensors[i];
        const double k = w.shape[0], n = w.shape[1] / tp(), experts = w.shape.size() > 2 ? w.shape[2] : 1;
        push(name, ops::moe_gemm(rows_, m.arch.n_expert_used, experts, n, k, opt.activation, formats[i].format,
                                 opt.activation));
    }

    // Summing the partial outputs of the tensor-parallel ranks: timed by the estimator on the interconnect.
    void all_reduce(double bytes) {
        for (auto& op : ops)
            if (op.name == "all_reduce" && op.collective_bytes == bytes) {
                op.count += 1;
                return;
            }
        PhaseOp op{"all_reduce", OpCost{}, 1, bytes};
        op.cost.name = "all_reduce";
        ops.push_back(std::move(op));
    }

    void norm(double rows_, double cols, const std::string& name) {
        const Format& act = opt.activation;
        push(name, m.arch.norm == NormKind::rmsnorm ? ops::rmsnorm(rows_, cols, act) : ops::layernorm(rows_, cols, act));
    }
};

// FLOPs per element of an activation function, applied once per element (gated: act(gate) * up adds 1).
double activation_flops(const std::string& act) {
    const std::string a = to_lower(act);
    if (a.find("gelu") != std::string::npos) return 8;  // tanh approximation: x·(1 + tanh(√(2/π)(x + 0.044715x³)))/2
    return 4;                                            // silu: x / (1 + exp(−x))
}

}  // namespace

std::vector<PhaseOp> forward_ops(const Model& model, const std::vector<TensorFormat>& formats, double batch,
                                 double tokens, double past, const PhaseOptions& options) {
    check_count("batch", batch);
    check_count("tokens", tokens);
    check_count("past tokens", past);
    if (options.tensor_parallel < 1)
        throw InvalidArgument("tensor_parallel must be >= 1, got " + std::to_string(options.tensor_parallel));
    if (formats.size() != model.tensors.size())
        throw InvalidArgument("forward_ops: one format per weight tensor is needed");
    const Architecture& a = model.arch;
    const double tp = options.tensor_parallel;
    if (a.n_head % options.tensor_parallel != 0 || a.n_kv_head % options.tensor_parallel != 0)
        throw InvalidArgument("tensor_parallel " + std::to_string(options.tensor_parallel) + " must divide the heads (" +
                              std::to_string(a.n_head) + ") and KV heads (" + std::to_string(a.n_kv_head) + ")");
    Builder b{model, formats, options, batch, tokens, past, {}, {}};
    const Format& act = options.activation;
    const double rows = b.rows(), H = a.hidden;
    const double heads = a.n_head / tp, kv_heads = a.n_kv_head / tp, d = a.head_dim;
    if (rows == 0) return {};

    // Embedding: gather the rows of the new tokens.
    for (std::size_t i = 0; i < model.tensors.size(); ++i) {
        const auto& t = model.tensors[i];
        if (t.role == "token_embd") b.push("token_embd", ops::embedding_lookup(rows, H, formats[i].format, act));
        else if (t.role == "position_embd") b.push("position_embd", ops::embedding_lookup(rows, H, formats[i].format, act));
    }

    for (int l = 0; l < a.n_layer; ++l) {
        const double window = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
        for (std::size_t t = 0; t < model.tensors.size(); ++t) {
            const WeightTensor& w = model.tensors[t];
            if (w.layer != l) continue;
            const std::string& r = w.role;
            const bool bias = w.name.size() > 5 && w.name.compare(w.name.size() - 5, 5, ".bias") == 0;
            if (bias) {
                if (r.size() > 5 && r.compare(r.size() - 5, 5, "_norm") == 0) continue;  // counted by the layer norm
                b.push(r + ".bias", ops::elementwise(rows * w.elements() / (r == "attn_output" || r == "ffn_down" ? 1 : tp), 1, 2, 1, act));
                continue;
            }
            if (r == "attn_norm" || r == "ffn_norm" || r == "post_attention_norm" || r == "post_ffw_norm") {
                b.norm(rows, H, r);
                if (r == "post_attention_norm" || r == "post_ffw_norm") continue;
            } else if (r == "attn_q_norm") {
                b.push(r, ops::rmsnorm(rows * heads, d, act));
            } else if (r == "attn_k_norm") {
                b.push(r, ops::rmsnorm(rows * kv_heads, d, act));
            } else if (r == "attn_q" || r == "attn_k" || r == "attn_v" || r == "attn_qkv" || r == "ffn_gate" ||
                       r == "ffn_up" || r == "ffn_gate_shexp" || r == "ffn_up_shexp" || r == "ffn_down_shexp") {
                b.linear(t, rows, r);
            } else if (r == "ffn_gate_inp") {
                b.linear(t, rows, r);
                b.push("moe_topk", ops::softmax(rows, a.n_expert, act));
            } else if (r == "ffn_gate_exps" || r == "ffn_up_exps" || r == "ffn_down_exps") {
                if (r == "ffn_down_exps") {
                    const double n = rows * a.n_expert_used * a.expert_ffn / tp;
                    b.push("ffn_act", ops::elementwise(n, activation_flops(a.activation) + 1, 2, 1, act));
                }
                b.moe(t, rows, r);
                if (r == "ffn_down_exps") b.push("moe_combine", ops::elementwise(rows * H, 2.0 * a.n_expert_used, a.n_expert_used, 1, act));
            } else if (r == "attn_output") {
                // attention happens between the projections and attn_output
                if (a.position == PositionKind::rope)
                    b.push("rope", ops::elementwise(rows * (heads + kv_heads) * d, 3, 1, 1, act));
                b.push("kv_append", ops::kv_append(batch, tokens, kv_heads, d, act, options.kv));
                const double context = past + tokens;
                if (tokens == 1) {
                    const double c = window > 0 ? std::min(context, window) : context;
                    b.push("attention", ops::decode_attention(batch, heads, kv_heads, c, d, act, options.kv, options.attention));
                } else {
                    const double kv_len = window > 0 ? std::min(context, window + tokens - 1) : context;
                    ops::AttentionShape shape{batch, heads, tokens, kv_len, d, true};
                    OpCost attn = ops::attention(shape, act, options.attention, false, options.sram_bytes, options.l2_bytes);
                    if (options.kv.name != act.name || past > 0) {
                        // K and V of the past are read from the cache in its format
                        attn.add_dram(batch * 2 * past * kv_heads * d * options.kv.bytes_per_element(), 0);
                    }
                    b.push("attention", std::move(attn));
                }
                b.linear(t, rows, r);
                if (tp > 1) b.all_reduce(rows * H * act.bytes_per_element());
                b.push("residual_add", ops::elementwise(rows * H, 1, 2, 1, act));
            } else if (r == "ffn_down") {
                const double inner = w.shape[0] / tp;
                if (a.mlp == MlpKind::gated)
                    b.push("ffn_act", ops::elementwise(rows * inner, activation_flops(a.activation) + 1, 2, 1, act));
                else
                    b.push("ffn_act", ops::elementwise(rows * inner, activation_flops(a.activation), 1, 1, act));
                b.linear(t, rows, r);
                if (tp > 1) b.all_reduce(rows * H * act.bytes_per_element());
                b.push("residual_add", ops::elementwise(rows * H, 1, 2, 1, act));
            }
        }
    }
    // Final norm and the output head (for the last token of each sequence only, in prefill).
    const double out_rows = (options.logits_last_token_only ? batch : rows);
    for (std::size_t t = 0; t < model.tensors.size(); ++t) {
        const auto& w = model.tensors[t];
        if (w.role == "output_norm" && w.name.find(".bias") == std::string::npos) b.norm(out_rows, H, "output_norm");
    }
    std::size_t head = model.tensors.size();
    for (std::size_t t = 0; t < model.tensors.size(); ++t)
        if (model.tensors[t].role == "output") head = t;
    if (head == model.tensors.size())
        for (std::size_t t = 0; t < model.tensors.size(); ++t)
            if (model.tensors[t].role == "token_embd") head = t;  // tied: the embedding matrix is the head
    if (head < model.tensors.size()) b.linear(head, out_rows, "output");
    return b.ops;
}

}  // namespace roofline
