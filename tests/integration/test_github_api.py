from __future__ import annotations

import time

import pytest

from bot.errors import GitHubError
from bot.forge.types import FileInfo, permission_allows
from bot.github.api import (
    GitHubClient,
    GitHubRequestError,
    RetryPolicy,
    diff_from_files,
    retry_delay,
)
from tests.fake_github import BOT, FakeGitHub

BASE, HEAD = "a" * 40, "b" * 40


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        server.add_pull(7, base_sha=BASE, head_sha=HEAD, diff="diff --git a/x.py b/x.py\n")
        yield server


def make_client(
    fake: FakeGitHub, token: str = "bot-token", **kw
) -> tuple[GitHubClient, list[float]]:
    slept: list[float] = []
    client = GitHubClient(
        token, fake.repo, api_url=fake.api_url, sleep=slept.append, spacing_s=None, **kw
    )
    return client, slept


def test_reads_pull_request_as_plain_data_through_enterprise_prefix(fake):
    client, _ = make_client(fake)
    pr = client.get_pull(7)
    assert (pr.number, pr.base_sha, pr.head_sha, pr.state) == (7, BASE, HEAD, "open")
    assert pr.is_fork is False and pr.author == "contributor"
    assert all(path.startswith("/repos/octo/kernels") for _, path in fake.requests)


def test_diff_media_type(fake):
    client, _ = make_client(fake)
    assert client.get_pull_diff(7) == "diff --git a/x.py b/x.py\n"


def test_diff_too_large_falls_back_to_files(fake):
    fake.files[7] = [
        {
            "filename": "k.py",
            "status": "modified",
            "additions": 1,
            "deletions": 1,
            "changes": 2,
            "patch": "@@ -1 +1 @@\n-a\n+b",
        },
        {"filename": "w.bin", "status": "added", "additions": 0, "deletions": 0, "changes": 0},
    ]
    fake.fail(
        "GET",
        r"/pulls/7$",
        406,
        body={"message": "Sorry, the diff exceeded the maximum number of files (300)."},
    )
    client, _ = make_client(fake)
    text = client.get_pull_diff(7)
    assert text.startswith("diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -1 +1 @@")
    assert "w.bin" not in text


def test_all_250_comments_are_read_across_pages(fake):
    for i in range(250):
        fake.add_comment(7, "someone", f"comment {i}")
    client, _ = make_client(fake)
    comments = client.list_comments(7)
    assert len(comments) == 250 and comments[-1].body == "comment 249"
    assert fake.count("GET", r"/issues/7/comments") == 3  # 100 per page


def test_permission_reads_role_name(fake):
    fake.permissions.update({"alice": "maintain", "bob": "triage"})
    client, _ = make_client(fake)
    assert client.permission("alice") == "maintain"
    assert client.permission("bob") == "triage"
    assert client.permission("carol") == "read"
    assert permission_allows("maintain", "write") and not permission_allows("triage", "write")


def test_read_file_at_ref_and_missing_file(fake):
    fake.put_file(BASE, ".github/kernel-review.toml", "tolerance = 0.03\n")
    client, _ = make_client(fake)
    assert client.read_file(".github/kernel-review.toml", BASE) == "tolerance = 0.03\n"
    assert client.read_file(".github/kernel-review.toml", HEAD) is None


def test_reactions_and_statuses(fake):
    cid = fake.add_comment(7, "alice", "/bench")
    client, _ = make_client(fake)
    client.add_reaction(cid, "eyes")
    client.add_reaction(cid, "eyes")
    client.add_reaction(cid, "rocket")
    assert [r["content"] for r in fake.reactions[cid]] == ["eyes", "rocket"]
    client.set_status(HEAD, "failure", "x" * 300, context="kernel-review", target_url="https://e/x")
    status = fake.statuses[HEAD][0]
    assert status["state"] == "failure" and len(status["description"]) == 140


def test_403_with_retry_after_waits_as_told_then_succeeds(fake):
    fake.fail(
        "GET",
        r"/pulls/7$",
        403,
        times=2,
        headers={"Retry-After": "7"},
        body={
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
        },
    )
    client, slept = make_client(fake)
    assert client.get_pull(7).number == 7
    assert slept == [7.0, 7.0]


def test_429_without_header_backs_off_and_is_bounded(fake):
    fake.fail("GET", r"/pulls/7$", 429, times=10, body={"message": "Too Many Requests"})
    client, slept = make_client(fake, retry=RetryPolicy(max_attempts=3, secondary_wait_s=5.0))
    with pytest.raises(GitHubRequestError) as info:
        client.get_pull(7)
    assert slept == [5.0, 10.0]
    assert info.value.status == 429
    assert fake.count("GET", r"/pulls/7$") == 3


