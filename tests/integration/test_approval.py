"""A ``/bench`` approval covers the head at comment time, end to end through the fake GitHub:
a push between the comment and the gate is refused with a request for a fresh ``/bench``."""

# ruff: noqa: F811  (the end-to-end fixtures gh and fixture_repo are imported by name)

from __future__ import annotations

import pytest

from bot.forge.sticky import marker_sha
from bot.forge.types import PullInfo, TimelineEvent
from bot.jobs.approval import advisory_reason, advisory_status, head_at_comment
from tests.integration.test_app_e2e import (  # noqa: F401  (fixtures)
    PR,
    Run,
    bot_comments,
    comment_event,
    fixture_repo,
    gh,
    pr_event,
    results_for,
)

NEW_HEAD = "c" * 40


def _push(gh, head: str, **kw) -> None:
    gh.blobs[NEW_HEAD] = dict(gh.blobs[head])
    gh.push(PR, NEW_HEAD, **kw)


@pytest.mark.parametrize(
    "push",
    [{}, {"force": True}, {"commit_date": "2025-01-01T00:00:00Z"}],
    ids=["push", "force-push", "backdated-commit"],
)
def test_a_push_between_bench_and_the_gate_is_refused(
    gh, fixture_repo, tmp_path, monkeypatch, push
):
    _, _, head = fixture_repo
    payload = comment_event(gh, "maintainer", "/bench softmax --vendor nvidia quick")
    _push(gh, head, **push)  # lands after the comment, before the gate job starts
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert plan("plan") == 0
    assert plan.outputs()["run"] == "false"
    refusal = plan.gate()["refusal"]
    assert "does not cover the head" in refusal and "/bench again" in refusal
    assert plan("ack") == 0
    assert [r["content"] for r in gh.reactions[payload["comment"]["id"]]] == ["eyes", "confused"]
    [reply] = bot_comments(gh)
    assert "/bench again" in reply["body"] and marker_sha(reply["body"]) is None


def test_bench_sha_runs_only_the_named_commit(gh, fixture_repo, tmp_path, monkeypatch):
    _, _, head = fixture_repo
    named = comment_event(gh, "maintainer", f"/bench softmax --vendor nvidia quick sha={head}")
    _push(gh, head)
    plan = Run(gh, tmp_path / "a", monkeypatch, "issue_comment", named)
    assert plan("plan") == 0 and plan.outputs()["run"] == "false"
    assert f"named commit {head}" in plan.gate()["refusal"]

    fresh = comment_event(gh, "maintainer", f"/bench softmax --vendor nvidia sha={NEW_HEAD}")
    again = Run(gh, tmp_path / "b", monkeypatch, "issue_comment", fresh)
    assert again("plan") == 0
    assert again.outputs()["run"] == "true" and again.outputs()["head-sha"] == NEW_HEAD
    assert again.gate()["command"]["sha"] == NEW_HEAD
    ack = Run(gh, tmp_path / "b", monkeypatch, "issue_comment", fresh, head_sha=NEW_HEAD)
    assert ack("ack") == 0
    reply = bot_comments(gh)[-1]["body"]
    assert NEW_HEAD[:12] in reply and f"sha={NEW_HEAD}" in reply


def test_a_short_sha_is_refused_and_asks_for_the_full_one(gh, fixture_repo, tmp_path, monkeypatch):
    # a commit made to share the approved commit's first hex digits (2**28 tries for seven)
    _, _, head = fixture_repo
    lookalike = head[:12] + "c" * 28
    named = comment_event(gh, "maintainer", f"/bench softmax --vendor nvidia sha={head[:12]}")
    gh.blobs[lookalike] = dict(gh.blobs[head])
    gh.push(PR, lookalike)
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", named)
    assert plan("plan") == 0 and plan.outputs()["run"] == "false"
    refusal = plan.gate()["refusal"]
    assert "paste the full commit sha" in refusal and "40 hex digits" in refusal


def test_a_named_sha_pushed_after_the_comment_is_refused(gh, fixture_repo, tmp_path, monkeypatch):
    # naming a commit does not skip the timeline: one pushed after the comment was not seen
    _, _, head = fixture_repo
    named = comment_event(gh, "maintainer", f"/bench softmax --vendor nvidia sha={NEW_HEAD}")
    _push(gh, head)
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", named)
    assert plan("plan") == 0 and plan.outputs()["run"] == "false"
    refusal = plan.gate()["refusal"]
    assert "head moved after the /bench comment" in refusal and "/bench again" in refusal


def test_no_push_after_bench_runs_the_head_it_saw(gh, fixture_repo, tmp_path, monkeypatch):
    _, _, head = fixture_repo
    payload = comment_event(gh, "maintainer", "/bench softmax --vendor nvidia quick")
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert plan("plan") == 0
    assert plan.outputs()["run"] == "true" and plan.outputs()["head-sha"] == head


