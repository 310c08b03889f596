"""Plain data that crosses the GitHub edge.

``bot.github.api`` converts PyGithub objects into these at once (a PyGithub attribute can make
a network call); everything else in the bot, and every test, sees only these.
"""

from __future__ import annotations

from typing import Literal

from bot.contracts.base import Frozen

# Permission levels, lowest first, as the collaborator-permission API names them (``role_name``).
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
    """One job of an Actions run."""

    id: int
    name: str
    status: str  # queued | in_progress | completed | waiting | requested | pending
    created_at: str = ""  # ISO 8601: when it was queued
    completed_at: str = ""  # ISO 8601, once completed
    labels: tuple[str, ...] = ()  # its runs-on labels


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
