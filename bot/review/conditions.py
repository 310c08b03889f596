"""The five conditions of a review, one small function each. Pure.

Each function reads the changes, the policy's requirements and the evidence (``Facts``) and
returns a ``Finding``: the state (met, open or not run), a one-line summary, the evidence rows
behind it, and whether it is a measured violation that requests changes. ``CONDITIONS`` lists
them in the order the review shows them; a condition's number is its place there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.contracts.accept import AcceptedLine
from bot.contracts.evidence import (
    FAILED_VERDICTS,
    Evidence,
    FirstCallEvidence,
    FlagKind,
    NotRun,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.review import ChangeLine, Condition, Requirements, State
from bot.outputs import plural
from bot.review.explain import inconclusive_reason, kernel_lines
from bot.review.served import decides, unserved_words
from bot.review.trade import (
    inconclusive_within,
    price_state,
    price_words,
    priced_kernels,
)
from bot.words import (
    and_list,
    interval_words,
    number,
    percent,
    said_slower,
    speed,
    speed_range,
)

NOT_COVERED = "no changed kernel is covered by the policy"


@dataclass(frozen=True)
class Facts:
    """What every condition is decided from."""

    changes: tuple[ChangeLine, ...]
    req: Requirements
    ev: Evidence
    accepted: tuple[AcceptedLine, ...] = ()  # slower shapes an acceptance names, judged

    @property
    def measured_kernels(self) -> bool:
        """Whether any changed kernel is covered by the policy (and so measured)."""
        return any(c.mapped for c in self.changes)


@dataclass(frozen=True)
class Finding:
    """One condition's outcome, as data: the renderer lays it out."""

    state: State
    summary: str
    rows: tuple[str, ...] = ()
    blocking: bool = False  # a measured violation: requests changes
    per_shape: tuple[str, ...] = ()  # those of the rows about one shape each
    shape_lists: tuple[tuple[str, tuple[str, ...]], ...] = ()  # rows naming shapes: the shapes
    flags: tuple[tuple[str, FlagKind], ...] = ()  # the compiler flags (kernel, kind) rows say


def _shape(s: Sequence[int]) -> str:
    return "x".join(str(d) for d in s)


def _sweep_line(s: SweepEvidence) -> str:
    """One vendor's sweep in a line: how many shapes, the served shapes overall, and that no
    timed shape was slower where none was (the worst shapes name those that were)."""
    line = f"{s.vendor} ({s.gpu}): {plural(len(s.shapes), 'shape')}"
    if s.geomean_ratio is not None:
        notes = [interval_words(s.geomean_ratio, *s.geomean_ci)] if s.geomean_ci else []
        notes += ["weighted by how often each is served"] if s.weighted else []
        more = f" ({'; '.join(notes)})" if notes else ""
        line += f"; the served shapes together {speed(s.geomean_ratio)}{more}"
    timed = [x for x in s.shapes if x.ratio is not None and x.verdict not in FAILED_VERDICTS]
    # a slower shape is the worst shapes' and its kernel's line's to name; a failure's time
    # says nothing: it is counted apart
    if timed and not any(said_slower(x.ratio or 1.0) for x in timed):
        line += "; no timed shape slower"
    return line


def each_vendor(skipped: Sequence[NotRun], vendors: Sequence[str]) -> str:
    """Why a check was not run, each vendor's reason under its name where the policy names more
    than one ("nvidia: ...; amd: ..."), what this machine has said once where it is why for
    every vendor ("nvidia: needs an NVIDIA GPU runner, amd: needs an AMD GPU runner; this
    machine has no GPU"): one vendor's reason is never said as if it were every vendor's.
    "needs a GPU runner" when none was given."""
    first: dict[tuple[str | None, str, str], NotRun] = {}
    for n in skipped:
        first.setdefault((n.vendor, n.reason, n.here), n)
    rows = list(first.values())
    if not rows:
        return "needs a GPU runner"
    if len(vendors) < 2 or all(n.vendor is None for n in rows):
        return "; ".join(dict.fromkeys(n.said for n in rows))
    if len({n.said for n in rows}) == 1:
        return f"{', '.join(n.vendor for n in rows if n.vendor)}: {rows[0].said}"

    def named(n: NotRun, words: str) -> str:
        return f"{n.vendor}: {words}" if n.vendor else words

    here = {n.here for n in rows}
    if len(rows) > 1 and len(here) == 1 and "" not in here:  # said once, after every vendor's
        return f"{', '.join(named(n, n.reason) for n in rows)}; {here.pop()}"
    return "; ".join(named(n, n.said) for n in rows)


