"""Published measurements held against the estimator (``rooflinepy validate``), and the engine fits of the
calibration corpus with their cross-validation. Predictions, fits and error summaries come from the core.

Two kinds of table live in ``validation/`` (tests/validation in the repository):

- **point tables**: one row per measurement with a ``source`` column (``seed_m4_pro.csv``, ``gpt_fast_a100*.csv``);
- **wide corpus tables**, copied verbatim from llama.cpp's scoreboards: one row per chip, one column per
  (quantization, test); ``corpus_tables.csv`` says what each column measures and ``corpus_devices.csv`` which
  device (and chip generation) each row is.

``fits.json`` names, per engine backend, the tables its free parameters are fitted to and the parameters with
their bounds: ``calibration/fit_defaults.py`` writes the fitted values into engine_db, and :func:`cross_validate`
reports in-sample, leave-one-device-out and leave-one-generation-out errors of the same fit.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    import pandas as pd

    from ._engine import Engine

_FIELDS = ["source", "engine", "device", "model", "quant", "test", "batch", "prompt_tokens", "gen_tokens",
           "flash_attention", "tensor_parallel", "measured_tokens_per_s", "tolerance", "notes"]

Point = Dict[str, Any]


def data_dir_validation() -> Path:
    from . import data_dir

    return data_dir() / "validation"


def _comment_lines(path: Path) -> List[str]:
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            out.append(line[1:].strip())
    return out


def _rows(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _is_point_table(path: Path) -> bool:
    rows = _rows(path)
    return bool(rows) and "source" in rows[0] and "measured_tokens_per_s" in rows[0]


def data_files() -> List[Path]:
    """The installed point tables (one measurement per row, with a source column)."""
    return [p for p in sorted(data_dir_validation().glob("*.csv")) if _is_point_table(p)]


def _flag(text: str) -> bool:
    return str(text).strip() in ("1", "true", "True")


def _test_tokens(test: str, table: str) -> Tuple[float, float]:
    """(prompt_tokens, gen_tokens) of a llama-bench test name: ppN or tgN."""
    if len(test) > 2 and test[:2] in ("pp", "tg") and test[2:].isdigit():
        n = float(int(test[2:]))
        return (n, 0.0) if test[:2] == "pp" else (0.0, n)
    raise ValueError(f"{table}: test '{test}' is not a llama-bench test name (ppN or tgN)")


def _point_table_points(path: Path) -> List[Point]:
    out: List[Point] = []
    for i, r in enumerate(_rows(path)):
        missing = [k for k in _FIELDS if k not in r]
        if missing:
            raise ValueError(f"{path}: row {i + 2} lacks column(s) {', '.join(missing)}")
        gen = float(int(r["gen_tokens"]))
        out.append({"table": path.stem, "source": r["source"], "engine": r["engine"], "device": r["device"],
                    "model": r["model"], "quant": r["quant"],
                    "test": r["test"] or (f"tg{int(gen)}" if gen > 0 else f"pp{int(r['prompt_tokens'])}"),
                    "batch": float(int(r["batch"])), "prompt_tokens": float(int(r["prompt_tokens"])),
                    "gen_tokens": gen, "flash_attention": _flag(r["flash_attention"]),
                    "tensor_parallel": int(r["tensor_parallel"]),
                    "measured_tokens_per_s": float(r["measured_tokens_per_s"]), "tolerance": float(r["tolerance"]),
                    "generation": r["device"]})
    return out


def _corpus_points(path: Path, columns: List[Dict[str, str]], names: List[Dict[str, str]]) -> List[Point]:
    """The measurements of a wide table: each non-empty cell of a described column is one point."""
    table = path.stem
    source = " ".join(_comment_lines(path))
    rows = _rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows")
    name_col = next(iter(rows[0].keys()))  # chip or gpu
    out: List[Point] = []
    for i, r in enumerate(rows):
        cores = r.get("gpu_cores", "")
        match = [n for n in names if n["table"] == table and n["name"] == r[name_col] and n["gpu_cores"] == cores]
        if len(match) != 1:
            raise ValueError(f"{path}: row {i + 2} ('{r[name_col]}' {cores}) has {len(match)} entries in "
                             f"corpus_devices.csv; exactly one is needed")
        dev = match[0]
        for c in columns:
            if c["column"] not in r:
                raise ValueError(f"{path}: corpus_tables.csv names a column '{c['column']}' the table lacks "
                                 f"(it has {', '.join(r)})")
            cell = r[c["column"]].strip()
            if not cell:
                continue  # memory too small, or nothing posted
            prompt, gen = _test_tokens(c["test"], table)
            out.append({"table": table, "source": source, "engine": c["engine"], "device": dev["device"],
                        "model": c["model"], "quant": c["quant"], "test": c["test"], "batch": 1.0,
                        "prompt_tokens": prompt, "gen_tokens": gen, "flash_attention": _flag(c["flash_attention"]),
                        "tensor_parallel": 1, "measured_tokens_per_s": float(cell), "tolerance": 0.0,
                        "generation": dev["generation"]})
    return out


def points(tables: Optional[List[str]] = None, directory: Optional[Path] = None) -> List[Point]:
    """Every measurement of the point tables and the corpus tables (or of the tables named), one dict each: the
    workload (engine, device, model, quant, test, batch, prompt/gen tokens, flash_attention, tensor_parallel), the
    measured tokens/s, the tolerance (0 for corpus points), the table, its source and the chip generation."""
    folder = directory or data_dir_validation()
    described = _rows(folder / "corpus_tables.csv")
    names = _rows(folder / "corpus_devices.csv")
    out: List[Point] = []
    found = set()
    serving = set(serving_spec(folder)["tables"])  # the serving tables: serving_points()
    for path in sorted(folder.glob("*.csv")):
        if path.stem in ("corpus_tables", "corpus_devices") or path.stem in serving or \
                (tables is not None and path.stem not in tables):
            continue
        found.add(path.stem)
        if _is_point_table(path):
            out += _point_table_points(path)
        else:
            columns = [c for c in described if c["table"] == path.stem]
            if not columns:
                raise ValueError(f"{path}: neither a point table (with source and measured_tokens_per_s columns) "
                                 f"nor described in corpus_tables.csv")
            out += _corpus_points(path, columns, names)
    missing = sorted(set(tables or []) - found)
    if missing:
        have = sorted(p.stem for p in folder.glob("*.csv"))
        raise ValueError(f"no validation table {', '.join(missing)} under {folder}; there are: {', '.join(have)}")
    return out


def _points_of(paths: Optional[List[Path]]) -> List[Point]:
    if paths is None:
        return points()
    pts: List[Point] = []
    for p in paths:
        pts += _point_table_points(p) if _is_point_table(p) else points([p.stem], p.parent)
    return pts


def load(paths: Optional[List[Path]] = None) -> pd.DataFrame:
    """Every published point as a DataFrame (one row per measurement, with its source)."""
    import pandas as pd

    pts = _points_of(paths)
    if not pts:
        raise FileNotFoundError("no validation tables found under " + str(data_dir_validation()))
    return pd.DataFrame(pts)


def _core_inputs(pts: List[Point]) -> Tuple[List[Point], List[Any], List[Any]]:
    from . import device, model

    models: Dict[str, Any] = {}
    devices: Dict[str, Any] = {}
    for p in pts:
        if p["model"] not in models:
            models[p["model"]] = model(p["model"])._core
        if p["device"] not in devices:
            devices[p["device"]] = device(p["device"])._core
    return pts, [models[p["model"]] for p in pts], [devices[p["device"]] for p in pts]


def run(paths: Optional[List[Path]] = None) -> pd.DataFrame:
    """Predict every point with the defaults in the core: measured, predicted (derated roofline + overheads), the
    pure roofline beside it, and their relative errors."""
    import pandas as pd

    from . import _core

    pts, models, devices = _core_inputs(_points_of(paths))
    out = pd.DataFrame(_core.validate(pts, models, devices))
    out["generation"] = [p["generation"] for p in pts]
    return out


def mape(results: pd.DataFrame) -> Dict[str, Dict[str, Any]]:
    """Mean absolute percentage error of the estimator and of the pure roofline, per table and overall (the core's
    summary: estimator, roofline, their largest errors, points)."""
    from . import _core

    return dict(_core.summarize_validation(list(zip(results["table"], results["error"], results["roofline_error"]))))


# ---- engine fits -------------------------------------------------------------------------------------------------
def fits(directory: Optional[Path] = None) -> List[Dict[str, Any]]:
    """The engine fits of ``fits.json``: per fit its engine, backend, tables and parameters (key, lo, hi)."""
    path = (directory or data_dir_validation()) / "fits.json"
    with open(path) as f:
        spec = json.load(f)
    out = spec.get("fits")
    if not isinstance(out, list) or not out:
        raise ValueError(f"{path}: 'fits' must be a non-empty list")
    for i, x in enumerate(out):
        for key in ("name", "engine", "backend", "tables", "parameters"):
            if key not in x:
                raise ValueError(f"{path}: fits[{i}] lacks '{key}'")
    return out


def phase_of(point: Point) -> str:
    """The phase a point measures: decode for a llama-bench tgN test, else prefill."""
    return "decode" if str(point["test"]).startswith("tg") else "prefill"


def fit_points(fit: Dict[str, Any], directory: Optional[Path] = None) -> List[Point]:
    """The measurements a fit is fitted to, each of its phase."""
    return points(list(fit["tables"]), directory)


def _params(fit: Dict[str, Any]) -> List[Tuple[str, str, float, float]]:
    return [(fit["backend"], p["key"], float(p["lo"]), float(p["hi"])) for p in fit["parameters"]]


def fit_engine(fit: Dict[str, Any], start: Optional[Engine] = None,
               directory: Optional[Path] = None) -> Tuple[Engine, List[float], List[Point]]:
    """Fit a fit's parameters to its tables (least squares on log(predicted / measured), in the core), from the
    engine's current values or `start`: (fitted engine, values in parameter order, points with 'predicted')."""
    from . import _core
    from ._engine import Engine, engine

    e = start or engine(fit["engine"])
    pts, models, devices = _core_inputs(fit_points(fit, directory))
    r = _core.fit_engine(e._core, _params(fit), pts, models, devices)
    for p, y in zip(pts, r.predicted):
        p["predicted"] = y
    return Engine(r.engine), list(r.values), pts


