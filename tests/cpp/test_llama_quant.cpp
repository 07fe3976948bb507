#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/llama_quant.hpp"
#include "roofline/quant.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace roofline;

namespace {

// A dense llama-style model as llama.cpp names its GGUF tensors. head_dim * n_head need not equal hidden (qwen3).
struct Dense {
    int n_layer, hidden, ffn, vocab, n_head, n_head_kv, head_dim;
    bool tied;     // no output.weight (the embeddings double as the output projection)
    bool qk_norm;  // qwen3: blk.N.attn_q_norm / attn_k_norm of head_dim
};

std::vector<QuantTensor> tensors_of(const Dense& m) {
    const double h = m.hidden, f = m.ffn, q = double(m.n_head) * m.head_dim, kv = double(m.n_head_kv) * m.head_dim;
    std::vector<QuantTensor> t{{"token_embd.weight", {h, double(m.vocab)}}, {"output_norm.weight", {h}}};
    if (!m.tied) t.push_back({"output.weight", {h, double(m.vocab)}});
    for (int i = 0; i < m.n_layer; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        t.push_back({b + "attn_norm.weight", {h}});
        t.push_back({b + "attn_q.weight", {h, q}});
        t.push_back({b + "attn_k.weight", {h, kv}});
        t.push_back({b + "attn_v.weight", {h, kv}});
        t.push_back({b + "attn_output.weight", {q, h}});
        if (m.qk_norm) {
            t.push_back({b + "attn_q_norm.weight", {double(m.head_dim)}});
            t.push_back({b + "attn_k_norm.weight", {double(m.head_dim)}});
        }
        t.push_back({b + "ffn_norm.weight", {h}});
        t.push_back({b + "ffn_gate.weight", {h, f}});
        t.push_back({b + "ffn_up.weight", {h, f}});
        t.push_back({b + "ffn_down.weight", {f, h}});
    }
    return t;
}

QuantModelInfo info_of(const Dense& m, const char* arch) { return {arch, m.n_layer, m.n_head, m.n_head_kv, 0}; }

double elements(const QuantTensor& t) {
    double n = 1;
    for (double d : t.shape) n *= d;
    return n;
}

double params(const std::vector<QuantTensor>& ts) {
    double n = 0;
    for (const auto& t : ts) n += elements(t);
    return n;
}

// Sum of tensor bytes: what llama-bench prints as "size".
double file_bytes(std::string_view mix, const std::vector<QuantTensor>& ts, const QuantModelInfo& info,
                  const LlamaQuantOptions& opt = {}) {
    const std::vector<int> types = llama_mix_types(mix, ts, info, opt);
    REQUIRE(types.size() == ts.size());
    double bytes = 0;
    for (std::size_t i = 0; i < ts.size(); ++i)
        bytes += ggml_tensor_bytes(*ggml_type_info(types[i]), elements(ts[i]), ts[i].shape[0]);
    return bytes;
}

std::map<std::string, std::string> named_types(std::string_view mix, const std::vector<QuantTensor>& ts,
                                               const QuantModelInfo& info, const LlamaQuantOptions& opt = {}) {
    const std::vector<int> types = llama_mix_types(mix, ts, info, opt);
    std::map<std::string, std::string> out;
    for (std::size_t i = 0; i < ts.size(); ++i) out[ts[i].name] = ggml_type_info(types[i])->name;
    return out;
}

// |value - published| <= tol, with the computed value shown on failure
#define CHECK_NEAR(value, published, tol)                     \
    do {                                                      \
        const double v_ = (value);                            \
        INFO(#value " = " << v_ << ", published " << published); \
        CHECK(std::fabs(v_ - (published)) <= (tol));          \
    } while (0)

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
constexpr double GB = 1e9;

const Dense llama2_7b{32, 4096, 11008, 32000, 32, 32, 128, false, false};
const Dense llama31_8b{32, 4096, 14336, 128256, 32, 8, 128, false, false};
const Dense qwen3_4b{36, 2560, 9728, 151936, 32, 8, 128, true, true};
const Dense qwen3_06b{28, 1024, 3072, 151936, 16, 8, 128, false, true};  // ggml-org's file carries output.weight

// use_more_bits layers of a 32-layer model: the first and last eighth, and every third layer in between.
const std::set<int> more_bits_32{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};

}  // namespace

TEST_CASE("llama mix names: every mix is listed, parses case-insensitively, unknown ones throw NotFound") {
    const auto names = llama_mix_names();
    for (const char* n : {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q2_K_S", "Q3_K_S",
                          "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_XS", "IQ4_NL",
                          "MXFP4_MOE", "IQ2_XXS", "IQ3_M", "IQ1_S"}) {
        CHECK(std::find(names.begin(), names.end(), n) != names.end());
        CHECK(is_llama_mix(n));
        CHECK(is_llama_mix(to_lower(n)));
    }
    CHECK(is_llama_mix("q4_k"));  // llama-quantize's alias of Q4_K_M
    CHECK_FALSE(is_llama_mix("Q4_K_X"));
    CHECK_FALSE(is_llama_mix("int4-g128"));
    const auto ts = tensors_of(llama2_7b);
    try {
        llama_mix_types("Q4_K_X", ts, info_of(llama2_7b, "llama"));
        FAIL("expected NotFound");
    } catch (const NotFound& e) {
        const std::string msg = e.what();
        CHECK(msg.find("llama.cpp quantization mix") != std::string::npos);
        CHECK(msg.find("'Q4_K_X'") != std::string::npos);
    }
    const auto info = info_of(llama2_7b, "llama");
    CHECK(named_types("q4_k", ts, info) == named_types("Q4_K_M", ts, info));
}

TEST_CASE("llama mix: 1-D tensors (norms, biases) stay F32 whatever the mix") {
    std::vector<QuantTensor> ts = tensors_of(qwen3_4b);
    ts.push_back({"blk.0.attn_q.bias", {4096}});
    for (const auto& mix : llama_mix_names()) {
        const auto types = named_types(mix, ts, info_of(qwen3_4b, "qwen3"));
        CHECK(types.at("output_norm.weight") == "F32");
        CHECK(types.at("blk.0.attn_norm.weight") == "F32");
        CHECK(types.at("blk.35.attn_k_norm.weight") == "F32");
        CHECK(types.at("blk.0.attn_q.bias") == "F32");
    }
}

TEST_CASE("llama mix: seed: Llama-2-7B sizes match llama-bench (F16 12.55, Q8_0 6.67, Q4_0 3.56, Q4_K_M 3.80 GiB)") {
    // llama-bench's "size" is the sum of tensor bytes, in GiB
    const auto ts = tensors_of(llama2_7b);
    const auto info = info_of(llama2_7b, "llama");
    CHECK(params(ts) == 6738415616.0);  // llama-bench: 6.74 B
    CHECK_NEAR(file_bytes("F16", ts, info) / GiB, 12.55, 0.01);
    CHECK_NEAR(file_bytes("Q8_0", ts, info) / GiB, 6.67, 0.01);
    CHECK_NEAR(file_bytes("Q4_0", ts, info) / GiB, 3.56, 0.01);
    const double q4km = file_bytes("Q4_K_M", ts, info);
    CHECK_NEAR(q4km / GiB, 3.80, 0.01);
    CHECK_NEAR(8 * q4km / params(ts), 4.84, 0.005);
    // exact byte counts, from the block layouts
    CHECK(file_bytes("F16", ts, info) == 13477363712.0);
    CHECK(file_bytes("Q4_0", ts, info) == 3825065984.0);  // output.weight in Q6_K, the rest Q4_0, norms F32
    CHECK(q4km == 4080263168.0);
}

TEST_CASE("llama mix: seed: Llama-3.1-8B Q4_K_M is 4.89 bits per weight") {
    const auto ts = tensors_of(llama31_8b);
    const auto info = info_of(llama31_8b, "llama");
    CHECK_NEAR(params(ts) / 1e9, 8.03, 0.005);
    const double q4km = file_bytes("Q4_K_M", ts, info);
    CHECK_NEAR(8 * q4km / params(ts), 4.89, 0.005);
    CHECK_NEAR(q4km / GiB, 4.58, 0.01);  // llama-bench: 4.58 GiB
}

TEST_CASE("llama mix: seed: Qwen3-4B (tied embeddings) BF16 8.05, Q8_0 4.28, Q4_K_M 2.50 GB") {
    // Tensor bytes come to 8.045, 4.274 and 2.491 GB. The published figures sit 4-10 MB above them in all three
    // mixes, which is the size of the GGUF header (Qwen's 151936-token vocabulary and merges), i.e. they read as
    // file sizes rather than tensor sums; all three still agree within 0.01 GB.
    const auto ts = tensors_of(qwen3_4b);
    const auto info = info_of(qwen3_4b, "qwen3");
    CHECK_NEAR(file_bytes("BF16", ts, info) / GB, 8.05, 0.01);
    CHECK_NEAR(file_bytes("Q8_0", ts, info) / GB, 4.28, 0.01);
    CHECK_NEAR(file_bytes("Q4_K_M", ts, info) / GB, 2.50, 0.01);
    // tied: the embedding table is quantized as the output projection would be
    CHECK(named_types("Q4_K_M", ts, info).at("token_embd.weight") == "Q6_K");
    CHECK(named_types("Q8_0", ts, info).at("token_embd.weight") == "Q8_0");
}

TEST_CASE("llama mix: Q4_K_M: attn_v and ffn_down of the use_more_bits layers and output in Q6_K, the rest Q4_K") {
    const auto ts = tensors_of(llama2_7b);
    const auto types = named_types("Q4_K_M", ts, info_of(llama2_7b, "llama"));
    CHECK(types.at("output.weight") == "Q6_K");
    CHECK(types.at("token_embd.weight") == "Q4_K");
    CHECK(types.at("output_norm.weight") == "F32");
    for (int i = 0; i < 32; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        const char* v = more_bits_32.count(i) ? "Q6_K" : "Q4_K";
        CHECK(types.at(b + "attn_v.weight") == v);
        CHECK(types.at(b + "ffn_down.weight") == v);
        for (const char* r : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
            CHECK(types.at(b + r + ".weight") == "Q4_K");
        CHECK(types.at(b + "attn_norm.weight") == "F32");
    }
    // the counters follow llama.cpp's loader order (layer, then name), not the order tensors are given in
    auto shuffled = ts;
    std::reverse(shuffled.begin(), shuffled.end());
    CHECK(named_types("Q4_K_M", shuffled, info_of(llama2_7b, "llama")) == types);
}

TEST_CASE("a K-quant on rows not divisible by 256 falls back as llama.cpp does") {
    // Qwen2-72B: ffn 29568 = 115.5 x 256, so ffn_down rows do not fit K-quant blocks; 80 layers -> the 70B rule
    const Dense qwen2_72b{80, 8192, 29568, 152064, 64, 8, 128, false, false};
    const auto ts = tensors_of(qwen2_72b);
    const auto types = named_types("Q4_K_M", ts, info_of(qwen2_72b, "qwen2"));
    CHECK(types.at("blk.0.ffn_down.weight") == "Q8_0");   // Q6_K -> Q8_0
    CHECK(types.at("blk.40.ffn_down.weight") == "Q5_0");  // Q4_K -> Q5_0
    CHECK(types.at("blk.40.ffn_gate.weight") == "Q4_K");  // rows of 8192 fit
    CHECK(types.at("blk.40.attn_v.weight") == "Q5_K");    // 70B-class GQA: attn_v Q4_K -> Q5_K
    CHECK(types.at("blk.0.attn_v.weight") == "Q6_K");
    CHECK(named_types("Q5_K_S", ts, info_of(qwen2_72b, "qwen2")).at("blk.4.ffn_down.weight") == "Q5_1");
    CHECK(named_types("Q3_K_S", ts, info_of(qwen2_72b, "qwen2")).at("blk.4.ffn_down.weight") == "Q4_0");
    CHECK(named_types("IQ4_XS", ts, info_of(qwen2_72b, "qwen2")).at("blk.40.ffn_down.weight") == "IQ4_NL");

    // a row of 2880 (gpt-oss width): the output projection goes to Q8_0 instead of Q6_K
    const std::vector<QuantTensor> small{{"token_embd.weight", {2880, 1000}},
                                         {"output.weight", {2880, 1000}},
                                         {"blk.0.attn_v.weight", {2880, 512}},
                                         {"blk.0.ffn_down.weight", {2880, 2880}},
                                         {"blk.0.ffn_up.weight", {2880, 2880}}};
    const QuantModelInfo one{"llama", 1, 64, 8, 0};
    const auto st = named_types("Q4_K_M", small, one);
    CHECK(st.at("output.weight") == "Q8_0");
    CHECK(st.at("token_embd.weight") == "Q5_0");
    CHECK(st.at("blk.0.attn_v.weight") == "Q8_0");
    CHECK(st.at("blk.0.ffn_up.weight") == "Q5_0");
    // a row that not even a 32-block divides: K-quants end in F16, Q8_0 has no fallback (llama.cpp refuses)
    const std::vector<QuantTensor> odd{{"blk.0.ffn_up.weight", {100, 64}}};
    CHECK(named_types("Q4_K_M", odd, one).at("blk.0.ffn_up.weight") == "F16");
    CHECK_THROWS_AS(llama_mix_types("Q8_0", odd, one), InvalidArgument);
}

TEST_CASE("llama mix: GQA and MoE rules") {
    // Llama-3.1-8B: n_head / n_head_kv = 4, so Q2_K gives attn_v Q4_K (Q3_K for MHA)
    const auto gqa = named_types("Q2_K", tensors_of(llama31_8b), info_of(llama31_8b, "llama"));
    const auto mha = named_types("Q2_K", tensors_of(llama2_7b), info_of(llama2_7b, "llama"));
    CHECK(gqa.at("blk.5.attn_v.weight") == "Q4_K");
    CHECK(mha.at("blk.5.attn_v.weight") == "Q3_K");
    // Llama-3.1-70B: 80 layers with GQA is LLM_TYPE_70B: attn_v Q3_K/Q4_K -> Q5_K
    const Dense llama31_70b{80, 8192, 28672, 128256, 64, 8, 128, false, false};
    const auto t70 = named_types("Q3_K_S", tensors_of(llama31_70b), info_of(llama31_70b, "llama"));
    CHECK(t70.at("blk.40.attn_v.weight") == "Q5_K");
    CHECK(t70.at("blk.40.attn_k.weight") == "Q3_K");

    // Mixtral-8x7B-like: 8 experts -> attn_v and attn_k Q8_0, attn_output Q5_K; ffn layer from the name
    std::vector<QuantTensor> moe{{"token_embd.weight", {4096, 32000}}, {"output.weight", {4096, 32000}}};
    for (int i = 0; i < 32; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        moe.push_back({b + "attn_q.weight", {4096, 4096}});
        moe.push_back({b + "attn_k.weight", {4096, 1024}});
        moe.push_back({b + "attn_v.weight", {4096, 1024}});
        moe.push_back({b + "attn_output.weight", {4096, 4096}});
        moe.push_back({b + "ffn_gate_inp.weight", {4096, 8}});
        moe.push_back({b + "ffn_gate_exps.weight", {4096, 14336, 8}});
        moe.push_back({b + "ffn_up_exps.weight", {4096, 14336, 8}});
        moe.push_back({b + "ffn_down_exps.weight", {14336, 4096, 8}});
    }
    const QuantModelInfo mixtral{"llama", 32, 32, 8, 8};
    const auto mt = named_types("Q4_K_M", moe, mixtral);
    CHECK(mt.at("blk.4.attn_v.weight") == "Q8_0");
    CHECK(mt.at("blk.4.attn_k.weight") == "Q8_0");
    CHECK(mt.at("blk.4.attn_output.weight") == "Q5_K");
    CHECK(mt.at("blk.4.ffn_gate_inp.weight") == "F32");  // routers are never quantized
    CHECK(mt.at("blk.3.ffn_down_exps.weight") == "Q6_K");
    CHECK(mt.at("blk.4.ffn_down_exps.weight") == "Q4_K");
    // MXFP4_MOE: stacked experts in MXFP4, the rest Q8_0
    const auto mx = named_types("MXFP4_MOE", moe, mixtral);
    CHECK(mx.at("blk.4.ffn_up_exps.weight") == "MXFP4");
    CHECK(mx.at("blk.4.attn_q.weight") == "Q8_0");
    CHECK(mx.at("output.weight") == "Q8_0");
    // an expert tensor whose layer cannot be read from its name is an error, as in llama.cpp
    moe.push_back({"blk.99.ffn_down_exps.weight", {14336, 4096, 8}});
    CHECK_THROWS_AS(llama_mix_types("Q4_K_M", moe, mixtral), InvalidArgument);
}

TEST_CASE("llama mix: options: importance matrix, pure, leave output tensor") {
    const auto ts = tensors_of(llama2_7b);
    const auto info = info_of(llama2_7b, "llama");
    LlamaQuantOptions im;
    im.imatrix = true;
    CHECK(named_types("Q4_0", ts, info, im).at("blk.3.ffn_down.weight") == "Q4_1");
    CHECK(named_types("Q4_0", ts, info, im).at("blk.4.ffn_down.weight") == "Q4_0");
    CHECK(named_types("Q4_0", ts, info).at("blk.3.ffn_down.weight") == "Q4_0");
    CHECK(named_types("IQ4_XS", ts, info).at("blk.0.ffn_down.weight") == "Q5_K");
    CHECK(named_types("IQ4_XS", ts, info, im).at("blk.0.ffn_down.weight") == "IQ4_XS");
    LlamaQuantOptions pure;
    pure.pure = true;
    for (const auto& [name, type] : named_types("Q4_K_M", ts, info, pure))
        CHECK(type == (name.find("norm") != std::string::npos ? "F32" : "Q4_K"));
    LlamaQuantOptions keep;
    keep.quantize_output_tensor = false;
    CHECK(named_types("Q4_K_M", ts, info, keep).at("output.weight") == "F16");
}

// llama.cpp's tests/snapshots/qwen3-0.6b.schema, produced by its test-quant-type-selection
TEST_CASE("llama mix: llama.cpp's own snapshot: every file type of Qwen3-0.6B") {
    // Each entry: the default type, then the tensors that differ from it (role -> type for a set of layers).
    struct Override {
        const char* role;  // "output", "token_embd", or a per-layer role
        const char* type;
        std::set<int> layers;
    };
    std::set<int> all, first3, from3to23;
    for (int i = 0; i < 28; ++i) all.insert(i);
    for (int i = 0; i < 3; ++i) first3.insert(i);
    for (int i = 3; i < 24; ++i) from3to23.insert(i);
    const std::set<int> more_bits{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
    std::set<int> rest_after_first = all, rest_after2 = all, rest_after3 = all;
    rest_after_first.erase(0);
    rest_after2.erase(0), rest_after2.erase(1);
    for (int i = 0; i < 3; ++i) rest_after3.erase(i);

    const std::vector<std::pair<const char*, const char*>> plain{
        {"F32", "F32"}, {"F16", "F16"}, {"BF16", "BF16"}, {"Q8_0", "Q8_0"}, {"Q6_K", "Q6_K"}};
    const std::map<std::string, std::pair<const char*, std::vector<Override>>> expected{
        {"Q4_0", {"Q4_0", {{"output", "Q6_K", {}}}}},
        {"Q4_1", {"Q4_1", {{"output", "Q6_K", {}}}}},
        {"Q5_0", {"Q5_0", {{"output", "Q6_K", {}}}}},
        {"Q5_1", {"Q5_1", {{"output", "Q6_K", {}}}}},
        {"Q2_K", {"Q2_K", {{"output", "Q6_K", {}}, {"attn_output", "Q3_K", all}, {"attn_v", "Q3_K", all},
                           {"ffn_down", "Q3_K", all}}}},
        {"Q3_K_S", {"Q3_K", {{"output", "Q6_K", {}}}}},
        {"Q3_K_M", {"Q3_K", {{"output", "Q6_K", {}}, {"attn_output", "Q4_K", all}, {"attn_v", "Q5_K", {0, 1}},
                             {"attn_v", "Q4_K", rest_after2}, {"ffn_down", "Q5_K", {0}},
                             {"ffn_down", "Q4_K", rest_after_first}}}},
        {"Q3_K_L", {"Q3_K", {{"output", "Q6_K", {}}, {"attn_output", "Q5_K", all}, {"attn_v", "Q5_K", all},
                             {"ffn_down", "Q5_K", all}}}},
        {"Q4_K_S", {"Q4_K", {{"output", "Q6_K", {}}, {"attn_v", "Q5_K", {0, 1, 2, 3}}, {"ffn_down", "Q5_K", first3}}}},
        {"Q4_K_M", {"Q4_K", {{"output", "Q6_K", {}}, {"attn_v", "Q6_K", more_bits}, {"ffn_down", "Q6_K", more_bits}}}},
        {"Q5_K_S", {"Q5_K", {{"output", "Q6_K", {}}}}},
        {"Q5_K_M", {"Q5_K", {{"output", "Q6_K", {}}, {"attn_v", "Q6_K", more_bits}, {"ffn_down", "Q6_K", more_bits}}}},
        {"IQ2_XXS", {"IQ2_XXS", {{"output", "Q5_K", {}}, {"token_embd", "Q2_K", {}}, {"attn_v", "Q2_K", all},
                                 {"ffn_down", "Q2_K", first3}}}},
        {"IQ2_XS", {"IQ2_XS", {{"output", "Q5_K", {}}, {"token_embd", "Q2_K", {}}, {"attn_v", "Q2_K", all},
                               {"ffn_down", "Q2_K", first3}}}},
        {"Q2_K_S", {"Q2_K", {{"output", "Q6_K", {}}, {"ffn_down", "Q4_K", first3}}}},
        {"IQ3_XS", {"IQ3_S", {{"output", "Q6_K", {}}, {"attn_k", "IQ3_XXS", all}, {"attn_q", "IQ3_XXS", all},
                              {"ffn_gate", "IQ3_XXS", from3to23}, {"ffn_up", "IQ3_XXS", from3to23}}}},
        {"IQ3_XXS", {"IQ3_XXS", {{"output", "Q5_K", {}}, {"token_embd", "IQ3_S", {}}, {"attn_k", "IQ2_S", all},
                                 {"attn_output", "IQ3_S", all}, {"attn_q", "IQ2_S", all}, {"attn_v", "IQ3_S", all},
                                 {"ffn_down", "Q4_K", first3}, {"ffn_down", "Q3_K", rest_after3}}}},
        {"IQ1_S", {"IQ1_S", {{"output", "Q5_K", {}}, {"token_embd", "Q2_K", {}}, {"attn_output", "IQ2_XXS", all},
                             {"attn_v", "Q2_K", all}, {"ffn_down", "Q2_K", first3}}}},
        {"IQ1_M", {"IQ1_M", {{"output", "Q5_K", {}}, {"token_embd", "Q2_K", {}}, {"attn_output", "IQ2_XXS", all},
                             {"attn_v", "Q2_K", all}, {"ffn_down", "Q2_K", first3}}}},
        {"IQ4_NL", {"IQ4_NL", {{"output", "Q6_K", {}}, {"ffn_down", "Q5_K", first3}}}},
        {"IQ4_XS", {"IQ4_XS", {{"output", "Q6_K", {}}, {"ffn_down", "Q5_K", first3}}}},
        {"IQ3_S", {"IQ3_S", {{"output", "Q6_K", {}}}}},
        {"IQ3_M", {"IQ3_S", {{"output", "Q6_K", {}}, {"attn_output", "Q4_K", all}, {"attn_v", "Q4_K", all},
                             {"ffn_down", "Q4_K", first3}}}},
        {"IQ2_S", {"IQ2_XS", {{"output", "Q5_K", {}}, {"token_embd", "IQ3_S", {}}, {"attn_output", "IQ3_S", all},
                              {"attn_v", "IQ3_S", all}, {"ffn_down", "IQ3_S", first3}}}},
        {"IQ2_M", {"IQ2_S", {{"output", "Q5_K", {}}, {"token_embd", "IQ3_S", {}}, {"attn_output", "IQ3_S", all},
                             {"attn_v", "IQ3_S", all}, {"ffn_down", "IQ3_S", first3}}}},
        {"TQ1_0", {"TQ1_0", {{"output", "Q6_K", {}}, {"token_embd", "Q4_K", {}}}}},
        {"TQ2_0", {"TQ2_0", {{"output", "Q6_K", {}}, {"token_embd", "Q4_K", {}}}}},
        {"MXFP4_MOE", {"Q8_0", {}}},  // dense: nothing has experts, so everything quantizable is Q8_0
    };

    const auto ts = tensors_of(qwen3_06b);
    const auto info = info_of(qwen3_06b, "qwen3");
    std::size_t checked = 0;
    auto check_mix = [&](const std::string& mix, const char* def, const std::vector<Override>& overrides) {
        std::map<std::string, std::string> want;
        for (const auto& t : ts)
            want[t.name] = t.shape.size() < 2 ? "F32" : def;
        for (const auto& o : overrides) {
            if (o.layers.empty()) want[std::string(o.role) + ".weight"] = o.type;
            for (int i : o.layers) want["blk." + std::to_string(i) + "." + o.role + ".weight"] = o.type;
        }
        const auto got = named_types(mix, ts, info);
        for (const auto& entry : want) {  // not a structured binding: INFO's lambda captures it (C++20 in clang)
            const std::string& name = entry.first;
            INFO(mix << " " << name);
            CHECK(got.at(name) == entry.second);
        }
        ++checked;
    };
    for (const auto& [mix, def] : plain) check_mix(mix, def, {});
    for (const auto& [mix, spec] : expected) check_mix(mix, spec.first, spec.second);
    CHECK(checked == llama_mix_names().size());
}

// llama.cpp's tests/snapshots/qwen3-coder-next.schema
TEST_CASE("llama mix: fused QKV and MoE ffn_down follow llama.cpp's Qwen3-Coder-Next snapshot") {
    // 48 layers; every 4th (3, 7, ...) has full attention (attn_q/k/v/output), the others a fused attn_qkv.
    // attn_qkv takes the attn_v rules and shares its counter; MoE ffn_down layers come from the tensor name, so
    // the routed experts and the shared expert of a layer get the same type.
    std::vector<QuantTensor> ts{{"token_embd.weight", {2048, 151936}}, {"output.weight", {2048, 151936}},
                                {"output_norm.weight", {2048}}};
    for (int i = 0; i < 48; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        if (i % 4 == 3) {
            ts.push_back({b + "attn_q.weight", {2048, 8192}});
            ts.push_back({b + "attn_k.weight", {2048, 512}});
            ts.push_back({b + "attn_v.weight", {2048, 512}});
            ts.push_back({b + "attn_output.weight", {4096, 2048}});
        } else {
            ts.push_back({b + "attn_qkv.weight", {2048, 8192}});
        }
        ts.push_back({b + "ffn_gate_inp.weight", {2048, 512}});
        ts.push_back({b + "ffn_down_exps.weight", {512, 2048, 512}});
        ts.push_back({b + "ffn_down_shexp.weight", {512, 2048}});
    }
    const QuantModelInfo info{"qwen3next", 48, 16, 2, 512};
    auto v = [](int i) { return "blk." + std::to_string(i) + (i % 4 == 3 ? ".attn_v.weight" : ".attn_qkv.weight"); };
    auto down = [](int i, const char* which) { return "blk." + std::to_string(i) + ".ffn_down_" + which + ".weight"; };

    const auto q4ks = named_types("Q4_K_S", ts, info);
    for (int i = 0; i < 48; ++i) {
        CHECK(q4ks.at(v(i)) == (i < 4 ? "Q5_K" : "Q4_K"));
        CHECK(q4ks.at(down(i, "exps")) == (i < 6 ? "Q5_K" : "Q4_K"));
        CHECK(q4ks.at(down(i, "shexp")) == (i < 6 ? "Q5_K" : "Q4_K"));
        CHECK(q4ks.at("blk." + std::to_string(i) + ".ffn_gate_inp.weight") == "F32");
    }
    const auto q3km = named_types("Q3_K_M", ts, info);
    for (int i = 0; i < 48; ++i) {
        CHECK(q3km.at(v(i)) == (i < 2 ? "Q5_K" : "Q4_K"));
        CHECK(q3km.at(down(i, "exps")) == (i < 3 ? "Q5_K" : "Q4_K"));
        CHECK(q3km.at(down(i, "shexp")) == (i < 3 ? "Q5_K" : "Q4_K"));
    }
    CHECK(q3km.at("blk.3.attn_output.weight") == "Q4_K");
    const auto q2k = named_types("Q2_K", ts, info);  // GQA 16/2 = 8 >= 4
    CHECK(q2k.at(v(0)) == "Q4_K");
    CHECK(q2k.at(v(3)) == "Q4_K");
    CHECK(q2k.at("blk.3.attn_output.weight") == "Q3_K");
    CHECK(q2k.at(down(10, "shexp")) == "Q3_K");
    CHECK(q2k.at("output.weight") == "Q6_K");
    const auto q4km = named_types("Q4_K_M", ts, info);
    const std::set<int> more_bits{0, 1, 2, 3, 4, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41,
                                  42, 43, 44, 45, 46, 47};
    for (int i = 0; i < 48; ++i) {
        const char* want = more_bits.count(i) ? "Q6_K" : "Q4_K";
        CHECK(q4km.at(v(i)) == want);
        CHECK(q4km.at(down(i, "exps")) == want);
        CHECK(q4km.at(down(i, "shexp")) == want);
    }
}

TEST_CASE("llama mix: a tensor's rules do not depend on the other tensors' names (per-layer memo)") {
    // names are memoised per layer without their "blk.N." prefix; names that only look like a layer's keep their own
    const QuantModelInfo info{"llama", 1, 32, 8, 0};
    const QuantTensor out{"output.weight", {4096, 32000}}, odd{"blk.0output.weight", {4096, 4096}},
        bare{"blk.output.weight", {4096, 4096}};
    for (const QuantTensor& other : {odd, bare}) {
        CAPTURE(other.name);
        const auto alone_out = named_types("Q4_K_M", {out}, info), alone_other = named_types("Q4_K_M", {other}, info);
        for (const auto& ts : {std::vector<QuantTensor>{out, other}, std::vector<QuantTensor>{other, out}}) {
            const auto both = named_types("Q4_K_M", ts, info);
            CHECK(both.at(out.name) == alone_out.at(out.name));
            CHECK(both.at(other.name) == alone_other.at(other.name));
        }
    }
    CHECK(named_types("Q4_K_M", {out}, info).at("output.weight") == "Q6_K");
}
