"""Find GPU kernels in source text: Triton (Python), CUDA and HIP (C++).

Two ways in, one result (:class:`FileScan`):

- :func:`scan_source` reads a whole file: Python through ``ast`` (decorators resolved through the
  file's imports, ``triton.Config`` lists parsed into data), C++ with comments and strings masked
  and braces matched.
- :func:`scan_lines` reads only the lines a diff shows (hunk context, added or removed lines) at
  their real line numbers; it uses patterns, and says so (``complete=False``).

Pure: text in, frozen records out. The readers live in ``detect_triton`` (ast),
``detect_triton_lines`` (patterns) and ``detect_cpp``; this module holds the records and picks
the reader.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["triton", "cuda", "hip"]
SourceKind = Literal["python", "cpp"]

PYTHON_SUFFIXES = (".py", ".pyi")
CPP_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".inl")
MAX_SOURCE_CHARS = 512 * 1024  # a longer file is read from its diff lines only
MAX_PER_FILE = 1_000  # kernels, and launches, read from one file

# Names whose values are tuning knobs rather than algorithm: BLOCK_SIZE_M, XBLOCK, num_warps,
# threads_per_block, kBlockSize. Lower-case ``block_start`` / ``block_id`` are algorithm.
TUNING_NAME = re.compile(
    r"^_*(?:[A-Z0-9]+_)*[XYZR]?(?:BLOCK|TILE|WARPS|STAGES|THREADS|GROUP_SIZE|SPLIT_K)(?:SIZE)?"
    r"(?:_[A-Z0-9]+)*$"
    r"|^(?:num_warps|num_stages|num_ctas|maxnreg|block_size|block_dim|threads|block|tile_size|"
    r"threads_per_block|block_threads)$"
    r"|^k(?=[A-Z])\w*?(?:Block|Tile|Threads|Warps)\w*$"
)
_TUNING_ASSIGN = re.compile(
    r"^\s*(?:#\s*define\s+|(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+)?[\w:]+\s+|"
    r"(?:unsigned|int|size_t|dim3|auto)\s+)?([A-Za-z_]\w*)\s*(?::\s*[\w.]*constexpr\s*)?(?:=|\s\d|[({]\s*\d)"
)
_TUNING_MARK = re.compile(
    r"\bConfig\s*\(|^\s*@?triton\.autotune\(|^\s*(?:configs|key)\s*=|"
    r"\b(?:num_warps|num_stages|num_ctas|maxnreg)\s*="
)


def is_tuning_line(line: str) -> bool:
    """Whether a changed line only touches tuning: a Config entry, a warps/stages value, a
    ``BLOCK_*`` constant or constexpr default, or nothing but brackets and commas."""
    stripped = line.strip()
    if not stripped or not stripped.strip("[](){},"):
        return True
    if _TUNING_MARK.search(line):
        return True
    m = _TUNING_ASSIGN.match(line)
    return bool(m and is_tuning_name(m.group(1)))


_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*[(<]")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelRef(_Frozen):
    language: Language
    name: str
    path: str
    line_start: int
    line_end: int


class TritonConfig(_Frozen):
    """One ``triton.Config(kwargs, num_warps=..., num_stages=...)`` as data.

    Values that are not literals are kept as their source text."""

    kwargs: dict[str, int | float | bool | str] = Field(default_factory=dict)
    num_warps: int | str | None = None
    num_stages: int | str | None = None
    num_ctas: int | str | None = None
    maxnreg: int | str | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.kwargs.items()]
        for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        parts += [f"{k}={v}" for k, v in self.extra.items()]
        return ", ".join(parts)


class KernelDef(_Frozen):
    """A kernel found in one version of one file."""

    language: Language
    name: str
    path: str
    line_start: int  # first decorator / template line
    line_end: int
    body_start: int  # first line of the body (after signature, docstring)
    body_end: int
    digest: str | None = None  # body and signature, normalised; None when seen partially
    decorators: tuple[str, ...] = ()
    configs: tuple[TritonConfig, ...] | None = None  # None: not autotuned, or not readable
    configs_source: str | None = None  # the configs expression as written (after resolution)
    autotune_key: tuple[str, ...] = ()
    heuristics: dict[str, str] = Field(default_factory=dict)
    constexprs: dict[str, str | None] = Field(default_factory=dict)  # name -> default
    from_context: bool = False  # found in diff lines only: the range may be cut short

    def ref(self) -> KernelRef:
        return KernelRef(
            language=self.language,
            name=self.name,
            path=self.path,
            line_start=self.line_start,
            line_end=self.line_end,
        )


class LaunchSite(_Frozen):
    """Where a kernel is launched: ``k[grid](...)``, ``k<<<g, b>>>(...)``, ``hipLaunchKernelGGL``."""

    kernel: str
    language: Language
    path: str
    line: int
    grid: str  # the grid / launch configuration as written, whitespace collapsed
    args: str  # the arguments that are not tuning knobs, whitespace collapsed
    tuning: dict[str, str] = Field(default_factory=dict)  # num_warps=, BLOCK_*= at the launch
    wrapper: str | None = None  # the enclosing host function
    wrapper_start: int | None = None
    wrapper_end: int | None = None
    wrapper_digest: str | None = None  # the host function without its tuning lines


class FileScan(_Frozen):
    path: str
    kind: SourceKind
    language: Language | None  # triton for Python with kernels; cuda or hip for C++
    complete: bool  # False: read from diff lines only
    kernels: tuple[KernelDef, ...] = ()
    helpers: tuple[KernelDef, ...] = ()  # C++ __device__ functions (Triton helpers are kernels)
    launches: tuple[LaunchSite, ...] = ()
    tuning_constants: dict[str, str] = Field(default_factory=dict)  # BLOCK_SIZE = 1024 ...
    bindings: tuple[tuple[str, str], ...] = ()  # (name exported to Python, C++ function)
    notes: tuple[str, ...] = ()

    def kernel(self, name: str) -> KernelDef | None:
        for k in self.kernels:
            if k.name == name:
                return k
        return None


def called_helpers(scan: FileScan, kernel: KernelDef, lines: Sequence[str]) -> list[KernelDef]:
    """The functions of the same file ``kernel`` calls, directly or through each other:
    ``__device__`` helpers in C++, other ``@triton.jit`` functions in Python."""
    pool = [*scan.helpers, *(k for k in scan.kernels if k.language == "triton")]
    out: list[KernelDef] = []
    seen = {(kernel.name, kernel.line_start)}
    todo = [kernel]
    while todo:
        k = todo.pop()
        called = set(_CALLED.findall("\n".join(lines[k.body_start - 1 : k.body_end])))
        for h in pool:
            if h.name in called and (h.name, h.line_start) not in seen:
                seen.add((h.name, h.line_start))
                out.append(h)
                todo.append(h)
    return sorted(out, key=lambda h: h.line_start)


def source_kind(path: str) -> SourceKind | None:
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return "python"
    if lower.endswith(CPP_SUFFIXES):
        return "cpp"
    return None


def scan_source(path: str, text: str) -> FileScan:
    """Scan a whole file. Unknown file types give an empty scan."""
    kind = source_kind(path)
    if kind == "python":
        from bot.detect_triton import scan_python

        return scan_python(path, text)
    if kind == "cpp":
        from bot.detect_cpp import scan_cpp

        return scan_cpp(path, _split(text), complete=True)
    return FileScan(path=path, kind="python", language=None, complete=True)


def scan_lines(
    path: str, lines: Sequence[tuple[int, str]], sections: Sequence[tuple[int, str]] = ()
) -> FileScan:
    """Scan only the given ``(line_number, text)`` lines of a file (what a diff shows).

    ``sections`` are ``(first_line, header)`` pairs from the hunk headers (``@@ ... @@ def f(``):
    they name the function a hunk sits in when its ``def`` line is outside the hunk.
    The readers see the lines packed, each run of unseen lines as one ``None``; line numbers in
    the result are the file's."""
    kind = source_kind(path)
    if kind is None:
        return FileScan(path=path, kind="python", language=None, complete=False)
    sparse: list[str | None] = []
    real: list[int | None] = []
    previous = 0
    for number, text in sorted(lines):
        if number < 1 or number == previous:
            continue
        if number > previous + 1:
            sparse.append(None)
            real.append(None)
        sparse.append(text)
        real.append(number)
        previous = number
    packed = {number: index + 1 for index, number in enumerate(real) if number is not None}
    packed_sections = [(packed[first], head) for first, head in sections if first in packed]

    def at(n: int) -> int:
        index = min(max(n, 1), len(real)) - 1
        if real[index] is not None:
            return real[index]
        before = next((r for r in reversed(real[:index]) if r is not None), 0)
        return before + 1  # an unseen run: the line after the last one seen

    if kind == "python":
        from bot.detect_triton_lines import scan_python_lines

        return scan_python_lines(path, sparse, packed_sections, at)
    from bot.detect_cpp import scan_cpp

    return scan_cpp(path, sparse, complete=False, line_at=at, sections=packed_sections)


def _split(text: str) -> list[str | None]:
    return [line.rstrip("\r") for line in text.split("\n")]


def digest(parts: Sequence[str]) -> str:
    """A short fingerprint of normalised text: whitespace runs collapsed, blank parts dropped."""
    joined = "\n".join(" ".join(p.split()) for p in parts if p and p.strip())
    return hashlib.sha1(joined.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def is_tuning_name(name: str) -> bool:
    return bool(TUNING_NAME.match(name))


def collapse(text: str) -> str:
    return " ".join(text.split())
