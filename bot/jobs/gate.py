"""The gate: from an event to a decision (what to measure, at which SHA, or why not).

Runs no pull-request code and needs only a read-only token. The policy comes from the BASE
commit through the contents API, so a pull request cannot loosen its own rules. The changes are
found by the same analysis as ``kernel-review analyze --repo`` (``analyze_range``), reading
whole files through the contents API, at most ``MAX_SOURCE_READS`` per side. The head SHA is
pinned here: a push after the decision is not covered by it. The decision carries the base
policy it was made under, so the ack, measure and report jobs read the decision, the plan and
the policy from ``gate.json`` (the gate job's own artifact), and the policy is read once per
pull request; only a fork's report (``workflow_run``, whose run's artifacts the fork's workflow
wrote) decides again here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer

from bot.analysis.changes import change_lines, part_a_tables
from bot.analysis.repo import analyze_range
from bot.contracts.accept import AcceptRecord
from bot.contracts.plan import Plan
from bot.contracts.review import PartATable
from bot.errors import CommandError, LimitError
from bot.forge.client import ForgeClient
from bot.forge.slash import (
    BenchCommand,
    check_permission,
    check_request,
    is_accept,
    parse_accept,
    parse_bench,
)
from bot.forge.types import Ignored, PullInfo, ReviewRequest
from bot.jobs.accepting import bot_login as resolve_bot_login
from bot.jobs.accepting import record_for
from bot.jobs.approval import bind_approval
from bot.plan import make_plan
from bot.policy.load import Policy, find_policy, missing_policy
from bot.revision import ApiRevision, Revision

GATE_SCHEMA_VERSION = 2  # 2: the decision carries the base policy
GATE_FILE = "gate.json"  # the decision in results-path, and in the run's results artifact
MAX_SOURCE_READS = 200  # whole files fetched per side to classify changes; the rest from the diff


class GateDecision(BaseModel):
    """What the gate decided; written as JSON for the other jobs and echoed to the user."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = GATE_SCHEMA_VERSION
    repository: str
    event: str
    pr_number: int | None = None
    actor: str = ""
    comment_id: int | None = None
    is_fork: bool = False
    base_sha: str | None = None
    head_sha: str | None = None
    run: bool = False  # the measure jobs should run
    ignored: str | None = None  # nothing to do, and why
    refusal: str | None = None  # a /bench that was refused: what to tell the commenter
    note: str | None = None  # e.g. a fork's pull request waits for a maintainer's /bench
    command: BenchCommand | None = None
    accepting: bool = False  # the comment was /bench accept (recorded, never measured)
    accept: AcceptRecord | None = None  # what it records (the ack job posts it)
    policy_source: str | None = None
    policy: Policy | None = None  # the base policy the decision was made under
    plan: Plan | None = None

    @field_serializer("policy")
    def _policy_as_written(self, policy: Policy | None) -> dict[str, Any] | None:
        # the keys the maintainers wrote, not every default: a rule that reads which keys were
        # written (a rewrite_price below a set tolerance) decides the same in every job
        return None if policy is None else policy.model_dump(mode="json", exclude_unset=True)

    @property
    def vendors(self) -> tuple[str, ...]:
        return tuple(self.plan.vendors) if self.plan is not None and self.run else ()


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: GateDecision
    pull: PullInfo | None = None
    part_a: tuple[PartATable, ...] = ()

    @property
    def policy(self) -> Policy | None:
        return self.decision.policy


def read_base_policy(base: Revision, path: str | None = None) -> tuple[Policy, str]:
    """The policy at the base commit: ``path`` if given, else the default places. (policy, source)."""
    found = find_policy(base, path)
    if found is None:
        raise missing_policy(
            base,
            place=f"on the base branch ({base.label})",
            hint="commit .github/kernel-review.toml to the base branch; the policy of a pull "
            "request's own head is never used",
            path=path,
        )
    return found


def _pull_for(req: ReviewRequest, client: ForgeClient) -> PullInfo | None:
    if req.pr_number is not None:
        return client.get_pull(req.pr_number)
    if req.head_label and req.head_sha:
        return client.find_pull(req.head_label, req.head_sha)
    return None


