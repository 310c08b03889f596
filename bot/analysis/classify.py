"""Kernel changes in a diff: what changed in each kernel, and which Triton kernels replace C++ ones.

    analyze_diff(diff_text, policy=..., old_source=..., new_source=...) -> Analysis
    analyze_repo(repo, base, head, policy=...) -> Analysis        (in bot.analysis.repo)

Each kernel the diff touches gets one :class:`KernelChange` of kind

- ``rewrite``: a CUDA/HIP kernel replaced by a Triton kernel doing the same operation (paired by
  the policy's kernel paths, by call sites switched in the same diff, by names and file names;
  see ``bot.analysis.pairing``), with the seed's Part A table when both sides' sources are readable;
- ``tuning``: autotune configs, ``num_warps`` / ``num_stages``, ``BLOCK_*`` values changed;
- ``body``: the kernel's code changed; ``launch``: its grid / launch arguments / host wrapper;
- ``new`` / ``deleted``.

With ``old_source`` / ``new_source`` (path -> full text, None when unknown) kernels are read from
whole files; without, from the lines the diff shows, and the Analysis says so.

This module compares each file's kernels; ``bot.analysis.cross_file`` adds what is seen across files
(launches, config lists outside kernels, moves) and ``bot.analysis.pairing`` the rewrites.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.analysis.compare import (
    _compare_files,
)
from bot.analysis.diff import FilePatch, ParsedDiff, SkippedFile, parse_diff, whole_text_from_diff
from bot.analysis.languages import MARKER_WORDS, UNRECOGNISED, kernel_like, unrecognised_note
from bot.analysis.model import (
    MAX_SOURCE_CHARS,
    Analysis,
    Context,
    FileScan,
    FileSides,
    KernelChange,
    SourceFn,
    UnclassifiedFile,
)
from bot.analysis.reach.branches import VENDOR
from bot.analysis.same_code import same_cpp_program
from bot.analysis.scan import scan_lines, scan_read, scan_source
from bot.analysis.scan.kernel_classes import add_class_kernels, defines_device_call
from bot.analysis.scope import one_analysis
from bot.analysis.text import source_kind
from bot.toolchain.detect import diff_toolchain, file_kind

if TYPE_CHECKING:
    from bot.policy.model import Policy

# What the diff lines of a file must contain for a scan of them to find anything at all.
_MARKERS = {
    "python": re.compile(
        r"triton|tl\.|constexpr|kernel|\]\s*\(|Config|\bjit\b|" + "|".join(MARKER_WORDS) + "|"
        r"(?i:block|tile|warps|stages|threads|group_size|split_k|maxnreg)|" + VENDOR.pattern
    ),
    "cpp": re.compile(
        r"__global__|__device__|__shared__|<<<|LaunchKernel|PYBIND11|TORCH_LIBRARY|\.def\(|\.impl\(|"
        r"(?i:block|tile|warps|stages|threads)|"
        r"\boperator\s*\(\s*\)|\b(?:CUTLASS|CUTE)_DEVICE\b|\bdevice_kernel\b|\bkernel_launch\b"
    ),
}


@one_analysis
def analyze_diff(
    diff: str | ParsedDiff,
    *,
    policy: Policy | None = None,
    old_source: SourceFn | None = None,
    new_source: SourceFn | None = None,
    old_files: Sequence[str] | None = None,
    thrifty: bool = True,
    toolchain_source: tuple[SourceFn | None, SourceFn | None] = (None, None),
    whole_source: tuple[SourceFn | None, SourceFn | None] = (None, None),
) -> Analysis:
    """Analyze a unified diff (text, or already parsed). ``old_files``: every path at base, when
    known (for pairing a new Triton kernel with a C++ kernel the diff leaves untouched).
    ``thrifty``: read a whole file only when its diff lines could belong to a kernel (or the
    policy names it). ``toolchain_source``: how to read a requirements, lock, Docker or
    workflow file whole at base and head (without it, its diff lines are all it is read by).
    ``whole_source``: how to read any file whole at base and head, for the call graph, where
    ``old_source`` / ``new_source`` read a file of the diff with no kernel marker as empty."""
    from bot.analysis.cross_file import compare_launches, loose_configs, moved_kernels
    from bot.analysis.pairing import pair_rewrites

    parsed = diff if isinstance(diff, ParsedDiff) else parse_diff(diff)
    from bot.analysis.controls.async_timing import add_async_timing
    from bot.analysis.controls.lane_primitives import add_lane_primitives
    from bot.analysis.reach.branches import add_branches
    from bot.analysis.reach.call_gates import call_gates
    from bot.analysis.reach.choices import choice_gates
    from bot.analysis.reach.helpers import fold_helpers
    from bot.analysis.reach.host_cpp import host_changes
    from bot.analysis.reach.import_gates import import_gates
    from bot.analysis.reach.loader_calls import loader_launches
    from bot.analysis.reach.predicates import predicate_gates
    from bot.analysis.tuning.decorator_reads import decorator_reads
    from bot.analysis.tuning.dsl_classes import class_tuning
    from bot.analysis.tuning.tuning_helpers import tuning_helpers

    skipped = list(parsed.skipped)
    text_only_lines: list[UnclassifiedFile] = []  # C++ hunks that read the same
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
        side = _read_sides(patch, old_source, new_source, policy, thrifty)
        if (why := _text_only(side)) is not None:
            if why == _TEXT_ONLY_LINES:  # the diff alone: said, not settled
                text_only_lines.append(UnclassifiedFile(path=patch.path, why=why))
            else:
                skipped.append(SkippedFile(path=patch.path, reason=why))
            continue
        sides.append(side)
    ctx = Context(
        files=sides,
        old_source=old_source,
        new_source=new_source,
        old_files=old_files,
        policy=policy,
        diff_paths={p for f in parsed.files for p in (f.old_path, f.new_path) if p},
        old_whole=whole_source[0],
        new_whole=whole_source[1],
    )
    for f in sides:
        if f.old_text is not None and f.patch.old_path:
            ctx.texts_old[f.patch.old_path] = f.old_text
        if f.new_text is not None and f.patch.new_path:
            ctx.texts_new[f.patch.new_path] = f.new_text
    ctx.kernel_classes = add_class_kernels(ctx.files, _class_launchers(ctx))
    changes = _compare_files(ctx)
    changes += compare_launches(ctx, changes)
    changes = loose_configs(ctx, changes)
    changes = moved_kernels(changes, ctx)
    changes = tuning_helpers(changes, ctx)
    changes = class_tuning(changes, ctx)
    changes = fold_helpers(changes, ctx)
    changes = host_changes(changes, ctx)
    changes = loader_launches(changes, ctx)
    changes = decorator_reads(changes, ctx)
    changes = pair_rewrites(changes, ctx)
    changes = add_lane_primitives(changes, ctx)
    changes = add_async_timing(changes, ctx)
    changes = add_branches([_with_policy(c, policy) for c in changes], ctx, policy)
    changes = import_gates(changes, ctx)
    changes = call_gates(changes, ctx)
    changes = predicate_gates(changes, ctx)
    changes = choice_gates(changes, ctx)
    changes = [_unrecognised(c, sides) for c in changes]
    changes.sort(key=lambda c: (c.path, _first_line(c)))
    moved = [c for c in changes if c.kind == "moved"]
    changes = [c for c in changes if c.kind != "moved"]
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
    undecided = [
        UnclassifiedFile(path=path, why=_UNDECIDED + "; ".join(why))
        for path, why in sorted(ctx.undecided.items())
    ]
    unclassified = [
        *undecided,
        *unclassified_files(sides, [*changes, *moved], said=set(ctx.undecided)),
        *text_only_lines,
    ]
    return Analysis(
        changes=changes,
        skipped=skipped,
        files_seen=len(parsed.files) + len(parsed.skipped),
        from_context_only=context_only,
        policy_kernels=measure,
        notes=notes,
        moved=moved,
        unclassified=unclassified,
        toolchain=diff_toolchain(
            (
                (
                    f.old_path,
                    f.new_path,
                    "\n".join(t for h in f.hunks for _, t in h.old_lines()),
                    "\n".join(t for h in f.hunks for _, t in h.new_lines()),
                )
                for f in parsed.files
                if not f.binary
                and (
                    file_kind(f.old_path or "")
                    or file_kind(f.new_path or "")
                    or "160000" in (f.old_mode, f.new_mode)  # a submodule: its gitlinks
                )
            ),
            *toolchain_source,
        ),
    )


# ------------------------------------------------------------------------------ reading

_MAX_LAUNCHERS = 40


def _class_launchers(ctx: Context) -> list[str]:
    """The C++ files beside a file of the diff that defines a device ``operator()`` (up to
    ``_MAX_LAUNCHERS``, at head): where a class kernel whose launcher the diff leaves untouched
    is launched."""
    if ctx.new_source is None or not ctx.old_files:
        return []
    folders = {
        posixpath.dirname(f.patch.path)
        for f in ctx.files
        if source_kind(f.patch.path) == "cpp" and f.new_text and defines_device_call(f.new_text)
    }
    if not folders:
        return []
    wanted = [
        p
        for p in ctx.old_files
        if source_kind(p) == "cpp" and posixpath.dirname(p) in folders and p not in ctx.diff_paths
    ][:_MAX_LAUNCHERS]
    texts = (ctx.new_source(p) for p in wanted)
    return [t for t in texts if t and len(t) <= MAX_SOURCE_CHARS]


_TEXT_ONLY = (
    "C++ text changed, not the program: the same tokens under each configuration of the "
    "macros the file tests (macros expanded, comments dropped)"
)


_TEXT_ONLY_LINES = (
    "C++ text changed, not the program, as far as the diff's lines show (its hunks read the "
    "same under each configuration of the macros they test); analyze with --repo to compare "
    "the whole files"
)


def _text_only(side: FileSides) -> str | None:
    """Why a modified C++ file is the same program (its two versions read whole; without them,
    the old and new lines of its hunks), or ``None``."""
    if source_kind(side.patch.path) != "cpp" or side.patch.status != "modified":
        return None
    # an empty side is a file not read whole (no kernel marker in it), not an empty file
    if side.old_text and side.new_text:
        return _TEXT_ONLY if same_cpp_program(side.old_text, side.new_text) else None
    if side.old_text or side.new_text:
        return None
    old, new = (
        "\n".join(t for h in side.patch.hunks for _, t in lines(h))
        for lines in (lambda h: h.old_lines(), lambda h: h.new_lines())
    )
    return _TEXT_ONLY_LINES if same_cpp_program(old, new, whole=False) else None


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
    markers = tuple(policy.kernel_decorators) if policy is not None else ()
    marked = any(m.rsplit(".", 1)[-1] in visible for m in markers)
    if thrifty and not (covered or marked or _MARKERS[kind].search(visible)):
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
        lines, sections = sides[side]
        if text == "" and _DEFINES_KERNELS.search("\n".join(t for _, t in lines)):
            text = None  # a reader that found nothing worth reading, where the diff shows kernels
        if text is None:
            text = whole_text_from_diff(patch, side)
        if text is not None and len(text) > MAX_SOURCE_CHARS:
            out.notes.append(
                f"{path} ({side}) is over {MAX_SOURCE_CHARS // 1024} KiB: read from its diff lines"
            )
            text = None
        scan = (
            (
                scan_source(path, text, markers)
                if source is None
                else scan_read(path, text, source, markers)
            )
            if text is not None
            else scan_lines(path, lines, sections, markers)
        )
        out.notes += [n for n in scan.notes if n not in out.notes]  # what the scan left unread
        if side == "old":
            out.old, out.old_text = scan, text
        else:
            out.new, out.new_text = scan, text
    return out


# Diff lines that define kernels (a DSL's decorator, a CUDA qualifier).
_DEFINES_KERNELS = re.compile(
    r"@\s*[\w.]*(?:jit|kernel|prim_func)\b|__global__|__device__|\bT\.Kernel\b|"
    + "|".join(MARKER_WORDS)
)

# What makes a file hold GPU kernels, when only its diff lines are seen.
_KERNEL_FILE = re.compile(
    r"@\s*[\w.]*(?:jit|kernel|prim_func)\b|\btl\.|\btriton\b|__global__|__device__|<<<|"
    r"LaunchKernel|\bT\.Kernel\b|(?i:kernel|cuda|hip)|" + "|".join(MARKER_WORDS)
)


# A path named for kernels (``fused_swiglu.py``, ``csrc/kernels/``, ``ops/triton/``): its
# changed lines may be host code of kernels they do not show.
_KERNEL_PATH = re.compile(r"(?i)(?:^|[/_.-])(?:kernels?|fused|triton|cuda|hip)(?=[/_.-]|$)")
# ... or a file named for the operator kernels are most often written for (``attention.py``,
# ``attn_layer.py``; a folder so named is a package's, as often as not holding none)
_KERNEL_STEM = re.compile(r"(?i)(?:^|[_.-])(?:attention|attn)(?=[_.-]|$)")


def _named_for_kernels(path: str) -> bool:
    return bool(_KERNEL_PATH.search(path) or _KERNEL_STEM.search(posixpath.basename(path)))


_UNDECIDED = (
    "holds GPU kernels that its changed lines show neither changed nor unchanged (analyze with "
    "--repo to read the whole files): "
)


def unclassified_files(
    sides: Sequence[FileSides], changes: Sequence[KernelChange], said: set[str] | None = None
) -> list:
    """Files read from their diff lines only that hold kernels (as far as those lines show) but
    that no change names: the diff alone does not say what their changed lines do. ``said``:
    files already named as not classified, for a kernel of theirs."""
    named = {r.path for c in changes for r in (c.old, c.new) if r is not None}
    named |= {c.path for c in changes} | (said or set())
    # a header changed beside CUDA/HIP sources of the same diff may hold their kernels (a
    # header-only kernel library's .h), though its changed lines need not show it
    gpu_dirs = {posixpath.dirname(f.patch.path) for f in sides if _gpu_suffix(f.patch.path)}
    out = []
    for f in sides:
        scans = [s for s in (f.old, f.new) if s is not None]
        path = f.patch.path
        if path in named or (f.patch.old_path or path) in named:
            continue
        if not f.patch.hunks or all(s.complete for s in scans):
            if f.patch.status == "renamed" and scans and not all(s.complete for s in scans):
                why = f"renamed from {f.patch.old_path}; its contents are not in the diff"
                out.append(UnclassifiedFile(path=path, why=why))
            continue
        if f.patch.status == "renamed":
            why = f"renamed from {f.patch.old_path}; the diff shows only its changed lines"
            out.append(UnclassifiedFile(path=path, why=why))
            continue
        visible = "\n".join(
            [t for h in f.patch.hunks for _, t in (*h.old_lines(), *h.new_lines())]
            + [h.section for h in f.patch.hunks]
        )
        has_kernels = any(s.kernels or s.launches for s in scans)
        gpu_suffix = _gpu_suffix(path)
        kind = source_kind(path) or "python"
        marked = _KERNEL_FILE.search(visible) or _MARKERS[kind].search(visible)
        beside = path.lower().endswith(_HEADERS) and posixpath.dirname(path) in gpu_dirs
        named_so = _named_for_kernels(path)
        if not (has_kernels or gpu_suffix or marked or beside or named_so):
            continue
        if has_kernels or gpu_suffix or marked:
            held = "holds GPU kernels"
        elif beside:
            held = "is a header beside CUDA/HIP sources of this diff and may hold their kernels"
        else:
            held = "is named like a file of GPU kernels and may hold some"
        out.append(
            UnclassifiedFile(
                path=path,
                why=f"{held}, but its changed lines cannot be classified from the diff "
                "alone (analyze with --repo to read the whole files)",
            )
        )
    return out


_HEADERS = (".h", ".hh", ".hpp", ".hxx")


def _gpu_suffix(path: str) -> bool:
    return path.lower().endswith((".cu", ".cuh", ".hip"))


# --------------------------------------------------------------------------- per-file kernels


def _first_line(change: KernelChange) -> int:
    ref = change.new or change.old
    return ref.line_start if ref else 0


def _unrecognised(change: KernelChange, sides: Sequence[FileSides]) -> KernelChange:
    """A kernel in an unrecognised language says so, with the decorator that marked it."""
    if change.language != UNRECOGNISED.name:
        return change
    decorators: list[str] = []
    for f in sides:
        for scan in (f.new, f.old):
            k = scan.kernel(change.name) if scan is not None else None
            if k is not None and k.path == change.path and not decorators:
                decorators = [d for d in k.decorators if kernel_like(d) or "." in d][:3]
    note = unrecognised_note(decorators)
    return change.model_copy(update={"notes": [note, *change.notes]})


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
