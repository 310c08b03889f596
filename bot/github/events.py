"""A GitHub webhook event -> what the bot should do about it. Pure: no I/O, no environment.

Handled:
- ``pull_request``: opened, synchronize, reopened, ready_for_review (drafts wait until ready);
- ``issue_comment``: created, on an open pull request, with a ``/bench`` line, by a person;
- ``workflow_run``: completed, of a run triggered by ``pull_request`` (the report for forks,
  whose own run gets a read-only token). Its pull request list is empty for forks, so the
  number is resolved later from the head (owner, branch, SHA), never taken from an artifact.

Everything else is an ``Ignored`` with the reason, so the log says why nothing ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.errors import GitHubError
from bot.forge.slash import bench_line
from bot.forge.types import Ignored, ReviewRequest

PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
DEFAULT_BOT_LOGINS = ("github-actions[bot]",)


def _get(payload: Mapping[str, Any], *path: str) -> Any:
    node: Any = payload
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            raise GitHubError(
                f"the event payload has no {'.'.join(path)}",
                hint="run kernel-review from a pull_request, issue_comment or workflow_run workflow",
            )
        node = node[key]
    return node


def _is_bot(user: Mapping[str, Any], bot_logins: tuple[str, ...]) -> bool:
    return user.get("type") == "Bot" or user.get("login") in bot_logins


def parse_event(
    event_name: str,
    payload: Mapping[str, Any],
    *,
    bot_logins: tuple[str, ...] = DEFAULT_BOT_LOGINS,
) -> ReviewRequest | Ignored:
    """What to do for ``event_name`` (GITHUB_EVENT_NAME) with this payload."""
    if not isinstance(payload, Mapping):
        raise GitHubError("the event payload is not a JSON object", hint="check GITHUB_EVENT_PATH")
    if event_name == "pull_request":
        return _pull_request(payload)
    if event_name == "pull_request_target":
        return Ignored(
            event=event_name,
            reason="pull_request_target runs with a write token next to PR code; use pull_request "
            "(and workflow_run to report on forks)",
        )
    if event_name == "issue_comment":
        return _issue_comment(payload, bot_logins)
    if event_name == "workflow_run":
        return _workflow_run(payload)
    return Ignored(event=event_name, reason=f"{event_name!r} events are not reviewed")


def _pull_request(payload: Mapping[str, Any]) -> ReviewRequest | Ignored:
    action = str(_get(payload, "action"))
    pr = _get(payload, "pull_request")
    if action not in PR_ACTIONS:
        return Ignored(event="pull_request", reason=f"action {action!r} does not start a review")
    if pr.get("state") != "open":
        return Ignored(event="pull_request", reason="the pull request is closed")
    if pr.get("draft"):
        return Ignored(
            event="pull_request",
            reason="draft pull request: reviewed when marked ready, or on /bench",
        )
    repo = str(_get(payload, "repository", "full_name"))
    head_repo = (pr.get("head") or {}).get("repo") or {}
    return ReviewRequest(
        event="pull_request",
        action=action,
        repo=repo,
        pr_number=int(_get(pr, "number")),
        actor=str((payload.get("sender") or {}).get("login") or _get(pr, "user", "login")),
        base_ref=str(_get(pr, "base", "ref")),
        base_sha=str(_get(pr, "base", "sha")),
        head_ref=str(_get(pr, "head", "ref")),
        head_sha=str(_get(pr, "head", "sha")),
        head_repo=head_repo.get("full_name"),
        is_fork=head_repo.get("full_name") != repo,
    )


def _issue_comment(
    payload: Mapping[str, Any], bot_logins: tuple[str, ...]
) -> ReviewRequest | Ignored:
    action = str(_get(payload, "action"))
    issue = _get(payload, "issue")
    comment = _get(payload, "comment")
    user = comment.get("user") or {}
    if action != "created":
        return Ignored(
            event="issue_comment", reason=f"comment {action}: only new comments run /bench"
        )
    if "pull_request" not in issue:
        return Ignored(event="issue_comment", reason="comment on an issue, not on a pull request")
    if _is_bot(user, bot_logins):
        return Ignored(event="issue_comment", reason=f"comment by a bot ({user.get('login')})")
    if issue.get("state") != "open":
        return Ignored(event="issue_comment", reason="the pull request is closed")
    command = bench_line(str(comment.get("body") or ""))
    if command is None:
        return Ignored(event="issue_comment", reason="the comment has no /bench command")
    return ReviewRequest(
        event="issue_comment",
        action=action,
        repo=str(_get(payload, "repository", "full_name")),
        pr_number=int(_get(issue, "number")),
        actor=str(_get(comment, "user", "login")),
        comment_id=int(_get(comment, "id")),
        command=command,
    )


def _workflow_run(payload: Mapping[str, Any]) -> ReviewRequest | Ignored:
    action = str(_get(payload, "action"))
    run = _get(payload, "workflow_run")
    if action != "completed":
        return Ignored(
            event="workflow_run", reason=f"workflow run {action}: reports only on completed"
        )
    if run.get("event") != "pull_request":
        return Ignored(
            event="workflow_run",
            reason=f"the run was triggered by {run.get('event')!r}; it reported itself",
        )
    repo = str(_get(payload, "repository", "full_name"))
    head_repo = (run.get("head_repository") or {}).get("full_name")
    prs = [
        p
        for p in run.get("pull_requests") or []
        if ((p.get("base") or {}).get("repo") or {}).get("url", "").endswith(f"/repos/{repo}")
        or not (p.get("base") or {}).get("repo")
    ]
    return ReviewRequest(
        event="workflow_run",
        action=action,
        repo=repo,
        pr_number=int(prs[0]["number"]) if prs else None,
        actor=str((run.get("actor") or payload.get("sender") or {}).get("login") or "ghost"),
        head_ref=run.get("head_branch"),
        head_sha=str(_get(run, "head_sha")),
        head_repo=head_repo,
        is_fork=head_repo != repo,
        workflow_run_id=int(_get(run, "id")),
        workflow_conclusion=run.get("conclusion"),
    )
