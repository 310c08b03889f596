"""What the jobs ask a forge, as one protocol: ``ForgeClient``.

A forge is where the pull requests, their comments and the merge gate live: GitHub, whose
client ``bot.github.api.GitHubClient`` is the first implementation, or GitLab. The jobs
(``bot/jobs/``), ``ApiRevision`` (``bot/revision.py``), the sticky comment
(``bot/forge/sticky.py``) and the workflow glue (``bot/app.py``) take a client by this protocol
and nothing else: every method takes and returns plain data (``bot.forge.types``), in GitHub's
words where a forge must translate (a merge request is a pull request, a note a comment).

The narrower protocols are what one module needs of it (``CommentsClient`` for the sticky
comment, ``FileReader`` for a revision, ``JobsClient`` for the wait); ``ForgeClient`` is all of
them and the rest. A call that failed for good raises ``ForgeRequestError``.
"""

from __future__ import annotations

from typing import Protocol

from bot.errors import ForgeError
from bot.forge.types import (
    ArtifactInfo,
    CheckAnnotation,
    CommentInfo,
    IssueInfo,
    JobInfo,
    PullInfo,
    Reaction,
    RunInfo,
    TimelineEvent,
)


class ForgeRequestError(ForgeError):
    """A forge call that failed for good.

    ``status``: the HTTP status (None: no answer came). ``outcome_unknown``: a write that may
    have happened (a 5xx or a dropped connection on a POST), so the caller lists before writing
    again. ``body_too_long``: the forge refused a comment's or issue's body for its size.
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: int | None = None,
        api_message: str = "",
        outcome_unknown: bool = False,
        body_too_long: bool = False,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.api_message = api_message
        self.outcome_unknown = outcome_unknown
        self.body_too_long = body_too_long


class CommentsClient(Protocol):
    """The comments of a pull request's conversation (``bot.forge.sticky``)."""

    def list_comments(self, number: int) -> list[CommentInfo]:
        """Every comment of pull request ``number``, all pages, oldest first."""
        ...

    def create_comment(self, number: int, body: str) -> CommentInfo:
        """Post a comment; never repeated on a 5xx (``ForgeRequestError.outcome_unknown``)."""
        ...

    def edit_comment(self, comment_id: int, body: str, *, number: int) -> None:
        """Replace a comment's body. ``number``, its pull request: GitHub finds a comment by its
        id alone, GitLab a note only under its merge request."""
        ...


class FileReader(Protocol):
    """Files at a ref (branch or SHA), read through the API (``bot.revision.ApiRevision``)."""

    def read_file(self, path: str, ref: str) -> str | None:
        """A text file at ``ref``, or None when it does not exist there."""
        ...

    def list_dir(self, path: str, ref: str) -> list[str]:
        """Paths of the files directly inside a directory at ``ref``; [] when there is none."""
        ...


class JobsClient(Protocol):
    """The jobs of a CI run (``bot.jobs.queue``)."""

    def run_jobs(self, run_id: int) -> list[JobInfo]:
        """The jobs of run ``run_id`` (its latest attempt), with their runner labels."""
        ...


class ForgeClient(CommentsClient, FileReader, JobsClient, Protocol):
    """Everything the jobs ask a forge, for one repository."""

    # --- who --------------------------------------------------------------------------------

    def bot_login(self) -> str:
        """The login this client's comments are posted as (the bot's own comments are found
        by it)."""
        ...

    def permission(self, login: str) -> str:
        """The user's role on the repository, one of ``PERMISSION_LEVELS``."""
        ...

    # --- the pull request -------------------------------------------------------------------

    def get_pull(self, number: int) -> PullInfo: ...

    def find_pull(self, head_label: str, head_sha: str) -> PullInfo | None:
        """The open pull request whose head is ``owner:branch``; the one at ``head_sha``
        first (a fork's report, whose event names no pull request)."""
        ...

    def get_pull_diff(self, number: int) -> str:
        """The pull request's unified diff (``diff --git`` headers)."""
        ...

    def get_compare_diff(self, base_sha: str, head_sha: str) -> str:
        """The diff from the merge base of ``base_sha`` to ``head_sha``."""
        ...

    def timeline(self, number: int) -> tuple[list[TimelineEvent], bool]:
        """The pull request's comments and head changes in order, and whether it was read to
        the end (``bot.jobs.approval`` binds a ``/bench`` to the head it saw)."""
        ...

    def add_reaction(self, comment_id: int, content: Reaction, *, number: int) -> None:
        """React to comment ``comment_id`` of pull request ``number``; twice is harmless."""
        ...

    # --- the merge gate ---------------------------------------------------------------------

    def set_status(
        self, sha: str, state: str, description: str, *, context: str, target_url: str | None = None
    ) -> None:
        """A commit status: ``state`` success, failure or pending, the description cut to the
        forge's limit."""
        ...

    def publish_check_run(
        self,
        head_sha: str,
        *,
        name: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: list[CheckAnnotation],
        details_url: str | None = None,
    ) -> int:
        """A completed check with a summary and annotations on lines; its id. A forge without
        such a thing refuses with ``ForgeRequestError`` (status 404), and the report sets the
        commit status instead."""
        ...

    # --- CI runs ----------------------------------------------------------------------------

    def cancel_stale_runs(self, pull: PullInfo, current_run_id: int) -> list[int]:
        """Cancel the runs of the current run's workflow still reviewing ``pull``, all but
        ``current_run_id``; the ids cancelled."""
        ...

    def cancel_run(self, run_id: int) -> bool:
        """Cancel a CI run; False when it had finished."""
        ...

    def get_run(self, run_id: int) -> RunInfo:
        """A CI run of this repository (``ForgeRequestError`` 404 when there is none)."""
        ...

    def run_artifacts(self, run_id: int, name: str) -> list[ArtifactInfo]:
        """The artifacts called ``name`` that run ``run_id`` uploaded."""
        ...

    def download_artifact(self, artifact_id: int, *, max_bytes: int) -> bytes:
        """An artifact's zip archive; ``ForgeRequestError`` when it expired (410) or is larger
        than ``max_bytes`` (read no further)."""
        ...

    # --- the scheduled run's issue ----------------------------------------------------------

    def find_issue(self, marker: str, *, author: str | None = None) -> IssueInfo | None:
        """The first open issue whose body holds ``marker``, by ``author`` when given."""
        ...

    def create_issue(self, title: str, body: str) -> IssueInfo: ...

    def edit_issue(self, number: int, title: str, body: str) -> None: ...
