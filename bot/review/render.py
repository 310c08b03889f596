"""Verdict -> the markdown the bot posts (and the fuller job summary). Pure string work.

The comment follows the seed review's voice: the decision and one line of why, then the
conditions, each met / open / not run with its evidence, then what we are not asking for,
and the details (what changed, Part A counts, compiler decisions, per-shape results) folded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from bot.contracts.evidence import (
    AutotuneEvidence,
    CompilerEvidence,
    CompilerRow,
    Evidence,
    SweepEvidence,
)
from bot.contracts.review import Condition, PartATable, ReviewContext, Verdict
from bot.escape import md_code, md_text
from bot.review.toolchain import history_lines, toolchain_lines

STATE_ICONS = {"met": "✅ met", "open": "❌ open", "not_run": "⏸️ not run"}
DECISION_ICONS = {"approve": "✅", "approve_with_conditions": "🟡", "request_changes": "⛔"}


esc = md_text  # user text on a line of the comment: escaped, one line, code spans kept


def code(text: object) -> str:
    """Inline code for user text, delimited so that backticks inside cannot end it."""
    return md_code(text, max_chars=200)


def _short(sha: str) -> str:
    return sha[:7]


def _condition_block(c: Condition) -> list[str]:
    out = [f"{c.number}. **{c.title}** — {STATE_ICONS[c.state]}: {esc(c.summary)}"]
    for line in c.evidence:
        out.append(f"   - {esc(line)}")
    return out


def _changes_table(v: Verdict) -> list[str]:
    out = ["| kernel | change | old | new | old kernel |", "|---|---|---|---|---|"]
    for c in v.changes:
        if c.kind == "rewrite":
            kind = f"rewrite {c.old_language or '?'} → {c.new_language or '?'}"
        elif c.kind == "toolchain":
            before, after = c.old_version or "not pinned", c.new_version or "not pinned"
            kind = f"toolchain {code(before)} → {code(after)}"
        else:
            kind = c.kind
        kept = "—"
        if c.old_kernel_kept is True:
            kept = "kept" + (f" ({esc(c.kept_how)})" if c.kept_how else "")
        elif c.old_kernel_kept is False:
            kept = "deleted"
        old = "<br>".join(code(p) for p in c.old_paths) or "—"
        new = "<br>".join(code(p) for p in c.new_paths) or "—"
        name = esc(c.kernel) + ("" if c.mapped else " (not in policy)")
        if c.kind == "toolchain":
            name = f"{esc(c.kernel)} (every kernel)"
        out.append(f"| {name} | {kind} | {old} | {new} | {kept} |")
    return out


def _part_a(tables: Sequence[PartATable]) -> list[str]:
    out: list[str] = []
    for t in tables:
        out += [
            f"**{esc(t.kernel)}**",
            "",
            f"| measure | {esc(t.old_label)} | {esc(t.new_label)} |",
            "|---|---|---|",
        ]
        out += [f"| {esc(m)} | {esc(o)} | {esc(n)} |" for m, o, n in t.rows]
        out.append("")
    return out


def _cell(x: object) -> str:
    return "—" if x is None else esc(x)


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _occupancy_pct(text: str) -> float:
    m = re.search(r"\(([0-9.]+)%\)", text)
    return float(m.group(1)) if m else -1.0


def _compiler_rows(rows: Sequence[CompilerRow]) -> list[str]:
    """One row per compiled variant (the job summary)."""
    out = [
        "| kernel | side | target | config | regs/thread | spill bytes | shared bytes | occupancy | matrix instr | widest load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error:
            out.append(
                f"| {esc(r.kernel)} | {r.side} | {esc(r.target)} | {esc(r.config)} | failed: {esc(r.error)} ||||||"
            )
            continue
        load = f"{r.load_bits_max} bit" if r.load_bits_max else "—"
        out.append(
            f"| {esc(r.kernel)} | {r.side} | {esc(r.target)} | {esc(r.config)} | {_cell(r.regs_per_thread)} | "
            f"{_cell(r.spill_bytes)} | {_cell(r.shared_bytes)} | {_cell(r.occupancy)} | {_cell(r.matrix_instr)} | {load} |"
        )
    return out


def _compiler_folded(rows: Sequence[CompilerRow]) -> list[str]:
    """One row per kernel, side and target (the comment): how many variants, and the range of
    each column over them. A spill or a failure anywhere shows."""
    groups: dict[tuple[str, str, str], list[CompilerRow]] = {}
    for r in rows:
        groups.setdefault((r.kernel, r.side, r.target), []).append(r)
    out = [
        "| kernel | side | target | variants | regs/thread | spill bytes (max) | shared bytes | occupancy | matrix instr | widest load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (kernel, side, target), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "old", kv[0][2])
    ):
        ok = [r for r in rs if not r.error]
        errors = [r.error for r in rs if r.error]
        variants = str(len(rs)) if len(rs) > 1 else f"1: {esc(rs[0].config)}"
        if errors:
            variants += f" ({len(errors)} failed: {esc(errors[0])})"
        regs = [r.regs_per_thread for r in ok if r.regs_per_thread is not None]
        spills = [r.spill_bytes for r in ok if r.spill_bytes is not None]
        shared = [r.shared_bytes for r in ok if r.shared_bytes is not None]
        occ = sorted({r.occupancy for r in ok if r.occupancy}, key=_occupancy_pct)
        instrs = sorted({r.matrix_instr for r in ok if r.matrix_instr})
        loads = [r.load_bits_max for r in ok if r.load_bits_max]
        occupancy = (
            "—" if not occ else esc(occ[0]) if len(occ) == 1 else f"{esc(occ[0])} … {esc(occ[-1])}"
        )
        instr = (
            "—"
            if not instrs
            else ", ".join(esc(i) for i in instrs[:2])
            + (f" (+{len(instrs) - 2})" if len(instrs) > 2 else "")
        )
        out.append(
            f"| {esc(kernel)} | {side} | {esc(target)} | {variants} | "
            f"{_span(regs) if regs else '—'} | {max(spills) if spills else '—'} | "
            f"{_span(shared) if shared else '—'} | {occupancy} | {instr} | "
            f"{str(max(loads)) + ' bit' if loads else '—'} |"
        )
    return out


AUTOTUNE_LISTED = 2  # added / removed configs quoted per line; the rest are counted


def _count(a: AutotuneEvidence) -> int:
    return len(a.configs) + a.more_configs


def _quoted(labels: Sequence[str]) -> str:
    shown = ", ".join(code(x) for x in labels[:AUTOTUNE_LISTED])
    rest = len(labels) - AUTOTUNE_LISTED
    return shown + (f" (+{rest} more)" if rest > 0 else "")


def _autotune_extras(a: AutotuneEvidence) -> str:
    text = "; pruned at run time (`prune_configs_by`)" if a.pruned else ""
    if a.heuristics:
        text += f"; `@triton.heuristics` sets {esc(', '.join(a.heuristics))}"
    best = list(a.best.items())
    if best:
        text += "; best: " + ", ".join(f"{code(k)} → {code(v)}" for k, v in best[:2])
        text += f" (+{len(best) - 2} more keys)" if len(best) > 2 else ""
    return text


def _autotune_change(pair: dict[str, AutotuneEvidence]) -> str:
    """Old against new for one autotune list (``pair`` has one side or both): the counts, then
    what was added and removed, then what the new side (else the old) says besides."""
    old, new = pair.get("old"), pair.get("new")
    if old is None or new is None:
        (side, only), other = next(iter(pair.items())), "new" if new is None else "old"
        return f"{side} {_count(only)} (no autotuner on the {other} side)" + _autotune_extras(only)
    if (old.configs, old.more_configs) == (new.configs, new.more_configs):
        text = f"{_count(new)}, the same old and new"
    else:
        text = f"old {_count(old)} → new {_count(new)}"
        added = [c for c in new.configs if c not in old.configs]
        removed = [c for c in old.configs if c not in new.configs]
        text += f"; added: {_quoted(added)}" if added else ""
        text += f"; removed: {_quoted(removed)}" if removed else ""
    if old.key != new.key:
        text += f"; key ({esc(', '.join(old.key))}) → ({esc(', '.join(new.key))})"
    return text + _autotune_extras(new)


def _autotune(items: Sequence[AutotuneEvidence]) -> list[str]:
    """One line per kernel (per autotuned function where it has several): the live config
    lists of old and new, per group of targets that saw the same pair."""
    functions: dict[str, set[str]] = {}
    for a in items:
        functions.setdefault(a.kernel, set()).add(a.function)
    sides: dict[tuple[str, str], dict[str, dict[str, AutotuneEvidence]]] = {}
    for a in items:
        name = a.function if len(functions[a.kernel]) > 1 else ""
        for target in a.targets:
            sides.setdefault((a.kernel, name), {}).setdefault(target, {})[a.side] = a
    out = []
    for (kernel, function), per_target in sorted(sides.items()):
        groups: dict[str, tuple[dict[str, AutotuneEvidence], list[str]]] = {}
        for target, pair in sorted(per_target.items()):
            same = "|".join(
                pair[s].model_dump_json(exclude={"targets"}) if s in pair else ""
                for s in ("old", "new")
            )
            groups.setdefault(same, (pair, []))[1].append(target)
        name = esc(kernel) + (f" {code(function)}" if function else "")
        for pair, targets in groups.values():
            where = f" on {esc(', '.join(targets))}" if len(groups) > 1 else ""
            change = _autotune_change(pair)
            out.append(f"- {name}{where}: autotune configs, read on the runner: {change}")
    return out


def _compiler(ce: CompilerEvidence, *, full: bool) -> list[str]:
    out: list[str] = []
    if ce.flags:
        for f in ce.flags:
            where = f" ({code(f.path)}:{f.line})" if f.path and f.line else ""
            out.append(
                f"- **{f.severity}** {esc(f.kernel)} on {f.vendor} {esc(f.target)}: {esc(f.message)}{where}"
            )
        out.append("")
    if ce.autotune:
        out += [*_autotune(ce.autotune), ""]
    if ce.rows:
        if full:
            out += _compiler_rows(ce.rows)
        else:
            out += _compiler_folded(ce.rows)
            out += [
                "",
                "One row per kernel, side and target, with the range over its compiled "
                "variants (configs and specializations); the job summary has one row per variant.",
            ]
    return out


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _sweep_table(s: SweepEvidence) -> list[str]:
    out = [
        f"**{s.vendor}** on {esc(s.gpu)}"
        + (" (CPU timing: pipeline check only, not evidence)" if s.timing_kind == "cpu" else ""),
        "",
        "| kernel | shape | dtype | base µs | head µs | head/base [95% CI] | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for x in sorted(s.shapes, key=lambda x: (x.kernel, x.small_or_ragged, x.shape)):
        ci = (
            f" [{x.ci_low:.3f}, {x.ci_high:.3f}]"
            if x.ci_low is not None and x.ci_high is not None
            else ""
        )
        tag = " (small/ragged)" if x.small_or_ragged else ""
        b = "—" if x.base_us is None else f"{x.base_us:.2f}"
        h = "—" if x.head_us is None else f"{x.head_us:.2f}"
        out.append(
            f"| {esc(x.kernel)} | {'x'.join(map(str, x.shape))}{tag} | {esc(x.dtype)} | {b} | {h} | "
            f"{_ratio(x.ratio)}{ci} | {x.verdict} |"
        )
    return out


DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


def _mermaid(s: SweepEvidence, limit: int = 40) -> list[str]:
    """A bar per timed case; over ``limit`` cases, the ones furthest from 1.0, in table order."""
    timed = [x for x in s.shapes if x.ratio is not None and x.ratio > 0]
    if not timed:
        return []
    total = len(timed)
    if total > limit:
        keep = set(sorted(range(len(timed)), key=lambda i: -abs(math.log(timed[i].ratio)))[:limit])
        timed = [x for i, x in enumerate(timed) if i in keep]

    def label(x) -> str:
        kernel = re.sub(r"[^A-Za-z0-9_x.-]", "", x.kernel)[:16]
        dtype = re.sub(r"[^A-Za-z0-9]", "", DTYPE_SHORT.get(x.dtype, x.dtype))[:8]
        return f'"{kernel} {"x".join(map(str, x.shape))} {dtype}"'

    labels = ", ".join(label(x) for x in timed)
    values = ", ".join(f"{x.ratio:.3f}" for x in timed)
    lo = min(0.9, *(x.ratio for x in timed if x.ratio)) - 0.02
    hi = max(1.1, *(x.ratio for x in timed if x.ratio)) + 0.02
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "head / base time, {s.vendor} (1.0 = same; lower is faster)'
        + (f"; the {limit} of {total} furthest from 1.0" if total > limit else "")
        + '"',
        f"    x-axis [{labels}]",
        f'    y-axis "ratio" {lo:.2f} --> {hi:.2f}',
        f"    bar [{values}]",
        "```",
    ]


def _details(summary: str, body: list[str]) -> list[str]:
    if not body:
        return []
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def render_comment(
    verdict: Verdict,
    ctx: ReviewContext,
    evidence: Evidence | None = None,
    part_a: Sequence[PartATable] = (),
    *,
    full: bool = False,
) -> str:
    """The review as markdown, whole. ``full`` adds everything (the job summary: one compiler
    row per variant); cutting the comment to GitHub's limit is ``bot.github.sticky.fit_body``'s."""
    evidence = evidence or Evidence()
    lines = [f"## {DECISION_ICONS[verdict.decision]} Kernel review: {verdict.title}", ""]
    lines.append(f"**{verdict.title}.** {esc(verdict.why)}")
    lines.append("")
    meta = [f"head {code(_short(ctx.head_sha))} against base {code(_short(ctx.base_sha))}"]
    if ctx.policy_source:
        meta.append(f"policy {code(ctx.policy_source)}")
    dep = f"deployment {code(ctx.deployment)}"
    if ctx.first_call_budget_ms:
        dep += f" (first-call budget {ctx.first_call_budget_ms:.0f} ms)"
    meta.append(dep)
    if ctx.vendors:
        meta.append("vendors " + ", ".join(ctx.vendors))
    lines.append("<sub>Reviewed " + " · ".join(meta) + "</sub>")
    if ctx.note:
        lines += ["", f"> {esc(ctx.note)}"]
    lines.append("")
    if verdict.no_kernel_changes:
        return "\n".join(lines)

    lines += ["### What changed", "", *_changes_table(verdict), ""]
    moved = toolchain_lines(verdict.changes, evidence, ctx.owners)
    if moved:
        lines += ["### What the toolchain change moved", "", *(f"- {esc(x)}" for x in moved), ""]
    history = history_lines(evidence)
    if history:
        lines += ["### On the default branch", "", *(f"- {esc(x)}" for x in history), ""]
    lines += ["### Before merge", ""]
    for c in verdict.conditions:
        lines += _condition_block(c)
    lines.append("")
    if verdict.not_asking_for:
        lines += ["### Not asking for", ""]
        lines += [f"- {esc(x)}" for x in verdict.not_asking_for]
        lines.append("")

    per_shape: list[str] = []
    for s in evidence.sweeps:
        per_shape += [*_sweep_table(s), ""]
        per_shape += _mermaid(s)
    lines += _details("Per-shape results", per_shape)
    lines += _details("What the rewrite deleted (code counts, Part A)", _part_a(part_a))
    if evidence.compiler is not None:
        lines += _details(
            "What the compiler decided (Part C)", _compiler(evidence.compiler, full=full)
        )
    not_run = [
        f"- {n.check}{' on ' + n.vendor if n.vendor else ''}: {esc(n.reason)}"
        for n in evidence.not_run
    ]
    lines += _details("Not run", not_run)
    return "\n".join(lines).rstrip() + "\n"
