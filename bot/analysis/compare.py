"""Kernel against kernel, file by file: what changed in each kernel a diff touches (kind, notes)."""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from bot.analysis.diff import FilePatch
from bot.analysis.model import (
    MAX_SOURCE_CHARS,
    ChangeKind,
    Context,
    FileSides,
    KernelChange,
    KernelDef,
    SourceFn,
)
from bot.analysis.same_code import unread_assignments
from bot.analysis.same_lines import guessed_namespaces, removed_parameters, spelled_alike
from bot.analysis.scan.shown_imports import shown_imports, single_bindings
from bot.analysis.text import called_helpers, collapse, is_tuning_line, source_kind
from bot.analysis.tuning.config_builders import built_configs, lists_moved_into_builders


class _Numbered:
    """Numbered lines (a patch's removed or added ones), to take those within a range of line
    numbers by bisection: a file with thousands of kernels and a changed line in each made
    testing every line against every kernel quadratic."""

    def __init__(self, lines: Sequence[tuple[int, str]]) -> None:
        self.lines = lines
        self.order = sorted(range(len(lines)), key=lambda i: lines[i][0])
        self.numbers = [lines[i][0] for i in self.order]

    def within(self, first: int, last: int) -> list[str]:
        """The lines numbered ``first`` to ``last``, in the patch's order."""
        return [t for _, t in self.numbered(first, last)]

    def numbered(self, first: int, last: int) -> list[tuple[int, str]]:
        """``within`` with each line's number."""
        taken = self.order[bisect_left(self.numbers, first) : bisect_right(self.numbers, last)]
        return [self.lines[i] for i in sorted(taken)]


class PatchLines:
    """A patch's removed and added lines, indexed by line number once per file."""

    def __init__(self, patch: FilePatch) -> None:
        self.patch = patch
        self.removed = _Numbered(patch.removed_lines())
        self.added = _Numbered(patch.added_lines())
        self.old_seen = _Numbered([x for h in patch.hunks for x in h.old_lines()])

    @functools.cached_property
    def old_names(self) -> dict[str, str]:
        """What the names that the imports among this file's shown lines bind stand for, at
        base."""
        own = shown_imports([x for h in self.patch.hunks for x in h.old_lines()], self.patch.path)
        return single_bindings([own])

    @functools.cached_property
    def new_names(self) -> dict[str, str]:
        """``old_names`` at head."""
        own = shown_imports([x for h in self.patch.hunks for x in h.new_lines()], self.patch.path)
        return single_bindings([own])

    def header(self, old_start: int) -> str | None:
        """The section header (``def f(``) of the hunk whose old side starts at ``old_start``."""
        return next((h.section for h in self.patch.hunks if h.old_start == old_start), None)


def _changed_lines(lines: PatchLines, old: KernelDef | None, new: KernelDef | None) -> list[str]:
    """The removed and added lines inside the kernel, less those that only changed whitespace
    (a line removed and added again with other spacing)."""
    gone, came = _changed_sides(lines, old, new)
    return gone + came


def _changed_sides(
    lines: PatchLines, old: KernelDef | None, new: KernelDef | None
) -> tuple[list[str], list[str]]:
    """``_changed_lines`` as (removed, added)."""
    gone = lines.removed.within(old.line_start, old.line_end) if old is not None else []
    came = lines.added.within(new.line_start, new.line_end) if new is not None else []
    spaced = Counter("".join(t.split()) for t in gone) & Counter("".join(t.split()) for t in came)
    out: tuple[list[str], list[str]] = ([], [])
    for side, into in ((gone, out[0]), (came, out[1])):
        left = Counter(spaced)
        for t in side:
            key = "".join(t.split())
            if left[key] > 0:
                left[key] -= 1
                continue
            into.append(t)
    return out


_TOKEN = re.compile(r"[A-Za-z_]\w*|\S")