def decide_gate(
    found: ReviewRequest | Ignored,
    client: ForgeClient,
    *,
    policy_path: str | None = None,
    pinned_head: str | None = None,
    bot_login: str | None = None,
) -> GateResult:
    """Decide for one event. ``pinned_head``: the SHA an earlier gate pinned (report mode);
    ``bot_login``: the login the bot comments as, where it is not the token's own."""
    if isinstance(found, Ignored):
        return GateResult(
            decision=GateDecision(repository="", event=found.event, ignored=found.reason)
        )
    req = found
    base = GateDecision(
        repository=req.repo,
        event=req.event,
        pr_number=req.pr_number,
        actor=req.actor,
        comment_id=req.comment_id,
        is_fork=req.is_fork,
    )
    pull = _pull_for(req, client)
    if pull is None:
        return GateResult(
            decision=base.model_copy(update={"ignored": "no open pull request for this run"})
        )
    if pull.state != "open":
        return GateResult(
            decision=base.model_copy(
                update={"pr_number": pull.number, "ignored": "the pull request is closed"}
            )
        )
    head = pinned_head or (req.head_sha if req.event != "issue_comment" else None) or pull.head_sha
    fields = {
        "pr_number": pull.number,
        "is_fork": pull.is_fork,
        "base_sha": pull.base_sha,
        "head_sha": head,
    }
    policy, source = read_base_policy(ApiRevision(client, pull.base_sha), policy_path)
    fields.update(policy_source=source, policy=policy)
    if req.event == "issue_comment" and is_accept(req.command or ""):
        decision = base.model_copy(update={**fields, "accepting": True})
        return _accept(req, client, pull, policy, decision, bot_login)
    command: BenchCommand | None = None
    try:
        if req.event == "issue_comment":
            check_permission(req.actor, client.permission(req.actor), policy)
            command = parse_bench(req.command or "/bench", policy)
            fields["command"] = command
            bind_approval(client, req, pull, head, command)
        if head == pull.head_sha:
            diff = client.get_pull_diff(pull.number)
        else:  # the pull request moved on: review exactly the pinned head
            diff = client.get_compare_diff(pull.base_sha, head)
        analysis = analyze_range(
            ApiRevision(client, pull.base_sha, max_reads=MAX_SOURCE_READS),
            ApiRevision(client, head, max_reads=MAX_SOURCE_READS),
            diff,
            policy,
        )
        changes, part_a = change_lines(analysis), part_a_tables(analysis)
        plan = make_plan(
            changes,
            policy,
            base_sha=pull.base_sha,
            head_sha=head,
            repository=req.repo,
            pr_number=pull.number,
            kernels=command.kernels if command else None,
            vendors=command.vendors if command else None,
            dtypes=command.dtypes if command else None,
            shapes=command.shapes if command else None,
            quick=command.quick if command else False,
        )
        if command is not None and not command.kernels:
            check_request(command, policy, [k.name for k in plan.kernels])
    except (CommandError, LimitError) as exc:
        return GateResult(
            decision=base.model_copy(update={**fields, "refusal": str(exc)}), pull=pull
        )
    fields["plan"] = plan
    note = None
    run = bool(plan.kernels)
    if pull.is_fork and req.event in ("pull_request", "workflow_run"):
        run = False
        note = (
            "this pull request comes from a fork: its kernels run on the GPU runners only after "
            "a maintainer comments /bench"
        )
    elif not plan.kernels:
        note = "no kernel that the policy covers was changed; nothing to measure"
    fields.update(run=run, note=note)
    return GateResult(decision=base.model_copy(update=fields), pull=pull, part_a=tuple(part_a))


def _accept(
    req: ReviewRequest,
    client: ForgeClient,
    pull: PullInfo,
    policy: Policy,
    decision: GateDecision,
    bot_login: str | None,
) -> GateResult:
    """``/bench accept``: checked and turned into a record; nothing is measured."""
    try:
        check_permission(req.actor, client.permission(req.actor), policy, accept=True)
        command = parse_accept(req.command or "", policy)
        record = record_for(
            client.list_comments(pull.number),
            resolve_bot_login(client, bot_login),
            command,
            actor=req.actor,
            comment_id=req.comment_id,
            tolerance=policy.kernel(command.kernel).effective_tolerance(policy),
        )
    except (CommandError, LimitError) as exc:
        return GateResult(decision=decision.model_copy(update={"refusal": str(exc)}), pull=pull)
    note = f"/bench accept: {len(record.acceptances)} slower case(s) of {command.kernel} accepted"
    return GateResult(
        decision=decision.model_copy(update={"accept": record, "note": note}), pull=pull
    )


def describe(decision: GateDecision) -> str:
    """One paragraph for the log and the job summary (plain text; escape before markdown)."""
    if decision.ignored:
        return f"Nothing to do: {decision.ignored}."
    if decision.refusal:
        return f"{'/bench accept' if decision.accepting else '/bench'} refused: {decision.refusal}"
    if decision.accept is not None:
        return f"Recorded on #{decision.pr_number}: {decision.note}."
    sha = (decision.head_sha or "")[:12]
    if not decision.run:
        return f"Not measuring #{decision.pr_number} at {sha}: {decision.note or 'nothing to run'}."
    plan = decision.plan
    assert plan is not None
    kernels = ", ".join(f"{k.name} ({k.cases} cases)" for k in plan.kernels)
    return (
        f"Measuring #{decision.pr_number} at head {sha} (pinned; a later push is not covered) "
        f"on {', '.join(plan.vendors)}: {kernels}{' (quick)' if plan.quick else ''}."
    )
