"""Accepting a known regression, and the check run, end to end: the ``kernel-review review``
CLI against the fake GitHub over HTTP (real PyGithub), on the fixture rewrite's real git
repository. ``/bench accept`` by a maintainer and by a writer, a later push that is slower
still, a policy ``[[accepted]]`` entry that expired, the check run with its annotations, and the
commit status where check runs are refused."""

# ruff: noqa: F811  (the end-to-end fixtures gh and fixture_repo are imported by name)

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from bot import gitutil
from bot.contracts.accept import Acceptance, AcceptRecord, ReviewState
from bot.contracts.evidence import Evidence, ShapeLine, SweepEvidence
from bot.forge.hidden import hidden, read_hidden
from bot.forge.sticky import marker_sha
from bot.jobs.accepting import record_comment
from tests.fake_github import BLOBS, BOT, FakeGitHub, Token
from tests.integration.test_app_e2e import (  # noqa: F401  (fixtures)
    PR,
    Run,
    bot_comments,
    comment_event,
    fixture_repo,
    gh,
    load_commit,
    pr_event,
    results_for,
    write_results,
)

POLICY = ".github/kernel-review.toml"
REASON = "one Triton kernel instead of a CUDA and a HIP one"
BOSS = "@\u200bboss"  # a login in the review is not a mention: nobody is pinged by each push


def _policy(gh: FakeGitHub, base: str, extra: str = "") -> None:
    """The base branch's policy with check runs as the merge gate, and ``extra`` appended."""
    text = gh.blobs[base][POLICY].replace('merge_gate = "status"', 'merge_gate = "check"')
    assert 'merge_gate = "check"' in text
    gh.put_file(base, POLICY, text + extra)


RUN_IDS = itertools.count(601)  # each push's workflow run


def _report(gh, tmp: Path, monkeypatch, base: str, head: str, ratio: float, **inputs) -> Run:
    """The measure jobs' results for ``head`` at ``ratio``, then the report of a push; the run
    is kept on GitHub with its artifact, as the workflow's last step uploads it."""
    event = pr_event("synchronize", base, head)
    run = Run(gh, tmp, monkeypatch, "pull_request", event, run_id=next(RUN_IDS), **inputs)
    for vendor in ("nvidia", "amd"):
        results_for(run.results, base, head, vendor, ratio)
    assert run("plan") == 0 and run("report") == 0
    run.keep(head)
    return run


def _push(gh: FakeGitHub, repo: Path, base: str, parent: str, message: str) -> str:
    """A new head commit (same tree) pushed to the pull request."""
    sha = gitutil.git(repo, "commit-tree", f"{parent}^{{tree}}", "-p", parent, "-m", message)
    sha = sha.strip()
    load_commit(gh, repo, sha)
    gh.push(PR, sha, diff=gitutil.diff_text(repo, base, sha))
    return sha


def _sticky(gh: FakeGitHub) -> dict:
    [sticky] = [c for c in bot_comments(gh) if marker_sha(c["body"])]
    return sticky


def _check(gh: FakeGitHub, sha: str) -> dict:
    [run] = gh.checks_on(sha)
    return run