def _inconclusive_line(x: ShapeLine) -> str:
    """An inconclusive shape: its interval and, in words, why it could not be decided."""
    line = f"{x.kernel} {_shape(x.shape)} {x.dtype}: inconclusive"
    if x.ci_low is not None and x.ci_high is not None:
        line += f" ({speed_range(x.ci_low, x.ci_high)} at 95%)"
    reason = inconclusive_reason(x)
    if reason:
        return f"{line}: {reason}"
    tolerance = f" ({percent(x.tolerance)})" if x.tolerance is not None else ""
    return f"{line}: the interval crosses the edge of the tolerance{tolerance}, neither within it nor clearly past it"


def sweep(f: Facts) -> Finding:
    """A shape sweep on a GPU: every shape within tolerance, none failed; a priced rewrite's
    shapes within its rewrite price instead (``bot.review.trade``); a slowdown at a shape the
    policy does not serve open but not blocking, unless it collapsed (``bot.review.served``);
    a shape only the base failed at, the head running there, fixed and no condition at all;
    shapes the sweep was stopped before (a job's time limit) not run, so the sweep is not run
    (never met) unless what it measured already blocks or leaves it open.
    The rows say each vendor's
    sweep in a line, each failure, one line per kernel with slower shapes (the shapes themselves
    are in the per-shape table), and each shape an acceptance or a rewrite price judged."""
    ev = f.ev
    if not f.measured_kernels:
        return Finding("met", f"{NOT_COVERED}, so there is nothing to sweep")
    gpu_sweeps = [s for s in ev.sweeps if s.timing_kind == "gpu"]
    if not gpu_sweeps:
        skipped = [n for n in ev.not_run if n.check == "sweep"]
        cpu = [s for s in ev.sweeps if s.timing_kind == "cpu"]
        extra = (
            ("a CPU-timed sweep ran the pipeline end to end; CPU timings are not evidence",)
            if cpu
            else ()
        )
        return Finding("not_run", each_vendor(skipped, f.req.vendors), extra)
    priced = priced_kernels(f.changes, ev)
    lines: list[str] = []
    per_shape: list[str] = []  # the lines about one shape each

    def one_shape(line: str) -> None:
        lines.append(line)
        per_shape.append(line)

    failures = [x for s in gpu_sweeps for x in s.failures]
    fixed = [x for s in gpu_sweeps for x in s.fixed]  # the base failed, the head runs
    # not run: the sweep was stopped, or skipped the shape (its GPU-seconds budget spent, a
    # worker that could not start, a fault of the engine's own): evidence missing, which no
    # change caused, so never the change's failure
    stopped = [x for s in gpu_sweeps for x in s.stopped]
    stopped += [x for x in failures if x.verdict == "SKIPPED"]
    failures = [x for x in failures if x.verdict != "SKIPPED"]
    # a measured vendor's shards that sent nothing: their shapes are not in the sweep at all
    swept = {s.vendor for s in gpu_sweeps}
    lost = [n.said for n in ev.not_run if n.check == "sweep" and n.vendor in swept]
    total = sum(len(s.shapes) for s in gpu_sweeps) - len(fixed)
    for s in gpu_sweeps:
        lines.append(_sweep_line(s))
        if s.dropped_rounds:
            lines.append(f"{s.vendor}: {s.dropped_rounds} throttled rounds dropped")
    for s in gpu_sweeps:
        where = f"{s.vendor}, " if len(gpu_sweeps) > 1 else ""
        for x in s.failures:
            why = f" ({x.detail})" if x.detail else ""
            one_shape(f"{where}{x.kernel} {_shape(x.shape)} {x.dtype}: {x.verdict}{why}")
        lines += [where + line for line in _fixed_lines(s.fixed)]
    inconclusive: list[ShapeLine] = []
    within: list[ShapeLine] = []  # a priced rewrite's shapes within its price
    for s in gpu_sweeps:
        where = f"{s.vendor}, " if len(gpu_sweeps) > 1 else ""
        lines += [where + line for line in kernel_lines(s, ev.compiler)]
        for x in s.inconclusive:
            price = f.req.price_of(x.kernel)
            if x.kernel in priced and inconclusive_within(x, price):
                within.append(x)
                one_shape(where + _priced_line(x, price, "within"))
            else:
                inconclusive.append(x)
                one_shape(where + _inconclusive_line(x))
    judged = {_case(a.kernel, a.shape, a.dtype, a.vendor): a.state for a in f.accepted}
    slower: list[ShapeLine] = []  # slower than tolerance, no acceptance or price covers them
    over: list[tuple[str, ShapeLine]] = []  # a priced rewrite's shapes over its price
    undecided: list[ShapeLine] = []  # ... whose interval crosses its price
    aside: list[tuple[str, ShapeLine]] = []  # past either at a shape nobody serves: named only
    for s in gpu_sweeps:
        where = f"{s.vendor}, " if len(gpu_sweeps) > 1 else ""
        for x in s.slower:
            state = judged.get(_case(x.kernel, x.shape, x.dtype, s.vendor))
            if state:  # the table lists every slower shape; an acceptance adds its judgement
                one_shape(
                    f"{x.kernel} {_shape(x.shape)} {x.dtype}: {speed(x.ratio or 1.0)}"
                    f" ({_ACCEPT_NOTES[state]})"
                )
            if state == "accepted":
                continue
            if x.kernel not in priced:
                if decides(x):
                    slower.append(x)
                else:
                    aside.append((s.vendor, x))
                continue
            price = f.req.price_of(x.kernel)
            priced_state = price_state(x, price) or "over"
            one_shape(where + _priced_line(x, price, priced_state))
            if priced_state == "within":
                within.append(x)
            elif priced_state == "over" and decides(x):
                over.append((s.vendor, x))
            elif priced_state == "over":
                aside.append((s.vendor, x))
            else:
                undecided.append(x)
    n_accepted = sum(1 for a in f.accepted if a.state == "accepted")
    rows, said = tuple(lines), tuple(per_shape)
    if failures or slower or over:
        what = []
        if failures:
            kinds = and_list(list(dict.fromkeys(_kind(x) for x in failures)))
            what.append(f"{plural(len(failures), 'shape')} failed ({kinds})")
        timed: dict[str, int] = {}  # each kernel's timed shapes, over the vendors
        for s in gpu_sweeps:
            for x in s.shapes:
                timed[x.kernel] = timed.get(x.kernel, 0) + (x.ratio is not None)
        if slower:  # counted: the first screen's worst shapes name them
            what.append(f"past {_tolerance_of(slower, f.req)} at {_counted(slower, timed)}")
        if over:
            kernels = list(dict.fromkeys(x.kernel for _, x in over))
            what.append(
                f"over {price_words(kernels, f.req)} at {_counted([x for _, x in over], timed)}"
            )
        if undecided:
            what.append(_undecided_words(undecided, f.req))
        if aside:
            what.append(unserved_words(aside, len(gpu_sweeps)))
        if n_accepted:
            what.append(f"{n_accepted} accepted")
        what += [_fixed_words(fixed)] if fixed else []
        what += [_not_run_words(stopped, total)] if stopped else []
        what += lost
        return Finding("open", "; ".join(what), rows, blocking=True, per_shape=said)
    measured = total - len(stopped)  # the shapes the sweep got to
    # "within tolerance at all 4 shapes", "... at all 4 shapes it measured" (a stopped sweep)
    shapes = (
        f"{'shape' if measured == 1 else 'shapes'} it measured" if stopped or lost else "shapes"
    )
    outcome: State = "met"
    if inconclusive or undecided or aside:
        outcome = "open"
        what = [unserved_words(aside, len(gpu_sweeps))] if aside else []
        if inconclusive:
            what.append(
                f"{plural(len(inconclusive), 'shape')} inconclusive: {_why_inconclusive(inconclusive)}"
            )
        if undecided:
            what.append(_undecided_words(undecided, f.req) + "; rerun with `/bench full`")
    elif n_accepted or within:
        what = [f"within tolerance at {measured - n_accepted - len(within)} of {measured} {shapes}"]
        what += [_within_words(within, f.req)] if within else []
        what += [plural(n_accepted, "accepted slower shape")] if n_accepted else []
    else:
        every = "the" if stopped and measured == 1 else "all"
        what = [f"within tolerance at {every} {measured} {shapes}"] if measured else []
    what += [_fixed_words(fixed)] if fixed else []
    if stopped or lost:  # the evidence is not complete: the rest of the sweep is still to run
        outcome = "not_run"
        what = [*([_not_run_words(stopped, total)] if stopped else []), *lost, *what]
    return Finding(outcome, "; ".join(what), rows, per_shape=said)


