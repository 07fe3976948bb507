"""rp.plot: every figure function returns a Figure, takes ax=, saves, and draws the core's numbers."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import rooflinepy as rp  # noqa: E402
from rooflinepy.cli import main  # noqa: E402


def by_gid(fig, gid):
    found = [a for a in fig.findobj(lambda a: a.get_gid() == gid)]
    assert found, f"no artist with gid {gid!r}"
    return found


# Small, fast arguments for each figure.
CALLS = {
    "roofline": lambda **kw: rp.plot.roofline(["a100-sxm-80gb", "h100-sxm"],
                                              ops=[rp.ops.gemm(4096, 4096, 4096, dtype="bf16")], dtype="bf16", **kw),
    "ridge_shift": lambda **kw: rp.plot.ridge_shift(["v100-sxm", "a100-sxm-80gb", "h100-sxm"], **kw),
    "tokens_per_second": lambda **kw: rp.plot.tokens_per_second("qwen3-4b", ["Q8_0", "Q4_K_M"], ["m4-pro"], **kw),
    "attention_io": lambda **kw: rp.plot.attention_io([1024, 4096, 16384], "a100-sxm-80gb", **kw),
    "kv_cache": lambda **kw: rp.plot.kv_cache("llama-3.1-8b", [1024, 4096, 16384], **kw),
    "batching": lambda **kw: rp.plot.batching("qwen3-0.6b", "h100-sxm", batches=[1, 64, 1024], contexts=[128], **kw),
    "validation": lambda **kw: rp.plot.validation("llama.cpp Metal, current builds", **kw),  # the seed: 6 points
}


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_returns_a_figure_that_saves_to_png(name, tmp_path):
    fig = CALLS[name]()
    assert isinstance(fig, Figure)
    assert isinstance(fig.rooflinepy_data, dict)
    for a in fig.axes:
        assert a.get_xlabel() and a.get_ylabel(), f"{name}: unlabelled axes"
    out = tmp_path / f"{name}.png"
    fig.savefig(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


@pytest.mark.parametrize("name", sorted(CALLS))
def test_draws_into_a_given_axes(name):
    fig, ax = plt.subplots()
    assert CALLS[name](ax=ax) is fig
    assert ax.lines or ax.patches
    assert len(fig.axes) == 1


@pytest.mark.parametrize("name", ["ridge_shift", "tokens_per_second", "kv_cache", "batching", "validation"])
def test_two_panel_figures_take_a_pair_of_axes(name):
    fig, axes = plt.subplots(1, 2)
    assert CALLS[name](ax=axes) is fig
    assert all(a.lines or a.patches for a in axes)
    with pytest.raises(ValueError, match="ax must be one Axes or 2"):
        CALLS[name](ax=[axes[0], axes[1], axes[0]])


def test_roofline_ridge_points_ceilings_and_ops_are_the_cores():
    a100, h100 = rp.device("a100-sxm-80gb"), rp.device("h100-sxm")
    gemm = rp.ops.gemm(4096, 4096, 4096, dtype="bf16")
    ew = rp.ops.elementwise(2**28, 1, 1, 1, "bf16")
    fig = rp.plot.roofline([a100, "h100"], ops={"gemm": gemm, "elementwise": ew}, dtype="bf16")
    for d in (a100, h100):
        (ridge,) = by_gid(fig, f"ridge:{d.id}:dram")
        assert ridge.get_xdata()[0] == d.ridge_point("bf16")
        assert ridge.get_ydata()[0] == d.peak_flops("bf16")
        roof = by_gid(fig, f"roof:{d.id}:dram")[0]
        xs, ys = roof.get_xdata(), roof.get_ydata()
        assert max(ys) == d.peak_flops("bf16")
        for x, y in zip(xs[:5], ys[:5]):  # the memory-bound slope is the DRAM bandwidth
            assert y == pytest.approx(x * d.bandwidth("dram"), rel=1e-12)
        for label, op in (("gemm", gemm), ("elementwise", ew)):
            (pt,) = by_gid(fig, f"op:{label}:{d.id}")
            assert pt.get_xdata()[0] == op.arithmetic_intensity
            assert pt.get_ydata()[0] == d.time(op, ideal=True).attainable_flops
    assert fig.rooflinepy_data["devices"]["a100-sxm-80gb"]["ridge_points"]["dram"] == a100.ridge_point("bf16")
    # a device with an L2 bandwidth in the database gets its L2 roof drawn; one with capacity only does not
    by_gid(fig, "roof:h100-sxm:l2")
    by_gid(fig, "roof:a100-sxm-80gb:l2")
    fig3090 = rp.plot.roofline(["rtx-3090"], dtype="bf16")
    assert not fig3090.findobj(lambda a: a.get_gid() == "roof:rtx-3090:l2")
    by_gid(fig3090, "roof:rtx-3090:dram")
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "log"


def test_roofline_derated_and_unknown_format():
    a100 = rp.device("a100")
    fig = rp.plot.roofline("a100", dtype="fp16", ideal=False, levels=["dram"])
    (ridge,) = by_gid(fig, "ridge:a100-sxm-80gb:dram")
    # at the ideal ridge the derated roof is the lower of the derated compute and derated bandwidth roofs
    eff = a100.efficiency
    assert ridge.get_ydata()[0] == pytest.approx(a100.peak_flops("fp16") * min(eff["compute_fraction"],
                                                                                eff["dram_bandwidth_fraction"]))
    with pytest.raises(KeyError, match="bf16"):
        rp.plot.roofline("m4-pro", dtype="bf16")


def test_attainable_flops_is_the_roof():
    a100 = rp.device("a100")
    assert rp.plot.attainable_flops(a100, a100.ridge_point("fp16"), "fp16") == pytest.approx(a100.peak_flops("fp16"))
    assert rp.plot.attainable_flops("a100", [0.0, 1.0], "fp16") == [0.0, a100.bandwidth()]
    with pytest.raises(ValueError, match="intensity"):
        rp.plot.attainable_flops("a100", -1.0)


def test_ridge_shift_plots_each_devices_ridge_and_growth():
    names = ["v100-sxm", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"]
    fig = rp.plot.ridge_shift(names)
    devs = [rp.device(n) for n in names]
    for d in devs:
        (bar,) = by_gid(fig, f"ridge:{d.id}:dram")
        assert bar.get_height() == d.ridge_point("fp16")
    (compute,) = by_gid(fig, "growth:compute")
    (bandwidth,) = by_gid(fig, "growth:bandwidth")
    assert compute.get_ydata()[2] == pytest.approx(devs[2].peak_flops("fp16") / devs[0].peak_flops("fp16"))
    assert bandwidth.get_ydata()[2] == pytest.approx(devs[2].bandwidth() / devs[0].bandwidth())


def test_tokens_per_second_bars_are_the_estimates_with_measured_points():
    measured = [{"device": "m4-pro", "quant": "Q4_K_M", "test": "tg128", "tokens_per_s": 79.7},
                {"device": "m4-pro-20c", "quant": "Q4_K_M", "test": "pp512", "tokens_per_s": 839.5}]
    fig = rp.plot.tokens_per_second("qwen3-4b", ["BF16", "Q4_K_M"], ["m4-pro", "m4-max"], measured=measured)
    for dev in ("m4-pro-20c", "m4-max-40c"):
        for q in ("BF16", "Q4_K_M"):
            tg = rp.estimate(model="qwen3-4b", quant=q, device=dev, prompt_tokens=0, gen_tokens=128)
            pp = rp.estimate(model="qwen3-4b", quant=q, device=dev, prompt_tokens=512, gen_tokens=0)
            assert by_gid(fig, f"tg:{dev}:{q}")[0].get_height() == tg.decode_tokens_per_s
            assert by_gid(fig, f"pp:{dev}:{q}")[0].get_height() == pp.prefill_tokens_per_s
    (m,) = by_gid(fig, "measured:tg:m4-pro-20c")
    assert list(m.get_ydata()) == [79.7]
    with pytest.raises(ValueError, match="lacks"):
        rp.plot.tokens_per_second("qwen3-4b", ["Q4_K_M"], ["m4-pro"], measured=[{"device": "m4-pro"}])


def test_attention_io_lines_are_the_ops_bytes():
    ns = [1024, 4096, 16384]
    fig = rp.plot.attention_io(ns, "a100-sxm-80gb", heads=16, head_dim=64)
    (std,) = by_gid(fig, "standard")
    (fl,) = by_gid(fig, "flash")
    (paper,) = by_gid(fig, "flash_no_l2")
    for i, n in enumerate(ns):
        assert std.get_ydata()[i] == rp.ops.attention(1, 16, n, head_dim=64, kind="standard").bytes
        assert fl.get_ydata()[i] == rp.ops.attention(1, 16, n, head_dim=64, kind="flash", device="a100").bytes
        assert paper.get_ydata()[i] == rp.ops.attention(1, 16, n, head_dim=64, kind="flash",
                                                        sram_bytes=rp.device("a100").sram_per_unit_bytes).bytes
        assert fl.get_ydata()[i] < paper.get_ydata()[i] < std.get_ydata()[i]


def test_kv_cache_lines_are_the_cores_kv_bytes():
    ctx = [1024, 8192]
    m = rp.model("llama-3.1-8b")
    fig = rp.plot.kv_cache(m.id, ctx, kv_dtypes=["f16", "q8_0"])
    data = fig.rooflinepy_data
    gqa_f16 = [k for k in data["per_step"] if k.startswith("GQA") and k.endswith("KV f16")][0]
    assert data["per_step"][gqa_f16] == [rp.kv_cache_bytes(m, c) for c in ctx]
    assert data["cumulative"][gqa_f16] == [rp.kv_cache_bytes_read(m, c) for c in ctx]
    line = by_gid(fig, f"per_step:{gqa_f16}")[0]
    assert list(line.get_ydata()) == data["per_step"][gqa_f16]
    mha = [k for k in data["per_step"] if k.startswith("MHA")][0]
    assert data["per_step"][mha][0] == pytest.approx(4 * data["per_step"][gqa_f16][0])  # 32 vs 8 KV heads
    assert data["weight_bytes"] < m.weight_bytes("BF16")  # not the embedding table (test below)


def test_kv_bytes_read_over_a_generation_match_the_estimators_decode_attention():
    """The cumulative reads the figure draws are the KV part of what the estimator's decode sums in closed form."""
    m = rp.model("llama-3.1-8b")
    n = 4096
    e = rp.estimate(model=m, quant="BF16", device="h100-sxm", prompt_tokens=0, gen_tokens=n, flash_attention=True)
    attn = e.breakdown.query("phase == 'decode' and op == 'attention'")["bytes"].iloc[0]
    kv = rp.kv_cache_bytes_read(m, n)
    assert kv <= attn < 1.02 * kv  # plus the query and output rows