def test_bench_accept_by_a_maintainer_holds_across_pushes_until_slower_still(
    gh, fixture_repo, tmp_path, monkeypatch
):
    repo, base, head = fixture_repo
    _policy(gh, base)
    gh.permissions["boss"] = "maintain"
    first = _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    assert first.outputs()["verdict"] == "request_changes"
    assert _check(gh, head)["conclusion"] == "failure"

    payload = comment_event(gh, "boss", f"/bench accept softmax 4096x4096 -- {REASON}")
    plan = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert plan("plan") == 0
    assert plan.outputs()["run"] == "false"  # recorded, not measured
    record = plan.gate()["accept"]
    got = sorted((a["vendor"], a["shapes"], a["max_ratio"]) for a in record["acceptances"])
    assert [(v, s) for v, s, _ in got] == [("amd", [[4096, 4096]]), ("nvidia", [[4096, 4096]])]
    assert all(r == pytest.approx(1.09) for _, _, r in got)  # the upper end of 1.08's interval
    assert plan("ack") == 0
    assert [r["content"] for r in gh.reactions[payload["comment"]["id"]]] == ["eyes", "+1"]
    [recorded] = [c for c in bot_comments(gh) if "kernel-review:accept v1" in c["body"]]
    assert "@boss accepts" in recorded["body"] and "up to 9.0% slower" in recorded["body"]
    before = _sticky(gh)["body"]
    assert plan("report") == 0  # the accept event measures nothing: the review stays as it was
    assert _sticky(gh)["body"] == before

    # the next push measures the same slowdown: accepted, and said so
    second = _push(gh, repo, base, head, "address review")
    again = _report(gh, tmp_path / "second", monkeypatch, base, second, 1.08)
    assert again.outputs()["verdict"] != "request_changes"
    body = _sticky(gh)["body"]
    assert "### Accepted regressions" in body
    assert f"accepted by {BOSS}: {REASON}" in body
    run = _check(gh, second)
    assert run["conclusion"] == "action_required"  # approved with conditions: not green yet
    notices = [a for a in run["output"]["annotations"] if a["annotation_level"] == "notice"]
    assert len(notices) == 2 and all("accepted by @boss" in a["message"] for a in notices)

    # a later push is slower still: flagged again, and the review says against what
    third = _push(gh, repo, base, second, "slower still")
    worse = _report(gh, tmp_path / "third", monkeypatch, base, third, 1.20)
    assert worse.outputs()["verdict"] == "request_changes"
    body = _sticky(gh)["body"]
    assert f"20.0% slower, more than the 9.0% slower accepted by {BOSS}" in body
    assert "flagged again" in body
    assert _check(gh, third)["conclusion"] == "failure"


def _noisy_report(gh, tmp: Path, monkeypatch, base: str, head: str, ratio: float, high: float):
    """The report of a push whose sweep saw ``ratio`` with a wide interval, up to ``high``."""
    event = pr_event("synchronize", base, head)
    run = Run(gh, tmp, monkeypatch, "pull_request", event, run_id=next(RUN_IDS))
    for vendor in ("nvidia", "amd"):
        line = ShapeLine(
            kernel="softmax",
            shape=(4096, 4096),
            dtype="float16",
            verdict="SLOWER",
            ratio=ratio,
            ci_low=ratio - 0.01,
            ci_high=high,
            base_us=100.0,
            head_us=100.0 * ratio,
            weight=10,
        )
        sweep = SweepEvidence(vendor=vendor, gpu="NVIDIA H200", shapes=(line,))
        write_results(run.results, base, head, vendor, Evidence(sweeps=(sweep,)))
    assert run("plan") == 0 and run("report") == 0
    run.keep(head)
    return run


def test_a_noisy_accepted_run_does_not_license_a_later_larger_slowdown(
    gh, fixture_repo, tmp_path, monkeypatch
):
    # the accepted run saw 8% slower with an interval reaching 150% slower: the bound recorded
    # is the measured 8% and at most softmax's 5% tolerance beyond it, never the interval's end
    repo, base, head = fixture_repo
    _policy(gh, base)
    gh.permissions["boss"] = "maintain"
    noisy = _noisy_report(gh, tmp_path / "first", monkeypatch, base, head, 1.08, 2.5)
    payload = comment_event(gh, "boss", f"/bench accept softmax 4096x4096 -- {REASON}")
    accept = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert accept("plan") == 0 and accept("ack") == 0
    bounds = [a["max_ratio"] for a in accept.gate()["accept"]["acceptances"]]
    assert bounds == [pytest.approx(1.08 * 1.05)] * 2
    [recorded] = [c for c in bot_comments(gh) if "kernel-review:accept v1" in c["body"]]
    assert "up to 13.4% slower (measured 8.0% slower)" in recorded["body"]
    assert "at most the kernel's tolerance beyond" in recorded["body"]

    # the same slowdown again: accepted, and the review says the bound a later push must keep
    second = _push(gh, repo, base, head, "address review")
    again = _report(gh, tmp_path / "second", monkeypatch, base, second, 1.08)
    assert again.outputs()["verdict"] != "request_changes"
    body = _sticky(gh)["body"]
    said = "(up to 13.4% slower; 8.0% slower when accepted, measured by run"
    assert f"accepted by {BOSS}: {REASON} {said} {noisy.run_id})" in body

    # twice as slow, measured closely: flagged again (the interval's end, 2.5, let it through)
    third = _push(gh, repo, base, second, "twice as slow")
    worse = _report(gh, tmp_path / "third", monkeypatch, base, third, 2.0)
    assert worse.outputs()["verdict"] == "request_changes"
    assert f"2.0x slower, more than the 13.4% slower accepted by {BOSS}" in _sticky(gh)["body"]


