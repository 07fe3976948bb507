"""Every README line runs as written: each ```python block is executed top to bottom, each `rooflinepy ...` line
of the ```bash blocks runs through the CLI (and again with --json, which every command takes).

The files the README's lines name (config.json, model.gguf, h200.json) are written into a temporary working
directory first: a catalogue model's config, a small GGUF written by ggml's `gguf` package, a GPU calibration
profile of the form roofline-calibrate-cuda writes. Two lines need what this machine may not have and are
shortened, not skipped: `calibrate_cpu()` / `calibrate cpu` measure this host in their quick mode (the same kernels,
smaller arrays), and `roofline-calibrate-cuda` runs only where it is installed and a GPU is present.
"""
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import rooflinepy as rp
from rooflinepy.cli import main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)

H200_PROFILE = {
    "schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2026-01-01T00:00:00Z",
    "tool": {"name": "roofline-calibrate-cuda", "version": "0.1.0"},
    "device": {"name": "NVIDIA H200", "vendor": "nvidia", "kind": "gpu", "sm_count": 132, "clock_MHz": 1980,
               "memory_bytes": 150754820096, "l2_bytes": 52428800, "driver": "560.35.03", "toolkit": "12.6"},
    "measurements": [
        {"ceiling": "bandwidth", "level": "dram", "kernel": "copy_v4", "repetitions": 20, "si_unit": "B/s",
         "min": 4.0e12, "median": 4.1e12, "max": 4.2e12, "verified": True},
        {"ceiling": "launch_overhead", "kernel": "empty_kernel", "repetitions": 1000, "si_unit": "s",
         "min": 2e-6, "median": 2.5e-6, "max": 5e-6, "verified": True},
    ],
}


@pytest.fixture()
def readme_files(tmp_path, monkeypatch):
    """A working directory holding the files the README's lines read."""
    monkeypatch.chdir(tmp_path)
    config = json.loads((REPO / "model_db" / "qwen3-4b.json").read_text())["config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "h200.json").write_text(json.dumps(H200_PROFILE))
    gguf = pytest.importorskip("gguf")
    import numpy as np

    w = gguf.GGUFWriter(str(tmp_path / "model.gguf"), "llama")
    for key, value in (("llama.context_length", 4096), ("llama.embedding_length", 256), ("llama.block_count", 1),
                       ("llama.attention.head_count", 4), ("llama.feed_forward_length", 512)):
        w.add_uint32(key, value)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-6)
    rng = np.random.default_rng(0)
    for name, shape in (("token_embd.weight", (64, 256)), ("blk.0.attn_norm.weight", (256,)),
                        ("blk.0.attn_q.weight", (256, 256)), ("blk.0.attn_k.weight", (256, 256)),
                        ("blk.0.attn_v.weight", (256, 256)), ("blk.0.attn_output.weight", (256, 256)),
                        ("blk.0.ffn_norm.weight", (256,)), ("blk.0.ffn_gate.weight", (512, 256)),
                        ("blk.0.ffn_up.weight", (512, 256)), ("blk.0.ffn_down.weight", (256, 512)),
                        ("output_norm.weight", (256,)), ("output.weight", (64, 256))):
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float16 if len(shape) > 1 else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    quick = rp.calibration.calibrate_cpu
    monkeypatch.setattr(rp.calibration, "calibrate_cpu", lambda *a, **k: quick(*a, **{**k, "quick": True}))
    return tmp_path


def test_the_readme_has_the_blocks_this_test_runs():
    kinds = [k for k, _ in BLOCKS]
    assert kinds.count("python") >= 3 and kinds.count("bash") >= 2
    assert any("rp.explore(" in body for k, body in BLOCKS if k == "python")


@pytest.mark.parametrize("index", [i for i, (k, _) in enumerate(BLOCKS) if k == "python"])
def test_python_block_runs_as_written(index, readme_files):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    body = BLOCKS[index][1]
    if "rp.explore(" in body:
        pytest.importorskip("ipywidgets")
    namespace = {"rp": rp}
    if not body.lstrip().startswith("import rooflinepy"):
        # a block after the tour continues it: the names the tour defined are there
        for k, earlier in BLOCKS[:index]:
            if k == "python" and earlier.lstrip().startswith("import rooflinepy"):
                exec(compile(earlier, "README.md (tour)", "exec"), namespace)
                break
    exec(compile(body, f"README.md (python block {index})", "exec"), namespace)


def _cli_lines():
    lines = []
    for kind, body in BLOCKS:
        if kind != "bash":
            continue
        for raw in body.splitlines():
            code = raw.split(" #")[0].strip()
            if code.startswith("rooflinepy "):
                # `[name]` marks an optional argument: run the line with it
                lines.append(re.sub(r"\[([^\]]+)\]", r"\1", code))
    return lines


CLI_LINES = _cli_lines()


def test_the_readme_names_every_subcommand():
    commands = {shlex.split(line)[1] for line in CLI_LINES}
    assert commands >= {"devices", "device", "op", "estimate", "models", "quants", "engines", "validate", "sweep",
                        "calibrate", "plot"}


@pytest.mark.parametrize("line", CLI_LINES)
def test_cli_line_runs_as_written_and_with_json(line, readme_files, capsys):
    pytest.importorskip("matplotlib")
    args = shlex.split(line)[1:]
    if "-o" in args and args[args.index("-o") + 1].endswith(".parquet"):
        pytest.importorskip("pyarrow")
    assert main(args) == 0, line
    out = capsys.readouterr().out
    if "-o" in args:
        assert (readme_files / args[args.index("-o") + 1]).stat().st_size > 0
    else:
        assert out.strip(), line
    if "--json" not in args:
        assert main(args + ["--json"]) == 0, line + " --json"
        json.loads(capsys.readouterr().out)


def test_the_two_commands_and_the_cuda_tool_exist():
    for script in ("scripts/run.sh", "scripts/test.sh", ".ci/run"):
        path = REPO / script
        assert path.is_file() and path.stat().st_mode & 0o111, script
    assert "scripts/run.sh" in README and "scripts/test.sh" in README
    tool = shutil.which("roofline-calibrate-cuda")
    if tool is None or shutil.which("nvidia-smi") is None:
        pytest.skip("roofline-calibrate-cuda needs a CUDA build and an NVIDIA GPU")
    out = Path("h200-ci.json")
    assert subprocess.run([tool, "-o", str(out)], timeout=600).returncode == 0