def test_batching_marks_the_cores_compute_bound_batch_and_ridge():
    fig = rp.plot.batching("llama-3.1-8b", "h100-sxm", batches=[1, 256, 1024], contexts=[128, 8192])
    h100 = rp.device("h100-sxm")
    (ridge,) = by_gid(fig, "ridge:h100-sxm:dram")
    assert ridge.get_ydata()[0] == h100.ridge_point("fp16")
    e = rp.estimate(model="llama-3.1-8b", quant="BF16", device="h100-sxm", prompt_tokens=128, gen_tokens=1,
                    batch=256, engine="cuda-graphs", flash_attention=True)
    (ai,) = by_gid(fig, "decode_intensity:128")
    assert ai.get_ydata()[1] == e.decode_intensity
    assert e.compute_bound_batch > 0
    (vline,) = by_gid(fig, "compute_bound_batch:128")
    assert vline.get_xdata()[0] == e.compute_bound_batch
    # at 8192 tokens per sequence the KV reads cap the intensity below the ridge: never compute-bound
    assert fig.rooflinepy_data["contexts"][8192]["compute_bound_batch"] == 0
    assert not fig.findobj(lambda a: a.get_gid() == "compute_bound_batch:8192")


def test_plot_is_loaded_on_first_use_and_errors_are_clear():
    import rooflinepy.plot as mod

    assert rp.plot is mod
    with pytest.raises(KeyError, match="did you mean"):
        rp.plot.ridge_shift(["a100", "h10"])
    with pytest.raises(ValueError, match="at least one"):
        rp.plot.attention_io([], "a100")
    with pytest.raises(AttributeError):
        rp.not_a_thing  # noqa: B018