def _not_run_words(stopped: Sequence[ShapeLine], total: int) -> str:
    """The shapes a stopped sweep did not get to, counted, with why (the sweep's words for its
    stop, said once where they are the same): "not run at 14 of 18 shapes: the sweep was
    stopped by SIGTERM (...); run it again for them"."""
    whys = list(dict.fromkeys(x.failure_reason for x in stopped if x.failure_reason))
    why = f": {whys[0]}" if len(whys) == 1 else ""
    return f"not run at {len(stopped)} of {total} shapes{why}; run the sweep again for them"


def _fixed_words(fixed: Sequence[ShapeLine]) -> str:
    """The shapes the base failed at and the head runs, counted, with the base's failure where
    it is the same at each: no condition on the change."""
    whys = list(dict.fromkeys(_failure(x) for x in fixed))
    why = f" ({whys[0]})" if len(whys) == 1 else ""
    return f"{plural(len(fixed), 'shape')} fixed: the base fails there{why}, the head runs"


def _kind(x: ShapeLine) -> str:
    """A failure's kind in words: the sweep's ("compile error", "wrong result", "timeout"),
    else its verdict's."""
    return x.failure_kind or _VERDICT_WORDS.get(x.verdict, x.verdict.lower())


_VERDICT_WORDS = {"WRONG": "wrong result", "CRASHED": "crash", "OOM": "out of memory"}


