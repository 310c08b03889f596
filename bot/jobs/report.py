"""The report: merge the measure jobs' results, conclude the review, and say it on GitHub.

The results files come from GPU runners that executed pull-request code, so they are untrusted
data: size-capped, schema-validated (extra keys refused), and only accepted for the pinned head
SHA. The pull request number and the SHAs come from the event and the API, never from them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from bot.contracts.evidence import Evidence, NotRun, merge_all
from bot.contracts.repo import RepoConditions
from bot.contracts.results import ResultsFile
from bot.contracts.review import PartATable, Verdict
from bot.errors import ResultsError
from bot.escape import workflow_command
from bot.jobs.gate import GateDecision
from bot.policy.load import Policy
from bot.review.conclude import ReviewOutput, conclude, review_context

MAX_RESULTS_BYTES = 32 * 2**20
MAX_RESULTS_FILES = 64
MAX_ANNOTATIONS = 50  # GitHub shows at most 10 warnings per step; keep the log bounded too


RATIO_SLACK = 1.25  # the paired ratio against the ratio of the median times, either way


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
                times = s.head_us / s.base_us
                if not 1 / RATIO_SLACK <= s.ratio / times <= RATIO_SLACK:
                    return (
                        f"{where}: ratio {s.ratio:g}, but the times give {times:g} "
                        f"({s.head_us:g} us / {s.base_us:g} us)"
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


def merge_evidence(results: Sequence[ResultsFile], vendors: Sequence[str]) -> Evidence:
    """All vendors' and shards' evidence in one; a required vendor with no results is not run.

    A runner's file contributes what runners measure: the repository facts are read by the
    report job itself, never taken from a runner. A compiler part with no rows and no flags
    counts as no compiler part."""
    merged = merge_all(
        r.evidence.model_copy(update={"repo": None, "rollbacks": ()}) for r in results
    )
    seen = {r.vendor for r in results}
    missing = tuple(
        NotRun(
            check="sweep",
            vendor=vendor,  # type: ignore[arg-type]
            reason=f"no results came back from the {vendor} runner (the job failed, "
            "was cancelled, or no runner with that label is online)",
        )
        for vendor in vendors
        if vendor not in seen
    )
    compiler = merged.compiler
    if compiler is not None and not (compiler.rows or compiler.flags):
        compiler = None
    return merged.merge(Evidence(not_run=missing)).model_copy(update={"compiler": compiler})


def annotations(evidence: Evidence, decision: GateDecision) -> list[str]:
    """``::warning`` lines for the kernels that regress or spill (escaped; bounded)."""
    plan = decision.plan
    paths = {k.name: k.paths for k in plan.kernels} if plan else {}
    changes = {c.kernel: (c.new_paths or c.old_paths) for c in plan.changes} if plan else {}
    out: list[str] = []
    for sweep in evidence.sweeps:
        for s in (*sweep.slower, *sweep.failures):
            files = changes.get(s.kernel) or tuple(
                p for p in paths.get(s.kernel, ()) if "*" not in p
            )
            what = (
                f"{s.ratio:.3f}x the base time"
                if s.verdict == "SLOWER" and s.ratio
                else s.verdict.lower()
            )
            out.append(
                workflow_command(
                    "warning",
                    f"{s.kernel} {'x'.join(map(str, s.shape))} {s.dtype} on {sweep.vendor}: {what}",
                    file=files[0] if files else None,
                    title="kernel-review: slower"
                    if s.verdict == "SLOWER"
                    else "kernel-review: failed",
                )
            )
    if evidence.compiler is not None:
        for f in evidence.compiler.flags:
            if f.severity == "info":
                continue
            out.append(
                workflow_command(
                    "warning" if f.severity == "warning" else "error",
                    f"{f.kernel} on {f.vendor} {f.target}: {f.message}",
                    file=f.path,
                    line=f.line,
                    title="kernel-review: compiler",
                )
            )
    return out[:MAX_ANNOTATIONS]


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
    return conclude(decision.plan.changes, policy, evidence, context, part_a)
