"""A forge held in memory: the second implementation of ``bot.forge.client.ForgeClient``.

Where ``fake_github.py`` is GitHub's REST API on loopback for PyGithub, this is the protocol
itself with dictionaries behind it, so a test can run a whole job with no GitHub anywhere. It
addresses comments as GitLab addresses notes, under their pull request: an edit or a reaction
that names the wrong pull request is refused (404), as GitLab refuses it. ``calls`` records every
method called, in order, for tests that ask what a job wrote.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from bot.forge.client import ForgeClient, ForgeRequestError
from bot.forge.types import (
    PERMISSION_LEVELS,
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

WRITES = frozenset(
    {
        "create_comment",
        "edit_comment",
        "add_reaction",
        "set_status",
        "publish_check_run",
        "cancel_stale_runs",
        "cancel_run",
        "create_issue",
        "edit_issue",
    }
)


def _missing(what: str) -> ForgeRequestError:
    return ForgeRequestError(f"the forge has no {what}", hint="check the test's set-up", status=404)


class MemoryForge:
    """One repository: its files at each ref, pull requests, comments, and what was written."""

    def __init__(self, repo: str = "octo/kernels", *, login: str = "review-bot") -> None:
        self.repo = repo
        self.login = login
        self.files: dict[str, dict[str, str]] = {}  # ref -> path -> text
        self.pulls: dict[int, PullInfo] = {}
        self.diffs: dict[int, str] = {}
        self.comments: dict[int, list[CommentInfo]] = {}
        self.timelines: dict[int, list[TimelineEvent]] = {}
        self.permissions: dict[str, str] = {}
        self.reactions: list[tuple[int, int, str]] = []  # (pull request, comment, reaction)
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self.check_runs: list[dict[str, Any]] = []
        self.jobs: dict[int, list[JobInfo]] = {}
        self.running: set[int] = set()  # CI runs not finished
        self.runs: dict[int, RunInfo] = {}  # CI runs, finished or not
        self.artifacts: dict[int, tuple[int, ArtifactInfo, bytes]] = {}  # id -> run, it, zip
        self.issues: list[IssueInfo] = []
        self.calls: list[str] = []
        self.unreadable: set[str] = set()  # refs whose files this token may not read (403)
        self._ids = itertools.count(1000)

    # --- set-up -------------------------------------------------------------------------------

    def put_files(self, ref: str, files: dict[str, str]) -> None:
        self.files.setdefault(ref, {}).update(files)

    def add_pull(self, pull: PullInfo, diff: str) -> None:
        self.pulls[pull.number] = pull
        self.diffs[pull.number] = diff
        self.comments.setdefault(pull.number, [])
        self.timelines.setdefault(pull.number, []).append(
            TimelineEvent(event="committed", at="2026-01-01T00:00:00Z", sha=pull.head_sha)
        )

    def push(self, number: int, head_sha: str, diff: str) -> None:
        self.pulls[number] = self.pulls[number].model_copy(update={"head_sha": head_sha})
        self.diffs[number] = diff
        self.timelines[number].append(
            TimelineEvent(event="committed", at="2026-01-02T00:00:00Z", sha=head_sha)
        )

    def add_comment(self, number: int, author: str, body: str) -> CommentInfo:
        """A comment by someone else (a person: ``author_type`` User)."""
        made = CommentInfo(id=next(self._ids), author=author, body=body)
        self.comments[number].append(made)
        self.timelines[number].append(
            TimelineEvent(event="commented", at="2026-01-03T00:00:00Z", comment_id=made.id)
        )
        return made

    def writes(self) -> list[str]:
        return [c for c in self.calls if c in WRITES]

    def _pull(self, number: int) -> PullInfo:
        if number not in self.pulls:
            raise _missing(f"pull request #{number}")
        return self.pulls[number]

    def _comment(self, number: int, comment_id: int) -> int:
        """The index of ``comment_id`` among pull request ``number``'s comments."""
        for i, c in enumerate(self.comments.get(number, [])):
            if c.id == comment_id:
                return i
        raise _missing(f"comment {comment_id} on #{number}")

    # --- ForgeClient --------------------------------------------------------------------------

    def bot_login(self) -> str:
        self.calls.append("bot_login")
        return self.login

    def permission(self, login: str) -> str:
        self.calls.append("permission")
        role = self.permissions.get(login, "none")
        assert role in PERMISSION_LEVELS
        return role

    def get_pull(self, number: int) -> PullInfo:
        self.calls.append("get_pull")
        return self._pull(number)

    def find_pull(self, head_label: str, head_sha: str) -> PullInfo | None:
        self.calls.append("find_pull")
        found = [
            p
            for p in self.pulls.values()
            if p.state == "open"
            and f"{(p.head_repo or '').split('/')[0]}:{p.head_ref}" == head_label
        ]
        exact = [p for p in found if p.head_sha == head_sha]
        return next(iter(exact or found), None)

    def get_pull_diff(self, number: int) -> str:
        self.calls.append("get_pull_diff")
        self._pull(number)
        return self.diffs[number]

    def get_compare_diff(self, base_sha: str, head_sha: str) -> str:
        self.calls.append("get_compare_diff")
        raise _missing(f"comparison {base_sha[:12]}...{head_sha[:12]}")

    def timeline(self, number: int) -> tuple[list[TimelineEvent], bool]:
        self.calls.append("timeline")
        self._pull(number)
        return list(self.timelines[number]), True

    def list_comments(self, number: int) -> list[CommentInfo]:
        self.calls.append("list_comments")
        self._pull(number)
        return list(self.comments[number])

    def create_comment(self, number: int, body: str) -> CommentInfo:
        self.calls.append("create_comment")
        self._pull(number)
        made = CommentInfo(id=next(self._ids), author=self.login, author_type="Bot", body=body)
        self.comments[number].append(made)
        return made

    def edit_comment(self, comment_id: int, body: str, *, number: int) -> None:
        self.calls.append("edit_comment")
        i = self._comment(number, comment_id)
        old = self.comments[number][i]
        self.comments[number][i] = old.model_copy(update={"body": body})

    def add_reaction(self, comment_id: int, content: Reaction, *, number: int) -> None:
        self.calls.append("add_reaction")
        self._comment(number, comment_id)
        if (number, comment_id, content) not in self.reactions:
            self.reactions.append((number, comment_id, content))

    def read_file(self, path: str, ref: str) -> str | None:
        self.calls.append("read_file")
        if ref in self.unreadable:
            raise ForgeRequestError(f"reading {path} at {ref} was refused", status=403)
        return self.files.get(ref, {}).get(path)

    def list_dir(self, path: str, ref: str) -> list[str]:
        self.calls.append("list_dir")
        prefix = f"{path.rstrip('/')}/" if path.strip("/") else ""
        return sorted(
            p
            for p in self.files.get(ref, {})
            if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def set_status(
        self, sha: str, state: str, description: str, *, context: str, target_url: str | None = None
    ) -> None:
        self.calls.append("set_status")
        self.statuses.setdefault(sha, []).append(
            {"state": state, "description": description, "context": context, "url": target_url}
        )

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
        self.calls.append("publish_check_run")
        run_id = next(self._ids)
        self.check_runs.append(
            {"id": run_id, "head_sha": head_sha, "name": name, "conclusion": conclusion}
            | {"title": title, "summary": summary, "annotations": annotations}
        )
        return run_id

    def run_jobs(self, run_id: int) -> list[JobInfo]:
        self.calls.append("run_jobs")
        return list(self.jobs.get(run_id, []))

    def cancel_stale_runs(self, pull: PullInfo, current_run_id: int) -> list[int]:
        self.calls.append("cancel_stale_runs")
        stale = sorted(self.running - {current_run_id})
        self.running -= set(stale)
        return stale

    def cancel_run(self, run_id: int) -> bool:
        self.calls.append("cancel_run")
        if run_id not in self.running:
            return False
        self.running.discard(run_id)
        return True

    def get_run(self, run_id: int) -> RunInfo:
        self.calls.append("get_run")
        if run_id not in self.runs:
            raise _missing(f"run {run_id}")
        return self.runs[run_id]

    def run_artifacts(self, run_id: int, name: str) -> list[ArtifactInfo]:
        self.calls.append("run_artifacts")
        return [a for r, a, _ in self.artifacts.values() if r == run_id and a.name == name]

    def download_artifact(self, artifact_id: int, *, max_bytes: int) -> bytes:
        self.calls.append("download_artifact")
        if artifact_id not in self.artifacts:
            raise _missing(f"artifact {artifact_id}")
        _, artifact, data = self.artifacts[artifact_id]
        if artifact.expired:
            raise ForgeRequestError("the artifact has expired", status=410)
        if len(data) > max_bytes:
            raise ForgeRequestError(f"the artifact is larger than {max_bytes} bytes")
        return data

    def find_issue(self, marker: str, *, author: str | None = None) -> IssueInfo | None:
        self.calls.append("find_issue")
        return next(
            (i for i in self.issues if marker in i.body and author in (None, i.author)), None
        )

    def create_issue(self, title: str, body: str) -> IssueInfo:
        self.calls.append("create_issue")
        made = IssueInfo(number=next(self._ids), title=title, body=body, author=self.login)
        self.issues.append(made)
        return made

    def edit_issue(self, number: int, title: str, body: str) -> None:
        self.calls.append("edit_issue")
        for i, issue in enumerate(self.issues):
            if issue.number == number:
                self.issues[i] = issue.model_copy(update={"title": title, "body": body})
                return
        raise _missing(f"issue #{number}")


if TYPE_CHECKING:  # mypy (pyproject.toml's files) checks that it is one
    _: ForgeClient = MemoryForge()
