"""The one sticky review comment: found again, updated in place, never duplicated.

The comment starts with a hidden marker that carries the head SHA it describes::

    <!-- kernel-review:sticky v1 head=<40 hex> -->

and, on the next line, the review's hidden state (``bot.forge.hidden``): the shapes it found
slower, with their ratios, which ``/bench accept`` records as what was accepted.

Rules:
- Only comments written by the bot's own login count; a stranger who pastes the marker into
  their comment is ignored (the bot could not edit it anyway).
- All pages of comments are read (``CommentsClient.list_comments`` pages through them).
- A POST that failed with a 5xx or a dropped connection may have created the comment: before
  posting again, the comments are listed again and the one found is edited instead.
- Results for an older head never overwrite a comment that already describes the current head.
- GitHub refuses bodies over 65,536 characters (GitLab's notes take 1,000,000:
  https://docs.gitlab.com/ee/api/notes.html#create-new-merge-request-note, so GitHub's limit,
  the default, fits both): ``fit_body`` (the only place a review is cut) cuts the body
  at a line, drops a code fence the cut would leave open, closes ``<details>``, and adds a note
  pointing to the job summary and the artifact. Should the forge still answer "body is too
  long", the body is cut again by UTF-8 bytes and sent once more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.contracts.accept import ReviewState
from bot.errors import ForgeError
from bot.escape import md_code, utf8_prefix
from bot.forge.client import CommentsClient, ForgeRequestError
from bot.forge.hidden import hidden, read_hidden
from bot.forge.types import CommentInfo

MAX_COMMENT_CHARS = 65_536
MARKER_PREFIX = "<!-- kernel-review:sticky v1"
_MARKER_RE = re.compile(r"\A<!-- kernel-review:sticky v1 head=([0-9a-f]{7,40}) -->")
_SHA_RE = re.compile(r"[0-9a-f]{7,40}")
_CREATE_ATTEMPTS = 3
_DETAILS_CLOSER = "\n\n</details>"


class StickyResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["created", "updated", "unchanged", "skipped-stale"]
    comment_id: int | None
    html_url: str = ""
    truncated: bool = False
    detail: str = ""


def marker(head_sha: str) -> str:
    sha = head_sha.lower()
    if not _SHA_RE.fullmatch(sha):
        raise ValueError(f"not a commit SHA: {head_sha!r}")
    return f"{MARKER_PREFIX} head={sha} -->"


def marker_sha(body: str) -> str | None:
    """The head SHA in a body that starts with the marker, else None."""
    m = _MARKER_RE.match(body)
    return m.group(1) if m else None


def find_sticky(comments: Sequence[CommentInfo], bot_login: str) -> CommentInfo | None:
    """The oldest comment by ``bot_login`` that starts with the marker."""
    for c in comments:
        if c.author == bot_login and marker_sha(c.body) is not None:
            return c
    return None


def sticky_state(comments: Sequence[CommentInfo], bot_login: str) -> ReviewState | None:
    """The hidden state of the bot's review comment, or None (no comment, or one without)."""
    found = find_sticky(comments, bot_login)
    return read_hidden(found.body, "state", ReviewState) if found is not None else None


def overflow_note(*, omitted_chars: int, summary_url: str | None, artifact_name: str | None) -> str:
    """The note at the end of a cut review: how much was left out, and where the rest is."""
    where = [f"the [job summary]({summary_url})" if summary_url else "the job summary"]
    if artifact_name:
        where.append(f"the results artifact {md_code(artifact_name, max_chars=200)}")
    return (
        f"\n\n---\n**This review was truncated to fit a comment** ({omitted_chars:,} characters "
        f"left out). The full tables are in {' and '.join(where)}.\n"
    )


def _size(text: str, unit: Literal["chars", "bytes"]) -> int:
    return len(text.encode("utf-8")) if unit == "bytes" else len(text)


def _prefix_within(text: str, budget: int, unit: Literal["chars", "bytes"]) -> str:
    return utf8_prefix(text, budget) if unit == "bytes" else text[: max(0, budget)]


def _cut_at_line(text: str) -> str:
    """``text`` up to its last line end, less a code fence the cut leaves open (half a mermaid
    chart renders as an error, so the unfinished block goes)."""
    kept = text[: text.rindex("\n")] if "\n" in text else text
    if kept.count("```") % 2:
        kept = kept[: kept.rindex("```")]
    return kept


def _close_details(text: str) -> str:
    open_details = len(re.findall(r"<details\b", text)) - text.count("</details>")
    return text + _DETAILS_CLOSER * max(0, open_details)


