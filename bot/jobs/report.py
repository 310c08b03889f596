"""The report: merge the measure jobs' results, conclude the review, and say it on GitHub.

The results files come from GPU runners that executed pull-request code, so they are untrusted
data: size-capped, schema-validated (extra keys refused), and only accepted for the pinned head
SHA. The pull request number and the SHAs come from the event and the API, never from them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from bot.contracts.accept import Acceptance, AcceptedLine
from bot.contracts.evidence import Evidence, NotRun, merge_all
from bot.contracts.queue import QueueReport
from bot.contracts.repo import RepoConditions
from bot.contracts.results import ResultsFile
from bot.contracts.review import PartATable, Verdict
from bot.errors import ResultsError
from bot.escape import workflow_command
from bot.forge.types import CheckAnnotation
from bot.jobs.gate import GateDecision
from bot.policy.load import Policy
from bot.review.conclude import ReviewOutput, conclude, review_context
from bot.review.render import accepted_line

MAX_RESULTS_BYTES = 32 * 2**20
MAX_RESULTS_FILES = 64
MAX_ANNOTATIONS = 50  # GitHub shows at most 10 warnings per step; keep the log bounded too
MAX_CHECK_ANNOTATIONS_TOTAL = 1000  # on one check run, sent 50 per request


RATIO_SLACK = 1.25  # the ratio of the median times against the paired interval, either way


def _finite_only(constant: str) -> float:
    raise ValueError(f"{constant} is not a finite number")


def _inconsistent(results: ResultsFile) -> str | None:
    """Why the numbers contradict each other, or None. A check on a forged or corrupted file;
    numbers the measured code made up consistently are not caught here."""
    for sweep in results.evidence.sweeps:
        for s in sweep.shapes:
            where = f"{s.kernel} {'x'.join(map(str, s.shape))} {s.dtype}"
            if s.ci_low is not None and s.ci_high is not None and s.ci_low > s.ci_high:
                return f"{where}: confidence interval {s.ci_low:g} > {s.ci_high:g}"
            if s.ratio is None:
                continue
            if (s.verdict == "SLOWER" and s.ratio <= 1) or (s.verdict == "FASTER" and s.ratio >= 1):
                return f"{where}: {s.verdict} with a ratio of {s.ratio:g}"
            if s.base_us and s.head_us:
                # The ratio is a paired estimate over executions and the times are medians of
                # each execution's median: where executions disagree (an autotuner picking
                # differently in each process) the two part by up to the interval's width.
                times = s.head_us / s.base_us
                low = s.ci_low if s.ci_low is not None else s.ratio
                high = s.ci_high if s.ci_high is not None else s.ratio
                if not low / RATIO_SLACK <= times <= high * RATIO_SLACK:
                    return (
                        f"{where}: ratio {s.ratio:g} [{low:g}, {high:g}], but the times give "
                        f"{times:g} ({s.head_us:g} us / {s.base_us:g} us)"
                    )
    return None


def _load(path: Path, head_sha: str, vendors: Sequence[str] | None) -> ResultsFile | str:
    """One results file, or why it is not used."""
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        return f"{path.name}: {size:,} bytes, over the {MAX_RESULTS_BYTES:,}-byte cap"
    try:
        data = json.loads(path.read_bytes(), parse_constant=_finite_only)
        results = ResultsFile.model_validate(data)
    except (ValueError, ValidationError, RecursionError) as exc:
        first = str(exc).splitlines()[0:3]
        return f"{path.name}: not a results file ({' '.join(first)[:200]})"
    if results.head_sha != head_sha:
        return f"{path.name}: measured head {results.head_sha[:12]}, not the pinned {head_sha[:12]}"
    i, _, n = results.shard.partition("/")
    if not 1 <= int(i) <= int(n):
        return f"{path.name}: shard {results.shard} is not I/N with 1 <= I <= N"
    if vendors is not None and results.vendor not in vendors:
        return f"{path.name}: the plan does not measure {results.vendor}"
    why = _inconsistent(results)
    return f"{path.name}: numbers that contradict each other ({why})" if why else results


def read_results(
    paths: Sequence[Path], *, head_sha: str, vendors: Sequence[str] | None = None
) -> tuple[list[ResultsFile], list[str]]:
    """The results files of the plan's vendors (``vendors``; None: any) at the pinned head, one
    per vendor and shard of one split; anything else is dropped with a reason. Two files for one
    vendor and shard are both dropped (which is genuine cannot be told), and so are all of a
    vendor's files when they disagree on the number of shards."""
    if len(paths) > MAX_RESULTS_FILES:
        raise ResultsError(
            f"{len(paths)} results files, more than {MAX_RESULTS_FILES}",
            hint="one file per vendor and shard is expected; check the artifact download step",
        )
    loaded: list[tuple[ResultsFile, tuple[int, int]]] = []
    dropped: list[str] = []
    for path in sorted(paths):
        got = _load(path, head_sha, vendors)
        if isinstance(got, str):
            dropped.append(got)
        else:
            i, _, n = got.shard.partition("/")
            loaded.append((got, (int(i), int(n))))
    refused: set[tuple[str, int, int]] = set()
    for vendor in sorted({r.vendor for r, _ in loaded}):
        shards = [shard for r, shard in loaded if r.vendor == vendor]
        splits = sorted({n for _, n in shards})
        twice = sorted({s for s in shards if shards.count(s) > 1})
        if len(splits) > 1:
            dropped.append(
                f"{vendor}: results split {' and '.join(map(str, splits))} ways; none used"
            )
            refused |= {(vendor, *s) for s in shards}
        elif twice:
            dropped.append(
                f"{vendor}: more than one results file for shard "
                + ", ".join(f"{i}/{n}" for i, n in twice)
                + "; none of them used"
            )
            refused |= {(vendor, *s) for s in twice}
    kept = [r for r, shard in loaded if (r.vendor, *shard) not in refused]
    return kept, dropped


