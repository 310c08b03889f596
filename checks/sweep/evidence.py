"""The sweep for a plan, and its results reduced to the evidence the verdict reads.

``sweep_for_plan`` is what a measure job runs for one vendor and shard, in the job's worktrees of
base and head and under the base policy's limits: the plan's kernels expanded into cases (served,
small, ragged), this shard's share measured with Holm spread over the whole plan.
``to_evidence`` turns a ``SweepResult`` into ``bot.contracts.evidence.SweepEvidence``;
``bench_results_file`` reads what ``kernel-review bench --out`` wrote as the results file a
measure job would have handed on, for ``kernel-review review --results``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bot import gitutil
from bot.contracts.base import VENDORS
from bot.contracts.evidence import (
    Clause,
    Evidence,
    LaunchedKernel,
    LaunchRecord,
    ShapeLine,
    ShapeVerdict,
    SweepEvidence,
    said,
)
from bot.contracts.plan import Plan, PlanLimits
from bot.contracts.results import ResultsFile
from bot.errors import ResultsError
from bot.outputs import JOURNAL_SUFFIX, plural
from checks.checkout import checkout_for
from checks.sweep.models import CaseLaunches, ShapeResult, SweepResult, load_results
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import plan_cases
from checks.sweep.summary import from_journal
from checks.worker.contract import Side
from checks.worker_env import run_sealed

if TYPE_CHECKING:
    from bot.policy.model import Policy

SHAPE_VERDICT: dict[str, ShapeVerdict] = {
    "wrong_result": "WRONG",
    "crashed": "CRASHED",
    "cuda_error": "CRASHED",
    "timeout": "TIMEOUT",
    "oom": "OOM",
    "out_of_resources": "OOM",
    "skipped": "SKIPPED",
    "stopped": "STOPPED",
}


HEADLINE = 300  # characters of a failure's message the evidence keeps: its kind and reason
_KIND = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Failure|Exit|Interrupt))\b:?\s*(.*)")
_AT = re.compile(r"^at (\d+:\d+):?$")  # Triton's "CompilationError: at 12:22:"


def failure_headline(message: str) -> str:
    """A failure's message in one line: its kind, where it says one, and its reason, the last
    non-empty line, where Python and Triton put it ("CompilationError at 12:22: numel (2097152)
    exceeds triton maximum tensor numel (1048576)"), never the source or traceback between them
    (the sweep's own file and the job's log keep those). A one-line message is kept as it is."""
    lines = [x.strip() for x in message.splitlines() if x.strip()]
    if not lines:
        return ""
    if len(lines) == 1:
        return lines[0][:HEADLINE]
    kind, reason = "", lines[-1]
    m = _KIND.match(lines[0])
    if m and not reason.startswith(m.group(1)):
        at = _AT.match(m.group(2))
        kind = m.group(1) + (f" at {at.group(1)}" if at else "")
    return (f"{kind}: {reason}" if kind else reason)[:HEADLINE]


def _line(c: ShapeResult) -> ShapeLine:
    verdict: ShapeVerdict | None = (
        c.verdict if c.status == "ok" else SHAPE_VERDICT.get(c.status, "ERROR")
    )
    kind = "" if c.status == "ok" else c.status.replace("_", " ")
    headline = "" if c.status == "ok" else failure_headline(c.message)
    side = f"{c.failed_side}: " if c.failed_side else ""
    stopped = c.verdict == "INCONCLUSIVE" and bool(c.stop_reason)
    # the detail's parts, each a group of clauses that the cut keeps or cuts as one
    parts: list[tuple[Clause, ...]] = []
    if kind:
        parts.append((Clause(kind="failure", text=f"{kind}: {side}{headline}".strip()),))
    if c.dropped_rounds:
        parts.append((Clause(kind="dropped", text=f"{c.dropped_rounds} throttled rounds dropped"),))
    if stopped:
        how = f"{(c.stop_reason or '').replace('_', ' ')} after {plural(c.rounds, 'round')}"
        parts.append((Clause(kind="stop", text=f"stopped: {how}"),))
    if c.explained:
        parts.append(c.explained)
    parts += [(Clause(kind="note", text=note),) for note in c.notes]
    return ShapeLine(
        kernel=c.kernel,
        shape=tuple(c.shape),
        dtype=c.dtype,
        verdict=verdict or "ERROR",
        ratio=c.ratio if c.status == "ok" else None,
        ci_low=c.ci_low if c.status == "ok" else None,
        ci_high=c.ci_high if c.status == "ok" else None,
        base_us=c.base_median_us,
        head_us=c.head_median_us,
        small_or_ragged=c.category != "served",
        weight=c.weight if c.category == "served" else 0.0,
        clauses=_clauses(parts),
        stop_reason=(c.stop_reason or "") if stopped else "",
        rounds=c.rounds if stopped else 0,
        tolerance=c.tolerance,
        base_of_roofline=c.base_fraction_of_ceiling,
        head_of_roofline=c.fraction_of_ceiling,
        base_configs=c.base.configs_picked if c.base else (),
        head_configs=c.head.configs_picked if c.head else (),
        failed_side=_failed_side(c),
        failure_kind=kind,
        failure_reason=headline,
        varied_between_processes=(
            c.status == "ok" and c.decided_over == "executions" and c.executions > 1
        ),
    )


DETAIL = 500  # characters of a shape's detail in the evidence
CUT_WORTH = 120  # characters left for a part cut at a word, below which it is counted instead


def _clauses(parts: list[tuple[Clause, ...]]) -> tuple[Clause, ...]:
    """The detail's parts (each a group of clauses) in order: past ``DETAIL`` characters
    joined, as many whole parts as fit, the next one cut at a word where enough room is left
    for it to say something (a lone part too long is always cut so), and a count of the parts
    left out: no part ends mid-word. A part cut keeps its whole clauses; what is left of it is
    a note."""
    texts = [said(p) for p in parts]
    if len("; ".join(texts)) <= DETAIL:
        return tuple(c for p in parts for c in p)
    room = DETAIL - len("; 99 more in the sweep's results")
    kept: list[str] = []
    for text in texts:
        if len("; ".join([*kept, text])) > room:
            break
        kept.append(text)
    out = [c for p in parts[: len(kept)] for c in p]
    left = room - len("; ".join(kept)) - len("; ") - len(" …")
    cut = len(kept) < len(parts) and (not kept or left >= CUT_WORTH)
    if cut:
        text = texts[len(kept)][: max(left, 0) if kept else room].rsplit(" ", 1)[0] + " …"
        out += _cut(parts[len(kept)], text)
    rest = len(parts) - len(kept) - cut
    return (
        *out,
        *((Clause(kind="note", text=f"{rest} more in the sweep's results"),) * bool(rest)),
    )


def _cut(part: tuple[Clause, ...], text: str) -> list[Clause]:
    """The clauses of ``part`` that ``text``, the part cut short, still says whole, and the rest
    of it as a note."""
    out = []
    for c in part:
        if not text.startswith(c.text + "; "):
            break
        out.append(c)
        text = text[len(c.text) + 2 :]
    return [*out, Clause(kind="note", text=text)]


def _failed_side(c: ShapeResult) -> Literal["base", "head", "both"] | None:
    """The side a failed case failed on; "base" only where the head's call is known to have run
    (its check answered), since a failure that ended both sides' checks names one of them."""
    if c.status == "ok" or c.failed_side is None:
        return None
    if c.failed_side == "base" and "head" not in c.checked:
        return None
    return c.failed_side


def _tolerance_note(result: SweepResult) -> str:
    per_kernel: dict[str, float] = {}
    for c in result.cases:
        per_kernel.setdefault(c.kernel, c.tolerance)
    values = sorted(set(per_kernel.values()))
    if not values:
        return ""
    common = max(values, key=lambda v: sum(1 for t in per_kernel.values() if t == v))
    others = [f"{k} {t:.0%}" for k, t in per_kernel.items() if t != common]
    return f"{common:.0%}" + (f" ({', '.join(others)})" if others else "")


# kernels of torch and of the vendors' libraries, by their qualified name: not the repository's
# own, whatever its bench entry calls them through. torch builds CUB (and hipCUB) inside its own
# namespace, at_cuda_detail: torch.sort's radix sort and torch.cumsum's scan run as
# at_cuda_detail::cub::... kernels (torchmd-net's neighbor lists on the H100, 2026-12-05)
LIBRARY_KERNEL = re.compile(
    r"^(at|at_cuda_detail|c10|cub|thrust|cutlass|cudnn|ck|rocprim|hipcub|flashinfer)::"
    r"|^(sm\d+_xmma|ampere_|volta_|turing_|cublas|cudnn|nvjet|gemv|splitKreduce|Cijk_|rocblas)"
)


def launch_records(result: SweepResult) -> tuple[LaunchRecord, ...]:
    """What each bench entry launched at base and at head, over the cases whose check recorded
    it: each kernel with the count of cases that launched it, in the order it first ran."""
    recorded: dict[tuple[str, Side], list[CaseLaunches]] = {}
    for c in result.cases:
        sides: tuple[tuple[Side, CaseLaunches | None], ...] = (
            ("base", c.base_launches),
            ("head", c.head_launches),
        )
        for side, launched in sides:
            if launched is not None:
                recorded.setdefault((c.kernel, side), []).append(launched)
    records = []
    for (kernel, side), cases in recorded.items():
        seen: dict[str, tuple[bool, bool | None, int]] = {}  # name -> (triton, own, cases)
        for case in cases:
            for k in case.kernels:
                triton, own, count = seen.get(k.name, (k.triton, k.own, 0))
                seen[k.name] = (triton, own, count + 1)
        records.append(
            LaunchRecord(
                kernel=kernel,
                side=side,
                cases=len(cases),
                kernels=tuple(
                    LaunchedKernel(name=name, origin=_origin(name, triton, own), cases=count)
                    for name, (triton, own, count) in list(seen.items())[:64]
                ),
                profiler=all(case.profiler for case in cases),
                note=next((case.note for case in cases if case.note), ""),
            )
        )
    return tuple(records)


def _origin(name: str, triton: bool, own: bool | None) -> Literal["triton", "native", "library"]:
    """A recorded kernel's origin. ``own``: whether the side's checkout spells its name (False:
    torch's or an installed package's, whatever its namespace; None: not told, an earlier
    record, where its namespace alone tells a library's)."""
    if triton:
        return "triton"
    return "library" if own is False or LIBRARY_KERNEL.search(name) else "native"


def to_evidence(result: SweepResult, *, vendor: str | None = None) -> SweepEvidence:
    """The review's view of a sweep. A CPU-timed sweep needs ``vendor`` named explicitly and is
    marked as CPU timing so the verdict never takes it for a GPU measurement."""
    v = vendor or result.vendor
    if v not in VENDORS:
        raise ResultsError(
            f"a {result.vendor} sweep has no GPU vendor",
            hint="pass vendor= one of " + ", ".join(repr(name) for name in VENDORS),
        )
    served = result.summary.served
    return SweepEvidence(
        vendor=v,
        gpu=result.envs[0].device_name if result.envs else result.vendor,
        tolerance_note=_tolerance_note(result),
        shapes=tuple(_line(c) for c in result.cases),
        geomean_ratio=served.ratio if served else None,
        geomean_ci=(served.ci_low, served.ci_high) if served else None,
        weighted=bool(served and served.weighted),
        dropped_rounds=result.summary.dropped_rounds,
        gpu_seconds=result.gpu_seconds,
        timing_kind="cpu" if result.timing == "cpu" else "gpu",
        launches=launch_records(result),
    )


WORKING_TREE = "+working-tree"  # bench's head label for uncommitted changes (checks.sweep.cli)


def bench_results_file(path: Path, cpu_vendor: str) -> ResultsFile:
    """The sweep ``kernel-review bench --out`` wrote at ``path``, as the results file a measure
    job would have written for the same base and head: a GPU sweep under its own vendor, a
    CPU-timed one under ``cpu_vendor`` (marked as CPU timing, which the review never takes for a
    GPU measurement). Its journal (``results.partial.jsonl``), where the run was killed before
    it wrote the file, reads as the file would, the cases it did not finish not measured."""
    result = from_journal(path) if path.name.endswith(JOURNAL_SUFFIX) else load_results(path)
    head = result.head_rev
    if head.endswith(WORKING_TREE):
        raise ResultsError(
            f"{path.name} measured the working tree of {head[:12]} with uncommitted changes; a "
            "review is of commits",
            hint="commit the changes, run `kernel-review bench --head HEAD --out FILE` again "
            "and pass that file",
        )
    for side, rev in (("base", result.base_rev), ("head", head)):
        if not re.fullmatch(r"[0-9a-f]{40}", rev):
            raise ResultsError(
                f"{path.name} names its {side} as {rev[:60]!r}, not a commit's 40-hex sha",
                hint="pass an unmodified file written by `kernel-review bench --out`",
            )
    vendor = result.vendor if result.vendor in VENDORS else cpu_vendor
    return ResultsFile(
        head_sha=head,
        base_sha=result.base_rev,
        vendor=vendor,  # type: ignore[arg-type]
        evidence=Evidence(sweeps=(to_evidence(result, vendor=vendor),)),
    )


def sweep_for_plan(
    plan: Plan,
    *,
    base_root: Path,
    head_root: Path,
    limits: PlanLimits,
    policy: Policy | None = None,
    shard: tuple[int, int] = (1, 1),
    options: SweepOptions | None = None,
    work_dir: Path,
    progress: Callable[[str], None] | None = None,
    pythons: tuple[str, str] | None = None,
) -> SweepResult:
    """Measure shard ``i`` of ``n`` of the plan's cases (every n-th case, from the i-th), base
    and head checked out at ``base_root`` and ``head_root``; logs go under ``work_dir``. The base
    ``policy``'s import path and build step, when given, set up each checkout. ``pythons``:
    the base's and the head's interpreters, when each side runs under its own toolchain.
    Stopped from outside, it returns the cases it finished, the rest ``stopped`` (``run_sweep``)."""
    i, n = shard
    files = {*gitutil.tree_files(base_root), *gitutil.tree_files(head_root)}
    cases = plan_cases(
        plan.kernels,
        max_shapes=limits.max_shapes,
        max_elements_per_tensor=limits.max_elements_per_tensor,
        add_small_and_ragged=not plan.quick,
        files=files,
    )
    mine = cases.cases[i - 1 :: n]
    opts = (options or SweepOptions(max_gpu_seconds=float(limits.max_gpu_seconds))).model_copy(
        update={
            "checkout": checkout_for(policy),
            "worker_memory_bytes": (limits.worker_memory_gib or 0) * 2**30 or None,
            **({"pythons": pythons} if pythons else {}),
        }
    )
    return run_sealed(
        (base_root, head_root),
        lambda: run_sweep(
            mine,
            base_root=base_root,
            head_root=head_root,
            base_rev=plan.base_sha,
            head_rev=plan.head_sha,
            options=opts,
            work_dir=work_dir,
            progress=progress,
            partial_path=work_dir / "partial.jsonl",
            notes=cases.notes,
            family_size=len(cases.cases),
        ),
        progress=progress,
    )