def test_retry_after_longer_than_the_cap_fails_at_once_with_the_wait(fake):
    fake.fail(
        "GET", r"/pulls/7$", 403, headers={"Retry-After": "900"}, body={"message": "slow down"}
    )
    client, slept = make_client(fake)
    with pytest.raises(GitHubError, match="wait 900 s"):
        client.get_pull(7)
    assert slept == []


def test_primary_rate_limit_uses_the_reset_time(fake):
    now = time.time()
    fake.fail(
        "GET",
        r"/pulls/7$",
        403,
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(now) + 20)},
        body={"message": "API rate limit exceeded for installation."},
    )
    client, slept = make_client(fake, clock=lambda: float(int(now)))
    client.get_pull(7)
    assert slept == [21.0]


def test_5xx_on_reads_is_retried_with_backoff(fake):
    fake.fail("GET", r"/issues/7/comments", 502, times=2)
    client, slept = make_client(fake)
    assert client.list_comments(7) == []
    assert slept == [1.0, 2.0]


def test_5xx_on_comment_post_is_never_repeated_here(fake):
    fake.fail("POST", r"/issues/7/comments", 502, perform=True)
    client, slept = make_client(fake)
    with pytest.raises(GitHubRequestError) as info:
        client.create_comment(7, "hello")
    assert info.value.outcome_unknown and slept == []
    assert len(fake.comments_on(7)) == 1  # it did happen: the caller must look before posting


def test_plain_403_is_a_permission_error_with_a_hint(fake):
    client, _ = make_client(fake, token="read-token")
    with pytest.raises(GitHubRequestError) as info:
        client.create_comment(7, "hello")
    assert info.value.status == 403 and "pull-requests: write" in (info.value.hint or "")
    assert not info.value.outcome_unknown


def test_bad_token_and_body_too_long(fake):
    fake.tokens.pop("read-token")
    client, _ = make_client(fake, token="read-token")
    with pytest.raises(GitHubRequestError, match="401"):
        client.get_pull(7)
    good, _ = make_client(fake)
    with pytest.raises(GitHubRequestError) as info:
        good.create_comment(7, "x" * 70_000)
    assert info.value.body_too_long


def test_whoami_app_token_is_none_and_user_token_is_login(fake):
    client, _ = make_client(fake)
    assert client.whoami() is None
    fake.tokens["pat"] = type(fake.tokens["bot-token"])("alice", is_app=False, user_type="User")
    pat, _ = make_client(fake, token="pat")
    assert pat.whoami() == "alice"


def test_find_pull_by_head_label(fake):
    fake.add_pull(9, base_sha=BASE, head_sha="c" * 40, head_repo="mallory/kernels", head_ref="fix")
    client, _ = make_client(fake)
    assert client.find_pull("mallory:fix", "c" * 40).number == 9
    assert client.find_pull("mallory:other", "c" * 40) is None


def test_connection_refused_is_bounded():
    client = GitHubClient(
        "t",
        "octo/kernels",
        api_url="http://127.0.0.1:9",
        sleep=lambda s: None,
        spacing_s=None,
        retry=RetryPolicy(max_attempts=2),
        timeout_s=2,
    )
    with pytest.raises(GitHubRequestError, match="could not reach GitHub"):
        client.get_pull(1)


def test_client_refuses_bad_configuration():
    with pytest.raises(GitHubError, match="no GitHub token"):
        GitHubClient("", "octo/kernels")
    with pytest.raises(GitHubError, match="owner/name"):
        GitHubClient("t", "kernels")


def test_retry_delay_rules():
    p = RetryPolicy()
    assert retry_delay(403, {}, "Resource not accessible by integration", 1, p, now=0) is None
    assert retry_delay(404, {}, "", 1, p, now=0) is None
    assert retry_delay(503, {}, "", 3, p, now=0) == 4.0
    assert retry_delay(503, {}, "", 1, p, now=0, idempotent=False) is None
    assert retry_delay(429, {"retry-after": "3"}, "", 1, p, now=0, idempotent=False) == 3.0
    assert retry_delay(None, {}, "ConnectionError", 2, p, now=0) == 2.0