# ---- _repr_html_ ------------------------------------------------------------------------------------------
def test_device_html_shows_ceilings_ridges_and_sources():
    html = rp.device("a100-sxm-80gb")._repr_html_()
    assert "<table" in html and "NVIDIA A100" in html
    assert "2.039 TB/s" in html and "312 TFLOP/s" in html and "153.0" in html  # bandwidth, peak, ridge
    assert "datasheet" in html  # sources are in the tooltips


def test_opcost_and_timing_html_show_their_numbers():
    op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
    html = op._repr_html_()
    assert "137.4 GFLOP" in html and "100.7 MB" in html and "1365" in html  # FLOPs, DRAM bytes, AI
    t = rp.device("a100").time(op, ideal=True)
    html = t._repr_html_()
    assert "compute" in html and "440.5 µs" in html and "312 TFLOP/s" in html


def test_estimate_html_shows_tokens_per_second_memory_and_fit():
    e = rp.estimate(model="qwen3-4b", quant="Q4_K_M", device="m4-pro", prompt_tokens=512, gen_tokens=128)
    html = e._repr_html_()
    for text in (f"{e.decode_tokens_per_s:.4g}", f"{e.prefill_tokens_per_s:.4g}",
                 f"{e.ceilings['decode_weights_tokens_per_s']:.4g}", "qwen3-4b", "Q4_K_M", "m4-pro-20c", "fits"):
        assert text in html, text


