"""rp.explore() headlessly: a control change is what a click does; the values shown must be the core's."""
import re
import sys

import pytest

import rooflinepy as rp

pytest.importorskip("ipywidgets")


def _numbers(html):
    return [float(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?", html)]


def test_starts_with_the_estimates_rp_estimate_gives():
    ex = rp.explore(model="llama-3.1-8b", quant="Q4_K_M", devices=["m4-pro", "rtx-4090"], figure=False)
    assert list(ex.estimates) == [rp.device("m4-pro").id, "rtx-4090"]
    for dev, e in ex.estimates.items():
        direct = rp.estimate("llama-3.1-8b", "Q4_K_M", dev)
        assert e.decode_tokens_per_s == direct.decode_tokens_per_s
        assert e.prefill_tokens_per_s == direct.prefill_tokens_per_s
        assert f"{direct.decode_tokens_per_s:.4g}" in ex.summary.value
        assert f"{direct.decode_tokens_per_s_lo:.4g} – {direct.decode_tokens_per_s_hi:.4g}" in ex.summary.value
        assert direct.decode_bound in ex.summary.value
    assert ex.error == ""
    assert "llama-3.1-8b" in repr(ex)


def test_each_control_change_is_one_new_estimate_with_the_new_value():
    ex = rp.explore(devices=["rtx-4090"], figure=False)
    before = ex.updates
    changes = {"batch": 8, "prompt_tokens": 2048, "gen_tokens": 256, "context_tokens": 4096, "ubatch_tokens": 256,
               "flash_attention": "on", "kv_dtype": "q8_0", "quant": "Q8_0", "model": "qwen3-4b"}
    for name, value in changes.items():
        ex.controls[name].value = value
        v = ex.values()
        direct = rp.estimate(v["model"], v["quant"], "rtx-4090", prompt_tokens=v["prompt_tokens"],
                             gen_tokens=v["gen_tokens"], batch=v["batch"], kv_dtype=v["kv_dtype"],
                             flash_attention=v["flash_attention"], engine=v["engine"],
                             context_tokens=v["context_tokens"], ubatch_tokens=v["ubatch_tokens"])
        e = ex.estimates["rtx-4090"]
        assert e.decode_tokens_per_s == direct.decode_tokens_per_s, name
        assert e.ttft_s == direct.ttft_s, name
        assert f"{direct.decode_tokens_per_s_total:.4g}" in ex.summary.value, name
    assert ex.updates == before + len(changes)
    e = ex.estimates["rtx-4090"]
    assert (e.batch, e.prompt_tokens, e.gen_tokens, e.model, e.quant) == (8, 2048, 256, "qwen3-4b", "Q8_0")


def test_devices_picked_are_the_rows_shown_and_the_first_is_detailed():
    ex = rp.explore(devices=["rtx-4090"], figure=False)
    ex.controls["devices"].value = ("h100-sxm", "rtx-4090")
    assert list(ex.estimates) == ["h100-sxm", "rtx-4090"]
    assert ex.summary.value.count("<tr>") == 3  # header and two devices
    assert "breakdown on h100-sxm" in ex.details.value
    first = ex.estimates["h100-sxm"]
    for _, row in first.breakdown[first.breakdown.seconds > 0].iterrows():
        assert f">{row.op}<" in ex.details.value
    ex.controls["devices"].value = ()
    assert ex.estimates == {} and ex.error == "pick at least one device"
    assert ex.details.value == ""


def test_a_combination_the_core_refuses_shows_its_message_and_raises_nothing():
    ex = rp.explore(devices=["m4-pro", "rtx-4090"], figure=False)
    ex.controls["engine"].value = "cuda-graphs"  # Q4_K_M is not one of its formats: both devices refuse
    assert ex.estimates == {}
    assert "engine 'cuda-graphs' does not run weights in Q4_K" in ex.error
    assert "does not run weights" in ex.summary.value
    ex.controls["quant"].value = "fp8"  # the GPU runs it, the Apple chip has no cuda backend for this engine
    assert "rtx-4090" in ex.estimates
    assert rp.device("m4-pro").id + ":" in ex.error


def test_the_figure_is_the_roofline_of_the_first_device_with_its_ops_and_follows_the_controls():
    pytest.importorskip("matplotlib")
    ex = rp.explore(devices=["rtx-4090"], max_ops=3)
    png = ex.figure.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ex.controls["batch"].value = 64
    assert ex.figure.value != png and ex.figure.value[:4] == b"\x89PNG"
    e = ex.estimates["rtx-4090"]
    fig = rp.plot.roofline("rtx-4090", e, dtype="fp16", max_ops=3)
    drawn = fig.rooflinepy_data["estimate_ops"]["rtx-4090"]
    assert len(drawn) == 6  # three per phase
    rows = e.breakdown
    for label, point in drawn.items():
        phase, op = label.split(": ")
        r = rows[(rows.phase == phase) & (rows.op == op)].iloc[0]
        assert point["flops_per_s"] == r.flops_per_s and point["intensity"] == r.intensity
        assert point["compute"] == r.compute
        if r.compute:  # the roof of its kernel's format is drawn: under dtype's name, or its own
            fmt, unit = r.compute.split()
            peaks = fig.rooflinepy_data["devices"]["rtx-4090"]["peaks"]
            assert (unit in peaks) if fmt == "fp16" else (r.compute in peaks)
    assert rp.plot.overlap_report(fig) == []


@pytest.mark.parametrize("kwargs, exc, words", [
    ({"batch": 0}, ValueError, "batch must be an integer in [1, 65536], got 0"),
    ({"prompt_tokens": 2.5}, ValueError, "prompt_tokens must be an integer"),
    ({"devices": ["h10"]}, KeyError, "did you mean"),
    ({"devices": [5]}, TypeError, "devices must be device ids"),
    ({"engine": "vlm"}, KeyError, "engine"),
    ({"kv_dtype": "q9"}, KeyError, "kv_dtype"),
    ({"flash_attention": "yes"}, TypeError, "flash_attention must be True, False or None (the engine's default)"),
    ({"max_ops": 0}, ValueError, "max_ops"),
    ({"model": 3}, TypeError, "model must be a catalogue id or a Model"),
    ({"model": "llama-9"}, KeyError, "llama-9"),
])
def test_bad_arguments_name_the_parameter(kwargs, exc, words):
    with pytest.raises(exc) as info:
        rp.explore(figure=False, **kwargs)
    assert words in str(info.value)


def test_a_model_not_from_the_catalogue_is_a_choice_of_its_own():
    m = rp.Model.from_hf_config({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
                                 "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
                                 "vocab_size": 32000, "max_position_embeddings": 4096})
    ex = rp.explore(model=m, quant="Q8_0", devices=["rtx-4090"], figure=False)
    assert ex.controls["model"].value == "(given model)"
    assert ex.estimates["rtx-4090"].decode_tokens_per_s == rp.estimate(m, "Q8_0", "rtx-4090").decode_tokens_per_s
    ex.controls["model"].value = "qwen3-4b"
    assert ex.estimates["rtx-4090"].model == "qwen3-4b"


def test_without_ipywidgets_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match=r"pip install 'rooflinepy\[explore\]'"):
        rp.explore()


def test_roofline_of_an_estimate_needs_its_device_drawn():
    pytest.importorskip("matplotlib")
    e = rp.estimate("llama-3.1-8b", "Q4_K_M", "rtx-4090")
    with pytest.raises(ValueError, match="estimate is for device 'rtx-4090'"):
        rp.plot.roofline("h100-sxm", e)
    with pytest.raises(ValueError, match="max_ops must be an integer >= 1"):
        rp.plot.roofline("rtx-4090", e, max_ops=0)
