"""Plain data that crosses a forge's edge, in the bot's own words.

A forge's client (``bot.github.api`` converts PyGithub objects into these at once: a PyGithub
attribute can make a network call) returns only these; everything else in the bot, and every
test, sees only these. The words are GitHub's where a forge must translate: a merge request is
a pull request, a note a comment, a pipeline a run, an award emoji a reaction, GitLab's access
levels (guest .. owner) the permission levels below.
"""

from __future__ import annotations

from typing import Literal

from bot.contracts.base import Frozen

# Permission levels, lowest first, as GitHub's collaborator-permission API names them
# (``role_name``); GitLab's guest, reporter, developer, maintainer, owner are read, triage,
# write, maintain, admin.
PERMISSION_LEVELS: tuple[str, ...] = ("none", "read", "triage", "write", "maintain", "admin")


class PullInfo(Frozen):
    number: int
    state: Literal["open", "closed"]
    merged: bool = False
    draft: bool = False
    title: str = ""
    author: str
    base_ref: str
    base_sha: str
    base_repo: str
    head_ref: str
    head_sha: str
    head_repo: str | None  # None when the fork it came from was deleted
    html_url: str = ""

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


class CommentInfo(Frozen):
    id: int
    author: str
    author_type: str = "User"  # "User" or "Bot"
    body: str
    html_url: str = ""
    created_at: str = ""
    updated_at: str = ""


class CheckAnnotation(Frozen):
    """One annotation of a check run: a message on lines of a file at the checked commit."""

    path: str
    start_line: int
    end_line: int
    level: Literal["notice", "warning", "failure"]
    title: str
    message: str


class JobInfo(Frozen):
    """One job of a CI run (an Actions run; a GitLab pipeline)."""

    id: int
    name: str
    status: str  # queued | in_progress | completed | waiting | requested | pending
    created_at: str = ""  # ISO 8601: when it was queued
    completed_at: str = ""  # ISO 8601, once completed
    labels: tuple[str, ...] = ()  # its runs-on labels


class RunInfo(Frozen):
    """A CI run (an Actions run): which workflow file ran, on what event, from where."""

    id: int
    repository: str  # the repository the run belongs to (owner/name)
    path: str  # the workflow file, e.g. ".github/workflows/kernel-review.yml"
    event: str  # pull_request | issue_comment | workflow_dispatch | ...
    head_repository: str | None  # where the code it checked out came from (a fork's, for one)
    head_sha: str = ""


class ArtifactInfo(Frozen):
    """A file a CI run uploaded (an Actions artifact: a zip archive)."""

    id: int
    name: str
    size: int  # bytes, as the forge lists it
    expired: bool = False


class TimelineEvent(Frozen):
    """One event of a pull request's timeline, as plain data.

    ``at`` is the server's time for comments and force pushes, but the git committer date (which
    whoever made the commit chose) for ``committed`` events.
    """

    event: str  # committed | commented | head_ref_force_pushed | head_ref_restored | ...
    at: str = ""
    sha: str | None = None  # committed: the commit
    comment_id: int | None = None  # commented: the comment


# What the bot reacts to a ``/bench`` comment with; a forge maps them to its own (GitLab's
# award emoji: thumbsup, thumbsdown, laughing, confused, heart, tada, rocket, eyes).
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


class ReviewRequest(Frozen):
    """A pull request to review, and who asked. SHAs are None where the event does not carry
    them (a comment): the head is then resolved through the API and pinned. ``event`` in the
    bot's words: ``pull_request`` (opened or pushed), ``issue_comment`` (a ``/bench``) and
    ``workflow_run`` (the report for a fork, from a run the fork's own event started)."""

    event: Literal["pull_request", "issue_comment", "workflow_run"]
    action: str
    repo: str
    pr_number: int | None  # None only for workflow_run from a fork (resolved from the head)
    actor: str
    base_ref: str | None = None
    base_sha: str | None = None
    head_ref: str | None = None
    head_sha: str | None = None
    head_repo: str | None = None
    is_fork: bool = False
    comment_id: int | None = None
    command: str | None = None  # the /bench line, as typed (untrusted text)
    workflow_run_id: int | None = None
    workflow_conclusion: str | None = None

    @property
    def head_label(self) -> str | None:
        """``owner:branch`` of the head, as the pulls API filters by it."""
        if not self.head_repo or not self.head_ref:
            return None
        return f"{self.head_repo.split('/')[0]}:{self.head_ref}"


class Ignored(Frozen):
    """An event the bot does nothing about, and why (the log says it)."""

    event: str
    reason: str


class IssueInfo(Frozen):
    number: int
    title: str
    body: str = ""
    author: str = ""
    html_url: str = ""


class FileInfo(Frozen):
    filename: str
    status: str  # added | removed | modified | renamed | copied | changed | unchanged
    previous_filename: str | None = None
    additions: int = 0
    deletions: int = 0
    patch: str | None = None  # absent for binary files and very large diffs


def permission_rank(level: str) -> int:
    """Position of a permission level in PERMISSION_LEVELS; unknown levels rank as ``none``."""
    try:
        return PERMISSION_LEVELS.index(level)
    except ValueError:
        return 0


def permission_allows(actual: str, required: str) -> bool:
    """Whether a user holding ``actual`` meets the bar ``required`` (``maintain`` >= ``write``)."""
    return permission_rank(actual) >= permission_rank(required)
