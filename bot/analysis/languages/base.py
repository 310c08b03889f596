"""What a kernel language is to the analysis: the decorators that mark its kernels, the modules
that mark its files, what Part A counts in it, and whether the compiler report can read it.

Types only; each language is one instance in its own module of this folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from bot.analysis.model import Language

Role = Literal["kernel", "tuner", "factory", "host"]

# An allocation written in Python, in any DSL's host code (torch allocates for all of them).
MEMORY_PY = re.compile(r"\btorch\.(?:empty\w*|zeros\w*)\s*\(|\.new_(?:empty|zeros)\s*\(")
NEVER = re.compile(r"(?!x)x")  # a pattern that matches nothing


@dataclass(frozen=True)
class KernelLanguage:
    """One Python kernel language.

    Decorator names are matched as resolved through the file's imports
    (``from triton.experimental import gluon`` makes ``@gluon.jit`` read
    ``triton.experimental.gluon.jit``) and, for the lines a diff shows, as usually written."""

    name: Language  # the ``language`` of its kernels and changes
    display: str  # as the review names it
    modules: tuple[str, ...]  # importing one of these (or a submodule) marks a file
    roles: dict[str, Role]  # decorator -> what it makes of the function under it
    vendors: tuple[str, ...]  # the vendors one source file covers
    barriers: re.Pattern[str] = NEVER  # explicit barriers in a kernel body
    shared: re.Pattern[str] = NEVER  # explicit shared-memory declarations
    memory: re.Pattern[str] = MEMORY_PY
    # a matrix product on the matrix units in a kernel body (``tl.dot``): what a library GEMM
    # (cuBLAS) did on the other side of a port
    product: re.Pattern[str] = NEVER
    # None: Triton's compiler reads it (the compiler report covers it); else why not
    compiler_gap: str | None = None
    # A kernel that is its own host function (Helion): the loops that run on the device; the
    # rest of its body counts as host wrapper lines.
    device_loop: re.Pattern[str] | None = None
    # Words of a name that say only which language it is written in (``_gluon``, ``_cute``).
    noise: frozenset[str] = field(default_factory=frozenset)

    def role(self, dotted: str) -> Role | None:
        return self.roles.get(dotted)

    def imported_by(self, module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in self.modules)
