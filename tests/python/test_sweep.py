"""Sweeps, inverse queries and the Pareto front: rows equal rp.estimate exactly, thread counts change nothing,
inverse answers hold at the answer and fail one step beyond."""
import json
import math

import numpy as np
import pandas as pd
import pytest

import rooflinepy as rp
from rooflinepy.cli import main

FIELDS = ["parameters", "weight_bytes", "bits_per_weight", "batch", "prompt_tokens", "gen_tokens", "tensor_parallel",
          "prefill_s", "prefill_tokens_per_s", "ttft_s", "decode_s", "decode_tokens_per_s", "decode_tokens_per_s_total",
          "total_s", "prefill_bound", "decode_bound", "decode_intensity", "compute_bound_batch", "max_batch",
          "max_context"]


def same(a, b):
    """Equal bit for bit (for floats: the same double)."""
    if isinstance(a, float) or isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    return a == b


def assert_row_is_estimate(row):
    e = rp.estimate(model=row["model"], quant=row["quant"], device=row["device"], batch=row["batch"],
                    prompt_tokens=row["prompt_tokens"], gen_tokens=row["gen_tokens"], kv_dtype=row["kv_dtype"],
                    flash_attention=bool(row["flash_attention"]), engine=row["engine"],
                    tensor_parallel=int(row["tensor_parallel"]))
    for f in FIELDS:
        assert same(getattr(e, f), row[f]), (f, getattr(e, f), row[f])
    for k in ("weights", "kv_cache", "activations", "overhead", "total", "capacity"):
        assert same(e.memory[k], row["memory_" + k]), k
    assert e.fits == bool(row["fits"])
    assert same(e.ceilings["decode_weights_tokens_per_s"], row["ceiling_decode_weights"])
    assert same(e.ceilings["decode_tokens_per_s"], row["ceiling_decode"])
    assert same(e.ceilings["prefill_tokens_per_s"], row["ceiling_prefill"])
    assert e.model == row["model"] and e.device == row["device"] and e.quant == row["quant"]
    assert e.engine == row["engine"]


@pytest.fixture(scope="module")
def small():
    return rp.sweep(models=["llama-3.1-8b", "gemma-3-4b", "qwen3-30b-a3b"], quants=["Q4_K_M", "BF16"],
                    devices=["h100-sxm", "m4-pro"], batch=[1, 8, 9, 40], prompt_tokens=[0, 1, 2048],
                    gen_tokens=[1, 256], kv_dtype=["f16", "q8_0"], flash_attention=[False, True],
                    engine=["llama.cpp", "generic"], threads=1, skip_invalid=True)


def test_sweep_shape_order_and_columns(small):
    # generic (eager PyTorch) does not run GGUF's Q4_K_M: its 24 configurations are left out, each with why
    assert len(small) == (3 * 2 * 2 * 2 * 2 * 2 - 24) * 3 * 2 * 4
    assert small.attrs["plans"] == 72 and len(small.attrs["skipped"]) == 24
    assert all("engine 'generic' does not run weights in" in s and "it runs:" in s for s in small.attrs["skipped"])
    assert list(small.columns[:7]) == ["model", "quant", "device", "engine", "kv_dtype", "flash_attention",
                                       "tensor_parallel"]
    for f in FIELDS + ["fits", "memory_total", "ceiling_decode"]:
        assert f in small.columns
    assert small["model"].dtype == "category" and small["decode_bound"].dtype == "category"
    assert small["device"].cat.categories.tolist() == ["h100-sxm", "m4-pro-20c"]  # aliases resolve to ids
    # nested loops, batch fastest
    assert small["batch"].tolist()[:5] == [1, 8, 9, 40, 1]
    assert small["gen_tokens"].tolist()[:5] == [1, 1, 1, 1, 256]
    assert small["model"].iloc[-1] == "qwen3-30b-a3b"
    assert np.isfinite(small.select_dtypes("number").to_numpy()).all()


def test_sweep_rows_equal_single_estimates_exactly(small):
    for i in range(0, len(small), 23):
        assert_row_is_estimate(small.iloc[i])