def cross_validate(fit: Dict[str, Any], directory: Optional[Path] = None, start: Optional[Engine] = None) -> pd.DataFrame:
    """Every point of a fit's tables (its phase: decode for a tgN test, else prefill) predicted four ways: by the
    committed defaults, by the fit to all points (in-sample), by a fit without the point's device
    (leave-one-device-out), by a fit without its chip generation (leave-one-generation-out, where the tables span
    more than one); and the pure roofline. Errors are predicted / measured − 1. `start`: the engine to start from
    (default: engine_db's)."""
    import pandas as pd

    from . import _core
    from ._engine import engine

    e = start or engine(fit["engine"])
    pts, models, devices = _core_inputs(fit_points(fit, directory))
    params = _params(fit)
    defaults = _core.predict_points(e._core, pts, models, devices)
    in_sample = _core.fit_engine(e._core, params, pts, models, devices).predicted
    nan = [float("nan")] * len(pts)
    devs = [p["device"] for p in pts]
    lodo = _core.cross_validate_engine(e._core, params, pts, models, devices, devs) if len(set(devs)) > 1 else nan
    gens = [p["generation"] for p in pts]
    logo = _core.cross_validate_engine(e._core, params, pts, models, devices, gens) if len(set(gens)) > 1 else nan
    roof = _core.validate(pts, models, devices)
    rows = []
    for p, d, i, o, g, r in zip(pts, defaults, in_sample, lodo, logo, roof):
        m = p["measured_tokens_per_s"]
        rows.append({"fit": fit["name"], "table": p["table"], "device": p["device"], "generation": p["generation"],
                     "model": p["model"], "quant": p["quant"], "test": p["test"],
                     "phase": phase_of(p),
                     "flash_attention": p["flash_attention"], "tensor_parallel": p["tensor_parallel"],
                     "measured": m, "defaults": d, "in_sample": i,
                     "lodo": o, "logo": g, "roofline": r["roofline"],
                     "defaults_error": d / m - 1, "in_sample_error": i / m - 1, "lodo_error": o / m - 1,
                     "logo_error": g / m - 1, "roofline_error": r["roofline"] / m - 1})
    return pd.DataFrame(rows)


