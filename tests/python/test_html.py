"""The Jupyter tables (``_repr_html_``) against golden files, and their layout rules: names and words left-aligned,
numbers right-aligned, every table captioned, integer peaks in OP/s.

The golden files are the HTML each object renders today; when a change means to alter them (a new field, new
defaults), regenerate with ``ROOFLINEPY_UPDATE_GOLDEN=1 pytest tests/python/test_html.py`` and review the diff.
"""
import os
import re
from pathlib import Path

import pytest

import rooflinepy as rp

GOLDEN = Path(__file__).parent / "golden"


def objects():
    h100 = rp.device("h100-sxm")
    op = rp.ops.gemm(4096, 4096, 4096, dtype="bf16")
    return {
        "device_h100": h100,
        "op_gemm": op,
        "timing_gemm_h100": h100.time(op),
        "estimate_qwen3_4b_m4_pro": rp.estimate(model="qwen3-4b", quant="Q4_K_M", device="m4-pro", batch=4),
    }


@pytest.mark.parametrize("name", list(objects()))
def test_html_matches_its_golden_file(name):
    html = objects()[name]._repr_html_()
    path = GOLDEN / f"{name}.html"
    if os.environ.get("ROOFLINEPY_UPDATE_GOLDEN"):
        path.write_text(html)
    assert path.exists(), f"{path} missing: run with ROOFLINEPY_UPDATE_GOLDEN=1 once"
    assert html == path.read_text(), f"{name}'s table changed; if meant, regenerate the golden file (see docstring)"


@pytest.mark.parametrize("name", list(objects()))
def test_words_left_numbers_right_every_table_captioned(name):
    html = objects()[name]._repr_html_()
    assert all(c.strip() for c in re.findall(r"<caption>(.*?)</caption>", html)), "an empty caption"
    for cls, text in re.findall(r'<td( class="num")?(?: title="[^"]*")?>(.*?)</td>', html):
        first = text.strip()[:1]
        if cls:
            assert first.isdigit() or first in "+-.", f"a word right-aligned: {text!r}"
        elif first.isdigit() and re.match(r"^[\d.]+( [kMGTP]?(B/s|FLOP/s|OP/s|B|s|ms|µs|ns))?$", text.strip()):
            pytest.fail(f"a number left-aligned: {text!r}")


def test_integer_peaks_are_operations_not_flops():
    html = rp.device("h100-sxm")._repr_html_()
    row = re.search(r"<td>int8</td><td>matrix</td><td[^>]*>([^<]*)</td>", html)
    assert row and row.group(1).endswith("OP/s"), row and row.group(1)
    assert re.search(r"<td>bf16</td><td>matrix</td><td[^>]*>[^<]*FLOP/s</td>", html)


def test_a_model_from_a_config_file_has_a_name(tmp_path):
    import json

    cfg = json.loads((Path(rp.data_dir()) / "model_db" / "qwen3-4b.json").read_text())["config"]
    folder = tmp_path / "Qwen3-4B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    m = rp.Model.from_hf_config(folder / "config.json")
    assert m.id == "Qwen3-4B"  # the folder of a config.json
    assert rp.Model.from_hf_config(dict(cfg, _name_or_path="Qwen/Qwen3-4B")).id == "Qwen3-4B"
    assert rp.Model.from_hf_config(cfg).id == "qwen3"  # no path: its model_type
    assert repr(rp.estimate(model=m, quant="bf16", device="h100", engine="generic")).startswith("<Estimate Qwen3-4B bf16")
