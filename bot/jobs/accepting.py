"""``/bench accept`` on GitHub: what it records, where, and how the report finds it again.

The gate (read-only) turns the command into an ``AcceptRecord``: the slower cases of the named
kernel that the bot's review comment last measured (its hidden state, ``bot.forge.sticky``),
each accepted up to a bound: the upper end of the interval it was measured with, and at most the
kernel's tolerance beyond the ratio measured (``bot.review.accept.bound``). The ack job posts the
record as a comment of the bot's own with the record as hidden state (``bot.forge.hidden``),
and says in words what was accepted. The report job reads every such comment, and only the
bot's own, so an acceptance holds across pushes; ``bot.review.accept`` judges each later
measurement against it.

The bot's login proves little: every workflow of a GitHub repository posts as
``github-actions[bot]``. So the report keeps a record only when the ``/bench accept`` comment it
names is on the pull request, written by the record's actor (a person, not a bot), names the
record's kernel, shapes and reason, and the actor has the policy's ``accept_permission`` now,
asked of the API when the report runs (``confirmed_records``); and takes its bounds not from the
record but from the results of the run it names (``bot.jobs.accept_runs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.contracts.accept import Acceptance, AcceptRecord
from bot.errors import CommandError
from bot.escape import md_code, md_text
from bot.forge.client import ForgeClient
from bot.forge.hidden import bot_records, hidden
from bot.forge.slash import AcceptCommand, bench_line, is_accept, parse_accept
from bot.forge.sticky import sticky_state
from bot.forge.types import CommentInfo, permission_allows
from bot.policy.model import Policy
from bot.review.accept import accept_measured

RECORD_KIND = "accept"


def bot_login(client: ForgeClient, configured: str | None) -> str:
    """The login the bot's comments are posted as: the configured one, else the client's."""
    return configured or client.bot_login()


def _case(a: Acceptance) -> str:
    return f"{a.kernel} {'x'.join(map(str, a.shapes[0])) if a.shapes else ''} {a.dtype or ''}"


def record_for(
    comments: Sequence[CommentInfo],
    login: str,
    command: AcceptCommand,
    *,
    actor: str,
    comment_id: int | None,
    tolerance: float,
) -> AcceptRecord:
    """What ``command`` accepts, from the review comment's measurements, each bounded under the
    kernel's ``tolerance``; a CommandError when that review measured nothing slower to accept."""
    state = sticky_state(comments, login)
    if state is None:
        raise CommandError(
            f"there is no measured slowdown of {command.kernel} to accept yet",
            hint="run /bench first; accept what its review shows slower",
        )
    if state.run_id is None:
        raise CommandError(
            "the review comment does not say which run measured it (an older kernel-review "
            "wrote it), so what it accepts could not be checked against that run's results",
            hint="run /bench first; accept what its review shows slower",
        )
    accepted = accept_measured(
        state.slower,
        kernel=command.kernel,
        shapes=command.shapes,
        by=f"@{actor}",
        reason=command.reason,
        head_sha=state.head_sha,
        tolerance=tolerance,
    )
    if not accepted:
        shapes = ", ".join("x".join(map(str, s)) for s in command.shapes)
        slower = sorted({f"{m.kernel} {'x'.join(map(str, m.shape))}" for m in state.slower})
        raise CommandError(
            f"the review of head {state.head_sha[:12]} measured no slower shape of "
            f"{command.kernel}{' at ' + shapes if shapes else ''}; nothing to accept",
            hint="slower there: " + (", ".join(slower[:12]) if slower else "nothing"),
        )
    return AcceptRecord(
        actor=actor, comment_id=comment_id, run_id=state.run_id, acceptances=accepted
    )


def record_comment(record: AcceptRecord) -> str:
    """The comment that records ``record``: the hidden record, then what it accepts in words."""
    first = record.acceptances[0]
    lines = [
        hidden(RECORD_KIND, record),
        f"Recorded: @{record.actor} accepts these slowdowns of {md_code(first.kernel)}, "
        f"measured at head {md_code((first.head_sha or '')[:12])} by run {record.run_id}: "
        f"{md_text(first.reason)}",
        "",
    ]
    for a in record.acceptances:
        seen = f" (measured {(a.measured - 1) * 100:.1f}% slower)" if a.measured else ""
        lines.append(
            f"- {md_text(_case(a))} on {a.vendor}: up to {(a.max_ratio - 1) * 100:.1f}% slower"
            + seen
        )
    lines += [
        "",
        "Each bound is the upper end of the interval measured, and at most the kernel's "
        "tolerance beyond the slowdown measured. Each review derives it again from the results "
        f"run {record.run_id} uploaded, and never uses more than that. The acceptance holds "
        "across pushes while the measured slowdown stays within its bound; a larger one is "
        "flagged again. The review shows it from its next run (a push, or /bench).",
    ]
    return "\n".join(lines)


def _unconfirmed(
    record: AcceptRecord,
    said: dict[int, CommentInfo],
    policy: Policy,
    role_of: Callable[[str], str],
) -> str | None:
    """Why ``record`` is not what a person allowed to accept said, or None when it is."""
    comment = said.get(record.comment_id) if record.comment_id is not None else None
    if comment is None:
        return f"it names comment {record.comment_id}, which is not on the pull request"
    if comment.author != record.actor or comment.author_type != "User":
        return f"comment {comment.id} was written by {comment.author}, not @{record.actor}"
    line = bench_line(comment.body)
    try:
        command = parse_accept(line, policy) if line and is_accept(line) else None
    except CommandError:
        command = None
    if command is None:
        return f"comment {comment.id} is not a /bench accept that the policy takes"
    for a in record.acceptances:
        if (
            a.kernel != command.kernel
            or a.reason != command.reason
            or a.by != f"@{record.actor}"
            or (command.shapes and not set(a.shapes) <= set(command.shapes))
        ):
            return f"comment {comment.id} does not accept {a.kernel} as the record says"
    role = role_of(record.actor)
    bar = policy.github.accept_permission
    if not permission_allows(role, bar):
        return f"@{record.actor} has {role} permission now; accepting needs {bar}"
    return None


def confirmed_records(
    client: ForgeClient,
    comments: Sequence[CommentInfo],
    login: str,
    policy: Policy,
    *,
    wanted: Callable[[AcceptRecord], bool] = lambda _: True,
) -> tuple[list[tuple[CommentInfo, AcceptRecord]], list[str]]:
    """The ``wanted`` accept records (with their comments) that a person allowed to accept
    said, oldest first, and why each other wanted record was not used. Each actor's permission
    is asked of the API, once."""
    said = {c.id: c for c in comments}
    roles: dict[str, str] = {}

    def role_of(actor: str) -> str:
        if actor not in roles:
            roles[actor] = client.permission(actor)
        return roles[actor]

    kept: list[tuple[CommentInfo, AcceptRecord]] = []
    refused: list[str] = []
    for comment, record in bot_records(comments, login, RECORD_KIND, AcceptRecord):
        if not wanted(record):
            continue
        why = _unconfirmed(record, said, policy, role_of)
        if why is None:
            kept.append((comment, record))
        else:
            refused.append(f"the accept record in comment {comment.id} is not used: {why}")
    return kept, refused
