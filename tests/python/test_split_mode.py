"""Several devices for one copy of a model: llama.cpp's layer split (its default) against tensor parallelism."""
import json
import math

import pandas as pd
import pytest

import rooflinepy as rp
from rooflinepy.cli import main


def test_engines_list_their_split_modes_default_first():
    cuda = rp.engine("llama.cpp").backend("cuda")
    assert cuda.split_modes == ["layer", "tensor"]
    assert cuda.prefill_batch_tokens == 2048
    assert cuda.layer_handoff_latency_s == pytest.approx(15e-6)
    assert cuda.layer_split_kernel_fixed_cost_add == pytest.approx(0.47)
    assert rp.engine("llama.cpp").backend("vulkan").layer_split_kernel_fixed_cost_add == 0
    assert rp.engine("vllm").backend("cuda").split_modes == ["tensor"]
    assert "split_modes" in rp.engine("llama.cpp").backend("cuda").sources


def test_llama_cpp_splits_by_layers_at_about_one_devices_speed():
    one = rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", gen_tokens=128)
    two = rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", gen_tokens=128, tensor_parallel=2)
    tensor = rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", gen_tokens=128, tensor_parallel=2, split_mode="tensor")
    assert (one.split_mode, two.split_mode, tensor.split_mode) == ("none", "layer", "tensor")
    # in turn, not side by side: no faster than one device (hand-offs and launches without graph replay cost more) ...
    assert 0.8 * one.decode_tokens_per_s < two.decode_tokens_per_s < one.decode_tokens_per_s
    assert tensor.decode_tokens_per_s > 1.3 * two.decode_tokens_per_s
    # ... and the weights read per token are all of them, one device after the other
    assert two.ceiling_decode_weights == pytest.approx(one.ceiling_decode_weights, rel=1e-12)
    # each device holds half the layers and their KV cache
    assert two.memory_kv_cache == pytest.approx(one.memory_kv_cache / 2, rel=1e-12)
    assert two.memory_weights < 0.6 * one.memory_weights
    assert two.to_dict()["split_mode"] == "layer"
    assert "layer split" in two._repr_html_()


def test_a_70b_model_that_one_card_cannot_hold_runs_on_two_by_layers():
    one = rp.estimate("llama-3.1-70b", "Q4_K_M", "rtx-3090")
    two = rp.estimate("llama-3.1-70b", "Q4_K_M", "rtx-3090", tensor_parallel=2)
    assert not one.fits and two.fits
    # the decode of two cards by layers is what one card with the memory of both would do, less the split's costs
    assert two.decode_tokens_per_s == pytest.approx(one.decode_tokens_per_s, rel=0.12)
    assert two.decode_tokens_per_s < one.decode_tokens_per_s


def test_a_long_prompt_is_pipelined_over_the_devices_a_short_one_is_not():
    def pp(n, tp):
        return rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-4090", prompt_tokens=n, gen_tokens=0,
                           tensor_parallel=tp).prefill_tokens_per_s
    assert pp(512, 2) == pytest.approx(pp(512, 1), rel=0.03)  # one micro-batch: the devices in turn
    assert pp(2048, 2) > 1.4 * pp(2048, 1)  # four micro-batches overlapped: (4 + 1) / 8 of the time in turn
    assert pp(2048, 4) > pp(2048, 2)


def test_split_mode_errors_name_the_input_and_what_is_allowed():
    with pytest.raises(ValueError, match=r'does not split a model by "layer"; it splits by "tensor"'):
        rp.estimate("llama-3.1-8b", "bf16", "h100-sxm", engine="vllm", tensor_parallel=2, split_mode="layer")
    with pytest.raises(ValueError, match=r'split_mode must be "layer", "tensor" or "none"'):
        rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", tensor_parallel=2, split_mode="row")
    with pytest.raises(ValueError, match="tensor_parallel is 2"):
        rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", tensor_parallel=2, split_mode="none")
    with pytest.raises(TypeError, match="split_mode must be a str"):
        rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", tensor_parallel=2, split_mode=2)
    with pytest.raises(ValueError, match="needs an interconnect"):
        rp.estimate("llama-3.1-8b", "Q4_K_M", "m4-max-40c", tensor_parallel=2)


def test_cli_split_mode(capsys):
    assert main(["estimate", "-m", "llama-3.1-8b", "-q", "Q4_K_M", "-dev", "rtx-3090", "-tp", "2", "-n", "128"]) == 0
    out, _ = capsys.readouterr()
    assert "2 devices, layer split" in out
    assert main(["estimate", "-m", "llama-3.1-8b", "-q", "Q4_K_M", "-dev", "rtx-3090", "-tp", "2", "-sm", "tensor",
                 "--json"]) == 0
    out, _ = capsys.readouterr()
    assert {row["split_mode"] for row in json.loads(out)} == {"tensor"}
    with pytest.raises(SystemExit):
        main(["estimate", "-m", "llama-3.1-8b", "-dev", "rtx-3090", "-tp", "2", "-sm", "row"])


