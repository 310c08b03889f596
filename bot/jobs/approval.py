"""What an approval covers: the commit ``/bench`` saw, and whose numbers can turn the gate green.

A ``/bench`` approval covers the commit that was the head when the maintainer commented.

The gate runs after the comment, and the pull request's author can push in between: taking
whatever the head is when the gate starts would measure a commit nobody approved. Two bindings:

- ``/bench sha=COMMIT`` (all 40 hex digits) names the commit: it runs only while that commit is
  the head it measures, and the timeline check below still applies.
- The pull request's timeline decides in every case. The comment is found on it; the head at comment
  time is the pull request's head when no head change follows the comment, else the last commit
  before it. A head change after the comment, a timeline read only in part, or a comment not on
  it: refused, with a request for a fresh ``/bench``.

A ``committed`` event is dated by git, not by GitHub, so a backdated commit is caught only by its
place on the timeline after the comment; ``sha=`` adds a binding that does not depend on it.

The measured code shares its process with the timer, so its author can make the numbers say
anything: a verdict on code by an author without write permission is advisory, and the merge
gate says so and never turns green on it (``advisory_status``). Someone below the bar for
``/bench`` gets one reply saying so per pull request, then only reactions (``told_before``).
"""

from __future__ import annotations

from datetime import datetime

from bot.errors import CommandError
from bot.escape import clip, md_inline
from bot.forge.client import ForgeClient
from bot.forge.slash import BenchCommand
from bot.forge.types import PullInfo, ReviewRequest, TimelineEvent, permission_allows
from bot.policy.model import Policy

HEAD_CHANGES = frozenset({"committed", "head_ref_force_pushed", "head_ref_restored"})


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _fresh(what: str, head: str) -> CommandError:
    return CommandError(
        f"{what}; this approval does not cover the head {head[:12]}",
        hint=f"review the new commits, then comment /bench again (or /bench sha={head})",
    )


def head_at_comment(events: list[TimelineEvent], comment_id: int, head_now: str) -> str | None:
    """The pull request's head when comment ``comment_id`` was made, or None when the timeline
    cannot say (the comment is not on it, or a force push is the last change before it)."""
    found = [i for i, e in enumerate(events) if e.comment_id == comment_id]
    if not found:
        return None
    index = found[0]
    said = _time(events[index].at)

    def after(i: int, e: TimelineEvent) -> bool:
        when = _time(e.at)
        return i > index or said is None or when is None or when > said

    changes = [(i, e) for i, e in enumerate(events) if e.event in HEAD_CHANGES]
    if not any(after(i, e) for i, e in changes):
        return head_now
    before = [e for i, e in changes if not after(i, e)]
    return before[-1].sha if before and before[-1].event == "committed" else None


def bind_approval(
    client: ForgeClient, req: ReviewRequest, pull: PullInfo, head: str, command: BenchCommand
) -> None:
    """Refuse (CommandError) a ``/bench`` whose approval does not cover ``head``."""
    if command.sha is not None and command.sha != head:
        raise _fresh(f"/bench named commit {command.sha}, but the head is {head[:12]}", head)
    if req.comment_id is None:
        raise _fresh("the /bench comment has no id to find on the timeline", head)
    events, complete = client.timeline(pull.number)
    if not complete:
        raise _fresh(
            "the pull request's timeline is too long to check that no push followed /bench", head
        )
    at_comment = head_at_comment(events, req.comment_id, pull.head_sha)
    if at_comment is None:
        raise _fresh("the timeline does not show which commit the /bench comment saw", head)
    if at_comment != head:
        raise _fresh(
            f"the head moved after the /bench comment (it was {at_comment[:12]})", pull.head_sha
        )


def advisory_reason(client: ForgeClient, pull: PullInfo | None) -> str | None:
    """Why a verdict on ``pull`` is advisory (its author may not write to the repository), or
    None when it is not."""
    if pull is None:
        return None
    role = client.permission(pull.author)
    return None if permission_allows(role, "write") else f"@{pull.author} has {role} permission"


def advisory_status(state: str, description: str, advisory: str | None) -> tuple[str, str]:
    """The merge-gate status: as given, or, for an ``advisory`` verdict (its reason), marked
    so and pending instead of success."""
    if advisory is None:
        return state, description
    state = "pending" if state == "success" else state
    return state, clip(f"Advisory ({advisory}): {description}", 140)


def _refused(actor: str) -> str:
    """The hidden marker of the bot's reply refusing ``actor``'s command."""
    return f"<!-- kernel-review:refused actor={actor} -->"


def refusal_comment(actor: str, refusal: str, *, accepting: bool) -> str:
    """The bot's reply to a refused ``/bench`` (``/bench accept``: ``accepting``), marked so
    that ``told_before`` finds it again."""
    what = "`/bench accept` was not recorded" if accepting else "`/bench` was not run"
    return f"@{actor} {what}: {md_inline(refusal, max_chars=1500)}\n\n{_refused(actor)}"


def told_before(client: ForgeClient, pr_number: int, actor: str, policy: Policy) -> bool:
    """Whether ``actor``, below the policy's bar for ``/bench``, already got the bot's reply on
    this pull request (``refusal_comment``, found by its marker): the next refusals are
    reactions only, so spamming /bench makes no noise."""
    if permission_allows(client.permission(actor), policy.github.bench_permission):
        return False
    marker = _refused(actor)
    return any(c.author_type == "Bot" and marker in c.body for c in client.list_comments(pr_number))
