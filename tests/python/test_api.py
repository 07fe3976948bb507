import math
import pickle

import pytest

import rooflinepy as rp


def test_version_is_the_one_in_cmakelists(repo):
    text = (repo / "CMakeLists.txt").read_text()
    assert f"project(roofline VERSION {rp.__version__}" in text


def test_devices_lists_ids_sorted():
    ids = rp.devices()
    assert ids == sorted(ids)
    assert "a100-sxm-80gb" in ids and "h100-sxm" in ids and "m4-pro-20c" in ids


@pytest.mark.parametrize("name", ["a100-sxm-80gb", "a100", "A100", "A100-SXM-80GB"])
def test_device_lookup_by_id_or_alias_case_insensitive(name):
    assert rp.device(name).id == "a100-sxm-80gb"


def test_apple_aliases_point_at_the_full_chip():
    assert rp.device("m4-pro").id == "m4-pro-20c"
    assert rp.device("m4-max").id == "m4-max-40c"
    assert rp.device("m4-max-32c").bandwidth() == pytest.approx(410e9)
    assert rp.device("m4-max-40c").bandwidth() == pytest.approx(546e9)


def test_unknown_device_suggests_the_closest():
    with pytest.raises(KeyError, match="did you mean 'h100-sxm'"):
        rp.device("h10")
    with pytest.raises(KeyError, match="unknown device 'nonsense-gpu'"):
        rp.device("nonsense-gpu")


def test_ceilings_in_si_units():
    a100 = rp.device("a100-sxm-80gb")
    assert a100.peak_flops("bf16") == 312e12
    assert a100.peak_flops("fp32", unit="vector") == pytest.approx(19.5e12)
    assert a100.bandwidth("dram") == 2039e9
    assert a100.capacity("dram") == 80 * 2**30
    assert a100.ridge_point("bf16") == pytest.approx(312e12 / 2039e9)
    h100 = rp.device("h100-sxm")
    assert h100.ridge_point("bf16", level="l2") < h100.ridge_point("bf16")


def test_bad_names_are_key_errors_listing_valid_values():
    a100 = rp.device("a100")
    with pytest.raises(KeyError, match="valid: fp64, fp32"):
        a100.peak_flops("fp17")
    with pytest.raises(KeyError, match="memory level 'l3'"):
        a100.bandwidth("l3")
    with pytest.raises(KeyError, match="no matrix peak for 'fp4'"):
        a100.peak_flops("fp4")


def test_gemm_counts_and_timing():
    op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
    assert op.flops == 2 * 4096**3
    assert op.bytes == 3 * 4096 * 4096 * 2
    assert op.arithmetic_intensity == pytest.approx(op.flops / op.bytes)
    assert op.bytes_at("l2") == op.bytes
    t = rp.device("a100").time(op)
    assert t.bound == "compute"
    assert t.seconds > 0 and t.attainable_flops > 0
    ideal = rp.device("a100").time(op, ideal=True)
    assert ideal.seconds == pytest.approx(op.flops / 312e12)
    assert ideal.ceilings == "ideal" and t.ceilings == "derated"


def test_weight_formats_in_gemm():
    op = rp.ops.gemm(1, 4096, 4096, dtype="fp16", weight_dtype="Q4_0")
    assert op.bytes_read() == pytest.approx(4096 * 2 + 4096 * 4096 * 18 / 32)
    assert rp.ops.gemm(1, 4096, 4096, weight_dtype="int4-g128").bytes_read() == pytest.approx(
        4096 * 2 + 4096 * 4096 * 4.25 / 8)


def test_attention_standard_and_flash():
    std = rp.ops.attention(batch=1, heads=32, seq_q=4096, seq_kv=4096, head_dim=128, dtype="fp16", kind="standard")
    fl = rp.ops.attention(batch=1, heads=32, seq_q=4096, seq_kv=4096, head_dim=128, dtype="fp16", kind="flash",
                          device="a100")
    assert fl.bytes < 0.05 * std.bytes  # the A100's L2 holds a head's Q and O: compulsory traffic only
    assert fl.bytes_at("sram") > fl.bytes
    assert fl.flops_of("matrix", "fp16") == std.flops_of("matrix", "fp16")
    bwd = rp.ops.attention(1, 32, 4096, head_dim=128, kind="flash", backward=True, sram_bytes=192 * 1024)
    assert bwd.flops > 2 * fl.flops
    with pytest.raises(ValueError, match="sram_bytes= or device="):
        rp.ops.attention(1, 32, 4096, kind="flash")
    with pytest.raises(KeyError, match="attention kind 'flesh'"):
        rp.ops.attention(1, 32, 4096, kind="flesh")


def test_other_ops():
    assert rp.ops.softmax(10, 100).flops == 5000
    assert rp.ops.layernorm(10, 100).flops == 7000
    assert rp.ops.rmsnorm(10, 100, affine=False).flops == 3000
    assert rp.ops.elementwise(100, 2, 2, 1, "fp32").bytes == 1200
    assert rp.ops.gemv(4096, 4096).flops == 2 * 4096 * 4096
    d = rp.ops.decode_attention(1, 32, 8, 4096, 128, kv_dtype="q8_0")
    assert d.bytes_read() == pytest.approx(2 * 4096 * 8 * 128 * 34 / 32 + 32 * 128 * 2)
    assert rp.ops.kv_append(1, 1, 8, 128).bytes_written() == 2 * 8 * 128 * 2
    assert rp.ops.embedding_lookup(1, 4096).bytes_written() == 4096 * 2


