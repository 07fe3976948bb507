"""Calibration profiles through the Python API and the CLI: measured ceilings replace the datasheet's, are not
derated again, and the host's own profile becomes a device."""
import copy
import json
import threading
import time

import pytest

from rooflinepy.cli import main

GPU_PROFILE = {
    "schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2025-06-01T12:00:00Z",
    "tool": {"name": "roofline-calibrate-cuda", "version": "0.1.0"},
    "device": {"name": "NVIDIA H100 80GB HBM3", "vendor": "nvidia", "kind": "gpu", "sm_count": 132,
               "clock_MHz": 1980, "memory_bytes": 85899345920, "l2_bytes": 52428800, "driver": "550.54.15",
               "toolkit": "12.4"},
    "measurements": [
        {"ceiling": "bandwidth", "level": "dram", "kernel": "copy_v4", "repetitions": 20, "si_unit": "B/s",
         "min": 2.9e12, "median": 3.0e12, "max": 3.05e12, "verified": True},
        {"ceiling": "peak_flops", "dtype": "fp32", "unit": "vector", "kernel": "fma_fp32", "repetitions": 20,
         "si_unit": "FLOP/s", "min": 6.0e13, "median": 6.2e13, "max": 6.3e13, "verified": True},
        {"ceiling": "gemm_flops", "dtype": "bf16", "unit": "matrix", "kernel": "cublas_gemm_bf16", "repetitions": 10,
         "si_unit": "FLOP/s", "min": 6.5e14, "median": 7.0e14, "max": 7.1e14, "verified": True},
        {"ceiling": "launch_overhead", "kernel": "empty_kernel", "repetitions": 1000, "si_unit": "s",
         "min": 2e-6, "median": 2.5e-6, "max": 5e-6, "verified": True},
    ],
}


@pytest.fixture()
def gpu_profile(tmp_path):
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(GPU_PROFILE))
    return path


@pytest.fixture(scope="module")
def host_profile(tmp_path_factory):
    import rooflinepy as rp

    path = tmp_path_factory.mktemp("cal") / "host.json"
    rp.calibration.calibrate_cpu(path, quick=True)
    return path


def profile_schema(repo):
    return json.loads((repo / "calibration" / "profile.schema.json").read_text())


def test_calibrated_replaces_ceilings_and_does_not_derate_them_again(rp, gpu_profile):
    base = rp.device("h100-sxm")
    dev = base.calibrated(gpu_profile)
    assert dev.bandwidth("dram") == pytest.approx(3.0e12)
    assert dev.peak_flops("bf16") == pytest.approx(7.0e14)
    assert dev.efficiency["launch_overhead_s"] == pytest.approx(2.5e-6)
    mem = dev.memory_levels()[0]
    assert mem["source"].startswith("measured by roofline-calibrate-cuda 0.1.0 on 2025-06-01T12:00:00Z "
                                    "(NVIDIA H100 80GB HBM3)")
    assert dev.to_dict()["memory"]["dram"]["measured"] is True
    # A pure-bandwidth op: the measured 3.0 TB/s is used as is, the datasheet's is derated.
    op = rp.ops.elementwise(10 ** 9, 0, 1, 1, "fp32")
    t_cal = dev.time(op)
    assert t_cal.memory_seconds["dram"] == pytest.approx(op.bytes / 3.0e12)
    assert base.time(op).memory_seconds["dram"] == pytest.approx(op.bytes / (base.bandwidth() * base.efficiency["dram_bandwidth_fraction"]))
    # A large bf16 GEMM: measured 700 TFLOP/s, not derated again.
    g = rp.ops.gemm(8192, 8192, 8192, "bf16")
    assert dev.time(g, ideal=True).compute_seconds == pytest.approx(g.flops / 7.0e14)
    assert dev.time(g).compute_seconds == pytest.approx(g.flops / 7.0e14, rel=0.02)  # shape utilization only


def test_calibrated_device_conforms_to_the_hardware_schema(rp, repo, gpu_profile):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((repo / "hardware_db" / "schema.json").read_text())
    jsonschema.validate(rp.device("h100").calibrated(gpu_profile).to_dict(), schema)


def test_above_datasheet_is_flagged(rp):
    prof = copy.deepcopy(GPU_PROFILE)
    prof["measurements"][0].update(min=3.4e12, median=3.5e12, max=3.6e12)
    dev = rp.device("h100-sxm").calibrated(prof)
    assert dev.memory_levels()[0]["uncertain"].startswith("measured above datasheet: 3.5 TB/s vs 3.35 TB/s")


def test_profile_errors_name_the_field(rp, tmp_path):
    bad = copy.deepcopy(GPU_PROFILE)
    bad["measurements"][0]["si_unit"] = "GB/s"
    with pytest.raises(ValueError, match=r"<dict>: field 'measurements\[0\]\.si_unit' must be one of"):
        rp.calibration.load_profile(bad)
    with pytest.raises(FileNotFoundError):
        rp.calibration.load_profile(tmp_path / "missing.json")
    cpu = copy.deepcopy(GPU_PROFILE)
    cpu["device"]["kind"] = "cpu"
    with pytest.raises(ValueError, match="field 'device.kind' is 'cpu'"):
        rp.device("h100").calibrated(cpu)