def _failure(x: ShapeLine) -> str:
    """Why the base failed at a fixed shape, its side not said again: "compile error:
    CompilationError at 12:22: numel (2097152) exceeds triton maximum tensor numel (1048576)"."""
    if x.failure_kind:
        return f"{x.failure_kind}: {x.failure_reason}" if x.failure_reason else x.failure_kind
    return x.detail or x.verdict


def _fixed_lines(fixed: Sequence[ShapeLine]) -> list[str]:
    """A line per kernel with shapes the base failed at and the head runs: which shapes, and
    that the head's time there has nothing to be compared with."""
    out = []
    for kernel in dict.fromkeys(x.kernel for x in fixed):
        mine = [x for x in fixed if x.kernel == kernel]
        shapes = and_list([f"{_shape(x.shape)} {x.dtype}" for x in mine])
        out.append(
            f"{kernel}: fixed at {shapes}, where the base fails and the head runs, untimed: "
            "there is no base time to compare it with"
        )
    return out


KERNELS_COUNTED = 3  # kernels a sweep summary counts by name; the rest in one count


def _counted(shapes: Sequence[ShapeLine], timed: Mapping[str, int]) -> str:
    """``shapes`` counted kernel by kernel against each kernel's ``timed`` shapes: "1 of its 6
    shapes (9.0% slower)", "3 of vector_add's 16 shapes (up to 2.4x slower) and 1 of softmax's
    18 (8.4% slower)". The first screen's worst shapes name them."""
    kernels = list(dict.fromkeys(x.kernel for x in shapes))
    parts = []
    for i, kernel in enumerate(kernels[:KERNELS_COUNTED]):
        mine = [x for x in shapes if x.kernel == kernel]
        worst = speed(max(x.ratio or 1.0 for x in mine))
        whose = "its" if len(kernels) == 1 else f"{kernel}'s"
        of = f"{whose} {timed[kernel]}" + (" shapes" if i == 0 else "")
        parts.append(f"{len(mine)} of {of} ({'up to ' if len(mine) > 1 else ''}{worst})")
    rest = set(kernels[KERNELS_COUNTED:])
    if rest:
        n = sum(1 for x in shapes if x.kernel in rest)
        parts.append(f"{plural(n, 'shape')} of {plural(len(rest), 'more kernel')}")
    return and_list(parts)


