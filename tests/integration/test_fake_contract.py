"""The fake GitHub server against GitHub's REST description: for every route the bot uses, what
the fake answers must be something GitHub could answer.

- every key the fake sends is a key of GitHub's schema for that answer, of its type; ``null``
  only where GitHub's schema allows it (the fake once sent ``"pull_request": null`` on issues,
  where GitHub leaves the key out);
- every key the bot reads (``READS``) is there.

A key the fake leaves out is fine unless the bot reads it: the fake is small on purpose.

The schemas come from a small excerpt (``tests/data/github_rest/schemas.json``: only the
routes, answers and keys the fake sends, pruned from GitHub's description; the README there
names the source, version and licence). To make it again after the fake changes:
``python -m tests.integration.test_fake_contract PATH/api.github.com.deref.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.fake_github import BOT, FakeGitHub
from tests.paths import DATA

EXCERPT = DATA / "github_rest" / "schemas.json"
BASE, HEAD = "a" * 40, "b" * 40
PR, ISSUE_TITLE = 7, "kernel-review: triton 3.7.0 would regress softmax"

# (method, GitHub's path template, the fake's path, the JSON body sent, the status expected)
Call = tuple[str, str, str, Any, int]

# The keys the bot reads of each answer (through PyGithub in bot/github/api.py), dotted; "[]"
# steps into a list's items.
READS: dict[tuple[str, str], tuple[str, ...]] = {
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"): (
        "number", "state", "merged", "draft", "title", "user.login", "html_url", "base.ref",
        "base.sha", "base.repo.full_name", "head.ref", "head.sha", "head.repo.full_name",
    ),
    ("get", "/repos/{owner}/{repo}/pulls"): ("[].number", "[].head.sha", "[].head.repo.full_name"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"): (
        "[].filename", "[].status", "[].additions", "[].deletions", "[].patch",
    ),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): (
        "[].id", "[].user.login", "[].user.type", "[].body", "[].html_url", "[].created_at",
        "[].updated_at",
    ),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): ("id", "body", "html_url"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): ("id", "body"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/timeline"): ("[].event",),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"): ("content",),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"): ("role_name",),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"): ("state", "context"),
    ("post", "/repos/{owner}/{repo}/check-runs"): ("id",),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"): ("id",),
    ("get", "/repos/{owner}/{repo}/issues"): ("[].number", "[].body", "[].user.login"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"): ("number", "title", "html_url"),
    ("post", "/repos/{owner}/{repo}/issues"): ("number", "title", "html_url", "user.login"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"): ("number", "title"),
    ("get", "/repos/{owner}/{repo}/actions/runs"): (
        "workflow_runs.[].id", "workflow_runs.[].workflow_id", "workflow_runs.[].event",
        "workflow_runs.[].head_branch", "workflow_runs.[].pull_requests",
    ),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}"): (
        "id", "workflow_id", "path", "event", "repository.full_name", "head_repository.full_name",
        "head_sha",
    ),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"): (
        "artifacts.[].id", "artifacts.[].name", "artifacts.[].size_in_bytes",
        "artifacts.[].expired",
    ),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"): (
        "jobs.[].name", "jobs.[].status", "jobs.[].created_at",
    ),
    ("get", "/repos/{owner}/{repo}"): ("full_name", "private", "owner.type", "default_branch"),
}  # fmt: skip


def _fake() -> FakeGitHub:
    """A started fake holding one of everything the routes below read."""
    fake = FakeGitHub().start()
    fake.add_pull(PR, base_sha=BASE, head_sha=HEAD, diff="diff --git a/k.py b/k.py\n", files=[
        {"filename": "k.py", "status": "modified", "additions": 1, "deletions": 1,
         "changes": 2, "patch": "@@ -1 +1 @@\n-a\n+b"},
    ])  # fmt: skip
    fake.add_comment(PR, "someone", "/bench")
    fake.push(PR, "c" * 40, force=True)
    fake.put_file(BASE, "ops/k.py", "x = 1\n")
    fake.add_workflow_run(555, pull=PR)
    fake.add_workflow_job(555, "measure (amd 1/2)", status="queued")
    fake.add_artifact(555, "kernel-review-results", {"gate.json": b"{}"})
    return fake


def calls(fake: FakeGitHub) -> Iterator[Call]:
    """Every route the bot uses, in an order in which each call finds what it needs."""
    repo = f"/repos/{fake.repo}"
    comment = next(iter(fake.comments))
    yield "get", "/repos/{owner}/{repo}", repo, None, 200
    yield "get", "/repos/{owner}/{repo}/pulls/{pull_number}", f"{repo}/pulls/{PR}", None, 200
    yield "get", "/repos/{owner}/{repo}/pulls", f"{repo}/pulls?head=octo:feature", None, 200
    yield "get", "/repos/{owner}/{repo}/pulls/{pull_number}/files", f"{repo}/pulls/{PR}/files", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues/{issue_number}/comments", f"{repo}/issues/{PR}/comments", None, 200  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/issues/{issue_number}/comments", f"{repo}/issues/{PR}/comments", {"body": "review"}, 201  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues/comments/{comment_id}", f"{repo}/issues/comments/{comment}", None, 200  # fmt: skip
    yield "patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}", f"{repo}/issues/comments/{_own_comment(fake)}", {"body": "edited"}, 200  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", f"{repo}/issues/comments/{comment}/reactions", {"content": "eyes"}, 201  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues/{issue_number}/timeline", f"{repo}/issues/{PR}/timeline", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/collaborators/{username}/permission", f"{repo}/collaborators/someone/permission", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/contents/{path}", f"{repo}/contents/ops/k.py?ref={BASE}", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/contents/{path}", f"{repo}/contents/ops?ref={BASE}", None, 200  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/statuses/{sha}", f"{repo}/statuses/{HEAD}", {"state": "failure", "context": "kernel-review", "description": "d"}, 201  # fmt: skip
    check = {"name": "kernel-review", "head_sha": HEAD, "status": "completed",
             "conclusion": "failure", "output": {"title": "t", "summary": "s", "annotations": [
                 {"path": "k.py", "start_line": 1, "end_line": 1, "annotation_level": "warning",
                  "title": "kernel-review: slower", "message": "1.2x"}]}}  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/check-runs", f"{repo}/check-runs", check, 201
    run_id = max(fake.check_runs) if fake.check_runs else 0
    yield "patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", f"{repo}/check-runs/{run_id}", {"output": check["output"]}, 200  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/issues", f"{repo}/issues", {"title": ISSUE_TITLE, "body": "b"}, 201  # fmt: skip
    issue = max(fake.issues) if fake.issues else 0
    yield "patch", "/repos/{owner}/{repo}/issues/{issue_number}", f"{repo}/issues/{issue}", {"title": ISSUE_TITLE, "body": "c"}, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues/{issue_number}", f"{repo}/issues/{issue}", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues/{issue_number}", f"{repo}/issues/{PR}", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/issues", f"{repo}/issues?state=open", None, 200
    yield "get", "/repos/{owner}/{repo}/actions/runs", f"{repo}/actions/runs?status=in_progress", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/actions/runs/{run_id}", f"{repo}/actions/runs/555", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", f"{repo}/actions/runs/555/jobs", None, 200  # fmt: skip
    yield "get", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", f"{repo}/actions/runs/555/artifacts?name=kernel-review-results", None, 200  # fmt: skip
    yield "post", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", f"{repo}/actions/runs/555/cancel", None, 202  # fmt: skip


def _own_comment(fake: FakeGitHub) -> int:
    return max(cid for cid, c in fake.comments.items() if c["user"]["login"] == BOT)


def answers(fake: FakeGitHub) -> Iterator[tuple[str, str, int, Any]]:
    """(method, template, status, JSON body) of every call, made over HTTP."""
    for method, template, path, body, status in calls(fake):
        reply = requests.request(
            method.upper(),
            fake.api_url + path,
            json=body,
            headers={"Authorization": "token bot-token"},
            timeout=10,
        )
        assert reply.status_code == status, (method, path, reply.status_code, reply.text[:300])
        yield method, template, status, reply.json() if reply.content else None


# --- the schema check: the part of OpenAPI 3.0 GitHub's description uses ------------------------

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def problems(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """Why ``value`` is not something ``schema`` allows; [] when it is."""
    where = where or "the answer"
    if "allOf" in schema:  # one object described in parts: its keys are those of every part
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = {**part, **merged, "properties": {**part.get("properties", {}),
                                                       **merged.get("properties", {})}}  # fmt: skip
        return problems(merged, value, where)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            found = [problems(s, value, where) for s in schema[key]]
            if any(not f for f in found):
                return []
            return [f"{where}: matches none of GitHub's {len(found)} forms ({found[0][0]} ...)"]
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: null, where GitHub sends no null"]
    kind = schema.get("type")
    if kind is not None:
        fits = isinstance(value, _TYPES[kind]) and (kind == "boolean") == isinstance(value, bool)
        if not fits:
            return [f"{where}: {type(value).__name__}, GitHub sends {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of GitHub's {schema['enum']}"]
    out: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                out += problems(props[key], item, f"{where}.{key}")
            elif isinstance(extra, dict):
                out += problems(extra, item, f"{where}.{key}")
            elif extra is not True:
                out.append(f"{where}.{key}: not a key of GitHub's schema (or of the excerpt)")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += problems(schema["items"], item, f"{where}[{i}]")
    return out


def missing(value: Any, dotted: str) -> bool:
    """Whether the key path ``dotted`` is absent from ``value`` (every item of a list)."""
    head, _, rest = dotted.partition(".")
    if head == "[]":
        return not isinstance(value, list) or any(missing(v, rest) for v in value if rest)
    if not isinstance(value, dict) or head not in value:
        return True
    return missing(value[head], rest) if rest else False


@pytest.fixture(scope="module")
def excerpt() -> dict[str, Any]:
    return json.loads(EXCERPT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fake_answers() -> list[tuple[str, str, int, Any]]:
    fake = _fake()
    try:
        return list(answers(fake))
    finally:
        fake.stop()


def test_every_answer_of_the_fake_is_one_github_could_give(excerpt, fake_answers):
    found = []
    for method, template, status, body in fake_answers:
        schema = excerpt["routes"].get(f"{method} {template} {status}")
        if schema is None:
            found.append(f"{method} {template} {status}: not in the excerpt (make it again)")
            continue
        found += [f"{method.upper()} {template}: {p}" for p in problems(schema, body)]
    assert not found, "\n".join(found)


def test_every_key_the_bot_reads_is_sent(fake_answers):
    seen = {(m, t) for m, t, _, _ in fake_answers}
    assert set(READS) <= seen, set(READS) - seen  # every route the bot reads is exercised
    absent = [
        f"{method.upper()} {template}: {key}"
        for method, template, _, body in fake_answers
        for key in READS.get((method, template), ())
        if missing(body, key)
    ]
    assert not absent, absent


def test_the_check_catches_what_the_fake_once_got_wrong(excerpt):
    """The checker itself: an issue with ``"pull_request": null`` (GitHub leaves the key out) and
    an invented key are both reported."""
    schema = excerpt["routes"]["get /repos/{owner}/{repo}/issues/{issue_number} 200"]
    assert problems(schema, {"number": 1, "title": "t"}) == []
    assert problems(schema, {"number": 1, "pull_request": None}) == [
        "the answer.pull_request: null, where GitHub sends no null"
    ]
    assert "not a key" in problems(schema, {"number": 1, "invented": 1})[0]
    assert "GitHub sends integer" in problems(schema, {"number": "1"})[0]


# --- making the excerpt ------------------------------------------------------------------------


def _tree(value: Any) -> Any:
    """The keys of a JSON value: dict -> {key: tree}, list -> {"[]": merged tree}, else None."""
    if isinstance(value, dict):
        return {k: _tree(v) for k, v in value.items()}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            merged = _merge(merged, _tree(item))
        return {"[]": merged or None}
    return None


def _merge(a: Any, b: Any) -> Any:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a if b is None else b
    return {k: _merge(a.get(k), b.get(k)) for k in {**a, **b}}


_KEEP = ("type", "nullable", "enum", "additionalProperties")


def _prune(schema: dict[str, Any], tree: Any) -> dict[str, Any]:
    """``schema`` cut down to the keys in ``tree`` (what the fake sends)."""
    out = {k: schema[k] for k in _KEEP if k in schema and k != "additionalProperties"}
    if isinstance(schema.get("additionalProperties"), bool):
        out["additionalProperties"] = schema["additionalProperties"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            out[key] = [_prune(s, tree) for s in schema[key]]
    if isinstance(tree, dict) and "[]" in tree and "items" in schema:
        out["items"] = _prune(schema["items"], tree["[]"])
    elif isinstance(tree, dict) and "properties" in schema:
        props = schema["properties"]
        out["properties"] = {k: _prune(props[k], sub) for k, sub in tree.items() if k in props}
    return out


def make_excerpt(spec_path: Path) -> dict[str, Any]:
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    trees: dict[tuple[str, str, int], Any] = {}
    fake = _fake()
    try:
        for method, template, status, body in answers(fake):
            key = (method, template, status)
            trees[key] = _merge(trees.get(key), _tree(body))
    finally:
        fake.stop()
    routes = {}
    for (method, template, status), tree in sorted(trees.items()):
        response = spec["paths"][template][method]["responses"][str(status)]
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        routes[f"{method} {template} {status}"] = _prune(schema, tree)
    return {
        "source": "https://github.com/github/rest-api-description "
        "(descriptions/api.github.com, dereferenced), as published in the npm package "
        f"@octokit/openapi {spec['info']['version']}",
        "licence": "MIT (the description's own licence field and the package's LICENSE)",
        "openapi": spec["openapi"],
        "routes": routes,
    }


if __name__ == "__main__":
    EXCERPT.write_text(json.dumps(make_excerpt(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {EXCERPT}")
