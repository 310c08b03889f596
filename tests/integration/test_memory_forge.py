"""Whole jobs through the forge protocol alone: the gate, the ``/bench`` acknowledgement and the
report, each given the in-memory forge (``tests/memory_forge.py``) where the workflow gives them
GitHub's client. The change reviewed is the fixture rewrite (CUDA/HIP base, Triton head), its
files and diff made in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.app import ActionEnv, ack_mode, plan_mode, report_mode
from bot.forge.sticky import marker_sha
from bot.forge.types import PullInfo
from tests.diff_util import file_diff
from tests.integration.test_app_e2e import results_for
from tests.memory_forge import MemoryForge
from tests.paths import DATA, ROOT

FIXTURE = ROOT / "kernels_fixture"
PR, RUN = 42, 555
BASE, HEAD, NEW_HEAD = "a" * 40, "b" * 40, "c" * 40


def _tree(folder: Path, under: str) -> dict[str, str]:
    return {
        f"{under}/{p.relative_to(folder)}": p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _sides() -> tuple[dict[str, str], dict[str, str]]:
    """The fixture rewrite's files at base and head, as the end-to-end test commits them."""
    policy = (FIXTURE / "repo_files" / "kernel-review.toml").read_text(encoding="utf-8")
    policy = policy[: policy.index('[[kernels]]\nname = "matmul"')]  # the two elementwise ones
    repo_files = FIXTURE / "repo_files"
    csrc = _tree(FIXTURE / "toyops" / "csrc", "toyops/csrc")
    base = {
        ".github/kernel-review.toml": policy,
        "pyproject.toml": (repo_files / "pyproject.base.toml").read_text(encoding="utf-8"),
        **_tree(FIXTURE / "toyops_base", "toyops"),
        **csrc,
    }
    head = {
        ".github/kernel-review.toml": policy,
        "pyproject.toml": (repo_files / "pyproject.head.toml").read_text(encoding="utf-8"),
        **_tree(FIXTURE / "toyops", "toyops"),
    }
    return base, head


def _diff(base: dict[str, str], head: dict[str, str]) -> str:
    return "".join(
        file_diff(path, base.get(path), head[path])
        for path in sorted(head)
        if base.get(path) != head[path]
    )


@pytest.fixture
def forge() -> MemoryForge:
    base, head = _sides()
    forge = MemoryForge("octo/kernels")
    forge.put_files(BASE, base)
    forge.put_files(HEAD, head)
    forge.add_pull(
        PullInfo(
            number=PR,
            state="open",
            author="alice",
            base_ref="main",
            base_sha=BASE,
            base_repo="octo/kernels",
            head_ref="triton-rewrite",
            head_sha=HEAD,
            head_repo="octo/kernels",
        ),
        _diff(base, head),
    )
    forge.permissions.update({"alice": "write", "maintainer": "maintain"})
    return forge


def _env(tmp: Path, event_name: str, payload: dict, *, run_id: int | None = None) -> ActionEnv:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "event.json").write_text(json.dumps(payload), encoding="utf-8")
    return ActionEnv(
        event_name=event_name,
        event_path=tmp / "event.json",
        token="",  # no forge's token: the client is handed in
        api_url="",
        repository="octo/kernels",
        step_summary=tmp / "summary.md",
        output=tmp / "output.txt",
        run_url=None,
        run_id=run_id,
        policy_path=None,
        bot_login=None,
        head_sha=None,
        results_path=tmp / "results",
        artifact_name="kernel-review-results",
        vendor=None,
        shard="1/1",
        queue_file=tmp / "queue.json",
        history_path=tmp / "history.jsonl",
    )


def _pr_event(head: str) -> dict:
    payload = json.loads((DATA / "events" / "pull_request.opened.json").read_text())
    payload["pull_request"]["base"]["sha"] = BASE
    payload["pull_request"]["head"]["sha"] = head
    return payload