def test_prompts_sharing_micro_batch_positions_equal_single_estimates_exactly():
    # the sweep keeps each micro-batch's attention across a configuration's prompts (the full 512-token micro-batches
    # of these prompts sit at the same positions; 1000 and 3000 end in partial ones; 8192 and 3000 are summed in
    # closed form, 1000 and 2048 one by one): every row still equals its own estimate, gemma-3's sliding windows
    # included, and with 16k tokens already cached
    df = rp.sweep(models=["llama-3.1-8b", "gemma-3-4b"], quants=["Q4_K_M"], devices=["h100-sxm", "m4-pro"],
                  batch=[1, 4], prompt_tokens=[1000, 2048, 3000, 8192], gen_tokens=[0, 64],
                  flash_attention=[False, True], context_tokens=[0, 16384], threads=1)
    assert len(df) == 2 * 2 * 2 * 2 * 4 * 2 * 2
    for i in range(0, len(df), 7):
        row = df.iloc[i]
        e = rp.estimate(model=row["model"], quant=row["quant"], device=row["device"], batch=row["batch"],
                        prompt_tokens=row["prompt_tokens"], gen_tokens=row["gen_tokens"],
                        flash_attention=bool(row["flash_attention"]), context_tokens=row["context_tokens"])
        for f in ("prefill_s", "decode_s", "ttft_s", "total_s", "ceiling_prefill"):
            assert same(getattr(e, f) if f != "ceiling_prefill" else e.ceilings["prefill_tokens_per_s"], row[f]), (f, i)


def test_thread_count_changes_nothing(small):
    kw = dict(models=["llama-3.1-8b", "gemma-3-4b", "qwen3-30b-a3b"], quants=["Q4_K_M", "BF16"],
              devices=["h100-sxm", "m4-pro"], batch=[1, 8, 9, 40], prompt_tokens=[0, 1, 2048], gen_tokens=[1, 256],
              kv_dtype=["f16", "q8_0"], flash_attention=[False, True], engine=["llama.cpp", "generic"],
              skip_invalid=True)
    for threads in (2, 3, 16, None):
        other = rp.sweep(**kw, threads=threads)
        pd.testing.assert_frame_equal(small, other, check_exact=True)


def test_plans_kept_between_sweeps_change_no_row(tmp_path):
    """A repeated sweep takes its plans from the core's plan cache (its models and devices pinned by their Python
    objects); the rows are those of a sweep that builds every plan, another device object is planned anew, and an
    object only the cache still holds is let go with its plans."""
    import gc

    from rooflinepy import _core

    kw = dict(models=["llama-3.1-8b", "qwen3-30b-a3b"], quants=["Q4_K_M", "Q8_0"], devices=["h100-sxm", "a100-sxm-80gb"],
              batch=[1, 8], prompt_tokens=[0, 700], gen_tokens=[1, 64], flash_attention=[False, True],
              kv_dtype=["f16", "q8_0"], tensor_parallel=[1, 2], threads=1)
    configurations = 2 * 2 * 2 * 2 * 2 * 2
    _core.sweep_plan_cache(clear=True)
    cold = rp.sweep(**kw)
    kept = _core.sweep_plan_cache()
    assert kept["plans"] == configurations and kept["pins"] == 4
    pd.testing.assert_frame_equal(cold, rp.sweep(**dict(kw, threads=2)), check_exact=True)
    warm = _core.sweep_plan_cache()
    assert warm["plans"] == configurations and warm["hits"] == kept["hits"] + configurations  # every plan kept
    # the same id from another file with half the bandwidth: another object, planned anew
    doc = json.load(open(rp.device("h100-sxm").origin))
    doc["memory"]["dram"]["bandwidth_GBps"] /= 2
    (tmp_path / "h100-sxm.json").write_text(json.dumps(doc))
    slower = rp.load_device(tmp_path / "h100-sxm.json")
    other = rp.sweep(**dict(kw, devices=[slower]))
    assert _core.sweep_plan_cache()["plans"] == configurations + configurations // 2
    fast = cold[cold.device == "h100-sxm"]
    assert (other["decode_tokens_per_s"].to_numpy() < fast["decode_tokens_per_s"].to_numpy()).all()
    del slower, other
    gc.collect()
    rp.sweep(**dict(kw, models=["llama-3.1-8b"], quants=["Q4_K_M"]))  # the next sweep lets the unreachable device go
    assert _core.sweep_plan_cache()["pins"] == 4 and _core.sweep_plan_cache()["plans"] == configurations
    assert _core.sweep_plan_cache(clear=True)["plans"] == 0
    pd.testing.assert_frame_equal(cold, rp.sweep(**kw), check_exact=True)


