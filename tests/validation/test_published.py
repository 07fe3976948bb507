"""The estimator against published measurements (CSV files beside this test, each row with its source).

Tolerances are the ones each table states: the seed's llama-bench runs on an M4 Pro within 5 % (tg) and 10 % (pp),
gpt-fast's A100 runs within 15 %; the held-out table (gpt-fast's other README rows, used to choose nothing) within
20 %, a guard against regressions. Points the model does not reach go in KNOWN_MISSES with the reason, and the test
checks they stay misses of that sign and size (so an improvement shows up as a test to update).
"""
import pytest

import rooflinepy as rp
from rooflinepy import validation

RESULTS = validation.run()
POINTS = RESULTS[RESULTS.tolerance > 0]  # the point tables: each row held to its own tolerance

# (table, model, quant, tp) -> (reason, lower, upper bound of the relative error we currently get)
KNOWN_MISSES = {
    ("gpt_fast_a100_heldout", "llama-2-70b", "int4-g32", 8): (
        "tensor parallel 8: each rank's int4 GEMVs read ~1-5 MB, so their time is mostly fixed cost; the fixed cost "
        "per kernel is fitted on gpt_fast_a100's TP1-8 bf16/int8/int4 points and the held-out int4 TP8 point wants "
        "more (e188784: +16.7 %)", 0.17, 0.23),
}


def _key(r):
    return (r.table, r.model, r.quant, r.tp)


@pytest.mark.parametrize("row", list(POINTS.itertuples()), ids=lambda r: f"{r.table}-{r.model}-{r.quant}-{r.test}-tp{r.tp}")
def test_point_within_its_tolerance(row):
    if _key(row) in KNOWN_MISSES:
        reason, lo, hi = KNOWN_MISSES[_key(row)]
        assert lo <= row.error <= hi, f"known miss moved ({reason}): error {row.error:+.3f}"
        pytest.xfail(f"{row.error:+.1%} outside ±{row.tolerance:.0%}: {reason}")
    assert abs(row.error) <= row.tolerance, f"{row.model} {row.quant} {row.test}: {row.error:+.1%} vs ±{row.tolerance:.0%}"


# Targets of the calibration corpus (issue 13), MAPE in percent per (table, phase): leave-one-device-out (each
# device's points predicted by defaults fitted without it) and in-sample. Apple also leave-one-generation-out.
CORPUS_TARGETS = {
    ("llamacpp_metal_llama2_7b", "decode"): {"lodo": 6, "in_sample": 5, "logo": 8},
    ("llamacpp_metal_llama2_7b", "prefill"): {"lodo": 10, "in_sample": 5, "logo": 10},
    ("llamacpp_cuda_llama2_7b_q4_0", "decode"): {"lodo": 8, "in_sample": 8},  # 2.3 and 2.1 %
    # 7.6 / 9.0 % since the activations a kernel hands the next stay in an L2 that holds them (9.4 / 10.9 % before:
    # the RTX 4090's norms and pointwise maps at DRAM speed; 10.2 % before MMQ's instructions were counted per
    # architecture). What the remaining spread per GPU points to: tests/validation/README.md, "CUDA prefill".
    ("llamacpp_cuda_llama2_7b_q4_0", "prefill"): {"lodo": 15, "in_sample": 8},
}


@pytest.fixture(scope="module")
def cross_validation():
    rows = []
    for fit in validation.fits():
        for s in validation.cross_validation_summary(validation.cross_validate(fit)):
            rows.append(s)
    return {(s["table"], s["phase"]): s for s in rows}


