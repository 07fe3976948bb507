// Model: architectures from HF configs and model_db entries, parameter counts, bad configs.
#include <doctest/doctest.h>

#include "roofline/errors.hpp"
#include "roofline/model.hpp"
#include "test_helpers.hpp"

using namespace roofline;
using roofline::test::catalog;

TEST_CASE("parameter counts match the published ones") {
    for (const char* id : {"llama-2-7b", "llama-3.1-8b", "qwen3-4b", "gpt2", "gpt2-xl", "mixtral-8x7b", "qwen3-30b-a3b",
                           "gemma-2-9b", "phi-3-mini", "mistral-7b"}) {
        CAPTURE(id);
        const Model m = catalog(id);
        if (m.arch.parameters_reported > 0) CHECK(m.parameters() == doctest::Approx(m.arch.parameters_reported).epsilon(1e-6));
    }
    CHECK(catalog("llama-2-7b").parameters() == 6738415616.0);
    CHECK(catalog("qwen3-4b").parameters() == 4022468096.0);
}

TEST_CASE("architectures: GQA, tied embeddings, qk-norm, sliding windows, MoE") {
    const Model q = catalog("qwen3-4b");
    CHECK(q.arch.n_kv_head == 8);
    CHECK(q.arch.head_dim == 128);  // not hidden / heads (80)
    CHECK(q.arch.tied_embeddings);
    CHECK(q.arch.qk_norm);
    const Model g = catalog("gemma-2-9b");
    CHECK(g.arch.window[0] == 4096);
    CHECK(g.arch.window[1] == 0);
    const Model g3 = catalog("gemma-3-4b");
    CHECK(g3.arch.window[4] > 0);
    CHECK(g3.arch.window[5] == 0);  // every 6th layer is global
    const Model moe = catalog("qwen3-30b-a3b");
    CHECK(moe.arch.n_expert == 128);
    CHECK(moe.arch.n_expert_used == 8);
    const Model gpt2 = catalog("gpt2");
    CHECK(gpt2.arch.norm == NormKind::layernorm);
    CHECK(gpt2.arch.position == PositionKind::learned);
    CHECK(gpt2.arch.mlp == MlpKind::plain);
}

TEST_CASE("bad configs are clear errors") {
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "bert"})", "c.json"),
                         doctest::Contains("model_type 'bert' is not supported; supported: llama"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": 100, "intermediate_size": 10,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "vocab_size": 10})", "c.json"),
                         doctest::Contains("num_key_value_heads (3) must divide num_attention_heads (8)"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": 100, "intermediate_size": 10,
        "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 10})", "c.json"),
                         doctest::Contains("head_dim must be a whole number"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama", "hidden_size": "big"})", "c.json"),
                         doctest::Contains("'hidden_size' must be a number"), InvalidArgument);
    CHECK_THROWS_AS(Model::from_hf_config("[]", "c.json"), InvalidArgument);
}

TEST_CASE("glm4_moe: GLM-4.5-Air's dense first layer, shared expert, router bias and q/k/v biases") {
    const Model air = catalog("glm-4.5-air");
    // per layer: attention 4096·12288·2 + 4096·1024·2 + biases 14,336; the dense layer 3·4096·10944; a MoE layer 128
    // routed and one shared expert 3·4096·1408 each, the router 4096·128 and its 128 correction biases; two
    // 151552-row embeddings; RMSNorm weights 2·4096 per layer and the final one
    const double attn = 2 * 4096.0 * 12288 + 2 * 4096.0 * 1024 + 12288 + 2 * 1024;
    const double dense = 3 * 4096.0 * 10944, moe = 129 * 3 * 4096.0 * 1408 + 4096.0 * 128 + 128;
    CHECK(air.parameters() == 46 * attn + dense + 45 * moe + 2 * 151552.0 * 4096 + 46 * 2 * 4096.0 + 4096);
    CHECK(air.parameters() == 106852251264.0);  // the model card's "106B total"
    CHECK_FALSE(air.arch.moe_layer[0]);
    for (int l = 1; l < 46; ++l) CHECK(air.arch.moe_layer[static_cast<std::size_t>(l)]);
    CHECK(air.arch.qkv_bias);
    CHECK_FALSE(air.arch.o_bias);
    CHECK_FALSE(air.arch.qk_norm);  // use_qk_norm false
    CHECK(air.arch.gguf_arch == "glm4moe");
}

TEST_CASE("deepseek_v3 and llama4_text: parameter counts and layer patterns") {
    // NOTES of the model_db entries: computed from the configs (the MTP layer of DeepSeek is not the main model)
    const Model ds = catalog("deepseek-r1");
    CHECK(ds.parameters() == 671026419200.0);
    CHECK(ds.arch.mla());
    CHECK(ds.arch.head_dim == 192);  // qk_nope 128 + qk_rope 64
    CHECK(ds.arch.kv_lora_rank == 512);
    CHECK(ds.arch.v_head_dim == 128);
    CHECK(ds.arch.n_shared_expert == 1);
    CHECK(ds.arch.shared_ffn == 2048);
    for (int l = 0; l < 61; ++l) CHECK(ds.arch.moe_layer[static_cast<std::size_t>(l)] == (l >= 3));  // first_k_dense_replace
    double attention = 0;  // 187,107,328 per layer (NOTES), its norms included
    for (const WeightTensor& w : ds.tensors)
        if (w.layer == 5 && w.role.rfind("attn_", 0) == 0 && w.role != "attn_norm") attention += w.elements();
    CHECK(attention == 187107328.0);

    const Model scout = catalog("llama-4-scout"), maverick = catalog("llama-4-maverick");
    CHECK(scout.parameters() == 107769861120.0);
    CHECK(maverick.parameters() == 400711848960.0);
    for (int l = 0; l < 48; ++l) {
        const auto li = static_cast<std::size_t>(l);
        CAPTURE(l);
        CHECK(scout.arch.moe_layer[li]);                   // interleave_moe_layer_step 1
        CHECK(maverick.arch.moe_layer[li] == (l % 2 == 1)); // step 2: the odd layers
        const bool global = l % 4 == 3;                    // no_rope_layer_interval 4
        CHECK(scout.arch.nope_layer[li] == global);
        CHECK(scout.arch.window[li] == (global ? 0 : 8192));
    }
    CHECK(maverick.arch.ffn == 16384);  // intermediate_size_mlp: the dense layers
    CHECK(maverick.arch.expert_ffn == 8192);
    CHECK(maverick.arch.shared_ffn == 8192);
    // deepseek-v3 is an alias of deepseek-r1 in the catalogue
    CHECK(roofline::test::model_db_file("deepseek-r1").find("\"deepseek-v3\"") != std::string::npos);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 0, "v_head_dim": 8})", "c.json"),
                         doctest::Contains("qk_rope_head_dim and v_head_dim must be >= 1"), InvalidArgument);
    CHECK_THROWS_WITH_AS(Model::from_hf_config(R"({"model_type": "llama4_text", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 1,
        "no_rope_layers": [1, 1, 0]})", "c.json"),
                         doctest::Contains("'no_rope_layers' must list one 0 or 1 per layer (2), got 3"), InvalidArgument);
}
