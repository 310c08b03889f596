from __future__ import annotations

import pytest

from bot.forge.sticky import (
    MAX_COMMENT_CHARS,
    find_sticky,
    fit_body,
    marker,
    marker_sha,
    upsert_sticky,
)
from bot.forge.types import CommentInfo
from bot.github.api import GitHubClient, GitHubRequestError
from tests.fake_github import BOT, FakeGitHub

SHA1, SHA2 = "1" * 40, "2" * 40


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        server.add_pull(7, base_sha="a" * 40, head_sha=SHA1)
        yield server


def client_for(fake: FakeGitHub, token: str = "bot-token") -> GitHubClient:
    return GitHubClient(
        token, fake.repo, api_url=fake.api_url, sleep=lambda s: None, spacing_s=None
    )


def post(fake, body="## Review\nall good\n", sha=SHA1, **kw):
    return upsert_sticky(client_for(fake), 7, body, head_sha=sha, bot_login=BOT, **kw)


def bot_comments(fake):
    return [c for c in fake.comments_on(7) if c["user"]["login"] == BOT]


def test_marker_round_trip_and_validation():
    assert marker_sha(marker(SHA1) + "\nbody") == SHA1
    assert marker_sha("text\n" + marker(SHA1)) is None  # only at the very start
    with pytest.raises(ValueError):
        marker("not-a-sha --> <b>")


def test_creates_once_then_updates_in_place(fake):
    first = post(fake, "first")
    assert first.action == "created"
    second = post(fake, "second", sha=SHA2)
    assert second.action == "updated" and second.comment_id == first.comment_id
    third = post(fake, "second", sha=SHA2)
    assert third.action == "unchanged"
    [only] = bot_comments(fake)
    assert only["body"] == marker(SHA2) + "\nsecond"


def test_forged_marker_in_a_strangers_comment_is_ignored(fake):
    forged = fake.add_comment(7, "mallory", marker(SHA1) + "\nApproved by the bot!")
    result = post(fake, "real review")
    assert result.action == "created" and result.comment_id != forged
    assert fake.comments[forged]["body"].endswith("Approved by the bot!")
    assert fake.count("PATCH", r"/issues/comments/") == 0


def test_bot_comment_without_marker_is_not_the_sticky(fake):
    fake.add_comment(7, BOT, "@alice has read permission; /bench needs write", user_type="Bot")
    assert post(fake).action == "created"
    assert len(bot_comments(fake)) == 2


def test_sticky_found_beyond_the_first_pages(fake):
    for i in range(120):
        fake.add_comment(7, "someone", f"chatter {i}")
    existing = fake.add_comment(7, BOT, marker(SHA1) + "\nold", user_type="Bot")
    for i in range(130):
        fake.add_comment(7, "someone", f"more {i}")
    result = post(fake, "new")
    assert result.action == "updated" and result.comment_id == existing
    assert len(fake.comments_on(7)) == 251


def test_502_after_a_successful_post_leaves_one_comment(fake):
    fake.fail("POST", r"/issues/7/comments", 502, perform=True)
    result = post(fake, "review")
    assert result.action in ("updated", "unchanged")
    assert "uncertain POST" in result.detail
    assert len(bot_comments(fake)) == 1
    assert fake.count("POST", r"/issues/7/comments") == 1


def test_502_before_anything_was_written_posts_again(fake):
    fake.fail("POST", r"/issues/7/comments", 502, perform=False)
    result = post(fake, "review")
    assert result.action == "created"
    assert len(bot_comments(fake)) == 1
    assert fake.count("POST", r"/issues/7/comments") == 2


def test_persistent_failure_is_bounded(fake):
    fake.fail("POST", r"/issues/7/comments", 503, times=10)
    with pytest.raises(Exception, match="after 3 attempts"):
        post(fake)
    assert fake.count("POST", r"/issues/7/comments") == 3
    assert bot_comments(fake) == []