@pytest.mark.parametrize("key", list(CORPUS_TARGETS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_corpus_cross_validation_meets_its_targets(cross_validation, key):
    s = cross_validation[key]
    for kind, target in CORPUS_TARGETS[key].items():
        assert s[kind] <= target, f"{key} {kind}: {s[kind]:.1f} % > {target} %"
    # the committed defaults are the in-sample fit (calibration/fit_defaults.py --check holds them to 0.5 %)
    assert s["defaults"] == pytest.approx(s["in_sample"], abs=0.3)
    # and the model beats the pure roofline by far; CUDA prefill, whose roofline is closest (9.0 against 18.1 % out
    # of sample: attention on fp16 tensor cores and stream-K tiles in both), by a third
    assert s["lodo"] < s["roofline"] * (0.7 if key == ("llamacpp_cuda_llama2_7b_q4_0", "prefill") else 0.6)


def test_one_shot_calibration_predicts_the_other_quantizations_within_3_percent():
    """One tg128 measurement at Q8_0 per chip (calibrate_from_measurements) → that chip's F16 and Q4_0 tg128:
    MAPE <= 3 % over the Metal corpus (issue 13's target); 2.5 % today."""
    one = validation.one_shot_calibration()
    assert len(one) >= 40
    assert (one["error"].abs().mean()) <= 0.03
    assert one["error"].abs().max() < 0.10


def test_estimator_beats_the_pure_roofline_on_every_table():
    for table, s in validation.mape(RESULTS).items():
        assert s["estimator"] < s["roofline"], table


def test_pure_roofline_overestimates_decode():
    decode = RESULTS[RESULTS.test.str.startswith("tg")]
    assert (decode.roofline_error > 0).all()


def test_seed_ceilings_bandwidth_over_size():
    """Seed: M4 Pro (273 GB/s) ceilings 34 / 64 / 109 tokens/s for Qwen3-4B BF16 / Q8_0 / Q4_K_M.

    The seed divides by llama-bench's file sizes (8.05 / 4.28 / 2.50 GB), which include ~7 MB of GGUF metadata
    (the 152k-token vocabulary); the library divides by the tensor bytes it computes, 8.045 / 4.274 / 2.491 GB,
    so its Q4_K_M ceiling is 109.6: within 0.6 % of the seed's, all three within 1 %.
    """
    for quant, seed in (("BF16", 34), ("Q8_0", 64), ("Q4_K_M", 109)):
        e = rp.estimate(model="qwen3-4b", quant=quant, device="m4-pro", prompt_tokens=0, gen_tokens=128)
        assert e.ceilings["decode_weights_tokens_per_s"] == pytest.approx(seed, rel=0.01)
    assert round(rp.estimate(model="qwen3-4b", quant="BF16", device="m4-pro", prompt_tokens=0,
                             gen_tokens=1).ceilings["decode_weights_tokens_per_s"]) == 34


def test_seed_measured_fractions_of_the_ceilings():
    """The seed's 88 / 82 / 73 % of the ceilings: explained by one achievable bandwidth plus a fixed per-token
    kernel cost, which weighs more the fewer bytes a token reads."""
    fractions = []
    for quant, measured in (("BF16", 29.9), ("Q8_0", 52.5), ("Q4_K_M", 79.7)):
        e = rp.estimate(model="qwen3-4b", quant=quant, device="m4-pro", prompt_tokens=0, gen_tokens=128)
        fractions.append(e.decode_tokens_per_s / e.ceilings["decode_weights_tokens_per_s"])
        assert measured / e.ceilings["decode_weights_tokens_per_s"] == pytest.approx(
            {"BF16": 0.88, "Q8_0": 0.82, "Q4_K_M": 0.73}[quant], abs=0.01)
    assert fractions[0] > fractions[1] > fractions[2]


def test_seed_prefill_does_not_speed_up_with_quantization():
    """pp512 is compute-bound: quantized weights save bytes, not FLOPs, and cost dequantization."""
    pp = {q: rp.estimate(model="qwen3-4b", quant=q, device="m4-pro", prompt_tokens=512, gen_tokens=0)
          for q in ("BF16", "Q4_K_M")}
    assert pp["BF16"].prefill_bound == "compute"
    assert pp["Q4_K_M"].prefill_tokens_per_s < pp["BF16"].prefill_tokens_per_s
    assert pp["Q4_K_M"].prefill_tokens_per_s / pp["BF16"].prefill_tokens_per_s == pytest.approx(839.5 / 886.5, abs=0.04)


def test_flash_attention_paper_gpt2_medium_speedup():
    """FlashAttention (Dao et al. 2022), Fig. 1: GPT-2 medium attention (seq 1024, head dim 64, 16 heads, batch 64,
    forward + backward, causal) runs 7.6x faster with flash attention on an A100. Held within 30 %."""
    a100 = rp.device("a100-sxm-40gb")
    kw = dict(head_dim=64, dtype="fp16", backward=True, causal=True)
    std = a100.time(rp.ops.attention(64, 16, 1024, kind="standard", **kw))
    fl = a100.time(rp.ops.attention(64, 16, 1024, kind="flash", device=a100, **kw))
    assert std.seconds / fl.seconds == pytest.approx(7.6, rel=0.30)
    assert std.bound == "memory:dram"


def test_seed_flash_attention_at_2048_helps_prefill_more_than_decode_costs():
    """The seed saw prefill +4 % and decode +7 % with flash attention on at a 2048-token prompt. The model gives
    both signs right; it attributes the decode gain to not writing and re-reading the score rows."""
    kw = dict(model="qwen3-4b", quant="Q4_K_M", device="m4-pro", prompt_tokens=2048, gen_tokens=128)
    off, on = rp.estimate(flash_attention=False, **kw), rp.estimate(flash_attention=True, **kw)
    assert on.prefill_tokens_per_s > off.prefill_tokens_per_s
    assert on.decode_tokens_per_s > off.decode_tokens_per_s
    assert on.prefill_tokens_per_s / off.prefill_tokens_per_s - 1 == pytest.approx(0.04, abs=0.05)


def test_gpt_fast_bandwidth_falls_with_quantization_as_its_readme_reports():
    """gpt-fast's README gives the bandwidth each run achieved (model bytes x tokens/s): Llama-2-7B 1397 GB/s in bf16,
    1069 in int8, 863 in int4 (g32); Llama-2-70B 1323 in int8, 1098 in int4. Its kernels convert each weight before
    its multiply-add (engine "gpt-fast": dequantization not overlapped with the loads). At 70B, where the fixed
    per-token cost no longer matters, that is what lowers int4 below int8: an engine that hides dequantization under
    the loads ("cuda-graphs") keeps int4 within a few percent of int8's bandwidth."""
    readme = {("llama-2-7b", "bf16"): 1397.31, ("llama-2-7b", "int8-wo"): 1069.20, ("llama-2-7b", "int4-g32"): 862.69,
              ("llama-2-70b", "int8-wo"): 1322.58, ("llama-2-70b", "int4-g32"): 1097.66}

    def achieved(engine, model, quant):
        e = rp.estimate(model=model, quant=quant, device="a100-sxm-80gb", prompt_tokens=5, gen_tokens=200,
                        engine=engine, flash_attention=True)
        return e.weight_bytes * e.decode_tokens_per_s / 1e9

    for model, quant, base in (("llama-2-7b", "int8-wo", "bf16"), ("llama-2-7b", "int4-g32", "bf16"),
                               ("llama-2-70b", "int4-g32", "int8-wo")):
        ours = achieved("gpt-fast", model, quant) / achieved("gpt-fast", model, base)
        assert ours == pytest.approx(readme[model, quant] / readme[model, base], rel=0.10), (model, quant)
    hidden = achieved("cuda-graphs", "llama-2-70b", "int4-g32") / achieved("cuda-graphs", "llama-2-70b", "int8-wo")
    assert hidden > 1.1 * readme["llama-2-70b", "int4-g32"] / readme["llama-2-70b", "int8-wo"]
