"""The ``rooflinepy`` command line. Every number it prints comes from the C++ core."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

import rooflinepy as rp
from rooflinepy._cli_common import add_flash_attn, flash_attn, json_text
from rooflinepy._cli_plot import add_plot_parsers as _add_plot_parsers
from rooflinepy.sweep import _add_sweep_parser


def _si(x: Optional[float], unit: str = "") -> str:
    if x is None:
        return "-"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}".rstrip()


def _seconds(s: float) -> str:
    if s == 0:
        return "0 s"
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if s >= factor:
            return f"{s / factor:.4g} {unit}"
    return f"{s:.3g} s"


def _table(rows: List[List[str]], header: List[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json_text(data))
    else:
        print(text)


# ---- devices ---------------------------------------------------------------------------------------------
def cmd_devices(args: argparse.Namespace) -> int:
    rows, data = [], []
    for did in rp.devices():
        d = rp.device(did)
        bw = d.bandwidth("dram")
        try:
            bf16 = d.peak_flops("bf16")
        except KeyError:
            bf16 = None
        try:  # CPUs without fp16 arithmetic (x86 converts with F16C and computes in fp32) have none
            fp16: Optional[float] = d.peak_flops("fp16")
            ridge: Optional[float] = d.ridge_point("fp16")
        except KeyError:
            fp16 = ridge = None
        data.append({"id": d.id, "name": d.name, "vendor": d.vendor, "aliases": list(d.aliases),
                     "dram_bandwidth": bw, "dram_capacity": d.capacity("dram"), "peak_fp16": fp16, "peak_bf16": bf16,
                     "ridge_fp16": ridge})
        rows.append([d.id, d.name, _si(bw, "B/s"), _binary(d.capacity("dram")), _si(fp16, "FLOP/s") if fp16 else "-",
                     f"{ridge:.1f}" if ridge else "-", ", ".join(d.aliases[:3])])
    _emit(args, data, _table(rows, ["id", "name", "DRAM bw", "DRAM", "fp16 peak", "ridge fp16 (FLOP/B)", "aliases"]))
    return 0


def cmd_device(args: argparse.Namespace) -> int:
    d = rp.device(args.name)
    if args.json:
        out = d.to_dict()
        out["ridge_points"] = _ridges(d)
        print(json_text(out))
        return 0
    lines = [f"{d.name}  ({d.id}; aliases: {', '.join(d.aliases) or '-'})",
             f"{d.compute_units} {d.compute_unit_name}s, boost {d.boost_clock_hz / 1e6:.0f} MHz"
             + (f" (vector peaks and issue at {d.vector_clock_hz / 1e6:.0f} MHz)" if d.vector_clock_hz else "")
             + (f", TDP {d.tdp_w:.0f} W" if d.tdp_w else ""), "", "memory:"]
    mem_rows = [[m["level"], m["type"], _si(m["bandwidth"], "B/s"), _binary(m["capacity"])
                 + (f" ({_binary(m['working_set'])} working set)" if m.get("working_set") else ""),
                 ("uncertain: " + m["uncertain"]) if m["uncertain"] else ""] for m in d.memory_levels()]
    lines.append(_table(mem_rows, ["level", "type", "bandwidth", "capacity", "note"]))
    lines += ["", "compute (dense):"]
    ridges = _ridges(d)
    comp_rows = []
    for p in d.compute_peaks():
        r = ridges.get(f"{p['dtype']}/{p['unit']}", {})
        comp_rows.append([p["dtype"], p["unit"], _si(p["flops_per_s"], "OP/s" if p["dtype"].startswith("int") else "FLOP/s"),
                          f"{r['dram']:.1f}" if "dram" in r else "-",
                          f"{r['l2']:.1f}" if "l2" in r else "-",
                          "uncertain" if p["uncertain"] else ""])
    lines.append(_table(comp_rows, ["format", "unit", "peak", "ridge DRAM (FLOP/B)", "ridge L2", "note"]))
    e = d.efficiency
    lines += ["", f"efficiency: {e['dram_bandwidth_fraction']:.2f} of DRAM bandwidth, {e['compute_fraction']:.2f} of compute, "
                  f"{e['launch_overhead_s'] * 1e6:.3g} us per launch ({e['source']})"]
    print("\n".join(lines))
    return 0


def _ridges(d: "rp.Device") -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    for p in d.compute_peaks():
        r: Dict[str, float] = {}
        for level in ("dram", "l2"):
            try:
                r[level] = d.ridge_point(p["dtype"], level=level, unit=p["unit"])
            except KeyError:
                pass
        out[f"{p['dtype']}/{p['unit']}"] = r
    return out


# ---- op ---------------------------------------------------------------------------------------------------
def _build_op(args: argparse.Namespace, device: Optional["rp.Device"]) -> "rp.OpCost":
    o = rp.ops
    if args.op == "gemm":
        return o.gemm(args.m, args.n, args.k, args.dtype, weight_dtype=args.weight_dtype, tile_bytes=args.tile_bytes)
    if args.op == "gemv":
        return o.gemv(args.n, args.k, args.dtype, weight_dtype=args.weight_dtype)
    if args.op == "elementwise":
        return o.elementwise(args.n, args.flops_per_element, args.inputs, args.outputs, args.dtype)
    if args.op == "softmax":
        return o.softmax(args.rows, args.cols, args.dtype)
    if args.op == "layernorm":
        return o.layernorm(args.rows, args.cols, args.dtype)
    if args.op == "rmsnorm":
        return o.rmsnorm(args.rows, args.cols, args.dtype)
    if args.op == "attention":
        return o.attention(args.batch, args.heads, args.seq_q, args.seq_kv, args.head_dim, args.dtype, kind=args.kind,
                           backward=args.backward, causal=args.causal, sram_bytes=args.sram_bytes, device=device)
    if args.op == "decode-attention":
        return o.decode_attention(args.batch, args.heads, args.kv_heads, args.context, args.head_dim, args.dtype,
                                  kv_dtype=args.kv_dtype, kind=args.kind)
    raise ValueError(f"unknown op '{args.op}'")


def cmd_op(args: argparse.Namespace) -> int:
    device = rp.device(args.device) if args.device else None
    op = _build_op(args, device)
    data: Dict[str, Any] = {"op": op.to_dict()}
    lines = [f"{op.name}: {_si(op.flops, 'FLOP')}, {_si(op.bytes, 'B')} DRAM "
             f"(read {_si(op.bytes_read('dram'), 'B')}, written {_si(op.bytes_written('dram'), 'B')}), "
             f"AI {op.arithmetic_intensity:.4g} FLOP/B, {op.launches:g} launch(es)"]
    if op.bytes_at("sram") > 0:
        lines.append(f"  SRAM traffic {_si(op.bytes_at('sram'), 'B')}")
    if device is not None:
        data["device"] = device.id
        for label, ideal in (("ideal", True), ("derated", False)):
            t = device.time(op, ideal=ideal)
            data[label] = t.to_dict()
            parts = [f"compute {_seconds(t.compute_seconds)}"]
            parts += [f"{lv} {_seconds(s)}" for lv, s in t.memory_seconds.items()]
            if t.overhead_seconds:
                parts.append(f"overhead {_seconds(t.overhead_seconds)}")
            lines.append(f"on {device.id} ({label}): {_seconds(t.seconds)}, {t.bound}-bound, "
                         f"{_si(t.achieved_flops, 'FLOP/s')} achieved, roofline {_si(t.attainable_flops, 'FLOP/s')} "
                         f"[{', '.join(parts)}]")
        ridge = device.ridge_point(args.dtype)
        lines.append(f"ridge point of {device.id} for {args.dtype}: {ridge:.1f} FLOP/B; this op's AI is "
                     f"{device.ridge_multiple(op, args.dtype):.3g}x the ridge")
        data["ridge_point"] = ridge
    _emit(args, data, "\n".join(lines))
    return 0


def _add_op_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    op = sub.add_parser("op", help="count one operator's FLOPs and bytes, and time it on a device")
    ops = op.add_subparsers(dest="op", required=True, metavar="OP")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--dtype", default="fp16", help="number format (default fp16)")
        p.add_argument("--device", "-d", help="device id or alias to time the op on")
        p.add_argument("--json", action="store_true", help="print JSON")

    p = ops.add_parser("gemm", help="C[m×n] = A[m×k]·B[k×n]")
    for a in ("--m", "--n", "--k"):
        p.add_argument(a, type=int, required=True)
    p.add_argument("--weight-dtype")
    p.add_argument("--tile-bytes", type=float, default=0.0, help="on-chip bytes for the tiled traffic model")
    common(p)
    p = ops.add_parser("gemv", help="y[n] = W[n×k]·x[k]")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--weight-dtype")
    common(p)
    p = ops.add_parser("elementwise", help="n elements, FLOPs per element, inputs and outputs")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--flops-per-element", type=float, default=1.0)
    p.add_argument("--inputs", type=int, default=1)
    p.add_argument("--outputs", type=int, default=1)
    common(p)
    for name in ("softmax", "layernorm", "rmsnorm"):
        p = ops.add_parser(name, help=f"{name} over rows × cols")
        p.add_argument("--rows", type=int, required=True)
        p.add_argument("--cols", type=int, required=True)
        common(p)
    p = ops.add_parser("attention", help="standard or flash attention, forward (and backward)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--seq-q", type=int, required=True)
    p.add_argument("--seq-kv", type=int)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--kind", choices=["standard", "flash"], default="standard")
    p.add_argument("--backward", action="store_true")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--sram-bytes", type=float)
    common(p)
    p = ops.add_parser("decode-attention", help="one new token attending a KV cache")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int)
    p.add_argument("--context", type=int, required=True)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--kv-dtype")
    p.add_argument("--kind", choices=["standard", "flash"], default="flash")
    common(p)
    op.set_defaults(func=cmd_op)


# ---- calibrate -------------------------------------------------------------------------------------------
def _report_rows(df: Any) -> List[List[str]]:
    def s(x: Any) -> str:
        return x if isinstance(x, str) else ""

    def value(x: float, unit: str) -> str:
        if x != x:  # NaN: no datasheet number
            return "-"
        return _seconds(x) if unit == "s" else _si(x, unit)

    rows = []
    for r in df.itertuples(index=False):
        what = "/".join(x for x in (s(r.dtype), s(r.unit)) if x) or s(r.level) + (f" ({r.cache})" if s(r.cache) else "")
        rows.append([r.ceiling, what, r.kernel, value(r.measured, r.si_unit), value(r.datasheet, r.si_unit),
                     "-" if r.ratio != r.ratio else f"{r.ratio:.3f}",
                     "yes" if r.applied else ("unverified" if not r.verified and not s(r.note) else ""), s(r.note)])
    return rows


def _print_report(args: argparse.Namespace, df: Any, header: str) -> None:
    if args.json:
        print(json_text(json.loads(df.to_json(orient="records"))))
        return
    print(header)
    print(_table(_report_rows(df), ["ceiling", "what", "kernel", "measured", "datasheet", "ratio", "applied", "note"]))


def cmd_calibrate_cpu(args: argparse.Namespace) -> int:
    opts = " ".join(x for x in ["--quick" if args.quick else "", f"--threads {args.threads}" if args.threads else "",
                                "--no-pin" if args.no_pin else ""] if x)
    if not args.json:
        print(f"rooflinepy: measuring this host's ceilings ({'quick, seconds' if args.quick else 'about a minute'})",
              file=sys.stderr)
    prof = rp.calibration.calibrate_cpu(args.output, quick=args.quick, threads=args.threads, pin=not args.no_pin,
                                        verbose=not args.json, options_text=opts)
    df = rp.calibration.report(prof)
    where = f"; wrote {args.output}" if args.output else ""
    _print_report(args, df, f"{prof.device_name}: {len(prof.measurements)} measurements{where}")
    return 0


def cmd_calibrate_report(args: argparse.Namespace) -> int:
    df = rp.calibration.report(args.profile, device=args.device)
    ds = df.attrs.get("device")
    _print_report(args, df, f"{df.attrs['measured_device']} ({args.profile}) vs "
                            f"{('datasheet of ' + ds) if ds else 'no datasheet (pass --device)'}")
    return 0


def _add_calibrate_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    cal = sub.add_parser("calibrate", help="measure a device's real ceilings into a calibration profile")
    kinds = cal.add_subparsers(dest="target", required=True, metavar="TARGET")
    p = kinds.add_parser("cpu", help="this host's CPU: DRAM/cache bandwidth, FMA peak, Eigen GEMM, dispatch overhead")
    p.add_argument("-o", "--output", help="write the profile (JSON) here")
    p.add_argument("--quick", action="store_true", help="seconds instead of a minute: small arrays, few repetitions")
    p.add_argument("--threads", type=int, default=0, help="threads (default: one per physical core)")
    p.add_argument("--no-pin", action="store_true", help="do not pin threads to cores")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_calibrate_cpu)
    p = kinds.add_parser("report", help="a profile's measured ceilings against the datasheet")
    p.add_argument("profile", help="calibration profile (JSON)")
    p.add_argument("--device", "-d", help="datasheet device (default: matched from the profile's device name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_calibrate_report)


# ---- models / estimate / validate ---------------------------------------------------------------------------
def _gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB"


def cmd_models(args: argparse.Namespace) -> int:
    rows, data = [], []
    for mid in rp.models():
        m = rp.model(mid)
        a = m.arch
        data.append({"id": mid, "name": a.name, "model_type": a.model_type, "parameters": m.parameters,
                     "layers": a.n_layer, "hidden": a.hidden, "heads": a.n_head, "kv_heads": a.n_kv_head,
                     "experts": a.n_expert, "source": a.source})
        rows.append([mid, a.model_type, f"{m.parameters / 1e9:.2f} B", str(a.n_layer), f"{a.n_head}/{a.n_kv_head}",
                     str(a.n_expert or "-")])
    _emit(args, data, _table(rows, ["id", "type", "params", "layers", "heads/kv", "experts"]))
    return 0


def _ints(text: str, what: str, minimum: int = 0) -> List[int]:
    """Comma-separated whole numbers >= minimum; one message for every way they can be wrong."""
    rule = f"{what} must be comma-separated whole numbers >= {minimum}"
    try:
        values = [int(v) for v in str(text).split(",") if v.strip() != ""]
    except ValueError:
        raise ValueError(f"{rule}, got '{text}'") from None
    if not values:
        raise ValueError(f"{rule}, got none")
    bad = [v for v in values if v < minimum]
    if bad:
        raise ValueError(f"{rule}, got {bad[0]}")
    return values


def cmd_estimate(args: argparse.Namespace) -> int:
    """One row per (quant, test, depth) in llama-bench's vocabulary: ppN rows time the prompt, tgN rows the
    generation, each after -d tokens already in the KV cache; t/s with its prediction interval."""
    rows, data = [], []
    quants = [q for q in args.quant.split(",") if q]
    try:
        depths = _ints(args.n_depth, "-d/--n-depth")
    except ValueError as err:
        raise ValueError(f"{err} (as in llama-bench, -d is the depth: tokens already in the KV cache; the device is "
                         f"-dev/--device)") from None
    ubatch = _ints(args.ubatch_size, "-ub/--ubatch-size")[0] if args.ubatch_size else None
    devices = [d.strip() for d in args.device.split(",") if d.strip()]
    if not devices:
        raise ValueError("-dev/--device must name at least one device (comma-separated ids or aliases)")
    batches = _ints(args.batch, "-b/--batch", minimum=1)
    prompts, gens = _ints(args.prompt, "-p/--n-prompt"), _ints(args.gen, "-n/--n-gen")
    for model_name in [m for m in args.model.split(",") if m]:
        m = rp.model(model_name)
        longest = max(prompts) + max(gens) + max(depths)
        if m.arch.max_context and longest > m.arch.max_context:
            raise ValueError(f"-p/-n/-d: {longest} tokens in a sequence (depth {max(depths)} + prompt {max(prompts)} + "
                             f"generated {max(gens)}) exceed {m.id}'s context of {m.arch.max_context:g} tokens "
                             f"(its config's max_position_embeddings)")
        for q, device, b in ((q, dv, b) for q in quants for dv in devices for b in batches):
            tests = [("pp", p, 0) for p in prompts if p > 0]
            tests += [("tg", 0, n) for n in gens if n > 0]
            for depth in depths:
                for kind, p, n in tests:
                    e = rp.estimate(model=m, quant=q, device=device, prompt_tokens=p, gen_tokens=n, batch=b,
                                    kv_dtype=args.kv_dtype, flash_attention=flash_attn(args.flash_attn), engine=args.engine,
                                    tensor_parallel=args.tensor_parallel, context_tokens=depth,
                                    ubatch_tokens=ubatch, split_mode=args.split_mode)
                    if kind == "pp":
                        tps, (lo, hi) = e.prefill_tokens_per_s * 1.0, e.prefill_tokens_per_s_interval
                        ceiling, bound = e.ceilings["prefill_tokens_per_s"], e.prefill_bound
                        test = f"pp{p}"
                    else:
                        tps, (lo, hi) = e.decode_tokens_per_s_total, e.decode_tokens_per_s_interval
                        lo, hi = lo * b, hi * b
                        ceiling, bound = e.ceiling_decode_total, e.decode_bound
                        test = f"tg{n}"
                    if depth:
                        test += f" @ d{depth}"
                    d = e.to_dict()
                    d.pop("breakdown")
                    d.update({"test": test, "tokens_per_s": tps, "tokens_per_s_interval": [lo, hi],
                              "roofline_tokens_per_s": ceiling, "bound": bound})
                    data.append(d)
                    rows.append([m.id, q, _gb(e.weight_bytes), f"{e.parameters / 1e9:.2f} B", e.device, str(b),
                                 test, f"{tps:.2f} ± {(hi - lo) / 2:.2f}", f"{lo:.2f}-{hi:.2f}", f"{ceiling:.2f}",
                                 bound, "yes" if e.fits else "NO"])
    header = ["model", "quant", "size", "params", "device", "batch", "test", "t/s", "interval", "roofline t/s",
              "bound", "fits"]
    text = _table(rows, header)
    if data:
        text += (f"\n\ndecode ceiling (bandwidth / weight bytes a step reads) for the first row: "
                 f"{data[0]['ceilings']['decode_weights_tokens_per_s']:.1f} tokens/s; engine {data[0]['engine']}, "
                 f"flash attention {'on' if data[0]['flash_attention'] else 'off'}"
                 f"{' (its default)' if flash_attn(args.flash_attn) is None else ''}"
                 + (f", {data[0]['tensor_parallel']} devices, {data[0]['split_mode']} split"
                    if data[0]['tensor_parallel'] > 1 else "")
                 + "; interval: the engine's cross-validated prediction interval (engine_db prediction_interval)")
    _emit(args, data, text)
    return 0


def _latency(s: float) -> str:
    return "inf" if s == float("inf") else f"{s * 1e3:.1f}"


def cmd_serve(args: argparse.Namespace) -> int:
    """trtllm-bench-like rows: one per (device, parallel, prompt/output length, load), each a rp.serve."""
    rows, data = [], []
    devices = [d.strip() for d in args.device.split(",") if d.strip()]
    if not devices:
        raise ValueError("-dev/--device must name at least one device (comma-separated ids or aliases)")
    parallels = [x.strip() for x in args.parallel.split(";") if x.strip()] or ["TP1"]
    prompts, gens = _ints(args.prompt, "-p/--n-prompt", minimum=1), _ints(args.gen, "-n/--n-gen", minimum=1)
    if args.concurrency and args.request_rate:
        raise ValueError("--concurrency and --request-rate are exclusive: give one (neither: offline max load)")
    loads: List[Dict[str, Any]] = [{}]
    if args.concurrency:
        loads = [{"concurrency": c} for c in _ints(args.concurrency, "--concurrency", minimum=1)]
    elif args.request_rate:
        try:
            rates = [float(v) for v in args.request_rate.split(",") if v.strip()]
        except ValueError:
            raise ValueError(f"--request-rate must be comma-separated numbers > 0, got '{args.request_rate}'") from None
        if not rates or any(not r > 0 for r in rates):
            raise ValueError(f"--request-rate must be comma-separated numbers > 0, got '{args.request_rate}'")
        loads = [{"request_rate": r} for r in rates]
    elif args.num_requests:
        loads = [{"num_requests": _ints(args.num_requests, "--num-requests", minimum=1)[0]}]
    for device in devices:
        for par in parallels:
            for p in prompts:
                for n in gens:
                    for load in loads:
                        e = rp.serve(args.model, args.quant, device, engine=args.engine, parallel=par,
                                     prompt_tokens=p, gen_tokens=n, kv_dtype=args.kv_dtype,
                                     max_batch=args.max_batch, max_num_tokens=args.max_num_tokens,
                                     gpu_memory_fraction=args.gpu_memory_fraction, mtp_tokens=args.mtp_tokens,
                                     acceptance=args.acceptance, **load)
                        d = e.to_dict()
                        d.pop("breakdown")
                        data.append(d)
                        what = ("offline" if e.mode == "offline" else
                                f"c={e.concurrency:g}" if e.mode == "concurrency" else f"{e.request_rate:g} req/s")
                        lo, hi = e.output_tokens_per_s_interval
                        rows.append([e.device, e.parallel, f"{e.devices:g}", f"{p}/{n}", what,
                                     f"{e.output_tokens_per_s:.0f}", f"{lo:.0f}-{hi:.0f}",
                                     f"{e.output_tokens_per_s_per_device:.0f}", _latency(e.ttft_s), f"{e.itl_s * 1e3:.2f}",
                                     f"{e.running_batch:.0f}/{e.max_running_batch:.0f} {e.batch_limit}",
                                     f"{e.kv_capacity_tokens:.0f}", e.decode_bound + (" SATURATED" if e.saturated else "")])
    header = ["device", "parallel", "GPUs", "ISL/OSL", "load", "output tok/s", "interval", "tok/s/GPU", "TTFT ms",
              "ITL ms", "batch (limit)", "KV tokens", "decode bound"]
    text = _table(rows, header)
    if data:
        if args.mtp_tokens:
            text += (f"\n\nMTP speculative decoding: {args.mtp_tokens} drafted tokens per iteration, acceptance "
                     f"{args.acceptance:g}: {data[0]['tokens_per_decode_iteration']:.3g} tokens per sequence and iteration")
        text += (f"\n\n{data[0]['model']} {data[0]['quant']} (KV {data[0]['kv_dtype']}) with {data[0]['engine']}: "
                 f"output tokens/s of the whole deployment; TTFT includes queueing (inf: the queue grows); interval: "
                 f"the engine's prediction interval")
    _emit(args, data, text)
    return 0


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1f}"


def cmd_validate(args: argparse.Namespace) -> int:
    """Cross-validation of every engine fit (tests/validation/fits.json) on its tables, then every published point
    with the committed defaults, with the pure roofline beside both."""
    from . import _core, validation

    fits = [f for f in validation.fits() if not args.fit or f["name"] in args.fit]
    if args.fit and not fits:
        raise ValueError(f"--fit: no fit named {', '.join(args.fit)}; there are: "
                         f"{', '.join(f['name'] for f in validation.fits())}")
    summary = []
    for fit in fits:
        for row in validation.cross_validation_summary(validation.cross_validate(fit)):
            summary.append({"fit": fit["name"], **row})
    coverage = [row for fit in fits for table in fit["tables"]
                for eid in dict.fromkeys([fit["engine"], *fit.get("interval_to", [])])
                for row in validation.interval_coverage(table, eid)]
    serving_cv = validation.serving_cross_validate()
    serving = validation.serving_summary(serving_cv)
    res = validation.run()
    mape = validation.mape(res)
    one = validation.one_shot_calibration()
    one_mape = _core.summarize_validation([("one-shot", e, 0.0) for e in one["error"]])["one-shot"]
    if args.json:
        print(json_text({"cross_validation": summary, "intervals": coverage,
                         "serving": {"summary": serving, "fit": serving_cv.attrs["fit"],
                                     "points": serving_cv.to_dict(orient="records")},
                         "points": res.to_dict(orient="records"), "mape_percent": mape,
                         "one_shot_calibration": {"points": one.to_dict(orient="records"),
                                                  "mape_percent": one_mape["estimator"],
                                                  "max_percent": one_mape["estimator_max"]}}))
        return 0
    rows = [[s["fit"], s["table"], s["phase"], str(s["points"]),
             f"{_pct(s['defaults'])} ({_pct(s['defaults_max'])})", f"{_pct(s['in_sample'])} ({_pct(s['in_sample_max'])})",
             f"{_pct(s['lodo'])} ({_pct(s['lodo_max'])})", f"{_pct(s['logo'])} ({_pct(s['logo_max'])})",
             f"{_pct(s['roofline'])} ({_pct(s['roofline_max'])})"] for s in summary]
    print("Cross-validation of the engine fits: MAPE % (largest error %) per table and phase")
    print(_table(rows, ["fit", "table", "phase", "points", "defaults", "in-sample", "leave-one-device-out",
                        "leave-one-generation-out", "pure roofline"]))
    print("\ndefaults: the committed engine_db values; in-sample: refitted to all the points; leave-one-device-out /"
          " -generation-out: each device's (chip generation's) points predicted by a fit without them; pure roofline:"
          " datasheet ceilings, no overheads.\n")
    print("Prediction intervals: each fit's tables held to its engine and to the engines its interval is written "
          "into (rp.estimate at each point's settings)")
    print(_table([[c["table"], c["engine"], c["phase"], str(c["points"]), f"{_pct(c['mape'])} ({_pct(c['max'])})",
                   f"{100 * c['in_interval']:.0f} %"] for c in coverage],
                 ["table", "engine", "phase", "points", "MAPE (largest)", "inside the 80 % interval"]))
    print()
    notes = [f"{', '.join(fit['tables'])}: measured with the builds {fit['engine']} models; {eid}'s interval (its "
             f"own builds) covers them too, its estimate at the interval's top"
             for fit in fits for eid in fit.get("interval_to", []) if eid != fit["engine"]]
    if notes:
        print("\n".join(notes) + "\n")
    print("Serving (TensorRT-LLM's published tables; rp.serve offline max load, rp.estimate static batches, each "
          "table with the engine of its release): MAPE %")
    print(_table([[s["table"], s["kind"], s["engine"], str(s["points"]), _pct(s["defaults"]), _pct(s["in_sample"]),
                   _pct(s["leave_one_gpu_out"]), _pct(s["roofline"])] for s in serving],
                 ["table", "kind", "engine", "points", "defaults", "in-sample", "leave-one-GPU-out", "pure roofline"]))
    fitted = ", ".join(f"{k} {v:g}" for k, v in serving_cv.attrs["fit"].items())
    print(f"in-sample fit: {fitted} (tests/validation/serving.json: grid fit of the engine's host time per sequence and "
          f"bandwidth share to both tables)\n")
    point_tables = [t for t in dict.fromkeys(res["table"]) if (res[res["table"] == t]["tolerance"] > 0).any()]
    pts = res[res["table"].isin(point_tables)]
    prow = [[r.table, r.device, r.model, r.quant, r.test, str(r.tp), f"{r.measured:.2f}", f"{r.predicted:.2f}",
             f"{r.error * 100:+.1f}%", f"{r.roofline:.2f}", f"{r.roofline_error * 100:+.1f}%",
             "ok" if abs(r.error) <= r.tolerance else f"outside {r.tolerance * 100:.0f}%", r.bound]
            for r in pts.itertuples()]
    print(f"One-shot calibration (llamacpp_metal_llama2_7b: each chip calibrated from its Q8_0 tg128 alone, its F16 and"
          f" Q4_0 tg128 predicted): MAPE {one_mape['estimator']:.1f} % (max {one_mape['estimator_max']:.1f} %) over "
          f"{len(one)} predictions\n")
    print("Published points held to their tolerance (the committed defaults)")
    print(_table(prow, ["table", "device", "model", "quant", "test", "tp", "measured", "predicted", "error",
                        "roofline", "error", "tolerance", "bound"]))
    print()
    for name, s in mape.items():
        print(f"MAPE {name:>30}: estimator {s['estimator']:.1f} % (max {s['estimator_max']:.1f}), pure roofline "
              f"{s['roofline']:.1f} % ({s['points']} points)")
    return 0


def cmd_quants(args: argparse.Namespace) -> int:
    """Every quantization: its kind, its bits per weight on a model (all its tensors, norms included), the engines
    that run it."""
    m = rp.model(args.model)
    engines = [rp.engine(e) for e in rp.engines()]
    rows, data = [], []
    for q in rp.quants():
        kind = ("MLX affine" if q.startswith("mlx-") else "GPU scheme" if q.lower() == q else "llama.cpp mix")
        try:
            bits = 8 * m.weight_bytes(q) / m.parameters
        except (ValueError, KeyError):
            bits = float("nan")  # a scheme the model's shapes do not take
        runs = [e.id for e in engines if not e.based_on and bits == bits and e.runs(m, q)]
        data.append({"quant": q, "kind": kind, "bits_per_weight": bits, "model": m.id, "engines": runs})
        rows.append([q, kind, f"{bits:.3f}" if bits == bits else "-", ", ".join(runs) or "-"])
    _emit(args, data, _table(rows, ["quant", "kind", f"bits/weight ({m.id})", "engines that run it"]))
    return 0


def cmd_engines(args: argparse.Namespace) -> int:
    """The engines of engine_db: one row each, or with a name every property of each backend with its source."""
    names = [args.name] if args.name else rp.engines()
    engines = [rp.engine(n) for n in names]
    if args.json:
        print(json_text([json.loads(e.to_json()) for e in engines]))
        return 0
    if not args.name:
        rows = [[e.id, e.name, ", ".join(b.backend for b in e.backends), e.summary[:90]] for e in engines]
        print(_table(rows, ["id", "name", "backends", "summary"]))
        return 0
    e = engines[0]
    lines = [f"{e.name} ({e.id}; aliases: {', '.join(e.aliases) or '-'})", e.summary, f"file: {e.origin}"]
    for b in e.backends:
        lines += ["", f"backend {b.backend}:"]
        src = b.sources
        props = [("kernel_fixed_cost_scale", f"{b.kernel_fixed_cost_scale:g}"), ("activation_format", b.activation_format),
                 ("fused_qkv", str(b.fused_qkv)), ("matvec_fused_bias", str(b.matvec_fused_bias)),
                 ("matvec_fused_glu", str(b.matvec_fused_glu)),
                 ("logits_last_token_only", str(b.logits_last_token_only)),
                 ("runtime_overhead_GB", f"{b.runtime_overhead_bytes / 1e9:g}"), ("all_reduce", b.all_reduce),
                 ("collective_step_latency_us", f"{b.collective_step_latency_s * 1e6:g}"),
                 ("vocab_parallel", str(b.vocab_parallel)),
                 ("bandwidth_fraction", f"{b.bandwidth_fraction:g}"),
                 ("prefill_ubatch_tokens", f"{b.prefill_ubatch_tokens:g}"),
                 ("split_modes", ", ".join(b.split_modes)),
                 ("prefill_batch_tokens", f"{b.prefill_batch_tokens:g}"),
                 ("layer_handoff_latency_us", f"{b.layer_handoff_latency_s * 1e6:g}"),
                 ("layer_split_kernel_fixed_cost_add", f"{b.layer_split_kernel_fixed_cost_add:g}"),
                 ("flash_attention_version", str(b.flash_attention_version)),
                 ("flash_attention_default", str(b.flash_attention_default))]
        lines.append(_table([[k, v, src.get(k, ("", ""))[0]] for k, v in props], ["property", "value", "source"]))
        krows = [[k.name, ",".join(k.weights), "-" if k.max_rows == float("inf") else f"{k.max_rows:g}",
                  ",".join(k.families) or "all", "-" if k.max_experts == float("inf") else f"{k.max_experts:g}", k.unit,
                  k.compute, f"{k.tile_m:g}x{k.tile_n:g}" if k.unit == "matrix" else "-",
                  f"{k.dequant_every_rows:g}" if k.dequant_every_rows else "once",
                  "hidden" if k.dequant_overlapped else "serial", k.source] for k in b.linear_kernels]
        lines += ["linear kernels (first match by weight format, rows, device family and experts):",
                  _table(krows, ["kernel", "weights", "max rows", "families", "max experts", "unit", "compute", "tile", "dequant", "dequant time",
                                 "source"])]
    print("\n".join(lines))
    return 0


def _add_inference_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("engines", help="the inference engines of engine_db (with a name: every property and its source)")
    p.add_argument("name", nargs="?", help="an engine id or alias")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_engines)
    p = sub.add_parser("quants", help="every quantization: kind, bits per weight on a model, the engines that run it")
    p.add_argument("-m", "--model", default="llama-3.1-8b", help="the model whose bits per weight are shown")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_quants)
    p = sub.add_parser("models", help="list the model catalogue")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("estimate", help="tokens/s of a model × quantization × device, llama-bench style")
    p.add_argument("-m", "--model", required=True, help="model id(s), comma-separated")
    p.add_argument("-q", "--quant", default="Q4_K_M", help="quantization(s), comma-separated (rooflinepy quants lists them)")
    p.add_argument("-dev", "--device", required=True,
                   help="device ids or aliases, comma-separated (llama-bench's -dev; rooflinepy devices lists them)")
    p.add_argument("-p", "--n-prompt", dest="prompt", default="512", help="prompt lengths (ppN), comma-separated")
    p.add_argument("-n", "--n-gen", dest="gen", default="128", help="generated tokens (tgN), comma-separated")
    p.add_argument("-b", "--batch", default="1", help="batch sizes, comma-separated")
    p.add_argument("--kv-dtype", default="f16", help="KV cache format: f16, bf16, fp8, q8_0, q4_0 ...")
    add_flash_attn(p)
    p.add_argument("-d", "--n-depth", default="0",
                   help="tokens already in the KV cache before each test, comma-separated (llama-bench -d)")
    p.add_argument("-ub", "--ubatch-size", default=None,
                   help="prompt micro-batch in tokens (llama-bench -ub; default: the engine's)")
    p.add_argument("--engine", default="llama.cpp", help="the engine (rooflinepy engines lists them)")
    p.add_argument("--tensor-parallel", "-tp", type=int, default=1,
                   help="devices one copy of the model is spread over (as -sm says)")
    p.add_argument("-sm", "--split-mode", default=None, choices=["layer", "tensor"],
                   help="how -tp devices share the model (llama-bench -sm): layer (whole layers, one device after "
                        "another) or tensor (tensor parallelism); default: the engine's")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_estimate)
    p = sub.add_parser("serve", help="output tokens/s, TTFT and ITL of a model served by vllm / trt-llm / sglang "
                                     "(continuous batching), trtllm-bench style")
    p.add_argument("-m", "--model", required=True, help="model id")
    p.add_argument("-q", "--quant", default="fp8", help="quantization: fp8 (W8A8), nvfp4, mxfp4, int4-awq, bf16 ...")
    p.add_argument("-dev", "--device", required=True, help="device ids or aliases, comma-separated")
    p.add_argument("--engine", default="vllm", help="serving engine: vllm, trt-llm, sglang")
    p.add_argument("--parallel", default="TP1",
                   help="TensorRT-LLM notation: TP4, 'TP2,PP2', DEP8, 'TP8,EP8'; several separated by ';'")
    p.add_argument("-p", "--n-prompt", dest="prompt", default="1000", help="prompt lengths (ISL), comma-separated")
    p.add_argument("-n", "--n-gen", dest="gen", default="1000", help="output lengths (OSL), comma-separated")
    p.add_argument("--concurrency", default=None, help="closed-loop clients, comma-separated (default: offline max load)")
    p.add_argument("--request-rate", default=None, help="Poisson arrivals per second, comma-separated")
    p.add_argument("--num-requests", default=None, help="an offline run of this many requests (ramp-up and drain)")
    p.add_argument("--max-batch", type=int, default=None, help="most sequences per iteration (default: the engine's)")
    p.add_argument("--max-num-tokens", type=int, default=None, help="token budget of an iteration (default: the engine's)")
    p.add_argument("--kv-dtype", default=None, help="KV cache format (default: the engine's for the weights)")
    p.add_argument("--gpu-memory-fraction", type=float, default=None, help="share of memory for the KV cache")
    p.add_argument("--mtp-tokens", type=int, default=0,
                   help="MTP speculative decoding: tokens the model's multi-token-prediction module drafts per iteration")
    p.add_argument("--acceptance", type=float, default=None, help="with --mtp-tokens: probability a draft is accepted")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("validate", help="cross-validate the engine fits and hold the estimator to published "
                                        "measurements (offline)")
    p.add_argument("--fit", action="append", help="only this fit of fits.json (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rooflinepy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"rooflinepy {rp.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("devices", help="list every device of the hardware database")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_devices)
    p = sub.add_parser("device", help="one device's ceilings, ridge points and sources")
    p.add_argument("name", help="device id or alias")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_device)
    _add_op_parsers(sub)
    _add_calibrate_parsers(sub)
    _add_inference_parsers(sub)
    _add_sweep_parser(sub)
    _add_plot_parsers(sub)
    return parser


def _binary(x: Optional[float]) -> str:
    """Capacities as their datasheets write them: GiB, MiB or KiB (80 GiB, not 85.9 GB)."""
    if x is None or x <= 0:
        return "-"
    for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if x >= factor:
            return f"{x / factor:.4g} {unit}"
    return f"{x:.0f} B"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        commands = ", ".join(sorted(str(c) for c in subs[0].choices)) if subs else ""
        print(f"rooflinepy: error: unknown option '{argv[0]}' before the command; the command comes first "
              f"(rooflinepy COMMAND ...), one of: {commands}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (KeyError, ValueError, FileNotFoundError, OverflowError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"rooflinepy: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