def test_columns_are_the_cores_buffers_not_copies(small):
    for c in ("decode_s", "memory_total", "batch"):
        arr = small[c].to_numpy()
        assert not arr.flags.owndata  # a view of the buffer the core filled (owned by a capsule)


def test_points_keep_their_order_and_equal_the_product(small):
    picks = [5, 0, 700, len(small) - 1]
    pts = small.iloc[picks][["model", "quant", "device", "engine", "kv_dtype", "flash_attention", "tensor_parallel",
                             "batch", "prompt_tokens", "gen_tokens"]]
    out = rp.sweep(points=pts.astype(object).to_dict("records"), threads=2)
    assert out.index.tolist() == [0, 1, 2, 3]
    for j, i in enumerate(picks):
        for f in FIELDS + ["memory_total", "fits"]:
            assert same(out.iloc[j][f], small.iloc[i][f]), f
    frame = rp.sweep(points=pd.DataFrame({"model": ["llama-3.1-8b"] * 3, "quant": "Q8_0", "device": "a100",
                                          "batch": [1, 2, 4], "prompt_tokens": 512, "gen_tokens": 128}))
    assert frame["batch"].tolist() == [1, 2, 4]
    with pytest.raises(ValueError, match="missing column"):
        rp.sweep(points=[{"model": "gpt2", "quant": "fp16"}])


def test_a_generation_costs_what_one_step_costs():
    e = rp.estimate(model="gemma-2-9b", quant="Q4_K_M", device="h100-sxm", prompt_tokens=1024, gen_tokens=10**6)
    assert math.isfinite(e.decode_s) and e.decode_tokens_per_s > 0


def test_bad_sweeps_are_clear_errors():
    with pytest.raises(KeyError, match="did you mean"):
        rp.sweep(models=["llama-3.1-8"], quants=["Q4_K_M"], devices=["h100-sxm"])
    with pytest.raises(ValueError, match="'batch' must list at least one value"):
        rp.sweep(models=["gpt2"], quants=["fp16"], devices=["h100-sxm"], batch=[])
    with pytest.raises(ValueError, match="nothing to estimate"):
        rp.sweep(models=["gpt2"], quants=["fp16"], devices=["h100-sxm"], prompt_tokens=[0, 5], gen_tokens=[0])
    with pytest.raises(ValueError, match="needs an interconnect"):
        rp.sweep(models=["llama-3.1-8b"], quants=["fp16"], devices=["h100-sxm", "m4-pro"], tensor_parallel=[1, 2])
    df = rp.sweep(models=["llama-3.1-8b"], quants=["fp16"], devices=["h100-sxm", "m4-pro"], tensor_parallel=[1, 2],
                  skip_invalid=True)
    assert len(df) == 3 and len(df.attrs["skipped"]) == 1 and "m4-pro-20c" in df.attrs["skipped"][0]
    with pytest.raises(ValueError, match="models"):
        rp.sweep(quants=["fp16"], devices=["h100-sxm"])


# ---- inverse questions -------------------------------------------------------------------------------------------
def tpot_ms(model, quant, device, batch, prompt, gen, **kw):
    e = rp.estimate(model=model, quant=quant, device=device, batch=batch, prompt_tokens=prompt, gen_tokens=gen, **kw)
    return e.decode_s / gen * 1e3, e.fits


