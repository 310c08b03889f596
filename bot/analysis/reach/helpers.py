"""Changes to jit helpers, reported as their callers' changes.

A ``@triton.jit`` function that other jit functions of its file call and that nothing launches is
a helper (``KernelDef.launched`` is False): it is compiled into each kernel that reaches it. Its
change is a ``body`` change of every launched kernel of the file that calls it, directly or
through other helpers, with the helper named in ``via_helpers``; the helper itself is not listed.
A helper that reaches no launched kernel of its file stays listed (its callers are elsewhere).
"""

from __future__ import annotations

import re

from bot.analysis.model import PYTHON_LANGUAGES, Context, FileScan, KernelChange, KernelDef

_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")  # called, or handed on (``combine_fn=helper``)


_Index = dict[tuple[str, str], tuple[FileScan, str | None]]


def _index(ctx: Context) -> _Index:
    """``(side, path) -> (scan, text)`` of every file read."""
    out: _Index = {}
    for f in ctx.files:
        if f.new is not None:
            out[("new", f.new.path)] = (f.new, f.new_text)
        if f.old is not None:
            out[("old", f.old.path)] = (f.old, f.old_text)
    return out


def _callers(scan: FileScan, text: str, helper: str) -> list[KernelDef]:
    """The launched kernels of ``scan`` that reach ``helper`` through calls."""
    lines = text.split("\n")
    calls = {
        k.name: set(_NAME.findall("\n".join(lines[k.body_start - 1 : k.body_end])))
        for k in scan.kernels
    }
    reach = {helper}
    grew = True
    while grew:
        grew = False
        for name, called in calls.items():
            if name not in reach and called & reach:
                reach.add(name)
                grew = True
    return [k for k in scan.kernels if k.launched and k.name in reach and k.name != helper]


def _helper(index: _Index, c: KernelChange) -> tuple[FileScan, str, KernelDef] | None:
    """The scan, text and definition of ``c``'s kernel when it is a jit helper."""
    for side, ref in (("new", c.new), ("old", c.old)):
        if ref is None:
            continue
        scan, text = index.get((side, ref.path), (None, None))
        k = next((k for k in scan.kernels if k.name == ref.name), None) if scan else None
        if k is not None and scan is not None and text is not None and not k.launched:
            return scan, text, k
    return None


def fold_helpers(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """Replace each helper's change by ``body`` changes of the kernels that reach it."""
    out = [c for c in changes]
    index = _index(ctx)
    for c in changes:
        if c.language not in PYTHON_LANGUAGES:
            continue
        found = _helper(index, c)
        if found is None:
            continue
        scan, text, helper = found
        callers = _callers(scan, text, helper.name)
        if not callers:
            continue
        out.remove(c)
        if c.kind in ("new", "deleted", "moved"):
            # A helper added or removed changes its callers' text, which their own comparison
            # saw; one moved with its callers changes nothing.
            continue
        for k in callers:
            existing = next(
                (x for x in out if x.name == k.name and x.path == k.path and x.kind != "deleted"),
                None,
            )
            note = f"calls the changed jit helper {helper.name}"
            if existing is None:
                out.append(
                    KernelChange(
                        kind="body",
                        name=k.name,
                        language=k.language,
                        path=k.path,
                        old=k.ref(),
                        new=k.ref(),
                        configs_old=list(k.configs) if k.configs is not None else None,
                        configs_new=list(k.configs) if k.configs is not None else None,
                        configs_old_computed=k.configs_computed,
                        configs_new_computed=k.configs_computed,
                        via_helpers=[helper.name],
                        notes=[note],
                    )
                )
                continue
            kind = existing.kind
            if kind in ("tuning", "launch", "moved"):
                kind = "body"
            out[out.index(existing)] = existing.model_copy(
                update={
                    "kind": kind,
                    "via_helpers": [*existing.via_helpers, helper.name],
                    "notes": [*existing.notes, note],
                }
            )
    return out
