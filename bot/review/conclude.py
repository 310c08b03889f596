"""One review of a base..head range in a local git repository, as far as this machine allows.

The static part needs no GPU: the policy from the base commit, the kernel changes, the plan,
the repository conditions at head and (where Triton is installed) the compiler report. Results
from GPU runners, when there are any, are merged in as evidence. Used by ``demo`` and by the
report job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bot.analysis.changes import change_lines, part_a_tables
from bot.analysis.repo import analyze_repo
from bot.contracts.evidence import (
    CompilerEvidence,
    Evidence,
    FirstCallEvidence,
    NotRun,
    SweepEvidence,
)
from bot.contracts.plan import Plan
from bot.contracts.review import PartATable, Requirements, ReviewContext, Verdict
from bot.errors import PolicyError
from bot.plan import make_plan
from bot.policy.load import POLICY_FILE, Policy, find_policy
from bot.repo_conditions import collect
from bot.review.render import render_comment
from bot.review.verdict import decide
from bot.revision import GitRevision

Progress = Callable[[str], None]
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD"}


class ReviewInputs(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    repo: Path
    base_sha: str
    head_sha: str
    repository: str = ""
    compile_report: bool = True
    note: str = ""
    sweeps: tuple[SweepEvidence, ...] = ()
    first_calls: tuple[FirstCallEvidence, ...] = ()
    compiler: CompilerEvidence | None = None  # measured elsewhere; used instead of compiling here
    not_run: tuple[NotRun, ...] = ()


class ReviewOutput(BaseModel):
    model_config = ConfigDict(frozen=True)
    verdict: Verdict
    context: ReviewContext
    evidence: Evidence
    part_a: tuple[PartATable, ...]
    plan: Plan
    markdown: str


def requirements(policy: Policy) -> Requirements:
    return Requirements(
        vendors=tuple(policy.vendors),
        deployment=policy.deployment.kind,
        first_call_budget_ms=policy.deployment.first_call_budget_ms,
        tolerance=policy.tolerance,
    )


def gpu_vendor() -> str | None:
    """``nvidia`` or ``amd`` when this machine has a usable GPU, else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return "amd" if getattr(torch.version, "hip", None) else "nvidia"


def _compiler_evidence(
    inputs: ReviewInputs, plan: Plan, policy: Policy, progress: Progress
) -> tuple[CompilerEvidence | None, list[NotRun]]:
    try:
        from checks.compiler.evidence import compiler_evidence_for_range
    except ImportError as exc:  # triton is an optional extra
        return None, [NotRun(check="compiler", reason=f"triton is not installed here ({exc.name})")]
    progress("compiler report: cross-compiling the changed Triton kernels for both vendors")
    return compiler_evidence_for_range(inputs.repo, inputs.base_sha, inputs.head_sha, plan, policy)


def static_review(inputs: ReviewInputs, progress: Progress = lambda _m: None) -> ReviewOutput:
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
    compiler = inputs.compiler
    if compiler is None and inputs.compile_report and "compiler" in plan.checks:
        compiler, more = _compiler_evidence(inputs, plan, policy, progress)
        not_run += more
    measured_vendors = {s.vendor for s in inputs.sweeps if s.timing_kind == "gpu"}
    here = gpu_vendor()
    for vendor in plan.vendors:
        if vendor in measured_vendors or not plan.kernels:
            continue
        name = VENDOR_NAMES[vendor]
        if here == vendor:
            reason = f"an {name} GPU is here, but no sweep was run: use `kernel-review bench`"
        else:
            has = f"an {VENDOR_NAMES[here]} GPU" if here else "no GPU"
            reason = f"needs an {name} GPU runner; this machine has {has}"
        not_run.append(NotRun(check="sweep", vendor=vendor, reason=reason))
        if not any(f.vendor == vendor and not f.compile_only for f in inputs.first_calls):
            not_run.append(NotRun(check="first_call", vendor=vendor, reason=reason))
    evidence = Evidence(
        sweeps=inputs.sweeps,
        first_calls=inputs.first_calls,
        compiler=compiler,
        repo=repo_facts,
        not_run=tuple(not_run),
    )
    verdict = decide(changes, requirements(policy), evidence)
    ctx = ReviewContext(
        repository=inputs.repository,
        base_sha=inputs.base_sha,
        head_sha=inputs.head_sha,
        policy_source=POLICY_FILE,
        deployment=policy.deployment.kind,
        first_call_budget_ms=policy.deployment.first_call_budget_ms,
        vendors=tuple(policy.vendors),
        note=inputs.note,
    )
    part_a = tuple(part_a_tables(analysis))
    markdown = render_comment(verdict, ctx, evidence, part_a)
    return ReviewOutput(
        verdict=verdict, context=ctx, evidence=evidence, part_a=part_a, plan=plan, markdown=markdown
    )


__all__: Sequence[str] = ("ReviewInputs", "ReviewOutput", "requirements", "static_review")