def merge_evidence(
    results: Sequence[ResultsFile],
    vendors: Sequence[str],
    *,
    refused: str | None = None,
    queued: QueueReport | None = None,
) -> Evidence:
    """All vendors' and shards' evidence in one; a required vendor with no results is not run
    (``refused``: why the whole artifact was refused, said for each such vendor), and so is a
    vendor whose measure job no runner picked up (``queued``), said with its runner labels.

    A runner's file contributes what runners measure: the repository facts are read by the
    report job itself, never taken from a runner. A compiler part with no rows and no flags
    counts as no compiler part."""
    merged = merge_all(
        r.evidence.model_copy(update={"repo": None, "rollbacks": ()}) for r in results
    )
    seen = {r.vendor for r in results}
    stuck = queued.vendors if queued is not None else ()
    missing = _missing_shards(results, vendors) + tuple(
        NotRun(
            check="sweep",
            vendor=vendor,  # type: ignore[arg-type]
            reason=f"the results were refused ({refused}); none of them were used"
            if refused
            else queued.reason(vendor)
            if queued is not None and vendor in stuck
            else f"no results came back from the {vendor} runner (the job failed, "
            "was cancelled, or no runner with that label is online)",
        )
        for vendor in vendors
        if vendor not in seen or vendor in stuck
    )
    compiler = merged.compiler
    if compiler is not None and not (compiler.rows or compiler.flags):
        compiler = None
    return merged.merge(Evidence(not_run=missing)).model_copy(update={"compiler": compiler})


def _missing_shards(results: Sequence[ResultsFile], vendors: Sequence[str]) -> tuple[NotRun, ...]:
    """A vendor whose measure job was split N ways and some of whose shards sent no results
    (a job that failed or was cancelled, or a file refused: ``read_results``): the cases of
    those shards were not measured, which the review must say rather than read the shards that
    came as the whole sweep."""
    out = []
    for vendor in vendors:
        shards = [r.shard.partition("/") for r in results if r.vendor == vendor]
        if not shards:
            continue  # the whole vendor: said below
        n = int(shards[0][2])
        lost = sorted(set(range(1, n + 1)) - {int(i) for i, _, _ in shards})
        if lost:
            which = ", ".join(f"{i}/{n}" for i in lost)
            out.append(
                NotRun(
                    check="sweep",
                    vendor=vendor,  # type: ignore[arg-type]
                    reason=f"no results came back for shard {which} of the {vendor} measure "
                    "job (the job failed or was cancelled, or its file was refused): the "
                    "shapes of that shard were not measured",
                )
            )
    return tuple(out)


NoteLevel = Literal["notice", "warning", "failure"]


@dataclass(frozen=True)
class Note:
    """One thing to point at in the code: the log's annotations and the check run's."""

    level: NoteLevel
    title: str
    message: str
    path: str | None = None
    lines: tuple[int, int] | None = None


