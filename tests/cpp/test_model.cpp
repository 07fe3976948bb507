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
