"""``kernel-review job plan|ack|measure|wait|report|scheduled|scheduled-report``: the GitHub
Actions glue; and ``kernel-review review``, the local review's command.

The only module that reads the environment (GITHUB_* and the action's INPUT_*); it builds the
pieces and passes them in, so everything below it can be tested with plain values.

- plan (hosted runner, read-only token): decide what to measure at which pinned SHA, write
  ``gate.json`` and the job outputs. Runs no pull-request code.
- ack (write token, no checkout): react to a ``/bench`` comment (eyes, then rocket or confused)
  and reply: the refusal with what is allowed, or the pinned SHA that will be measured.
- measure (GPU runner, ``permissions: {}``, no token): run the plan for one vendor and shard.
  Stopped (the job cancelled or at its ``timeout-minutes``), it writes what it measured, the
  rest not run, and exits 7.
- report (write token): read the gate's plan and policy (``gate.json``, as the ack does; the
  gate is not run again), merge the results, decide, update the one sticky comment, set the
  merge-gate status, write the job summary and annotations; each kernel's recorded history on
  the default branch (the history branch's ``history.jsonl``) comes into the review.
- scheduled (GPU runner, no token; ``schedule`` or ``workflow_dispatch``): measure the policy's
  kernels at the default branch's head under the pinned toolchain and under the newest release
  the pin allows or ``[toolchain] upgrade`` names; writes ``scheduled-<vendor>.json``.
- scheduled-report (issues: write): append each vendor's record to the history file and open
  or update one issue when a kernel would regress under the newest release.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.contracts.accept import ReviewState
from bot.contracts.base import VENDORS
from bot.errors import (
    EXIT_STOPPED,
    ForgeError,
    GitHubError,
    KernelReviewError,
    ResultsError,
    UsageError,
)
from bot.escape import log_safe, md_code, md_inline
from bot.forge.client import ForgeClient, ForgeRequestError
from bot.forge.types import ReviewRequest
from bot.github.events import DEFAULT_BOT_LOGINS, parse_event
from bot.jobs.accepting import record_comment
from bot.jobs.approval import advisory_reason, advisory_status, refusal_comment, told_before
from bot.jobs.gate import GATE_FILE, GateDecision, GateResult, decide_gate, describe
from bot.outputs import plural

MODES = ("plan", "ack", "measure", "wait", "report", "scheduled", "scheduled-report")
MAX_EVENT_BYTES = 25 * 2**20  # GitHub caps webhook payloads at 25 MB
MAX_SUMMARY_BYTES = 1_000_000  # GitHub refuses step summaries over 1 MiB
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_SHARD_RE = re.compile(r"^([0-9]{1,3})/([0-9]{1,3})$")

if TYPE_CHECKING:
    from bot.contracts.plan import Plan
    from bot.contracts.results import ResultsFile


@dataclass(frozen=True)
class ActionEnv:
    """Everything the action reads from its environment, read once."""

    event_name: str
    event_path: Path | None
    token: str
    api_url: str
    repository: str
    step_summary: Path | None
    output: Path | None
    run_url: str | None
    run_id: int | None
    policy_path: str | None
    bot_login: str | None
    head_sha: str | None
    results_path: Path
    artifact_name: str
    vendor: str | None
    shard: str
    request_spacing_s: tuple[float, float] | None = (0.25, 1.0)
    history_branch: str = "kernel-review-history"
    history_path: Path = Path("kernel-review-history") / "history.jsonl"
    sha: str | None = None  # GITHUB_SHA: for a scheduled run, the default branch's head
    server_url: str = "https://github.com"  # GITHUB_SERVER_URL: for links to commits
    queue_timeout_s: float = 30 * 60.0  # how long a measure job may wait for a runner
    queue_file: Path = Path("kernel-review-queue.json")  # the wait's report, for the report
    wait_for: tuple[str, ...] = ()  # the vendors whose measure jobs the wait expects
    runner_isolation: str = "sandbox"  # or "disposable": one job per fresh machine
    workflow_ref: str | None = None  # GITHUB_WORKFLOW_REF: owner/name/PATH@REF of this workflow

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> ActionEnv:
        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        server = get("GITHUB_SERVER_URL") or "https://github.com"
        repo = get("GITHUB_REPOSITORY") or ""
        run_id = get("GITHUB_RUN_ID")
        head = get("INPUT_HEAD_SHA")
        if head is not None and not _SHA_RE.fullmatch(head):
            raise GitHubError(
                f"head-sha {head[:60]!r} is not a 40-hex commit SHA",
                hint="pass the gate job's head-sha output",
            )
        isolation = get("INPUT_RUNNER_ISOLATION") or "sandbox"
        if isolation not in ("sandbox", "disposable"):
            raise UsageError(
                f"runner-isolation {isolation[:40]!r} is not sandbox or disposable",
                hint="leave it out (sandbox), or write disposable for a runner that gets a fresh "
                "machine for every job",
            )
        return cls(
            event_name=get("GITHUB_EVENT_NAME") or "",
            event_path=Path(p) if (p := get("GITHUB_EVENT_PATH")) else None,
            token=get("INPUT_TOKEN") or get("GITHUB_TOKEN") or "",
            api_url=get("GITHUB_API_URL") or "https://api.github.com",
            repository=repo,
            step_summary=Path(p) if (p := get("GITHUB_STEP_SUMMARY")) else None,
            output=Path(p) if (p := get("GITHUB_OUTPUT")) else None,
            run_url=f"{server}/{repo}/actions/runs/{run_id}" if repo and run_id else None,
            run_id=int(run_id) if run_id and run_id.isdigit() else None,
            policy_path=get("INPUT_POLICY_PATH"),
            bot_login=get("INPUT_BOT_LOGIN"),
            head_sha=head,
            results_path=Path(get("INPUT_RESULTS_PATH") or "kernel-review-results"),
            artifact_name=get("INPUT_ARTIFACT_NAME") or "kernel-review-results",
            vendor=get("INPUT_VENDOR"),
            shard=get("INPUT_SHARD") or "1/1",
            request_spacing_s=_spacing(get("KERNEL_REVIEW_REQUEST_SPACING_S")),
            workflow_ref=get("GITHUB_WORKFLOW_REF"),
            history_branch=get("INPUT_HISTORY_BRANCH") or "kernel-review-history",
            history_path=Path(get("INPUT_HISTORY_PATH") or "kernel-review-history/history.jsonl"),
            sha=get("GITHUB_SHA"),
            server_url=server,
            queue_timeout_s=_minutes(get("KERNEL_REVIEW_QUEUE_TIMEOUT_MINUTES")),
            queue_file=Path(get("KERNEL_REVIEW_QUEUE_FILE") or "kernel-review-queue.json"),
            wait_for=_vendor_list(get("KERNEL_REVIEW_VENDORS")),
            runner_isolation=isolation,
        )


def _minutes(text: str | None) -> float:
    """KERNEL_REVIEW_QUEUE_TIMEOUT_MINUTES in seconds; 30 minutes when unset."""
    if text is None:
        return 30 * 60.0
    try:
        minutes = float(text)
    except ValueError:
        minutes = -1.0
    if not 0 < minutes <= 24 * 60:
        raise UsageError(
            f"KERNEL_REVIEW_QUEUE_TIMEOUT_MINUTES={text[:40]!r} is not a number of minutes "
            "between 0 and 1440",
            hint="e.g. 30: how long a measure job may wait in the queue for a runner",
        )
    return minutes * 60


def _vendor_list(text: str | None) -> tuple[str, ...]:
    """KERNEL_REVIEW_VENDORS: the gate's vendors output, a JSON list."""
    from bot.contracts.base import VENDORS

    if text is None:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(v in VENDORS for v in value):
        raise UsageError(
            f"KERNEL_REVIEW_VENDORS={text[:60]!r} is not a JSON list of vendors "
            f"({', '.join(VENDORS)})",
            hint="pass the gate job's vendors output: ${{ needs.gate.outputs.vendors }}",
        )
    return tuple(value)


