"""Published measurements held against the estimator (``rooflinepy validate``). Predictions come from the core."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    import pandas as pd

_FIELDS = ["source", "engine", "device", "model", "quant", "test", "batch", "prompt_tokens", "gen_tokens",
           "flash_attention", "tensor_parallel", "measured_tokens_per_s", "tolerance", "notes"]


def data_files() -> List[Path]:
    """The installed measurement tables (CSV with a source column)."""
    from . import data_dir

    return sorted((data_dir() / "validation").glob("*.csv"))


def load(paths: Optional[List[Path]] = None) -> pd.DataFrame:
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


def run(paths: Optional[List[Path]] = None) -> pd.DataFrame:
    """Predict every point in the core: measured, predicted (derated roofline + overheads), the pure roofline beside
    it, and their relative errors."""
    import pandas as pd

    from . import _core, device, model

    df = load(paths)
    rows, models, devices = [], [], []
    for _, r in df.iterrows():
        decode = int(r["gen_tokens"]) > 0
        rows.append({"table": r["table"], "source": r["source"], "quant": r["quant"], "engine": r["engine"],
                     "test": r["test"] or (f"tg{int(r['gen_tokens'])}" if decode else f"pp{int(r['prompt_tokens'])}"),
                     "batch": float(int(r["batch"])), "prompt_tokens": float(int(r["prompt_tokens"])),
                     "gen_tokens": float(int(r["gen_tokens"])),
                     "flash_attention": str(r["flash_attention"]).strip() in ("1", "true", "True"),
                     "tensor_parallel": int(r["tensor_parallel"]),
                     "measured_tokens_per_s": float(r["measured_tokens_per_s"]), "tolerance": float(r["tolerance"])})
        models.append(model(r["model"])._core)
        devices.append(device(r["device"])._core)
    return pd.DataFrame(_core.validate(rows, models, devices))


def mape(results: pd.DataFrame) -> Dict[str, Dict[str, Any]]:
    """Mean absolute percentage error of the estimator and of the pure roofline, per table and overall (the core's
    summary: estimator, roofline, their largest errors, points)."""
    from . import _core

    return dict(_core.summarize_validation(list(zip(results["table"], results["error"], results["roofline_error"]))))
