"""Verdict -> the markdown the bot posts (and the fuller job summary). Pure string work.

The comment follows the seed review's voice: the decision and one line of why, then the
conditions, each met / open / not run with its evidence, then what we are not asking for,
and the details (what changed, Part A counts, compiler decisions, per-shape results) folded.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from bot.contracts.accept import AcceptedLine
from bot.contracts.evidence import (
    FAILED_VERDICTS,
    AutotuneEvidence,
    CompilerEvidence,
    CompilerRow,
    Evidence,
    ShapeLine,
    SmemTraffic,
    SweepEvidence,
    TritonLayout,
)
from bot.contracts.review import ChangeLine, Condition, PartATable, ReviewContext, Verdict
from bot.escape import md_code, md_text
from bot.outputs import plural
from bot.review import chart
from bot.review.chart import dtype_short
from bot.review.launched import launch_lines, launch_summary
from bot.review.served import collapsed
from bot.review.toolchain import history_lines, toolchain_lines
from bot.review.trade import OVER_ADVICE, price_state
from bot.words import (
    and_list,
    language,
    number,
    percent,
    speed,
    speed_within,
)

STATE_ICONS = {"met": "✅ met", "open": "❌ open", "not_run": "⏸️ not run"}
STATE_MARKS = {"met": "✅", "open": "❌", "not_run": "⏸️"}
DECISION_ICONS = {"approve": "✅", "approve_with_conditions": "🟡", "request_changes": "⛔"}


esc = md_text  # user text on a line of the comment: escaped, one line, code spans kept


def code(text: object) -> str:
    """Inline code for user text, delimited so that backticks inside cannot end it."""
    return md_code(text, max_chars=200)


def _short(sha: str) -> str:
    return sha[:7]


def _condition_block(c: Condition, *, full: bool) -> list[str]:
    """A condition and its evidence; its summary, which the first screen has (in the job
    summary too), only where it has no evidence to show, on the title's line."""
    summary = "" if c.evidence else f": {esc(c.summary)}"
    return [
        f"{c.number}. **{c.title}** — {STATE_ICONS[c.state]}{summary}",
        *_evidence(c, full=full),
    ]


def _language(name: str | None) -> str:
    """A language as the review writes it (``words.language``), escaped; "?" when unknown."""
    return esc(language(name)) if name else "?"


def _changes_table(v: Verdict, kernels: Sequence[str] = ()) -> list[str]:
    """What changed, one row per change; a toolchain change names the policy's ``kernels``."""
    out = ["| kernel | change | old | new | old kernel |", "|---|---|---|---|---|"]
    for c in v.changes:
        if c.kind == "rewrite":
            kind = f"rewrite {_language(c.old_language)} → {_language(c.new_language)}"
        elif c.kind == "toolchain":
            before, after = c.old_version or "not pinned", c.new_version or "not pinned"
            kind = f"toolchain {code(before)} → {code(after)}"
        else:
            language = c.new_language or c.old_language
            # Triton, CUDA and HIP go without saying; any other language is named
            named = language and language.lower() not in ("triton", "cuda", "hip", "cuda + hip")
            kind = f"{c.kind} ({esc(language)})" if named else c.kind
        kept = "—"
        if c.old_kernel_kept is True:
            kept = "kept" + (f" ({esc(c.kept_how)})" if c.kept_how else "")
        elif c.old_kernel_kept is False:
            kept = "deleted"
        old = "<br>".join(code(p) for p in c.old_paths) or "—"
        new = "<br>".join(code(p) for p in c.new_paths) or "—"
        name = esc(c.kernel) + ("" if c.mapped else " (not in policy)")
        if c.kind == "toolchain":
            name = f"{esc(c.kernel)} ({esc(', '.join(kernels)) if kernels else 'every kernel'})"
        out.append(f"| {name} | {kind} | {old} | {new} | {kept} |")
    return out


def _findings(v: Verdict) -> list[str]:
    """What the changed code does that a reviewer should hear about (its own section)."""
    rows = [
        f"- **{esc(c.kernel)}**"
        + ("" if f"{f.path}:{f.line}" in f.message else f" ({code(f'{f.path}:{f.line}')})")
        + f": {esc(f.message)}"  # the place once: a message may say it already
        for c in v.changes
        for f in c.findings
    ]
    return ["### In the changed code", "", *rows, ""] if rows else []


def _toolchain(v: Verdict, evidence: Evidence, ctx: ReviewContext) -> list[str]:
    """What a toolchain change moved, and the default branch's history (open sections)."""
    out: list[str] = []
    moved = toolchain_lines(v.changes, evidence, ctx.owners, ctx.kernels)
    if moved:
        out += ["### What the toolchain change moved", "", *(f"- {esc(x)}" for x in moved), ""]
    history = history_lines(evidence)
    if history:
        out += ["### On the default branch", "", *(f"- {esc(x)}" for x in history), ""]
    return out


def _part_a(tables: Sequence[PartATable], changes: Sequence[ChangeLine]) -> list[str]:
    """The code counts of the rewrites this pull request makes, one column per kernel: old →
    new, one value where the two agree."""
    rewritten = {c.kernel for c in changes if c.kind == "rewrite"}
    tables = [t for t in tables if t.kernel in rewritten]
    if not tables:
        return []
    measures = list(dict.fromkeys(m for t in tables for m, _, _ in t.rows))
    cells = {(t.kernel, m): o if o == n else f"{o} → {n}" for t in tables for m, o, n in t.rows}
    head = [f"{esc(t.kernel)}: {esc(t.old_label)} → {esc(t.new_label)}" for t in tables]
    out = [f"| measure | {' | '.join(head)} |", "|---" * (len(tables) + 1) + "|"]
    for m in measures:
        row = [esc(cells.get((t.kernel, m), "—")) for t in tables]
        out.append(f"| {esc(m)} | {' | '.join(row)} |")
    return out