def _tolerance_of(shapes: Sequence[ShapeLine], req: Requirements) -> str:
    """The tolerance that judged ``shapes``, per kernel: the one each shape carries, else its
    kernel's in the policy ("matmul's 5% tolerance", "each kernel's tolerance (a 3%, b 5%)")."""
    each = {
        x.kernel: x.tolerance if x.tolerance is not None else req.tolerance_of(x.kernel)
        for x in shapes
    }
    if len(each) == 1:
        [(kernel, tolerance)] = each.items()
        return f"{kernel}'s {percent(tolerance)} tolerance"
    if len(set(each.values())) == 1:
        return f"the {percent(next(iter(each.values())))} tolerance"
    return (
        "each kernel's tolerance (" + ", ".join(f"{k} {percent(t)}" for k, t in each.items()) + ")"
    )


def _why_inconclusive(inconclusive: Sequence[ShapeLine]) -> str:
    """Why shapes were inconclusive, in one clause."""
    spread = [x for x in inconclusive if x.varied_between_processes]
    if len(spread) == len(inconclusive):
        return (
            "head against base varied from one process to the next by more than the "
            "tolerance allows; each shape's line says how far and why"
        )
    if spread:
        return (
            f"{len(spread)} varied from one process to the next, the rest were too noisy "
            "within the budget (rerun those with `/bench full`); each shape's line says why"
        )
    noisy = [x for x in inconclusive if _noisier_than_tolerance(x)]
    if len(noisy) == len(inconclusive):
        return "the noise was larger than the tolerance within the budget; rerun with `/bench full`"
    if noisy:
        return (
            f"{len(noisy)} too noisy within the budget, the rest with an interval across the "
            "tolerance's edge; rerun with `/bench full` to narrow them"
        )
    return (
        "the interval crosses the tolerance's edge, so the difference is about the tolerance "
        "itself; rerun with `/bench full` to narrow it"
    )


def _noisier_than_tolerance(x: ShapeLine) -> bool:
    """Whether a shape's interval is wider than its tolerance band (``1 ± tolerance``): no
    interval or no tolerance counts as noisy."""
    if x.ci_low is None or x.ci_high is None or x.tolerance is None:
        return True
    return x.ci_high - x.ci_low > 2 * x.tolerance


def _priced_line(x: ShapeLine, price: float, state: str) -> str:
    """A priced rewrite's shape judged against its rewrite price."""
    case = f"{x.kernel} {_shape(x.shape)} {x.dtype}"
    interval = (
        f" ({speed_range(x.ci_low, x.ci_high)} at 95%)"
        if x.ci_low is not None and x.ci_high is not None
        else ""
    )
    measured = "not timed" if x.ratio is None else speed(x.ratio)
    if x.ratio is not None and x.ci_low is not None and x.ci_high is not None:
        # "5.8% slower (4.8–6.8% at 95%)": the word said once
        measured += f" ({interval_words(x.ratio, x.ci_low, x.ci_high)} at 95%)"
    if x.verdict == "INCONCLUSIVE":
        tolerance = f" against its {percent(x.tolerance)} tolerance" if x.tolerance else ""
        measured = f"inconclusive{tolerance}{interval}"
    judged = {"within": "within", "over": "over", "undecided": "the interval crosses"}[state]
    aside = " at a shape the policy does not serve" if state == "over" and not decides(x) else ""
    return f"{case}: {measured}; {judged} its {percent(price)} rewrite price{aside}"


def _undecided_words(undecided: Sequence[ShapeLine], req: Requirements) -> str:
    """ "1 softmax shape not told apart from its 6% rewrite price", kernel by kernel."""
    parts = []
    for kernel in dict.fromkeys(x.kernel for x in undecided):
        n = sum(1 for x in undecided if x.kernel == kernel)
        parts.append(
            f"{n} {kernel} {'shape' if n == 1 else 'shapes'} not told apart from its "
            f"{percent(req.price_of(kernel))} rewrite price (the interval crosses it)"
        )
    return "; ".join(parts)


def _within_words(within: Sequence[ShapeLine], req: Requirements) -> str:
    """ "2 softmax shapes within its 6% rewrite price, worst 5.8% slower", kernel by kernel."""
    parts = []
    for kernel in dict.fromkeys(x.kernel for x in within):
        mine = [x for x in within if x.kernel == kernel]
        worst = max((x.ratio for x in mine if x.ratio is not None), default=None)
        tail = f", worst {speed(worst)}" if worst is not None and worst > 1.0 else ""
        parts.append(
            f"{len(mine)} {kernel} {'shape' if len(mine) == 1 else 'shapes'} within its "
            f"{percent(req.price_of(kernel))} rewrite price{tail}"
        )
    return "; ".join(parts)


