"""The GitHub REST edge: the only module that imports PyGithub.

``GitHubClient`` is the GitHub implementation of ``bot.forge.client.ForgeClient``, the protocol
the jobs take. Every method returns plain data (``bot.forge.types``), never a PyGithub object,
because a PyGithub attribute can make a network call wherever it is read.

Retries are ours, bounded and visible. PyGithub's own retry is switched off: its default retries a
POST on a 5xx, which is how one review becomes two comments, and it may sleep until a primary
rate limit resets (up to an hour). Here:

- 403/429 with ``Retry-After``, an exhausted primary limit (``x-ratelimit-reset``) or a secondary
  rate limit: wait as told, but never longer than ``RetryPolicy.max_wait_s``; a longer wait is an
  error that says how long GitHub asked for.
- 5xx and connection errors: exponential back-off for reads and idempotent writes; a comment POST
  is never repeated here, because it may have succeeded. It raises ``GitHubRequestError`` with
  ``outcome_unknown=True`` and the caller (``bot.forge.sticky``) lists the comments again first.
- Anything else (401, a plain 403, 404, 422) fails at once with a message and a hint.

The sleep and the clock are injectable so tests never wait.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, get_args

import requests
from github import Auth, Github, GithubException

from bot import __version__
from bot.errors import GitHubError
from bot.escape import clip, clip_bytes
from bot.forge.client import ForgeRequestError
from bot.forge.types import (
    ArtifactInfo,
    CheckAnnotation,
    CommentInfo,
    FileInfo,
    IssueInfo,
    JobInfo,
    PullInfo,
    Reaction,
    RunInfo,
    TimelineEvent,
)
from bot.github.events import DEFAULT_BOT_LOGINS

DEFAULT_API_URL = "https://api.github.com"
DIFF_MEDIA_TYPE = "application/vnd.github.v3.diff"
MAX_DIFF_CHARS = 20_000_000
REACTIONS = frozenset(get_args(Reaction))

# What GitHub caps, and in which unit. The REST reference for check runs
# (https://docs.github.com/en/rest/checks/runs#create-a-check-run) gives
# "output.summary ... Maximum length: 65535 characters", but GitHub counts UTF-8 bytes: a summary
# of fewer characters with multi-byte text is refused with 422 "summary exceeds a maximum
# bytesize of 65535" (https://github.com/github/docs/issues/35252,
# https://github.com/github/rest-api-description/issues/5399). The same reference caps an
# annotation's message at "64 KB" and its title at "255 characters", and takes at most 50
# annotations per request. A commit status's description: 140 characters
# (https://docs.github.com/en/rest/commits/statuses#create-a-commit-status). Comment and issue
# bodies: GitHub answers 422 "body is too long (maximum is 65536 characters)" (bot.forge.sticky
# cuts them); an issue's title: 256 characters (https://github.com/dead-claudia/github-limits).
MAX_CHECK_ANNOTATIONS = 50  # annotations per request
MAX_CHECK_TEXT_BYTES = 65_535  # a check run's output.summary, in UTF-8 bytes
MAX_CHECK_TITLE_CHARS = 200  # output.title: not documented; kept short, it heads the check
MAX_ANNOTATION_MESSAGE_BYTES = 64 * 1024  # an annotation's message ("64 KB")
MAX_ANNOTATION_TITLE_CHARS = 255  # an annotation's title
MAX_STATUS_DESCRIPTION_CHARS = 140  # a commit status's description
MAX_ISSUE_TITLE_CHARS = 256  # an issue's title
MAX_RUNS_SCANNED = 300  # Actions runs of one status looked at for a stale review
MAX_TIMELINE_PAGES = 30  # 3,000 events; a longer timeline is reported as incomplete

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    max_wait_s: float = 60.0  # never sleep longer than this for one retry
    backoff_s: float = 1.0  # first back-off for 5xx and connection errors; doubles each time
    secondary_wait_s: float = 60.0  # GitHub: wait at least a minute after a secondary limit


class GitHubRequestError(ForgeRequestError, GitHubError):
    """A GitHub call that failed for good. ``outcome_unknown``: a write that may have happened;
    a body too long is GitHub's 422 "body is too long"."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: int | None = None,
        api_message: str = "",
        outcome_unknown: bool = False,
    ) -> None:
        super().__init__(
            message,
            hint=hint,
            status=status,
            api_message=api_message,
            outcome_unknown=outcome_unknown,
            body_too_long=status == 422 and "too long" in api_message.lower(),
        )