def interval_coverage(table: str, engine: str, directory: Optional[Path] = None) -> List[Dict[str, Any]]:
    """A table's points held to one engine's committed defaults through ``rp.estimate`` at each point's settings,
    per phase: points, MAPE and largest error of the estimates (percent), and the share of the measurements that lie
    inside the estimates' prediction interval (80 % claimed)."""
    from . import _core
    from .inference import estimate

    rows: Dict[str, List[Tuple[float, bool]]] = {}
    for p in points([table], directory):
        est = estimate(p["model"], p["quant"], p["device"], engine=engine, prompt_tokens=int(p["prompt_tokens"]),
                       gen_tokens=int(p["gen_tokens"]), batch=int(p["batch"]),
                       tensor_parallel=int(p["tensor_parallel"]), flash_attention=bool(p["flash_attention"]))
        phase = phase_of(p)
        lo, hi = getattr(est, f"{phase}_tokens_per_s_interval")
        m = p["measured_tokens_per_s"]
        rows.setdefault(phase, []).append((getattr(est, f"{phase}_tokens_per_s") / m - 1, lo <= m <= hi))
    out = []
    for phase, r in rows.items():
        s = _core.summarize_validation([("t", e, 0.0) for e, _ in r])["t"]
        out.append({"table": table, "engine": engine, "phase": phase, "points": len(r), "mape": s["estimator"],
                    "max": s["estimator_max"], "in_interval": sum(i for _, i in r) / len(r)})
    return out