_ACCEPT_NOTES = {
    "accepted": "accepted",
    "exceeded": "slower than accepted: flagged again",
    "expired": "its acceptance expired",
}


def _case(kernel: str, shape: Sequence[int], dtype: str, vendor: str) -> tuple:
    return (kernel, tuple(shape), dtype, vendor)


def _first_call_line(f: FirstCallEvidence) -> str:
    parts = [f"{f.kernel} on {f.vendor}" + (" (base, for comparison)" if f.side == "base" else "")]
    if f.cold_ms is not None:
        parts.append(f"cold {number(f.cold_ms)} ms")
    if f.warm_ms is not None:
        parts.append(f"warm {number(f.warm_ms)} ms")
    if f.autotune_ms:
        parts.append(f"autotune {number(f.autotune_ms)} ms")
    if f.distinct_keys is not None:
        parts.append(f"{plural(f.distinct_keys, 'autotune key')} over the served shapes")
    if f.cold_total_ms is not None:
        how = " (from each shape's own first call)" if f.cold_total_derived else ""
        parts.append(f"{number(f.cold_total_ms)} ms to serve every shape once, cold{how}")
    line = ", ".join(parts) + (" (compile only, on a CPU)" if f.compile_only else "")
    # where the cold time went: imports and context are paid by any torch process, old kernel too
    return f"{line} ({f.detail})" if f.detail else line


def _picks_against_sweep(f: FirstCallEvidence, sweeps: Sequence[SweepEvidence]) -> list[str]:
    """Where fresh processes' autotunings of a served shape kept different configs, which one the
    sweep's head worker kept: its verdict there was timed with that config only."""
    timed = {
        (f"{'x'.join(map(str, x.shape))}:{x.dtype}"): x
        for s in sweeps
        if s.vendor == f.vendor
        for x in s.shapes
        if x.kernel == f.kernel and x.head_configs
    }
    out = []
    for spread in f.unstable_picks:
        line = timed.get(spread.shape)
        if line is None:
            continue
        ran = " + ".join(line.head_configs)
        ratio = f" (head/base {number(line.ratio, 3)})" if line.ratio is not None else ""
        among = (
            "one of them"
            if set(line.head_configs) <= _picked(spread.configs)
            else "a config none of them kept"
        )
        out.append(
            f"{f.kernel} {spread.shape.replace(':', ' ')} on {f.vendor}: "
            f"{spread.autotunings} autotunings in fresh processes kept "
            f"{plural(len(spread.configs), 'config')}; the sweep's head kept {among}, {ran}, "
            f"so its {line.verdict} there{ratio} is for that config; "
            "a process that keeps another may run faster or slower"
        )
    return out


def _picked(configs: Sequence[str]) -> set[str]:
    return {part for c in configs for part in c.split(" + ")}