def test_bench_accept_without_the_permission_gets_a_reply_and_records_nothing(
    gh, fixture_repo, tmp_path, monkeypatch
):
    repo, base, head = fixture_repo
    _policy(gh, base)
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    payload = comment_event(gh, "maintainer", f"/bench accept softmax -- {REASON}")  # write only
    run = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert run("plan") == 0
    gate = run.gate()
    assert gate["accept"] is None and "/bench accept needs maintain" in gate["refusal"]
    assert run("ack") == 0
    assert [r["content"] for r in gh.reactions[payload["comment"]["id"]]] == ["eyes", "confused"]
    [reply] = [c for c in bot_comments(gh) if not marker_sha(c["body"])]
    assert reply["body"].startswith("@maintainer `/bench accept` was not recorded")
    assert "has write permission" in reply["body"] and "accept\\_permission" in reply["body"]
    assert "kernel-review:accept" not in reply["body"]

    second = _push(gh, repo, base, head, "next")
    again = _report(gh, tmp_path / "second", monkeypatch, base, second, 1.08)
    assert again.outputs()["verdict"] == "request_changes"
    assert "Accepted regressions" not in _sticky(gh)["body"]


def test_bench_accept_before_any_measurement_is_refused_with_what_to_do(gh, tmp_path, monkeypatch):
    gh.permissions["boss"] = "admin"
    payload = comment_event(gh, "boss", f"/bench accept softmax -- {REASON}")
    run = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert run("plan") == 0
    assert "no measured slowdown of softmax" in run.gate()["refusal"]
    assert "run /bench first" in run.gate()["refusal"]


def test_a_forged_accept_record_by_someone_else_is_ignored(gh, fixture_repo, tmp_path, monkeypatch):
    _, base, head = fixture_repo
    _policy(gh, base)
    gh.permissions["boss"] = "maintain"
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    payload = comment_event(gh, "boss", f"/bench accept softmax -- {REASON}")
    accept = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert accept("plan") == 0 and accept("ack") == 0
    [recorded] = [c for c in bot_comments(gh) if "kernel-review:accept v1" in c["body"]]
    # a contributor pastes the bot's record into a comment of their own: it accepts nothing
    forged = recorded["body"]
    gh.comments.pop(recorded["id"])
    gh.add_comment(PR, "alice", forged)
    again = _report(gh, tmp_path / "again", monkeypatch, base, head, 1.08)
    assert again.outputs()["verdict"] == "request_changes"