def _spacing(text: str | None) -> tuple[float, float] | None:
    """``between,writes`` seconds between GitHub requests (PyGithub's throttle); default 0.25,1."""
    if text is None:
        return (0.25, 1.0)
    try:
        between, writes = (float(x) for x in text.split(","))
    except ValueError:
        raise GitHubError(
            f"KERNEL_REVIEW_REQUEST_SPACING_S={text[:40]!r} is not two numbers",
            hint="e.g. 0.25,1.0 (seconds between requests, and between writes)",
        ) from None
    return None if between <= 0 and writes <= 0 else (max(0.0, between), max(0.0, writes))


# --- small edges ------------------------------------------------------------------------------


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        raise GitHubError(
            "GITHUB_EVENT_PATH is not set: kernel-review job runs one job of the GitHub workflow",
            hint="run it inside GitHub Actions; to review on this machine: "
            "kernel-review review --repo . --base REV",
        )
    try:
        raw = path.read_bytes()[: MAX_EVENT_BYTES + 1]
    except OSError as exc:
        raise GitHubError(
            f"cannot read the event file {path}: {exc.strerror}", hint="check GITHUB_EVENT_PATH"
        ) from None
    if len(raw) > MAX_EVENT_BYTES:
        raise GitHubError(
            "the event payload is over 25 MB", hint="this is not a GitHub webhook payload"
        )
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise GitHubError(
            f"the event file is not JSON: {exc}", hint="check GITHUB_EVENT_PATH"
        ) from None
    if not isinstance(data, dict):
        raise GitHubError("the event payload is not a JSON object", hint="check GITHUB_EVENT_PATH")
    return data


