"""One review of a base..head range in a local git repository, as far as this machine allows.

The static part needs no GPU: the policy from the base commit, the kernel changes, the plan and
the repository conditions at head. The compiler report is the caller's to supply (a function,
``CompilerReport``; the command line wires in ``checks.compiler``), and results from GPU runners,
when there are any, come in as evidence. What needs a GPU and did not run is said, with the
reason. A measurement made here, once the plan is known (``Measure``: the command line's
``review --measure`` wires in the shape sweep), adds its evidence the same way. Used by ``demo``
and by ``bench/fixture_review_gpu.py``; the review ends in ``conclude``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from bot.analysis.changes import change_lines, part_a_tables
from bot.analysis.repo import analyze_repo
from bot.contracts.base import VENDOR_NAMES
from bot.contracts.evidence import (
    CompilerEvidence,
    Evidence,
    FirstCallEvidence,
    NotRun,
    SweepEvidence,
)
from bot.contracts.plan import Plan
from bot.errors import PolicyError
from bot.plan import make_plan
from bot.policy.load import POLICY_FILE, Policy, find_policy
from bot.repo_conditions import collect
from bot.review.conclude import ReviewOutput, conclude, review_context
from bot.revision import GitRevision

Progress = Callable[[str], None]
# (repo, base_sha, head_sha, plan, policy) -> (the compiler evidence or None, what did not run)
CompilerReport = Callable[
    [Path, str, str, Plan, Policy], tuple[CompilerEvidence | None, list[NotRun]]
]

# the plan a pull request for the range would get -> the evidence measured for it on this machine
Measure = Callable[[Plan], Evidence]


class RepoCompilerReport(Protocol):
    """The command line's compiler report (``bot/cli.py``): a ``CompilerReport`` once told
    whether it may import the reviewed repository's code (``run_repo_code``: cross-compile its
    Triton kernels through their bench entry points) or not (only what compiles without it)."""

    def __call__(
        self,
        repo: Path,
        base_sha: str,
        head_sha: str,
        plan: Plan,
        policy: Policy,
        *,
        run_repo_code: bool,
    ) -> tuple[CompilerEvidence | None, list[NotRun]]: ...


class ReviewInputs(BaseModel):
    """The range to review, and the evidence measured elsewhere for its head."""

    model_config = ConfigDict(frozen=True)
    repo: Path
    base_sha: str
    head_sha: str
    repository: str = ""
    note: str = ""
    sweeps: tuple[SweepEvidence, ...] = ()
    first_calls: tuple[FirstCallEvidence, ...] = ()
    compiler: CompilerEvidence | None = None  # measured elsewhere; used instead of compiling here
    not_run: tuple[NotRun, ...] = ()


class LocalReview(BaseModel):
    """The plan a pull request for this range would get, and the review."""

    model_config = ConfigDict(frozen=True)
    plan: Plan
    review: ReviewOutput


def gpu_vendor() -> str | None:
    """``nvidia`` or ``amd`` when this machine has a usable GPU, else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return "amd" if getattr(torch.version, "hip", None) else "nvidia"