def _cell(x: object) -> str:
    if isinstance(x, int | float) and not isinstance(x, bool):
        return number(x)
    return "—" if x is None else esc(x)


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return number(lo) if lo == hi else f"{number(lo)}–{number(hi)}"


def _occupancy_span(low: CompilerRow, high: CompilerRow) -> str:
    """The lowest and highest occupancy: "8–20 warps/SM (12–31%)" where both are counted in
    one unit."""
    a, b = low.occupancy_fraction, high.occupancy_fraction
    resident = (low.occupancy_resident, high.occupancy_resident)
    if (
        a is not None
        and b is not None
        and None not in resident
        and low.occupancy_unit
        and (low.occupancy_unit == high.occupancy_unit)
    ):
        return (
            f"{resident[0]}–{resident[1]} {esc(low.occupancy_unit)} ({a * 100:.0f}–{b * 100:.0f}%)"
        )
    return f"{esc(low.occupancy or '')} … {esc(high.occupancy or '')}"


SHAPES_LISTED = 3  # served shapes named per compiled variant; the rest are counted


def _variant_shapes(r: CompilerRow) -> str:
    shown = ", ".join(esc(x) for x in r.shapes[:SHAPES_LISTED])
    rest = len(r.shapes) - SHAPES_LISTED
    return (shown + (f" (+{rest} more)" if rest > 0 else "")) or "—"


def _compiler_rows(rows: Sequence[CompilerRow]) -> list[str]:
    """One row per compiled variant, config and specialization (the job summary)."""
    out = [
        "| kernel | side | target | config | specialization | served shapes | regs/thread | spill bytes | shared bytes | occupancy | matrix instr | widest load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        head = (
            f"| {esc(r.kernel)} | {r.side} | {esc(r.target)} | {esc(r.config)} | "
            f"{_cell(r.specialization or None)} | {_variant_shapes(r)} |"
        )
        if r.error:
            out.append(f"{head} failed: {esc(r.error)} ||||||")
            continue
        load = f"{number(r.load_bits_max)} bit" if r.load_bits_max else "—"
        out.append(
            f"{head} {_cell(r.regs_per_thread)} | {_cell(r.spill_bytes)} | {_cell(r.shared_bytes)} | "
            f"{_cell(r.occupancy)} | {_cell(r.matrix_instr)} | {load} |"
        )
    return out


def _variant_cells(rs: Sequence[CompilerRow]) -> tuple[str, ...]:
    """The compiled variants of one kernel, side and target in the comment's columns: how many
    (and how many failed), then the range of each measure over them. A spill shows its max."""
    ok = [r for r in rs if not r.error]
    errors = [r.error for r in rs if r.error]
    variants = str(len(rs)) if len(rs) > 1 else f"1: {esc(rs[0].config)}"
    specs = {r.specialization for r in rs if r.specialization}
    if len(specs) > 1:
        variants += f" ({len(specs)} specializations)"
    if errors:
        variants += f" ({len(errors)} failed: {esc(errors[0])})"
    regs = [r.regs_per_thread for r in ok if r.regs_per_thread is not None]
    spills = [r.spill_bytes for r in ok if r.spill_bytes is not None]
    shared = [r.shared_bytes for r in ok if r.shared_bytes is not None]
    occ = sorted(
        {r.occupancy: r for r in ok if r.occupancy}.values(),
        key=lambda r: -1.0 if r.occupancy_fraction is None else r.occupancy_fraction,
    )
    loads = [r.load_bits_max for r in ok if r.load_bits_max]
    occupancy = (
        "—"
        if not occ
        else esc(occ[0].occupancy or "")
        if len(occ) == 1
        else _occupancy_span(occ[0], occ[-1])
    )
    return (
        variants,
        _span(regs) if regs else "—",
        number(max(spills)) if spills else "—",
        _span(shared) if shared else "—",
        occupancy,
        _span(loads) if loads else "—",
    )


_MEASURES = (
    "variants",
    "regs/thread",
    "spill bytes (max)",
    "shared bytes",
    "occupancy",
    "widest load (bits)",
)


def _compiler_changes(rows: Sequence[CompilerRow]) -> list[str]:
    """What the compiler decided differently, a line per kernel and the targets where it reads
    the same (the comment): each measure's range over the compiled variants that differs old →
    new, and the layouts where both sides are Triton; where one side compiled alone, only its
    name. The job summary has every variant."""
    groups: dict[tuple[str, str], dict[str, list[CompilerRow]]] = {}
    for r in rows:
        groups.setdefault((r.kernel, r.target), {}).setdefault(r.side, []).append(r)
    said: dict[tuple[str, str], list[str]] = {}  # (kernel, what) -> the targets it holds on
    alone: dict[str, dict[str, list[str]]] = {}  # side -> kernel -> the targets only it has
    for (kernel, target), sides in sorted(groups.items()):
        old, new = (_variant_cells(sides[s]) if s in sides else None for s in ("old", "new"))
        if old is not None and new is not None:
            keys = [{_layout_key(x) for r in sides[s] for x in r.layouts} for s in ("old", "new")]
            moved = [
                f"{name} {o} → {n}"
                for name, o, n in zip(_MEASURES, old, new, strict=True)
                if o != n and name != "variants"
            ]
            if keys[0] and keys[1] and keys[0] != keys[1]:
                added, gone = len(keys[1] - keys[0]), len(keys[0] - keys[1])
                moved.append(f"layouts changed ({added} new, {gone} gone)")
            if not moved:  # compiled the same: nothing to say
                continue
            text = "; ".join(moved)
        else:
            alone.setdefault("old" if new is None else "new", {}).setdefault(kernel, []).append(
                target
            )
            text = ""
        errors = [r.error for r in sides.get("new", []) if r.error]
        if errors:
            failed = (
                f"{len(errors)} of {len(sides['new'])} variants failed to compile ({errors[0]})"
            )
            text = f"{text}; {failed}" if text else failed
        if text:
            said.setdefault((kernel, text), []).append(target)
    out = [f"- {esc(k)} on {esc(', '.join(t))}: {esc(text)}" for (k, text), t in said.items()]
    for side, kernels in sorted(alone.items()):
        targets: dict[str, list[str]] = {}  # the targets -> the kernels only one side has there
        for k, t in kernels.items():
            targets.setdefault(", ".join(t), []).append(k)
        where = "; ".join(f"{esc(', '.join(k))} on {esc(t)}" for t, k in targets.items())
        out.append(f"- {side} side only, nothing to compare: {where}")
    return out