def test_diff_from_files_marks_added_removed_renamed():
    files = [
        FileInfo(filename="n.py", status="added", patch="@@ -0,0 +1 @@\n+x"),
        FileInfo(filename="o.py", status="removed", patch="@@ -1 +0,0 @@\n-x"),
        FileInfo(
            filename="b.py", status="renamed", previous_filename="a.py", patch="@@ -1 +1 @@\n-x\n+y"
        ),
    ]
    text = diff_from_files(files)
    assert "new file mode 100644\n--- /dev/null\n+++ b/n.py" in text
    assert "deleted file mode 100644\n--- a/o.py\n+++ /dev/null" in text
    assert "rename from a.py\nrename to b.py\n--- a/a.py\n+++ b/b.py" in text


def test_bot_constant_matches_fake_default():
    assert BOT == "github-actions[bot]"


def test_annotation_texts_and_an_issue_title_are_cut_to_githubs_units(fake):
    """An annotation's message is capped in bytes ("64 KB"), its title and an issue's title in
    characters; the fake refuses what GitHub refuses, so what it stored was taken."""
    from bot.forge.types import CheckAnnotation
    from bot.github.api import MAX_ANNOTATION_MESSAGE_BYTES

    client, _ = make_client(fake)
    message = "é" * 40_000  # 40,000 characters, 80,000 bytes
    note = CheckAnnotation(
        path="k.py", start_line=1, end_line=2, level="warning", title="t" * 300, message=message
    )
    run_id = client.publish_check_run(
        HEAD, name="kernel-review", conclusion="failure", title="x", summary="s",
        annotations=[note],
    )  # fmt: skip
    [stored] = fake.check_runs[run_id]["output"]["annotations"]
    assert len(stored["message"].encode("utf-8")) <= MAX_ANNOTATION_MESSAGE_BYTES
    assert stored["message"].startswith("é" * 1000) and stored["message"].endswith("…")
    assert len(stored["title"]) == 255
    issue = client.create_issue("kernel-review: triton 3.7.0 would regress " + "k, " * 200, "b")
    assert len(fake.issues[issue.number]["title"]) == 256
    client.edit_issue(issue.number, "y" * 300, "b")
    assert len(fake.issues[issue.number]["title"]) == 256


def test_the_fake_refuses_a_summary_over_65535_bytes_as_github_does(fake):
    client, _ = make_client(fake)
    with pytest.raises(GitHubRequestError) as info:
        client.publish_check_run(
            HEAD,
            name="kernel-review",
            conclusion="failure",
            title="x",
            summary="€" * 30_000,
            annotations=[],
        )  # 30,000 characters, 90,000 bytes
    assert info.value.status == 422
    assert "summary exceeds a maximum bytesize of 65535" in info.value.api_message


def test_an_issue_is_read_and_a_pull_request_is_an_issue_with_a_pull_request_key(fake):
    made = make_client(fake)[0].create_issue("a title", "a body")
    client, _ = make_client(fake)
    repo = client._repo
    assert repo.get_issue(made.number).pull_request is None
    assert "pull_request" not in repo.get_issue(made.number).raw_data
    assert repo.get_issue(7).pull_request is not None
    # find_issue skips pull requests, which GitHub lists among the issues
    fake.pulls[7]["body"] = "<!-- marker -->"
    assert client.find_issue("<!-- marker -->") is None


def test_an_artifact_is_fetched_from_blob_storage_without_the_token_and_capped(fake):
    # GitHub answers 302 to a signed URL on another host (which PyGithub will not follow), and
    # 410 once the artifact expired; the fake's blob storage refuses a request with a token
    import io
    import zipfile

    fake.add_workflow_run(31, event="issue_comment", status="completed", head_sha=HEAD)
    kept = fake.add_artifact(31, "kernel-review-results", {"gate.json": b"{}" * 5000})
    gone = fake.add_artifact(31, "kernel-review-results", {"gate.json": b"{}"}, expired=True)
    client, _ = make_client(fake)
    run = client.get_run(31)
    assert (run.path, run.event, run.repository, run.head_sha) == (
        ".github/workflows/kernel-review.yml", "issue_comment", "octo/kernels", HEAD,
    )  # fmt: skip
    listed = client.run_artifacts(31, "kernel-review-results")
    assert [(a.id, a.expired) for a in listed] == [(kept, False), (gone, True)]
    data = client.download_artifact(kept, max_bytes=1 << 20)
    assert zipfile.ZipFile(io.BytesIO(data)).read("gate.json") == b"{}" * 5000
    with pytest.raises(GitHubRequestError, match="larger than 100 bytes"):
        client.download_artifact(kept, max_bytes=100)
    with pytest.raises(GitHubRequestError) as expired:
        client.download_artifact(gone, max_bytes=1 << 20)
    assert expired.value.status == 410
    with pytest.raises(GitHubRequestError) as missing:
        client.get_run(32)
    assert missing.value.status == 404