def first_call(f: Facts) -> Finding:
    """The first call in a fresh process, judged against the deployment's budget (the head's;
    the base's, measured when the toolchain moves, is listed for comparison)."""
    ev, req = f.ev, f.req
    if not f.measured_kernels:
        return Finding("met", NOT_COVERED)
    head = [x for x in ev.first_calls if x.side == "head"]
    gpu = [x for x in head if not x.compile_only and x.cold_ms is not None]
    failed = [x for x in head if not x.compile_only and x.cold_ms is None]
    # the slowest kernel's measurements first: the comment lists the first few lines
    slowest = {x.kernel: -(x.cold_ms or 0.0) for x in sorted(head, key=lambda x: x.cold_ms or 0.0)}
    lines = tuple(
        _first_call_line(x)
        if x.cold_ms is not None or x.compile_only
        else f"{x.kernel} on {x.vendor}{' (base)' if x.side == 'base' else ''}: not measured "
        f"({x.detail or 'no time recorded'})"
        for x in sorted(ev.first_calls, key=lambda x: slowest.get(x.kernel, 0.0))
    )
    lines += tuple(line for x in head for line in _picks_against_sweep(x, ev.sweeps))
    kind = req.deployment
    if not gpu:
        skipped = [n for n in ev.not_run if n.check == "first_call"]
        reasons = [each_vendor(skipped, req.vendors)] if skipped or not failed else []
        reasons += [f"{x.kernel}: the measurement failed" for x in failed]
        return Finding("not_run", f"{'; '.join(reasons)}; the deployment is `{kind}`", lines)
    if kind == "long-lived":
        return Finding(
            "met", "measured; for a long-lived process it is paid once and reported only", lines
        )
    budget = req.first_call_budget_ms
    over = [
        x for x in gpu if x.over_budget_shapes or (budget is not None and (x.cold_ms or 0) > budget)
    ]
    gpu_vendors = {x.vendor for x in gpu}
    if over:  # what is over the budget first, then each measurement
        said = tuple(
            (
                f"{x.kernel} on {x.vendor}: over the {number(budget or 0.0)} ms budget at "
                + (", ".join(x.over_budget_shapes) or "the first call"),
                x.over_budget_shapes,
            )
            for x in over
        )
        rows = tuple(line for line, _ in said) + lines
        return Finding(
            "open",
            f"over the `{kind}` budget of {number(budget or 0.0)} ms for "
            + plural(len({x.kernel for x in over}), "kernel")
            + (f" on {and_list(sorted({x.vendor for x in over}))}" if len(gpu_vendors) > 1 else ""),
            rows,
            blocking=True,
            shape_lists=tuple((line, shapes) for line, shapes in said if shapes),
        )
    return Finding("met", f"within the `{kind}` budget of {number(budget or 0.0)} ms", lines)


def vendors(f: Facts) -> Finding:
    """Every required vendor measured, each with its own configs, and every config compiles;
    with a row for each launch setting chosen by vendor or architecture, since a runner of one
    vendor measures only its own side of such a branch."""
    finding = _vendors_measured(f)
    branch_rows = tuple(
        f"{c.kernel}: {b}" for c in f.changes for b in sorted(c.branches, key=_natural)
    )
    if not branch_rows:
        return finding
    return replace(finding, rows=(*finding.rows, *branch_rows))