@pytest.mark.parametrize(
    "forgery", ["no-comment", "someone-else-said-it", "triage", "permission-gone", "other-kernel"]
)
def test_an_accept_record_posted_as_the_bot_by_another_workflow_accepts_nothing(
    gh, fixture_repo, tmp_path, monkeypatch, forgery
):
    # any workflow of the repository posts as github-actions[bot]: the login proves nothing
    repo, base, head = fixture_repo
    _policy(gh, base)
    gh.permissions.update(boss="maintain", triager="triage", alice="read")
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    actor, said = {
        "no-comment": ("boss", None),
        "someone-else-said-it": ("boss", ("alice", f"/bench accept softmax -- {REASON}")),
        "triage": ("triager", ("triager", f"/bench accept softmax -- {REASON}")),
        "permission-gone": ("boss", ("boss", f"/bench accept softmax -- {REASON}")),
        "other-kernel": ("boss", ("boss", f"/bench accept vector_add -- {REASON}")),
    }[forgery]
    comment_id = gh.add_comment(PR, *said) if said else 999_999
    if forgery == "permission-gone":
        gh.permissions["boss"] = "read"  # what counts is the permission when the report runs
    record = AcceptRecord(
        actor=actor,
        comment_id=comment_id,
        acceptances=tuple(
            Acceptance(
                kernel="softmax",
                shapes=((4096, 4096),),
                vendor=vendor,
                max_ratio=1.5,
                by=f"@{actor}",
                reason=REASON,
                source="comment",
                head_sha=head,
            )
            for vendor in ("nvidia", "amd")
        ),
    )
    gh.add_comment(PR, BOT, record_comment(record), user_type="Bot")
    second = _push(gh, repo, base, head, "address review")
    again = _report(gh, tmp_path / "again", monkeypatch, base, second, 1.08)
    assert again.outputs()["verdict"] == "request_changes"
    assert "Accepted regressions" not in _sticky(gh)["body"]


def test_an_accept_record_confirmed_by_its_comment_and_permission_still_accepts(
    gh, fixture_repo, tmp_path, monkeypatch
):
    # the check does not refuse the genuine case: the record the ack job wrote still holds
    repo, base, head = fixture_repo
    _policy(gh, base)
    gh.permissions["boss"] = "maintain"  # the policy's accept_permission (default)
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    payload = comment_event(gh, "boss", f"/bench accept softmax -- {REASON}")
    accept = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert accept("plan") == 0 and accept("ack") == 0
    second = _push(gh, repo, base, head, "address review")
    asked = len(gh.requests)
    again = _report(gh, tmp_path / "again", monkeypatch, base, second, 1.08)
    assert again.outputs()["verdict"] != "request_changes"
    assert f"accepted by {BOSS}: {REASON}" in _sticky(gh)["body"]
    checked = [p for _, p in gh.requests[asked:] if BLOBS in p]
    assert len(checked) == 1  # the accepted run's artifact, read once for both vendors


def _accepted_by_boss(gh, tmp: Path, monkeypatch) -> tuple[Run, dict]:
    """``/bench accept softmax`` by a maintainer, recorded by the ack job; the record's
    comment."""
    gh.permissions["boss"] = "maintain"
    payload = comment_event(gh, "boss", f"/bench accept softmax -- {REASON}")
    accept = Run(gh, tmp, monkeypatch, "issue_comment", payload, run_id=next(RUN_IDS))
    assert accept("plan") == 0 and accept("ack") == 0
    [recorded] = [c for c in bot_comments(gh) if "kernel-review:accept v1" in c["body"]]
    return accept, recorded


def _forge_review_state(gh: FakeGitHub, ratio: float, **update) -> None:
    """Another workflow rewrites the review comment's hidden state (what ``/bench accept``
    reads) to say every slower case was measured at ``ratio`` (and ``update``)."""
    sticky = _sticky(gh)
    state = read_hidden(sticky["body"], "state", ReviewState)
    assert state is not None and state.slower
    slower = tuple(m.model_copy(update={"ratio": ratio, "ci_high": ratio}) for m in state.slower)
    forged = hidden("state", state.model_copy(update={"slower": slower, **update}))
    body = re.sub(r"^<!-- kernel-review:state v1 .* -->$", forged, sticky["body"], flags=re.M)
    gh.comments[sticky["id"]]["body"] = body