def _is_secondary_limit(message: str) -> bool:
    m = message.lower()
    return "secondary rate limit" in m or "abuse detection" in m or m.endswith("try again later.")


def retry_delay(
    status: int | None,
    headers: Mapping[str, str],
    message: str,
    attempt: int,
    policy: RetryPolicy,
    *,
    now: float,
    idempotent: bool = True,
) -> float | None:
    """Seconds to wait before attempt ``attempt + 1``, or None when retrying cannot help.

    ``status`` None means the connection failed before an answer came.
    """
    h = {k.lower(): v for k, v in headers.items()}
    if status in (403, 429):
        if "retry-after" in h:
            try:
                return max(0.0, float(h["retry-after"]))
            except ValueError:
                return policy.secondary_wait_s
        if h.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in h:
            try:
                return max(0.0, float(h["x-ratelimit-reset"]) - now) + 1.0
            except ValueError:
                return policy.secondary_wait_s
        if status == 429 or _is_secondary_limit(message):
            return policy.secondary_wait_s * 2 ** (attempt - 1)
        return None  # a plain 403 is a permission problem
    if status is None or status >= 500:
        if not idempotent:
            return None
        backoff = policy.backoff_s * 2 ** (attempt - 1)
        try:
            return max(backoff, float(h.get("retry-after", 0)))
        except ValueError:
            return backoff
    return None


def _api_message(data: Any) -> str:
    if not isinstance(data, dict):
        return str(data or "")[:500]
    message = str(data.get("message") or "")
    details = [
        str(e.get("message") or e.get("code") or "")
        for e in data.get("errors") or []
        if isinstance(e, dict)
    ]
    details = [d for d in details if d]
    return f"{message}: {'; '.join(details)}" if details else message