def _natural(text: str) -> list[str | int]:
    """A sort key that orders the numbers inside ``text`` by value: path:99 before path:201."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _vendors_measured(f: Facts) -> Finding:
    ev, req = f.ev, f.req
    if not f.measured_kernels:
        return Finding("met", NOT_COVERED)
    measured = {s.vendor for s in ev.sweeps if s.timing_kind == "gpu"}
    missing = [v for v in req.vendors if v not in measured]
    lines: list[str] = []
    for v in req.vendors:  # those not run first, what is wrong next, those measured last
        if v not in measured:
            why = [n.said for n in ev.not_run if n.vendor == v and n.check == "sweep"] or [
                "needs a GPU runner"
            ]
            lines.append(f"{v}: not run ({why[0]})")
    shared = []
    if ev.compiler is not None and len(req.vendors) > 1:
        shared = [k for k, differ in ev.compiler.configs_differ_per_vendor.items() if not differ]
        for k in shared:
            lines.append(
                f"{k}: one config list serves both vendors; the same num_warps is twice the "
                "threads on AMD (64-lane wavefronts) as on NVIDIA (32-lane warps)"
            )
    failed_compiles = (
        [x for x in ev.compiler.flags if x.severity == "error" and x.vendor in req.vendors]
        if ev.compiler
        else []
    )
    for x in failed_compiles:
        lines.append(f"{x.kernel} on {x.vendor} {x.target}: {x.message}")
    lines += [f"{v}: measured" for v in req.vendors if v in measured]
    rows = tuple(lines)
    # the rows say each shared list: a compiler flag of one is theirs to say
    said: tuple[tuple[str, FlagKind], ...] = tuple((k, "shared_config_list") for k in shared)
    if failed_compiles:
        return Finding(
            "open",
            "a config does not compile for a required vendor",
            rows,
            blocking=True,
            flags=said,
        )
    if missing and not measured:
        return Finding("not_run", f"{', '.join(missing)} not measured yet", rows, flags=said)
    if missing:
        return Finding(
            "open",
            f"{', '.join(missing)} not measured; a config tuned on one vendor is not tuned on the other",
            rows,
            flags=said,
        )
    if shared:
        return Finding(
            "open", "measured on both, but one config list serves both vendors", rows, flags=said
        )
    return Finding("met", f"measured separately on {', '.join(req.vendors)}", rows, flags=said)


def ownership(f: Facts) -> Finding:
    """A named owner for every changed kernel, version pins, and a perf gate in CI."""
    ev = f.ev
    repo = ev.repo
    if repo is None:
        reasons = [n.said for n in ev.not_run if n.check == "repo"] or [
            "the repository was not read"
        ]
        return Finding("not_run", reasons[0])
    rows: list[tuple[bool, str]] = []  # (whether it says something is missing, the row)
    missing: list[str] = []
    unowned = [o.path for o in repo.owners if not o.owners]
    owners = sorted({w for o in repo.owners for w in o.owners})
    if unowned or not repo.owners:
        missing.append("an owner")
        rows.append(
            (
                True,
                "owner: none for "
                + (", ".join(unowned) or "the changed kernels")
                + " (add a CODEOWNERS rule or `owners` in the policy)",
            )
        )
    else:
        sources = sorted({o.source for o in repo.owners})
        rows.append((False, f"owner: {', '.join(owners)} ({', '.join(sources)})"))
    for p in repo.pins:
        if p.pinned:
            rows.append((False, f"pin: {p.package} {p.spec} ({p.source})"))
        else:
            missing.append(f"a {p.package} pin")
            where = (
                f" ({p.source}: `{p.package}{p.spec or ''}` has no upper bound)" if p.source else ""
            )
            rows.append((True, f"pin: {p.package} not pinned{where}"))
    if not repo.perf_gate.workflow:
        missing.append("a perf gate in CI")
    rows.append((not repo.perf_gate.workflow, f"perf gate: {repo.perf_gate.detail}"))
    if missing:  # what is missing first: the comment lists the first few lines
        gaps_first = (*(r for gap, r in rows if gap), *(r for gap, r in rows if not gap))
        return Finding("open", "missing " + ", ".join(missing), gaps_first)
    return Finding("met", "owner, pins and perf gate are in place", tuple(r for _, r in rows))


def rollback(f: Facts) -> Finding:
    """Every replaced hand-written kernel kept in the tree for one release."""
    rewrites = [c for c in f.changes if c.kind == "rewrite"]
    if not rewrites:
        return Finding(
            "met", "no hand-written kernel is replaced; the previous version is in history"
        )
    lines = []
    deleted = []
    for c in rewrites:
        where = ", ".join(c.old_paths)
        if c.old_kernel_kept:
            lines.append(f"{c.kernel}: kept ({where}){' ' + c.kept_how if c.kept_how else ''}")
        else:
            deleted.append(c.kernel)
            lines.append(
                f"{c.kernel}: deleted ({where}); only git history keeps it"
                f"{' ' + c.kept_how if c.kept_how else ''}"
            )
    if deleted:
        return Finding(
            "open",
            f"deleted for {', '.join(deleted)}: keep it behind a flag for one "
            "release, with a comment saying why",
            tuple(lines),
        )
    return Finding("met", "every replaced kernel is kept in the tree", tuple(lines))


CONDITIONS: tuple[tuple[str, str, Callable[[Facts], Finding]], ...] = (
    ("sweep", "A shape sweep, not a data point", sweep),
    ("first_call", "The first-call cost, measured in the process that will run this", first_call),
    ("vendors", "Both vendors, measured separately", vendors),
    ("ownership", "A named owner, a version pin and a perf gate in CI", ownership),
    ("rollback", "The old kernel kept for one release as rollback", rollback),
)


def evaluate(
    changes: Sequence[ChangeLine],
    req: Requirements,
    ev: Evidence,
    accepted: Sequence[AcceptedLine] = (),
) -> tuple[Condition, ...]:
    """Every condition in ``CONDITIONS`` order, numbered from 1 by that order. ``accepted``:
    the slower shapes an acceptance names (``bot.review.accept.judge``)."""
    facts = Facts(changes=tuple(changes), req=req, ev=ev, accepted=tuple(accepted))
    out = []
    for place, (key, title, check) in enumerate(CONDITIONS, start=1):
        found = check(facts)
        out.append(
            Condition(
                number=place,
                key=key,
                title=title,
                state=found.state,
                summary=found.summary,
                evidence=found.rows,
                per_shape=found.per_shape,
                shape_lists=found.shape_lists,
                flags=found.flags,
                blocking=found.blocking,
            )
        )
    return tuple(out)