def fit_body(
    body: str,
    *,
    limit: int = MAX_COMMENT_CHARS,
    summary_url: str | None = None,
    artifact_name: str | None = None,
    unit: Literal["chars", "bytes"] = "chars",
) -> tuple[str, bool]:
    """``body`` cut to at most ``limit`` characters (or UTF-8 bytes); returns (text, truncated).

    The one place a review is cut. The cut falls at a line end, keeps the marker (it is the
    first line), drops a code fence it would leave open, closes open ``<details>``, and ends
    with a note pointing to the job summary and the results artifact.
    """
    if _size(body, unit) <= limit:
        return body, False

    def note(kept: str) -> str:
        return overflow_note(
            omitted_chars=len(body) - len(kept),
            summary_url=summary_url,
            artifact_name=artifact_name,
        )

    def fitted(kept: str) -> str:
        return _close_details(kept) + note(kept)

    room = limit - _size(note(""), unit) - _size(_DETAILS_CLOSER, unit)
    kept = _cut_at_line(_prefix_within(body, room, unit))
    while _size(fitted(kept), unit) > limit and "\n" in kept:  # nested or very long tags
        kept = _cut_at_line(kept)
    return _prefix_within(fitted(kept), limit, unit), True


def upsert_sticky(
    client: CommentsClient,
    number: int,
    body: str,
    *,
    head_sha: str,
    bot_login: str,
    current_head_sha: str | None = None,
    summary_url: str | None = None,
    artifact_name: str | None = None,
    limit: int = MAX_COMMENT_CHARS,
    state: ReviewState | None = None,
) -> StickyResult:
    """Create or update the bot's one review comment on pull request ``number``.

    ``current_head_sha``: the pull request's head now; when given and different from
    ``head_sha``, an existing comment that already describes it is left alone. ``state``: the
    hidden state kept on the line after the marker.
    """
    top = marker(head_sha) + (f"\n{hidden('state', state)}" if state is not None else "")
    full = f"{top}\n{body}"
    text, truncated = fit_body(
        full, limit=limit, summary_url=summary_url, artifact_name=artifact_name
    )

    def refit() -> str:
        smaller, _ = fit_body(
            full, limit=limit, summary_url=summary_url, artifact_name=artifact_name, unit="bytes"
        )
        return smaller

    existing = find_sticky(client.list_comments(number), bot_login)
    if existing is not None:
        return _update(client, number, existing, text, refit, head_sha, current_head_sha, truncated)
    for _ in range(_CREATE_ATTEMPTS):
        try:
            try:
                created = client.create_comment(number, text)
            except ForgeRequestError as exc:
                if not exc.body_too_long:
                    raise
                text, truncated = refit(), True
                created = client.create_comment(number, text)
            return StickyResult(
                action="created",
                comment_id=created.id,
                html_url=created.html_url,
                truncated=truncated,
            )
        except ForgeRequestError as exc:
            if not exc.outcome_unknown:
                raise
            # The POST may have gone through: look before posting again.
            found = find_sticky(client.list_comments(number), bot_login)
            if found is not None:
                result = _update(
                    client, number, found, text, refit, head_sha, current_head_sha, truncated
                )
                return result.model_copy(update={"detail": "found after an uncertain POST"})
    raise ForgeError(
        f"could not post the review on #{number} after {_CREATE_ATTEMPTS} attempts",
        hint="the forge kept failing; rerun the report job (it will update, not duplicate, the comment)",
    )


def _update(
    client: CommentsClient,
    number: int,
    existing: CommentInfo,
    text: str,
    refit,
    head_sha: str,
    current_head_sha: str | None,
    truncated: bool,
) -> StickyResult:
    shown = marker_sha(existing.body)
    if (
        current_head_sha is not None
        and head_sha.lower() != current_head_sha.lower()
        and shown == current_head_sha.lower()
    ):
        return StickyResult(
            action="skipped-stale",
            comment_id=existing.id,
            html_url=existing.html_url,
            detail=f"the comment already describes the current head {current_head_sha[:12]}",
        )
    if existing.body == text:
        return StickyResult(action="unchanged", comment_id=existing.id, html_url=existing.html_url)
    try:
        client.edit_comment(existing.id, text, number=number)
    except ForgeRequestError as exc:
        if not exc.body_too_long:
            raise
        client.edit_comment(existing.id, refit(), number=number)
        truncated = True
    return StickyResult(
        action="updated", comment_id=existing.id, html_url=existing.html_url, truncated=truncated
    )
