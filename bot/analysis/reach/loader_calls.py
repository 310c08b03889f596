"""Triton kernels launched from C++ by file and name, through a loader.

Some projects call their Triton kernels from C++ host code: a loader is handed the Python file
and the kernel's name (``TritonJITFunction::getInstance(src / "ops" / "embedding.py",
"embedding_kernel")``). A changed statement of that kind changes how the named kernel is launched,
though its Python file is untouched: each such kernel gets a ``launch`` change (or the note on
the change it already has). The statement's string literals give the path (the parts before the
``.py`` one, joined by ``/``, matched as a suffix of the repository's paths) and the names.
"""

from __future__ import annotations

import re

from bot.analysis.compare import sources_for
from bot.analysis.model import Context, KernelChange
from bot.analysis.scan import scan_source
from bot.analysis.text import source_kind

_STRING = re.compile(r'"([^"\\\n]*)"')
_PATH_PART = re.compile(r"^[\w.-]+$")
_MAX_FILES = 24


def _statements(lines: list[tuple[int, str]], changed: set[int]) -> list[str]:
    """The statements (up to ``;``) of a hunk that hold a changed line."""
    out: list[str] = []
    current: list[str] = []
    touched = False
    for number, line in lines:
        current.append(line)
        touched = touched or number in changed
        if line.rstrip().endswith((";", "{", "}")):
            if touched:
                out.append("\n".join(current))
            current, touched = [], False
    if current and touched:
        out.append("\n".join(current))
    return out


def _targets(statement: str) -> tuple[str, list[str]] | None:
    """``(path suffix, names)`` a loader statement names, or None."""
    literals = _STRING.findall(statement)
    for index, value in enumerate(literals):
        if not value.endswith(".py"):
            continue
        parts = [value]
        for before in reversed(literals[:index]):
            if not _PATH_PART.match(before) or before.endswith(".py"):
                break
            parts.insert(0, before)
        names = [s for s in literals[index + 1 :] if s.isidentifier()]
        if names:
            return "/".join(p.strip("/") for p in parts), names
    return None


def loader_launches(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """``changes`` with the Triton kernels a changed C++ loader statement launches."""
    if ctx.new_source is None:
        return changes
    wanted: dict[str, set[str]] = {}  # path suffix -> kernel names
    where: dict[str, str] = {}
    for f in ctx.files:
        if source_kind(f.patch.path) != "cpp" or f.patch.status == "deleted":
            continue
        for h in f.patch.hunks:
            changed = {n for n, _ in h.added}
            for statement in _statements(h.new_lines(), changed):
                found = _targets(statement)
                if found is not None:
                    wanted.setdefault(found[0], set()).update(found[1])
                    where.setdefault(found[0], f.patch.path)
    if not wanted:
        return changes
    paths = sorted(set(ctx.old_files or ()) | set(ctx.texts_new))
    out = list(changes)
    read = 0
    for suffix, names in sorted(wanted.items()):
        hits = [p for p in paths if p == suffix or p.endswith("/" + suffix)]
        if len(hits) != 1 or read >= _MAX_FILES:
            continue
        path = hits[0]
        read += 1
        text = sources_for([path], ctx.texts_new, ctx.new_source).get(path)
        if not text:
            continue
        note = f"launched from C++ by name through a loader in {where[suffix]}, which changed"
        for k in scan_source(path, text).kernels:
            if k.name not in names:
                continue
            existing = next((c for c in out if c.name == k.name and c.path == path), None)
            if existing is not None:
                if existing.kind not in ("new", "deleted"):
                    out[out.index(existing)] = existing.model_copy(
                        update={"host_changes": [*existing.host_changes, note]}
                    )
                continue
            out.append(
                KernelChange(
                    kind="launch",
                    name=k.name,
                    language=k.language,
                    path=path,
                    old=k.ref(),
                    new=k.ref(),
                    host_changes=[note],
                    notes=[note],
                )
            )
    return out
