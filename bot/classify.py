"""Kernel changes in a diff: what changed in each kernel, and which Triton kernels replace C++ ones.

    analyze_diff(diff_text, policy=..., old_source=..., new_source=...) -> Analysis
    analyze_repo(repo, base, head, policy=...) -> Analysis        (in bot.analyze)

Each kernel the diff touches gets one :class:`KernelChange` of kind

- ``rewrite``: a CUDA/HIP kernel replaced by a Triton kernel doing the same operation (paired by
  the policy's kernel paths, by call sites switched in the same diff, by names and file names;
  see ``bot.pairing``), with the seed's Part A table when both sides' sources are readable;
- ``tuning``: autotune configs, ``num_warps`` / ``num_stages``, ``BLOCK_*`` values changed;
- ``body``: the kernel's code changed; ``launch``: its grid / launch arguments / host wrapper;
- ``new`` / ``deleted``.

With ``old_source`` / ``new_source`` (path -> full text, None when unknown) kernels are read from
whole files; without, from the lines the diff shows, and the Analysis says so.

This module compares each file's kernels; ``bot.classify_cross`` adds what is seen across files
(launches, config lists outside kernels, moves) and ``bot.pairing`` the rewrites.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.detect import (
    MAX_SOURCE_CHARS,
    FileScan,
    KernelDef,
    KernelRef,
    LaunchSite,
    TritonConfig,
    called_helpers,
    collapse,
    is_tuning_line,
    scan_lines,
    scan_source,
    source_kind,
)
from bot.diff import FilePatch, ParsedDiff, SkippedFile, parse_diff
from bot.part_a import PartA

if TYPE_CHECKING:
    from bot.policy_model import Policy

# What the diff lines of a file must contain for a scan of them to find anything at all.
_MARKERS = {
    "python": re.compile(
        r"triton|tl\.|constexpr|kernel|\]\s*\(|Config|"
        r"(?i:block|tile|warps|stages|threads|group_size|split_k|maxnreg)"
    ),
    "cpp": re.compile(
        r"__global__|__device__|__shared__|<<<|LaunchKernel|PYBIND11|TORCH_LIBRARY|\.def\(|\.impl\(|"
        r"(?i:block|tile|warps|stages|threads)"
    ),
}
ChangeKind = Literal["rewrite", "tuning", "body", "launch", "new", "deleted"]
SourceFn = Callable[[str], "str | None"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelChange(_Frozen):
    kind: ChangeKind
    name: str
    language: str  # of the new kernel (old for ``deleted``): triton | cuda | hip
    path: str
    old: KernelRef | None = None
    new: KernelRef | None = None
    old_language: str | None = None  # for a rewrite: "cuda+hip" when both are replaced
    old_variants: list[KernelRef] = Field(default_factory=list)  # more C++ kernels replaced
    old_kernel_kept: bool | None = None  # rewrite: the C++ kernel is still in head
    policy_kernels: list[str] = Field(default_factory=list)
    configs_old: list[TritonConfig] | None = None
    configs_new: list[TritonConfig] | None = None
    tuning_old: dict[str, str] = Field(default_factory=dict)  # changed knobs only
    tuning_new: dict[str, str] = Field(default_factory=dict)
    launches_old: list[str] = Field(default_factory=list)  # "path:line grid | args"
    launches_new: list[str] = Field(default_factory=list)
    part_a: PartA | None = None
    evidence: list[str] = Field(default_factory=list)  # why a rewrite was paired
    notes: list[str] = Field(default_factory=list)


class Analysis(_Frozen):
    changes: list[KernelChange]
    skipped: list[SkippedFile] = Field(default_factory=list)
    files_seen: int = 0
    from_context_only: bool = False  # some kernels were read from diff lines, not whole files
    policy_kernels: list[str] = Field(default_factory=list)  # what to measure
    notes: list[str] = Field(default_factory=list)


@dataclass
class FileSides:
    patch: FilePatch
    old: FileScan | None
    new: FileScan | None
    old_text: str | None = None
    new_text: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    """Everything read so far, shared by the comparison, the pairing and Part A."""

    files: list[FileSides]
    old_source: SourceFn | None
    new_source: SourceFn | None
    old_files: Sequence[str] | None
    policy: Policy | None
    extra_old: dict[str, FileScan] = field(default_factory=dict)  # outside the diff
    texts_old: dict[str, str] = field(default_factory=dict)
    texts_new: dict[str, str] = field(default_factory=dict)
    diff_paths: set[str] = field(default_factory=set)

    def old_launches(self) -> list[LaunchSite]:
        return [x for f in self.files if f.old for x in f.old.launches] + [
            x for s in self.extra_old.values() for x in s.launches
        ]

    def new_launches(self) -> list[LaunchSite]:
        return [x for f in self.files if f.new for x in f.new.launches]


def analyze_diff(
    diff_text: str,
    *,
    policy: Policy | None = None,
    old_source: SourceFn | None = None,
    new_source: SourceFn | None = None,
    old_files: Sequence[str] | None = None,
    thrifty: bool = True,
) -> Analysis:
    """Analyze unified diff text. ``old_files``: every path at base, when known (for pairing a
    new Triton kernel with a C++ kernel the diff leaves untouched). ``thrifty``: read a whole
    file only when its diff lines could belong to a kernel (or the policy names it)."""
    return analyze_parsed(
        parse_diff(diff_text),
        policy=policy,
        old_source=old_source,
        new_source=new_source,
        old_files=old_files,
        thrifty=thrifty,
    )


def analyze_parsed(
    parsed: ParsedDiff,
    *,
    policy: Policy | None = None,
    old_source: SourceFn | None = None,
    new_source: SourceFn | None = None,
    old_files: Sequence[str] | None = None,
    thrifty: bool = True,
) -> Analysis:
    from bot.classify_cross import compare_launches, loose_configs, moved_kernels
    from bot.pairing import pair_rewrites

    skipped = list(parsed.skipped)
    sides: list[FileSides] = []
    for patch in parsed.files:
        if patch.binary:
            skipped.append(SkippedFile(path=patch.path, reason="binary file"))
            continue
        special = {"120000": "symbolic link", "160000": "submodule"}
        kind = special.get(patch.new_mode or "") or special.get(patch.old_mode or "")
        if kind is not None:
            skipped.append(SkippedFile(path=patch.path, reason=kind))
            continue
        if patch.mode_only:
            skipped.append(
                SkippedFile(
                    path=patch.path,
                    reason=f"mode change only ({patch.old_mode} -> {patch.new_mode})",
                )
            )
            continue
        if source_kind(patch.path) is None and source_kind(patch.old_path or "") is None:
            continue
        sides.append(_read_sides(patch, old_source, new_source, policy, thrifty))
    ctx = Context(
        files=sides,
        old_source=old_source,
        new_source=new_source,
        old_files=old_files,
        policy=policy,
        diff_paths={p for f in parsed.files for p in (f.old_path, f.new_path) if p},
    )
    for f in sides:
        if f.old_text is not None and f.patch.old_path:
            ctx.texts_old[f.patch.old_path] = f.old_text
        if f.new_text is not None and f.patch.new_path:
            ctx.texts_new[f.patch.new_path] = f.new_text
    changes = _compare_files(ctx)
    changes += compare_launches(ctx, changes)
    changes = loose_configs(ctx, changes)
    changes = moved_kernels(changes, ctx)
    changes = pair_rewrites(changes, ctx)
    changes = [_with_policy(c, policy) for c in changes]
    changes.sort(key=lambda c: (c.path, (c.new or c.old).line_start if (c.new or c.old) else 0))
    partial = {
        p
        for f in sides
        if any(s is not None and not s.complete for s in (f.old, f.new))
        for p in (f.patch.old_path, f.patch.new_path)
        if p
    }
    context_only = any(
        (f.old is not None and not f.old.complete and (f.old.kernels or f.old.launches))
        or (f.new is not None and not f.new.complete and (f.new.kernels or f.new.launches))
        for f in sides
    ) or any(c.path in partial for c in changes)
    measure: list[str] = []
    for c in changes:
        measure += [k for k in c.policy_kernels if k not in measure]
    notes = [n for f in sides for n in f.notes]
    return Analysis(
        changes=changes,
        skipped=skipped,
        files_seen=len(parsed.files) + len(parsed.skipped),
        from_context_only=context_only,
        policy_kernels=measure,
        notes=notes,
    )


# ------------------------------------------------------------------------------ reading


def whole_text_from_diff(patch: FilePatch, side: str) -> str | None:
    """An added (new side) or deleted (old side) file is whole in its diff."""
    if len(patch.hunks) != 1:
        return None
    h = patch.hunks[0]
    if side == "new" and patch.status == "added" and h.old_count == 0:
        lines = [t for _, t in h.added]
        return "\n".join(lines) + "\n" if len(lines) == h.new_count else None
    if side == "old" and patch.status == "deleted" and h.new_count == 0:
        lines = [t for _, t in h.removed]
        return "\n".join(lines) + "\n" if len(lines) == h.old_count else None
    return None


def _read_sides(
    patch: FilePatch,
    old_source: SourceFn | None,
    new_source: SourceFn | None,
    policy: Policy | None,
    thrifty: bool,
) -> FileSides:
    out = FileSides(patch=patch, old=None, new=None)
    kind = source_kind(patch.path) or source_kind(patch.old_path or "") or "python"
    sides = {
        "old": (
            [x for h in patch.hunks for x in h.old_lines()],
            [(h.old_start, h.section) for h in patch.hunks],
        ),
        "new": (
            [x for h in patch.hunks for x in h.new_lines()],
            [(h.new_start, h.section) for h in patch.hunks],
        ),
    }
    visible = "\n".join(
        [t for lines, sections in sides.values() for _, t in lines]
        + [head for _, head in sides["new"][1]]
    )
    covered = policy is not None and any(
        policy.kernels_for_path(p) for p in (patch.old_path, patch.new_path) if p
    )
    if thrifty and not (covered or _MARKERS[kind].search(visible)):
        # Nothing in the diff's lines a kernel, a launch or a tuning knob could be made of:
        # not worth reading the whole file (a read may be a network call).
        if patch.old_path:
            out.old = FileScan(path=patch.old_path, kind=kind, language=None, complete=False)
        if patch.new_path:
            out.new = FileScan(path=patch.new_path, kind=kind, language=None, complete=False)
        return out
    for side, path, source in (
        ("old", patch.old_path, old_source),
        ("new", patch.new_path, new_source),
    ):
        if path is None:
            continue
        text = source(path) if source is not None else None
        if text is None:
            text = whole_text_from_diff(patch, side)
        if text is not None and len(text) > MAX_SOURCE_CHARS:
            out.notes.append(
                f"{path} ({side}) is over {MAX_SOURCE_CHARS // 1024} KiB: read from its diff lines"
            )
            text = None
        if text is not None:
            scan = scan_source(path, text)
        else:
            lines, sections = sides[side]
            scan = scan_lines(path, lines, sections)
        if side == "old":
            out.old, out.old_text = scan, text
        else:
            out.new, out.new_text = scan, text
    return out


# --------------------------------------------------------------------------- per-file kernels


def _changed_lines(patch: FilePatch, old: KernelDef | None, new: KernelDef | None) -> list[str]:
    out = []
    for h in patch.hunks:
        if old is not None:
            out += [t for n, t in h.removed if old.line_start <= n <= old.line_end]
        if new is not None:
            out += [t for n, t in h.added if new.line_start <= n <= new.line_end]
    return out


def _configs_changed(old: KernelDef, new: KernelDef) -> bool:
    if old.configs is not None and new.configs is not None:
        return old.configs != new.configs
    return collapse(old.configs_source or "") != collapse(new.configs_source or "")


def compare_kernels(
    old: KernelDef, new: KernelDef, patch: FilePatch | None
) -> tuple[ChangeKind | None, list[str], dict[str, str], dict[str, str]]:
    """``(kind or None, notes, tuning_old, tuning_new)`` for two versions of one kernel."""
    notes: list[str] = []
    t_old: dict[str, str] = {}
    t_new: dict[str, str] = {}
    tuning = False
    if _configs_changed(old, new):
        tuning = True
        notes.append("autotune configs changed")
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
    changed = _changed_lines(patch, old, new) if patch is not None else []
    if old.digest is not None and new.digest is not None:
        differs = old.digest != new.digest
    else:
        differs = bool(changed)
    body = False
    if differs:
        real = [t for t in changed if t.strip() and not t.strip().startswith(("#", "//"))]
        inside = [t for t in real if not is_tuning_line(t)]
        decorator_only = old.digest is not None and old.digest == new.digest
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
        return "body", notes, t_old, t_new
    if tuning:
        return "tuning", notes, t_old, t_new
    return None, notes, t_old, t_new


def _compare_files(ctx: Context) -> list[KernelChange]:
    changes: list[KernelChange] = []
    for f in ctx.files:
        old = {k.name: k for k in (f.old.kernels if f.old else ())}
        new = {k.name: k for k in (f.new.kernels if f.new else ())}
        for name, k in old.items():
            if name not in new:
                changes.append(_single("deleted", k, f))
        for name, k in new.items():
            if name not in old:
                changes.append(_single("new", k, f))
                continue
            kind, notes, t_old, t_new = compare_kernels(old[name], k, f.patch)
            if kind is None and k.language != "triton":
                changed = _helpers_changed(f, old[name], k)
                if changed:
                    kind = "body"
                    notes.append("the __device__ functions it calls changed: " + ", ".join(changed))
            constants = _constants_changed(f, k)
            if constants and kind in (None, "tuning"):
                kind = "tuning"
                t_old.update({c: (f.old.tuning_constants.get(c) or "-") for c in constants})
                t_new.update({c: (f.new.tuning_constants.get(c) or "-") for c in constants})
            if kind is None:
                continue
            if f.patch.status == "renamed":
                notes.append(f"file renamed from {f.patch.old_path}")
            changes.append(
                KernelChange(
                    kind=kind,
                    name=name,
                    language=k.language,
                    path=k.path,
                    old=old[name].ref(),
                    new=k.ref(),
                    configs_old=list(old[name].configs) if old[name].configs is not None else None,
                    configs_new=list(k.configs) if k.configs is not None else None,
                    tuning_old=t_old,
                    tuning_new=t_new,
                    notes=notes + ([] if not k.from_context else ["read from diff lines only"]),
                )
            )
    return changes


def _helpers_changed(f: FileSides, old: KernelDef, new: KernelDef) -> list[str]:
    """Names of the ``__device__`` helpers a C++ kernel calls whose code differs (whole files)."""
    if f.old is None or f.new is None or f.old_text is None or f.new_text is None:
        return []
    before = {(h.name, h.digest) for h in called_helpers(f.old, old, f.old_text.split("\n"))}
    after = {(h.name, h.digest) for h in called_helpers(f.new, new, f.new_text.split("\n"))}
    return sorted({name for name, _ in before ^ after})


def _constants_changed(f: FileSides, k: KernelDef) -> list[str]:
    """Module-level / file-level tuning constants (BLOCK_SIZE = 1024, #define THREADS 256) this
    kernel's file changed and the kernel (or a launch in the file) uses."""
    if f.old is None or f.new is None:
        return []
    names = set(f.old.tuning_constants) | set(f.new.tuning_constants)
    changed = [
        n for n in sorted(names) if f.old.tuning_constants.get(n) != f.new.tuning_constants.get(n)
    ]
    text = f.new_text
    if text is None:
        return changed
    lines = text.split("\n")
    used = "\n".join(lines[k.line_start - 1 : k.line_end])
    used += "\n".join(
        "\n".join(lines[(x.wrapper_start or x.line) - 1 : (x.wrapper_end or x.line)])
        for x in f.new.launches
        if x.kernel == k.name
    )
    return [n for n in changed if n.split("'")[0] in used]


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
        notes=notes,
    )


def _with_policy(change: KernelChange, policy: Policy | None) -> KernelChange:
    if policy is None:
        return change
    paths = [r.path for r in (change.old, change.new, *change.old_variants) if r is not None]
    paths.append(change.path)
    names: list[str] = []
    for p in paths:
        for kp in policy.kernels_for_path(p):
            if kp.name not in names:
                names.append(kp.name)
    return change.model_copy(update={"policy_kernels": names})


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