def test_the_head_at_comment_time_comes_from_the_timeline():
    a, b = "a" * 40, "b" * 40

    def committed(sha: str, at: str) -> TimelineEvent:
        return TimelineEvent(event="committed", sha=sha, at=at)

    said = TimelineEvent(event="commented", comment_id=7, at="2026-01-01T00:00:10Z")
    assert head_at_comment([committed(a, "2026-01-01T00:00:01Z"), said], 7, a) == a
    later = [committed(a, "2026-01-01T00:00:01Z"), said, committed(b, "2026-01-01T00:00:20Z")]
    assert head_at_comment(later, 7, b) == a
    # dated after the comment but listed before it: it still counts as a change after it
    dated_later = [committed(a, "2026-01-01T00:00:01Z"), committed(b, "2026-01-01T00:01:00Z")]
    assert head_at_comment([*dated_later, said], 7, b) == a
    forced = [
        committed(a, "2026-01-01T00:00:01Z"),
        TimelineEvent(event="head_ref_force_pushed", at="2026-01-01T00:00:05Z"),
        said,
        committed(b, "2026-01-01T00:00:20Z"),
    ]
    assert head_at_comment(forced, 7, b) is None  # which commit the force push left: unknown
    assert head_at_comment([committed(a, "2026-01-01T00:00:01Z")], 7, a) is None  # not found


def test_a_stranger_spamming_bench_gets_one_reply_then_reactions(gh, tmp_path, monkeypatch):
    comments = [comment_event(gh, "stranger", "/bench softmax") for _ in range(3)]
    for i, payload in enumerate(comments):
        run = Run(gh, tmp_path / str(i), monkeypatch, "issue_comment", payload)
        assert run("plan") == 0 and run("ack") == 0
    [reply] = bot_comments(gh)
    assert (
        reply["body"].startswith("@stranger `/bench` was not run")
        and "needs write" in reply["body"]
    )
    for payload in comments:
        reactions = [r["content"] for r in gh.reactions[payload["comment"]["id"]]]
        assert reactions == ["eyes", "confused"]


def test_a_maintainers_refused_bench_is_answered_every_time(gh, tmp_path, monkeypatch):
    for i in range(2):
        payload = comment_event(gh, "maintainer", "/bench nope")
        run = Run(gh, tmp_path / str(i), monkeypatch, "issue_comment", payload)
        assert run("plan") == 0 and run("ack") == 0
    assert len(bot_comments(gh)) == 2  # a typo deserves its answer each time


def test_the_merge_gate_is_advisory_for_an_author_without_write_permission(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    gh.permissions["alice"] = "read"  # the pull request's author
    report = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    results_for(report.results, base, head, "nvidia", 1.0)
    assert report("plan") == 0 and report("report") == 0
    [status] = gh.statuses[head]
    assert status["description"].startswith("Advisory (@alice has read permission): ")
    assert status["state"] != "success"


class _Permissions:
    def __init__(self, role: str) -> None:
        self.role = role

    def permission(self, login: str) -> str:
        return self.role


def test_an_advisory_verdict_never_turns_the_gate_green():
    pull = PullInfo(number=1, state="open", author="mallory", base_ref="main", base_sha="a" * 40,
                    base_repo="o/r", head_ref="x", head_sha="b" * 40, head_repo="m/r")  # fmt: skip
    ok = ("success", "Approve: every condition met")
    reader = advisory_reason(_Permissions("read"), pull)
    state, text = advisory_status(*ok, reader)
    assert state == "pending" and text.startswith("Advisory (@mallory has read permission)")
    assert advisory_status("failure", "x", reader)[0] == "failure"
    assert advisory_reason(_Permissions("write"), pull) is None
    assert advisory_reason(_Permissions("maintain"), pull) is None
    assert advisory_status(*ok, None) == ok


@pytest.mark.parametrize(("who", "role"), [("maintainer", "write"), ("helper", "triage")])
def test_only_a_bench_with_write_permission_cancels_the_stale_run(
    gh, fixture_repo, tmp_path, monkeypatch, who, role
):
    _, _, head = fixture_repo
    gh.permissions[who] = role
    gh.add_workflow_run(555, event="issue_comment", head_branch="main")  # this run
    gh.add_workflow_run(601, pull=PR)  # the pull request's review, running
    gh.add_workflow_run(602, status="queued", pull=PR)
    gh.add_workflow_run(603, pull=PR + 1)  # another pull request's
    gh.add_workflow_run(604, workflow_id=8, pull=PR)  # another workflow's
    payload = comment_event(gh, who, "/bench softmax --vendor nvidia quick")
    ack = Run(gh, tmp_path, monkeypatch, "issue_comment", payload, head_sha=head)
    assert ack("plan") == 0 and ack("ack") == 0  # the ack reads the gate's decision
    state = {i: gh.workflow_runs[i]["conclusion"] for i in (555, 601, 602, 603, 604)}
    stale = "cancelled" if role == "write" else None
    assert state == {555: None, 601: stale, 602: stale, 603: None, 604: None}


def test_a_fork_s_stale_run_is_found_by_its_branch(gh, fixture_repo, tmp_path, monkeypatch):
    # GitHub lists no pull request on a fork's run: its head repository and branch name it
    _, _, head = fixture_repo
    pull = gh.pulls[PR]["head"]
    gh.add_workflow_run(555, event="issue_comment", head_branch="main")
    gh.add_workflow_run(611, head_branch=pull["ref"], head_repo=pull["repo"]["full_name"])
    gh.add_workflow_run(612, head_branch=pull["ref"], head_repo="someone/else")
    payload = comment_event(gh, "maintainer", "/bench softmax --vendor nvidia quick")
    ack = Run(gh, tmp_path, monkeypatch, "issue_comment", payload, head_sha=head)
    assert ack("plan") == 0 and ack("ack") == 0  # the ack reads the gate's decision
    assert gh.workflow_runs[611]["conclusion"] == "cancelled"
    assert gh.workflow_runs[612]["conclusion"] is None