# ---- CLI ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["roofline", "-d", "a100,h100-sxm", "--op", "gemm:1024,1024,1024", "--op", "softmax:4096,4096"],
    ["roofline"],
    ["ridge-shift", "-d", "v100-sxm,a100-sxm-80gb,h100-sxm"],
    ["tokens-per-second", "-q", "Q4_K_M", "-d", "m4-pro"],
    ["attention-io", "--seq-lens", "1024,4096"],
    ["kv-cache", "--context", "1024,4096", "--kv-dtypes", "f16"],
    ["batching", "-m", "qwen3-0.6b", "-b", "1,64", "--context", "128"],
    ["validation", "--fit", "llama.cpp Metal, current builds", "--fit", "gpt-fast"],
])
def test_cli_plot_writes_a_file(args, tmp_path, capsys):
    out = tmp_path / "fig.png"
    assert main(["plot", *args, "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert "wrote" in capsys.readouterr().err


def test_cli_plot_errors_are_one_line(tmp_path, capsys):
    assert main(["plot", "roofline", "--op", "gemm:1,2", "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "gemm takes 3 sizes" in err and "Traceback" not in err
    assert main(["plot", "ridge-shift", "-d", "h10", "-o", str(tmp_path / "x.png")]) == 2
    assert "did you mean" in capsys.readouterr().err


# ---- layout: nothing overlaps, nothing is clipped --------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: rp.plot.roofline(["a100-sxm-80gb", "h100-sxm"], ops=[rp.ops.gemm(4096, 4096, 4096, dtype="bf16"),
                             rp.ops.gemv(4096, 4096, "bf16"), rp.ops.attention(1, 32, 4096, kind="flash", device="h100")],
                             dtype="bf16"),
    lambda: rp.plot.roofline("a100", ops=[rp.ops.gemm(4096, 4096, 4096, dtype="fp16")], dtype="fp16"),  # notebook 01
    lambda: rp.plot.ridge_shift(),
    lambda: rp.plot.tokens_per_second(),
    lambda: rp.plot.attention_io(),
    lambda: rp.plot.kv_cache(),
    lambda: rp.plot.batching(),
    lambda: rp.plot.validation("llama.cpp CUDA"),
], ids=["roofline-3-ops", "roofline-a100-gemm", "ridge-shift", "tokens-per-second", "attention-io", "kv-cache",
        "batching", "validation"])
