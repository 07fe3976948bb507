import json
import subprocess
import sys

import pytest

from rooflinepy.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_devices_table_and_json(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0 and "a100-sxm-80gb" in out and "m4-max-40c" in out
    code, out, _ = run(capsys, "devices", "--json")
    data = json.loads(out)
    assert any(d["id"] == "h100-sxm" for d in data)


def test_device_shows_ceilings_and_ridge_points(capsys):
    code, out, _ = run(capsys, "device", "h100-sxm")
    assert code == 0
    assert "H100" in out and "ridge" in out and "3.35 TB/s" in out
    code, out, _ = run(capsys, "device", "h100", "--json")
    data = json.loads(out)
    assert data["id"] == "h100-sxm"
    assert data["ridge_points"]["bf16/matrix"]["dram"] == pytest.approx(295.3, rel=1e-3)


def test_op_gemm_counts_time_and_bound(capsys):
    code, out, _ = run(capsys, "op", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "fp16",
                       "--device", "a100")
    assert code == 0
    assert "137.4 GFLOP" in out and "compute-bound" in out
    code, out, _ = run(capsys, "op", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--device", "a100", "--json")
    data = json.loads(out)
    assert data["op"]["flops"] == 2 * 4096**3
    assert data["ideal"]["bound"] == "compute"


def test_op_attention_flash(capsys):
    code, out, _ = run(capsys, "op", "attention", "--heads", "32", "--seq-q", "4096", "--kind", "flash", "--device",
                       "a100", "--json")
    assert code == 0
    assert json.loads(out)["op"]["name"] == "flash attention 4096×4096, 32 heads of 128 (FA-2)"  # its shape


@pytest.mark.parametrize("args, message", [
    (["device", "h10"], "did you mean 'h100-sxm'"),
    (["op", "gemm", "--m", "-1", "--n", "2", "--k", "2"], "gemm m must be a whole number >= 0"),
    (["op", "gemm", "--m", "1", "--n", "2", "--k", "2", "--dtype", "fp17"], "unknown storage format 'fp17'"),
    (["op", "attention", "--heads", "2", "--seq-q", "8", "--kind", "flash"], "sram_bytes= or device="),
])
def test_errors_exit_nonzero_with_message_and_no_traceback(args, message):
    proc = subprocess.run([sys.executable, "-m", "rooflinepy", *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def _strict_json(text):
    """json.loads refusing the NaN / Infinity tokens that are not JSON (RFC 8259), as jq and JSON.parse do."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("args", [
    ["validate", "--json"],  # leave-one-out figures of one-device fits are missing (NaN in the core's table)
    ["plot", "validation", "--fit", "gpt-fast", "-o", "{tmp}/v.png", "--json"],
    ["estimate", "-m", "llama-3.1-8b", "-q", "Q4_0", "-dev", "rtx-4090,m4-max", "-p", "512", "-n", "0", "--json"],
    ["device", "epyc-9654", "--json"],  # a CPU: no matrix units, no fp16 ridge
    ["sweep", "-m", "qwen3-0.6b", "-q", "Q4_0", "-d", "m4-pro,epyc-9654", "-b", "1", "-p", "0,128", "--json"],
], ids=["validate", "plot-validation", "estimate", "device-cpu", "sweep"])
def test_json_output_is_strict_json_with_null_for_missing_numbers(args, capsys, tmp_path):
    code, out, _ = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 0
    _strict_json(out)
    if args[0] == "validate":
        cv = _strict_json(out)["cross_validation"]
        seed = [r for r in cv if r["table"] == "seed_m4_pro"]
        assert seed and all(r["lodo"] is None for r in seed)  # one device: nothing to leave out, null not NaN


def test_json_text_writes_missing_and_unbounded_numbers_as_null():
    import numpy as np

    from rooflinepy._cli_common import json_text

    data = {"a": float("nan"), "b": [1.5, float("inf"), np.float64("nan"), np.int64(3)], "c": np.array([1.0, np.inf])}
    assert _strict_json(json_text(data)) == {"a": None, "b": [1.5, None, None, 3], "c": [1.0, None]}