# ---- layouts the compiler chose (Part C-1): their own section of the compiler details

_ROLE_ORDER = {"dot": 0, "reduce": 1, "load": 2, "store": 3}
_ATTRS = (
    ("sizePerThread", "size_per_thread"),
    ("threadsPerWarp", "threads_per_warp"),
    ("warpsPerCTA", "warps_per_cta"),
    ("order", "order"),
    ("instrShape", "instr_shape"),
)


def _dims(v: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, v)) + "]"


def _reduce_warps(x: TritonLayout) -> int:
    """Warps one reduction along the layout's axis spans (1 for anything else)."""
    if x.role != "reduce" or x.axis is None or x.axis >= len(x.warps_per_cta):
        return 1
    return x.warps_per_cta[x.axis]


def _folded_layouts(rows: Sequence[CompilerRow], keys: set[str] | None = None) -> str:
    """The layouts of ``rows`` (those whose role-free text is in ``keys``, when given), one
    entry per layout kind and role set: an attribute that is the same in all of them is written
    once, one that varies over configs lists its values."""
    kinds: dict[tuple[str, str], tuple[set[str], list[TritonLayout], set[str]]] = {}
    for r in rows:
        for x in r.layouts:
            if keys is not None and _layout_key(x) not in keys:
                continue
            roles, found, configs = kinds.setdefault((x.kind, x.version), (set(), [], set()))
            roles.add(x.role)
            found.append(x)
            configs.add(r.config)
    total = len({r.config for r in rows})
    parts = []
    for (kind, version), (roles, found, configs) in sorted(
        kinds.items(), key=lambda kv: min(_ROLE_ORDER[r] for r in kv[1][0])
    ):
        text = kind + (f" v{version}" if version else "")
        for name, attr in _ATTRS:
            values = sorted({getattr(x, attr) for x in found if getattr(x, attr)})
            if values:
                text += f" {name} " + " | ".join(_dims(v) for v in values)
        role = "/".join(sorted(roles, key=_ROLE_ORDER.__getitem__))
        used = f"{len(configs)} of {total} variants" if total > 1 else "its one variant"
        spans = max(_reduce_warps(x) for x in found)
        extra = (
            f"; a reduction spans up to {spans} warps, so it meets in shared memory"
            if spans > 1
            else ""
        )
        parts.append(f"{role} `{text}` ({used}{extra})")
    return "; ".join(parts)


def _layout_key(x: TritonLayout) -> str:
    return x.model_copy(update={"role": "load", "shape": (), "axis": None}).text()


def _layouts(rows: Sequence[CompilerRow]) -> list[str]:
    """One line per Triton kernel and the targets where it says the same: the layouts of the
    new side, or, where the old side is Triton too, what changed (the same layouts get one short
    line)."""
    groups: dict[tuple[str, str], dict[str, list[CompilerRow]]] = {}
    for r in rows:
        if r.layouts:
            groups.setdefault((r.kernel, r.target), {}).setdefault(r.side, []).append(r)
    said: dict[tuple[str, str], list[str]] = {}  # (kernel, what) -> the targets it holds on
    for (kernel, target), sides in sorted(groups.items()):
        old, new = sides.get("old", []), sides.get("new", [])
        old_keys = {_layout_key(x) for r in old for x in r.layouts}
        new_keys = {_layout_key(x) for r in new for x in r.layouts}
        if not old:
            text = f", new: {_folded_layouts(new)}"
        elif not new:
            text = f", old only: {_folded_layouts(old)}"
        elif old_keys == new_keys:
            text = f": the same layouts old and new ({len(new_keys)} distinct)"
        else:
            text = f": distinct layouts {len(old_keys)} old → {len(new_keys)} new"
            if new_keys - old_keys:
                text += f"; new: {_folded_layouts(new, new_keys - old_keys)}"
            if old_keys - new_keys:
                text += f"; gone: {_folded_layouts(old, old_keys - new_keys)}"
        said.setdefault((kernel, text), []).append(target)
    if not said:
        return []
    out = [
        f"- {esc(kernel)} on {esc(', '.join(targets))}{text}"
        for (kernel, text), targets in said.items()
    ]
    head = "**Layouts the compiler chose** (Triton GPU IR; a warp is a wavefront on AMD; C-1):"
    return [head, "", *out, ""]


def _layout_rows(rows: Sequence[CompilerRow]) -> list[str]:
    """Every Triton variant's layouts (the job summary)."""
    out = ["| kernel | side | target | config | layouts |", "|---|---|---|---|---|"]
    for r in rows:
        if r.layouts:
            cells = "<br>".join(
                f"{x.role} {'x'.join(map(str, x.shape))}: {code(x.text())}"
                + (f" (reduction over {_reduce_warps(x)} warps)" if _reduce_warps(x) > 1 else "")
                for x in r.layouts
            )
            out.append(
                f"| {esc(r.kernel)} | {r.side} | {esc(r.target)} | {esc(r.config)} | {cells} |"
            )
    return [*out, ""] if len(out) > 2 else []


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