def cross_validation_summary(cv: pd.DataFrame) -> List[Dict[str, Any]]:
    """Per (table, phase): MAPE and largest error, in percent, of the defaults, in-sample, leave-one-device-out,
    leave-one-generation-out and the pure roofline (the core's summary)."""
    from . import _core

    out = []
    for (table, phase), g in cv.groupby(["table", "phase"], sort=False):
        row: Dict[str, Any] = {"table": table, "phase": phase, "points": len(g)}
        for kind in ("defaults", "in_sample", "lodo", "logo"):
            if g[f"{kind}_error"].isna().all():
                row[kind] = row[kind + "_max"] = float("nan")
                continue
            s = _core.summarize_validation(list(zip(["t"] * len(g), g[f"{kind}_error"], g["roofline_error"])))["t"]
            row[kind], row[kind + "_max"] = s["estimator"], s["estimator_max"]
            row["roofline"], row["roofline_max"] = s["roofline"], s["roofline_max"]
        out.append(row)
    return out


def one_shot_calibration(table: str = "llamacpp_metal_llama2_7b", engine: str = "llama.cpp-metal-2023",
                         reference: str = "Q8_0", test: str = "tg128") -> pd.DataFrame:
    """One measurement per chip → the chip's other quantizations: each device of `table` calibrated
    (``calibrate_from_measurements``) from its `reference` `test` alone, then the table's other quantizations of that
    test predicted with it. One row per prediction: device, quant, measured, predicted, error."""
    import pandas as pd

    from .inference import calibrate_from_measurements, estimate

    by: Dict[str, Dict[str, Point]] = {}
    for p in points([table]):
        if p["test"] == test:
            by.setdefault(p["device"], {})[p["quant"]] = p
    rows = []
    for dev, q in by.items():
        if reference not in q:
            continue
        ref = q[reference]
        cal = calibrate_from_measurements(dev, [{"model": ref["model"], "quant": reference, "test": test,
                                                 "tokens_per_s": ref["measured_tokens_per_s"]}], engine=engine,
                                          flash_attention=bool(ref["flash_attention"]))
        for quant, p in q.items():
            if quant == reference:
                continue
            e = estimate(model=p["model"], quant=quant, device=cal, prompt_tokens=p["prompt_tokens"],
                         gen_tokens=p["gen_tokens"], engine=engine, flash_attention=bool(p["flash_attention"]))
            y = e.decode_tokens_per_s if p["gen_tokens"] > 0 else e.prefill_tokens_per_s
            rows.append({"table": table, "device": dev, "quant": quant, "measured": p["measured_tokens_per_s"],
                         "predicted": y, "error": y / p["measured_tokens_per_s"] - 1})
    return pd.DataFrame(rows)


# ---- serving: TensorRT-LLM's published tables (rp.serve and rp.estimate with engine trt-llm) ------------------------

