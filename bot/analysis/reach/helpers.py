"""Changes to jit helpers, reported as their callers' changes.

A ``@triton.jit`` function that other jit functions of its file call and that nothing launches is
a helper (``KernelDef.launched`` is False): it is compiled into each kernel that reaches it. Its
change is a ``body`` change of every launched kernel of the file that calls it, directly or
through other helpers, with the helper named in ``via_helpers``; the helper itself is not listed.
A helper that reaches no launched kernel of its file is a helper of the kernels of the other files
read that import it (``from pkg.kernels.quant import scale_and_clamp``) and call it; one that
reaches none of those either stays listed, unless it cannot be a kernel launched from elsewhere
(``_compiled_into_nothing``): then it changes no kernel and is not listed.
"""

from __future__ import annotations

import re

from bot.analysis.model import (
    PYTHON_LANGUAGES,
    ChangeKind,
    Context,
    FileScan,
    KernelChange,
    KernelDef,
)
from bot.analysis.reach.follow import imports_in, module_of
from bot.analysis.text import parse_python_or_none

_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")  # called, or handed on (``combine_fn=helper``)


_Index = dict[tuple[str, str], tuple[FileScan, str | None]]


def caused_change(
    kind: ChangeKind, old: KernelDef, new: KernelDef, via: list[str], note: str
) -> KernelChange:
    """The change of a kernel whose own text is the same, caused by what it reads (``via``: a
    jit helper, an autotune pruner), with its configs as they are on each side."""
    return KernelChange(
        kind=kind,
        name=new.name,
        language=new.language,
        path=new.path,
        old=old.ref(),
        new=new.ref(),
        configs_old=list(old.configs) if old.configs is not None else None,
        configs_new=list(new.configs) if new.configs is not None else None,
        configs_old_computed=old.configs_computed,
        configs_new_computed=new.configs_computed,
        via_helpers=via,
        notes=[note],
    )


def _index(ctx: Context) -> _Index:
    """``(side, path) -> (scan, text)`` of every file read."""
    out: _Index = {}
    for f in ctx.files:
        if f.new is not None:
            out[("new", f.new.path)] = (f.new, f.new_text)
        if f.old is not None:
            out[("old", f.old.path)] = (f.old, f.old_text)
    return out


_Callers = dict[str, set[str]]  # name: the kernels of the file whose bodies name it


def _called_by(scan: FileScan, text: str) -> _Callers:
    """Which of ``scan``'s kernels name each name in their bodies (calls, or handed on), made
    once per file: a fixed point over every kernel per helper was cubic in a chain of helpers
    (1,500 jit functions, each calling the next, took 60 s)."""
    lines = text.split("\n")
    calls = {
        k.name: set(_NAME.findall("\n".join(lines[k.body_start - 1 : k.body_end])))
        for k in scan.kernels
    }
    out: _Callers = {}
    for name, called in calls.items():
        for callee in called:
            out.setdefault(callee, set()).add(name)
    return out


def _callers(scan: FileScan, called_by: _Callers, helper: str) -> list[KernelDef]:
    """The launched kernels of ``scan`` that reach ``helper`` through calls."""
    reach = {helper}
    todo = [helper]
    while todo:
        for name in called_by.get(todo.pop(), ()):
            if name not in reach:
                reach.add(name)
                todo.append(name)
    return [k for k in scan.kernels if k.launched and k.name in reach and k.name != helper]


def _helper(index: _Index, c: KernelChange) -> tuple[str, FileScan, str, KernelDef] | None:
    """The side, scan, text and definition of ``c``'s kernel when it is a jit helper."""
    for side, ref in (("new", c.new), ("old", c.old)):
        if ref is None:
            continue
        scan, text = index.get((side, ref.path), (None, None))
        k = next((k for k in scan.kernels if k.name == ref.name), None) if scan else None
        if k is None or scan is None or text is None:
            continue
        if not k.launched or not any(x.kernel == k.name for x in scan.launches):
            # a helper, or a jit function its file neither calls nor launches: maybe a
            # helper of another file's kernels
            return side, scan, text, k
    return None


_GRID_INDEX = re.compile(r"\b(?:program_id|num_programs)\b")


def _compiled_into_nothing(scan: FileScan, text: str, helper: KernelDef) -> bool:
    """A jit function nothing calls, imports or launches, in a file that launches its kernels
    itself, that never reads which program of a grid it is (``tl.program_id``,
    ``tl.num_programs``), directly or through the jit functions it calls: a helper no kernel
    uses (shawntan/stickbreaking-attention's ``_locked_add``), not a kernel launched from
    elsewhere, which would tell its programs apart."""
    if not scan.launches or helper.language not in ("triton", "gluon"):
        return False  # a file of kernels launched from other modules; a DSL's own grid index
    lines = text.split("\n")
    defs = {k.name: k for k in scan.kernels}
    seen = {helper.name}
    todo = [helper]
    while todo:
        k = todo.pop()
        body = "\n".join(lines[k.body_start - 1 : k.body_end])
        if _GRID_INDEX.search(body):
            return False
        for name in set(_NAME.findall(body)) & defs.keys() - seen:
            seen.add(name)
            todo.append(defs[name])
    return True