def renamed_only(gone: Sequence[str], came: Sequence[str]) -> bool:
    """Whether the added lines are the removed ones with names renamed one for one throughout
    (``l`` to ``l_i`` on every line that has it), each new name fresh: what the diff's lines
    show of a local renamed, when the whole files are not at hand."""
    if not gone or len(gone) != len(came):
        return False
    mapping: dict[str, str] = {}
    for a, b in zip(gone, came, strict=True):
        ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
        if len(ta) != len(tb):
            return False
        for x, y in zip(ta, tb, strict=True):
            if x == y:
                continue
            if not (x[0].isalpha() or x[0] == "_") or not (y[0].isalpha() or y[0] == "_"):
                return False
            if mapping.setdefault(x, y) != y:
                return False
    if not mapping or len(set(mapping.values())) != len(mapping):
        return False
    before = {x for a in gone for x in _TOKEN.findall(a)}
    after = {y for b in came for y in _TOKEN.findall(b)}
    return not (set(mapping.values()) & before) and not (set(mapping) & after)


_CONFIGS_CHANGED = "autotune configs changed"


def _configs_changed(old: KernelDef, new: KernelDef) -> bool:
    if old.configs is not None and new.configs is not None:
        return old.configs != new.configs
    if collapse(old.configs_source or "") != collapse(new.configs_source or ""):
        return True
    return collapse(old.configs_built_by or "") != collapse(new.configs_built_by or "")


def _defaults_moved_to_configs(old: KernelDef, new: KernelDef) -> bool:
    """Whether the two kernels differ in nothing but constexpr defaults, each of which an
    autotuner's configs or a heuristic of either side sets (``triton.autotune`` added and
    ``BLOCK: tl.constexpr = 1024`` become ``BLOCK: tl.constexpr``, or the reverse)."""
    if old.digest_without_defaults is None or old.digest == new.digest:
        return False
    if old.digest_without_defaults != new.digest_without_defaults:
        return False
    moved = {
        name
        for name in set(old.constexprs) | set(new.constexprs)
        if old.constexprs.get(name) != new.constexprs.get(name)
    }
    set_by = (
        {name for k in (old, new) for c in (k.configs or ()) for name in c.kwargs}
        | set(old.heuristics)
        | set(new.heuristics)
    )
    return bool(moved) and moved <= set_by


class Comparison(NamedTuple):
    """What changed between two versions of one kernel: ``kind`` None for nothing. From the
    diff's lines alone, ``undecided`` says why they do not show whether the code changed (kind
    None then: the kernel is not classified from the diff, rather than changed)."""

    kind: ChangeKind | None
    notes: list[str]
    tuning_old: dict[str, str]
    tuning_new: dict[str, str]
    undecided: str = ""
    dropped: tuple[str, ...] = ()  # the removed parameters no shown line reads, if that is why


def compare_kernels(
    old: KernelDef, new: KernelDef, patch: FilePatch | None, lines: PatchLines | None = None
) -> Comparison:
    """The :class:`Comparison` of two versions of one kernel. ``lines``: ``patch``'s lines
    indexed, when the caller compares many kernels of one file."""
    notes: list[str] = []
    t_old: dict[str, str] = {}
    t_new: dict[str, str] = {}
    tuning = False
    if _configs_changed(old, new):
        tuning = True
        notes.append(_CONFIGS_CHANGED)
    tuners = [[d for d in k.decorators if "autotune" in d or "heuristics" in d] for k in (old, new)]
    if tuners[0] != tuners[1]:
        tuning = True
        t_old["autotuner"] = ", ".join(tuners[0]) or "-"
        t_new["autotuner"] = ", ".join(tuners[1]) or "-"
    if old.autotune_key != new.autotune_key:
        tuning = True
        t_old["autotune key"] = ", ".join(old.autotune_key)
        t_new["autotune key"] = ", ".join(new.autotune_key)
    for name in sorted(set(old.heuristics) | set(new.heuristics)):
        if old.heuristics.get(name) != new.heuristics.get(name):
            tuning = True
            t_old[f"heuristic {name}"] = old.heuristics.get(name) or "-"
            t_new[f"heuristic {name}"] = new.heuristics.get(name) or "-"
    for name in sorted(set(old.constexprs) | set(new.constexprs)):
        a, b = old.constexprs.get(name), new.constexprs.get(name)
        if a != b and name in old.constexprs and name in new.constexprs:
            t_old[name], t_new[name] = a or "-", b or "-"
    if patch is not None and lines is None:
        lines = PatchLines(patch)
    changed = _changed_lines(lines, old, new) if lines is not None else []
    undecided = ""
    dropped: tuple[str, ...] = ()
    if old.digest is not None and new.digest is not None:
        differs = old.digest != new.digest
    elif lines is None:
        differs = False
    else:  # the diff's lines only
        differs, undecided, dropped = _lines_differ(lines, old, new, bool(changed))
    body = False
    if differs:
        real = [t for t in changed if t.strip() and not t.strip().startswith(("#", "//"))]
        inside = [t for t in real if not is_tuning_line(t)]
        decorator_only = old.digest is not None and old.digest == new.digest
        decorator_only = decorator_only or _defaults_moved_to_configs(old, new)
        if inside and not decorator_only:
            body = True
        elif not real and old.digest is not None and not tuning and not t_old:
            body = True  # the code differs though the diff's lines do not show where
        elif real:
            tuning = True
    if t_old:
        tuning = True
    if body:
        if tuning:
            notes.append("tuning values changed too")
        return Comparison("body", notes, t_old, t_new)
    if tuning:
        return Comparison("tuning", notes, t_old, t_new)
    return Comparison(None, notes, t_old, t_new, undecided, dropped)


