"""Every device file validates against schema.json, carries sources, and obeys the database's rules."""
import json
from pathlib import Path

import pytest

import rooflinepy as rp

jsonschema = pytest.importorskip("jsonschema")

DB = Path(__file__).resolve().parents[2] / "hardware_db"
FILES = sorted(p for p in DB.glob("*.json") if p.name != "schema.json")

REQUIRED = [
    "v100-sxm2", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie",
    "h200-sxm", "b200", "gb10", "l40s", "rtx-a6000", "rtx-pro-6000-blackwell", "rtx-3060-12gb", "rtx-3090",
    "rtx-4090", "rtx-5090", "mi300x", "ryzen-ai-max-395", "rx-7900-xtx", "rx-7900-xt",
    "rx-9070-xt", "rx-9070", "radeon-ai-pro-r9700", "rx-6900-xt", "rx-6800-xt", "arc-a770", "arc-b580",
    "rtx-5070-ti", "rtx-5070", "rtx-5060-ti-16gb", "rtx-4070-ti-super", "rtx-4070", "rtx-4060-ti-16gb", "rtx-3080-ti",
    "rtx-3070", "rtx-2080-ti",
    "m1-7c", "m1-8c", "m1-pro-14c", "m1-pro-16c", "m1-max-24c", "m1-max-32c", "m1-ultra-48c", "m1-ultra-64c",
    "m2-8c", "m2-10c", "m2-pro-16c", "m2-pro-19c", "m2-max-30c", "m2-max-38c", "m2-ultra-60c", "m2-ultra-76c",
    "m3-8c", "m3-10c", "m3-pro-14c", "m3-pro-18c", "m3-max-30c", "m3-max-40c", "m3-ultra-60c", "m3-ultra-80c",
    "m4-8c", "m4-10c", "m4-pro-16c", "m4-pro-20c", "m4-max-32c", "m4-max-40c",
]


@pytest.fixture(scope="module")
def schema():
    return json.loads((DB / "schema.json").read_text())


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_validates_against_schema(path, schema):
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, schema)
    assert doc["id"] == path.stem


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_record_has_a_source(path):
    doc = json.loads(path.read_text())

    def records(node):
        if isinstance(node, dict):
            if any(k.endswith(("_GBps", "_GiB", "_MiB", "_KiB", "_TFLOPS", "_MHz", "_W", "_us")) or k == "count"
                   for k in node):
                yield node
            for v in node.values():
                yield from records(v)
        elif isinstance(node, list):
            for v in node:
                yield from records(v)

    found = list(records(doc))
    assert found
    for rec in found:
        assert len(rec.get("source", "")) >= 8, rec


def test_required_devices_are_present():
    ids = set(rp.devices())
    missing = [d for d in REQUIRED if d not in ids]
    assert not missing


def test_ids_and_aliases_are_unique():
    seen = {}
    for path in FILES:
        doc = json.loads(path.read_text())
        for key in [doc["id"], *doc["aliases"]]:
            assert key not in seen, f"{key} in {path.name} and {seen[key]}"
            seen[key] = path.name


@pytest.mark.parametrize("path", [p for p in FILES if p.stem.startswith("m")], ids=lambda p: p.stem)
def test_apple_gpu_flops_are_cores_x_128_x_2_x_clock(path):
    doc = json.loads(path.read_text())
    if doc["vendor"] != "apple":
        pytest.skip("not Apple")
    cores, clock = doc["compute_units"]["count"], doc["clocks"]["boost_MHz"] * 1e6
    fp32 = next(c for c in doc["compute"] if c["format"] == "fp32" and c["unit"] == "vector")
    assert fp32["peak_TFLOPS"] * 1e12 == pytest.approx(cores * 128 * 2 * clock, rel=2e-3)
    matrix = [c for c in doc["compute"] if c["unit"] == "matrix"]
    if doc["family"] != "apple-m5":  # M1-M4: simdgroup matrices run on the ALUs, no matrix units
        assert not matrix
        return
    # M5: the per-core Neural Accelerators, 1024 FP16 (and BF16) FLOP per core and clock (the A19 microbenchmark)
    assert {c["format"] for c in matrix} == {"fp16", "bf16"}
    for c in matrix:
        assert c["peak_TFLOPS"] * 1e12 == pytest.approx(cores * 1024 * clock, rel=2e-3)
        assert c["peak_TFLOPS"] == pytest.approx(4 * fp32["peak_TFLOPS"], rel=2e-3)
        assert "Zakharko" in c["source"] or "fp16 matrix peak" in c["source"]


# FLOP per CU and clock: the VALU with dual issue (FP32 256, packed FP16 512) and GPUOpen's WMMA table (RDNA 3:
# FP16 / BF16 / I8 512; RDNA 4: 1024 / 1024 / 2048, FP8 2048)
RDNA_PER_CU = {
    "amd-rdna3": {("fp32", "vector"): 256, ("fp16", "vector"): 512, ("fp16", "matrix"): 512, ("bf16", "matrix"): 512,
                  ("int8", "matrix"): 512},
    "amd-rdna4": {("fp32", "vector"): 256, ("fp16", "vector"): 512, ("fp16", "matrix"): 1024, ("bf16", "matrix"): 1024,
                  ("fp8_e4m3", "matrix"): 2048, ("fp8_e5m2", "matrix"): 2048, ("int8", "matrix"): 2048},
}
RADEON = [p for p in FILES if json.loads(p.read_text())["family"] in RDNA_PER_CU]


@pytest.mark.parametrize("path", RADEON, ids=[p.stem for p in RADEON])
def test_radeon_peaks_are_cus_x_rate_per_cu_x_clock(path):
    doc = json.loads(path.read_text())
    rates = RDNA_PER_CU[doc["family"]]
    cus, clock = doc["compute_units"]["count"], doc["clocks"]["boost_MHz"] * 1e6
    assert {(c["format"], c["unit"]) for c in doc["compute"]} == set(rates)
    for c in doc["compute"]:
        per_cu = rates[c["format"], c["unit"]]
        assert c["peak_TFLOPS"] * 1e12 == pytest.approx(cus * per_cu * clock, rel=2e-3), c["format"]
    assert doc["memory"]["sram"]["per_unit_KiB"] * 2 == 128  # 128 KiB of LDS per two-CU WGP


def _same(a, b, where=""):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, set(a) ^ set(b))
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        assert b == pytest.approx(a, rel=1e-12), where
    else:
        assert a == b, where


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_core_round_trips_every_file(path):
    """What the core loaded is exactly what the file says (units converted back)."""
    _same(json.loads(path.read_text()), json.loads(rp.device(path.stem).to_json()))


def test_loaded_database_matches_files():
    assert len(rp.devices()) == len(FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_l2_working_set_is_within_the_l2_and_what_the_core_counts_on(path):
    """An L2's measured working set (gpu-benches gpu-l2-cache's plateau) is at most its capacity, its source names
    the measurement, and it is what Device.l2_working_set gives (the capacity where none is recorded)."""
    l2 = json.loads(path.read_text())["memory"].get("l2")
    d = rp.device(path.stem)
    if l2 is None:
        assert d.l2_working_set == 0
        return
    ws = l2.get("working_set_MiB")
    if ws is None:
        assert d.l2_working_set == pytest.approx(l2["capacity_MiB"] * 2**20)
        return
    assert 0 < ws <= l2["capacity_MiB"]
    assert "gpu-l2-cache" in l2["source"] and "working set" in l2["source"].lower()
    assert d.l2_working_set == pytest.approx(ws * 2**20)