def _launched_from(ctx: Context, k: KernelDef) -> list[str]:
    """Where the host code that launches ``k`` is, as ``host_changes`` names it: the files of
    its launches at head (those beside it where it is launched there)."""
    paths = {x.path for x in ctx.new_launches() if x.kernel == k.name}
    paths = {k.path} & paths or paths or {k.path}
    return [f"{p}: the host code that launches it changed" for p in sorted(paths)]


def _importers(index: _Index, side: str, helper: KernelDef) -> list[tuple[FileScan, str, str]]:
    """``(scan, text, local name)`` of each other file of ``side`` that imports ``helper`` from
    its module (under any package root: the module's dotted name may carry a prefix)."""
    wanted = f"{module_of(helper.path)}.{helper.name}"
    out = []
    for (s, path), (scan, text) in index.items():
        if s != side or path == helper.path or text is None or not scan.kernels:
            continue
        if helper.name not in text:
            continue
        tree = parse_python_or_none(text)
        if tree is None:
            continue
        for local, names in imports_in(tree.body, path).items():
            if any(
                wanted.endswith("." + q) or q.endswith("." + wanted) or q == wanted for q in names
            ):
                out.append((scan, text, local))
    return out


def fold_helpers(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """Replace each helper's change by ``body`` changes of the kernels that reach it.

    The changes are kept in slots, with each kernel's (not deleted) slots by name and path, so
    that a file of many kernels sharing many helpers is not quadratic in list searches."""
    slots: list[KernelChange | None] = list(changes)
    live: dict[tuple[str, str], list[int]] = {}  # (name, path): slots not deleted, in order
    for i, x in enumerate(changes):
        if x.kind != "deleted":
            live.setdefault((x.name, x.path), []).append(i)
    index = _index(ctx)
    graphs: dict[int, _Callers] = {}  # by the scan's id
    launched = {x.kernel for x in (*ctx.old_launches(), *ctx.new_launches())}
    for i, c in enumerate(changes):
        if c.language not in PYTHON_LANGUAGES:
            continue
        found = _helper(index, c)
        if found is None:
            continue
        side, scan, text, helper = found
        if id(scan) not in graphs:
            graphs[id(scan)] = _called_by(scan, text)
        callers = _callers(scan, graphs[id(scan)], helper.name) if not helper.launched else []
        if not callers and helper.name not in launched:
            for other, other_text, local in _importers(index, side, helper):
                if id(other) not in graphs:
                    graphs[id(other)] = _called_by(other, other_text)
                callers += _callers(other, graphs[id(other)], local)
        if not callers:
            if helper.name not in launched and _compiled_into_nothing(scan, text, helper):
                slots[i] = None
                if c.kind != "deleted":
                    live[(c.name, c.path)].remove(i)
            continue
        slots[i] = None
        if c.kind != "deleted":
            live[(c.name, c.path)].remove(i)
        elsewhere = any(k.path != helper.path for k in callers)
        if c.kind in ("new", "deleted", "moved"):
            # A helper added or removed changes its callers' text, which their own comparison
            # saw; one moved with its callers changes nothing. A caller in another file names
            # the helper's file, so that file is not left unmentioned.
            for k in callers if elsewhere else ():
                for slot in live.get((k.name, k.path), []):
                    caller = slots[slot]
                    if caller is not None:
                        note = f"its jit helper {helper.name} is in {helper.path} ({c.kind})"
                        slots[slot] = caller.model_copy(update={"notes": [*caller.notes, note]})
            continue
        for k in callers:
            at = live.get((k.name, k.path))
            note = f"calls the changed jit helper {helper.name}" + (
                f" of {helper.path}" if k.path != helper.path else ""
            )
            if not at:
                live.setdefault((k.name, k.path), []).append(len(slots))
                slots.append(caused_change("body", k, k, [helper.name], note))
                continue
            existing = slots[at[0]]
            assert existing is not None
            kind = existing.kind
            if kind in ("tuning", "launch", "moved"):
                kind = "body"
            host = existing.host_changes
            if existing.kind == "launch":  # its launch changed too: a body change with a host one
                host = [*host, *_launched_from(ctx, k)]
            slots[at[0]] = existing.model_copy(
                update={
                    "kind": kind,
                    "via_helpers": [*existing.via_helpers, helper.name],
                    "notes": [*existing.notes, note],
                    "host_changes": list(dict.fromkeys(host)),
                }
            )
    return [x for x in slots if x is not None]
