"""The toolchain as data: the packages that compile or run a repository's kernels.

A pin of one of these is a toolchain pin (``pins.py``); a pin of anything else is not. Three
groups: Triton and its vendor builds, PyTorch and its conda CUDA build, and the compilers of the
other kernel languages a repository writes in Python (CuTe DSL, TileLang, Helion, cuTile,
CuPy's and Numba's CUDA, ...). Each entry names the module it provides, so every kernel language
the analysis reads and every GPU module it knows (``bot/analysis/languages``) has its compiler
here; ``tests/unit/test_toolchain_packages.py`` holds the two lists together.

A name is PEP 503-normalised before it is looked up (``canonical`` in ``pins.py``). A family
(``cupy-cuda12x``, ``nvidia-cutlass-dsl-libs-cu12``: one build per CUDA or ROCm release) is a
pattern the whole name matches. Pure data and a look-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolchainPackage:
    name: str  # the canonical distribution name
    what: str  # as a review names it
    module: str  # the module it provides ("" for a conda metapackage)
    family: str = ""  # a pattern for the builds of it with a CUDA/ROCm suffix in their name


TRITON: tuple[ToolchainPackage, ...] = (
    ToolchainPackage("triton", "Triton", "triton"),
    ToolchainPackage("pytorch-triton", "Triton (PyTorch's build)", "triton"),
    ToolchainPackage("pytorch-triton-rocm", "Triton for ROCm", "triton"),
    ToolchainPackage("pytorch-triton-xpu", "Triton for Intel XPU", "triton"),
    ToolchainPackage("triton-rocm", "Triton for ROCm", "triton"),
    ToolchainPackage("triton-xpu", "Triton for Intel XPU", "triton"),
    ToolchainPackage("triton-nightly", "Triton nightly", "triton"),
    ToolchainPackage("triton-windows", "Triton for Windows", "triton"),
)
PYTORCH: tuple[ToolchainPackage, ...] = (
    ToolchainPackage("torch", "PyTorch", "torch"),
    ToolchainPackage("pytorch-cuda", "conda CUDA build of PyTorch", ""),
    ToolchainPackage("cuda-version", "conda CUDA version", ""),
)
# The compilers of the kernel languages other than Triton's, as real repositories pin them
# (nvidia-cutlass-dsl==4.6.1 in quack's pyproject.toml, tilelang==0.1.8 in mamba's setup.py).
KERNEL_COMPILERS: tuple[ToolchainPackage, ...] = (
    ToolchainPackage(
        "nvidia-cutlass-dsl",
        "CuTe DSL compiler (CUTLASS Python DSL)",
        "cutlass",
        family=r"nvidia-cutlass-dsl-libs-[a-z0-9-]+",
    ),
    ToolchainPackage("tilelang", "TileLang compiler", "tilelang"),
    ToolchainPackage("helion", "Helion compiler", "helion"),
    ToolchainPackage("cuda-tile", "cuTile compiler (CUDA Tile)", "cuda.tile"),
    ToolchainPackage("tilus", "Tilus compiler", "tilus"),
    ToolchainPackage("flydsl", "FlyDSL compiler (ROCm)", "flydsl"),
    ToolchainPackage("hidet", "Hidet compiler", "hidet"),
    ToolchainPackage("warp-lang", "NVIDIA Warp kernel compiler", "warp"),
    ToolchainPackage("numba-cuda", "Numba's CUDA kernel compiler", "numba.cuda"),
    ToolchainPackage("pycuda", "PyCUDA (CUDA source compiled at run time)", "pycuda"),
    ToolchainPackage("taichi", "Taichi compiler", "taichi"),
    ToolchainPackage(
        "cupy",
        "CuPy (RawKernel sources compiled by NVRTC or hipRTC)",
        "cupy",
        family=r"cupy-(?:cuda\d+x?|rocm-\d+(?:-\d+)*)",
    ),
)
PACKAGES: tuple[ToolchainPackage, ...] = (*TRITON, *PYTORCH, *KERNEL_COMPILERS)

_BY_NAME = {p.name: p for p in PACKAGES}
_FAMILIES = tuple((re.compile(p.family), p) for p in PACKAGES if p.family)


def toolchain_package(name: str) -> ToolchainPackage | None:
    """The entry a canonical distribution name is (or is a build of), or None."""
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    return next((p for pattern, p in _FAMILIES if pattern.fullmatch(name)), None)
