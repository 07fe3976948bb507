"""``rooflinepy plot <figure> -o file.png``: the figures of :mod:`rooflinepy.plot` from the shell."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable, List, Tuple

from ._cli_common import add_flash_attn, flash_attn, json_text

if TYPE_CHECKING:
    from ._roofline import OpCost

_DEFAULT_OPS = ["gemm:4096,4096,4096", "gemv:4096,4096", "elementwise:268435456", "softmax:4096,4096"]


def _names(text: str) -> List[str]:
    return [t.strip() for t in str(text).split(",") if t.strip()]


def _ints(text: str, what: str) -> List[int]:
    try:
        values = [int(v) for v in _names(text)]
    except ValueError:
        raise ValueError(f"{what} must be comma-separated whole numbers, got '{text}'") from None
    if not values:
        raise ValueError(f"{what} must list at least one number")
    return values


def _parse_op(spec: str, dtype: str) -> Tuple[str, OpCost]:
    """(label, OpCost) from 'gemm:M,N,K', 'gemv:N,K', 'elementwise:N', 'softmax:ROWS,COLS',
    'layernorm:ROWS,COLS' or 'rmsnorm:ROWS,COLS'."""
    import rooflinepy as rp

    name, _, args = spec.partition(":")
    name = name.strip().lower()
    nums = _ints(args, f"op '{spec}'") if args else []
    shapes = {"gemm": 3, "gemv": 2, "elementwise": 1, "softmax": 2, "layernorm": 2, "rmsnorm": 2}
    if name in shapes and len(nums) != shapes[name]:
        raise ValueError(f"op '{spec}': {name} takes {shapes[name]} sizes, got {len(nums)}")
    if name == "gemm":
        return (f"GEMM {nums[0]}×{nums[1]}×{nums[2]}", rp.ops.gemm(nums[0], nums[1], nums[2], dtype=dtype))
    if name == "gemv":
        return (f"GEMV {nums[0]}×{nums[1]}", rp.ops.gemv(nums[0], nums[1], dtype))
    if name == "elementwise":
        return (f"elementwise {nums[0]:g}", rp.ops.elementwise(nums[0], 1, 1, 1, dtype))
    if name in ("softmax", "layernorm", "rmsnorm"):
        build: Callable[[float, float, str], OpCost] = getattr(rp.ops, name)
        return (f"{name} {nums[0]}×{nums[1]}", build(nums[0], nums[1], dtype))
    raise ValueError(f"unknown op '{name}' in '{spec}'; valid: gemm:M,N,K, gemv:N,K, elementwise:N, "
                     f"softmax:ROWS,COLS, layernorm:ROWS,COLS, rmsnorm:ROWS,COLS")


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plot needs matplotlib, which is not installed: pip install 'rooflinepy[plot]' "
                         "(or pip install matplotlib)") from None

    matplotlib.use("Agg")
    import rooflinepy as rp

    f = args.figure
    if f == "roofline":
        ops = [_parse_op(s, args.dtype) for s in (args.ops or _DEFAULT_OPS)]
        fig = rp.plot.roofline(_names(args.devices), ops=ops, dtype=args.dtype, ideal=not args.derated)
    elif f == "ridge-shift":
        fig = rp.plot.ridge_shift(_names(args.devices), dtype=args.dtype)
    elif f == "tokens-per-second":
        fig = rp.plot.tokens_per_second(args.model, _names(args.quants), _names(args.devices),
                                        prompt_tokens=args.prompt, gen_tokens=args.gen, engine=args.engine,
                                        kv_dtype=args.kv_dtype, flash_attention=flash_attn(args.flash_attn))
    elif f == "attention-io":
        fig = rp.plot.attention_io(_ints(args.seq_lens, "--seq-lens"), args.device, heads=args.heads,
                                   head_dim=args.head_dim, batch=args.batch, dtype=args.dtype, causal=args.causal,
                                   backward=args.backward)
    elif f == "kv-cache":
        fig = rp.plot.kv_cache(args.model, _ints(args.context, "--context"), kv_dtypes=_names(args.kv_dtypes),
                               batch=args.batch)
    elif f == "batching":
        fig = rp.plot.batching(args.model, args.device, quant=args.quant, batches=_ints(args.batch, "--batch"),
                               contexts=_ints(args.context, "--context"), engine=args.engine, dtype=args.dtype)
    elif f == "serving":
        deps = [(d, par) for d in _names(args.devices) for par in [x for x in args.parallel.split(";") if x.strip()]]
        fig = rp.plot.serving(args.model, args.quant, deps, prompt_tokens=args.prompt, gen_tokens=args.gen,
                              concurrency=_ints(args.concurrency, "--concurrency"), engine=args.engine, x=args.x)
    elif f == "validation":
        fig = rp.plot.validation(args.fits)
    else:  # argparse restricts the choices
        raise ValueError(f"unknown figure '{f}'")
    _save(fig, args.output, args.dpi)
    if getattr(args, "json", False):
        data = getattr(fig, "rooflinepy_data", {})
        print(json_text({"output": args.output, "figure": f, "data": data}))
    else:
        print(f"rooflinepy: wrote {args.output}", file=sys.stderr)
    return 0


def add_plot_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    plot = sub.add_parser("plot", help="draw a figure (roofline, ridge shift, tokens/s, ...) to a file")
    figs = plot.add_subparsers(dest="figure", required=True, metavar="FIGURE")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("-o", "--output", required=True, help="file to write (.png, .svg, .pdf ...)")
        p.add_argument("--dpi", type=float, default=120, help="resolution of raster formats (default 120)")
        p.add_argument("--json", action="store_true", help="print the numbers drawn (fig.rooflinepy_data) as JSON")
        p.set_defaults(func=cmd_plot)

    p = figs.add_parser("roofline", help="log-log roofline of devices with ops as points")
    p.add_argument("-d", "--devices", default="a100-sxm-80gb,h100-sxm", help="device ids, comma-separated")
    p.add_argument("--dtype", default="bf16", help="number format of the ceilings and ops (default bf16)")
    p.add_argument("--op", dest="ops", action="append",
                   help="op to place, repeatable: gemm:M,N,K gemv:N,K elementwise:N softmax:R,C layernorm:R,C "
                        "(default: gemm:4096,4096,4096 gemv:4096,4096 elementwise:268435456 softmax:4096,4096)")
    p.add_argument("--derated", action="store_true", help="derated ceilings instead of the datasheet's")
    common(p)
    p = figs.add_parser("ridge-shift", help="compute vs bandwidth growth and the ridge point per generation")
    p.add_argument("-d", "--devices", default="v100-sxm,a100-sxm-80gb,h100-sxm,h200-sxm,b200",
                   help="device ids in order, comma-separated")
    p.add_argument("--dtype", default="fp16")
    common(p)
    p = figs.add_parser("tokens-per-second", help="decode and prefill tokens/s per quantization and device")
    p.add_argument("-m", "--model", default="qwen3-4b")
    p.add_argument("-q", "--quants", default="BF16,Q8_0,Q4_K_M")
    p.add_argument("-d", "--devices", default="m4-pro,m4-max")
    p.add_argument("-p", "--n-prompt", dest="prompt", type=int, default=512, help="prefill test ppN (default 512)")
    p.add_argument("-n", "--n-gen", dest="gen", type=int, default=128, help="decode test tgN (default 128)")
    p.add_argument("--engine", default="llama.cpp")
    p.add_argument("--kv-dtype", default="f16")
    add_flash_attn(p)
    common(p)
    p = figs.add_parser("serving", help="output tokens/s per GPU against ITL (or TTFT) over a concurrency sweep")
    p.add_argument("-m", "--model", default="llama-3.3-70b")
    p.add_argument("-q", "--quant", default="fp8")
    p.add_argument("-d", "--devices", default="h100-sxm,h200-sxm", help="device ids, comma-separated")
    p.add_argument("--parallel", default="TP4", help="TensorRT-LLM notation; several separated by ';'")
    p.add_argument("--engine", default="vllm")
    p.add_argument("-p", "--n-prompt", dest="prompt", type=int, default=1000)
    p.add_argument("-n", "--n-gen", dest="gen", type=int, default=1000)
    p.add_argument("--concurrency", default="1,2,4,8,16,32,64,128,256,512,1024")
    p.add_argument("--x", choices=["itl", "ttft"], default="itl")
    common(p)
    p = figs.add_parser("attention-io", help="DRAM bytes of standard vs flash attention vs sequence length")
    p.add_argument("-d", "--device", default="a100-sxm-80gb")
    p.add_argument("--seq-lens", default="512,1024,2048,4096,8192,16384,32768,65536")
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--backward", action="store_true")
    common(p)
    p = figs.add_parser("kv-cache", help="KV bytes read per step and over a generation, GQA vs MHA/MQA, formats")
    p.add_argument("-m", "--model", default="llama-3.1-8b")
    p.add_argument("--context", default="512,1024,2048,4096,8192,16384,32768,65536,131072")
    p.add_argument("--kv-dtypes", default="f16,q8_0,q4_0")
    p.add_argument("--batch", type=int, default=1)
    common(p)
    p = figs.add_parser("batching", help="decode intensity and tokens/s vs batch; where it crosses the ridge")
    p.add_argument("-m", "--model", default="llama-3.1-8b")
    p.add_argument("-d", "--device", default="h100-sxm")
    p.add_argument("-q", "--quant", default="BF16")
    p.add_argument("-b", "--batch", default="1,2,4,8,16,32,64,128,256,512,1024")
    p.add_argument("--context", default="128,2048", help="tokens in each sequence's cache, comma-separated")
    p.add_argument("--engine", default="cuda-graphs")
    p.add_argument("--dtype", default="fp16", help="format of the ridge point drawn (default fp16)")
    common(p)
    p = figs.add_parser("validation", help="estimated against measured tokens/s on the calibration corpus, with "
                                          "leave-one-device-out and the pure roofline")
    p.add_argument("--fit", dest="fits", action="append",
                   help="an engine fit of tests/validation/fits.json by name, repeatable (default: all; "
                        "rooflinepy validate lists them)")
    common(p)
    plot.set_defaults(func=cmd_plot)


def _save(fig: Any, output: str, dpi: float) -> None:
    """The figure into ``output``, drawn in memory first: a folder, a name without a format matplotlib knows, or a
    file that cannot be written (a full disk, /dev/full) is one error naming -o, never a traceback or a file
    written under another name."""
    import io
    import os

    if os.path.isdir(output):
        raise ValueError(f"-o/--output: '{output}' is a directory; give a file name such as ridge.png")
    ext = os.path.splitext(output)[1].lower().lstrip(".")
    formats = sorted(fig.canvas.get_supported_filetypes())
    if ext not in formats:
        raise ValueError(f"-o/--output: '{output}' must end in one of: {', '.join('.' + f for f in formats)}")
    buf = io.BytesIO()
    fig.savefig(buf, format=ext, dpi=dpi)
    try:
        with open(output, "wb") as fh:
            fh.write(buf.getvalue())
    except OSError as err:
        raise ValueError(f"-o/--output: cannot write '{output}': {err.strerror or err}") from None
