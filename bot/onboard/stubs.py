"""Bench entry stubs for the ops no benchmark of the repository calls.

``init`` writes them into one module at the repository's root (``kernel_review_bench.py``):
one function per op with the bench entry signature (docs/bench-entry.md), naming the function
users call and its parameters as written, with the import it needs. A stub raises until it is
filled in, saying what to write, so a policy entry naming it fails its case with that message
instead of measuring nothing. Pure: ops in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.onboard.scan import Op

STUB_MODULE = "kernel_review_bench"

HEADER = '''"""Bench entry points for kernel-review (docs/bench-entry.md), written by `kernel-review init`
for ops that no benchmark of this repository calls. Each is a stub: build the op's inputs from
``shape``, ``dtype`` and ``seed``, return ``{"fn": ...}``, then add the op to the policy with
``bench = "kernel_review_bench:NAME"``, its ``paths``, ``dtypes`` and ``shapes``."""

from __future__ import annotations

import torch
'''


def stub_name(op: Op) -> str:
    """The stub's function name: the op's name as a Python identifier."""
    return re.sub(r"\W", "_", op.name)


def render_stubs(ops: Sequence[Op]) -> str:
    """The stub module for ``ops`` (each with a module to import its entry from, or C++ ops
    named only)."""
    parts = [HEADER]
    for op in ops:
        call = f"{op.entry}({op.signature})"
        where = f"{op.module}.{op.entry}" if op.module else f"the extension op {op.entry}"
        load = f"    from {op.module} import {op.entry} as op\n\n" if op.module else ""
        message = (
            f"{STUB_MODULE}.{stub_name(op)} is a stub: build the inputs of {call} and return fn"
        )
        parts.append(
            f'''

def {stub_name(op)}(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> dict:
    """{where}({op.signature})"""
{load}    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
    # return {{"fn": lambda: op(x, ...), "inputs": [x]}}
    raise NotImplementedError({message!r})
'''
        )
    return "".join(parts)
