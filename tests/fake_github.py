"""One fake GitHub REST server for every test: real HTTP on 127.0.0.1, driven by the real PyGithub.

It serves what the bot uses (pull requests, their files and diff, issues (a pull request is
an issue with a ``pull_request`` key, as on GitHub), issue comments with ``Link`` pagination,
reactions, collaborator permissions, contents, commit statuses, check runs with their
annotations (at most 50 per request, as GitHub takes them), Actions runs, their jobs and their
artifacts (a download answers 302 to a blob URL outside the API, 410 once expired, as GitHub
does), ``/user``) under a path prefix, as
GitHub Enterprise does (``/api/v3``). It refuses what GitHub refuses, in GitHub's units: a check
run's summary over 65,535 UTF-8 bytes, an annotation's message over 64 KB, a title too long.
``tests/integration/test_fake_contract.py`` checks its answers against GitHub's REST
description. Failures are injected per method and path:
a 502 after the write really happened, 403 or 429 with ``Retry-After``, a 422 "body is too
long", and anything else a test needs. Every request is logged so tests can count them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import re
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

BOT = "github-actions[bot]"
BLOBS = "/_blobs/"  # where an artifact download is redirected: not under the API's prefix


@dataclass
class Failure:
    method: str
    path: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    times: int
    perform: bool  # carry out the request, then answer with the failure anyway


@dataclass
class Token:
    login: str
    can_write: bool = True
    is_app: bool = True  # installation tokens cannot read /user
    user_type: str = "Bot"
    can_check: bool = True  # a job without `checks: write` is refused check runs (403)


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class FakeGitHub:
    def __init__(
        self,
        repo: str = "octo/kernels",
        *,
        prefix: str = "/api/v3",
        max_comment_chars: int = 65_536,
        count_bytes: bool = False,
        default_branch: str = "main",
    ) -> None:
        self.repo = repo
        self.prefix = prefix.rstrip("/")
        self.max_comment_chars = max_comment_chars
        self.count_bytes = count_bytes  # measure comment bodies in UTF-8 bytes (a stricter server)
        self.default_branch = default_branch
        self.lock = threading.RLock()
        self.tokens: dict[str, Token] = {
            "bot-token": Token(BOT),
            "read-token": Token(BOT, can_write=False),
        }
        self.pulls: dict[int, dict[str, Any]] = {}
        self.diffs: dict[int, str] = {}
        self.compares: dict[tuple[str, str], str] = {}  # (base, head) -> diff
        self.files: dict[int, list[dict[str, Any]]] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.reactions: dict[int, list[dict[str, Any]]] = {}
        self.permissions: dict[str, str] = {}
        self.refs: dict[str, str] = {}
        self.blobs: dict[str, dict[str, str]] = {}  # sha -> path -> text
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self.check_runs: dict[int, dict[str, Any]] = {}  # id -> run, annotations accumulated
        self.timelines: dict[int, list[dict[str, Any]]] = {}  # number -> events, oldest first
        self.issues: dict[int, dict[str, Any]] = {}  # issues (not pull requests) by number
        self.workflow_runs: dict[int, dict[str, Any]] = {}  # Actions runs by id
        self.workflow_jobs: dict[int, dict[str, Any]] = {}  # their jobs by id
        self.artifacts: dict[int, dict[str, Any]] = {}  # the runs' artifacts by id
        self.artifact_zips: dict[int, bytes] = {}  # what a download of each one gives
        # Actions settings by path ("/actions/permissions", "/orgs/octo/actions/runner-groups");
        # a path not set answers 403, as GitHub does for a token without admin rights.
        self.settings: dict[str, Any] = {}
        self.private = False
        self.repo_owner_type = "Organization"
        self.failures: list[Failure] = []
        self.requests: list[tuple[str, str]] = []
        self._ids = itertools.count(1001)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return self.origin + self.prefix

    # --- state set-up -------------------------------------------------------------------------

    def put_file(self, ref: str, path: str, text: str) -> None:
        """A file at a commit; ``ref`` is a SHA, or a branch name registered with set_ref."""
        with self.lock:
            self.blobs.setdefault(self.refs.get(ref, ref), {})[path] = text

    def set_ref(self, name: str, sha: str) -> None:
        with self.lock:
            self.refs[name] = sha

    def add_pull(
        self,
        number: int,
        *,
        base_sha: str,
        head_sha: str,
        author: str = "contributor",
        base_ref: str = "main",
        head_ref: str = "feature",
        head_repo: str | None = None,
        state: str = "open",
        draft: bool = False,
        title: str = "Rewrite kernels in Triton",
        diff: str = "",
        files: list[dict[str, Any]] | None = None,
    ) -> None:
        head_repo = head_repo or self.repo
        with self.lock:
            self.pulls[number] = {
                "number": number,
                "state": state,
                "draft": draft,
                "merged": False,
                "title": title,
                "user": _user(author),
                "base": {"ref": base_ref, "sha": base_sha, "repo": {"full_name": self.repo}},
                "head": {
                    "ref": head_ref,
                    "sha": head_sha,
                    "label": f"{head_repo.split('/')[0]}:{head_ref}",
                    "repo": {"full_name": head_repo},
                },
            }
            self.diffs[number] = diff
            self.compares[(base_sha, head_sha)] = diff
            self.files[number] = files or []
            self._committed(number, head_sha)

    def push(
        self,
        number: int,
        head_sha: str,
        *,
        diff: str | None = None,
        force: bool = False,
        commit_date: str | None = None,
    ) -> None:
        """A new head commit on an existing pull request, recorded on its timeline as GitHub
        does: a ``committed`` event dated by git (``commit_date`` backdates it), and for a
        force push a ``head_ref_force_pushed`` event dated by the server."""
        with self.lock:
            self.pulls[number]["head"]["sha"] = head_sha
            if force:
                stamp = _stamp(next(self._ids))
                self.timelines.setdefault(number, []).append(
                    {"event": "head_ref_force_pushed", "created_at": stamp, "commit_id": None}
                )
            self._committed(number, head_sha, commit_date)
            if diff is not None:
                self.diffs[number] = diff
                self.compares[(self.pulls[number]["base"]["sha"], head_sha)] = diff

    def add_workflow_run(
        self,
        run_id: int,
        *,
        workflow_id: int = 7,
        event: str = "pull_request",
        status: str = "in_progress",
        pull: int | None = None,
        head_branch: str | None = None,
        head_repo: str | None = None,
        head_sha: str | None = None,
        path: str = ".github/workflows/kernel-review.yml",
    ) -> None:
        """An Actions run of the workflow file ``path``; ``pull``: the pull request GitHub lists
        on it (none for a fork's, nor for an ``issue_comment`` run); ``head_branch``: a branch
        of its own unless named."""
        with self.lock:
            self.workflow_runs[run_id] = {
                "id": run_id,
                "workflow_id": workflow_id,
                "path": path,
                "event": event,
                "status": status,
                "conclusion": None,
                "head_branch": head_branch or f"branch-{run_id}",
                "head_sha": head_sha or "0" * 40,
                "repository": {"full_name": self.repo},
                "head_repository": {"full_name": head_repo or self.repo},
                "pull_requests": [{"number": pull}] if pull is not None else [],
                "url": self._url(f"/actions/runs/{run_id}"),
                "cancel_url": self._url(f"/actions/runs/{run_id}/cancel"),
            }

    def add_artifact(
        self, run_id: int, name: str, files: dict[str, bytes], *, expired: bool = False
    ) -> int:
        """An artifact of run ``run_id``: ``files`` (path in the archive -> content), zipped as
        GitHub serves an artifact's download; an ``expired`` one is listed but answers 410."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, data in files.items():
                archive.writestr(member, data)
        with self.lock:
            aid = next(self._ids)
            run = self.workflow_runs[run_id]
            self.artifact_zips[aid] = buffer.getvalue()
            self.artifacts[aid] = {
                "id": aid,
                "node_id": f"MDg6QXJ0aWZhY3R7{aid}",
                "name": name,
                "size_in_bytes": sum(len(d) for d in files.values()),
                "url": self._url(f"/actions/artifacts/{aid}"),
                "archive_download_url": self._url(f"/actions/artifacts/{aid}/zip"),
                "expired": expired,
                "created_at": _stamp(aid),
                "expires_at": _stamp(aid + 1),
                "updated_at": _stamp(aid),
                "workflow_run": {
                    "id": run_id,
                    "repository_id": 1,
                    "head_repository_id": 1,
                    "head_branch": run["head_branch"],
                    "head_sha": run["head_sha"],
                },
            }
            return aid

    def add_workflow_job(
        self,
        run_id: int,
        name: str,
        *,
        status: str = "queued",
        created_at: str = "2026-01-01T00:00:00Z",
        labels: tuple[str, ...] = ("self-hosted",),
    ) -> int:
        """A job of an Actions run; ``status`` queued, in_progress or completed."""
        with self.lock:
            job_id = next(self._ids)
            self.workflow_jobs[job_id] = {
                "id": job_id,
                "run_id": run_id,
                "name": name,
                "status": status,
                "conclusion": "success" if status == "completed" else None,
                "created_at": created_at,
                "started_at": created_at,
                "completed_at": created_at if status == "completed" else None,
                "labels": list(labels),
                "runner_name": None,
                "html_url": f"{self.origin}/{self.repo}/actions/runs/{run_id}/job/{job_id}",
                "url": self._url(f"/actions/jobs/{job_id}"),
            }
            return job_id

    def add_comment(self, number: int, author: str, body: str, *, user_type: str = "User") -> int:
        with self.lock:
            cid = next(self._ids)
            self.comments[cid] = {
                "id": cid,
                "issue_number": number,
                "user": _user(author, user_type),
                "body": body,
                "created_at": _stamp(cid),
            }
            self.comments[cid]["updated_at"] = self.comments[cid]["created_at"]
            self.timelines.setdefault(number, []).append(
                {"event": "commented", "id": cid, "created_at": _stamp(cid)}
            )
            return cid

    def _committed(self, number: int, sha: str, date: str | None = None) -> None:
        stamp = date or _stamp(next(self._ids))
        self.timelines.setdefault(number, []).append(
            {
                "event": "committed",
                "sha": sha,
                "author": {"name": "dev", "date": stamp},
                "committer": {"name": "dev", "date": stamp},
            }
        )

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        body: Any = None,
        headers: dict[str, str] | None = None,
        perform: bool = False,
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` and the ``path`` regex
        (searched in the path after the prefix) with ``status``."""
        with self.lock:
            self.failures.append(
                Failure(
                    method.upper(),
                    re.compile(path),
                    status,
                    body if body is not None else {"message": f"injected {status}"},
                    headers or {},
                    times,
                    perform,
                )
            )

    # --- queries for tests ----------------------------------------------------------------------

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        with self.lock:
            return [c for c in self.comments.values() if c["issue_number"] == number]

    def checks_on(self, sha: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.check_runs.values() if r["head_sha"] == sha]

    def count(self, method: str, path_regex: str) -> int:
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and re.search(path_regex, p))

    # --- request handling ---------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> Reply:
        with self.lock:
            self.requests.append((method, path))
            token = self._token(headers)
            if token is None:
                return Reply(401, {"message": "Bad credentials"})
            for failure in self.failures:
                if failure.times > 0 and failure.method == method and failure.path.search(path):
                    failure.times -= 1
                    if failure.perform:
                        self._route(method, path, query, headers, body, token)
                    return Reply(failure.status, failure.body, dict(failure.headers))
            return self._route(method, path, query, headers, body, token)

    def _token(self, headers: dict[str, str]) -> Token | None:
        auth = headers.get("authorization", "")
        parts = auth.split()
        return self.tokens.get(parts[-1]) if len(parts) == 2 else None

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: Any,
        token: Token,
    ) -> Reply:
        if method != "GET" and not token.can_write:
            return Reply(403, {"message": "Resource not accessible by integration"})
        if path == "/user":
            if token.is_app:
                return Reply(403, {"message": "Resource not accessible by integration"})
            return Reply(200, _user(token.login, token.user_type))
        repo = f"/repos/{self.repo}"
        settings = path[len(repo) :] if path.startswith(repo + "/actions/") else path
        is_settings = settings.startswith("/actions/") and not settings.startswith(
            ("/actions/runs", "/actions/artifacts")
        )
        if method == "GET" and (is_settings or path.startswith("/orgs/")):
            if settings in self.settings:
                return Reply(200, self.settings[settings])
            return Reply(403, {"message": "Resource not accessible by integration"})
        if not path.startswith(repo):
            return Reply(404, {"message": "Not Found"})
        rest = path[len(repo) :]
        for pattern, handler in self._routes():
            m = re.fullmatch(pattern, rest)
            if m and handler[0] == method:
                return handler[1](m, query, headers, body, token)
        return Reply(404, {"message": "Not Found"})

    def _routes(self) -> list[tuple[str, tuple[str, Any]]]:
        return [
            (r"", ("GET", self._get_repo)),
            (r"/pulls/(\d+)", ("GET", self._get_pull)),
            (r"/pulls", ("GET", self._list_pulls)),
            (r"/pulls/(\d+)/files", ("GET", self._list_files)),
            (r"/issues", ("GET", self._list_issues)),
            (r"/issues", ("POST", self._create_issue)),
            (r"/issues/(\d+)", ("GET", self._get_issue)),
            (r"/issues/(\d+)", ("PATCH", self._edit_issue)),
            (r"/issues/(\d+)/comments", ("GET", self._list_comments)),
            (r"/issues/(\d+)/comments", ("POST", self._create_comment)),
            (r"/issues/(\d+)/timeline", ("GET", self._list_timeline)),
            (r"/issues/comments/(\d+)", ("GET", self._get_comment)),
            (r"/issues/comments/(\d+)", ("PATCH", self._edit_comment)),
            (r"/issues/comments/(\d+)/reactions", ("GET", self._list_reactions)),
            (r"/issues/comments/(\d+)/reactions", ("POST", self._create_reaction)),
            (r"/collaborators/([^/]+)/permission", ("GET", self._permission)),
            (r"/contents/(.+)", ("GET", self._contents)),
            (r"/compare/([0-9a-f]{40})\.\.\.([0-9a-f]{40})", ("GET", self._compare)),
            (r"/statuses/([0-9a-f]{40})", ("POST", self._create_status)),
            (r"/commits/([0-9a-f]{40})/statuses", ("GET", self._list_statuses)),
            (r"/check-runs", ("POST", self._create_check_run)),
            (r"/check-runs/(\d+)", ("PATCH", self._update_check_run)),
            (r"/check-runs/(\d+)", ("GET", self._get_check_run)),
            (r"/actions/runs", ("GET", self._list_workflow_runs)),
            (r"/actions/runs/(\d+)", ("GET", self._get_workflow_run)),
            (r"/actions/runs/(\d+)/cancel", ("POST", self._cancel_workflow_run)),
            (r"/actions/runs/(\d+)/jobs", ("GET", self._list_workflow_jobs)),
            (r"/actions/runs/(\d+)/artifacts", ("GET", self._list_run_artifacts)),
            (r"/actions/artifacts/(\d+)/zip", ("GET", self._download_artifact)),
        ]

    def _url(self, rest: str) -> str:
        return f"{self.api_url}/repos/{self.repo}{rest}"

    def _get_repo(self, m, query, headers, body, token) -> Reply:
        owner = self.repo.split("/")[0]
        return Reply(
            200,
            {
                "id": 1,
                "name": self.repo.split("/")[1],
                "full_name": self.repo,
                "owner": _user(owner, self.repo_owner_type),
                "default_branch": self.default_branch,
                "url": self._url(""),
                "private": self.private,
            },
        )

    def _pull_json(self, number: int) -> dict[str, Any]:
        pr = json.loads(json.dumps(self.pulls[number]))
        pr["url"] = self._url(f"/pulls/{number}")
        pr["html_url"] = f"{self.origin}/{self.repo}/pull/{number}"
        pr["issue_url"] = self._url(f"/issues/{number}")
        return pr

    def _get_pull(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        if number not in self.pulls:
            return Reply(404, {"message": "Not Found"})
        if "diff" in headers.get("accept", ""):
            return Reply(200, self.diffs[number], {"content-type": "text/plain; charset=utf-8"})
        return Reply(200, self._pull_json(number))

    def _list_pulls(self, m, query, headers, body, token) -> Reply:
        state = query.get("state", "open")
        head = query.get("head")
        # GitHub lists "simple" pull requests: no ``merged`` (PyGithub reads the pull for it)
        items = [
            {k: v for k, v in self._pull_json(n).items() if k != "merged"}
            for n, pr in sorted(self.pulls.items())
            if (state == "all" or pr["state"] == state)
            and (head is None or pr["head"]["label"] == head)
        ]
        return self._page(items, query, "/pulls")

    def _list_files(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        if number not in self.pulls:
            return Reply(404, {"message": "Not Found"})
        return self._page(self.files[number], query, f"/pulls/{number}/files")

    def _comment_json(self, c: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in c.items() if k != "issue_number"}
        out["url"] = self._url(f"/issues/comments/{c['id']}")
        out["html_url"] = (
            f"{self.origin}/{self.repo}/pull/{c['issue_number']}#issuecomment-{c['id']}"
        )
        out["issue_url"] = self._url(f"/issues/{c['issue_number']}")
        return out

    def _list_comments(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        items = [self._comment_json(c) for c in self.comments_on(number)]
        return self._page(items, query, f"/issues/{number}/comments")

    def _list_timeline(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        if number not in self.pulls:
            return Reply(404, {"message": "Not Found"})
        return self._page(self.timelines.get(number, []), query, f"/issues/{number}/timeline")

    def _too_long(self, text: str) -> bool:
        size = len(text.encode("utf-8")) if self.count_bytes else len(text)
        return size > self.max_comment_chars

    def _body_error(self, text: Any) -> Reply | None:
        if not isinstance(text, str):
            return Reply(
                422,
                {"message": "Invalid request.", "errors": [{"field": "body", "code": "missing"}]},
            )
        if self._too_long(text):
            return Reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [
                        {
                            "resource": "IssueComment",
                            "code": "custom",
                            "field": "body",
                            "message": f"body is too long (maximum is {self.max_comment_chars} characters)",
                        }
                    ],
                },
            )
        return None

    def _issue_json(self, i: dict[str, Any]) -> dict[str, Any]:
        """An issue as GitHub sends it: the ``pull_request`` key only on a pull request."""
        return {
            **i,
            "url": self._url(f"/issues/{i['number']}"),
            "html_url": f"{self.origin}/{self.repo}/issues/{i['number']}",
            "comments_url": self._url(f"/issues/{i['number']}/comments"),
        }

    def _pull_issue_json(self, number: int) -> dict[str, Any]:
        """A pull request seen through the issues API: its ``pull_request`` key says so."""
        pr = self.pulls[number]
        return {
            "id": number,
            "number": number,
            "title": pr["title"],
            "body": pr.get("body"),
            "state": pr["state"],
            "user": pr["user"],
            "created_at": _stamp(number),
            "updated_at": _stamp(number),
            "url": self._url(f"/issues/{number}"),
            "html_url": f"{self.origin}/{self.repo}/pull/{number}",
            "comments_url": self._url(f"/issues/{number}/comments"),
            "pull_request": {
                "url": self._url(f"/pulls/{number}"),
                "html_url": f"{self.origin}/{self.repo}/pull/{number}",
                "diff_url": f"{self.origin}/{self.repo}/pull/{number}.diff",
                "patch_url": f"{self.origin}/{self.repo}/pull/{number}.patch",
            },
        }

    def _get_issue(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        if number in self.issues:
            return Reply(200, self._issue_json(self.issues[number]))
        if number in self.pulls:
            return Reply(200, self._pull_issue_json(number))
        return Reply(404, {"message": "Not Found"})

    def _title_error(self, title: Any) -> Reply | None:
        if isinstance(title, str) and 0 < len(title) <= self.MAX_ISSUE_TITLE_CHARS:
            return None
        return Reply(
            422,
            {
                "message": "Validation Failed",
                "errors": [{"resource": "Issue", "code": "custom", "field": "title"}],
            },
        )

    def _list_issues(self, m, query, headers, body, token) -> Reply:
        """Issues and, as GitHub lists them here too, pull requests (with ``pull_request``)."""
        wanted = query.get("state", "open")
        found = [self._issue_json(i) for i in self.issues.values()]
        found += [self._pull_issue_json(n) for n in self.pulls]
        found = [i for i in found if wanted == "all" or i["state"] == wanted]
        found.sort(key=lambda i: i["updated_at"], reverse=True)
        return self._page(found, query, "/issues")

    def _create_issue(self, m, query, headers, body, token) -> Reply:
        text = (body or {}).get("body", "")
        error = self._title_error((body or {}).get("title")) or self._body_error(text)
        if error:
            return error
        number = next(self._ids)
        stamp = _stamp(number)
        self.issues[number] = {
            "id": number,
            "number": number,
            "title": (body or {}).get("title", ""),
            "body": text,
            "state": "open",
            "user": _user(token.login, token.user_type),
            "created_at": stamp,
            "updated_at": stamp,
        }
        return Reply(201, self._issue_json(self.issues[number]))

    def _edit_issue(self, m, query, headers, body, token) -> Reply:
        issue = self.issues.get(int(m.group(1)))
        if issue is None:
            return Reply(404, {"message": "Not Found"})
        body = body or {}
        error = ("title" in body and self._title_error(body["title"])) or (
            "body" in body and self._body_error(body["body"])
        )
        if error:
            return error
        for key in ("title", "body", "state"):
            if key in body:
                issue[key] = body[key]
        issue["updated_at"] = _stamp(next(self._ids))
        return Reply(200, self._issue_json(issue))

    def _create_comment(self, m, query, headers, body, token) -> Reply:
        number = int(m.group(1))
        text = (body or {}).get("body")
        error = self._body_error(text)
        if error:
            return error
        cid = self.add_comment(number, token.login, text, user_type=token.user_type)
        return Reply(201, self._comment_json(self.comments[cid]))

    def _get_comment(self, m, query, headers, body, token) -> Reply:
        c = self.comments.get(int(m.group(1)))
        return Reply(200, self._comment_json(c)) if c else Reply(404, {"message": "Not Found"})

    def _edit_comment(self, m, query, headers, body, token) -> Reply:
        c = self.comments.get(int(m.group(1)))
        if c is None:
            return Reply(404, {"message": "Not Found"})
        if c["user"]["login"] != token.login:
            return Reply(403, {"message": "Resource not accessible by integration"})
        text = (body or {}).get("body")
        error = self._body_error(text)
        if error:
            return error
        c["body"] = text
        c["updated_at"] = "2026-01-02T00:00:00Z"
        return Reply(200, self._comment_json(c))

    def _list_reactions(self, m, query, headers, body, token) -> Reply:
        return self._page(
            self.reactions.get(int(m.group(1)), []),
            query,
            f"/issues/comments/{m.group(1)}/reactions",
        )

    def _create_reaction(self, m, query, headers, body, token) -> Reply:
        cid = int(m.group(1))
        if cid not in self.comments:
            return Reply(404, {"message": "Not Found"})
        content = (body or {}).get("content")
        if content not in {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}:
            return Reply(422, {"message": "Validation Failed"})
        existing = self.reactions.setdefault(cid, [])
        for r in existing:
            if r["content"] == content and r["user"]["login"] == token.login:
                return Reply(200, r)
        reaction = {
            "id": next(self._ids),
            "content": content,
            "user": _user(token.login, token.user_type),
            "created_at": "2026-01-01T00:00:00Z",
        }
        existing.append(reaction)
        return Reply(201, reaction)

    def _permission(self, m, query, headers, body, token) -> Reply:
        login = m.group(1)
        role = self.permissions.get(login, "read")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return Reply(200, {"permission": legacy, "role_name": role, "user": _user(login)})

    def _compare(self, m, query, headers, body, token) -> Reply:
        diff = self.compares.get((m.group(1), m.group(2)))
        if diff is None:
            return Reply(404, {"message": "Not Found"})
        return Reply(200, diff, {"content-type": "text/plain; charset=utf-8"})

    def _contents(self, m, query, headers, body, token) -> Reply:
        path = m.group(1).rstrip("/")
        ref = query.get("ref", self.default_branch)
        files = self.blobs.get(self.refs.get(ref, ref), {})
        text = files.get(path)
        if text is None:
            inside = sorted(
                p for p in files if p.startswith(path + "/") and "/" not in p[len(path) + 1 :]
            )
            if not inside:
                return Reply(404, {"message": "Not Found"})
            return Reply(
                200,
                [
                    {
                        "type": "file",
                        "name": p.rsplit("/", 1)[-1],
                        "path": p,
                        "size": len(files[p]),
                        "sha": hashlib.sha1(files[p].encode()).hexdigest(),
                        "url": self._url(f"/contents/{p}"),
                    }
                    for p in inside
                ],
            )
        raw = text.encode("utf-8")
        return Reply(
            200,
            {
                "type": "file",
                "encoding": "base64",
                "size": len(raw),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "sha": hashlib.sha1(raw).hexdigest(),
                "content": base64.encodebytes(raw).decode("ascii"),
                "url": self._url(f"/contents/{path}"),
            },
        )

    def _create_status(self, m, query, headers, body, token) -> Reply:
        body = body or {}
        if body.get("state") not in {"error", "failure", "pending", "success"}:
            return Reply(422, {"message": "Validation Failed"})
        if len(body.get("description") or "") > 140:
            return Reply(
                422, {"message": "Validation Failed", "errors": [{"field": "description"}]}
            )
        status = {
            "id": next(self._ids),
            "state": body["state"],
            "context": body.get("context", "default"),
            "description": body.get("description"),
            "target_url": body.get("target_url"),
            "creator": _user(token.login, token.user_type),
            "created_at": "2026-01-01T00:00:00Z",
        }
        self.statuses.setdefault(m.group(1), []).insert(0, status)
        return Reply(201, status)

    CHECK_CONCLUSIONS = frozenset(
        {"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"}
    )
    ANNOTATION_LEVELS = frozenset({"notice", "warning", "failure"})

    # GitHub's limits, in GitHub's units (bot/github/api.py cites where each is documented):
    # a check run's summary and text in UTF-8 bytes, an annotation's message in bytes ("64 KB"),
    # its title in characters.
    MAX_CHECK_TEXT_BYTES = 65_535
    MAX_ANNOTATION_MESSAGE_BYTES = 64 * 1024
    MAX_ANNOTATION_TITLE_CHARS = 255
    MAX_ISSUE_TITLE_CHARS = 256

    def _check_output_error(self, output: Any) -> Reply | None:
        """What GitHub answers for an output it does not take, or None."""
        if output is None:
            return None
        if not isinstance(output, dict) or not output.get("title") or "summary" not in output:
            return Reply(
                422, {"message": "Invalid request.", "errors": ["output needs title and summary"]}
            )
        for key in ("summary", "text"):
            if len(str(output.get(key) or "").encode("utf-8")) > self.MAX_CHECK_TEXT_BYTES:
                # the body GitHub sends (https://github.com/github/docs/issues/35252)
                return Reply(
                    422,
                    {
                        "message": "Validation Failed",
                        "errors": [
                            {
                                "resource": "CheckRun",
                                "code": "custom",
                                "field": key,
                                "message": f"{key} exceeds a maximum bytesize of "
                                f"{self.MAX_CHECK_TEXT_BYTES}",
                            }
                        ],
                    },
                )
        notes = output.get("annotations") or []
        if len(notes) > 50:
            return Reply(
                422, {"message": "Invalid request.", "errors": ["more than 50 annotations"]}
            )
        for a in notes:
            if (
                not isinstance(a.get("path"), str)
                or not isinstance(a.get("start_line"), int)
                or not isinstance(a.get("end_line"), int)
                or a.get("annotation_level") not in self.ANNOTATION_LEVELS
                or not a.get("message")
                or len(a["message"].encode("utf-8")) > self.MAX_ANNOTATION_MESSAGE_BYTES
                or len(a.get("title") or "") > self.MAX_ANNOTATION_TITLE_CHARS
            ):
                return Reply(422, {"message": "Invalid request.", "errors": [f"annotation {a}"]})
        return None

    def _create_check_run(self, m, query, headers, body, token) -> Reply:
        if not token.can_check:
            return Reply(403, {"message": "Resource not accessible by integration"})
        body = body or {}
        if not body.get("name") or not re.fullmatch(r"[0-9a-f]{40}", str(body.get("head_sha"))):
            return Reply(422, {"message": "Invalid request.", "errors": ["name and head_sha"]})
        if (
            body.get("status") == "completed"
            and body.get("conclusion") not in self.CHECK_CONCLUSIONS
        ):
            return Reply(422, {"message": "Invalid request.", "errors": ["conclusion"]})
        if body.get("conclusion") == "action_required" and not body.get("details_url"):
            return Reply(422, {"message": "Invalid request.", "errors": ["details_url"]})
        error = self._check_output_error(body.get("output"))
        if error:
            return error
        rid = next(self._ids)
        output = dict(body.get("output") or {})
        run = {
            "id": rid,
            "name": body["name"],
            "head_sha": body["head_sha"],
            "status": body.get("status", "queued"),
            "conclusion": body.get("conclusion"),
            "details_url": body.get("details_url"),
            "output": {**output, "annotations": list(output.get("annotations") or [])},
            "requests": 1,
        }
        self.check_runs[rid] = run
        return Reply(201, self._check_json(run))

    def _update_check_run(self, m, query, headers, body, token) -> Reply:
        if not token.can_check:
            return Reply(403, {"message": "Resource not accessible by integration"})
        run = self.check_runs.get(int(m.group(1)))
        if run is None:
            return Reply(404, {"message": "Not Found"})
        body = body or {}
        error = self._check_output_error(body.get("output"))
        if error:
            return error
        if body.get("output"):
            added = list(body["output"].get("annotations") or [])
            run["output"] = {
                **run["output"],
                **body["output"],
                "annotations": run["output"]["annotations"] + added,  # GitHub appends them
            }
        for key in ("conclusion", "status", "details_url"):
            if key in body:
                run[key] = body[key]
        run["requests"] += 1
        return Reply(200, self._check_json(run))

    def _get_check_run(self, m, query, headers, body, token) -> Reply:
        run = self.check_runs.get(int(m.group(1)))
        return Reply(200, self._check_json(run)) if run else Reply(404, {"message": "Not Found"})

    def _check_json(self, run: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in run.items() if k != "requests"}
        out["output"] = {k: v for k, v in run["output"].items() if k != "annotations"} | {
            "annotations_count": len(run["output"].get("annotations", []))
        }
        out["url"] = self._url(f"/check-runs/{run['id']}")
        return out

    def _list_workflow_runs(self, m, query, headers, body, token) -> Reply:
        runs = [
            r
            for r in self.workflow_runs.values()
            if r["status"] == query.get("status", r["status"])
        ]
        page = self._page(runs, query, "/actions/runs")
        return Reply(page.status, {"total_count": len(runs), "workflow_runs": page.body},
                     page.headers)  # fmt: skip

    def _get_workflow_run(self, m, query, headers, body, token) -> Reply:
        run = self.workflow_runs.get(int(m.group(1)))
        return Reply(200, run) if run else Reply(404, {"message": "Not Found"})

    def _cancel_workflow_run(self, m, query, headers, body, token) -> Reply:
        run = self.workflow_runs.get(int(m.group(1)))
        if run is None:
            return Reply(404, {"message": "Not Found"})
        if run["status"] == "completed":
            return Reply(409, {"message": "Cannot cancel a workflow run that is completed."})
        run.update(status="completed", conclusion="cancelled")
        for job in self.workflow_jobs.values():
            if job["run_id"] == run["id"] and job["status"] != "completed":
                job.update(status="completed", conclusion="cancelled")
        return Reply(202, {})

    def _list_workflow_jobs(self, m, query, headers, body, token) -> Reply:
        run_id = int(m.group(1))
        if run_id not in self.workflow_runs:
            return Reply(404, {"message": "Not Found"})
        jobs = [j for j in self.workflow_jobs.values() if j["run_id"] == run_id]
        page = self._page(jobs, query, f"/actions/runs/{run_id}/jobs")
        return Reply(page.status, {"total_count": len(jobs), "jobs": page.body}, page.headers)

    def _list_run_artifacts(self, m, query, headers, body, token) -> Reply:
        run_id = int(m.group(1))
        if run_id not in self.workflow_runs:
            return Reply(404, {"message": "Not Found"})
        found = [
            a
            for a in self.artifacts.values()
            if a["workflow_run"]["id"] == run_id and query.get("name", a["name"]) == a["name"]
        ]
        page = self._page(found, query, f"/actions/runs/{run_id}/artifacts")
        return Reply(page.status, {"total_count": len(found), "artifacts": page.body},
                     page.headers)  # fmt: skip

    def _download_artifact(self, m, query, headers, body, token) -> Reply:
        """GitHub answers 302 with a short-lived URL of the archive on its blob storage (another
        host, no token needed), or 410 once the artifact expired."""
        artifact = self.artifacts.get(int(m.group(1)))
        if artifact is None:
            return Reply(404, {"message": "Not Found"})
        if artifact["expired"]:
            return Reply(410, {"message": "Artifact has expired"})
        return Reply(302, None, {"location": f"{self.origin}{BLOBS}{artifact['id']}?sig=x"})

    def blob(self, path: str, headers: dict[str, str]) -> Reply:
        """The blob storage a download is sent to: the archive, outside the API's prefix. The
        URL is signed: a request that also brings a token is refused, as Azure's storage
        refuses one (and the token must not leave GitHub)."""
        with self.lock:
            self.requests.append(("GET", path))
            if "authorization" in headers:
                return Reply(400, "InvalidAuthenticationInfo")
            key = path[len(BLOBS) :]
            data = self.artifact_zips.get(int(key)) if key.isdigit() else None
        if data is None:
            return Reply(404, "BlobNotFound")
        return Reply(200, data, {"content-type": "application/zip"})

    def _list_statuses(self, m, query, headers, body, token) -> Reply:
        return self._page(
            self.statuses.get(m.group(1), []), query, f"/commits/{m.group(1)}/statuses"
        )

    def _page(self, items: list[Any], query: dict[str, str], rest: str) -> Reply:
        per_page = max(1, min(100, int(query.get("per_page", "30"))))
        page = max(1, int(query.get("page", "1")))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        keep = {k: v for k, v in query.items() if k not in {"page", "per_page"}}

        def link(p: int, rel: str) -> str:
            return f'<{self._url(rest)}?{urlencode({**keep, "per_page": per_page, "page": p})}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return Reply(200, chunk, {"link": ", ".join(links)} if links else {})


def _stamp(n: int) -> str:
    """The fake's clock: event ``n`` (ids only grow) happened ``n`` seconds into the day."""
    return f"2026-01-01T{n // 3600:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z"


def _user(login: str, user_type: str = "User") -> dict[str, Any]:
    return {
        "login": login,
        "id": abs(hash(login)) % 10_000_000,
        "type": user_type,
        "url": f"https://api.invalid/users/{login}",
    }


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _serve(self) -> None:
        fake = self.server_fake
        parts = urlsplit(self.path)
        path = parts.path
        if path.startswith(BLOBS):
            reply = fake.blob(path, {k.lower(): v for k, v in self.headers.items()})
        elif not path.startswith(fake.prefix + "/") and path != fake.prefix:
            reply = Reply(404, {"message": "Not Found"})
        else:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake.handle(self.command, path[len(fake.prefix) :] or "/", query, headers, body)
        if isinstance(reply.body, bytes):
            data = reply.body
        else:
            payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = payload.encode("utf-8") if reply.body is not None else b""
        self.send_response(reply.status)
        headers = {"content-type": "application/json; charset=utf-8", **reply.headers}
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve
