"""Git-style unified diffs of in-memory files, for tests that analyse a change without a
repository."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.analysis.model import Analysis


def file_diff(path: str, before: str | None, after: str) -> str:
    """The ``diff --git`` text of one file from ``before`` (None: a new file) to ``after``."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{path}" if before is not None else "/dev/null",
        f"b/{path}",
    )
    head = f"diff --git a/{path} b/{path}\n"
    if before is None:
        head += "new file mode 100644\n"
    return head + "".join(lines)


def analysis_between(old: dict[str, str], new: dict[str, str]) -> Analysis:
    """What ``analyze_diff`` reports from ``old`` to ``new`` (path -> text; a path only in
    ``new`` is a new file), the whole files at hand on both sides."""
    from bot.analysis.classify import analyze_diff

    diff = "".join(file_diff(p, old.get(p), new[p]) for p in sorted(new) if old.get(p) != new[p])
    return analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))


def changes_between(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """``"kind name"`` of each change ``analyze_diff`` reports from ``old`` to ``new``."""
    return [f"{c.kind} {c.name}" for c in analysis_between(old, new).changes]


class MemoryRevision:
    """One revision's files in memory (``bot.revision.Revision``)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    @property
    def sha(self) -> str | None:
        return None

    @property
    def label(self) -> str:
        return "in memory"

    def where(self, path: str) -> str:
        return path

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None:
        return self.files.get(path)

    def list_dir(self, path: str) -> list[str]:
        return sorted(p for p in self.files if p.startswith(path))


def range_between(old: dict[str, str], new: dict[str, str]) -> Analysis:
    """What ``analyze_range`` reports from ``old`` to ``new``, read as ``analyze_repo`` reads a
    repository (a file of the diff with no kernel marker is its diff lines; the call graph reads
    every file whole)."""
    from bot.analysis.repo import analyze_range

    diff = "".join(file_diff(p, old.get(p), new[p]) for p in sorted(new) if old.get(p) != new[p])
    return analyze_range(
        MemoryRevision(old), MemoryRevision(new), diff, None, old_files=sorted(old), thrifty=False
    )
