"""Published measurements held against the estimator (``rooflinepy validate``). Predictions come from the core."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import List, Optional

_FIELDS = ["source", "engine", "device", "model", "quant", "test", "batch", "prompt_tokens", "gen_tokens",
           "flash_attention", "tensor_parallel", "measured_tokens_per_s", "tolerance", "notes"]


def data_files() -> List[Path]:
    """The installed measurement tables (CSV with a source column)."""
    from . import data_dir

    return sorted((data_dir() / "validation").glob("*.csv"))


def load(paths: Optional[List[Path]] = None):
    """Every published point as a DataFrame (one row per measurement, with its source)."""
    import pandas as pd

    frames = []
    for path in paths or data_files():
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for i, r in enumerate(rows):
            missing = [k for k in _FIELDS if k not in r]
            if missing:
                raise ValueError(f"{path}: row {i + 2} lacks column(s) {', '.join(missing)}")
        df = pd.DataFrame(rows, columns=_FIELDS)
        df.insert(0, "table", path.stem)
        frames.append(df)
    if not frames:
        raise FileNotFoundError("no validation tables found under " + str(data_dir_validation()))
    return pd.concat(frames, ignore_index=True)


def data_dir_validation() -> Path:
    from . import data_dir

    return data_dir() / "validation"


def run(paths: Optional[List[Path]] = None):
    """Predict every point: measured, predicted (derated roofline + overheads), the pure roofline beside it,
    and their relative errors."""
    import pandas as pd

    from . import estimate

    df = load(paths)
    out = []
    for _, r in df.iterrows():
        e = estimate(model=r["model"], quant=r["quant"], device=r["device"], engine=r["engine"],
                     batch=int(r["batch"]), prompt_tokens=int(r["prompt_tokens"]), gen_tokens=int(r["gen_tokens"]),
                     flash_attention=str(r["flash_attention"]).strip() in ("1", "true", "True"),
                     tensor_parallel=int(r["tensor_parallel"]))
        decode = int(r["gen_tokens"]) > 0
        predicted = e.decode_tokens_per_s if decode else e.prefill_tokens_per_s
        roofline = e.ceilings["decode_tokens_per_s"] if decode else e.ceilings["prefill_tokens_per_s"]
        measured = float(r["measured_tokens_per_s"])
        test = r["test"] or (f"tg{int(r['gen_tokens'])}" if decode else f"pp{int(r['prompt_tokens'])}")
        out.append({"table": r["table"], "device": r["device"], "model": r["model"], "quant": r["quant"],
                    "test": test, "tp": int(r["tensor_parallel"]), "measured": measured, "predicted": predicted,
                    "error": predicted / measured - 1, "roofline": roofline, "roofline_error": roofline / measured - 1,
                    "tolerance": float(r["tolerance"]), "bound": e.decode_bound if decode else e.prefill_bound,
                    "source": r["source"]})
    return pd.DataFrame(out)


def mape(results) -> dict:
    """Mean absolute percentage error of the estimator and of the pure roofline, per table and overall."""
    out = {}
    for name, g in list(results.groupby("table")) + [("all", results)]:
        out[name] = {"estimator": float(g["error"].abs().mean() * 100),
                     "roofline": float(g["roofline_error"].abs().mean() * 100), "points": int(len(g))}
    return out
