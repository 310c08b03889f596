"""The toolchain as data: the packages that compile or run a repository's kernels.

``packages.toml`` beside this module lists them, in three groups: Triton and its vendor builds,
PyTorch and its conda CUDA build, and the compilers of the other kernel languages a repository
writes in Python (CuTe DSL, TileLang, Helion, cuTile, CuPy's and Numba's CUDA, ...). A pin of
one of these is a toolchain pin (``pins.py``); a pin of anything else is not. Each entry names
the module it provides, so every kernel language the analysis reads and every GPU module it
knows (``bot/analysis/languages``) has its compiler there; ``tests/unit/test_toolchain_packages.py``
holds the two lists together.

A name is PEP 503-normalised before it is looked up (``canonical`` in ``pins.py``). A family
(``cupy-cuda12x``, ``nvidia-cutlass-dsl-libs-cu12``: one build per CUDA or ROCm release) is a
pattern the whole name matches.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class ToolchainPackage:
    name: str  # the canonical distribution name
    what: str  # as a review names it
    module: str  # the module it provides ("" for a conda metapackage)
    family: str = ""  # a pattern for the builds of it with a CUDA/ROCm suffix in their name


def _load() -> tuple[ToolchainPackage, ...]:
    data = tomllib.loads((Path(__file__).parent / "packages.toml").read_text(encoding="utf-8"))
    return tuple(
        ToolchainPackage(name, entry["what"], entry["module"], entry.get("family", ""))
        for entries in data.values()
        for name, entry in entries.items()
    )


PACKAGES = _load()
_BY_NAME = {p.name: p for p in PACKAGES}
_FAMILIES = tuple((re.compile(p.family), p) for p in PACKAGES if p.family)


def toolchain_package(name: str) -> ToolchainPackage | None:
    """The entry a canonical distribution name is (or is a build of), or None."""
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    return next((p for pattern, p in _FAMILIES if pattern.fullmatch(name)), None)