def _json_or_text(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body


def _final_error(
    what: str, status: int | None, message: str, *, outcome_unknown: bool
) -> GitHubRequestError:
    if status is None:
        text = f"could not reach GitHub while {what}: {message}"
        hint = "check GITHUB_API_URL and the runner's network; the run can be retried"
    elif status == 401:
        text = f"GitHub refused the token while {what} (401 {message or 'Bad credentials'})"
        hint = "pass a valid token (the `token` input, or GITHUB_TOKEN)"
    elif status == 403:
        text = f"GitHub refused {what} (403 {message})"
        hint = (
            "give the job the permission it needs: `pull-requests: write` to comment and react, "
            "`checks: write` for the check run, `statuses: write` for the merge gate's status, "
            "`contents: read` to read the policy"
        )
    elif status == 404:
        text = f"GitHub found nothing while {what} (404)"
        hint = "check the repository name, the pull request number and that the token can see them"
    elif status in (429,) or (status or 0) >= 500:
        text = f"GitHub kept failing while {what} ({status} {message})"
        hint = "GitHub is unavailable or rate-limiting this token; rerun the job later"
    else:
        text = f"GitHub rejected {what} ({status} {message})"
        hint = "this is likely a bug in kernel-review; please report it with the job log"
    if outcome_unknown:
        hint = "the write may have happened; list again before repeating it"
    return GitHubRequestError(
        text, hint=hint, status=status, api_message=message, outcome_unknown=outcome_unknown
    )


class GitHubClient:
    """A repository on github.com or GitHub Enterprise, seen as plain data: the GitHub
    ``ForgeClient``."""

    def __init__(
        self,
        token: str,
        repo: str,
        *,
        api_url: str = DEFAULT_API_URL,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        timeout_s: int = 20,
        spacing_s: tuple[float, float] | None = (0.25, 1.0),
    ) -> None:
        if not token:
            raise GitHubError("no GitHub token", hint="pass the `token` input or set GITHUB_TOKEN")
        if repo.count("/") != 1:
            raise GitHubError(
                f"not a repository name: {repo!r}", hint="use owner/name, e.g. octo/kernels"
            )
        self.repo_name = repo
        self._timeout_s = timeout_s
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        between, writes = spacing_s if spacing_s is not None else (None, None)
        self._gh = Github(
            auth=Auth.Token(token),
            base_url=self.api_url,
            retry=None,
            timeout=timeout_s,
            per_page=100,
            user_agent=f"kernel-review/{__version__}",
            seconds_between_requests=between,
            seconds_between_writes=writes,
            lazy=True,
        )
        self._repo = self._gh.get_repo(repo)
        self.waits_s: list[float] = []  # every back-off taken, for logs and tests

    # --- the retry loop -----------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[[], T], *, idempotent: bool = True) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except GithubException as exc:
                status, headers, message = (
                    exc.status,
                    dict(exc.headers or {}),
                    _api_message(exc.data),
                )
            except requests.exceptions.RequestException as exc:
                status, headers, message = None, {}, type(exc).__name__
            unknown = not idempotent and (status is None or status >= 500)
            delay = retry_delay(
                status,
                headers,
                message,
                attempt,
                self.retry,
                now=self._clock(),
                idempotent=idempotent,
            )
            if delay is None or attempt >= self.retry.max_attempts:
                raise _final_error(what, status, message, outcome_unknown=unknown)
            if delay > self.retry.max_wait_s:
                raise GitHubRequestError(
                    f"GitHub asked to wait {delay:.0f} s before {what} ({status} {message}); "
                    f"the most this bot waits is {self.retry.max_wait_s:.0f} s",
                    hint="the token is rate-limited; rerun the job after the limit resets",
                    status=status,
                    api_message=message,
                )
            self.waits_s.append(delay)
            self._sleep(delay)

    # --- reads --------------------------------------------------------------------------------

    def whoami(self) -> str | None:
        """The token's own login, or None where the token cannot read ``/user`` (app tokens)."""
        try:
            return self._call("reading the token's user", lambda: self._gh.get_user().login)
        except GitHubRequestError as exc:
            if exc.status in (401, 403, 404):
                return None
            raise

    def bot_login(self) -> str:
        """The token's own login, else GitHub Actions' (an installation token cannot read
        ``/user``; every workflow of the repository posts as ``github-actions[bot]``)."""
        return self.whoami() or DEFAULT_BOT_LOGINS[0]

    def get_pull(self, number: int) -> PullInfo:
        return self._call(
            f"reading pull request #{number}", lambda: _pull(self._repo.get_pull(number))
        )

    def find_pull(self, head_label: str, head_sha: str) -> PullInfo | None:
        """The open pull request whose head is ``owner:branch``; the one at ``head_sha`` first."""

        def run() -> PullInfo | None:
            found = [_pull(p) for p in self._repo.get_pulls(state="open", head=head_label)]
            exact = [p for p in found if p.head_sha == head_sha]
            return next(iter(exact or found), None)

        return self._call(f"finding the pull request for {head_label}", run)

    def get_pull_diff(self, number: int) -> str:
        """The pull request's unified diff (``application/vnd.github.v3.diff``).

        GitHub refuses very large diffs (406); then the diff is rebuilt from the files API,
        whose patches GitHub itself truncates, and files without a patch are left out.
        """
        url = f"/repos/{self.repo_name}/pulls/{number}"

        def run() -> str:
            _, data = self._gh.requester.requestJsonAndCheck(
                "GET", url, headers={"Accept": DIFF_MEDIA_TYPE}
            )
            text = data.get("data", "") if isinstance(data, dict) else ""
            return text if isinstance(text, str) else ""

        try:
            text = self._call(f"reading the diff of #{number}", run)
        except GitHubRequestError as exc:
            if exc.status not in (406, 422):
                raise
            return diff_from_files(self.list_pull_files(number))
        if len(text) > MAX_DIFF_CHARS:
            return diff_from_files(self.list_pull_files(number))
        return text

    def get_compare_diff(self, base_sha: str, head_sha: str) -> str:
        """The diff from the merge base of ``base_sha`` to ``head_sha`` (what a pull request at
        that head shows), for a pinned head that is no longer the pull request's newest."""
        url = f"/repos/{self.repo_name}/compare/{base_sha}...{head_sha}"

        def run() -> str:
            _, data = self._gh.requester.requestJsonAndCheck(
                "GET", url, headers={"Accept": DIFF_MEDIA_TYPE}
            )
            text = data.get("data", "") if isinstance(data, dict) else ""
            return text if isinstance(text, str) else ""

        return self._call(f"comparing {base_sha[:12]}...{head_sha[:12]}", run)

    def list_pull_files(self, number: int, *, max_files: int = 3000) -> list[FileInfo]:
        def run() -> list[FileInfo]:
            out: list[FileInfo] = []
            for f in self._repo.get_pull(number).get_files():
                out.append(
                    FileInfo(
                        filename=f.filename,
                        status=f.status,
                        previous_filename=f.previous_filename,
                        additions=f.additions or 0,
                        deletions=f.deletions or 0,
                        patch=f.patch,
                    )
                )
                if len(out) >= max_files:
                    break
            return out

        return self._call(f"listing the files of #{number}", run)

    def list_comments(self, number: int) -> list[CommentInfo]:
        """Every comment on the pull request's conversation, all pages, oldest first."""
        issue = self._repo.get_issue(number)
        return self._call(
            f"listing the comments of #{number}",
            lambda: [_comment(c) for c in issue.get_comments()],
        )

    def timeline(self, number: int) -> tuple[list[TimelineEvent], bool]:
        """The pull request's timeline in GitHub's order, and whether it was read to the end."""
        url = f"/repos/{self.repo_name}/issues/{number}/timeline"

        def page(n: int) -> list[Any]:
            _, data = self._gh.requester.requestJsonAndCheck(
                "GET", url, parameters={"per_page": 100, "page": n}
            )
            return data if isinstance(data, list) else []

        events: list[TimelineEvent] = []
        for n in range(1, MAX_TIMELINE_PAGES + 1):
            items = self._call(f"reading the timeline of #{number}", partial(page, n))
            events += [_timeline_event(item) for item in items if isinstance(item, dict)]
            if len(items) < 100:
                return events, True
        return events, False

    def permission(self, login: str) -> str:
        """The user's role on the repository: admin, maintain, write, triage, read or none."""
        return self._call(
            f"reading {login}'s permission", lambda: self._repo.get_collaborator_role_name(login)
        )

    def read_file(self, path: str, ref: str) -> str | None:
        """A text file at a ref (branch or SHA), or None when it does not exist there."""

        def run() -> str | None:
            content = self._repo.get_contents(path, ref=ref)
            if isinstance(content, list):  # a directory
                return None
            return content.decoded_content.decode("utf-8", errors="replace")

        try:
            return self._call(f"reading {path} at {ref[:12]}", run)
        except GitHubRequestError as exc:
            if exc.status == 404:
                return None
            raise

    def list_dir(self, path: str, ref: str) -> list[str]:
        """Paths of the files directly inside a directory at a ref; [] when there is none."""

        def run() -> list[str]:
            content = self._repo.get_contents(path, ref=ref)
            items = content if isinstance(content, list) else []
            return sorted(c.path for c in items if c.type == "file")

        try:
            return self._call(f"listing {path} at {ref[:12]}", run)
        except GitHubRequestError as exc:
            if exc.status == 404:
                return []
            raise

    # --- settings (read by ``kernel-review doctor``) ------------------------------------------

    def _settings(self, what: str, path: str) -> Any | None:
        """A settings document, or None where this token may not read it (403, 404)."""
        url = path if path.startswith("/orgs/") else f"/repos/{self.repo_name}{path}"

        def run() -> Any:
            return self._gh.requester.requestJsonAndCheck("GET", url)[1]

        try:
            return self._call(f"reading {what}", run)
        except GitHubRequestError as exc:
            if exc.status in (403, 404):
                return None
            raise

    def repository(self) -> dict[str, Any] | None:
        """The repository: ``private``, ``owner.type`` (User or Organization), default branch."""
        return self._settings("the repository", "")

    def actions_permissions(self) -> dict[str, Any] | None:
        """``enabled`` and ``allowed_actions`` of GitHub Actions on this repository."""
        return self._settings("the Actions permissions", "/actions/permissions")

    def workflow_permissions(self) -> dict[str, Any] | None:
        """``default_workflow_permissions`` (read or write) of the workflows' GITHUB_TOKEN."""
        return self._settings("the workflow permissions", "/actions/permissions/workflow")

    def fork_pr_approval(self) -> dict[str, Any] | None:
        """``approval_policy``: which outside contributors' workflow runs wait for approval."""
        return self._settings(
            "the fork pull request approval policy",
            "/actions/permissions/fork-pr-contributor-approval",
        )

    def repo_runners(self) -> dict[str, Any] | None:
        """The repository's own self-hosted runners (``runners``: name, labels, ephemeral)."""
        return self._settings("the repository's runners", "/actions/runners?per_page=100")

    def runner_groups(self, org: str) -> dict[str, Any] | None:
        """The organisation's runner groups and which workflows each is restricted to."""
        return self._settings(
            f"the runner groups of {org}", f"/orgs/{org}/actions/runner-groups?per_page=100"
        )

    # --- writes -------------------------------------------------------------------------------

    def create_comment(self, number: int, body: str) -> CommentInfo:
        """Post a comment. Never repeated on a 5xx: see GitHubRequestError.outcome_unknown."""
        issue = self._repo.get_issue(number)
        return self._call(
            f"commenting on #{number}",
            lambda: _comment(issue.create_comment(body)),
            idempotent=False,
        )

    def _comment_ref(self, comment_id: int) -> Any:
        # Issue comments live at /repos/{repo}/issues/comments/{id} whatever their issue; a lazy
        # issue object builds that URL without fetching anything.
        return self._repo.get_issue(0).get_comment(comment_id)

    def edit_comment(self, comment_id: int, body: str, *, number: int | None = None) -> None:
        """``number`` (the pull request) is not needed: GitHub finds a comment by its id."""
        comment = self._comment_ref(comment_id)
        self._call(f"editing comment {comment_id}", lambda: comment.edit(body))

    def add_reaction(self, comment_id: int, content: str, *, number: int | None = None) -> None:
        """React to an issue comment (found by its id alone: ``number`` is not needed); adding
        the same reaction twice is harmless."""
        if content not in REACTIONS:
            raise ValueError(f"not a reaction: {content!r}")
        comment = self._comment_ref(comment_id)
        self._call(f"reacting to comment {comment_id}", lambda: comment.create_reaction(content))

    def cancel_stale_runs(self, pull: PullInfo, current_run_id: int) -> list[int]:
        """Cancel the queued and running runs of the current run's workflow that review
        ``pull`` (its ``pull_request`` runs: GitHub lists the pull request on them, or, for a
        fork's, they ran on its head repository and branch), all but ``current_run_id``; the
        ids cancelled. At most ``MAX_RUNS_SCANNED`` runs of each status are looked at."""

        def stale() -> list[Any]:
            workflow = self._repo.get_workflow_run(current_run_id).workflow_id
            found: dict[int, Any] = {}
            for status in ("queued", "in_progress"):
                runs = self._repo.get_workflow_runs(status=status)
                for run in itertools.islice(runs, MAX_RUNS_SCANNED):
                    if (
                        run.id != current_run_id
                        and run.workflow_id == workflow
                        and _reviews(run.raw_data, pull)
                    ):
                        found[run.id] = run
            return list(found.values())

        return [
            run.id
            for run in self._call(f"listing the runs that review #{pull.number}", stale)
            if self.cancel_run(run.id)
        ]

    def cancel_run(self, run_id: int) -> bool:
        """Cancel an Actions run (its queued and running jobs); False when it had finished."""
        url = f"/repos/{self.repo_name}/actions/runs/{run_id}/cancel"
        try:
            self._call(
                f"cancelling run {run_id}",
                lambda: self._gh.requester.requestJsonAndCheck("POST", url),
            )
        except GitHubRequestError as exc:
            if exc.status != 409:  # 409: it finished in the meantime
                raise
            return False
        return True

    def get_run(self, run_id: int) -> RunInfo:
        """An Actions run of this repository: its workflow file, event and head."""
        url = f"/repos/{self.repo_name}/actions/runs/{run_id}"
        _, data = self._call(
            f"reading run {run_id}", lambda: self._gh.requester.requestJsonAndCheck("GET", url)
        )
        data = data if isinstance(data, dict) else {}
        return RunInfo(
            id=int(data.get("id") or 0),
            repository=str((data.get("repository") or {}).get("full_name") or ""),
            path=str(data.get("path") or ""),
            event=str(data.get("event") or ""),
            head_repository=(data.get("head_repository") or {}).get("full_name"),
            head_sha=str(data.get("head_sha") or ""),
        )

    def run_artifacts(self, run_id: int, name: str) -> list[ArtifactInfo]:
        """The artifacts called ``name`` of an Actions run (GitHub filters by name; a rerun's
        attempts each upload one)."""
        url = f"/repos/{self.repo_name}/actions/runs/{run_id}/artifacts"
        _, data = self._call(
            f"listing the artifacts of run {run_id}",
            lambda: self._gh.requester.requestJsonAndCheck(
                "GET", url, parameters={"name": name, "per_page": 100}
            ),
        )
        items = data.get("artifacts") if isinstance(data, dict) else None
        return [
            ArtifactInfo(
                id=int(a.get("id") or 0),
                name=str(a.get("name") or ""),
                size=int(a.get("size_in_bytes") or 0),
                expired=bool(a.get("expired")),
            )
            for a in items or ()
            if isinstance(a, dict) and a.get("name") == name
        ]

    def download_artifact(self, artifact_id: int, *, max_bytes: int) -> bytes:
        """An artifact's zip archive: GitHub answers 302 with a short-lived signed URL on its
        blob storage (another host, which PyGithub will not follow), fetched here without the
        token; 410 once the artifact expired. Read no further than ``max_bytes``."""
        url = f"/repos/{self.repo_name}/actions/artifacts/{artifact_id}/zip"

        def run() -> bytes:
            status, headers, body = self._gh.requester.requestJson("GET", url)
            location = headers.get("location") if status == 302 else None
            if not location:
                raise GithubException(status, _json_or_text(body), headers)
            with requests.get(location, stream=True, timeout=self._timeout_s) as got:
                got.raise_for_status()
                data = bytearray()
                for chunk in got.iter_content(chunk_size=1 << 16):
                    data += chunk
                    if len(data) > max_bytes:
                        raise GitHubRequestError(
                            f"artifact {artifact_id} is larger than {max_bytes:,} bytes; "
                            "not read further",
                            hint="a results artifact holds a few JSON files; this is not one",
                        )
            return bytes(data)

        return self._call(f"downloading artifact {artifact_id}", run)

    def run_jobs(self, run_id: int) -> list[JobInfo]:
        """The jobs of an Actions run (its latest attempt), all pages."""
        url = f"/repos/{self.repo_name}/actions/runs/{run_id}/jobs"

        def page(n: int) -> list[Any]:
            _, data = self._gh.requester.requestJsonAndCheck(
                "GET", url, parameters={"per_page": 100, "page": n}
            )
            jobs = data.get("jobs") if isinstance(data, dict) else None
            return jobs if isinstance(jobs, list) else []

        out: list[JobInfo] = []
        for n in range(1, 11):  # 1,000 jobs; a matrix holds at most 256
            items = self._call(f"listing the jobs of run {run_id}", partial(page, n))
            out += [
                JobInfo(
                    id=int(j.get("id") or 0),
                    name=str(j.get("name") or ""),
                    status=str(j.get("status") or ""),
                    created_at=str(j.get("created_at") or ""),
                    completed_at=str(j.get("completed_at") or ""),
                    labels=tuple(str(x) for x in j.get("labels") or ()),
                )
                for j in items
                if isinstance(j, dict)
            ]
            if len(items) < 100:
                break
        return out

    def find_issue(self, marker: str, *, author: str | None = None) -> IssueInfo | None:
        """The first open issue (not a pull request) whose body holds ``marker``, by ``author``
        when given; the 100 most recently updated open issues are searched."""

        def run() -> IssueInfo | None:
            for i, issue in enumerate(self._repo.get_issues(state="open", sort="updated")):
                if i >= 100:
                    return None
                if issue.pull_request is not None or marker not in (issue.body or ""):
                    continue
                found = _issue(issue)
                if author is None or found.author == author:
                    return found
            return None

        return self._call("listing open issues", run)

    def create_issue(self, title: str, body: str) -> IssueInfo:
        """Open an issue (its title cut to GitHub's 256 characters). Never repeated on a 5xx,
        like a comment."""
        title = clip(title, MAX_ISSUE_TITLE_CHARS)
        return self._call(
            f"opening the issue {title[:60]!r}",
            lambda: _issue(self._repo.create_issue(title=title, body=body)),
            idempotent=False,
        )

    def edit_issue(self, number: int, title: str, body: str) -> None:
        title = clip(title, MAX_ISSUE_TITLE_CHARS)
        issue = self._repo.get_issue(number)
        self._call(f"updating issue #{number}", lambda: issue.edit(title=title, body=body))

    def set_status(
        self, sha: str, state: str, description: str, *, context: str, target_url: str | None = None
    ) -> None:
        """A commit status (the merge gate); the description is cut to GitHub's 140 characters."""
        desc = clip(description, MAX_STATUS_DESCRIPTION_CHARS)
        kwargs: dict[str, Any] = {"description": desc, "context": context}
        if target_url:
            kwargs["target_url"] = target_url
        commit = self._repo.get_commit(sha)
        self._call(f"setting the {context} status", lambda: commit.create_status(state, **kwargs))

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
        """A completed check run on ``head_sha``; returns its id. The Checks API takes 50
        annotations per request: the first 50 go with the run, the rest in updates of it. The
        caller cuts ``summary`` to ``MAX_CHECK_TEXT_BYTES`` (it knows what to say where it cuts);
        titles and annotation messages are cut here to GitHub's limits. Never repeated on a 5xx
        (a second run, or annotations twice, would show)."""
        url = f"/repos/{self.repo_name}/check-runs"
        batches = [
            annotations[i : i + MAX_CHECK_ANNOTATIONS]
            for i in range(0, len(annotations), MAX_CHECK_ANNOTATIONS)
        ] or [[]]

        def output(batch: list[CheckAnnotation]) -> dict[str, Any]:
            return {
                "title": clip(title, MAX_CHECK_TITLE_CHARS),
                "summary": summary,
                "annotations": [
                    {
                        "path": a.path,
                        "start_line": a.start_line,
                        "end_line": a.end_line,
                        "annotation_level": a.level,
                        "title": clip(a.title, MAX_ANNOTATION_TITLE_CHARS),
                        "message": clip_bytes(a.message, MAX_ANNOTATION_MESSAGE_BYTES),
                    }
                    for a in batch
                ],
            }

        body: dict[str, Any] = {
            "name": name,
            "head_sha": head_sha,
            "status": "completed",
            "conclusion": conclusion,
            "output": output(batches[0]),
        }
        if details_url:
            body["details_url"] = details_url

        def create() -> int:
            _, data = self._gh.requester.requestJsonAndCheck("POST", url, input=body)
            return int(data["id"])

        run_id = self._call("creating the check run", create, idempotent=False)
        for n, batch in enumerate(batches[1:], start=2):

            def more(batch: list[CheckAnnotation] = batch) -> None:
                self._gh.requester.requestJsonAndCheck(
                    "PATCH", f"{url}/{run_id}", input={"output": output(batch)}
                )

            self._call(
                f"adding annotations {n} of {len(batches)} to the check run", more, idempotent=False
            )
        return run_id


def _reviews(run: Mapping[str, Any], pull: PullInfo) -> bool:
    """Whether the Actions run ``run`` (its JSON) is a ``pull_request`` run of ``pull``."""
    if run.get("event") != "pull_request":
        return False
    if any(p.get("number") == pull.number for p in run.get("pull_requests") or ()):
        return True
    head_repo = (run.get("head_repository") or {}).get("full_name")
    return bool(pull.head_repo) and (head_repo, run.get("head_branch")) == (
        pull.head_repo,
        pull.head_ref,
    )


def _issue(i: Any) -> IssueInfo:
    return IssueInfo(
        number=i.number,
        title=i.title or "",
        body=i.body or "",
        author=_login(i.user),
        html_url=i.html_url or "",
    )


def _login(user: Any) -> str:
    return getattr(user, "login", None) or "ghost"


def _pull(p: Any) -> PullInfo:
    head_repo = p.head.repo.full_name if p.head.repo is not None else None
    return PullInfo(
        number=p.number,
        state=p.state,
        merged=bool(p.merged),
        draft=bool(p.draft),
        title=p.title or "",
        author=_login(p.user),
        base_ref=p.base.ref,
        base_sha=p.base.sha,
        base_repo=p.base.repo.full_name,
        head_ref=p.head.ref,
        head_sha=p.head.sha,
        head_repo=head_repo,
        html_url=p.html_url or "",
    )


def _timeline_event(item: dict[str, Any]) -> TimelineEvent:
    event = str(item.get("event") or "")
    if event == "committed":
        committer = item.get("committer")
        if not isinstance(committer, dict):
            committer = {}
        return TimelineEvent(
            event=event, at=str(committer.get("date") or ""), sha=str(item.get("sha") or "")
        )
    cid = item.get("id") if event == "commented" else None
    return TimelineEvent(
        event=event,
        at=str(item.get("created_at") or ""),
        comment_id=cid if isinstance(cid, int) else None,
    )


def _comment(c: Any) -> CommentInfo:
    user = c.user
    return CommentInfo(
        id=c.id,
        author=_login(user),
        author_type=getattr(user, "type", None) or "User",
        body=c.body or "",
        html_url=c.html_url or "",
        created_at=c.created_at.isoformat() if c.created_at else "",
        updated_at=c.updated_at.isoformat() if c.updated_at else "",
    )


def diff_from_files(files: list[FileInfo]) -> str:
    """A unified diff rebuilt from the files API; files without a patch (binary, too large) are
    left out, so the analysis says what it could not see instead of failing."""
    parts: list[str] = []
    for f in files:
        if f.patch is None:
            continue
        old = f.previous_filename or f.filename
        head = [f"diff --git a/{old} b/{f.filename}"]
        if f.status == "added":
            head += ["new file mode 100644", "--- /dev/null", f"+++ b/{f.filename}"]
        elif f.status == "removed":
            head += ["deleted file mode 100644", f"--- a/{old}", "+++ /dev/null"]
        else:
            if f.previous_filename:
                head += [f"rename from {old}", f"rename to {f.filename}"]
            head += [f"--- a/{old}", f"+++ b/{f.filename}"]
        parts.append("\n".join(head) + "\n" + f.patch.rstrip("\n") + "\n")
    return "".join(parts)
