"""Find GPU kernels in source text: Triton (Python), CUDA and HIP (C++).

Two ways in, one result (:class:`FileScan`):

- :func:`scan_source` reads a whole file: Python through ``ast`` (decorators resolved through the
  file's imports, ``triton.Config`` lists parsed into data), C++ with comments and strings masked
  and braces matched.
- :func:`scan_lines` reads only the lines a diff shows (hunk context, added or removed lines) at
  their real line numbers; it uses patterns, and says so (``complete=False``).

Pure: text in, frozen records out. The readers live in this package's ``triton`` (ast),
``triton_lines`` (patterns) and ``cpp`` (with ``triton_config`` for the configs' data); this
module picks the reader (the records are ``bot.analysis.model``'s).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from bot.analysis.model import (
    FileScan,
)
from bot.analysis.text import (
    source_kind,
)


def scan_source(
    path: str, text: str, markers: tuple[str, ...] = (), bound: tuple[tuple[str, str], ...] = ()
) -> FileScan:
    """Scan a whole file. Unknown file types give an empty scan. ``markers``: the policy's
    ``kernel_decorators``. A scan is a function of its arguments and frozen: one analysis
    reads many files several times (each side, the call graph, pairing, Part A's counts), and
    they are scanned once."""
    return _scanned(path, text, tuple(markers), tuple(bound))


def scan_read(
    path: str, text: str, read: Callable[[str], str | None], markers: tuple[str, ...] = ()
) -> FileScan:
    """:func:`scan_source` of a file of a repository that ``read`` reads: the names it imports
    from the repository's modules that stand for Triton's are followed there (``bound_names``)."""
    from bot.analysis.scan.bound_names import triton_bindings
    from bot.analysis.scan.triton import may_hold_kernels

    python = source_kind(path) == "python"
    # a file the scan will not parse needs no names followed
    bound = triton_bindings(path, text, read) if python and may_hold_kernels(text, markers) else ()
    return scan_source(path, text, markers, bound)


@functools.lru_cache(maxsize=256)
def _scanned(
    path: str, text: str, markers: tuple[str, ...], bound: tuple[tuple[str, str], ...]
) -> FileScan:
    kind = source_kind(path)
    if kind == "python":
        from bot.analysis.scan.triton import scan_python

        return scan_python(path, text, markers, bound)
    if kind == "cpp":
        from bot.analysis.scan.cpp import scan_cpp

        return scan_cpp(path, _split(text), complete=True)
    return FileScan(path=path, kind="python", language=None, complete=True)


def scan_lines(
    path: str,
    lines: Sequence[tuple[int, str]],
    sections: Sequence[tuple[int, str]] = (),
    markers: tuple[str, ...] = (),
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
        if (seen := real[index]) is not None:
            return seen
        before = next((r for r in reversed(real[:index]) if r is not None), 0)
        return before + 1  # an unseen run: the line after the last one seen

    if kind == "python":
        from bot.analysis.scan.triton_lines import scan_python_lines

        return scan_python_lines(path, sparse, packed_sections, at, markers)
    from bot.analysis.scan.cpp import scan_cpp

    return scan_cpp(path, sparse, complete=False, line_at=at, sections=packed_sections)


def _split(text: str) -> list[str | None]:
    return [line.rstrip("\r") for line in text.split("\n")]
