#include "roofline/kv_cache.hpp"

#include "roofline/errors.hpp"

#include <algorithm>

namespace roofline {

const std::vector<std::string>& kv_format_names() {
    static const std::vector<std::string> names = {"f16", "bf16", "f32", "fp8", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};
    return names;
}

Format parse_kv_format(std::string_view name) {
    const std::string l = to_lower(name);
    if (l == "f16" || l == "fp16") return format_of(DType::fp16);
    if (l == "bf16") return format_of(DType::bf16);
    if (l == "f32" || l == "fp32") return format_of(DType::fp32);
    const auto& allowed = kv_format_names();
    if (std::find(allowed.begin(), allowed.end(), l) == allowed.end())
        throw NotFound(unknown_name_message("KV cache format", name, allowed));
    return parse_format(l);
}

double kv_bytes(double batch, double positions, double kv_heads, double head_dim, const Format& kv) {
    return batch * 2 * positions * kv_heads * head_dim * kv.bytes_per_element();
}

KvLayout KvLayout::of(const Architecture& a) {
    KvLayout k;
    k.kv_heads = a.n_kv_head;
    k.head_dim = a.head_dim;
    if (a.mla()) k.latent = a.kv_lora_rank + a.qk_rope_dim;
    std::vector<std::pair<double, double>> windows;
    for (int l = 0; l < a.n_layer; ++l) {
        const double w = a.window.empty() ? 0 : a.window[static_cast<std::size_t>(l)];
        if (w > 0) windows.push_back({w, 1});
        else k.full_layers += 1;
    }
    std::sort(windows.begin(), windows.end());
    for (const auto& [w, n] : windows)
        if (!k.windows.empty() && k.windows.back().first == w) k.windows.back().second += n;
        else k.windows.push_back({w, n});
    return k;
}

double KvLayout::token_layers_read(double prompt, double gen) const {
    const double last = prompt + gen;
    // Σ_{c = lo..hi} c for whole numbers lo <= hi; 0 for an empty range.
    auto sum_range = [](double lo, double hi) { return hi < lo ? 0.0 : (hi - lo + 1) * (lo + hi) / 2; };
    double t = full_layers * sum_range(prompt + 1, last);
    for (const auto& [w, layers] : windows) {
        if (w >= last) {
            t += layers * sum_range(prompt + 1, last);
        } else {
            const double capped_from = std::max(prompt + 1, w + 1);  // steps whose context exceeds the window
            t += layers * (sum_range(prompt + 1, std::min(last, w)) + (last - capped_from + 1) * w);
        }
    }
    return t;
}

double kv_bytes_per_token_layer(const Architecture& a, const Format& kv) { return KvLayout::of(a).token_layer_bytes(kv); }

double kv_cache_bytes(const Architecture& a, double batch, double context, const Format& kv, double tensor_parallel) {
    check_count("batch", batch);
    check_count("context", context);
    check_range("tensor_parallel", tensor_parallel, 1, 1024);
    const KvLayout layout = KvLayout::of(a);
    return batch * layout.token_layers(context) * layout.token_layer_bytes(kv, tensor_parallel);
}

double kv_cache_bytes_read(const Architecture& a, double batch, double prompt, double gen, const Format& kv) {
    check_count("batch", batch);
    check_count("prompt", prompt);
    check_count("gen", gen);
    return batch * KvLayout::of(a).token_layers_read(prompt, gen) * kv_bytes_per_token_layer(a, kv);
}

}  // namespace roofline