def test_report_matches_the_datasheet_by_runtime_name(rp, gpu_profile):
    df = rp.calibration.report(gpu_profile)
    assert df.attrs["device"] == "h100-sxm"
    assert list(df.columns[:7]) == ["ceiling", "dtype", "unit", "level", "measured", "datasheet", "ratio"]
    dram = df[(df.ceiling == "bandwidth") & (df.level == "dram")].iloc[0]
    assert dram.ratio == pytest.approx(3.0e12 / 3.35e12)
    assert dram.applied and dram.kernel == "copy_v4"
    assert "H100" in dram.source
    bare = rp.calibration.report(gpu_profile, device="a100")
    assert bare.attrs["device"] == "a100-sxm-80gb"


def test_host_profile_becomes_a_device(rp, repo, host_profile):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(host_profile.read_text()), profile_schema(repo))
    host = rp.device_from_profile(host_profile)
    assert (host.vendor, host.kind, host.family) == ("host", "cpu", "host-cpu")
    assert host.compute_units >= 1
    assert host.bandwidth("dram") > 0 and host.capacity("dram") > 0
    assert host.peak_flops("fp32", "vector") > 0 and host.peak_flops("fp64", "vector") > 0
    assert host.peak_flops("fp32") > 0  # matrix: the measured Eigen GEMM
    prof = rp.calibration.load_profile(host_profile)
    assert all(m["verified"] for m in prof.measurements)
    t = host.time(rp.ops.gemv(4096, 4096, "fp32"))
    # memory-bound; which level binds depends on what a --quick run measured on a loaded machine (L2 can come out
    # slower than DRAM when another process shares the cache)
    assert t.seconds > 0 and t.bound.startswith("memory:")
    # llama.cpp runs its CPU backend there (the measured host has no counted instruction set: the generic kernels)
    for engine in ("llama.cpp", "llama.cpp-cpu"):
        e = rp.estimate(model="llama-3.2-1b", quant="Q4_0", device=host, engine=engine, prompt_tokens=64, gen_tokens=8)
        assert e.decode_tokens_per_s > 0 and e.prefill_tokens_per_s > 0
    with pytest.raises(ValueError, match="does not run on cpu devices"):
        rp.estimate(model="llama-3.2-1b", quant="Q4_0", device=host, engine="vllm")
    df = rp.calibration.report(host_profile)
    assert df.attrs["device"] is None and df.datasheet.isna().all()
    assert {"bandwidth", "peak_flops", "gemm_flops", "launch_overhead"} <= set(df.ceiling)


def test_fit_roofline_from_python(rp):
    bw, peak, t0 = 1e10, 2e11, 1e-5
    pts = []
    for k in (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        flops, nbytes = 2.0 * k * 1e8, 8e8
        pts.append((flops, nbytes, max(nbytes / bw, flops / peak) + t0))
    fit = rp.calibration.fit_roofline(pts)
    assert fit["bandwidth_Bps"] == pytest.approx(bw, rel=0.01)
    assert fit["peak_flops"] == pytest.approx(peak, rel=0.01)
    assert fit["launch_overhead_s"] == pytest.approx(t0, rel=0.01)
    with pytest.raises(ValueError, match="at least 3 sweep points"):
        rp.calibration.fit_roofline(pts[:2])


def test_time_eigen_verifies(rp):
    r = rp.calibration.time_eigen("gemm", 64, 48, 32, "fp64", repetitions=2)
    assert r["verified"] and r["flops"] == 2 * 64 * 48 * 32 and r["median_s"] > 0
    r = rp.calibration.time_eigen("gemv", 0, 100, 50, "fp32", repetitions=2)
    assert r["verified"]
    with pytest.raises(ValueError, match="fp32' or 'fp64"):
        rp.calibration.time_eigen("gemm", 8, 8, 8, "bf16")


def test_measurement_releases_the_gil(rp):
    done = threading.Event()
    ticks = 0

    def work():
        rp.calibration.calibrate_cpu(quick=True)
        done.set()

    th = threading.Thread(target=work)
    th.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    th.join()
    assert ticks > 10


def test_cli_calibrate_cpu_quick(rp, repo, tmp_path, capsys):
    out = tmp_path / "host.json"
    code = main(["calibrate", "cpu", "--quick", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and out.exists()
    assert "peak_flops" in text and "stream_triad" in text and "wrote" in text
    prof = json.loads(out.read_text())
    assert prof["kind"] == "rooflinepy-calibration-profile" and prof["tool"]["options"] == "--quick"
    assert rp.device_from_profile(out).kind == "cpu"
    code = main(["calibrate", "report", str(out), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and any(r["ceiling"] == "launch_overhead" for r in rows)
    code = main(["calibrate", "report", str(tmp_path / "nope.json")])
    assert code == 2 and "cannot open" in capsys.readouterr().err