@pytest.mark.parametrize("target", [8.0, 15.0, 50.0])
def test_max_batch_meets_the_target_and_one_more_does_not(target):
    kw = dict(kv_dtype="f16", flash_attention=True, engine="cuda-graphs")
    ans = rp.max_batch(model="llama-3.1-8b", quant="BF16", device="h100-sxm", tpot_ms=target, prompt_tokens=2048,
                       gen_tokens=256, **kw)
    assert ans.feasible and ans and ans.batch >= 1
    t, fits = tpot_ms("llama-3.1-8b", "BF16", "h100-sxm", ans.batch, 2048, 256, **kw)
    assert fits and t <= target and same(t, ans.tpot_ms)
    t1, fits1 = tpot_ms("llama-3.1-8b", "BF16", "h100-sxm", ans.batch + 1, 2048, 256, **kw)
    assert (not fits1) or t1 > target
    assert ans.limit in ("tpot", "memory") and str(ans.batch + 1) in ans.reason
    assert ans.at["batch"] == ans.batch and ans.beyond["batch"] == ans.batch + 1
    assert ans.evaluations < 60


def test_max_batch_answers_when_nothing_meets_the_target():
    ans = rp.max_batch(model="llama-3.1-8b", quant="BF16", device="h100-sxm", tpot_ms=0.01, prompt_tokens=2048)
    assert not ans.feasible and not ans and ans.batch == 0 and ans.limit == "tpot"
    assert "batch 1 already takes" in ans.reason
    big = rp.max_batch(model="llama-3.1-70b", quant="BF16", device="rtx-4090", tpot_ms=100)
    assert not big.feasible and big.limit == "memory" and "GB" in big.reason
    fits = rp.max_batch(model="llama-3.1-8b", quant="Q4_K_M", device="rtx-4090")  # no target: memory decides
    assert fits.feasible and fits.limit == "memory"
    assert rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device="rtx-4090", batch=fits.batch).fits
    assert not rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device="rtx-4090", batch=fits.batch + 1).fits
    with pytest.raises(ValueError, match="tpot_ms"):
        rp.max_batch(model="gpt2", quant="fp16", device="l4", tpot_ms=-1)


def test_cheapest_ranks_deployments_that_meet_the_target():
    prices = {"h100-sxm": 3.0, "a100-sxm-80gb": 1.8, "l4": 0.8, "rtx-4090": 0.5}
    target = 2000.0
    df = rp.cheapest(model="llama-3.1-8b", target_tokens_per_s=target, price_per_hour=prices, quant="Q4_K_M",
                     tpot_ms=100)
    assert {"device", "count", "quant", "feasible", "batch", "cost_per_million_tokens", "reason"} <= set(df.columns)
    ok = df[df.feasible]
    assert len(ok) >= 1 and df.feasible.tolist() == sorted(df.feasible.tolist(), reverse=True)
    assert ok.cost_per_million_tokens.is_monotonic_increasing
    assert set(df["count"]) <= {1, 2, 4, 8}  # llama-3.1-8b: 32 heads, 8 KV heads
    for r in ok.itertuples():  # each answer verified directly, and one batch fewer misses
        e = rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device=r.device, batch=r.batch, tensor_parallel=r.count)
        assert e.decode_tokens_per_s_total >= target and e.fits and e.decode_s / e.gen_tokens <= 0.1
        if r.batch > 1:
            less = rp.estimate(model="llama-3.1-8b", quant="Q4_K_M", device=r.device, batch=r.batch - 1,
                               tensor_parallel=r.count)
            assert less.decode_tokens_per_s_total < target
        assert r.cost_per_hour == pytest.approx(prices[r.device] * r.count)
        assert r.cost_per_million_tokens == pytest.approx(r.cost_per_hour / (3600 * target) * 1e6)
    bad = df[~df.feasible]
    assert (bad.reason.str.len() > 0).all()
    # replicas make a slow device feasible; under tensor parallelism (vLLM's split) a count that does not divide the
    # heads is listed with why
    rep = rp.cheapest(model="llama-3.1-8b", target_tokens_per_s=1e5, price_per_hour={"l4": 0.8}, replicas=True,
                      counts=[1, 3], quant="bf16", engine="vllm")
    assert rep[rep["count"] == 1].feasible.all() and rep[rep["count"] == 1].replicas.iloc[0] > 1
    assert "must divide the heads" in rep[rep["count"] == 3].reason.iloc[0]
    with pytest.raises(ValueError, match="no price for"):
        rp.cheapest(model="gpt2", target_tokens_per_s=10, price_per_hour={"l4": 1}, devices=["l4", "t4"])


