"""A measure job no runner takes: the report job's wait gives it up after the queue timeout,
the review says which vendor had no runner, and the run is cancelled once the review is posted.
Against the fake GitHub over HTTP (real PyGithub), on the fixture rewrite's real repository."""

from __future__ import annotations

import datetime as dt
import json

from bot.github.api import GitHubClient
from bot.jobs.queue import wait_for_vendor_jobs
from tests.fake_github import FakeGitHub
from tests.integration import test_app_e2e as e2e
from tests.integration.test_app_e2e import Run, bot_comments, pr_event, results_for

fixture_repo = e2e.fixture_repo  # the fixture rewrite in a real repository, as there
gh = e2e.gh  # the fake GitHub serving it

RUN = 555  # the run id Run gives every job
QUEUED_AT = "2026-01-01T00:00:00Z"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp()


def _client(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient("bot-token", fake.repo, api_url=fake.api_url, spacing_s=None)


def test_a_job_no_runner_takes_is_given_up_said_in_the_review_and_cancelled(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    gh.add_workflow_run(RUN, pull=42)
    gh.add_workflow_job(RUN, "measure (nvidia 1/1)", status="completed", labels=("self-hosted", "nvidia"))  # fmt: skip
    amd = gh.add_workflow_job(RUN, "measure (amd 1/1)", created_at=QUEUED_AT, labels=("self-hosted", "amd"))  # fmt: skip
    queue_file = tmp_path / "queue.json"
    monkeypatch.setenv("KERNEL_REVIEW_QUEUE_FILE", str(queue_file))
    monkeypatch.setenv("KERNEL_REVIEW_VENDORS", '["nvidia", "amd"]')
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    assert run("wait") == 0  # queued since QUEUED_AT: long past the 30 minutes
    report = json.loads(queue_file.read_text())
    assert [j["vendor"] for j in report["stuck"]] == ["amd"]
    assert "no runner labelled self-hosted, amd" in run.summary.read_text()

    results_for(run.results, base, head, "nvidia", 1.01)
    assert run("plan") == 0 and run("report") == 0
    [comment] = bot_comments(gh)
    assert "no runner labelled self-hosted, amd picked up the amd measure job within 30 minutes" in comment["body"]  # fmt: skip
    assert gh.workflow_runs[RUN]["conclusion"] == "cancelled"
    assert gh.workflow_jobs[amd]["conclusion"] == "cancelled"
    assert gh.count("POST", rf"/actions/runs/{RUN}/cancel$") == 1


def test_without_a_stuck_job_the_report_cancels_nothing(gh, fixture_repo, tmp_path, monkeypatch):
    _, base, head = fixture_repo
    gh.add_workflow_run(RUN, pull=42)
    for vendor in ("nvidia", "amd"):
        gh.add_workflow_job(RUN, f"measure ({vendor} 1/1)", status="completed", labels=(vendor,))
    monkeypatch.setenv("KERNEL_REVIEW_QUEUE_FILE", str(tmp_path / "queue.json"))
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    assert run("wait") == 0
    for vendor in ("nvidia", "amd"):
        results_for(run.results, base, head, vendor, 1.01)
    assert run("plan") == 0 and run("report") == 0
    assert "no runner labelled" not in bot_comments(gh)[0]["body"]
    assert gh.count("POST", r"/cancel$") == 0


def test_the_wait_follows_a_queued_job_until_it_starts_and_ends():
    with FakeGitHub() as fake:
        fake.add_workflow_run(RUN)
        job = fake.add_workflow_job(RUN, "measure (amd 1/2)", created_at=QUEUED_AT, labels=("amd",))  # fmt: skip
        now = [T0 + 60.0]
        steps = iter(["in_progress", "in_progress", "completed"])

        def sleep(seconds: float) -> None:  # a runner takes the job, then finishes it
            now[0] += seconds
            fake.workflow_jobs[job]["status"] = next(steps)

        report = wait_for_vendor_jobs(
            _client(fake), RUN, timeout_s=1800, poll_s=30, clock=lambda: now[0], sleep=sleep
        )
        assert report.stuck == ()
        assert now[0] == T0 + 60.0 + 3 * 30  # three polls, then done
        assert fake.count("GET", rf"/actions/runs/{RUN}/jobs") == 4


def test_the_wait_gives_up_a_queued_job_at_the_timeout_and_waits_for_a_missing_vendor():
    with FakeGitHub() as fake:
        fake.add_workflow_run(RUN)
        now = [T0]
        polls: list[float] = []

        def sleep(seconds: float) -> None:
            polls.append(now[0])
            now[0] += seconds
            if len(polls) == 2:  # the matrix's job appears only after the gate ends
                fake.add_workflow_job(RUN, "measure (amd 1/1)", created_at=QUEUED_AT, labels=("amd",))  # fmt: skip

        report = wait_for_vendor_jobs(
            _client(fake), RUN, timeout_s=600, poll_s=60, expected=["amd"],
            clock=lambda: now[0], sleep=sleep,
        )  # fmt: skip
        [stuck] = report.stuck
        assert stuck.vendor == "amd" and stuck.waited_s >= 600
        assert now[0] == T0 + 600  # queued at T0: given up at the first poll past ten minutes
        assert "within 10 minutes" in report.reason("amd")


def test_the_scheduled_plan_measures_the_vendors_the_policy_lists(tmp_path, monkeypatch):
    sha = "c" * 40
    with FakeGitHub() as fake:
        fake.put_file(
            sha,
            ".github/kernel-review.toml",
            'vendors = ["nvidia"]\n[deployment]\nkind = "long-lived"\n'
            '[[kernels]]\nname = "softmax"\nbench = "ops.bench:softmax"\npaths = ["ops/*.py"]\n'
            'dtypes = ["float16"]\nshapes = [[1024, 1024]]\n',
        )
        run = Run(fake, tmp_path, monkeypatch, "schedule", {"schedule": "17 3 * * *"})
        monkeypatch.setenv("GITHUB_SHA", sha)
        assert run("plan") == 0
        assert json.loads(run.outputs()["vendors"]) == ["nvidia"]
        assert not any(m != "GET" for m, _ in fake.requests)


def test_a_queue_timeout_that_is_not_minutes_is_refused_with_what_to_write(
    tmp_path, monkeypatch, capsys
):
    with FakeGitHub() as fake:
        run = Run(fake, tmp_path, monkeypatch, "pull_request", {})
        monkeypatch.setenv("KERNEL_REVIEW_QUEUE_TIMEOUT_MINUTES", "half an hour")
        assert run("wait") == 2
        err = capsys.readouterr().err
        assert "is not a number of minutes" in err and "e.g. 30" in err


def test_a_shard_queued_behind_its_vendors_other_shard_waits_from_when_that_one_ended():
    """One runner, two shards: shard 2 sits in the queue while shard 1 runs; once shard 1 is
    done, shard 2 counts its wait from then, so it is not given up for the time shard 1 took."""
    with FakeGitHub() as fake:
        fake.add_workflow_run(RUN)
        first = fake.add_workflow_job(RUN, "measure (amd 1/2)", status="in_progress", created_at=QUEUED_AT, labels=("amd",))  # fmt: skip
        second = fake.add_workflow_job(RUN, "measure (amd 2/2)", created_at=QUEUED_AT, labels=("amd",))  # fmt: skip
        now = [T0 + 40 * 60.0]  # shard 1 has run for 40 minutes, past the 30-minute timeout

        def sleep(seconds: float) -> None:
            now[0] += seconds
            jobs = fake.workflow_jobs
            if jobs[first]["status"] == "in_progress":  # shard 1 ends; shard 2 still queued
                stamp = dt.datetime.fromtimestamp(now[0], dt.timezone.utc).isoformat()
                jobs[first].update(status="completed", conclusion="success", completed_at=stamp)
            elif now[0] > T0 + 50 * 60:  # the runner takes shard 2, which then ends
                jobs[second].update(status="completed", conclusion="success")

        report = wait_for_vendor_jobs(
            _client(fake), RUN, timeout_s=1800, poll_s=60, clock=lambda: now[0], sleep=sleep
        )
        assert report.stuck == ()
