"""``kernel-review analyze``: the kernel changes in a diff, as a table or as JSON.

kernel-review analyze --diff FILE|-            [--policy PATH] [--json]
kernel-review analyze --repo PATH --base REV --head REV [--policy PATH] [--json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.analysis.diff import MAX_DIFF_BYTES
from bot.analysis.model import Analysis, KernelChange, KernelRef, TritonConfig
from bot.errors import DiffError
from bot.outputs import plural

_TABLE_WIDTH = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="detect the GPU kernel changes in a diff",
        description=(
            "Find the Triton, CUDA and HIP kernels a diff touches and classify each change "
            "(rewrite, tuning, body, launch, new, deleted); for a C++ -> Triton rewrite, count "
            "the code of both (Part A)."
        ),
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--diff", metavar="FILE", help="a unified diff file, or - for stdin")
    source.add_argument("--repo", metavar="PATH", help="a git repository (with --base, --head)")
    p.add_argument("--base", metavar="REV", help="base revision (with --repo)")
    p.add_argument("--head", metavar="REV", help="head revision (with --repo)")
    p.add_argument(
        "--policy",
        metavar="PATH",
        help="policy TOML file or repository folder (default with --repo: the policy at --base)",
    )
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    policy = _policy(args.policy) if args.policy else None
    if args.diff is not None:
        if args.base or args.head:
            raise DiffError(
                "--base and --head go with --repo, not --diff",
                hint="either `--diff FILE` or `--repo PATH --base REV --head REV`",
            )
        from bot.analysis.classify import analyze_diff

        analysis = analyze_diff(_read_diff(args.diff), policy=policy)
    else:
        if not args.base or not args.head:
            raise DiffError(
                "--repo needs both --base and --head",
                hint="for example: --repo . --base origin/main --head HEAD",
            )
        from bot.analysis.repo import analyze_repo
        from bot.gitutil import require_repo

        require_repo(args.repo)

        analysis = analyze_repo(args.repo, args.base, args.head, policy=policy)
    if args.json:
        print(analysis.model_dump_json(indent=2))
    else:
        print(render_table(analysis))
    return 0


def _policy(path_text: str):
    from bot.policy.load import load_policy, parse_policy, read_policy_file

    path = Path(path_text)
    if path.is_dir():
        return load_policy(path).policy
    source = read_policy_file(path, display=path_text)
    return parse_policy(source.text, source.display, table=source.table)


def _read_diff(name: str) -> str:
    if name == "-":
        raw = sys.stdin.buffer.read(MAX_DIFF_BYTES + 1)
    else:
        path = Path(name)
        if not path.is_file():
            raise DiffError(f"--diff {name}: no such file", hint="pass a file made by `git diff`")
        size = path.stat().st_size
        if size > MAX_DIFF_BYTES:
            raise DiffError(
                f"--diff {name} is {size / 2**20:.1f} MiB, over the "
                f"{MAX_DIFF_BYTES / 2**20:.0f} MiB cap",
                hint="review a smaller range of commits, or split the pull request",
            )
        with path.open("rb") as handle:
            raw = handle.read(MAX_DIFF_BYTES + 1)
    if len(raw) > MAX_DIFF_BYTES:
        raise DiffError(
            f"the diff on stdin is over the {MAX_DIFF_BYTES / 2**20:.0f} MiB cap",
            hint="review a smaller range of commits, or split the pull request",
        )
    return raw.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------ the table


def _where(ref: KernelRef | None, *, named: bool = False) -> str:
    if ref is None:
        return "-"
    where = f"{ref.path}:{ref.line_start}-{ref.line_end}"
    return f"{where} ({ref.name})" if named else where


def _languages(c: KernelChange) -> str:
    if c.kind == "rewrite":
        return f"{c.old_language} -> {c.language}"
    return c.language


def _config_lines(old: list[TritonConfig] | None, new: list[TritonConfig] | None) -> list[str]:
    old_labels = [c.label() for c in old or []]
    new_labels = [c.label() for c in new or []]
    lines = [f"configs: {len(old_labels)} -> {len(new_labels)}"]
    lines += [f"  - {x}" for x in old_labels if x not in new_labels]
    lines += [f"  + {x}" for x in new_labels if x not in old_labels]
    same = sum(1 for x in new_labels if x in old_labels)
    if same:
        lines.append(f"  ({same} unchanged)")
    return lines


_COMPUTED = "computed at import; read on the GPU runner"


def _side(c: KernelChange, side: str) -> str:
    """One side of a config list: its length, or that it is built at import time."""
    if c.configs_old_computed if side == "old" else c.configs_new_computed:
        return _COMPUTED
    return str(len((c.configs_old if side == "old" else c.configs_new) or []))


def _details(c: KernelChange) -> list[str]:
    out = []
    if c.kind == "rewrite":
        olds = [c.old, *c.old_variants] if c.old else []
        named = any(r.name != c.name for r in olds)
        out.append("old: " + ", ".join(_where(r, named=named) for r in olds))
        out += [f"why: {w}" for w in c.evidence]
    elif c.old and c.new and (c.old.path != c.new.path):
        out.append(f"was: {_where(c.old)}")
    shows_configs = c.kind not in ("new", "rewrite", "deleted")
    computed = c.configs_old_computed or c.configs_new_computed
    if computed:
        out.append(f"configs: {_side(c, 'old')} -> {_side(c, 'new')}")
    elif shows_configs and (c.configs_old or c.configs_new) and c.configs_old != c.configs_new:
        out += _config_lines(c.configs_old, c.configs_new)
    if c.via_helpers:
        out.append("through changed helpers: " + ", ".join(c.via_helpers))
    out += [f"host: {h}" for h in c.host_changes]
    out += [f"{b.kind} branch: {b.path}:{b.line} in {b.where}: {b.note}" for b in c.branches]
    for key in sorted(set(c.tuning_old) | set(c.tuning_new)):
        out.append(f"{key}: {c.tuning_old.get(key, '-')} -> {c.tuning_new.get(key, '-')}")
    out += [f"launch was: {x}" for x in c.launches_old]
    out += [f"launch now: {x}" for x in c.launches_new]
    out += c.notes
    out += [f"finding ({f.kind}) {f.path}:{f.line}: {f.message}" for f in c.findings]
    if c.part_a is not None:
        out.append("part A: see below")
    return out


def render_table(analysis: Analysis) -> str:
    """The analysis as plain text for a terminal."""
    n = len(analysis.changes)
    head = f"{plural(n, 'kernel change')} in {plural(analysis.files_seen, 'changed file')}"
    lines = [head]
    if analysis.from_context_only:
        lines.append(
            "from diff context only: some kernels were read from the lines the diff shows, not "
            "whole files (use --repo for whole files)"
        )
    if analysis.changes:
        rows = [("KIND", "KERNEL", "LANGUAGE", "WHERE", "POLICY")]
        for c in analysis.changes:
            rows.append(
                (
                    c.kind,
                    c.name,
                    _languages(c),
                    _where(c.new or c.old) if (c.new or c.old) else c.path,
                    ", ".join(c.policy_kernels) or "-",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines.append("")
        for index, row in enumerate(rows):
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
            if index:
                lines += ["    " + d for d in _details(analysis.changes[index - 1])]
    for c in analysis.changes:
        if c.part_a is None:
            continue
        table = c.part_a
        lines += ["", f"Part A: {c.name} ({table.old.language} -> {table.new.language})"]
        cells = [("Measure", table.old.language, table.new.language), *table.rows()]
        widths = [max(len(r[i]) for r in cells) for i in range(3)]
        for measure in cells:
            lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(measure)))
        lines += ["  " + note for note in table.notes]
    if analysis.moved:
        lines += ["", f"Moved, code unchanged ({len(analysis.moved)}):"]
        for c in analysis.moved:
            lines.append(f"  {c.name}: {c.moved_from or '-'} -> {c.path}")
            lines += ["    " + d for d in _details(c) if not d.startswith(("was: ", "moved from"))]
    if analysis.toolchain:
        lines += [
            "",
            f"Toolchain changes ({len(analysis.toolchain)}): every policy kernel is affected",
        ]
        for t in analysis.toolchain:
            where = (t.new_paths or t.old_paths or ("?",))[0]
            lines.append(
                f"  {t.kernel}: {t.old_version or 'not pinned'} -> {t.new_version or 'not pinned'}"
                f"  ({where}{': ' + t.detail if t.detail else ''})"
            )
    if analysis.unclassified:
        lines += ["", "Kernel files the diff alone does not classify:"]
        lines += [f"  {u.path}: {u.why}" for u in analysis.unclassified]
    if analysis.skipped:
        lines += ["", f"Skipped ({len(analysis.skipped)}):"]
        lines += [f"  {s.path}: {s.reason}" for s in analysis.skipped[:50]]
        if len(analysis.skipped) > 50:
            lines.append(f"  ... and {len(analysis.skipped) - 50} more")
    lines += [f"note: {x}" for x in analysis.notes]
    if analysis.policy_kernels:
        lines += ["", "Kernels to measure: " + ", ".join(analysis.policy_kernels)]
    return "\n".join(lines)
