#!/usr/bin/env python3
"""Executes every notebook in notebooks/ top to bottom with nbclient; exits non-zero if any cell fails.

Each notebook runs from a fresh temporary directory (so it can only import the installed package, never the
checkout) with the kernel's inline matplotlib backend (no display needed), under a per-cell and a per-notebook
timeout. A notebook that holds outputs fails too: git keeps them stripped. Nothing is written back. Prints each
notebook's wall time.

    python3 scripts/run_notebooks.py [--timeout 120] [notebooks/01_roofline_basics.ipynb ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def stripped(nb) -> bool:
    """No outputs and no execution counts: what git should hold."""
    return all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


def run(path: Path, timeout: int, kernel: str) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    if not stripped(nb):
        raise ValueError(f"{path.name} holds outputs; strip them before committing (Jupyter: Clear All Outputs, or "
                         f"jupyter nbconvert --clear-output --inplace {path})")
    with tempfile.TemporaryDirectory(prefix="rooflinepy-nb-") as tmp:
        client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, resources={"metadata": {"path": tmp}},
                                allow_errors=False)
        start = time.perf_counter()
        client.execute(cwd=tmp)
        elapsed = time.perf_counter() - start
    if elapsed > timeout:
        raise TimeoutError(f"{path.name} took {elapsed:.1f} s, over the {timeout} s budget")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/*.ipynb")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per cell and per notebook (default 120)")
    ap.add_argument("--kernel", default="python3", help="Jupyter kernel name (default python3)")
    args = ap.parse_args(argv)
    paths = args.notebooks or sorted((REPO / "notebooks").glob("*.ipynb"))
    if not paths:
        print("run_notebooks: no notebooks found", file=sys.stderr)
        return 1
    os.environ.pop("PYTHONPATH", None)  # the kernel inherits the environment: no source tree on its path
    failed = []
    total = 0.0
    for p in paths:
        try:
            t = run(p, args.timeout, args.kernel)
            total += t
            print(f"ok      {p.name:32s} {t:6.1f} s", flush=True)
        except Exception as e:  # CellExecutionError carries the traceback of the failing cell
            failed.append(p.name)
            print(f"FAILED  {p.name}\n{e}", file=sys.stderr, flush=True)
    print(f"{len(paths) - len(failed)}/{len(paths)} notebooks ran without error in {total:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
