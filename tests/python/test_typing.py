"""The Python layer's one wrapping style, its generated field declarations, and the typed README tour."""
import pickle
import subprocess
import sys
import typing

import pytest

import rooflinepy as rp
from rooflinepy import _core, _fields

PUBLIC_TYPES = [rp.Device, rp.DeviceDB, rp.OpCost, rp.Timing, rp.CeilingTimes, rp.Model, rp.Architecture,
                rp.Estimate, rp.FitReport, rp.Engine, rp.EngineBackend, rp.LinearKernel, rp.calibration.Profile]
PYTHON_TYPES = {"double": float, "bool": bool, "int": int, "PhaseBound": str, "std::string": str}


@pytest.mark.parametrize("cls", PUBLIC_TYPES, ids=lambda c: c.__name__)
def test_every_public_type_wraps_its_core_object_in_a_slot(cls):
    assert cls.__module__.startswith("rooflinepy.") and not cls.__module__.startswith("rooflinepy._core")
    assert "_core" in cls.__slots__
    assert cls.__doc__


def test_no_core_class_is_patched_from_python():
    for name in ("Device", "OpCost", "Timing", "Estimate"):
        core = getattr(_core, name)
        assert "_repr_html_" not in vars(core) and "calibrated" not in vars(core), name
    assert "to_dict" not in vars(_core.Device)


def test_public_functions_return_the_python_types():
    dev = rp.device("a100")
    op = rp.ops.gemm(64, 64, 64)
    assert type(dev) is rp.Device and type(op) is rp.OpCost and type(dev.time(op)) is rp.Timing
    assert type(rp.evaluate(op, "a100")) is rp.Timing and type(op + op) is rp.OpCost and type(2 * op) is rp.OpCost
    assert type(rp.database()) is rp.DeviceDB and type(rp.database().get("h100")) is rp.Device
    assert type(rp.model("qwen3-4b")) is rp.Model and type(rp.model("qwen3-4b").arch) is rp.Architecture
    assert type(rp.estimate("qwen3-4b", "Q4_K_M", "m4-pro")) is rp.Estimate
    eng = rp.engine("llama.cpp")
    assert type(eng) is rp.Engine and type(eng.backend("any")) is rp.EngineBackend
    assert all(type(k) is rp.LinearKernel for k in eng.backend("any").linear_kernels)
    assert type(eng.on("h100")) is rp.EngineBackend and type(dev.time(op).times) is rp.CeilingTimes
    cal, report = rp.calibrate_from_measurements(
        "m1-max-32c", [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128", "tokens_per_s": 40.2}],
        return_report=True)
    assert type(cal) is rp.Device and type(report) is rp.FitReport


def test_a_device_may_be_a_name_a_device_or_the_cores_device():
    dev = rp.device("h100")
    op = rp.ops.gemm(64, 64, 64)
    for d in ("h100", dev, dev._core):
        assert rp.device(d).id == "h100-sxm"
        assert rp.evaluate(op, d).seconds == dev.time(op).seconds
        assert rp.estimate("llama-3.2-1b", "Q4_K_M", d).decode_tokens_per_s == \
            rp.estimate("llama-3.2-1b", "Q4_K_M", "h100").decode_tokens_per_s
        assert rp.ops.attention(1, 8, 1024, kind="flash", device=d).bytes == \
            rp.ops.attention(1, 8, 1024, kind="flash", device="h100").bytes


def test_wrappers_pickle_as_themselves():
    op = rp.ops.gemm(64, 64, 64)
    for obj in (op, rp.device("h100"), rp.device("h100").time(op)):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and repr(back) == repr(obj)


def test_generated_fields_are_the_cores_field_table():
    table = _core.estimate_fields()
    assert _fields.FIELDS == tuple(f[0] for f in table)
    assert _fields.CONFIG_FIELDS == tuple(f[0] for f in table if f[4])
    hints = typing.get_type_hints(_fields.EstimateFields)
    assert list(hints) == [f[0] for f in table]
    for name, cpp_type, _unit, _meaning, _config in table:
        assert hints[name] is PYTHON_TYPES[cpp_type], name
    est = rp.estimate("qwen3-4b", "Q4_K_M", "m4-pro")
    for name, cpp_type, _unit, _meaning, _config in table:
        assert isinstance(getattr(est, name), PYTHON_TYPES[cpp_type]), name
    assert issubclass(rp.Estimate, _fields.EstimateFields)


def test_the_typed_readme_tour_runs(repo, tmp_path):
    out = subprocess.run([sys.executable, str(repo / "examples" / "readme_tour.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("README tour:")
