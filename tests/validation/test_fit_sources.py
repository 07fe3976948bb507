"""calibration/fit_defaults.py writes each fitted or derived value's source into the engine's own text: one segment
per field, replaced (not appended again) on every run, whatever "; " the segments hold."""
import importlib.util
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fit_defaults", ROOT / "calibration" / "fit_defaults.py")
fit_defaults = importlib.util.module_from_spec(_spec)
_env = os.environ.get("ROOFLINE_DATA_DIR")
_spec.loader.exec_module(fit_defaults)  # it points ROOFLINE_DATA_DIR at the checkout: put back what was there
if _env is None:
    os.environ.pop("ROOFLINE_DATA_DIR", None)
else:
    os.environ["ROOFLINE_DATA_DIR"] = _env

DERIVED = ("alu_ops_per_mac written by calibration/fit_defaults.py (derived, tests/validation/fits.json): llama.cpp "
           "cuda x + 0; the same source built for HIP; its int8 products replace mma.sync")
EFFICIENCY = ("efficiency fitted by calibration/fit_defaults.py (fit 'A' of tests/validation/fits.json) to t.csv "
              "(6 points; in-sample MAPE 4.9 %)")


def test_a_segment_is_replaced_not_appended_again():
    once = fit_defaults._replace_fitted("the kernel, read from x.cu; tiles of 128", DERIVED)
    assert fit_defaults._replace_fitted(once, DERIVED) == once
    both = fit_defaults._replace_fitted(once, EFFICIENCY)
    assert both == "the kernel, read from x.cu; tiles of 128; " + DERIVED + "; " + EFFICIENCY
    assert fit_defaults._replace_fitted(both, DERIVED) == "the kernel, read from x.cu; tiles of 128; " + EFFICIENCY \
        + "; " + DERIVED  # the other field's segment keeps its tail ("in-sample MAPE ...")
    assert fit_defaults._replace_fitted("", EFFICIENCY) == EFFICIENCY


def test_no_committed_kernel_source_names_a_field_twice():
    mark = re.compile(r"(?:^|; )([A-Za-z_]+) (?:fitted|written) by calibration/fit_defaults\.py")
    for path in sorted((ROOT / "engine_db").glob("*.json")):
        if path.name == "schema.json":
            continue
        for backend, b in json.loads(path.read_text())["backends"].items():
            for k in b.get("linear_kernels", {}).get("value", []):
                fields = mark.findall(k.get("source", ""))
                assert len(fields) == len(set(fields)), (path.name, backend, k["name"], fields)
