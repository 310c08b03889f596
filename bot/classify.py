"""Kernel changes in a diff: what changed in each kernel, and which Triton kernels replace C++ ones.

    analyze_diff(diff_text, policy=..., old_source=..., new_source=...) -> Analysis
    analyze_repo(repo, base, head, policy=...) -> Analysis        (bot.analyze_repo)

Each kernel the diff touches gets one :class:`KernelChange` of kind

- ``rewrite``: a CUDA/HIP kernel replaced by a Triton kernel doing the same operation (paired by
  the policy's kernel paths, by call sites switched in the same diff, by names and file names;
  see ``bot.pairing``), with the seed's Part A table when both sides' sources are readable;
- ``tuning``: autotune configs, ``num_warps`` / ``num_stages``, ``BLOCK_*`` values changed;
- ``body``: the kernel's code changed; ``launch``: its grid / launch arguments / host wrapper;
- ``new`` / ``deleted``.

With ``old_source`` / ``new_source`` (path -> full text, None when unknown) kernels are read from
whole files; without, from the lines the diff shows, and the Analysis says so.
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
    from bot.pairing import pair_rewrites

    skipped = list(parsed.skipped)
    sides: list[FileSides] = []
    for patch in parsed.files:
        if patch.binary:
            skipped.append(SkippedFile(path=patch.path, reason="binary file"))
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
    changes += _compare_launches(ctx, changes)
    changes = _loose_configs(ctx, changes)
    changes = _moved(changes, ctx)
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


# ------------------------------------------------------------------------------- launches


def _launch_text(site: LaunchSite) -> str:
    return f"{site.path}:{site.line} [{site.grid}] ({site.args})"


def _family(language: str) -> str:
    return "triton" if language == "triton" else "cpp"


def _relevant(site: LaunchSite, known: set[str]) -> bool:
    """C++ launch syntax is unambiguous; ``x[i](...)`` in Python is a launch only when ``x``
    is a kernel found somewhere in the diff, or is named like one."""
    return site.language != "triton" or site.kernel in known or site.kernel.endswith("kernel")


def _compare_launches(ctx: Context, changes: list[KernelChange]) -> list[KernelChange]:
    """Kernels whose launches changed: grid or arguments (``launch``), launch-time
    ``num_warps`` / ``BLOCK_*`` values (``tuning``), or the host wrapper around them."""
    known = {k.name for f in ctx.files for s in (f.old, f.new) if s for k in s.kernels}
    olds: dict[tuple[str, str], list[LaunchSite]] = {}
    news: dict[tuple[str, str], list[LaunchSite]] = {}
    for site in ctx.old_launches():
        if _relevant(site, known):
            olds.setdefault((site.kernel, site.language), []).append(site)
    for site in ctx.new_launches():
        if _relevant(site, known):
            news.setdefault((site.kernel, site.language), []).append(site)
    out = []
    for name, language in sorted(set(olds) & set(news)):
        a, b = olds[(name, language)], news[(name, language)]
        grid_changed = sorted((x.grid, x.args) for x in a) != sorted((x.grid, x.args) for x in b)
        t_old: dict[str, str] = {}
        t_new: dict[str, str] = {}
        for x in a:
            t_old.update(x.tuning)
        for x in b:
            t_new.update(x.tuning)
        keys = sorted(k for k in set(t_old) | set(t_new) if t_old.get(k) != t_new.get(k))
        wrapper_changed = all(x.wrapper_digest for x in a + b) and sorted(
            x.wrapper_digest or "" for x in a
        ) != sorted(x.wrapper_digest or "" for x in b)
        if not (grid_changed or keys or wrapper_changed):
            continue
        kind: ChangeKind = "launch" if grid_changed or wrapper_changed else "tuning"
        notes = []
        if wrapper_changed and not grid_changed:
            notes.append("host wrapper changed; grid and launch arguments did not")
        update = {
            "tuning_old": {k: t_old.get(k, "-") for k in keys},
            "tuning_new": {k: t_new.get(k, "-") for k in keys},
            "launches_old": [_launch_text(x) for x in a] if grid_changed else [],
            "launches_new": [_launch_text(x) for x in b] if grid_changed else [],
        }
        existing = next(
            (c for c in changes if c.name == name and _family(c.language) == _family(language)),
            None,
        )
        if existing is None:
            old_k = _kernel_named(ctx, name, language, "old")
            new_k = _kernel_named(ctx, name, language, "new")
            out.append(
                KernelChange(
                    kind=kind,
                    name=name,
                    language=language,
                    path=new_k.path if new_k else b[0].path,
                    old=old_k.ref() if old_k else None,
                    new=new_k.ref() if new_k else None,
                    notes=notes,
                    **update,
                )
            )
        elif existing.kind not in ("new", "deleted"):
            merged_kind = existing.kind
            if existing.kind == "tuning" and kind == "launch":
                merged_kind = "launch"
            elif existing.kind == "body":
                notes.append("its launch changed too" if kind == "launch" else "")
            update["tuning_old"] = {**existing.tuning_old, **update["tuning_old"]}
            update["tuning_new"] = {**existing.tuning_new, **update["tuning_new"]}
            changes[changes.index(existing)] = existing.model_copy(
                update={
                    "kind": merged_kind,
                    "notes": existing.notes + [n for n in notes if n],
                    **update,
                }
            )
    return out


def _kernel_named(ctx: Context, name: str, language: str, side: str) -> KernelDef | None:
    """The kernel called ``name`` (same language family) in the files read, if any."""
    for f in ctx.files:
        scan = f.old if side == "old" else f.new
        for k in scan.kernels if scan else ():
            if k.name == name and _family(k.language) == _family(language):
                return k
    return None


def _loose_configs(ctx: Context, changes: list[KernelChange]) -> list[KernelChange]:
    """``triton.Config`` entries changed outside any kernel the diff's lines show (a config list
    in a helper or a module-level name, read without the whole file): still a tuning change."""
    from bot.detect_triton import config_calls

    out = list(changes)
    for f in ctx.files:
        complete = all(s is None or s.complete for s in (f.old, f.new))
        if complete or source_kind(f.patch.path) != "python":
            continue
        old_ks = f.old.kernels if f.old else ()
        new_ks = f.new.kernels if f.new else ()
        removed = {n for n, _ in f.patch.removed_lines()}
        added = {n for n, _ in f.patch.added_lines()}

        def touched(calls, changed, kernels):
            return [
                cfg
                for first, last, cfg in calls
                if any(first <= n <= last for n in changed)
                and not any(k.line_start <= first <= k.line_end for k in kernels)
            ]

        before = touched(
            config_calls([x for h in f.patch.hunks for x in h.old_lines()]), removed, old_ks
        )
        after = touched(
            config_calls([x for h in f.patch.hunks for x in h.new_lines()]), added, new_ks
        )
        if before == after:
            continue
        names = sorted({k.name for k in (*old_ks, *new_ks)})
        name = names[0] if len(names) == 1 else f"autotune configs in {f.patch.path}"
        note = "only the changed triton.Config entries are in the diff: old/new list those"
        existing = next((c for c in out if c.name == name and c.path == f.patch.path), None)
        if existing is not None:
            if existing.kind in ("new", "deleted"):
                continue
            out[out.index(existing)] = existing.model_copy(
                update={
                    "configs_old": before,
                    "configs_new": after,
                    "notes": [*existing.notes, note],
                }
            )
            continue
        if len(names) != 1:
            note += "; the kernel they tune is outside the diff's lines"
        out.append(
            KernelChange(
                kind="tuning",
                name=name,
                language="triton",
                path=f.patch.path,
                configs_old=before,
                configs_new=after,
                notes=[note],
            )
        )
    return out


def _moved(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """A kernel deleted from one file and added to another (same name and language) moved."""
    deleted = {(c.name, c.language): c for c in changes if c.kind == "deleted"}
    out = []
    drop = set()
    for c in changes:
        key = (c.name, c.language)
        if c.kind != "new" or key not in deleted or deleted[key].path == c.path:
            continue
        gone = deleted[key]
        old_k = _find_kernel(ctx, gone.path, c.name, "old")
        new_k = _find_kernel(ctx, c.path, c.name, "new")
        if old_k is None or new_k is None:
            continue
        kind, notes, t_old, t_new = compare_kernels(old_k, new_k, None)
        drop.add(id(gone))
        drop.add(id(c))
        if kind is None:
            continue
        out.append(
            c.model_copy(
                update={
                    "kind": kind,
                    "old": old_k.ref(),
                    "configs_old": list(old_k.configs) if old_k.configs is not None else None,
                    "tuning_old": t_old,
                    "tuning_new": t_new,
                    "notes": [*notes, f"moved from {gone.path}"],
                }
            )
        )
    return [c for c in changes if id(c) not in drop] + out


def _find_kernel(ctx: Context, path: str, name: str, side: str) -> KernelDef | None:
    for f in ctx.files:
        scan = f.old if side == "old" else f.new
        if scan is not None and scan.path == path:
            return scan.kernel(name)
    return None


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