def test_no_label_overlaps_another_or_a_marker_and_none_is_clipped(make):
    from rooflinepy.plot import overlap_report

    fig = make()
    assert overlap_report(fig) == []


def test_roofline_is_hierarchical_each_op_at_its_own_intensity_per_level():
    gemm = rp.ops.gemm(4096, 4096, 4096, dtype="bf16", tile_bytes=192 * 1024)
    fig = rp.plot.roofline("h100-sxm", ops=[gemm], dtype="bf16")
    od = fig.rooflinepy_data["ops"][gemm.name]
    assert gemm.name == "gemm 4096×4096×4096"  # ops carry their shape as their label
    for level in ("l2", "sram"):
        if gemm.bytes_at(level) > 0:
            (m,) = by_gid(fig, f"op:{gemm.name}:h100-sxm:{level}")
            assert m.get_xdata()[0] == pytest.approx(gemm.intensity_at(level))
            assert od["intensity_by_level"][level] == pytest.approx(gemm.intensity_at(level))
    assert "each level" in fig.axes[0].get_xlabel()


def test_kv_cache_weights_line_is_what_a_decode_step_reads():
    fig = rp.plot.kv_cache("llama-3.1-8b")
    m = rp.model("llama-3.1-8b")
    embedding = 128256 * 4096 * 2  # the bf16 token embedding table: looked up, not streamed (the head is separate)
    assert fig.rooflinepy_data["weight_bytes"] == pytest.approx(m.weight_bytes("BF16") - embedding, rel=2e-4)


# ---- validation ----------------------------------------------------------------------------------------------
def test_validation_draws_the_cores_cross_validation_of_each_point():
    """Each point at (measured, estimate) for the defaults and leave-one-device-out, the pure roofline beside them;
    the legend's MAPEs are the summary rooflinepy validate prints."""
    from rooflinepy import validation

    name = "llama.cpp CUDA"
    fig = rp.plot.validation(name)
    (fit,) = [f for f in validation.fits() if f["name"] == name]
    cv = validation.cross_validate(fit)
    table = "llamacpp_cuda_llama2_7b_q4_0"
    for phase, prefix in (("decode", "tg"), ("prefill", "pp")):
        rows = cv[cv.test.str.startswith(prefix)]
        (defaults,) = by_gid(fig, f"defaults:{table}:{phase}")
        assert list(defaults.get_xdata()) == pytest.approx(list(rows.measured))
        assert list(defaults.get_ydata()) == pytest.approx(list(rows.defaults))
        (lodo,) = by_gid(fig, f"lodo:{table}:{phase}")
        assert list(lodo.get_ydata()) == pytest.approx(list(rows.lodo))
        (roof,) = by_gid(fig, f"roofline:{phase}")
        assert list(roof.get_ydata()) == pytest.approx(list(rows.roofline))
    summary = {s["phase"]: s for s in validation.cross_validation_summary(cv)}
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert f"{table}: {summary['prefill']['defaults']:.1f} %" in labels
    assert f"  leave-one-device-out: {summary['prefill']['lodo']:.1f} %" in labels
    assert len(fig.rooflinepy_data["rows"]) == len(cv)


def test_validation_of_a_one_device_fit_has_no_leave_one_out_and_unknown_fits_are_named():
    fig = rp.plot.validation(["gpt-fast"])  # one A100: nothing to leave out; decode only
    assert by_gid(fig, "defaults:gpt_fast_a100:decode")
    assert not fig.findobj(lambda a: str(a.get_gid()).startswith("lodo:"))
    assert not fig.axes[1].lines  # no prefill points
    with pytest.raises(ValueError, match="unknown fit 'cuda'; the fits are: llama.cpp Metal"):
        rp.plot.validation("cuda")
    with pytest.raises(ValueError, match="fits is empty"):
        rp.plot.validation([])