def _not_measured_here(
    plan: Plan,
    sweeps: tuple[SweepEvidence, ...],
    first_calls: tuple[FirstCallEvidence, ...],
    not_run: Sequence[NotRun] = (),
    *,
    here: str | None,
    swept_here: frozenset[str] = frozenset(),
) -> list[NotRun]:
    """A not-run for each planned vendor no GPU sweep or first call came in for, in that
    vendor's own words: what it needs where this machine (``here``: its GPU's vendor) has
    another or none, and what was not run where a sweep ran on this machine (``swept_here``)
    or came in without a first call. A check ``not_run`` already gives a reason for is left
    to it."""
    out: list[NotRun] = []
    said = {(n.check, n.vendor) for n in not_run}
    measured_vendors = {s.vendor for s in sweeps if s.timing_kind == "gpu"}
    if not plan.kernels:
        return out
    for vendor in plan.vendors:
        name = VENDOR_NAMES[vendor]
        has = ""  # what this machine has, where that is why
        if here == vendor:
            reason = (
                f"an {name} GPU is here, but no sweep was run: use `kernel-review review "
                "--measure` or `kernel-review bench`"
            )
        else:
            reason = f"needs an {name} GPU runner"
            has = "this machine has " + (f"an {VENDOR_NAMES[here]} GPU" if here else "no GPU")
        if vendor not in measured_vendors and ("sweep", vendor) not in said:
            out.append(NotRun(check="sweep", vendor=vendor, reason=reason, here=has))
        if any(f.vendor == vendor and not f.compile_only for f in first_calls):
            continue
        if ("first_call", vendor) in said:
            continue
        if vendor in swept_here:
            has = ""
            reason = (
                f"`review --measure` timed only the sweep on this {name} GPU: "
                "`kernel-review first-call` measures the first call"
            )
        elif here == vendor:
            reason = (
                f"an {name} GPU is here, but no first call was measured: use "
                "`kernel-review first-call`"
            )
        elif vendor in measured_vendors:
            has, reason = "", f"the {name} measurements that came in hold no first call"
        out.append(NotRun(check="first_call", vendor=vendor, reason=reason, here=has))
    return out


def static_review(
    inputs: ReviewInputs,
    *,
    compiler_report: CompilerReport | None = None,
    measure: Measure | None = None,
    progress: Progress = lambda _m: None,
) -> LocalReview:
    """Review ``inputs``' range; ``compiler_report``, when given and the plan has the compiler
    check and no compiler evidence came in, compiles the changed kernels here; ``measure``, when
    given and the plan has kernels to sweep, measures them here and its evidence joins the
    evidence that came in."""
    progress("reading the policy from the base commit")
    found = find_policy(GitRevision(inputs.repo, inputs.base_sha))
    if found is None:
        raise PolicyError(
            f"no policy at the base commit {inputs.base_sha[:12]}",
            hint=f"add {POLICY_FILE} (see docs/policy.md) to the default branch first",
        )
    policy = found[0]
    progress("finding the kernel changes")
    analysis = analyze_repo(inputs.repo, inputs.base_sha, inputs.head_sha, policy=policy)
    changes = change_lines(analysis)
    plan = make_plan(
        changes,
        policy,
        base_sha=inputs.base_sha,
        head_sha=inputs.head_sha,
        repository=inputs.repository,
    )
    kernel_paths = sorted({p for c in changes for p in (*c.new_paths, *c.old_paths)})
    progress("reading owners, version pins and CI workflows at head")
    repo_facts = collect(GitRevision(inputs.repo, inputs.head_sha), kernel_paths, policy.owners)

    not_run = list(inputs.not_run)
    sweeps, first_calls = inputs.sweeps, inputs.first_calls
    swept_here: frozenset[str] = frozenset()
    if measure is not None and plan.kernels and "sweep" in plan.checks:
        progress(f"shape sweep: {', '.join(k.name for k in plan.kernels)}, base against head")
        measured = measure(plan)
        swept_here = frozenset(s.vendor for s in measured.sweeps if s.timing_kind == "gpu")
        sweeps += measured.sweeps
        first_calls += measured.first_calls
        not_run += measured.not_run
    compiler = inputs.compiler
    if compiler is None and compiler_report is not None and "compiler" in plan.checks:
        progress("compiler report: compiling the changed kernels for each vendor")
        compiler, more = compiler_report(
            inputs.repo, inputs.base_sha, inputs.head_sha, plan, policy
        )
        not_run += more
    not_run += _not_measured_here(
        plan, sweeps, first_calls, not_run, here=gpu_vendor(), swept_here=swept_here
    )
    evidence = Evidence(
        sweeps=sweeps,
        first_calls=first_calls,
        compiler=compiler,
        repo=repo_facts,
        not_run=tuple(not_run),
    )
    context = review_context(
        policy,
        base_sha=inputs.base_sha,
        head_sha=inputs.head_sha,
        repository=inputs.repository,
        policy_source=POLICY_FILE,
        note=inputs.note,
    )
    review = conclude(changes, policy, evidence, context, part_a_tables(analysis))
    return LocalReview(plan=plan, review=review)