def _autotune_change(pair: dict[str, AutotuneEvidence], *, full: bool) -> str:
    """Old against new for one autotune list (``pair`` has one side or both): the counts, then
    what was added and removed (quoted in the job summary, ``full``; counted in the comment),
    then what the new side (else the old) says besides."""
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
        if full:
            text += f"; added: {_quoted(added)}" if added else ""
            text += f"; removed: {_quoted(removed)}" if removed else ""
        elif (added or removed) and not (old.more_configs or new.more_configs):
            text += f" ({len(added)} added, {len(removed)} removed)"
    if old.key != new.key:
        text += f"; key ({esc(', '.join(old.key))}) → ({esc(', '.join(new.key))})"
    return text + _autotune_extras(new)


def _unchanged(pair: dict[str, AutotuneEvidence]) -> bool:
    """Both sides' lists and keys alike, and nothing more to say of the new one."""
    old, new = pair.get("old"), pair.get("new")
    if old is None or new is None:
        return False
    same = (old.configs, old.more_configs, old.key) == (new.configs, new.more_configs, new.key)
    return same and not _autotune_extras(new)


def _autotune(items: Sequence[AutotuneEvidence], *, full: bool) -> list[str]:
    """One line per kernel (per autotuned function where it has several): the live config
    lists of old and new, per group of targets that saw the same pair; in the comment (not
    ``full``), only the lists that changed."""
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
            if not full and _unchanged(pair):
                continue
            where = f" on {esc(', '.join(targets))}" if len(groups) > 1 else ""
            change = _autotune_change(pair, full=full)
            out.append(f"- {name}{where}: autotune configs, read on the runner: {change}")
    return out


def _compiler(
    ce: CompilerEvidence, *, full: bool, conditions: Collection[tuple[str, str]] = ()
) -> list[str]:
    """The compiler's decisions: its flags, the autotune lists, then, in the job summary
    (``full``), the layouts and every compiled variant; in the comment, what changed per kernel
    and target, and where the rest is. The comment leaves out a flag a condition's evidence
    already says: its kernel and kind among ``conditions``."""
    out: list[str] = []
    if ce.flags:
        for f in ce.flags:
            where = f" ({code(f.path)}:{f.line})" if f.path and f.line else ""
            # the line names the kernel and target: a message that starts with them says so once
            said = f.message.removeprefix(f"{f.kernel} on {f.target}: ").removeprefix(
                f"{f.kernel}: "
            )
            if not full and (f.kernel, f.kind) in conditions:
                continue
            out.append(
                f"- **{f.severity}** {esc(f.kernel)} on {f.vendor} {esc(f.target)}: {esc(said)}{where}"
            )
        out += [""] if out else []
    tuned = _autotune(ce.autotune, full=full)
    out += [*tuned, ""] if tuned else []
    if full:
        rows = _compiler_rows(ce.rows) if ce.rows else []
        return out + _layouts(ce.rows) + _layout_rows(ce.rows) + rows
    if ce.rows:
        changes = _compiler_changes(ce.rows)
        ranges = any(" → " in x for x in changes)
        out += [
            *changes,
            *([""] if changes else []),
            "Old → new, each a range over the compiled variants; the job summary has each one, "
            "with its layouts."
            if ranges
            else "The job summary has each compiled variant, with its layouts.",
        ]
    return out


def _size_order(shapes: Sequence[ShapeLine]) -> list[ShapeLine]:
    """By kernel (in the order the sweep has them), then size, then dtype."""
    kernels = {k: i for i, k in enumerate(dict.fromkeys(x.kernel for x in shapes))}
    return sorted(
        shapes, key=lambda x: (kernels[x.kernel], math.prod(x.shape), tuple(x.shape), x.dtype)
    )


def _vs_base(x: ShapeLine) -> str:
    if x.ratio is None or x.verdict in FAILED_VERDICTS:  # a failure's time says nothing
        return "—"
    if x.ci_low is None or x.ci_high is None:
        return speed(x.ratio)
    return speed_within(x.ratio, x.ci_low, x.ci_high)


def _roofline(x: ShapeLine) -> str:
    def pct(v: float | None) -> str:
        return "—" if v is None else "<1%" if v < 0.005 else f"{number(v * 100)}%"

    if x.base_of_roofline is None and x.head_of_roofline is None:
        return "—"
    return f"{pct(x.base_of_roofline)} → {pct(x.head_of_roofline)}"