def test_sweep_splits_as_estimate_does_and_says_which_split_ran():
    kw = dict(models=["llama-3.1-8b"], quants=["Q4_K_M"], devices=["rtx-3090"], gen_tokens=128)
    df = rp.sweep(tensor_parallel=[1, 2], **kw)
    assert list(df.split_mode) == ["none", "layer"]
    for mode in (None, "layer", "tensor"):
        row = rp.sweep(tensor_parallel=2, split_mode=mode, **kw).iloc[0]
        e = rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-3090", gen_tokens=128, tensor_parallel=2, split_mode=mode)
        assert row.split_mode == e.split_mode
        assert row.decode_tokens_per_s == e.decode_tokens_per_s and row.prefill_tokens_per_s == e.prefill_tokens_per_s
        assert row.memory_total == e.memory_total
    pts = rp.sweep(points=[dict(model="llama-3.1-8b", quant="Q4_K_M", device="rtx-3090", batch=1, prompt_tokens=512,
                                gen_tokens=128, tensor_parallel=2)], split_mode="tensor")
    assert list(pts.split_mode) == ["tensor"]
    chunks = list(rp.sweep_chunks(tensor_parallel=[1, 2], split_mode="tensor", chunk_rows=1, **kw))
    assert [c.split_mode.iloc[0] for c in chunks] == ["none", "tensor"]


def test_sweep_compares_splits_as_an_axis():
    """split_mode as a list is an axis nested inside tensor_parallel: each row as rp.estimate gives it, the same
    rows whole, in chunks and as points carrying their own split_mode."""
    kw = dict(models=["llama-3.1-70b"], quants=["Q4_K_M"], devices=["rtx-3090"], gen_tokens=128, tensor_parallel=[1, 2])
    df = rp.sweep(split_mode=["layer", "tensor", None], **kw)
    assert list(df.tensor_parallel) == [1, 1, 1, 2, 2, 2]
    assert list(df.split_mode) == ["none"] * 3 + ["layer", "tensor", "layer"]  # None: llama.cpp's default
    for row in df.itertuples():
        mode = None if row.tensor_parallel == 1 else str(row.split_mode)
        e = rp.estimate("llama-3.1-70b", "Q4_K_M", "rtx-3090", gen_tokens=128, tensor_parallel=row.tensor_parallel,
                        split_mode=mode)
        assert row.decode_tokens_per_s == e.decode_tokens_per_s and row.memory_total == e.memory_total
    # tensor parallelism reads half the weights per card; the layer split one card's worth in turn
    assert df.decode_tokens_per_s[4] > 1.6 * df.decode_tokens_per_s[3]
    chunks = pd.concat(rp.sweep_chunks(split_mode=["layer", "tensor", None], chunk_rows=2, **kw), ignore_index=True)
    pd.testing.assert_frame_equal(chunks, df, check_categorical=False)
    pts = [dict(model="llama-3.1-70b", quant="Q4_K_M", device="rtx-3090", batch=1, prompt_tokens=512, gen_tokens=128,
                tensor_parallel=2, split_mode=m) for m in ("tensor", None, "layer")]
    by_points = rp.sweep(points=pts)
    assert list(by_points.split_mode) == ["tensor", "layer", "layer"]
    assert list(by_points.decode_tokens_per_s) == [df.decode_tokens_per_s[4], df.decode_tokens_per_s[3],
                                                   df.decode_tokens_per_s[3]]
    assert list(rp.sweep(points=pts[1:2], split_mode="tensor").split_mode) == ["layer"]  # the column wins
    assert list(rp.sweep(points=[{k: v for k, v in pts[0].items() if k != "split_mode"}],
                         split_mode="tensor").split_mode) == ["tensor"]  # the argument is the column's default
    with pytest.raises(ValueError, match="with points=, split_mode is one value"):
        rp.sweep(points=pts, split_mode=["layer", "tensor"])
    with pytest.raises(ValueError, match=r"split_mode rows: split_mode must be \"layer\", \"tensor\""):
        rp.sweep(split_mode=["layer", "rows"], **kw)


