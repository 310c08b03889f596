"""The one tail of every review: changes, policy, evidence and context in; verdict, comment and
job summary out. Pure.

Report mode (``bot.jobs.report``), the demo and the local review (``bot.review.local``) all end
here, so the requirements are read from the policy in one place and the context the comment is
rendered in is built in one place. The comment is whole: ``bot.forge.sticky.fit_body`` cuts
it to GitHub's limit when it is posted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from pydantic import BaseModel, ConfigDict

from bot.contracts.accept import Acceptance
from bot.contracts.evidence import Evidence
from bot.contracts.review import ChangeLine, PartATable, Requirements, ReviewContext, Verdict
from bot.policy.load import Policy
from bot.review.accept import judge, policy_acceptances
from bot.review.render import render_comment
from bot.review.verdict import decide


class ReviewOutput(BaseModel):
    """A concluded review: the verdict, what it was decided from, and its two renderings."""

    model_config = ConfigDict(frozen=True)
    verdict: Verdict
    comment: str  # the pull-request comment, whole
    summary: str  # the job summary: the comment plus one compiler row per variant
    context: ReviewContext
    evidence: Evidence
    part_a: tuple[PartATable, ...]


def requirements(policy: Policy) -> Requirements:
    """The parts of the policy the verdict needs."""
    return Requirements(
        vendors=tuple(policy.vendors),
        deployment=policy.deployment.kind,
        first_call_budget_ms=policy.deployment.first_call_budget_ms,
        tolerance=policy.tolerance,
        tolerances={k.name: k.effective_tolerance(policy) for k in policy.kernels},
        rewrite_price=policy.rewrite_price,
        prices={k.name: k.effective_rewrite_price(policy) for k in policy.kernels},
    )


def review_context(
    policy: Policy,
    *,
    base_sha: str,
    head_sha: str,
    repository: str,
    policy_source: str,
    note: str = "",
) -> ReviewContext:
    """What the comment says it reviewed: the range, the policy's source and its deployment."""
    return ReviewContext(
        repository=repository,
        base_sha=base_sha,
        head_sha=head_sha,
        policy_source=policy_source,
        deployment=policy.deployment.kind,
        first_call_budget_ms=policy.deployment.first_call_budget_ms,
        vendors=tuple(policy.vendors),
        note=note,
        owners=tuple(policy.owners),
        kernels=tuple(k.name for k in policy.kernels),
    )


def conclude(
    changes: Sequence[ChangeLine],
    policy: Policy,
    evidence: Evidence,
    context: ReviewContext,
    part_a: Sequence[PartATable] = (),
    *,
    acceptances: Sequence[Acceptance] = (),
    today: date | None = None,
) -> ReviewOutput:
    """Decide on ``changes`` under ``policy`` from ``evidence``, and render the comment and the
    job summary in ``context`` (made by ``review_context``). ``acceptances``: those recorded on
    the pull request (``/bench accept``); the policy's ``[[accepted]]`` entries are added here,
    and judged as of ``today`` (default: the date now)."""
    accepted = judge(
        evidence.sweeps,
        (*acceptances, *policy_acceptances(policy)),
        today or date.today(),
    )
    part_a = tuple(part_a)
    if context.base_sha == context.head_sha and not any(c.kind == "toolchain" for c in changes):
        # one commit on both sides has no code difference; only a toolchain tried against the
        # pinned one (the scheduled run) is a difference there
        verdict = Verdict(
            decision="approve",
            why=f"Base and head are the same commit ({context.head_sha[:7]}): there is no "
            "difference to review.",
            conditions=(),
            not_asking_for=(),
            changes=(),
            no_kernel_changes=True,
        )
    else:
        verdict = decide(changes, requirements(policy), evidence, accepted, part_a)
    return ReviewOutput(
        verdict=verdict,
        comment=render_comment(verdict, context, evidence, part_a),
        summary=render_comment(verdict, context, evidence, part_a, full=True),
        context=context,
        evidence=evidence,
        part_a=part_a,
    )