def notes(
    evidence: Evidence, decision: GateDecision, accepted: Sequence[AcceptedLine] = ()
) -> list[Note]:
    """The kernels that regress, fail or spill, each on the changed kernel's lines where the
    analysis found them (else on its file); a slower shape an acceptance covers is a notice.
    A note goes on a file only when the pull request's diff changed that file (the gate's
    analysis lists them); any other path, from a results file or the policy, is dropped and
    the note is kept without one."""
    plan = decision.plan
    touched = {p for c in plan.changes for p in (*c.new_paths, *c.old_paths)} if plan else set()
    paths = {k.name: k.paths for k in plan.kernels} if plan else {}
    changes = {c.kernel: c for c in plan.changes} if plan else {}
    judged = {(a.kernel, a.shape, a.dtype, a.vendor): a for a in accepted}
    out: list[Note] = []
    for sweep in evidence.sweeps:
        for s in (*sweep.slower, *sweep.failures):
            change = changes.get(s.kernel)
            files = (change.new_paths or change.old_paths) if change else ()
            files = files or tuple(p for p in paths.get(s.kernel, ()) if "*" not in p)
            lines = change.new_lines if change and change.new_paths else None
            case = f"{s.kernel} {'x'.join(map(str, s.shape))} {s.dtype} on {sweep.vendor}"
            judgement = judged.get((s.kernel, s.shape, s.dtype, sweep.vendor))
            level: NoteLevel
            if judgement is not None:
                level = "notice" if judgement.state == "accepted" else "warning"
                title = f"kernel-review: {judgement.state} regression"
                message = accepted_line(judgement)
            elif s.verdict == "SLOWER":
                ratio = f"{s.ratio:.3f}x the base time" if s.ratio else "slower"
                level, title, message = "warning", "kernel-review: slower", f"{case}: {ratio}"
            else:
                level, title = "failure", "kernel-review: failed"
                message = f"{case}: {s.verdict.lower()}"
            files = tuple(f for f in files if f in touched)
            out.append(Note(level, title, message, files[0] if files else None, lines))
    if evidence.compiler is not None:
        for f in evidence.compiler.flags:
            if f.severity == "info":
                continue
            out.append(
                Note(
                    "warning" if f.severity == "warning" else "failure",
                    "kernel-review: compiler",
                    f"{f.kernel} on {f.vendor} {f.target}: {f.message}",
                    f.path if f.path in touched else None,
                    (f.line, f.line) if f.line and f.path in touched else None,
                )
            )
    return out


def log_annotations(
    evidence: Evidence, decision: GateDecision, accepted: Sequence[AcceptedLine] = ()
) -> list[str]:
    """``::warning`` lines for the log (escaped; bounded)."""
    command = {"notice": "notice", "warning": "warning", "failure": "error"}
    return [
        workflow_command(
            command[n.level],
            n.message,
            file=n.path,
            line=n.lines[0] if n.lines else None,
            title=n.title,
        )
        for n in notes(evidence, decision, accepted)[:MAX_ANNOTATIONS]
    ]


def check_annotations(
    evidence: Evidence, decision: GateDecision, accepted: Sequence[AcceptedLine] = ()
) -> list[CheckAnnotation]:
    """The check run's annotations: every note that names a file (the API needs a line: a
    note without one goes on line 1), at most ``MAX_CHECK_ANNOTATIONS_TOTAL``."""
    out = [
        CheckAnnotation(
            path=n.path,
            start_line=n.lines[0] if n.lines else 1,
            end_line=n.lines[1] if n.lines else 1,
            level=n.level,
            title=n.title,
            message=n.message,
        )
        for n in notes(evidence, decision, accepted)
        if n.path
    ]
    return out[:MAX_CHECK_ANNOTATIONS_TOTAL]


CHECK_CONCLUSIONS = {
    "approve": "success",
    "approve_with_conditions": "action_required",  # like a pending status: not green yet
    "request_changes": "failure",
}


def check_for(verdict: Verdict, advisory: str | None) -> tuple[str, str]:
    """(conclusion, title) of the check run; an ``advisory`` verdict (its reason) never
    concludes success."""
    conclusion = CHECK_CONCLUSIONS[verdict.decision]
    title = status_for(verdict)[1]
    if advisory is not None:
        conclusion = "action_required" if conclusion == "success" else conclusion
        title = f"Advisory ({advisory}): {title}"
    return conclusion, title


def status_for(verdict: Verdict) -> tuple[str, str]:
    """(state, description) of the merge-gate commit status."""
    if verdict.decision == "approve":
        return "success", "Approve: every condition met"
    if verdict.decision == "request_changes":
        blocking = [c.title for c in verdict.conditions if c.blocking]
        return "failure", "Request changes: " + "; ".join(blocking)
    unfinished = sum(1 for c in verdict.conditions if c.state != "met")
    return (
        "pending",
        f"Approve with conditions: {unfinished} of {len(verdict.conditions)} not met yet",
    )


def build_report(
    decision: GateDecision,
    policy: Policy,
    evidence: Evidence,
    repo: RepoConditions | None,
    *,
    part_a: Sequence[PartATable] = (),
    acceptances: Sequence[Acceptance] = (),
) -> ReviewOutput:
    """Pure: the merged evidence, with the repository facts and why nothing was measured (when
    nothing was), concluded into the verdict, the comment and the full job summary."""
    assert decision.plan is not None and decision.head_sha and decision.base_sha
    if not decision.run and decision.note:
        evidence = evidence.model_copy(
            update={"not_run": (*evidence.not_run, NotRun(check="sweep", reason=decision.note))}
        )
    evidence = evidence.model_copy(update={"repo": repo})
    context = review_context(
        policy,
        base_sha=decision.base_sha,
        head_sha=decision.head_sha,
        repository=decision.repository,
        policy_source=decision.policy_source or "",
    )
    return conclude(
        decision.plan.changes, policy, evidence, context, part_a, acceptances=acceptances
    )
