"""Adapters from the diff analysis to what the verdict and the renderer take. Pure."""

from __future__ import annotations

from bot.analysis.languages import language_named
from bot.analysis.model import Analysis, KernelChange
from bot.contracts.review import ChangeLine, PartATable

_LANG_LABEL = {"cuda": "CUDA", "hip": "HIP"}


def _label(language: str | None) -> str | None:
    if language is None:
        return None
    parts = []
    for part in language.split("+"):
        found = language_named(part)
        parts.append(found.display if found is not None else _LANG_LABEL.get(part, part))
    return " + ".join(parts)


def _not_compiled(change: KernelChange) -> str:
    """Why the compiler report does not cover the kernel's language ("" when it does)."""
    found = language_named(change.language)
    if found is None or found.compiler_gap is None or change.kind == "deleted":
        return ""
    return f"{found.display}: {found.compiler_gap}"


def _paths(change: KernelChange) -> tuple[tuple[str, ...], tuple[str, ...]]:
    old = [r.path for r in ([change.old] if change.old else []) + list(change.old_variants)]
    new = [change.new.path] if change.new else []
    return tuple(dict.fromkeys(old)), tuple(dict.fromkeys(new))


def _functions(change: KernelChange) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The kernel functions a change names: old (a rewrite's replaced C++ kernels too), new; a
    launch or tuning change read without either side's kernel, by its kernel's name on both."""
    old = [r.name for r in ([change.old] if change.old else []) + list(change.old_variants)]
    new = [change.new.name] if change.new else []
    if not old and not new and change.kind in ("body", "tuning", "launch"):
        both = [change.name] if change.name.isidentifier() else []
        return tuple(both), tuple(both)
    return tuple(dict.fromkeys(old)), tuple(new)


def change_lines(analysis: Analysis) -> list[ChangeLine]:
    """One line per kernel change, named by the policy kernel that covers it when there is one;
    changes that read alike in the review (kernel, kind, paths) are one line naming all their
    functions."""
    lines: list[ChangeLine] = []
    seen: dict[tuple[str, str, tuple[str, ...], tuple[str, ...]], int] = {}
    for c in analysis.changes:
        if c.kind == "moved":  # listed in analysis.moved, never among its changes
            continue
        old_paths, new_paths = _paths(c)
        old_functions, new_functions = _functions(c)
        name = c.policy_kernels[0] if c.policy_kernels else c.name
        key = (name, c.kind, old_paths, new_paths)
        if key in seen:
            line = lines[seen[key]]
            lines[seen[key]] = line.model_copy(
                update={
                    "old_functions": tuple(dict.fromkeys(line.old_functions + old_functions)),
                    "new_functions": tuple(dict.fromkeys(line.new_functions + new_functions)),
                }
            )
            continue
        seen[key] = len(lines)
        old_lang = c.old_language or (c.old.language if c.old else None)
        new_lang = c.new.language if c.new else (None if c.old else c.language)
        detail = "; ".join(c.notes)
        lines.append(
            ChangeLine(
                kernel=name,
                kind=c.kind,
                old_language=_label(old_lang),
                new_language=_label(new_lang),
                old_paths=old_paths,
                new_paths=new_paths,
                old_kernel_kept=c.old_kernel_kept,
                mapped=bool(c.policy_kernels),
                detail=detail,
                branches=tuple(f"{b.path}:{b.line} ({b.where}): {b.note}" for b in c.branches),
                new_lines=(c.new.line_start, c.new.line_end) if c.new else None,
                findings=tuple(c.findings),
                not_compiled=_not_compiled(c),
                old_functions=old_functions,
                new_functions=new_functions,
            )
        )
    return lines + list(analysis.toolchain)


def part_a_tables(analysis: Analysis) -> list[PartATable]:
    tables = []
    for c in analysis.changes:
        if c.kind != "rewrite" or c.part_a is None:
            continue
        name = c.policy_kernels[0] if c.policy_kernels else c.name
        old, new = c.part_a.old, c.part_a.new
        tables.append(
            PartATable(
                kernel=name,
                old_label=_label(old.language) or "old",
                new_label=_label(new.language) or "new",
                rows=tuple(c.part_a.rows()),
                old_lines=old.kernel_body_lines + old.host_wrapper_lines,
                new_lines=new.kernel_body_lines + new.host_wrapper_lines,
                old_files=old.source_files,
                new_files=new.source_files,
                new_vendors=tuple(new.vendors_covered),
                old_lines_one_vendor=bool(c.part_a.old_twins),
            )
        )
    return tables