def test_sum_and_scale_of_ops():
    a, b = rp.ops.gemm(8, 8, 8), rp.ops.softmax(8, 8)
    assert (a + b).flops == a.flops + b.flops
    assert (3 * a).flops == 3 * a.flops == (a * 3).flops
    assert a.scaled(2).launches == 2


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 1.5])
def test_bad_sizes_are_value_errors_naming_the_argument(bad):
    with pytest.raises(ValueError, match="gemm m must be a whole number >= 0"):
        rp.ops.gemm(bad, 8, 8)


def test_zero_sized_op_evaluates_cleanly():
    t = rp.device("a100").time(rp.ops.gemm(0, 0, 0))
    assert t.seconds > 0  # one launch of overhead
    assert t.bound == "overhead"
    t = rp.device("a100").time(rp.ops.gemm(0, 0, 0), ideal=True)
    assert t.seconds == 0 and t.bound == "none"
    assert all(math.isfinite(v) for v in t.to_dict().values() if isinstance(v, float))


def test_results_pickle_and_convert_to_dict():
    op = rp.ops.gemm(64, 64, 64)
    dev = rp.device("h100")
    t = dev.time(op)
    for obj in (op, t, dev):
        back = pickle.loads(pickle.dumps(obj))
        assert repr(back) == repr(obj)
    assert op.to_dict()["flops"] == op.flops
    assert t.to_dict()["bound"] == t.bound
    assert dev.to_dict()["id"] == "h100-sxm"
    assert "memory:dram" in repr(dev.time(rp.ops.gemv(8192, 8192)))


def test_device_details_carry_sources():
    dev = rp.device("h100-sxm")
    for p in dev.compute_peaks():
        assert p["source"] and p["flops_per_s"] > 0
    levels = {m["level"]: m for m in dev.memory_levels()}
    assert levels["dram"]["bandwidth"] == pytest.approx(3.35e12)
    assert dev.efficiency["source"]


def test_load_device_errors_name_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema_version": 1}')
    with pytest.raises(ValueError, match="broken.json: field 'id' is required"):
        rp.load_device(bad)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        rp.load_device(tmp_path / "missing.json")


def test_estimate_fields_are_read_from_the_core_when_asked_for():
    est = rp.estimate("llama-3.1-8b", "Q4_K_M", "h100-sxm", prompt_tokens=1024, gen_tokens=512)
    core = est._core
    assert "decode_tokens_per_s" not in est.__dict__  # nothing copied before it is asked for
    assert est.decode_tokens_per_s == core.decode_tokens_per_s
    assert est.__dict__["decode_tokens_per_s"] == core.decode_tokens_per_s  # then kept as a plain attribute
    assert all(getattr(est, f) == getattr(core, f) for f in rp.Estimate._FIELDS)
    assert est.memory["total"] == est.memory_total and est.memory["fits"] == est.fits
    assert est.ceilings["prefill_tokens_per_s"] == est.ceiling_prefill
    assert {"decode_tokens_per_s", "memory", "ceilings", "breakdown"} <= set(dir(est))  # tab completion
    with pytest.raises(AttributeError, match="no attribute 'decode_tokens_per_sec'"):
        est.decode_tokens_per_sec
    # the breakdown (a second core estimate, with its rows) changes no field
    before = est.to_dict()
    assert len(est.breakdown) > 0
    after = est.to_dict()
    assert {k: v for k, v in before.items() if k != "breakdown"} == {k: v for k, v in after.items() if k != "breakdown"}


def test_estimate_checks_arguments_the_fast_path_lets_through_to_the_full_checks():
    kw = dict(model="llama-3.1-8b", quant="Q4_K_M", device="h100-sxm")
    with pytest.raises(TypeError, match="estimate: batch must be a number"):
        rp.estimate(**kw, batch="8")
    with pytest.raises(TypeError, match=r"estimate: flash_attention must be True, False or None \(the engine's default\)"):
        rp.estimate(**kw, flash_attention="false")
    with pytest.raises(ValueError, match="tensor_parallel must be a whole number within"):
        rp.estimate(**kw, tensor_parallel=0)
    import numpy as np
    # numpy numbers and True/False of numpy take the full checks and give the same estimate
    a = rp.estimate(**kw, batch=np.int64(4), flash_attention=np.bool_(True), prompt_tokens=np.float64(256))
    b = rp.estimate(**kw, batch=4, flash_attention=True, prompt_tokens=256)
    assert a.decode_tokens_per_s == b.decode_tokens_per_s and a.prefill_tokens_per_s == b.prefill_tokens_per_s


def test_reading_the_breakdown_changes_no_field_of_an_estimate():
    kw = dict(model="llama-3.1-8b", quant="Q4_K_M", device="h100-sxm", prompt_tokens=8192, gen_tokens=16, batch=4,
              ubatch_tokens=512, flash_attention=True)
    fresh = rp.estimate(**kw)
    first = rp.estimate(**kw)
    assert len(first.breakdown) > 0  # the rows before any field is read
    assert all(getattr(first, f) == getattr(fresh, f) for f in rp.Estimate._FIELDS)
    assert first.prefill_s == first.ttft_s
