#!/usr/bin/env python3
"""Fit the engine defaults of engine_db to the calibration corpus, and write them with their sources.

    python3 calibration/fit_defaults.py           # fit every fit of tests/validation/fits.json, write engine_db
    python3 calibration/fit_defaults.py --check   # fit and compare with the committed values (exit 1 if they differ)

The fits run in the order fits.json lists them, each from the values the previous ones wrote (a fit that starts
from the committed values ends where they are when they are reproducible). Each fitted number is written into the
file its parameter's ``store`` names (default: the fit's engine), under the backend the fit names, with a source
that says which fit and which tables gave it. Only engine parameters are fitted; device ceilings come from
hardware_db (datasheets and microbenchmarks). The fitting itself (least squares on log(predicted / measured)) is
the core's (``roofline::fit_engine``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
os.environ["ROOFLINE_DATA_DIR"] = str(REPO)  # the repository's databases, not an installed copy

import rooflinepy as rp  # noqa: E402
from rooflinepy import _core, validation  # noqa: E402
from rooflinepy._engine import Engine  # noqa: E402

VALIDATION = REPO / "tests" / "validation"
ENGINE_DB = REPO / "engine_db"


def load_engines() -> Dict[str, Engine]:
    return {e.id: Engine(e) for e in _core.load_engine_directory(str(ENGINE_DB))}


def engine_file(engine_id: str) -> Path:
    for path in sorted(ENGINE_DB.glob("*.json")):
        if path.name == "schema.json":
            continue
        with open(path) as f:
            if json.load(f).get("id") == engine_id:
                return path
    raise SystemExit(f"no engine_db file has id '{engine_id}'")


def _kernels(backend: Dict[str, Any], name: str, path: Path, key: str) -> List[Dict[str, Any]]:
    if "linear_kernels" not in backend:
        raise SystemExit(f"{path}: fitting '{key}' needs this backend's linear_kernels written out in the file")
    glob = name.endswith("*")
    stem = name[:-1] if glob else name
    found = [k for k in backend["linear_kernels"]["value"]
             if (k["name"].startswith(stem) if glob else k["name"] == name)]
    if not found:
        raise SystemExit(f"{path}: no kernel '{name}' in {key}")
    return found


def store(doc: Dict[str, Any], backend: str, key: str, value: float, source: str, path: Path) -> None:
    b = doc["backends"].setdefault(backend, {})
    if key.startswith("linear_kernels["):
        name, field = key[len("linear_kernels["):].rsplit("].", 1)
        for k in _kernels(b, name, path, key):
            k[field] = value
            k["source"] = _replace_fitted(k.get("source", ""), f"{field} {source}")
        return
    old = b.get(key, {})
    b[key] = {"value": value, "source": source, **({"uncertain": old["uncertain"]} if "uncertain" in old else {})}


_WRITTEN = re.compile(r"(?:^|; )([A-Za-z_]+) (?:fitted|written) by calibration/fit_defaults\.py")


def _replace_fitted(text: str, fitted: str) -> str:
    """A kernel's source with the segment about its fitted field replaced: the text the kernel's source gives, then
    one segment per field this script wrote, each running from "<field> fitted by" / "<field> written by" to the
    next such segment (a segment may itself hold "; ", as a derived rule's reason does)."""
    field = fitted.split(" ", 1)[0]
    marks = list(_WRITTEN.finditer(text))
    base = text[:marks[0].start()] if marks else text
    ends = [m.start() for m in marks[1:]] + [len(text)]
    segments = [(m.group(1), text[m.start(1):end]) for m, end in zip(marks, ends)]
    kept = [seg for name, seg in segments if name != field]
    return "; ".join([base] * bool(base) + kept + [fitted])


def _quantile(xs: List[float], q: float) -> float:
    """The q-quantile of xs, linear between order statistics (numpy's default)."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    i = int(pos)
    return s[i] if i + 1 >= len(s) else s[i] + (pos - i) * (s[i + 1] - s[i])


def _ratios(fit: Dict[str, Any], engines: Dict[str, Engine]) -> Tuple[Any, List[float], bool]:
    """A fit's cross-validated points and their measured / predicted (leave-one-device-out, or in-sample where the
    fit's tables hold one device), and whether they are leave-one-device-out."""
    cv = validation.cross_validate(fit, VALIDATION, start=engines[fit["engine"]])
    lodo = bool(cv["lodo"].notna().all())
    pred = cv["lodo"] if lodo else cv["in_sample"]
    return cv, [float(x) for x in cv["measured"] / pred], lodo


def interval_of(fit: Dict[str, Any], fits: List[Dict[str, Any]], engines: Dict[str, Engine],
                ratios: Dict[str, Tuple[Any, List[float], bool]], coverage: float, widen: float,
                target: str) -> Dict[str, Any]:
    """The prediction interval a fit writes into `target` (an engine of its `interval_to`): the central `coverage`
    of measured / predicted over its cross-validated points, per phase, and what the points cover.

    Where `target` is not the fit's engine it runs the same kernels as other builds did (llama.cpp against the
    builds behind the fit's tables), and its interval covers both: the union of the central `coverage` of (a) the
    fit's ratios, (b) the same ratios carried over to the target's prediction (x the fit engine's committed
    prediction / the target's, at each point's settings: a measurement with the fit's builds held to the target)
    and (c) the in-sample ratios of the fits of the target itself on that backend (its own builds), whose device
    families and weight formats then count as covered too. `ratios`: each fit's _ratios, by fit name."""
    cv, ratio, lodo = ratios[fit["name"]]
    sets = [(ratio, list(cv["phase"]))]
    covered = [cv]
    own_fits = [f["name"] for f in fits if f["engine"] == target and f["backend"] == fit["backend"]]
    if target != fit["engine"]:
        pts, models, devices = validation._core_inputs(validation.fit_points(fit, VALIDATION))
        other = _core.predict_points(engines[target]._core, pts, models, devices)
        sets.append(([r * d / o for r, d, o in zip(ratio, cv["defaults"], other)], list(cv["phase"])))
        for name in own_fits:
            own_cv, own_ratio, _ = ratios[name]
            sets.append((own_ratio, list(own_cv["phase"])))
            covered.append(own_cv)
    out: Dict[str, Any] = {"coverage": coverage}
    for phase in ("decode", "prefill"):
        bounds = [(_quantile(r, (1 - coverage) / 2), _quantile(r, (1 + coverage) / 2))
                  for r in ([x for x, p in zip(xs, ph) if p == phase] for xs, ph in sets) if r]
        if not bounds or not any(p == phase for p in cv["phase"]):  # the fit's tables do not measure this phase:
            out[phase] = None                                          # filled with the widest calibrated one
            continue
        lo, hi = min(b[0] for b in bounds), max(b[1] for b in bounds)
        out[phase] = [round(min(lo, 1.0), 4), round(max(hi, 1.0), 4)]
    out["device_families"] = sorted({rp.device(d).family for c in covered for d in c["device"]})
    out["weight_formats"] = sorted({q for c in covered for q in c["quant"]})
    out["widen"] = widen
    out["max_devices"] = int(max(cv["tensor_parallel"])) if "tensor_parallel" in cv else 1
    kind = "leave-one-device-out" if lodo else "in-sample (one device: no device left out)"
    builds = ("" if len(sets) == 1 else
              f"; joined with the same ratios carried over to this engine (x {fit['engine']}'s prediction / this "
              f"engine's: the tables were measured with {fit['engine']}'s builds) and with the in-sample ratios of "
              f"this engine's own fits on {fit['backend']} (" +
              (", ".join(f"'{name}'" for name in own_fits) or "none") + "), the union of their central intervals")
    out["_source"] = (f"calibration/fit_defaults.py: the central {coverage:.0%} of measured / predicted tokens/s of "
                      f"the {len(cv)} points of fit '{fit['name']}' ({', '.join(fit['tables'])}), {kind}{builds}; "
                      f"widened {widen:g}-fold in log space per device family or weight format outside the ones "
                      f"listed, and for more devices per copy of the model than its points use (max_devices)")
    return out


def run_fit(fit: Dict[str, Any], engines: Dict[str, Engine]) -> Tuple[List[float], List[Dict[str, Any]], float]:
    start = engines[fit["engine"]]
    fitted, values, pts = validation.fit_engine(fit, start=start, directory=VALIDATION)
    errors = [abs(p["predicted"] / p["measured_tokens_per_s"] - 1) for p in pts]
    return values, pts, 100 * sum(errors) / len(errors)


def write_derived(engines: Dict[str, Engine], check: bool = False) -> List[str]:
    """The values fits.json derives from fitted ones ('derived': value = the source value + plus), with their rule
    as source. check: write nothing, return what differs from the files."""
    with open(VALIDATION / "fits.json") as f:
        rules = json.load(f).get("derived", [])
    diffs: List[str] = []
    for r in rules:
        src = r["from"]
        value = round(_core.engine_parameter(engines[src["engine"]]._core, src["backend"], src["key"]) + r["plus"], 4)
        committed = _core.engine_parameter(engines[r["engine"]]._core, r["backend"], r["key"])
        if abs(value - committed) > 5e-3 * max(abs(value), 1e-12):
            diffs.append(f"{r['engine']} {r['backend']} {r['key']}: committed {committed:.6g}, derived {value:.6g}")
        if check:
            continue
        path = engine_file(r["engine"])
        with open(path) as f:
            doc = json.load(f)
        source = (f"written by calibration/fit_defaults.py (derived, tests/validation/fits.json): {src['engine']} "
                  f"{src['backend']} {src['key']} + {r['plus']:g}; {r['why']}")
        store(doc, r["backend"], r["key"], value, source, path)
        with open(path, "w") as f:
            f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return diffs


def write_intervals(fits: List[Dict[str, Any]], engines: Dict[str, Engine], check: bool = False) -> List[str]:
    """Every backend's prediction_interval: each fit's into the engines its interval_to names; the 'any' backend of
    every other engine file by the uncalibrated rule of fits.json. check: write nothing, return what differs from
    the files."""
    with open(VALIDATION / "fits.json") as f:
        rule = json.load(f)["interval"]
    written: Dict[Tuple[str, str], Dict[str, Any]] = {}
    own: List[Dict[str, Any]] = []  # each fit's interval for its own engine: not widened by other builds' drift
    diffs: List[str] = []
    ratios = {f["name"]: _ratios(f, engines) for f in fits}  # each fit cross-validated once, for every interval
    for fit in fits:
        if not fit.get("interval_to"):
            continue
        for eid in fit["interval_to"]:
            written[(eid, fit["backend"])] = interval_of(fit, fits, engines, ratios, rule["coverage"], rule["widen"],
                                                         eid)
            if eid == fit["engine"]:
                own.append(written[(eid, fit["backend"])])
    # the uncalibrated rule's widest interval: of the fits' own ones (a carried one's width is build drift)
    widest = {ph: [min(v[ph][0] for v in own if v[ph]), max(v[ph][1] for v in own if v[ph])]
              for ph in ("decode", "prefill")}
    for iv in written.values():
        for ph in ("decode", "prefill"):
            if iv[ph] is None:
                iv[ph] = widest[ph]
                iv["_source"] += f"; {ph}: none of its points measures it, the widest calibrated {ph} interval is used"
    for path in sorted(ENGINE_DB.glob("*.json")):
        if path.name == "schema.json":
            continue
        with open(path) as f:
            doc = json.load(f)
        changed = False
        new: Dict[str, Dict[str, Any]] = {}
        for (eid, backend), iv in written.items():
            if doc["id"] == eid:
                value = {k: v for k, v in iv.items() if k != "_source"}
                new[backend] = {"value": value, "source": iv["_source"]}
        serving_engine = validation.serving_spec(VALIDATION)["engine"]  # its interval: write_serving's
        if "any" in doc["backends"] and (doc["id"], "any") not in written and doc["id"] != serving_engine:
            new["any"] = {
                "value": {"coverage": rule["coverage"], **widest, "device_families": [], "weight_formats": [],
                          "widen": rule["widen"]},
                "source": "calibration/fit_defaults.py, the uncalibrated rule of tests/validation/fits.json: " +
                          rule["uncalibrated"] + " (no corpus measures this engine on this backend)"}
        for backend, pi in new.items():
            old = doc["backends"].get(backend, {}).get("prediction_interval", {}).get("value")
            for ph in ("decode", "prefill"):
                if not old or any(abs(a - b) > 5e-3 * b for a, b in zip(old[ph], pi["value"][ph])):
                    diffs.append(f"{path.name} {backend} prediction_interval.{ph}: committed "
                                 f"{old[ph] if old else None}, fit {pi['value'][ph]}")
            if old and (old["device_families"], old["weight_formats"], old.get("max_devices", 0)) != (
                    pi["value"]["device_families"], pi["value"]["weight_formats"], pi["value"].get("max_devices", 0)):
                diffs.append(f"{path.name} {backend} prediction_interval coverage lists differ")
            doc["backends"].setdefault(backend, {})["prediction_interval"] = pi
            changed = True
        if changed and not check:
            with open(path, "w") as f:
                f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return diffs


def write_serving(rows: List[Any], check: bool, rtol: float) -> List[str]:
    """The serving fit (tests/validation/serving.json): the grid point of the engine's serving parameters that fits
    TensorRT-LLM's tables best, written into its engine_db file with the in-sample and leave-one-GPU-out MAPE, and
    its prediction interval from the leave-one-GPU-out residuals of the serving table."""
    spec = validation.serving_spec(VALIDATION)
    cv = validation.serving_cross_validate(VALIDATION)
    summary = validation.serving_summary(cv)
    fitted = cv.attrs["fit"]
    path = engine_file(spec["engine"])
    with open(path) as f:
        doc = json.load(f)
    figures = "; ".join(f"{s['table']} {s['kind']} ({s['points']} rows): in-sample MAPE {s['in_sample']:.1f} %, "
                        f"leave-one-GPU-out {s['leave_one_gpu_out']:.1f} %" for s in summary)
    source = (f"fitted by calibration/fit_defaults.py (serving fit of tests/validation/serving.json: grid search on "
              f"the mean squared log(predicted / measured)) to tests/validation/"
              f"{'.csv, tests/validation/'.join(spec['tables'])}.csv; {figures}")
    failed = []
    b = doc["backends"]["any"]
    for key, value in fitted.items():
        committed = b[key]["value"]
        ok = abs(value - committed) <= rtol * max(abs(committed), 1e-12)
        rows.append(("serving", key, path.name, committed, value, ok))
        if not ok:
            failed.append(f"serving: {key} committed {committed:.6g}, fit {value:.6g}")
        store(doc, "any", key, value, source, path)
    # the interval: the 10th and 90th percentiles of measured / predicted out of sample (serving rows: throughput)
    sv = cv[cv["kind"] == "serving"]
    ratios = sorted((sv["measured"] / sv["leave_one_gpu_out"]).tolist())
    lo, hi = min(1.0, _quantile(ratios, 0.1)), max(1.0, _quantile(ratios, 0.9))
    ttft = cv[cv["kind"] == "ttft"]
    tr = sorted((ttft["measured"] / ttft["leave_one_gpu_out"]).tolist())
    # a TTFT ratio measured / predicted above 1 is a prefill slower than predicted: prefill rate ratio = 1 / it
    plo, phi = (min(1.0, 1 / _quantile(tr, 0.9)), max(1.0, 1 / _quantile(tr, 0.1))) if tr else (lo, hi)
    families = sorted({rp.device(d).family for d in cv["device"].unique()})
    interval = {"coverage": 0.8, "decode": [round(lo, 4), round(hi, 4)], "prefill": [round(plo, 4), round(phi, 4)],
                "device_families": families, "weight_formats": sorted(set(cv["quant"]))}
    old = b.get("prediction_interval", {}).get("value", {})
    interval["widen"] = old.get("widen", 2)
    if check and (old.get("decode") != interval["decode"] or old.get("prefill") != interval["prefill"]):
        failed.append(f"serving: prediction_interval committed {old.get('decode')} / {old.get('prefill')}, "
                      f"fit {interval['decode']} / {interval['prefill']}")
    b["prediction_interval"] = {"value": interval, "source": (
        "calibration/fit_defaults.py, the serving fit: the 10th-90th percentiles of measured / predicted output "
        "tokens/s of the leave-one-GPU-out predictions of tests/validation/trtllm_max_throughput_dense.csv (decode), of "
        "the batch-1 TTFT of trtllm_v061_static_batch.csv (prefill)")}
    if not check:
        with open(path, "w") as f:
            f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return failed


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed values instead of writing")
    ap.add_argument("--rtol", type=float, default=5e-3, help="--check: relative tolerance (default 0.5 %%)")
    args = ap.parse_args(argv)

    fits = validation.fits(VALIDATION)
    engines = load_engines()
    failed = []
    rows = []
    for fit in fits:
        values, pts, mape = run_fit(fit, engines)
        source_tail = (f"fitted by calibration/fit_defaults.py (fit '{fit['name']}' of tests/validation/fits.json) "
                       f"to {', '.join('tests/validation/' + t + '.csv' for t in fit['tables'])} "
                       f"({len(pts)} points; in-sample MAPE {mape:.1f} %)")
        docs: Dict[Path, Dict[str, Any]] = {}
        for p, v in zip(fit["parameters"], values):
            path = engine_file(p.get("store", fit["engine"]))
            if path not in docs:
                with open(path) as f:
                    docs[path] = json.load(f)
            committed = _core.engine_parameter(engines[p.get("store", fit["engine"])]._core, fit["backend"], p["key"])
            ok = abs(v - committed) <= args.rtol * max(abs(committed), 1e-12)
            rows.append((fit["name"], p["key"], path.name, committed, v, ok))
            if not ok:
                failed.append(f"{fit['name']}: {p['key']} committed {committed:.6g}, fit {v:.6g}")
            if not args.check:
                store(docs[path], fit["backend"], p["key"], round(v, 4), source_tail, path)
        if not args.check:
            for path, doc in docs.items():
                with open(path, "w") as f:
                    f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
            engines = load_engines()  # the next fit starts from what this one wrote
    failed += write_derived(engines, check=args.check)
    if not args.check:
        engines = load_engines()
    failed += write_intervals(validation.fits(VALIDATION), engines, check=args.check)
    failed += write_serving(rows, check=args.check, rtol=args.rtol)
    width = max(len(r[1]) for r in rows)
    for name, key, file, committed, v, ok in rows:
        print(f"{name:<42} {key:<{width}} {file:<26} committed {committed:>9.4f}  fit {v:>9.4f}  {'ok' if ok else 'DIFFERS'}")
    if args.check and failed:
        print("\nthe committed defaults are not what the fits give; run calibration/fit_defaults.py:\n  " +
              "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