_UNREAD_LOCAL = (
    "the diff's lines remove an assignment of a local from a value without effects, and none "
    "of them reads it; whether a line the diff does not show reads it is not in the diff"
)


def _lines_differ(
    lines: PatchLines, old: KernelDef, new: KernelDef, changed: bool
) -> tuple[bool, str, tuple[str, ...]]:
    """Whether the diff's lines show the kernel's code changed; where they show neither, why
    (``""`` otherwise), and the parameters removed that none of them reads, if that is why.
    ``changed``: lines other than re-spaced ones changed in it."""
    gone = lines.removed.within(old.line_start, old.line_end)
    came = lines.added.within(new.line_start, new.line_end)
    gone_code = [t for t in gone if t.strip() and not t.strip().startswith(("#", "//"))]
    came_code = [t for t in came if t.strip() and not t.strip().startswith(("#", "//"))]
    if not changed or renamed_only(gone_code, came_code):
        return False, "", ()
    python = source_kind(new.path) == "python"
    if python:
        if spelled_alike(gone_code, came_code, lines.old_names, lines.new_names):
            return False, "", ()
        guessed = guessed_namespaces(gone_code, came_code, lines.old_names, lines.new_names)
        old_names = {**lines.old_names, **guessed[0]}
        new_names = {**lines.new_names, **guessed[1]}
        if any(guessed) and spelled_alike(gone_code, came_code, old_names, new_names):
            read = ", ".join(f"{k} as {v}" for k, v in sorted({**guessed[0], **guessed[1]}.items()))
            why = (
                f"its lines read the same if the file's imports bind {read}, and no import "
                "the diff shows binds them"
            )
            return False, why, ()
    only_gone, only_came = _changed_sides(lines, old, new)
    if any(t.strip() and not t.strip().startswith("#") for t in only_came):
        return True, "", ()
    real_gone = [t for t in only_gone if t.strip() and not t.strip().startswith("#")]
    in_body = lines.removed.within(old.body_start or old.line_end + 1, old.line_end)
    if not all(t in in_body for t in real_gone):
        return True, "", ()
    # statements of the body removed, nothing added
    if unread_assignments(real_gone, lines.old_seen.within(old.line_start, old.line_end)):
        return False, _UNREAD_LOCAL, ()
    removed = [x for x in lines.removed.numbered(old.line_start, old.line_end) if x[1] in real_gone]
    seen = lines.old_seen.numbered(old.line_start, old.line_end)
    header = lines.header(old.line_start)
    if python and (names := removed_parameters(old.name, removed, seen, header)):
        why = (
            f"the diff's lines remove {', '.join(names)} from its parameters, and none of "
            "them reads it; whether a line the diff does not show reads it is not in the diff"
        )
        return False, why, tuple(names)
    return True, "", ()


