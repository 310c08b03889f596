"""Run real-kernel entries on the CPU under Triton's interpreter and compare ``fn()`` with ``reference()``.

The check that can be made without a GPU: each selected kernel's entry is called with
``device="cpu"`` on a small shape of its rank (the catalogue's small shape with every dimension
capped, or ``--shape ID=AxBxC``), ``fn()`` is run under ``TRITON_INTERPRET=1``, and every output is
held to the entry's ``atol``/``rtol`` against ``reference()``; a second call with the same seed must
give the same output. The package must be installed in this Python.

The interpreter cannot run some real kernels as they are, so this script adapts it, for these
runs only (no kernel's code changes):

- autotuned kernels run one config (``--config first|last``) instead of timing every one, which
  needs a GPU;
- a builtin ``range`` in a kernel yields interpreter scalars, as a compiled loop's induction
  variable is one (fla's kernels call ``.to()`` on it);
- ``libdevice.log1p`` and ``libdevice.tanh``, which the interpreter lacks, are given as
  ``log(1 + x)`` and ``2 sigmoid(2x) - 1``;
- ``torch.utils._triton.has_triton()`` is made true where ``--force-has-triton`` is given
  (torchao defines its blockwise fp8 ops only where it holds, which needs a GPU);
- under NumPy 2.4 and later, the interpreter's scalar-to-int fix from kernels_fixture.

What it cannot show: the interpreter's own cast to fp8 rounds some values down by a binade
(125.0 becomes 64 where a GPU and torch give 128), so entries whose outputs are fp8 differ in a
few percent of their elements here; their notes in the catalogue say so. In bfloat16 some
block-pointer loads give garbage under the interpreter, which is why the chunked scans and Cut
Cross-Entropy are catalogued in float16.

Usage::

    TRITON_INTERPRET=1 python bench/real_kernels/interpret_entries.py --catalogue \\
        bench/real_kernels/catalogue/fla.toml [--only fla_l2norm ...] [--config last]

Exit status: 0 every selected kernel matched, 1 some did not or raised, 2 a usage error.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = Path(__file__).resolve().parent / "entries"
DEFAULT_CAP = 67


def _patch_interpreter(config: str, force_has_triton: bool) -> None:
    import numpy as np
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.runtime import autotuner, interpreter

    sys.path.insert(0, str(ROOT))
    from kernels_fixture import interpreter_compat

    interpreter_compat.apply()

    prune = autotuner.Autotuner.prune_configs

    def one_config(self: Any, kwargs: dict[str, Any], *args: Any, **kw: Any) -> list[Any]:
        configs = prune(self, kwargs, *args, **kw)
        return [configs[0] if config == "first" else configs[-1]]

    def no_timing(self: Any, *args: Any, config: Any = None, **kwargs: Any) -> list[float]:
        return [0.0]

    autotuner.Autotuner.prune_configs = one_config  # type: ignore[method-assign]
    autotuner.Autotuner._bench = no_timing  # type: ignore[method-assign]

    def scalar_range(*bounds: Any) -> Iterator[Any]:
        ints = []
        for b in bounds:
            b = getattr(b, "value", b)
            if isinstance(b, tl.tensor):
                b = b.handle.data.item()
            ints.append(int(b))
        for i in range(*ints):
            handle = interpreter.TensorHandle(np.array([i], dtype=np.int32), tl.int32)
            yield tl.tensor(handle, tl.int32)

    class RangeCalls(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "range":
                node.func = ast.Name("_interpreted_range", ast.Load())
            return node

    transform = interpreter.FunctionRewriter._transform_ast

    def with_scalar_range(self: Any, src: str) -> ast.AST:
        tree = ast.fix_missing_locations(RangeCalls().visit(transform(self, src)))
        self.fn.__globals__["_interpreted_range"] = scalar_range
        return tree

    interpreter.FunctionRewriter._transform_ast = with_scalar_range  # type: ignore[method-assign]
    libdevice.log1p = lambda a, **_: tl.log(1.0 + a)  # type: ignore[assignment]
    libdevice.tanh = lambda a, **_: 2.0 * tl.sigmoid(2.0 * a) - 1.0  # type: ignore[assignment]
    if force_has_triton:
        import torch.utils._triton as torch_triton

        torch_triton.has_triton = lambda: True  # type: ignore[assignment]


def _module(name: str, entries: Path) -> ModuleType:
    path = entries / f"{name}.py"
    if not path.is_file():
        raise SystemExit(f"error: no entry module {path}; check the catalogue's entry")
    spec = importlib.util.spec_from_file_location(f"entries.{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def check(
    kernel: dict[str, Any], shape: tuple[int, ...], seed: int, entries: Path = ENTRIES
) -> tuple[bool, str]:
    """Run one entry on ``shape``; (matched, what was seen)."""
    import torch

    module, function = kernel["entry"].split(":")
    entry = getattr(_module(module, entries), function)
    case = entry(shape, kernel["dtype"], device="cpu", seed=seed)
    out = _outputs(case["fn"]())
    again = _outputs(entry(shape, kernel["dtype"], device="cpu", seed=seed)["fn"]())
    repeat = len(out) == len(again) and all(
        torch.equal(a, b) for a, b in zip(out, again, strict=True)
    )
    if case.get("reference") is None:
        return repeat, f"no reference; same output again: {repeat}"
    ref = _outputs(case["reference"]())
    if len(ref) != len(out):
        return False, f"fn gives {len(out)} outputs, reference {len(ref)}"
    atol, rtol = float(case.get("atol", 1e-2)), float(case.get("rtol", 1e-2))
    seen, ok = [], repeat
    for o, r in zip(out, ref, strict=True):
        if o.shape != r.shape:
            return False, f"output shape {tuple(o.shape)}, reference {tuple(r.shape)}"
        of, rf = o.float(), r.float()
        bad = int(((of - rf).abs() > atol + rtol * rf.abs()).sum()) + int(of.isnan().sum())
        ok = ok and bad == 0
        seen.append(
            f"max |diff| {float((of - rf).abs().nan_to_num(float('inf')).max()):.3g}, {bad}/{o.numel()} out of tolerance"
        )
    return ok, "; ".join(seen) + ("" if repeat else "; a second call differs")


def _small(shape: list[int], cap: int) -> tuple[int, ...]:
    return tuple(min(int(d), cap) for d in shape)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--catalogue", type=Path, nargs="+", required=True, help="catalogue .toml files"
    )
    ap.add_argument("--only", nargs="*", default=[], help="kernel ids to run (default: all)")
    ap.add_argument(
        "--shape", action="append", default=[], metavar="ID=AxB", help="shape for one id"
    )
    ap.add_argument(
        "--cap", type=int, default=DEFAULT_CAP, help="cap on each dimension of the small shape"
    )
    ap.add_argument("--config", choices=("first", "last"), default="first")
    ap.add_argument("--force-has-triton", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--entries", type=Path, default=ENTRIES, help="folder of the entry modules")
    args = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1":
        print(
            "error: set TRITON_INTERPRET=1 in the environment (Triton reads it at import)",
            file=sys.stderr,
        )
        return 2
    shapes: dict[str, tuple[int, ...]] = {}
    for item in args.shape:
        kid, _, dims = item.partition("=")
        try:
            shapes[kid] = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            print(
                f"error: --shape {item!r}: write ID=AxBxC with positive integers", file=sys.stderr
            )
            return 2
    kernels = []
    for path in args.catalogue:
        try:
            kernels += tomllib.loads(path.read_text(encoding="utf-8"))["kernels"]
        except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
            print(f"error: cannot read {path} as a catalogue: {exc}", file=sys.stderr)
            return 2
    unknown = set(args.only) - {k["id"] for k in kernels}
    if unknown:
        print(f"error: --only names ids not in the catalogues: {sorted(unknown)}", file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    _patch_interpreter(args.config, args.force_has_triton)
    failed = 0
    for k in kernels:
        if args.only and k["id"] not in args.only:
            continue
        shape = shapes.get(k["id"]) or _small(k["shapes"][0], args.cap)
        start = time.monotonic()
        try:
            ok, seen = check(k, shape, args.seed, args.entries)
        except Exception as exc:  # a kernel the interpreter cannot run is reported, not fatal
            ok, seen = False, f"raised {type(exc).__name__}: {str(exc)[:300]}"
            traceback.print_exc(limit=4)
        failed += not ok
        label = "match" if ok else "DIFFERS"
        print(
            f"{label:8} {k['id']} {shape} {k['dtype']}: {seen} ({time.monotonic() - start:.1f} s)",
            flush=True,
        )
    print(
        f"{failed} of the selected kernels did not match"
        if failed
        else "every selected kernel matched"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