def serving_spec(directory: Optional[Path] = None) -> Dict[str, Any]:
    """``serving.json``: how the TensorRT-LLM tables map to catalogue ids, the settings of the published runs and
    the serving parameters fitted to them."""
    with open((directory or data_dir_validation()) / "serving.json") as f:
        spec: Dict[str, Any] = json.load(f)
    return spec


def serving_points(directory: Optional[Path] = None) -> "pd.DataFrame":
    """Every predictable row of the TensorRT-LLM tables: table, kind (serving: rp.serve at offline max load;
    static: one static batch, rp.estimate; ttft: a batch-1 prompt), gpu, device, model, quant, kv_dtype, parallel,
    batch, prompt_tokens, gen_tokens, num_requests, measured (output tokens/s: of the deployment for serving, per GPU
    for static; for ttft the time to first token in ms)."""
    import pandas as pd

    directory = directory or data_dir_validation()
    spec = serving_spec(directory)
    out: List[Dict[str, Any]] = []
    for table, info in spec["tables"].items():
        for r in _rows(directory / f"{table}.csv"):
            ttft = r["metric"] == info.get("ttft_metric")
            if (r["metric"] != info["metric"] and not ttft) or r["model"] not in spec["models"]:
                continue
            prec = r["precision"]
            kind = "ttft" if ttft else info["kind"]
            if info["kind"] == "serving":
                isl, osl, par, batch = int(r["isl"]), int(r["osl"]), r["parallel"], 0
            else:
                isl, osl, par, batch = int(r["input_len"]), int(r["output_len"]), f"TP{r['tp']}", int(r["batch"])
            out.append({"table": table, "kind": kind, "gpu": r["gpu"], "device": spec["devices"][r["gpu"]],
                        "model": spec["models"][r["model"]], "quant": spec["quants"][prec],
                        "kv_dtype": spec["kv_dtype"][prec], "parallel": par, "batch": batch, "prompt_tokens": isl,
                        "gen_tokens": osl, "num_requests": spec["num_requests"].get(f"{isl}/{osl}", 0),
                        "measured": float(r["value"])})
    return pd.DataFrame(out)


def _table_engines(spec: Dict[str, Any]) -> Dict[str, str]:
    """The engine each table was measured with: its own "engine" in serving.json, else the file's."""
    return {t: str(v.get("engine", spec["engine"])) for t, v in spec["tables"].items()}


def serving_predict(pts: "pd.DataFrame", values: Optional[Dict[str, float]] = None) -> "pd.DataFrame":
    """``pts`` with predicted and roofline columns (and error, roofline_error: predicted / measured - 1), by the
    committed engine of each table (serving.json) or by its trial with the fit's parameters set to ``values``.
    Serving rows: rp.serve's output tokens/s at offline max load with the run's request count and KV fraction;
    static rows: one static batch of rp.estimate, output tokens/s per GPU over prefill + decode."""
    from . import _core
    from .inference import _device, _lookup_model

    spec = serving_spec()
    engines = _table_engines(spec)
    trials = {e: _serving_trial(e, values)._core for e in set(engines.values())} if values is not None else {}
    frac = float(spec["gpu_memory_fraction"]["value"])
    pred, roof = [], []
    for p in pts.to_dict(orient="records"):
        eng = engines[p["table"]]
        core_engine = trials.get(eng)
        m, d = _lookup_model(p["model"])._core, _device(p["device"])._core
        par = _core.parse_parallelism(p["parallel"])
        if p["kind"] == "serving":
            plan = _core.ServingPlan(m, d, p["quant"], eng, p["kv_dtype"], par, 0.0, 0.0, frac, core_engine)
            e = plan.estimate(p["prompt_tokens"], p["gen_tokens"], 0.0, 0.0, float(p["num_requests"]), False)
            pred.append(e.output_tokens_per_s)
            roof.append(e.roofline_output_tokens_per_s)
        else:
            ep = _core.EstimatePlan(m, d, p["quant"], p["kv_dtype"], True, eng, par.tensor, 0.0, core_engine)
            rates = _core.static_batch_rates(ep, p["batch"], p["prompt_tokens"], p["gen_tokens"])
            if p["kind"] == "ttft":  # the table's unit: ms (unit conversion only)
                pred.append(rates["ttft_s"] * 1e3)
                roof.append(rates["roofline_ttft_s"] * 1e3)
            else:
                pred.append(rates["output_tokens_per_s_per_device"])
                roof.append(rates["roofline_output_tokens_per_s_per_device"])
    out = pts.copy()
    out["predicted"] = pred
    out["roofline"] = roof
    out["error"] = out["predicted"] / out["measured"] - 1
    out["roofline_error"] = out["roofline"] / out["measured"] - 1
    return out