@pytest.mark.parametrize("forged", ["record", "review-state"])
def test_an_accept_record_that_claims_more_than_was_measured_accepts_only_what_was(
    gh, fixture_repo, tmp_path, monkeypatch, forged
):
    # another workflow (it posts as github-actions[bot] too) makes the record of a real
    # /bench accept claim up to 3x: it rewrites the record, or the review's hidden state the
    # record is made from. The comment and the permission check out; the run measured 8%
    repo, base, head = fixture_repo
    _policy(gh, base)
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    if forged == "review-state":
        _forge_review_state(gh, 3.0)
    accept, recorded = _accepted_by_boss(gh, tmp_path / "accept", monkeypatch)
    if forged == "record":
        genuine = AcceptRecord.model_validate(accept.gate()["accept"])
        claims = tuple(a.model_copy(update={"max_ratio": 3.0}) for a in genuine.acceptances)
        record = genuine.model_copy(update={"acceptances": claims})
        gh.comments[recorded["id"]]["body"] = record_comment(record)

    second = _push(gh, repo, base, head, "twice as slow")
    worse = _report(gh, tmp_path / "second", monkeypatch, base, second, 2.0)
    assert worse.outputs()["verdict"] == "request_changes"
    body = _sticky(gh)["body"]
    assert f"2.0x slower, more than the 9.0% slower accepted by {BOSS}" in body


def _forged_run(gh: FakeGitHub, genuine: Run, run_id: int, pr: int, **run) -> None:
    """A run with an artifact like the genuine one's, but its results say 2.9x slower (up to
    3x) and its gate decision is for pull request ``pr``."""
    gate = genuine.gate() | {"pr_number": pr}
    base, head = gate["base_sha"], gate["head_sha"]
    gh.add_workflow_run(run_id, status="completed", head_sha=head, **run)
    results = genuine.dir / f"forged-{run_id}"
    for vendor in ("nvidia", "amd"):
        results_for(results, base, head, vendor, 2.9)
    files = {f"measured/{p.name}": p.read_bytes() for p in results.glob("*.json")}
    gh.add_artifact(run_id, "kernel-review-results", {"gate.json": json.dumps(gate), **files})


UNVERIFIABLE = {  # a run the record is made to name -> why it is not used
    991: ({"event": "workflow_dispatch"}, "was started by workflow_dispatch"),
    992: ({"path": ".github/workflows/other.yml", "event": "issue_comment"}, "ran .github/workflows/other.yml"),
    993: ({"event": "pull_request", "head_repo": "mallory/kernels"}, "by pull_request from mallory/kernels"),
    994: ({"event": "issue_comment", "pr": 43}, "reviewed octo/kernels #43"),
}  # fmt: skip