def set_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Append step outputs; a value with a newline goes in a heredoc with a random delimiter."""
    if path is None:
        return
    with path.open("a", encoding="utf-8") as out:
        for name, value in values.items():
            if "\n" in value or "\r" in value:
                delim = f"ghadelim_{secrets.token_hex(16)}"
                out.write(f"{name}<<{delim}\n{value}\n{delim}\n")
            else:
                out.write(f"{name}={value}\n")


def write_summary(path: Path | None, markdown: str) -> None:
    if path is None:
        return
    data = markdown.encode("utf-8")
    if len(data) > MAX_SUMMARY_BYTES:
        data = (
            data[: MAX_SUMMARY_BYTES - 200]
            + b"\n\n... (summary cut at GitHub's 1 MiB limit; the artifact has everything)\n"
        )
    with path.open("ab") as out:
        out.write(data + b"\n")


def log(text: str) -> None:
    print(log_safe(text), flush=True)


ClientFactory = Callable[[], ForgeClient]


def _client(env: ActionEnv, **kw: Any) -> ForgeClient:
    """The forge's client: GitHub's, for the repository the workflow runs in."""
    from bot.github.api import GitHubClient

    return GitHubClient(
        env.token, env.repository, api_url=env.api_url, spacing_s=env.request_spacing_s, **kw
    )


# --- modes ------------------------------------------------------------------------------------


def _gate(env: ActionEnv, client_factory: ClientFactory) -> tuple[GateResult, ForgeClient | None]:
    found = parse_event(env.event_name, load_event(env.event_path), bot_logins=_bot_logins(env))
    if not isinstance(found, ReviewRequest):
        return decide_gate(found, None), None  # type: ignore[arg-type]
    client = client_factory()
    decided = decide_gate(
        found,
        client,
        policy_path=env.policy_path,
        pinned_head=env.head_sha,
        bot_login=env.bot_login,
    )
    return decided, client


def _bot_logins(env: ActionEnv) -> tuple[str, ...]:
    return (*DEFAULT_BOT_LOGINS, env.bot_login) if env.bot_login else DEFAULT_BOT_LOGINS


def _gate_outputs(d: GateDecision, results: Path) -> dict[str, str]:
    return {
        "run": "true" if d.run else "false",
        "head-sha": d.head_sha or "",
        "base-sha": d.base_sha or "",
        "pr-number": str(d.pr_number or ""),
        "vendors": json.dumps(list(d.vendors)),
        "results-path": str(results),
    }


SCHEDULED_EVENTS = ("schedule", "workflow_dispatch")


def scheduled_plan(env: ActionEnv, client_factory: ClientFactory) -> int:
    """The scheduled workflow's plan: the vendors the default branch's policy lists (its
    measure matrix), so a repository measures on the runners it says it has."""
    from bot.policy.load import find_policy, missing_policy
    from bot.revision import ApiRevision

    if env.sha is None:
        raise GitHubError("GITHUB_SHA is not set", hint="run it from a scheduled workflow")
    revision = ApiRevision(client_factory(), env.sha)
    found = find_policy(revision, env.policy_path)
    if found is None:
        raise missing_policy(
            revision,
            place=f"at the default branch's head ({env.sha[:12]})",
            hint="see docs/policy.md",
            path=env.policy_path,
        )
    vendors = list(found[0].vendors)
    log(f"scheduled run at {env.sha[:12]}: measuring on {', '.join(vendors)} ({found[1]})")
    set_outputs(env.output, {"run": "true", "head-sha": env.sha, "vendors": json.dumps(vendors)})
    return 0


def plan_mode(env: ActionEnv, client_factory: ClientFactory) -> int:
    if env.event_name in SCHEDULED_EVENTS:
        return scheduled_plan(env, client_factory)
    result, _ = _gate(env, client_factory)
    d = result.decision
    env.results_path.mkdir(parents=True, exist_ok=True)
    (env.results_path / GATE_FILE).write_text(d.model_dump_json(indent=2), encoding="utf-8")
    log(describe(d))
    set_outputs(env.output, _gate_outputs(d, env.results_path))
    write_summary(
        env.step_summary, "### kernel-review: plan\n\n" + md_inline(describe(d), max_chars=2000)
    )
    return 0


def _cancel_stale_review(env: ActionEnv, client: ForgeClient, result: GateResult) -> None:
    """A ``/bench`` the gate authorised (the commenter's permission asked of the API) cancels
    the pull request's review run still going: the workflow's concurrency group cannot, since
    a comment's author association does not tell a triage collaborator from a writer."""
    if env.run_id is None or result.pull is None:
        return
    try:
        cancelled = client.cancel_stale_runs(result.pull, env.run_id)
    except ForgeRequestError as exc:
        if exc.status not in (403, 404):
            raise
        log(
            f"the stale review run was not cancelled ({exc.status} {exc.api_message}): give "
            "the ack job `actions: write` so that /bench cancels it"
        )
        return
    if cancelled:
        log("cancelled the stale review run(s) " + ", ".join(map(str, cancelled)))


def ack_mode(env: ActionEnv, client_factory: ClientFactory) -> int:
    result, client = _decided(env, client_factory)
    d = result.decision
    on = d.pr_number
    if (
        client is None
        or d.ignored
        or d.event != "issue_comment"
        or d.comment_id is None
        or on is None
    ):
        log(describe(d))
        return 0
    client.add_reaction(d.comment_id, "eyes", number=on)
    if d.refusal:
        client.add_reaction(d.comment_id, "confused", number=on)
        body = refusal_comment(d.actor, d.refusal, accepting=d.accepting)
    elif d.accept is not None:
        client.add_reaction(d.comment_id, "+1", number=on)
        body = record_comment(d.accept)
    elif d.run:
        client.add_reaction(d.comment_id, "rocket", number=on)
        _cancel_stale_review(env, client, result)
        body = (
            f"Measuring head {md_code((d.head_sha or '')[:12])} of this pull request for "
            f"{md_code(d.command.canonical() if d.command else '/bench')}. "
            "A push after this comment is not covered: comment /bench again to measure it."
        )
    else:
        body = f"`/bench` has nothing to run: {md_inline(d.note or 'no kernels to measure', max_chars=500)}"
    policy = result.policy
    if not (d.refusal and policy and told_before(client, on, d.actor, policy)):
        client.create_comment(on, body)
    log(describe(d))
    return 0


def _merge_gate(
    env: ActionEnv, client: ForgeClient, result: GateResult, review: Any, advisory: str | None
) -> str | None:
    """The merge gate: a check run with the verdict, the summary and annotations on the kernel
    lines; a commit status where the token may not write checks (or the policy asks for one).
    Returns why GitHub refused the check run and what to do (the status is set instead), else
    None."""
    from bot.forge.sticky import fit_body
    from bot.github.api import MAX_CHECK_TEXT_BYTES
    from bot.jobs.report import check_annotations, check_for, status_for

    d, policy = result.decision, result.policy
    assert policy is not None
    refused: str | None = None
    if policy.github.merge_gate == "check":
        conclusion, title = check_for(review.verdict, advisory)
        notes = check_annotations(review.evidence, d, review.verdict.accepted)
        summary, _ = fit_body(
            review.summary,
            limit=MAX_CHECK_TEXT_BYTES,
            summary_url=env.run_url,
            artifact_name=env.artifact_name,
            unit="bytes",
        )
        try:
            run_id = client.publish_check_run(
                d.head_sha or "",
                name="kernel-review",
                conclusion=conclusion,
                title=title,
                summary=summary,
                annotations=notes,
                details_url=env.run_url,
            )
        except ForgeRequestError as exc:
            if exc.status not in (403, 404, 422):
                raise
            hint = (
                "give the report job `checks: write` for a check run with annotations (or set "
                '`merge_gate = "status"` in the policy)'
                if exc.status in (403, 404)
                else "GitHub did not take what was sent; please report it with the job log"
            )
            refused = f"{exc.status} {exc.api_message}".strip() + f"; {hint}"
            log(
                f"the check run was refused ({refused}); setting the kernel-review "
                "commit status instead"
            )
        else:
            log(f"check run {run_id}: {conclusion}, {plural(len(notes), 'annotation')}")
            return None
    state, description = advisory_status(*status_for(review.verdict), advisory)
    client.set_status(
        d.head_sha or "", state, description, context="kernel-review", target_url=env.run_url
    )
    log(f"commit status kernel-review: {state}")
    return refused


def refused_check_note(reason: str) -> str:
    """The line the review comment starts with when GitHub refused the check run (at the top,
    where cutting a long review to fit cannot drop it)."""
    return (
        "> **The kernel-review check run was refused by GitHub** "
        f"({md_inline(reason, max_chars=400)}). The merge gate is the `kernel-review` commit "
        "status instead.\n\n"
    )


def read_gate(env: ActionEnv) -> GateDecision:
    """The gate job's decision, ``gate.json`` in results-path: its plan and the base policy it
    was made under. Only the gate job writes it (its own artifact, downloaded beside nothing
    else at that path)."""
    path = env.results_path / GATE_FILE
    try:
        return GateDecision.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise ResultsError(
            f"cannot read the gate's decision {path}: {str(exc)[:300]}",
            hint="download the gate job's artifact (kernel-review-gate) into results-path first "
            "(docs/workflows/kernel-review.yml)",
        ) from None


def _decided(
    env: ActionEnv, client_factory: ClientFactory
) -> tuple[GateResult, ForgeClient | None]:
    """What the ack and the report act on: the gate's decision as the gate job wrote it (never
    decided again, the policy never read again), with the pull request as it is now; a fork's
    report (``workflow_run``: its run's artifacts come from the fork's copy of the workflow)
    decides here instead."""
    if env.event_name == "workflow_run":
        return _gate(env, client_factory)
    d = read_gate(env)
    if d.ignored or d.pr_number is None:
        return GateResult(decision=d), None
    found = parse_event(env.event_name, load_event(env.event_path), bot_logins=_bot_logins(env))
    event_pr = found.pr_number if isinstance(found, ReviewRequest) else None
    stale = env.head_sha is not None and d.head_sha != env.head_sha
    if d.repository != env.repository or d.pr_number != event_pr or stale:
        raise ResultsError(
            f"the gate's decision in {env.results_path / GATE_FILE} is for {d.repository[:100]} "
            f"#{d.pr_number} at {(d.head_sha or '')[:12]}, not this run's "
            f"{env.repository[:100]} #{event_pr} at {(env.head_sha or '')[:12]}",
            hint="download this run's gate artifact (kernel-review-gate) into results-path, "
            "and pass the gate job's head-sha output as head-sha",
        )
    client = client_factory()
    return GateResult(decision=d, pull=client.get_pull(d.pr_number)), client


def report_mode(env: ActionEnv, client_factory: ClientFactory) -> int:
    from bot.forge.sticky import upsert_sticky
    from bot.jobs.accept_runs import OwnRuns, unused_note, usable_acceptances, workflow_path
    from bot.jobs.accepting import bot_login as resolve_bot_login
    from bot.jobs.report import build_report, log_annotations, merge_evidence, read_results
    from bot.repo_conditions import collect
    from bot.review.accept import measured_ratios
    from bot.revision import ApiRevision

    result, client = _decided(env, client_factory)
    d = result.decision
    if (
        client is None
        or d.ignored
        or d.refusal
        or d.plan is None
        or d.pr_number is None
        or result.policy is None
    ):
        log(describe(d))
        set_outputs(env.output, {"verdict": "none", "results-path": str(env.results_path)})
        return 0
    files = (
        [p for p in env.results_path.rglob("*.json") if p.name != GATE_FILE]
        if env.results_path.is_dir()
        else []
    )
    queued = _read_queue(env.queue_file)
    refused: str | None = None
    try:
        kept, dropped = read_results(files, head_sha=d.head_sha or "", vendors=d.plan.vendors)
    except ResultsError as exc:  # the whole artifact: said in the review, not only the log
        kept, dropped, refused = [], [], exc.message
        log(f"results refused: {exc.message}")
    for reason in dropped:
        log(f"results dropped: {reason}")
    # a refused artifact is said for every planned vendor, also when the gate ran nothing
    planned = d.plan.vendors if d.run or refused else ()
    evidence = merge_evidence(kept, planned, refused=refused, queued=queued)
    evidence = evidence.merge(_history(client, env.history_branch, d.plan.vendors))
    kernel_paths = sorted({p for c in d.plan.changes for p in (*c.new_paths, *c.old_paths)})
    repo = collect(ApiRevision(client, d.head_sha or ""), kernel_paths, result.policy.owners)
    bot_login = resolve_bot_login(client, env.bot_login)
    own = OwnRuns(
        repository=env.repository,
        workflow_path=workflow_path(env.workflow_ref, env.repository),
        pr_number=d.pr_number,
        artifact_name=env.artifact_name,
    )
    accepted, unused = usable_acceptances(
        client, client.list_comments(d.pr_number), bot_login, result.policy, evidence.sweeps, own
    )
    for reason in unused:
        log(reason)
    review = build_report(d, result.policy, evidence, repo, acceptances=accepted)
    pr_number = d.pr_number
    said = unused_note(unused) if unused else ""  # at the top, where a cut cannot drop it

    def post(body: str) -> Any:
        return upsert_sticky(
            client,
            pr_number,
            body,
            head_sha=d.head_sha or "",
            bot_login=bot_login,
            current_head_sha=result.pull.head_sha if result.pull else None,
            summary_url=env.run_url,
            artifact_name=env.artifact_name,
            state=ReviewState(
                head_sha=d.head_sha or "",
                run_id=env.run_id,
                slower=measured_ratios(review.evidence.sweeps),
            ),
        )

    sticky = post(said + review.comment)
    log(f"review comment {sticky.action}: {sticky.html_url or sticky.comment_id} {sticky.detail}")
    if result.policy.github.merge_gate != "none" and sticky.action != "skipped-stale":
        check_refused = _merge_gate(
            env, client, result, review, advisory_reason(client, result.pull)
        )
        if check_refused is not None:  # the comment says so: a missing check is otherwise silent
            sticky = post(refused_check_note(check_refused) + said + review.comment)
    for line in log_annotations(review.evidence, d, review.verdict.accepted):
        print(line, flush=True)  # already escaped by workflow_command
    write_summary(env.step_summary, review.summary)
    env.results_path.mkdir(parents=True, exist_ok=True)
    (env.results_path / "review.md").write_text(review.summary, encoding="utf-8")
    if queued is not None and queued.stuck:
        _cancel_queued(env, client, queued)
    set_outputs(
        env.output,
        {
            "verdict": review.verdict.decision,
            "results-path": str(env.results_path),
            "comment-url": sticky.html_url,
        },
    )
    return 0


def wait_mode(
    env: ActionEnv,
    client_factory: ClientFactory,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Wait for this run's measure jobs: until each has finished, or has sat in the queue for
    the queue timeout (no runner with its labels); writes the report's ``queue_file``."""
    from bot.jobs.queue import wait_for_vendor_jobs

    if env.run_id is None:
        raise UsageError(
            "the wait job waits for the measure jobs of this workflow run: GITHUB_RUN_ID is not set",
            hint="run it as the report job's first step (docs/workflows/kernel-review.yml)",
        )
    report = wait_for_vendor_jobs(
        client_factory(),
        env.run_id,
        timeout_s=env.queue_timeout_s,
        expected=env.wait_for,
        clock=clock,
        sleep=sleep,
        log=log,
    )
    env.queue_file.write_text(report.model_dump_json(), encoding="utf-8")
    if report.stuck:
        write_summary(
            env.step_summary,
            "### kernel-review: no runner\n\n"
            + "\n".join(f"- {md_inline(report.reason(v), max_chars=400)}" for v in report.vendors),
        )
    else:
        log("every measure job finished")
    return 0


def _read_queue(path: Path) -> Any:
    """The wait's report, when the wait step ran in this job; else None."""
    from bot.contracts.queue import QueueReport

    if not path.is_file():
        return None
    try:
        return QueueReport.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise ResultsError(
            f"{path} is not the wait step's report: {str(exc)[:300]}",
            hint="the wait step (kernel-review job wait) writes it; do not write it from elsewhere",
        ) from None


def _cancel_queued(env: ActionEnv, client: ForgeClient, queued: Any) -> None:
    """Cancel this run once the review is posted: its stuck measure jobs show as cancelled
    instead of holding the run for a day. The report job itself runs on (``always()``)."""
    names = ", ".join(j.name for j in queued.stuck)
    if env.run_id is None:
        return
    try:
        client.cancel_run(env.run_id)
    except ForgeRequestError as exc:
        if exc.status not in (403, 404):
            raise
        log(
            f"the queued job(s) {names} were not cancelled ({exc.status} {exc.api_message}): "
            "give the report job `actions: write`, or cancel the run by hand"
        )
        return
    log(f"cancelled the run's queued job(s) {names}: no runner took them")


def measure_mode(env: ActionEnv, measure_fn: Callable[..., Any] | None = None) -> int:
    """Run the gate's plan for one vendor and shard; writes ``results-<vendor>-<i>of<n>.json``.
    Stopped from outside (the job cancelled or at its ``timeout-minutes``), it still writes what
    it measured and exits ``EXIT_STOPPED`` (``checks.measure``)."""
    from bot.contracts.results import ResultsFile

    if env.vendor is None:
        raise UsageError(
            "kernel-review job measure is the workflow's measure job: the action's vendor input "
            "(INPUT_VENDOR) is not set",
            hint="run it from docs/workflows/kernel-review.yml on a GPU runner; on this machine "
            "use kernel-review bench, or kernel-review review --repo . --base REV",
        )
    if env.vendor not in VENDORS:
        raise KernelReviewError(
            f"vendor {str(env.vendor)[:40]!r} is not {' or '.join(VENDORS)}",
            hint="set the action's vendor input",
        )
    m = _SHARD_RE.fullmatch(env.shard)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise KernelReviewError(
            f"shard {env.shard[:40]!r} is not I/N with 1 <= I <= N", hint="e.g. shard: 1/2"
        )
    d = read_gate(env)
    if not d.run or d.plan is None:
        log(f"nothing to measure: {describe(d)}")
        return 0
    if env.vendor not in d.plan.vendors:
        log(f"the plan does not measure {env.vendor}; nothing to do")
        return 0
    _confine(env, trusted=False)
    measure = measure_fn or _measurement_engine()
    evidence = measure(
        d.plan,
        vendor=env.vendor,
        shard=(int(m.group(1)), int(m.group(2))),
        repo_root=Path.cwd(),
        details_dir=env.results_path,
        progress=log,
        policy=d.policy,  # as the gate read it: the base policy is not read again
    )
    out = ResultsFile(
        head_sha=d.plan.head_sha,
        base_sha=d.plan.base_sha,
        vendor=env.vendor,
        shard=env.shard,
        evidence=evidence,
    )
    path = env.results_path / f"results-{env.vendor}-{m.group(1)}of{m.group(2)}.json"
    path.write_text(out.model_dump_json(), encoding="utf-8")
    set_outputs(env.output, {"results-path": str(env.results_path)})
    log(f"wrote {path}")
    return _measured(path)


def _measured(path: Path) -> int:
    """A measure job's exit code once it wrote ``path``: 0, or ``EXIT_STOPPED`` where the job
    was stopped from outside (a CI job's cancel or ``timeout-minutes``), saying so: the file
    holds what it finished, the rest not run."""
    from checks.procs.stopping import STOPPING, stop_words, stopped_by

    if not STOPPING.is_set():
        return 0
    by = stopped_by()
    how = f"by {stop_words(by)}" if by else "from outside"
    log(
        f"stopped {how}: {path.name} holds what the job finished; the shapes and checks it did "
        "not get to are marked not run (a job that keeps reaching its time limit needs a "
        "larger timeout-minutes)"
    )
    return EXIT_STOPPED


def _history(client: ForgeClient, branch: str, vendors: tuple[str, ...]) -> Any:
    """Each kernel's recorded runs on the default branch (the first vendor's), from the history
    branch; nothing when there is no history yet."""
    from bot.contracts.evidence import Evidence
    from bot.jobs.scheduled import HISTORY_FILE, kernel_history, read_history

    if not vendors:
        return Evidence()
    try:
        text = client.read_file(HISTORY_FILE, branch)
    except ForgeError as exc:
        log(f"history not read from {branch}: {exc.message}")
        return Evidence()
    return Evidence(history=kernel_history(read_history(text or ""), vendors[0]))


def scheduled_mode(env: ActionEnv, measure_fn: Callable[..., Any] | None = None) -> int:
    """Measure the default branch's head under its pinned toolchain and the newest release.
    Stopped from outside, it writes what it measured and exits ``EXIT_STOPPED``, as measure does."""
    import datetime as dt
    import subprocess

    from bot.contracts.history import ScheduledResults
    from bot.jobs.scheduled import candidate_changes, scheduled_plan
    from bot.policy.load import find_policy, missing_policy
    from bot.revision import GitRevision
    from checks.toolchain_env import installed_versions, resolve, side_requirements

    if env.vendor not in VENDORS:
        raise KernelReviewError(
            f"vendor {str(env.vendor)[:40]!r} is not {' or '.join(VENDORS)}",
            hint="set the action's vendor input",
        )
    root = Path.cwd()
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    head = GitRevision(root, sha)
    found = find_policy(head, env.policy_path)
    if found is None:
        raise missing_policy(
            head, place=f"at the default branch's head ({head.label})", hint="see docs/policy.md"
        )
    policy = found[0]
    from bot.toolchain import requirements

    pinned = requirements.names(side_requirements(root))
    wanted = [  # the policy checked each is a requirement
        text if req.specifier else _allowed(req.name, pinned)
        for text in policy.toolchain.upgrade
        if (req := requirements.parse(text)) is not None
    ]
    names = set(requirements.names(wanted))
    newest = {
        name: version
        for line in resolve(wanted, policy.toolchain.index_urls)
        if (name := _name(line)) in names and (version := requirements.exact_version(line))
    }
    current_all = installed_versions()
    # what the pinned side runs: the exact pin, else whatever of the range the runner has
    current = {
        n: v for n in names if (v := requirements.exact_version(pinned.get(n, ""))) is not None
    }
    current = {**installed_versions(names), **current}
    moved = {name: v for name, v in newest.items() if current.get(name) != v}
    changes = candidate_changes(
        {name: pinned[name][len(name) :] for name in moved if name in pinned}, moved
    )
    plan = scheduled_plan(policy, sha, changes)
    log(f"scheduled run at {sha[:12]}: " + (", ".join(f"{c.kernel} {c.old_version} -> {c.new_version}" for c in changes) or "the pinned toolchain only (the newest release is the pinned one)"))  # fmt: skip
    _confine(env, trusted=True)
    measure = measure_fn or _measurement_engine()
    evidence = measure(
        plan,
        vendor=env.vendor,
        repo_root=root,
        details_dir=env.results_path,
        progress=log,
        env_override={"head": tuple(f"{k}=={v}" for k, v in moved.items())} if changes else {},
        policy=policy,  # read once, above
    )
    out = ScheduledResults(
        sha=sha,
        vendor=env.vendor,
        date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        changes=tuple(changes),
        pinned=next((t.versions for t in evidence.toolchains if t.side == "base"), current_all),
        evidence=evidence,
    )
    env.results_path.mkdir(parents=True, exist_ok=True)
    path = env.results_path / f"scheduled-{env.vendor}.json"
    path.write_text(out.model_dump_json(), encoding="utf-8")
    set_outputs(env.output, {"results-path": str(env.results_path)})
    log(f"wrote {path}")
    return _measured(path)


def _allowed(name: str, pinned: dict[str, str]) -> str:
    """The newest release the pin allows: its range; an exact pin allows only itself, so the
    newest release of all is tried then."""
    from bot.toolchain.requirements import exact_version

    pin = pinned.get(name)
    return pin if pin is not None and exact_version(pin) is None else name


def _name(requirement: str) -> str | None:
    from bot.toolchain.requirements import parse

    req = parse(requirement)
    return None if req is None else req.name


def scheduled_report_mode(env: ActionEnv, client_factory: ClientFactory) -> int:
    """Append the scheduled runs' records to the history; open or update the one issue."""
    from bot.contracts.history import ScheduledResults
    from bot.jobs.accepting import bot_login as resolve_bot_login
    from bot.jobs.scheduled import history_record, issue_title, read_history, upsert_issue
    from bot.policy.load import find_policy
    from bot.review.conclude import conclude, review_context
    from bot.review.trend import trend_summary
    from bot.revision import ApiRevision

    files = (
        sorted(env.results_path.glob("**/scheduled-*.json")) if env.results_path.is_dir() else []
    )
    queued = _read_queue(env.queue_file)
    if not files and queued is not None and queued.stuck:
        _cancel_queued(env, client_factory(), queued)
        raise ResultsError(
            "no scheduled run came back: " + "; ".join(queued.reason(v) for v in queued.vendors),
            hint="nothing was recorded tonight; the next run tries again",
        )
    if not files:
        raise ResultsError(
            f"no scheduled-<vendor>.json under {env.results_path}",
            hint="download the scheduled measure jobs' artifacts into results-path first",
        )
    client = client_factory()
    lines = []
    tolerance: float | None = None  # the policy's: the trend marks a rise past it
    for path in files:
        try:
            results = ScheduledResults.model_validate_json(path.read_bytes())
        except ValueError as exc:
            raise ResultsError(
                f"{path} is not a scheduled run's results: {str(exc)[:300]}"
            ) from None
        record = history_record(results)
        lines.append(record.model_dump_json())
        if not record.regressed:
            log(f"{results.vendor}: nothing would regress")
            continue
        found = find_policy(ApiRevision(client, results.sha), env.policy_path)
        if found is None:
            log(f"no policy at {results.sha[:12]}; no issue opened")
            continue
        policy, source = found
        tolerance = policy.tolerance
        ctx = review_context(policy, base_sha=results.sha, head_sha=results.sha,
                             repository=env.repository, policy_source=source,
                             note=f"scheduled run on the default branch ({results.vendor})")  # fmt: skip
        review = conclude(results.changes, policy, results.evidence, ctx)
        done = upsert_issue(
            client,
            issue_title(results.changes, record.regressed),
            review.comment,
            bot_login=resolve_bot_login(client, env.bot_login),
        )
        log(f"{results.vendor}: {', '.join(record.regressed)} would regress; {done}")
    env.history_path.parent.mkdir(parents=True, exist_ok=True)
    with open(env.history_path, "a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))
    log(f"appended {plural(len(lines), 'record')} to {env.history_path}")
    if tolerance is None:
        tolerance = _tolerance(client, results.sha, env.policy_path)
    trend = trend_summary(
        read_history(env.history_path.read_text(encoding="utf-8")),
        commit_url=lambda sha: f"{env.server_url}/{env.repository}/commit/{sha}",
        tolerance=tolerance,
    )
    write_summary(env.step_summary, trend or "No GPU-timed runs in the history yet.")
    if queued is not None and queued.stuck:
        for vendor in queued.vendors:
            log(f"{vendor}: not recorded: {queued.reason(vendor)}")
        _cancel_queued(env, client, queued)
    return 0


def _tolerance(client: ForgeClient, sha: str, policy_path: str | None) -> float:
    """The policy's tolerance at ``sha``; the default where there is no policy to read."""
    from bot.policy.load import find_policy
    from bot.policy.model import Policy
    from bot.revision import ApiRevision

    try:
        found = find_policy(ApiRevision(client, sha), policy_path)
    except KernelReviewError as exc:
        log(f"the policy at {sha[:12]} was not read ({exc.message}); the default tolerance")
        found = None
    return found[0].tolerance if found else Policy.model_fields["tolerance"].default


def _confine(env: ActionEnv, *, trusted: bool) -> None:
    """Before any of the checkout's code runs: confine it (``checks.procs.sandbox``), or refuse
    to measure on a runner that cannot, unless it is declared disposable. A run that is not
    ``trusted`` (a pull request's) writes no kept toolchain environment."""
    from checks.procs.sandbox import declared_disposable, require

    log(require(declared_disposable(env.runner_isolation), trusted=trusted))


def _measurement_engine() -> Callable[..., Any]:
    """The measurement engine's entry point: (plan, *, vendor, shard, repo_root) -> Evidence."""
    try:
        from checks.measure import measure_plan
    except ImportError:
        raise KernelReviewError(
            "this build of kernel-review has no measurement engine (checks.measure.measure_plan)",
            hint="install kernel-review[gpu] on the GPU runner",
        ) from None
    return measure_plan


def _bench_results(path: Path, cpu_vendor: str) -> ResultsFile:
    """``checks.sweep``'s reader of a ``kernel-review bench --out`` file, for ``--results``."""
    from checks.sweep.evidence import bench_results_file

    return bench_results_file(path, cpu_vendor)


def _sweep_here(repo: Path, plan: Plan, device: str, started: float) -> tuple[Path, int]:
    """``kernel-review bench`` over the review's plan on this machine (``review
    --measure``): its table and lines go to stderr, the review being stdout's; returns the file
    it wrote (under the cache folder) and its exit code."""
    import contextlib
    import tempfile

    from checks.sweep import cli as bench

    parser = argparse.ArgumentParser(prog="kernel-review")
    bench.register(parser.add_subparsers())
    out = bench.default_results_path(repo, device, plan.base_sha, plan.head_sha)
    with tempfile.TemporaryDirectory(prefix="kernel-review-plan-") as tmp:
        plan_path = Path(tmp) / "plan.json"
        plan_path.write_text(plan.model_dump_json(), encoding="utf-8")
        words = ["bench", "--repo", str(repo), "--device", device, "--out", str(out)]
        quick = ["--engine-option", "added_shapes=off"] if plan.quick else []
        args = parser.parse_args(words + quick)
        args.plan, args.started = str(plan_path), started
        with contextlib.redirect_stdout(sys.stderr):
            code = bench.run_bench(args)
    return out, code


# --- CLI --------------------------------------------------------------------------------------


REVIEW_DESCRIPTION = """\
The review a pull request from --base to --head (default HEAD) would get as its comment, printed
as plain text; --out FILE writes the comment's markdown. No GitHub access, nothing posted.
Nothing of the reviewed repository runs unless --run-repo-code (the compiler report of its Triton
kernels imports its modules) or --measure (the shape sweep of the changed kernels, run here
first as `kernel-review bench` runs it; then the command exits as bench does); the last line says
which it did. A job of the GitHub workflow is `kernel-review job MODE`."""
JOB_DESCRIPTION = """\
One job of the GitHub workflow (docs/workflows/kernel-review.yml), inside Actions only: it reads
GITHUB_EVENT_PATH, GITHUB_TOKEN, GITHUB_API_URL and the action's INPUT_* variables, and refuses
to run without them. A local review is `kernel-review review --repo . --base REV`.

measure and scheduled stopped by SIGINT or SIGTERM (the job cancelled, or at its
timeout-minutes) write the results of what they measured, the rest marked not run, and exit 7."""


def register(subparsers: argparse._SubParsersAction, *, compiler_report: Any = None) -> None:
    """Add ``review``, a local review (``compiler_report`` is ``checks.compiler``'s, passed in
    by the command line), and ``job``, one job of the workflow."""
    from bot.local_review import add_arguments

    p = subparsers.add_parser(
        "review",
        help="review a local range (--repo . --base REV) on this machine",
        description=REVIEW_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(handler=handle_review, compiler_report=compiler_report)
    job = subparsers.add_parser(
        "job",
        help="run one job of the GitHub workflow (inside Actions only)",
        description=JOB_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job.add_argument("mode", choices=MODES, metavar="MODE", help=f"the job: {', '.join(MODES)}")
    job.set_defaults(handler=handle_job)


def handle_review(args: argparse.Namespace) -> int:
    from bot.local_review import run_local

    return run_local(args, args.compiler_report, read_bench=_bench_results, run_sweep=_sweep_here)


def handle_job(args: argparse.Namespace) -> int:
    env = ActionEnv.from_environ(os.environ)
    factory = lambda: _client(env)  # noqa: E731
    if args.mode == "plan":
        return plan_mode(env, factory)
    if args.mode == "ack":
        return ack_mode(env, factory)
    if args.mode == "wait":
        return wait_mode(env, factory)
    if args.mode == "report":
        return report_mode(env, factory)
    if args.mode == "scheduled":
        return scheduled_mode(env)
    if args.mode == "scheduled-report":
        return scheduled_report_mode(env, factory)
    return measure_mode(env)
