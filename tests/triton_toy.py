"""A small git repository with one Triton kernel and its bench entry point, fast enough under the
CPU interpreter (``TRITON_INTERPRET=1``, as CPU workers run) and in cross-compiles: base, and a
head that rewrites the kernel's body (the same work, so the sweep has something to measure and
nothing to find slower).

``own_packages``: the repository also has top-level ``checks``, ``bot`` and ``kernels_fixture``
packages, the names of the bot's own. Its kernel module imports its ``checks.limits`` and its
``bot`` (as a repository's code would), and its ``kernels_fixture`` raises when imported: were
the bot's helper programs to import the repository's packages instead of their own, or the
repository's code the bot's, a command would fail.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import NamedTuple

from bot import gitutil

KERNEL = """
import torch
import triton
import triton.language as tl
{own_imports}

@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), {block}),)](x, y, x.numel(), BLOCK={block})
    return y
"""
OWN_IMPORTS = """
from bot import OWNER
from checks.limits import BLOCK

assert OWNER == "toyops", "the bot's own bot package was imported"
"""
BENCH = """
import torch

from toyops.scale import scale as _scale


def scale(shape, dtype, *, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).to(device=device, dtype=getattr(torch, dtype))
    return {"fn": lambda: _scale(x), "reference": lambda: x * 2.0, "inputs": [x],
            "bytes_moved": 2 * x.numel() * x.element_size(), "flops": x.numel()}
"""
POLICY = """
tolerance = 1.0
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[limits]
max_shapes = 1
max_gpu_seconds = 600

[compiler]
nvidia_targets = ["sm_90"]

[[kernels]]
name = "scale"
bench = "toyops.bench:scale"
paths = ["toyops/**"]
dtypes = ["float32"]
shapes = [[256]]
"""


class ToyRepo(NamedTuple):
    path: Path
    base_sha: str
    head_sha: str


def build_toy_repo(root: Path, *, own_packages: bool = False) -> ToyRepo:
    gitutil.init_repo(root)
    files = {
        "toyops/__init__.py": "",
        "toyops/bench.py": BENCH,
        ".github/kernel-review.toml": POLICY,
    }
    block = "256"
    if own_packages:
        block = "BLOCK"
        files |= {
            "checks/__init__.py": "",
            "checks/limits.py": "BLOCK = 256\n",
            "bot/__init__.py": 'OWNER = "toyops"\n',
            "kernels_fixture/__init__.py": 'raise ImportError("this repository\'s kernels_fixture")\n',
        }
    kernel = KERNEL.format(own_imports=OWN_IMPORTS if own_packages else "", block=block)
    files["toyops/scale.py"] = kernel
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    base = gitutil.commit_all(root, "base")
    gitutil.git(root, "checkout", "-q", "-b", "feature")
    # the same work, written the other way round: a body change the review sees
    (root / "toyops" / "scale.py").write_text(
        files["toyops/scale.py"].replace(
            "tl.load(x_ptr + offs, mask=mask) * 2.0", "2.0 * tl.load(x_ptr + offs, mask=mask)"
        )
    )
    head = gitutil.commit_all(root, "head: the kernel's body rewritten")
    return ToyRepo(root, base, head)