def test_sweep_split_errors_are_clear_or_skipped():
    kw = dict(models=["llama-3.1-8b"], quants=["bf16"], devices=["h100-sxm"], engine=["llama.cpp", "vllm"],
              tensor_parallel=2, split_mode="layer")
    with pytest.raises(ValueError, match=r"engine 'vllm'.*does not split a model by \"layer\""):
        rp.sweep(**kw)
    df = rp.sweep(skip_invalid=True, **kw)
    assert list(df.engine) == ["llama.cpp"] and list(df.split_mode) == ["layer"]
    assert any("split_mode layer" in s and "vllm" in s for s in df.attrs["skipped"])
    with pytest.raises(TypeError, match="split_mode must be a str"):
        rp.sweep(models=["llama-3.1-8b"], quants=["Q4_K_M"], devices=["rtx-3090"], split_mode=1)


def test_cli_sweep_split_mode(capsys):
    assert main(["sweep", "-m", "llama-3.1-8b", "-q", "Q4_K_M", "-d", "rtx-3090", "-tp", "1,2", "-sm", "tensor"]) == 0
    out, _ = capsys.readouterr()
    assert "split_mode" in out and "tensor" in out
    assert main(["sweep", "-m", "llama-3.1-8b", "-q", "Q4_K_M", "-d", "rtx-3090", "-tp", "2", "-sm", "layer,tensor",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr()[0])
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert [r["split_mode"] for r in rows] == ["layer", "tensor"]


def test_the_interval_widens_beyond_the_devices_the_corpus_measured():
    """llama.cpp's CUDA corpus is one GPU per copy (prediction_interval max_devices 1): two GPUs by layers or
    tensors are one thing more it does not cover, widened once more; gpt-fast's table runs up to 8 (max_devices 8)."""
    def width(e):
        lo, hi = e.decode_tokens_per_s_interval
        return math.log(hi / lo)
    kw = dict(model="llama-2-7b", quant="Q4_0", device="rtx-3090", gen_tokens=128)
    one, two = rp.estimate(**kw), rp.estimate(tensor_parallel=2, **kw)
    assert width(two) == pytest.approx(2 * width(one), rel=1e-9)
    g = dict(model="llama-2-7b", quant="bf16", device="a100-sxm-80gb", engine="gpt-fast", gen_tokens=128)
    assert width(rp.estimate(tensor_parallel=8, **g)) == pytest.approx(width(rp.estimate(**g)), rel=1e-9)


def test_max_batch_splits_as_estimate_does():
    layer = rp.max_batch("llama-3.1-70b", "Q4_K_M", "rtx-3090", tensor_parallel=2)
    tensor = rp.max_batch("llama-3.1-70b", "Q4_K_M", "rtx-3090", tensor_parallel=2, split_mode="tensor")
    assert layer.feasible and tensor.feasible
    assert (layer.at["split_mode"], tensor.at["split_mode"]) == ("layer", "tensor")
    e = rp.estimate("llama-3.1-70b", "Q4_K_M", "rtx-3090", batch=layer.batch, tensor_parallel=2)
    assert e.fits and layer.at["memory_total"] == e.memory_total
    with pytest.raises(ValueError, match='engine \'vllm\' serves a deployment split by "tensor"'):
        rp.max_batch("llama-3.1-8b", "bf16", "h100-sxm", tpot_ms=50, engine="vllm", tensor_parallel=2,
                     split_mode="layer")


def test_cheapest_splits_as_asked_and_says_which_split_each_deployment_ran():
    kw = dict(model="llama-3.1-70b", quant="Q4_K_M", target_tokens_per_s=20, devices=["rtx-3090"],
              price_per_hour={"rtx-3090": 0.3}, counts=[1, 2, 4])
    by = {m: rp.cheapest(split_mode=m, **kw).set_index("count") for m in (None, "layer", "tensor")}
    assert list(by[None].columns[:3]) == ["device", "split_mode", "quant"]
    assert by[None].split_mode.to_dict() == {1: "none", 2: "layer", 4: "layer"}  # llama.cpp's default
    assert by["tensor"].split_mode.to_dict() == {1: "none", 2: "tensor", 4: "tensor"}
    # one copy on two cards: by layers about one card's speed, by tensor parallelism nearly twice it
    layer, tensor = by["layer"].loc[2], by["tensor"].loc[2]
    assert tensor.capacity_tokens_per_s > 1.5 * layer.capacity_tokens_per_s
    pd.testing.assert_frame_equal(by[None], by["layer"])
    with pytest.raises(ValueError, match=r"engine 'vllm' serves a deployment split by \"tensor\""):
        rp.cheapest(model="llama-3.1-8b", quant="bf16", target_tokens_per_s=100, devices=["h100-sxm"],
                    price_per_hour={"h100-sxm": 2.0}, engine="vllm", split_mode="layer")
    with pytest.raises(TypeError, match="split_mode must be a str"):
        rp.cheapest(split_mode=2, **kw)