def test_accept_records_whose_run_cannot_be_verified_are_not_used_and_the_review_says_so(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    # each record names a real /bench accept of a maintainer, but the run whose results it
    # claims is not this workflow's run for this pull request (one dispatched on a branch,
    # another workflow's, a fork's, another pull request's), or names none, or its results
    # are gone
    repo, base, head = fixture_repo
    _policy(gh, base)
    first = _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    accept, recorded = _accepted_by_boss(gh, tmp_path / "accept", monkeypatch)
    genuine = AcceptRecord.model_validate(accept.gate()["accept"])
    for artifact in gh.artifacts.values():  # the genuine record's run: its artifact expired
        artifact["expired"] = artifact["workflow_run"]["id"] == first.run_id
    claims = tuple(a.model_copy(update={"max_ratio": 3.0}) for a in genuine.acceptances)
    said = {recorded["id"]: f"artifact kernel-review-results of run {first.run_id} has expired"}
    for run_id, (run, why) in UNVERIFIABLE.items():
        _forged_run(gh, first, run_id, run.pop("pr", PR), **run)
        forged = genuine.model_copy(update={"run_id": run_id, "acceptances": claims})
        said[gh.add_comment(PR, BOT, record_comment(forged), user_type="Bot")] = why
    older = genuine.model_copy(update={"run_id": None})  # as an older kernel-review wrote it
    said[gh.add_comment(PR, BOT, record_comment(older), user_type="Bot")] = "names no run"
    capsys.readouterr()

    second = _push(gh, repo, base, head, "twice as slow")
    worse = _report(gh, tmp_path / "second", monkeypatch, base, second, 2.0)
    assert worse.outputs()["verdict"] == "request_changes"
    log = capsys.readouterr().out
    for comment, why in said.items():
        assert f"the accept record in comment {comment} is not used: " in log and why in log
    body = _sticky(gh)["body"]
    assert "Accepted regressions" not in body
    top = body.split("### ")[0].replace("\\", "")  # the reasons are escaped markdown
    assert "**Accepted slowdowns not used as recorded.**" in top
    assert f"accept record in comment {recorded['id']} is not used" in top
    assert "and 3 more (the job log has each)" in top
    assert "comment `/bench`, then `/bench accept KERNEL -- REASON`" in top


def test_bench_accept_on_a_review_that_names_no_run_is_refused_with_what_to_do(
    gh, fixture_repo, tmp_path, monkeypatch
):
    # a review comment an older kernel-review wrote (or one whose run was taken out): what it
    # shows could not be checked against a run later, so nothing is recorded
    _, base, head = fixture_repo
    _policy(gh, base)
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    _forge_review_state(gh, 1.08, run_id=None)
    gh.permissions["boss"] = "maintain"
    payload = comment_event(gh, "boss", f"/bench accept softmax -- {REASON}")
    accept = Run(gh, tmp_path / "accept", monkeypatch, "issue_comment", payload)
    assert accept("plan") == 0 and accept("ack") == 0
    refusal = accept.gate()["refusal"]
    assert "does not say which run measured it" in refusal and "run /bench first" in refusal
    assert not [c for c in bot_comments(gh) if "kernel-review:accept v1" in c["body"]]


def test_an_honest_review_with_nothing_slower_asks_nothing_about_accept_records(
    gh, fixture_repo, tmp_path, monkeypatch
):
    # the check costs a review only where a record names one of its slower shapes
    repo, base, head = fixture_repo
    _policy(gh, base)
    _report(gh, tmp_path / "first", monkeypatch, base, head, 1.08)
    _accepted_by_boss(gh, tmp_path / "accept", monkeypatch)
    asked = len(gh.requests)
    second = _push(gh, repo, base, head, "as fast as before")
    _report(gh, tmp_path / "second", monkeypatch, base, second, 1.0)
    since = [p for _, p in gh.requests[asked:]]
    assert not [p for p in since if "/artifacts" in p or "/collaborators/boss" in p or BLOBS in p]


@pytest.mark.parametrize(
    ("expires", "verdict", "said"),
    [
        ("2020-03-01", "request_changes", "expired on 2020-03-01: flagged again"),
        ("2999-03-01", "approve_with_conditions", "accepted in the policy by @\u200bgpu-team"),
    ],
    ids=["expired", "current"],
)
def test_policy_accepted_entry_accepts_until_its_expiry_date(
    gh, fixture_repo, tmp_path, monkeypatch, expires, verdict, said
):
    _, base, head = fixture_repo
    entry = (
        '\n[[accepted]]\nkernel = "softmax"\nmax_percent = 10\nowner = "@gpu-team"\n'
        f'reason = "{REASON}"\nexpires = {expires}\n'
    )
    _policy(gh, base, entry)
    run = _report(gh, tmp_path, monkeypatch, base, head, 1.08)
    assert run.outputs()["verdict"] == verdict
    body = _sticky(gh)["body"]
    assert "### Accepted regressions" in body and said in body


def _many_cases(results: Path, base: str, head: str, n: int, **line) -> None:
    """``n`` softmax cases of one kind (``line``: their verdict, ratio, ...) from the nvidia
    runner."""
    shapes = tuple(
        ShapeLine(kernel="softmax", shape=(16 * (i + 1), 781), dtype="float16", **line)
        for i in range(n)
    )
    ev = Evidence(sweeps=(SweepEvidence(vendor="nvidia", gpu="NVIDIA H200", shapes=shapes),))
    write_results(results, base, head, "nvidia", ev)


def _many_slower(results: Path, base: str, head: str, n: int) -> None:
    _many_cases(results, base, head, n, verdict="SLOWER", ratio=1.2, ci_low=1.15, ci_high=1.25,
                base_us=10.0, head_us=12.0)  # fmt: skip


def test_check_run_carries_the_verdict_summary_and_annotations_in_batches_of_50(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    repo, base, head = fixture_repo
    _policy(gh, base)
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    _many_slower(run.results, base, head, 60)
    assert run("plan") == 0 and run("report") == 0
    check = _check(gh, head)
    assert check["name"] == "kernel-review" and check["status"] == "completed"
    assert check["conclusion"] == "failure"
    assert check["details_url"] == "https://ghe.example/octo/kernels/actions/runs/555"
    assert check["output"]["title"].startswith("Request changes")
    assert "Kernel review: Request changes" in check["output"]["summary"]
    notes = check["output"]["annotations"]
    assert len(notes) == 60 and check["requests"] == 2  # 50 with the run, 10 in one update
    assert gh.count("POST", r"/check-runs$") == 1 and gh.count("PATCH", r"/check-runs/\d+$") == 1
    source = gitutil.show_file(repo, head, notes[0]["path"]).splitlines()
    for a in notes:
        assert a["path"] == "toyops/softmax.py" and a["annotation_level"] == "warning"
        assert "1.200x the base time" in a["message"]
        # on the changed kernel's own lines: they start at its decorator or its def
        first = source[a["start_line"] - 1].lstrip()
        assert first.startswith(("@triton", "def ")) and a["end_line"] > a["start_line"]
    assert gh.statuses.get(head) is None  # the check run is the merge gate
    assert "check run" in capsys.readouterr().out


def test_a_token_without_checks_write_falls_back_to_the_commit_status(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    _, base, head = fixture_repo
    _policy(gh, base)
    gh.tokens["no-checks-token"] = Token(BOT, can_check=False)
    run = _report(gh, tmp_path, monkeypatch, base, head, 1.08, token="no-checks-token")
    assert run.outputs()["verdict"] == "request_changes"
    assert gh.checks_on(head) == []
    [status] = gh.statuses[head]
    assert status["state"] == "failure" and status["context"] == "kernel-review"
    log = capsys.readouterr().out
    assert "the check run was refused (403" in log and "checks: write" in log
    assert "setting the kernel-review commit status instead" in log


def _multibyte_summary(results: Path, base: str, head: str) -> None:
    """Failed cases enough for a summary over GitHub's 65,535 bytes, each with a message in
    multi-byte text (3 bytes a character)."""
    _many_cases(
        results, base, head, 400, verdict="ERROR", detail="計算結果が参照と一致しません " * 8
    )


def test_a_summary_in_multibyte_text_is_cut_by_bytes_and_the_check_run_posts(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    _policy(gh, base)
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    _multibyte_summary(run.results, base, head)
    assert run("plan") == 0 and run("report") == 0
    full = (run.results / "review.md").read_text(encoding="utf-8")
    assert len(full.encode("utf-8")) > 65_535  # too long for GitHub, so cut
    summary = _check(gh, head)["output"]["summary"]
    assert len(summary.encode("utf-8")) <= 65_535
    assert "This review was truncated to fit" in summary
    assert gh.statuses.get(head) is None  # the check run is the merge gate


def test_a_check_run_github_refuses_is_said_in_the_comment_and_the_status_is_set(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    _, base, head = fixture_repo
    _policy(gh, base)
    refusal = {
        "message": "Validation Failed",
        "errors": [{"resource": "CheckRun", "code": "custom", "field": "summary",
                    "message": "summary exceeds a maximum bytesize of 65535"}],
    }  # fmt: skip
    gh.fail("POST", r"/check-runs$", 422, body=refusal)
    run = _report(gh, tmp_path, monkeypatch, base, head, 1.08)
    assert run.outputs()["verdict"] == "request_changes"
    assert gh.checks_on(head) == []
    [status] = gh.statuses[head]
    assert status["state"] == "failure" and status["context"] == "kernel-review"
    body = _sticky(gh)["body"]
    assert "The kernel-review check run was refused by GitHub" in body
    assert "422 Validation Failed: summary exceeds a maximum bytesize of 65535" in body
    assert "Kernel review: Request changes" in body  # the review itself is still there
    assert "the check run was refused (422" in capsys.readouterr().out
