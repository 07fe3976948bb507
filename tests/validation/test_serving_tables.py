"""The serving model against TensorRT-LLM's published tables (tests/validation/serving.json says how they are read).

Issue 14's targets: in-sample MAPE <= 15 % on each table, leave-one-GPU-out <= 20 %. Both tables meet them: the
max-throughput table (12.5 / 13.5 %) and the 2023 table as a whole (v0.6.1, engine trt-llm-0.6, 29 rows: 15.0 %).
Within the 2023 table, its static batches are 12.6 % (13.6 % once its masked MHA's instructions per multiply-add
are counted, 12.4 % with NCCL's all-reduce latency, 12.3 % with the L40S's and A100's own fixed time per kernel,
12.6 % with activations kept in L2 between kernels where they fit) and its batch-1 first-token rows (v0.5) 19.3 %,
every row but one faster than measured (the H100 rows by 13-41 %): they are held to 15 % as a table of their own
would be, which they miss, and their guard is set just above. They were 16.1 % before the L2 hand-off between
kernels: at one sequence of 128-2048 tokens the norms, RoPE and residual adds fit in L2 (on the L40S, whose DRAM is
slow for its tensor cores, the 2048-token row went from -9 % to -25 %), while what these rows miss, a fixed cost of
the 2023 first-token path that the 128-token rows show as much as the 2048-token ones, is not modelled.
"""
import pytest

import rooflinepy as rp
from rooflinepy import _core, validation
from rooflinepy.inference import _device, _lookup_model

# (table, kind) -> (in-sample, leave-one-GPU-out) MAPE bounds, percent
TARGETS = {
    ("trtllm_max_throughput_dense", "serving"): (15, 20),
    ("trtllm_v061_static_batch", "static"): (15, 20),
    ("trtllm_v061_static_batch", "ttft"): (20, 20),  # 15 as a table of its own: missed, see the module docstring
    ("trtllm_v061_static_batch", "all"): (15, 20),  # the table as a whole, the issue's target
}


@pytest.fixture(scope="module")
def summary():
    cv = validation.serving_cross_validate()
    return {(s["table"], s["kind"]): s for s in validation.serving_summary(cv)}


@pytest.mark.parametrize("key", list(TARGETS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_serving_tables_within_their_bounds_and_better_than_the_roofline(summary, key):
    s = summary[key]
    in_sample, held_out = TARGETS[key]
    assert s["in_sample"] <= in_sample, s
    assert s["leave_one_gpu_out"] <= held_out, s
    assert s["defaults"] < s["roofline"], s


def test_each_table_is_predicted_with_the_engine_of_its_release():
    spec = validation.serving_spec()
    engines = {s: e for s, e in validation._table_engines(spec).items()}
    assert engines == {"trtllm_max_throughput_dense": "trt-llm", "trtllm_v061_static_batch": "trt-llm-0.6"}
    pts = validation.serving_points()
    static = pts[pts["kind"] == "static"].head(3)
    got = validation.serving_predict(static)["predicted"].tolist()
    for p, g in zip(static.to_dict(orient="records"), got):  # the same numbers as a plan of trt-llm-0.6 itself
        m, d = _lookup_model(p["model"])._core, _device(p["device"])._core
        tp = _core.parse_parallelism(p["parallel"]).tensor
        plan = _core.EstimatePlan(m, d, p["quant"], p["kv_dtype"], True, "trt-llm-0.6", tp, 0.0, None)
        rates = _core.static_batch_rates(plan, p["batch"], p["prompt_tokens"], p["gen_tokens"])
        assert g == pytest.approx(rates["output_tokens_per_s_per_device"], rel=1e-12)


def test_trt_llm_0_6_reads_a_gqa_groups_cache_again_per_query_head():
    # Llama-2-70B (8 query heads per KV head) on an A100, a long static batch: 0.6.1's masked MHA is slower than a
    # kernel that shares the group's loads; Llama-2-7B (MHA) differs only by the all-reduce, not at TP1
    kw = dict(batch=64, prompt_tokens=2048, gen_tokens=512, tensor_parallel=4, kv_dtype="f16")
    old = rp.estimate("llama-2-70b", "fp16", "a100-sxm-80gb", engine="trt-llm-0.6", **kw).decode_s
    new = rp.estimate("llama-2-70b", "fp16", "a100-sxm-80gb", engine="trt-llm", **kw).decode_s
    assert old > 1.1 * new
    kw["tensor_parallel"] = 1
    old7 = rp.estimate("llama-2-7b", "fp16", "a100-sxm-80gb", engine="trt-llm-0.6", **kw).decode_s
    new7 = rp.estimate("llama-2-7b", "fp16", "a100-sxm-80gb", engine="trt-llm", **kw).decode_s
    assert old7 == pytest.approx(new7, rel=1e-12)
    with pytest.raises(ValueError, match="does not run weights in nvfp4; it runs: fp16"):
        rp.estimate("llama-2-7b", "nvfp4", "b200", engine="trt-llm-0.6")


def test_trt_llm_0_6_issues_its_masked_mha_instructions_per_query_head():
    # 5.3 thread instructions per multiply-add (its SASS): a GQA group of 8 is bound by issue, not by its loads;
    # plain multi-head attention stays bound by its loads
    eng = rp.engine("trt-llm-0.6").backend("any")
    assert eng.decode_attention_alu_ops_per_mac == pytest.approx(5.3)
    assert rp.engine("trt-llm").backend("any").decode_attention_alu_ops_per_mac == 0
    h100 = rp.device("h100-sxm")
    gqa = rp.ops.decode_attention(480 // 4, 64 // 4, 8 // 4, 1100, 128, "fp16", kv_dtype="fp8", per_query_head=True,
                                  alu_ops_per_mac=5.3)
    mha = rp.ops.decode_attention(112, 32, 32, 1100, 128, "fp16", kv_dtype="fp8", per_query_head=True,
                                  alu_ops_per_mac=5.3)
    assert h100.time(gqa).bound == "compute"
    assert h100.time(mha).bound == "memory:dram"