def _smem(rows: Sequence[SmemTraffic]) -> list[str]:
    """Old against new shared-memory traffic per profiled case and GPU kernel (C-3)."""
    out = []
    units = sorted({(r.vendor, r.profiler, r.accesses_unit, r.conflicts_unit) for r in rows})
    for vendor, profiler, accesses, conflicts in units:
        out.append(
            f"{esc(vendor)} ({esc(profiler)}): accesses are {esc(accesses)}; conflicts are {esc(conflicts)}."
        )
    out += [
        "",
        "| kernel | shape | dtype | vendor | side | GPU kernel | launches | accesses | bank conflicts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(rows, key=lambda r: (r.kernel, r.shape, r.dtype, r.vendor, r.side != "old"))
    for r in order:
        out.append(
            f"| {esc(r.kernel)} | {'x'.join(map(str, r.shape))} | {esc(r.dtype)} | {r.vendor} | "
            f"{r.side} | {code(r.function)} | {number(r.launches)} | {_cell(r.accesses)} | {_cell(r.conflicts)} |"
        )
    return [
        *out,
        "",
        "Shared memory on the Triton side is the compiler's (reductions across warps, layout "
        "conversions, pipelined loads): traffic there was not written by the author.",
    ]


HELD = chart.HELD  # verdicts of a shape that held; the rest are what a reviewer reads
NOT_RUN = ("SKIPPED", "STOPPED")  # verdicts of a shape not run, each saying why


TABLE_LISTED = 6  # shapes that did not hold a comment lists in a table; more: the job summary


def _weight(x: ShapeLine) -> tuple[bool, bool, float]:
    """A shape that did not hold, ordered by how much the verdict rests on it: failures, then
    slower shapes, then the rest, each the slowest first."""
    return (x.verdict not in FAILED_VERDICTS, x.verdict != "SLOWER", -(x.ratio or 0.0))


def _sweep_table(s: SweepEvidence, *, full: bool = True) -> list[str]:
    """One vendor's shapes, a row each (the kernel named on its first row): every shape and the
    configs the autotuners picked in the job summary (``full``); in the comment, whose charts
    draw every shape, the shapes that did not hold."""
    shown = [x for x in _size_order(s.shapes) if full or x.verdict not in HELD]
    if not shown:
        return ["Every shape held (SAME or FASTER); the job summary has each one's times."]
    out = [
        "| kernel | shape | dtype | base µs | head µs | head against base (95% CI) | of roofline, base → head | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    kernel = None
    for x in shown:
        name = esc(x.kernel) if x.kernel != kernel else ""
        kernel = x.kernel
        tag = chart.ADDED if x.small_or_ragged else ""
        failed = x.verdict in FAILED_VERDICTS  # the head's time and roofline say nothing
        b = "—" if x.base_us is None else number(x.base_us, 2)
        h = "—" if x.head_us is None or failed else number(x.head_us, 2)
        roofline = "—" if failed else _roofline(x)
        out.append(
            f"| {name} | {'x'.join(map(str, x.shape))}{tag} | {esc(dtype_short(x.dtype))} | {b} | "
            f"{h} | {_vs_base(x)} | {roofline} | {_verdict_cell(x)} |"
        )
    if any(x.small_or_ragged for x in shown):
        out += ["", f"{chart.ADDED_WORDS}."]
    return out + (_picks(s) if full else [])


def _verdict_cell(x: ShapeLine) -> str:
    """The verdict; a skipped or stopped shape's with why it was not run (the CPU interpreter
    cannot run it: what it lacks; the sweep was stopped before it): its detail, the failure's
    clause without its kind, which the verdict says."""
    if x.fixed:
        return f"{x.verdict} at base; head runs"
    if x.verdict not in NOT_RUN or not x.detail:
        return x.verdict
    kind = f"{x.failure_kind}: "
    why = "; ".join(
        c.text.removeprefix(kind) if c.kind == "failure" and x.failure_kind else c.text
        for c in x.clauses
    )
    return f"{x.verdict}: {esc(why)}"


def _picks(s: SweepEvidence) -> list[str]:
    """Which config each side's autotuners kept, per config the shapes where the timed runs used
    it: the tiles, warps and stages that actually ran (the job summary)."""
    groups: dict[tuple[str, tuple[str, ...]], list[ShapeLine]] = {}
    for x in _size_order(s.shapes):
        for side, configs in (("base", x.base_configs), ("head", x.head_configs)):
            if configs:
                groups.setdefault((side, configs), []).append(x)
    if not groups:
        return []
    out = ["", "What the autotuners picked (the configs the timed runs used):", ""]
    for side in ("base", "head"):
        for (of, configs), shapes in groups.items():
            if of == side:
                cases = ", ".join(
                    f"{esc(x.kernel)} {'x'.join(map(str, x.shape))} {esc(dtype_short(x.dtype))}"
                    for x in shapes
                )
                out.append(f"- {side} {' + '.join(code(c) for c in configs)}: {cases}")
    return out


CHARTS = 8  # kernels charted per vendor; past it, those whose shapes moved most


def _charted(kernels: dict[str, list[ShapeLine]]) -> list[str]:
    """The kernels to chart, in the sweep's order: all, or the ``CHARTS`` whose furthest shape
    is furthest from 1."""
    if len(kernels) <= CHARTS:
        return list(kernels)

    def moved(k: str) -> float:
        return max((abs(math.log(x.ratio)) for x in kernels[k] if x.ratio), default=0.0)

    keep = set(sorted(kernels, key=moved, reverse=True)[:CHARTS])
    return [k for k in kernels if k in keep]


def _per_shape(v: Verdict, evidence: Evidence, *, full: bool) -> list[str]:
    """Per vendor, a chart per kernel (head / base per shape, the tolerance band, a priced
    rewrite's price), then every shape's row: folded under the charts in the comment."""
    out: list[str] = []
    for s in evidence.sweeps:
        cpu = " (CPU timing: pipeline check only, not evidence)" if s.timing_kind == "cpu" else ""
        out += [f"**{s.vendor}** on {esc(s.gpu)}{cpu}", ""]
        start = len(out)  # the first chart of this vendor says what the bars are
        kernels: dict[str, list[ShapeLine]] = {}
        for x in _size_order(s.shapes):
            kernels.setdefault(x.kernel, []).append(x)
        drawn_kernels = _charted(kernels)
        if len(drawn_kernels) < len(kernels):
            out += [
                f"Charts for the {len(drawn_kernels)} of {len(kernels)} kernels whose shapes "
                "moved most; the table has the others' shapes that did not hold.",
                "",
            ]
        for kernel in drawn_kernels:
            mine = kernels[kernel]
            price = v.prices.get(kernel)
            bars = chart.LIMIT if full else chart.SHORT
            drawn = chart.mermaid(kernel, s.gpu, mine, price, bars)
            if drawn:
                first = not any(x.startswith("```mermaid") for x in out[start:])
                marked = any(esc(chart.ADDED_KEY) in x for x in out[start:])
                words = chart.legend(mine, price, bars, first=first, marked=marked)
                out += [esc(words), "", *drawn, ""]
        table = _sweep_table(s, full=full)
        held = sum(1 for x in s.shapes if x.verdict in HELD)
        skipped = sum(1 for x in s.shapes if x.verdict == "SKIPPED")  # not run: not missed
        stopped = len(s.stopped)  # the sweep was stopped before them: not missed either
        fixed = len(s.fixed)  # the base failed, the head runs: not missed either
        missed = len(s.shapes) - held - skipped - stopped - fixed
        if full or len(table) == 1:  # the table whole, or the line saying every shape held
            out += [*table, ""]
        elif (
            missed + skipped + stopped + fixed > TABLE_LISTED
        ):  # long: the charts draw it, the summary has it
            counts = [f"{plural(missed, 'shape')} did not hold"] if missed else []
            counts += [f"{held} held"] if held else []
            counts += [f"{skipped} skipped (not run)"] if skipped else []
            counts += [f"{stopped} not run (the sweep was stopped)"] if stopped else []
            counts += [f"{fixed} fixed (the base fails, the head runs)"] if fixed else []
            out += [
                f"{s.vendor}: {', '.join(counts)}; the job summary has every shape's times and "
                "chart.",
                "",
            ]
        else:
            listed = [f"the {plural(missed, 'shape')} that did not hold"] if missed else []
            listed += [f"the {'one' if skipped == 1 else skipped} skipped"] if skipped else []
            listed += [f"the {stopped} not run (stopped)"] if stopped else []
            listed += [f"the {'one' if fixed == 1 else fixed} fixed"] if fixed else []
            out += [
                "<details>",
                f"<summary>{s.vendor}: {' and '.join(listed)}, in a "
                f"table ({held} held: SAME or FASTER)</summary>",
                "",
                *table,
                "",
                "</details>",
                "",
            ]
    return out


def accepted_line(a: AcceptedLine) -> str:
    """One accepted regression in words (the comment's section, and the check's annotation)."""
    acc = a.acceptance
    case = f"{a.kernel} {'x'.join(map(str, a.shape))} {a.dtype} on {a.vendor}"
    where = " in the policy" if acc.source == "policy" else ""
    until = f", until {acc.expires.isoformat()}" if acc.expires else ""
    if a.state == "accepted":
        seen = f"; {speed(acc.measured)} when accepted" if acc.measured else ""
        seen += f", measured by run {acc.run_id}" if acc.run_id is not None else ""
        return (
            f"{case}: {speed(a.ratio)}, accepted{where} by {acc.by}: {acc.reason} "
            f"(up to {speed(acc.max_ratio)}{seen}{until})"
        )
    if a.state == "exceeded":
        return (
            f"{case}: {speed(a.ratio)}, more than the {speed(acc.max_ratio)} accepted"
            f"{where} by {acc.by} ({acc.reason}): flagged again"
        )
    return (
        f"{case}: {speed(a.ratio)}; the acceptance{where} by {acc.by} ({acc.reason}) expired "
        f"on {acc.expires.isoformat() if acc.expires else '?'}: flagged again"
    )


def _accepted(lines: Sequence[AcceptedLine]) -> list[str]:
    """The "Accepted regressions" section: each slower shape an acceptance names."""
    if not lines:
        return []
    return ["### Accepted regressions", "", *(f"- {esc(accepted_line(a))}" for a in lines), ""]


SHORT_TITLES = {
    "sweep": "Shape sweep",
    "first_call": "First call",
    "vendors": "Both vendors",
    "ownership": "Owner, pin and perf gate",
    "rollback": "Rollback",
}
_URGENCY = {"open": 1, "not_run": 2, "met": 3}
WORST_LISTED = 3  # shapes named in the comment's first screen
EVIDENCE_LISTED = 2  # evidence lines per condition in the comment; the job summary has all
# ... but the sweep's: a line per vendor, then one per kernel with a slower shape (three kernels)
EVIDENCE_LISTED_BY_KEY = {"sweep": 4}


def deciding(conditions: Sequence[Condition]) -> list[Condition]:
    """The conditions in the order that decides the verdict: measured violations, then the
    other open ones, then those not run, then met ones, each in their order."""
    return sorted(conditions, key=lambda c: (0 if c.blocking else _URGENCY[c.state], c.number))


def _acceptance(x: ShapeLine, vendor: str, v: Verdict) -> AcceptedLine | None:
    """The judged acceptance that names shape ``x`` on ``vendor``, if any."""
    case = (x.kernel, tuple(x.shape), x.dtype, vendor)
    return next(
        (a for a in v.accepted if (a.kernel, tuple(a.shape), a.dtype, a.vendor) == case), None
    )


def _past_limit(x: ShapeLine, vendor: str, v: Verdict) -> bool:
    """Whether ``x`` is slower than its kernel allows: past its tolerance, or over its rewrite
    price, and no acceptance covers it."""
    a = _acceptance(x, vendor, v)
    if x.verdict != "SLOWER" or (a is not None and a.state == "accepted"):
        return False
    price = v.prices.get(x.kernel)
    return price is None or price_state(x, price) == "over"


def _added(x: ShapeLine, vendor: str, v: Verdict) -> str:
    """What a shape the sweep added is worth to the verdict (``bot.review.served``)."""
    if not x.small_or_ragged:
        return ""
    if not _past_limit(x, vendor, v):
        return "; an added shape, not served"
    if collapsed(x):
        return "; an added shape, but 2x slower or more blocks anywhere"
    return "; an added shape, not served: not blocking"


def _judged(x: ShapeLine, vendor: str, v: Verdict) -> str:
    """What judged a shape that did not hold: a failure's detail, an acceptance, the kernel's
    rewrite price or its tolerance."""
    if x.verdict not in ("SLOWER", "INCONCLUSIVE"):
        return f"{x.verdict}" + (f" ({x.detail})" if x.detail else "")
    a = _acceptance(x, vendor, v)
    if a is not None:
        return {"accepted": "accepted", "exceeded": "more than accepted"}.get(
            a.state, "its acceptance expired"
        ) + f" (by {a.acceptance.by})"
    price = v.prices.get(x.kernel)
    if price is not None:
        state = price_state(x, price)
        where = {"within": "within", "over": "over"}.get(state or "", "not told apart from")
        return f"{where} its {percent(price)} rewrite price"
    tolerance = (
        f" its {percent(x.tolerance)} tolerance" if x.tolerance is not None else " its tolerance"
    )
    if x.verdict == "INCONCLUSIVE":
        return "not told apart from" + tolerance
    return "past" + tolerance


def _worst(v: Verdict, evidence: Evidence, *, full: bool) -> list[str]:
    """The ``WORST_LISTED`` shapes the verdict rests on: failures, then the slowest of those
    that did not hold, each with its interval and what judged it; a shape the sweep added is
    said to be one nobody serves. The rest are counted, and said to be under the per-shape
    results where those show each of them, else in the job summary."""
    gpu = [s for s in evidence.sweeps if s.timing_kind == "gpu"]
    # a shape the base failed at and the head runs is fixed, not among the worst; one the sweep
    # was stopped before is not run, which the sweep's condition says
    cases = [
        (s.vendor, x)
        for s in gpu
        for x in s.shapes
        if x.verdict not in HELD and not x.fixed and x.verdict != "STOPPED"
    ]
    if not cases:
        return []
    cases.sort(key=lambda c: _weight(c[1]))
    out = []
    for vendor, x in cases[:WORST_LISTED]:
        on = f" on {vendor}" if len(gpu) > 1 else ""
        measured = "" if x.verdict in FAILED_VERDICTS or x.ratio is None else _vs_base(x) + "; "
        added = _added(x, vendor, v)
        out.append(
            f"- {esc(x.kernel)} {'x'.join(map(str, x.shape))} {esc(dtype_short(x.dtype))}{on}: "
            f"{measured}{esc(_judged(x, vendor, v))}{added}"
        )
    more = len(cases) - WORST_LISTED
    below = {id(x) for s in gpu for x in _shown(s, full=full)}
    where = (
        "under Per-shape results"
        if all(id(x) in below for _, x in cases[WORST_LISTED:])
        else "in the job summary"
    )
    rest = f"; {more} more {where}" if more > 0 else ""
    return [f"**Worst shapes** (head against base, 95% CI{rest}):", *out, ""]


def _shown(s: SweepEvidence, *, full: bool) -> list[ShapeLine]:
    """The shapes of ``s`` the per-shape section names or draws: all in the job summary
    (``full``); in the comment those in its table, or, where it has none, its charts' bars."""
    missed = [x for x in s.shapes if x.verdict not in HELD]
    if full or len(missed) <= TABLE_LISTED:
        return list(s.shapes)
    kernels: dict[str, list[ShapeLine]] = {}
    for x in _size_order(s.shapes):
        kernels.setdefault(x.kernel, []).append(x)
    return [x for k in _charted(kernels) for x in chart.chart_shapes(kernels[k], chart.SHORT)[0]]


LABELS_LISTED = 1  # shapes of a long list an evidence line names in the comment


def _brief(line: str, shapes: Sequence[str]) -> str:
    """An evidence line for the comment: ``shapes``, the list it names, when longer than
    ``LABELS_LISTED + 1``, cut to its first ``LABELS_LISTED`` and a count (the job summary has
    the line whole)."""
    if len(shapes) <= LABELS_LISTED + 1:
        return line
    cut = f"{', '.join(shapes[:LABELS_LISTED])} and {len(shapes) - LABELS_LISTED} more"
    return line.replace(", ".join(shapes), cut, 1)


CLIP = 240  # characters of an evidence line in the comment, cut at a clause
_CLOSE = {"(": ")", "[": "]"}


def _clip(line: str) -> str:
    """An evidence line for the comment: past ``CLIP`` characters, cut at its last clause
    boundary ("; " outside code) before them, marked "…" and its brackets closed: each clause
    says one thing, so what is left stays true (the job summary has the line whole)."""
    if len(line) <= CLIP:
        return line
    opened: list[str] = []
    quoted, cut, closing = False, 0, ""
    for i, ch in enumerate(line[:CLIP]):
        if ch == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif ch in _CLOSE:
            opened.append(_CLOSE[ch])
        elif ch in _CLOSE.values() and opened:
            opened.pop()
        elif ch == ";" and line[i + 1 : i + 2] == " ":
            cut, closing = i, "".join(reversed(opened))
    return f"{line[:cut]} …{closing}" if cut else line


def _evidence(c: Condition, *, full: bool) -> list[str]:
    """A condition's evidence lines: all in the job summary, the first few in the comment
    (``EVIDENCE_LISTED``), long lines and lists of shapes cut, with a count of the rest."""
    if not c.evidence:  # the title's line says the summary
        return []
    listed = EVIDENCE_LISTED_BY_KEY.get(c.key, EVIDENCE_LISTED)
    lines = c.evidence
    if not full:  # a shape's own line: the worst shapes say it, above
        lines = tuple(x for x in lines if x not in c.per_shape)
    listed = listed if len(lines) > listed + 1 else listed + 1  # a line, not "1 more"
    shapes = dict(c.shape_lists)
    shown = c.evidence if full else [_clip(_brief(x, shapes.get(x, ()))) for x in lines[:listed]]
    out = [f"   - {esc(line)}" for line in shown]
    if len(c.evidence) > len(shown):
        out.append(f"   - {len(c.evidence) - len(shown)} more in the job summary")
    return out


def _section(title: str, body: list[str], *, full: bool) -> list[str]:
    """A folded ``<details>`` in the comment; a heading with everything open in the summary."""
    while body and not body[-1]:
        body = body[:-1]
    if not body:
        return []
    if full:
        return [f"### {title}", "", *body, ""]
    return ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]


def _not_run(evidence: Evidence) -> list[str]:
    """What did not run, a line per vendor and reason, naming the checks (and the files, for
    the compiler) it holds for."""
    said: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (vendor, reason) -> (check, path)s
    for n in evidence.not_run:
        checks = said.setdefault((n.vendor or "", n.said), [])
        checks.append((_CHECK_WORDS.get(n.check, n.check), n.path))
    out = []
    for (vendor, why), checks in said.items():
        paths: dict[str, list[str]] = {}  # a check -> the files it could not read
        for check, where in checks:
            paths.setdefault(check, []).extend([where] if where else [])
        named = [check + (f" ({', '.join(p)})" if p else "") for check, p in paths.items()]
        out.append(f"- {esc(and_list(named))}{' on ' + vendor if vendor else ''}: {esc(why)}")
    return out


_CHECK_WORDS = {"first_call": "first call", "repo": "repository", "smem": "shared-memory profile"}


def _meta(ctx: ReviewContext) -> str:
    meta = [f"head {code(_short(ctx.head_sha))} against base {code(_short(ctx.base_sha))}"]
    if ctx.policy_source:
        meta.append(f"policy {code(ctx.policy_source)}")
    dep = f"deployment {code(ctx.deployment)}"
    if ctx.first_call_budget_ms:
        dep += f" (first-call budget {number(ctx.first_call_budget_ms)} ms)"
    meta.append(dep)
    if ctx.vendors:
        meta.append("vendors " + ", ".join(ctx.vendors))
    return "<sub>Reviewed " + " · ".join(meta) + "</sub>"


def render_comment(
    verdict: Verdict,
    ctx: ReviewContext,
    evidence: Evidence | None = None,
    part_a: Sequence[PartATable] = (),
    *,
    full: bool = False,
) -> str:
    """The review as markdown, whole. The first screen is the verdict, every condition in a
    line (those that decide it first), the trade each rewrite makes within its price, the
    worst shapes and what judged them; every other section folds. ``full`` (the job summary)
    opens every section and lists every evidence line, shape pick and compiler variant;
    cutting the comment to GitHub's limit is ``bot.forge.sticky.fit_body``'s."""
    evidence = evidence or Evidence()
    lines = [f"## {DECISION_ICONS[verdict.decision]} Kernel review: {verdict.title}"]
    if verdict.no_kernel_changes:
        lines += [esc(verdict.why), "", _meta(ctx)]
        return "\n".join(lines).rstrip() + "\n"
    for c in deciding(verdict.conditions):
        title = SHORT_TITLES.get(c.key, c.title)
        lines.append(f"- {STATE_MARKS[c.state]} **{title}**: {esc(c.summary)}")
    lines += [f"- ⚖️ **The trade**: {esc(t)}" for t in verdict.trade]
    lines.append("")
    lines += _worst(verdict, evidence, full=full)
    lines.append(_meta(ctx))
    if ctx.note:
        lines += ["", f"> {esc(ctx.note)}"]
    lines.append("")

    why = [esc(verdict.why), ""]
    if verdict.trade_over:  # what each rewrite over its price trades, and what to do
        why += [f"⚖️ **The trade**, over the rewrite price ({OVER_ADVICE}):", ""]
        why += [f"- {esc(t)}" for t in verdict.trade_over] + [""]
    for c in verdict.conditions:
        why += _condition_block(c, full=full)
    if verdict.not_asking_for:
        why += ["", "Not asking for:", ""]
        why += [f"- {esc(x)}" for x in verdict.not_asking_for]
    if verdict.accepted:
        why += ["", *_accepted(verdict.accepted)]
    lines += _section("Why, and the five conditions before merge", why, full=full)
    changed = [*_changes_table(verdict, ctx.kernels), ""]
    changed += _findings(verdict) + _toolchain(verdict, evidence, ctx)
    if full:
        ran = launch_lines(verdict.changes, evidence.sweeps)
        changed += ["### What ran", "", *ran, ""] if ran else []
    elif said := launch_summary(verdict.changes, evidence.sweeps):
        changed += [said, ""]
    lines += _section("What changed", changed, full=full)

    lines += _section("Per-shape results", _per_shape(verdict, evidence, full=full), full=full)
    lines += _section(
        "What the rewrite deleted (code counts, Part A)",
        _part_a(part_a, verdict.changes),
        full=full,
    )
    if evidence.compiler is not None:
        lines += _section(
            "What the compiler decided (Part C)",
            _compiler(
                evidence.compiler,
                full=full,
                conditions={x for c in verdict.conditions for x in c.flags},
            ),
            full=full,
        )
    if evidence.smem:
        lines += _section(
            "Shared-memory traffic, old and new (Part C-3)", _smem(evidence.smem), full=full
        )
    not_run = _not_run(evidence)
    not_run += [
        f"- compiler report for {esc(c.kernel)}: {esc(c.not_compiled)}"
        for c in verdict.changes
        if c.not_compiled
    ]
    lines += _section("Not run", not_run, full=full)
    return "\n".join(lines).rstrip() + "\n"