def test_pareto_keeps_exactly_the_non_dominated_rows(small):
    df = small[small.fits]
    front = rp.pareto(df, x="memory_total", y="decode_tokens_per_s")
    assert 1 <= len(front) < len(df)
    assert front["memory_total"].is_monotonic_increasing
    xs, ys = df["memory_total"].to_numpy(), df["decode_tokens_per_s"].to_numpy()
    for x, y in zip(front["memory_total"], front["decode_tokens_per_s"]):  # nothing dominates a kept row
        assert not np.any((xs <= x) & (ys >= y) & ((xs < x) | (ys > y)))
    kept = set(front.index)
    for i in df.index.difference(list(kept))[:200]:  # every dropped row is dominated by a kept one
        x, y = df.at[i, "memory_total"], df.at[i, "decode_tokens_per_s"]
        assert np.any((front["memory_total"] <= x) & (front["decode_tokens_per_s"] >= y))
    other = rp.pareto(df, x="total_s", y="decode_tokens_per_s_total", minimize_x=True, maximize_y=True)
    assert len(other) >= 1
    with pytest.raises(KeyError, match="no column"):
        rp.pareto(df, x="nope")


# ---- CLI ---------------------------------------------------------------------------------------------------------
def test_cli_sweep_writes_csv_and_explains_parquet(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    code = main(["sweep", "-m", "llama-3.1-8b,qwen3-8b", "-q", "Q4_K_M,BF16", "-d", "h100-sxm,m4-pro", "-b", "1-16x2",
                 "-p", "128,2048", "-n", "256", "-fa", "both", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "estimates" in text and out.exists()
    df = pd.read_csv(out)
    assert len(df) == 2 * 2 * 2 * 2 * 5 * 2 and df["batch"].tolist()[:5] == [1, 2, 4, 8, 16]
    pq = tmp_path / "sweep.parquet"
    code = main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-o", str(pq)])
    err = capsys.readouterr().err
    try:
        import pyarrow  # noqa: F401

        assert code == 0 and pq.exists()
    except ImportError:
        assert code == 2 and "pyarrow" in err and "sweep.csv" in err
    code = main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-o", str(tmp_path / "x.txt")])
    assert code == 2 and ".csv" in capsys.readouterr().err
    code = main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-b", "1-x"])
    assert code == 2 and "-b/--batch" in capsys.readouterr().err
    code = main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "--rows", "3"])
    assert code == 0 and "gpt2" in capsys.readouterr().out


# ---- streamed sweeps ---------------------------------------------------------------------------------------------
STREAM = dict(models=["qwen3-4b", "llama-3.1-8b"], quants=["Q4_0", "Q8_0"], devices=["rtx-4090", "m4-pro", "a100"],
              batch=[1, 2, 4, 8, 16], prompt_tokens=[128, 512, 2048], gen_tokens=[64, 256],
              flash_attention=[False, True])


@pytest.fixture(scope="module")
def stream_ref():
    return rp.sweep(**STREAM)


@pytest.mark.parametrize("chunk_rows", [1, 7, 100, 360, 10**6])
def test_chunks_are_the_in_memory_sweep_in_order_and_bounded(stream_ref, chunk_rows):
    parts = list(rp.sweep_chunks(**STREAM, chunk_rows=chunk_rows))
    assert max(len(p) for p in parts) <= chunk_rows
    df = pd.concat(parts, ignore_index=True)
    for col in ("decode_tokens_per_s", "ttft_s", "memory_total", "batch", "flash_attention"):
        assert df[col].tolist() == stream_ref[col].tolist(), col
    for col in ("model", "quant", "device"):  # every chunk carries the whole sweep's categories
        assert all(list(p[col].cat.categories) == list(stream_ref[col].cat.categories) for p in parts)
        assert df[col].astype(str).tolist() == stream_ref[col].astype(str).tolist()


@pytest.mark.parametrize("name", ["s.parquet", "s.csv", "parts/"])
def test_output_streams_to_parquet_csv_and_a_folder(stream_ref, tmp_path, name):
    if name != "s.csv":
        pytest.importorskip("pyarrow")
    res = rp.sweep(**STREAM, output=f"{tmp_path}/{name}", chunk_rows=100)
    assert isinstance(res, rp.StreamedSweep)
    assert res.rows == len(stream_ref) and res.chunks > 1 and res.largest_chunk_rows <= 100
    if name.endswith("/"):
        back = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / name).glob("part-*.parquet"))],
                         ignore_index=True)
    elif name.endswith(".csv"):
        back = pd.read_csv(tmp_path / name)
    else:
        back = pd.read_parquet(tmp_path / name)
    assert back["decode_tokens_per_s"].tolist() == stream_ref["decode_tokens_per_s"].tolist()
    assert back["device"].astype(str).tolist() == stream_ref["device"].astype(str).tolist()