def _compare_files(ctx: Context) -> list[KernelChange]:
    changes: list[KernelChange] = []
    for f in ctx.files:
        old = {k.name: k for k in (f.old.kernels if f.old else ())}
        new = {k.name: k for k in (f.new.kernels if f.new else ())}
        old_constants = f.old.tuning_constants if f.old else {}
        new_constants = f.new.tuning_constants if f.new else {}
        lines = PatchLines(f.patch)
        texts = _Split(f)
        for name, k in old.items():
            if name not in new:
                changes.append(_single("deleted", k, f))
        for name, k in new.items():
            if name not in old:
                changes.append(_single("new", k, f))
                continue
            before = old[name]
            if k.language != before.language:
                # the same name in another language: a port, paired as a rewrite later
                changes += [_single("deleted", before, f), _single("new", k, f)]
                continue
            kind, notes, t_old, t_new, undecided, dropped = compare_kernels(
                before, k, f.patch, lines
            )
            if kind == "tuning" and notes == [_CONFIGS_CHANGED] and not t_old:
                a = built_configs(before, f.old_text, ctx.old_source)
                if a is not None and a == built_configs(k, f.new_text, ctx.new_source):
                    kind, notes = None, []  # the same list, now built by a function
                elif k.from_context and _moved_only(lines, before, k, ctx):
                    kind, notes = None, []  # as far as the diff's lines show
            helpers: list[str] = []
            if kind is None and k.language in ("cuda", "hip"):
                helpers = _helpers_changed(f, before, k, texts, ctx)
                if helpers:
                    kind = "body"
                    notes.append("the __device__ functions it calls changed: " + ", ".join(helpers))
            constants = _constants_changed(f, k, texts)
            if constants and kind in (None, "tuning"):
                kind = "tuning"
                shown = _shown(constants)
                t_old.update({shown[c]: (old_constants.get(c) or "-") for c in constants})
                t_new.update({shown[c]: (new_constants.get(c) or "-") for c in constants})
            renamed = f.patch.status == "renamed"
            if kind is None and undecided:
                ctx.undecided.setdefault(k.path, []).append(f"{name}: {undecided}")
                ctx.unread_dropped.setdefault(name, set()).update(dropped)
            if kind is None and not renamed:
                continue
            if renamed:
                notes.append(f"file renamed from {f.patch.old_path}")
            changes.append(
                KernelChange(
                    kind=kind or "moved",
                    name=name,
                    language=k.language,
                    path=k.path,
                    old=before.ref(),
                    new=k.ref(),
                    configs_old=list(before.configs) if before.configs is not None else None,
                    configs_new=list(k.configs) if k.configs is not None else None,
                    configs_old_computed=before.configs_computed,
                    configs_new_computed=k.configs_computed,
                    moved_from=f.patch.old_path if renamed else None,
                    via_helpers=helpers,
                    tuning_old=t_old,
                    tuning_new=t_new,
                    notes=notes + ([] if not k.from_context else ["read from diff lines only"]),
                )
            )
    return changes


def _moved_only(lines: PatchLines, old: KernelDef, new: KernelDef, ctx: Context) -> bool:
    """Whether every line the diff changes in the kernel moves its config list into a builder
    (``lists_moved_into_builders``)."""
    moved = lists_moved_into_builders(ctx).get(lines.patch.path)
    if moved is None:
        return False
    gone = {n for n, _ in lines.removed.numbered(old.line_start, old.line_end)}
    came = {n for n, _ in lines.added.numbered(new.line_start, new.line_end)}
    return gone <= moved[0] and came <= moved[1]


class _Split:
    """A file's two texts split into lines, once per file rather than once per kernel (a file
    holds up to MAX_PER_FILE kernels)."""

    def __init__(self, f: FileSides) -> None:
        self.f = f
        self._old: list[str] | None = None
        self._new: list[str] | None = None

    def old(self) -> list[str]:
        if self._old is None:
            self._old = (self.f.old_text or "").split("\n")
        return self._old

    def new(self) -> list[str]:
        if self._new is None:
            self._new = (self.f.new_text or "").split("\n")
        return self._new


