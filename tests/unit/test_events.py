from __future__ import annotations

import json

import pytest

from bot.errors import GitHubError
from bot.github.events import Ignored, ReviewRequest, bench_line, parse_event
from tests.paths import DATA

EVENTS = DATA / "events"


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["opened", "synchronize", "reopened", "ready_for_review"])
def test_pull_request_actions_start_a_review(name):
    req = parse_event("pull_request", load(f"pull_request.{name}.json"))
    assert isinstance(req, ReviewRequest)
    assert req.pr_number == 42 and req.repo == "octo/kernels"
    assert req.base_sha == "3f786850e387550fdab836ed7e6dc881de23001b"
    assert req.head_sha and len(req.head_sha) == 40
    assert req.is_fork is False and req.command is None


def test_synchronize_carries_the_new_head():
    req = parse_event("pull_request", load("pull_request.synchronize.json"))
    assert req.head_sha == "2b66fd261ee5c6cfc8de7fa466bab600bcfe4f69"


def test_fork_pull_request_is_marked_as_fork():
    req = parse_event("pull_request", load("pull_request.opened_fork.json"))
    assert req.is_fork and req.head_repo == "mallory/kernels"
    assert req.head_label == "mallory:triton-rewrite"


@pytest.mark.parametrize(
    ("event", "name", "reason"),
    [
        ("pull_request", "pull_request.closed.json", "closed"),
        ("pull_request", "pull_request.opened_draft.json", "draft"),
        ("issue_comment", "issue_comment.edited.bench.json", "edited"),
        ("issue_comment", "issue_comment.created.plain_issue.json", "not on a pull request"),
        ("issue_comment", "issue_comment.created.by_bot.json", "bot"),
        ("issue_comment", "issue_comment.created.closed_pr.json", "closed"),
        ("issue_comment", "issue_comment.created.no_command.json", "no /bench"),
        ("issue_comment", "issue_comment.created.quoted.json", "no /bench"),
        ("workflow_run", "workflow_run.requested.json", "completed"),
        ("workflow_run", "workflow_run.completed.push.json", "push"),
    ],
)
def test_ignored_events_say_why(event, name, reason):
    out = parse_event(event, load(name))
    assert isinstance(out, Ignored)
    assert reason in out.reason


def test_bench_comment_on_pr():
    req = parse_event("issue_comment", load("issue_comment.created.bench.json"))
    assert isinstance(req, ReviewRequest)
    assert req.pr_number == 42 and req.actor == "maintainer"
    assert req.comment_id == 2400000001
    assert req.command == "/bench softmax --vendor nvidia --shape 4096x4096 quick"
    assert req.head_sha is None  # resolved and pinned through the API, not trusted from here


def test_hostile_comment_is_carried_as_data_only():
    req = parse_event("issue_comment", load("issue_comment.created.hostile.json"))
    assert isinstance(req, ReviewRequest)
    assert req.command is not None and req.command.startswith("/bench softmax $(")


def test_bot_login_from_settings_is_ignored_even_as_user():
    payload = load("issue_comment.created.bench.json")
    out = parse_event("issue_comment", payload, bot_logins=("maintainer",))
    assert isinstance(out, Ignored)


def test_workflow_run_from_fork_has_no_number_but_a_head_to_resolve():
    req = parse_event("workflow_run", load("workflow_run.completed.fork.json"))
    assert isinstance(req, ReviewRequest)
    assert req.pr_number is None and req.is_fork
    assert req.head_label == "mallory:triton-rewrite"
    assert req.head_sha == "89e6c98d92887913cadf06b2adb97f26cde4849b"
    assert req.workflow_run_id == 7000000001 and req.workflow_conclusion == "success"


def test_workflow_run_same_repo_takes_number_from_event():
    req = parse_event("workflow_run", load("workflow_run.completed.same_repo.json"))
    assert req.pr_number == 42 and not req.is_fork


def test_other_events_and_pull_request_target_are_ignored():
    assert isinstance(parse_event("push", {}), Ignored)
    out = parse_event("pull_request_target", load("pull_request.opened.json"))
    assert isinstance(out, Ignored) and "workflow_run" in out.reason


def test_malformed_payload_is_a_clear_error():
    with pytest.raises(GitHubError, match="pull_request"):
        parse_event("pull_request", {"action": "opened"})
    with pytest.raises(GitHubError):
        parse_event("pull_request", [])  # type: ignore[arg-type]


def test_bench_line_skips_code_blocks_and_quotes():
    assert bench_line("```\n/bench a\n```\n> /bench b\n  /bench c  ") == "/bench c"
    assert bench_line("/benchmark a") is None
    assert bench_line("/bench") == "/bench"
    assert len(bench_line("/bench " + "a" * 5000) or "") == 1000


@pytest.mark.parametrize(
    "body",
    [
        "<!-- /bench softmax -->",
        "<!--\n/bench softmax\n-->",
        "<!-- unterminated\n/bench softmax",
        "~~~\n/bench softmax\n~~~",
        "````\n```\n/bench softmax\n````",
        "    /bench softmax",
        "\t/bench softmax",
        "> /bench softmax",
        ">/bench softmax",
    ],
    ids=[
        "html",
        "html-lines",
        "html-open",
        "tilde",
        "long-fence",
        "indented",
        "tab",
        "quote",
        "quote-tight",
    ],
)
def test_bench_in_a_comment_a_code_block_or_a_quote_is_not_a_command(body):
    assert bench_line(body) is None
    assert bench_line(body + "\n\nthen\n/bench vector_add") == (
        None if body.endswith(("unterminated\n/bench softmax",)) else "/bench vector_add"
    )


def test_bench_after_a_closed_block_still_counts():
    assert bench_line("```\ncode\n```\n   /bench softmax") == "/bench softmax"
    assert bench_line("<!-- note --> \n/bench softmax") == "/bench softmax"


@pytest.mark.parametrize(
    "separator",
    ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"],
    ids=["LS", "PS", "NEL", "VT", "FF", "FS", "GS", "RS"],
)
def test_bench_behind_a_unicode_line_separator_is_not_a_command(separator):
    # GitHub breaks lines only at \n, \r\n and \r: anything else keeps /bench on the line before
    for body in (
        f"> quoted{separator}/bench softmax",
        f"```{separator}/bench softmax{separator}```",
        f"please do not run{separator}/bench softmax",
        f"    code{separator}/bench softmax",
    ):
        assert bench_line(body) is None, body
    assert bench_line(f"> quoted{separator}/bench softmax\r\n/bench vector_add") == (
        "/bench vector_add"
    )
    assert bench_line(f"> quoted{separator}/bench softmax\r/bench vector_add") == (
        "/bench vector_add"
    )