def test_points_stream_keep_their_positions():
    pts = pd.DataFrame({"model": ["qwen3-4b"] * 5, "quant": ["Q4_0"] * 5, "device": ["rtx-4090"] * 5,
                        "batch": [1, 2, 3, 4, 5], "prompt_tokens": [128] * 5, "gen_tokens": [64] * 5})
    parts = list(rp.sweep_chunks(points=pts, chunk_rows=2))
    assert [list(p.index) for p in parts] == [[0, 1], [2, 3], [4]]
    assert pd.concat(parts)["decode_tokens_per_s"].tolist() == rp.sweep(points=pts)["decode_tokens_per_s"].tolist()


def test_a_sweep_too_large_for_memory_points_to_streaming_before_estimating_anything():
    with pytest.raises(ValueError) as info:
        rp.sweep(models=["qwen3-4b"], quants=["Q4_0"], devices=["rtx-4090"], batch=list(range(1, 100001)),
                 prompt_tokens=list(range(1, 10001)))
    msg = str(info.value)
    assert "1,000,000,000 points" in msg and "MAX_POINTS_IN_MEMORY" in msg and "output=" in msg
    assert "sweep_chunks" in msg


@pytest.mark.parametrize("kwargs, exc, words", [
    ({"output": "/tmp/x.txt"}, ValueError, "must end in .parquet, .csv or '/'"),
    ({"output": 5}, TypeError, "output must be a path"),
    ({"output": "/nonexistent-dir/x.csv"}, ValueError, "cannot write output '/nonexistent-dir/x.csv'"),
    ({"chunk_rows": 0}, ValueError, "chunk_rows must be a whole number"),
    ({"threads": 2**40}, ValueError, "threads must be within [1, 1024]"),
    ({"threads": "4"}, TypeError, "threads must be a whole number"),
    ({"devices": [5]}, TypeError, "'devices' values must be device ids or Devices, got 5"),
    ({"quants": [None]}, TypeError, "'quants' values must be names"),
    ({"flash_attention": "false"}, TypeError, "'flash_attention' values must be True, False or None (the engine's default), got 'false'"),
])
def test_bad_sweep_arguments_name_the_parameter(kwargs, exc, words):
    args = {**dict(models=["qwen3-4b"], quants=["Q4_0"], devices=["rtx-4090"]), **kwargs}
    with pytest.raises(exc) as info:
        rp.sweep(**args)
    assert words in str(info.value)


@pytest.mark.parametrize("batch, words", [
    ("1-infx2", "-b/--batch must be comma-separated numbers"),
    ("1-100000000x1.0000001", "expands to 184,206,817 values"),
    ("1-1e9", "at most 1,000,000 per list"),
    ("nan", "-b/--batch must be"),
])
def test_cli_ranges_are_bounded_before_they_are_built(batch, words, capsys):
    code = main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-b", batch])
    assert code == 2 and words in capsys.readouterr().err


def test_cli_sweep_streams_with_o(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-b", "1-64", "-o", str(out), "--json"]) == 0
    import json

    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 64 and info["format"] == "csv" and len(pd.read_csv(out)) == 64