def _helpers_changed(
    f: FileSides, old: KernelDef, new: KernelDef, texts: _Split, ctx: Context
) -> list[str]:
    """Names of the ``__device__`` helpers a C++ kernel calls whose code differs (whole files).
    One gone from the kernel's file that another file of the diff defines on the other side
    with the same code (moved into a header the file now includes), or come from one, is the
    same helper."""
    if f.old is None or f.new is None or f.old_text is None or f.new_text is None:
        return []
    before = {(h.name, h.digest) for h in called_helpers(f.old, old, texts.old())}
    after = {(h.name, h.digest) for h in called_helpers(f.new, new, texts.new())}
    elsewhere = {
        side: {
            (h.name, h.digest)
            for g in ctx.files
            if g is not f and (scan := g.old if side == "old" else g.new) is not None
            for h in scan.helpers
        }
        for side in ("old", "new")
    }
    gone = {h for h in before - after if h[0] not in {n for n, _ in after}}
    came = {h for h in after - before if h[0] not in {n for n, _ in before}}
    moved = (gone & elsewhere["new"]) | (came & elsewhere["old"])
    return sorted({name for name, _ in (before ^ after) - moved})


def _constants_changed(f: FileSides, k: KernelDef, texts: _Split) -> list[str]:
    """Module-level / file-level tuning constants (BLOCK_SIZE = 1024, #define THREADS 256) this
    kernel's file changed and the kernel (or a launch in the file) uses; one inside a function
    only where that function is the kernel or one of its launchers."""
    if f.old is None or f.new is None:
        return []
    names = set(f.old.tuning_constants) | set(f.new.tuning_constants)
    changed = [
        n for n in sorted(names) if f.old.tuning_constants.get(n) != f.new.tuning_constants.get(n)
    ]
    if f.new_text is None or not changed:
        return changed
    lines = texts.new()
    used = "\n".join(lines[k.line_start - 1 : k.line_end])
    used += "\n".join(
        "\n".join(lines[(x.wrapper_start or x.line) - 1 : (x.wrapper_end or x.line)])
        for x in f.new.launches
        if x.kernel == k.name
    )
    # a constant of a function (``threads'launcher``) is read by that function alone
    readers = {k.name} | {
        x.wrapper for s in (f.old, f.new) for x in s.launches if x.kernel == k.name
    }
    scoped = [n.split("'") for n in changed]
    return [
        n
        for n, parts in zip(changed, scoped, strict=True)
        if parts[0] in used and (len(parts) == 1 or parts[1].isdigit() or parts[1] in readers)
    ]


def _shown(keys: list[str]) -> dict[str, str]:
    """How a review names each constant: without the function a local one is keyed by
    (``threads'relu`` is ``threads``), unless two would then read the same."""
    shown = {}
    for key in keys:
        parts = key.split("'")
        count = parts[-1] if len(parts) > 1 and parts[-1].isdigit() else ""
        shown[key] = parts[0] + (f"'{count}" if count else "")
    return shown if len(set(shown.values())) == len(shown) else {k: k for k in keys}


def _single(kind: ChangeKind, k: KernelDef, f: FileSides) -> KernelChange:
    notes = ["read from diff lines only"] if k.from_context else []
    return KernelChange(
        kind=kind,
        name=k.name,
        language=k.language,
        path=k.path,
        old=k.ref() if kind == "deleted" else None,
        new=k.ref() if kind == "new" else None,
        configs_old=list(k.configs) if kind == "deleted" and k.configs is not None else None,
        configs_new=list(k.configs) if kind == "new" and k.configs is not None else None,
        configs_old_computed=kind == "deleted" and k.configs_computed,
        configs_new_computed=kind == "new" and k.configs_computed,
        notes=notes,
    )


def sources_for(paths: Sequence[str], texts: dict[str, str], source: SourceFn | None) -> dict:
    """Texts for ``paths`` from what was read, else from ``source``; missing ones left out."""
    out = {}
    for p in paths:
        if p in texts:
            out[p] = texts[p]
        elif source is not None:
            text = source(p)
            if text is not None and len(text) <= MAX_SOURCE_CHARS:
                texts[p] = text
                out[p] = text
    return out