def _outputs(env: ActionEnv) -> dict[str, str]:
    assert env.output is not None
    lines = env.output.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_the_gate_and_the_report_run_through_the_protocol_alone(forge, tmp_path):
    env = _env(tmp_path / "run1", "pull_request", _pr_event(HEAD))
    assert plan_mode(env, lambda: forge) == 0
    gate = json.loads((env.results_path / "gate.json").read_text())
    assert gate["run"] and gate["head_sha"] == HEAD
    assert {k["name"] for k in gate["plan"]["kernels"]} >= {"softmax"}
    assert gate["policy_source"] == f".github/kernel-review.toml@{BASE[:12]}"
    assert forge.writes() == []  # the gate reads only
    assert "get_pull_diff" in forge.calls and "read_file" in forge.calls

    results_for(env.results_path, BASE, HEAD, "nvidia", 1.08)
    assert report_mode(env, lambda: forge) == 0
    [review] = forge.comments[PR]
    assert review.author == forge.login and marker_sha(review.body) == HEAD
    assert "Request changes" in review.body and "softmax" in review.body
    assert "no results came back from the amd runner" in review.body
    [status] = forge.statuses[HEAD]  # the fixture's policy: merge_gate = "status"
    assert status["state"] == "failure" and status["context"] == "kernel-review"
    assert forge.check_runs == []
    assert _outputs(env)["verdict"] == "request_changes"
    assert "Per-shape results" in (tmp_path / "run1" / "summary.md").read_text()

    # a push: the next report edits the same comment, under its pull request
    forge.put_files(NEW_HEAD, forge.files[HEAD])
    forge.push(PR, NEW_HEAD, forge.diffs[PR])
    env2 = _env(tmp_path / "run2", "pull_request", _pr_event(NEW_HEAD))
    assert plan_mode(env2, lambda: forge) == 0
    results_for(env2.results_path, BASE, NEW_HEAD, "nvidia", 1.0)
    forge.calls.clear()
    assert report_mode(env2, lambda: forge) == 0
    [updated] = forge.comments[PR]
    assert updated.id == review.id and marker_sha(updated.body) == NEW_HEAD
    assert forge.writes().count("edit_comment") == 1 and "create_comment" not in forge.writes()

    # the first run's report, finishing last, leaves the newer review alone
    assert report_mode(env, lambda: forge) == 0
    assert marker_sha(forge.comments[PR][0].body) == NEW_HEAD


def test_a_bench_comment_is_acknowledged_and_the_stale_run_cancelled(forge, tmp_path):
    said = forge.add_comment(PR, "maintainer", "/bench softmax quick")
    payload = json.loads((DATA / "events" / "issue_comment.created.bench.json").read_text())
    payload["comment"].update(id=said.id, body=said.body)
    payload["comment"]["user"].update(login="maintainer", type="User")
    forge.running = {RUN, 554}  # this run, and the review run the push started
    env = _env(tmp_path / "bench", "issue_comment", payload, run_id=RUN)
    assert plan_mode(env, lambda: forge) == 0
    gate = json.loads((env.results_path / "gate.json").read_text())
    assert gate["run"] and gate["head_sha"] == HEAD and gate["comment_id"] == said.id
    assert "timeline" in forge.calls and "permission" in forge.calls

    assert ack_mode(env, lambda: forge) == 0
    assert forge.reactions == [(PR, said.id, "eyes"), (PR, said.id, "rocket")]
    assert forge.running == {RUN}  # the older review of the pull request was cancelled
    reply = forge.comments[PR][-1]
    assert reply.author == forge.login and f"Measuring head `{HEAD[:12]}`" in reply.body


def test_a_reader_s_bench_is_refused_once_in_words_then_by_reactions(forge, tmp_path):
    payload = json.loads((DATA / "events" / "issue_comment.created.bench.json").read_text())
    for n in (1, 2):
        said = forge.add_comment(PR, "stranger", "/bench")
        payload["comment"].update(id=said.id, body=said.body)
        payload["comment"]["user"].update(login="stranger", type="User")
        env = _env(tmp_path / f"try{n}", "issue_comment", payload)
        assert plan_mode(env, lambda: forge) == 0 and ack_mode(env, lambda: forge) == 0
        assert (PR, said.id, "confused") in forge.reactions
    replies = [c for c in forge.comments[PR] if c.author == forge.login]
    assert len(replies) == 1 and replies[0].body.startswith("@stranger `/bench` was not run")


def test_a_check_run_carries_the_verdict_and_its_annotations(forge, tmp_path):
    policy = forge.files[BASE][".github/kernel-review.toml"]
    assert 'merge_gate = "status"' in policy
    forge.files[BASE][".github/kernel-review.toml"] = policy.replace(
        'merge_gate = "status"', 'merge_gate = "check"'
    )
    env = _env(tmp_path, "pull_request", _pr_event(HEAD))
    assert plan_mode(env, lambda: forge) == 0
    results_for(env.results_path, BASE, HEAD, "nvidia", 1.08)
    assert report_mode(env, lambda: forge) == 0
    [check] = forge.check_runs
    assert check["head_sha"] == HEAD and check["conclusion"] == "failure"
    [note] = check["annotations"]
    assert note.path == "toyops/softmax.py" and note.level == "warning"
    assert "softmax 4096x4096 float16 on nvidia" in note.message
    assert HEAD not in forge.statuses  # the check run is the merge gate


def test_a_history_the_token_may_not_read_leaves_the_review_without_it(forge, tmp_path, capsys):
    """A forge's refusal (not only GitHub's) of the history branch is said in the log; the
    review is posted without the history."""
    forge.unreadable.add("kernel-review-history")
    env = _env(tmp_path, "pull_request", _pr_event(HEAD))
    assert plan_mode(env, lambda: forge) == 0
    results_for(env.results_path, BASE, HEAD, "nvidia", 1.08)
    assert report_mode(env, lambda: forge) == 0
    assert "history not read from kernel-review-history" in capsys.readouterr().out
    [review] = forge.comments[PR]
    assert marker_sha(review.body) == HEAD