def _serving_trial(name: str, values: Dict[str, float]) -> "Engine":
    """Engine ``name`` (resolved: what it inherits included) with the serving fit's parameters set to ``values``
    (every backend): an engine based on the fitted one sees the same trial values."""
    from . import _core
    from ._engine import Engine, engine

    base = json.loads(engine(name)._core.to_json())
    for b in base["backends"].values():
        for k, v in values.items():
            b[k]["value"] = v
    return Engine(_core.parse_engine(json.dumps(base), "<serving fit>"))


def serving_cross_validate(directory: Optional[Path] = None) -> "pd.DataFrame":
    """Every row of the TensorRT-LLM tables predicted by the committed defaults, by the fit to every row
    (in-sample: the grid point of serving.json's parameters with the least mean squared log error) and by the fit
    without the row's GPU (leave-one-GPU-out); with the pure roofline's prediction."""
    import itertools

    import numpy as np

    pts = serving_points(directory)
    spec = serving_spec(directory)
    params = spec["fit"]["parameters"]
    grid = list(itertools.product(*[p["grid"] for p in params]))
    base = serving_predict(pts)
    logs = []
    for values in grid:
        trial = {p["key"]: v for p, v in zip(params, values)}
        logs.append(np.log(serving_predict(pts, trial)["predicted"].to_numpy() / pts["measured"].to_numpy()))
    L = np.array(logs)  # grid × points
    best_all = int(np.argmin((L ** 2).mean(axis=1)))
    out = base.rename(columns={"predicted": "defaults", "error": "defaults_error"})
    out["in_sample"] = pts["measured"].to_numpy() * np.exp(L[best_all])
    loo = np.empty(len(pts))
    for g in pts["gpu"].unique():
        held = (pts["gpu"] == g).to_numpy()
        k = int(np.argmin((L[:, ~held] ** 2).mean(axis=1)))
        loo[held] = pts["measured"].to_numpy()[held] * np.exp(L[k, held])
    out["leave_one_gpu_out"] = loo
    out.attrs["fit"] = {p["key"]: v for p, v in zip(params, grid[best_all])}
    return out


def serving_summary(cv: "pd.DataFrame") -> List[Dict[str, Any]]:
    """Per table and kind: its engine, rows, MAPE (percent) of the defaults, in-sample, leave-one-GPU-out and the
    pure roofline; a table of more than one kind (v0.6.1: static batches and first-token latency) also as a whole,
    kind 'all' (issue 14's targets are per table)."""
    from . import _core

    multi = {t for t in cv["table"].unique() if cv["kind"][cv["table"] == t].nunique() > 1}
    groups = list(zip(cv["table"], cv["kind"]))
    whole = [(t, "all") for t in cv["table"] if t in multi]  # each row once more, under its table's 'all'
    keys = [f"{t} {k}" for t, k in groups + whole]
    wholes = cv["table"].isin(multi).to_numpy()

    def summary(column: str) -> Dict[str, Any]:  # the core's MAPE per table and kind (estimator: `column`)
        errors = list(cv[column] / cv["measured"] - 1)
        roofline = list(cv["roofline_error"])
        errors += [e for e, w in zip(errors, wholes) if w]
        roofline += [e for e, w in zip(roofline, wholes) if w]
        return dict(_core.summarize_validation(list(zip(keys, errors, roofline))))

    by = {c: summary(c) for c in ("defaults", "in_sample", "leave_one_gpu_out")}
    engines = _table_engines(serving_spec())
    rows = []
    for (table, kind), key in dict(zip(groups + whole, keys)).items():
        d = by["defaults"][key]
        rows.append({"table": table, "kind": kind, "engine": engines[table], "points": int(d["points"]),
                     "defaults": d["estimator"],
                     "in_sample": by["in_sample"][key]["estimator"],
                     "leave_one_gpu_out": by["leave_one_gpu_out"][key]["estimator"], "roofline": d["roofline"]})
    return rows