def test_older_results_never_overwrite_the_current_head(fake):
    post(fake, "results for the new head", sha=SHA2)
    stale = post(fake, "results for the old head", sha=SHA1, current_head_sha=SHA2)
    assert stale.action == "skipped-stale"
    [only] = bot_comments(fake)
    assert "new head" in only["body"]
    # without a newer comment in place, older results are still shown (marked by their SHA)
    fake.comments.clear()
    assert post(fake, "old", sha=SHA1, current_head_sha=SHA2).action == "created"


def test_long_body_is_truncated_with_pointer_and_closed_blocks(fake):
    rows = "\n".join(f"| shape {i} | 1.00 |" for i in range(6000))
    body = f"## Review\n<details>\n<summary>Per shape</summary>\n\n```text\n{rows}\n"
    result = post(
        fake, body, summary_url="https://gh.example/run/1", artifact_name="kernel-review-results"
    )
    assert result.truncated
    [only] = bot_comments(fake)
    text = only["body"]
    assert len(text) <= MAX_COMMENT_CHARS and marker_sha(text) == SHA1
    assert "[job summary](https://gh.example/run/1)" in text and "`kernel-review-results`" in text
    assert text.count("```") % 2 == 0 and text.count("<details>") == text.count("</details>")


def test_server_counting_bytes_gets_a_second_cut(fake):
    fake.count_bytes = True
    body = "é" * 40_000  # 40,000 characters, 80,000 bytes
    result = post(fake, body)
    assert result.action == "created" and result.truncated
    [only] = bot_comments(fake)
    assert len(only["body"].encode()) <= MAX_COMMENT_CHARS
    assert fake.count("POST", r"/issues/7/comments") == 2


def test_422_on_edit_also_recuts(fake):
    post(fake, "short")
    fake.count_bytes = True
    result = post(fake, "ü" * 40_000)
    assert result.action == "updated" and result.truncated
    assert len(bot_comments(fake)[0]["body"].encode()) <= MAX_COMMENT_CHARS


def test_read_only_token_cannot_post(fake):
    with pytest.raises(GitHubRequestError) as info:
        upsert_sticky(client_for(fake, "read-token"), 7, "x", head_sha=SHA1, bot_login=BOT)
    assert info.value.status == 403


def test_fit_body_pure():
    text, cut = fit_body("short")
    assert (text, cut) == ("short", False)
    long = "line\n" * 20_000
    text, cut = fit_body(long, limit=1000, artifact_name="a")
    assert cut and len(text) <= 1000 and "characters left out" in text
    text, cut = fit_body("é" * 3000, limit=1000, unit="bytes")
    assert cut and len(text.encode()) <= 1000


def test_find_sticky_takes_the_oldest_bot_comment():
    comments = [
        CommentInfo(id=1, author="mallory", body=marker(SHA1)),
        CommentInfo(id=2, author=BOT, body="no marker"),
        CommentInfo(id=3, author=BOT, body=marker(SHA1) + "\nA"),
        CommentInfo(id=4, author=BOT, body=marker(SHA2) + "\nB"),
    ]
    found = find_sticky(comments, BOT)
    assert found is not None and found.id == 3
    assert find_sticky(comments, "someone-else") is None


def test_fit_body_drops_a_chart_it_would_cut_and_closes_details():
    rows = "| row |\n" * 100
    chart = "```mermaid\nxychart-beta\n" + "    bar [1.0]\n" * 500 + "```\n"
    body = f"## Review\n<details>\n<summary>Per shape</summary>\n\n{rows}{chart}</details>\n"
    text, cut = fit_body(
        body, limit=3000, summary_url="https://gh.example/run/1", artifact_name="a"
    )
    assert cut and len(text) <= 3000
    assert "```" not in text and "xychart" not in text and text.count("| row |") == 100
    assert text.count("<details>") == text.count("</details>") == 1
    assert text.endswith(
        "the [job summary](https://gh.example/run/1) and the results artifact `a`.\n"
    )
