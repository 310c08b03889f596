"""The scheduled run: the default branch under its pinned toolchain and the newest release,
one issue opened then updated when a kernel would regress, the history kept and shown in a
pull request's review. PyGithub against the fake GitHub server; real git, real workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import app
from bot.contracts.evidence import Evidence, ShapeLine, SideToolchain, SweepEvidence
from bot.contracts.history import ScheduledResults
from bot.contracts.review import ChangeLine
from bot.errors import ToolchainError
from bot.gitutil import commit_all, git
from bot.jobs.scheduled import ISSUE_MARKER, history_record, read_history
from tests.integration import test_app_e2e as e2e
from tests.integration.test_app_e2e import Run, bot_comments, pr_event, results_for
from tests.integration.test_toolchain_envs import CPU_SWEEP

fixture_repo = e2e.fixture_repo  # the fixture rewrite in a real repository, as there
gh = e2e.gh  # the fake GitHub serving it

BUMP = ChangeLine(
    kernel="triton", kind="toolchain", old_version=">=3.6,<3.7", new_version="==3.7.0"
)


def _scheduled(results_dir: Path, sha: str, ratio: float, date: str) -> None:
    shapes = (
        ShapeLine(kernel="softmax", shape=(4096, 4096), dtype="float16", ratio=ratio,
                  verdict="SLOWER" if ratio > 1.05 else "SAME", base_us=100.0, head_us=100 * ratio),
        ShapeLine(kernel="softmax", shape=(1823, 781), dtype="float16", verdict="SAME",
                  ratio=1.0, base_us=12.0, head_us=12.0),
    )  # fmt: skip
    ev = Evidence(
        sweeps=(SweepEvidence(vendor="nvidia", gpu="NVIDIA H200", shapes=shapes),),
        toolchains=(
            SideToolchain(side="base", versions={"triton": "3.6.0"}, environment="the runner's own"),
            SideToolchain(side="head", versions={"triton": "3.7.0"}, environment="uv environment 1"),
        ),
    )  # fmt: skip
    results_dir = results_dir / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    out = ScheduledResults(sha=sha, vendor="nvidia", date=date, changes=(BUMP,), evidence=ev)
    (results_dir / "scheduled-nvidia.json").write_text(out.model_dump_json())


def test_one_issue_opened_then_updated_and_the_history_shown_in_a_review(
    gh, fixture_repo, tmp_path, monkeypatch
):
    _repo, base, head = fixture_repo
    history = tmp_path / "history" / "history.jsonl"
    event = {"schedule": "0 3 * * *"}

    _scheduled(tmp_path / "night1", base, 1.40, "2026-02-01T03:00:00+00:00")
    run = Run(gh, tmp_path / "night1", monkeypatch, "schedule", event, history_path=str(history))
    assert run("scheduled-report") == 0
    [issue] = gh.issues.values()
    assert issue["title"] == "kernel-review: triton 3.7.0 would regress softmax"
    assert issue["body"].startswith(ISSUE_MARKER)
    assert "### What the toolchain change moved" in issue["body"]
    assert "softmax: 40.0% slower at 4096x4096 float16 on NVIDIA H200" in issue["body"]

    _scheduled(tmp_path / "night2", base, 1.30, "2026-02-02T03:00:00+00:00")
    again = Run(gh, tmp_path / "night2", monkeypatch, "schedule", event, history_path=str(history))
    assert again("scheduled-report") == 0
    [updated] = gh.issues.values()  # the same issue, updated
    assert updated["number"] == issue["number"] and "30.0% slower" in updated["body"]

    _scheduled(tmp_path / "night3", base, 1.0, "2026-02-03T03:00:00+00:00")
    calm = Run(gh, tmp_path / "night3", monkeypatch, "schedule", event, history_path=str(history))
    assert calm("scheduled-report") == 0
    records = read_history(history.read_text())
    assert [r.regressed for r in records] == [("softmax",), ("softmax",), ()]
    assert records[0].kernels == {"softmax": 56.0} and records[0].pinned == {"triton": "3.6.0"}
    assert [(c.shape, c.us, c.candidate_us) for c in records[0].cases] == [
        ((4096, 4096), 100.0, 140.0),
        ((1823, 781), 12.0, 12.0),
    ]
    assert len(gh.issues) == 1
    # the job summary draws each case's trend, its runs linked to their commits
    summary = calm.summary.read_text()
    assert "## The default branch over time" in summary
    assert "### `softmax` 4096x4096 float16 on nvidia" in summary and "xychart-beta" in summary
    assert f"(https://ghe.example/octo/kernels/commit/{base})" in summary

    # the history branch holds the file; a pull request's review shows how softmax moved
    gh.put_file("kernel-review-history", "history.jsonl", history.read_text())
    results_for(tmp_path / "pr" / "results", base, head, "nvidia", 1.0)
    report = Run(gh, tmp_path / "pr", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert report("plan") == 0 and report("report") == 0
    [comment] = bot_comments(gh)
    assert "### On the default branch" in comment["body"]
    assert (
        "softmax: median µs over its served shapes on the default branch, 2026-02-01 to 2026-02-03: 56.0 → 56.0 → 56.0"
        in comment["body"]
    )


def test_scheduled_report_without_results_says_what_to_download(gh, tmp_path, monkeypatch, capsys):
    run = Run(gh, tmp_path / "empty", monkeypatch, "schedule", {})
    assert run("scheduled-report") == 2
    assert "no scheduled-<vendor>.json" in capsys.readouterr().err


SMALL_POLICY = """
vendors = ["nvidia"]
owners = ["@toyops/gpu-kernels"]
[deployment]
kind = "long-lived"
[toolchain]
upgrade = ["triton==3.6.0"]
[compiler]
nvidia_targets = ["sm_90"]
[[kernels]]
name = "vector_add"
bench = "toyops.bench:vector_add"
paths = ["toyops/vector_add.py"]
dtypes = ["float32"]
shapes = [[4096]]
"""


@pytest.mark.slow
def test_the_scheduled_measure_runs_the_pin_and_the_newest_release(tmp_path, monkeypatch):
    from checks.measure import measure_plan
    from checks.procs.sandbox import configure, detect
    from kernels_fixture.build_repo import build_fixture_repo
    from kernels_fixture.toolchain_bump import add_toolchain_bump

    bump = add_toolchain_bump(build_fixture_repo(tmp_path / "repo"))
    git(bump.path, "checkout", "-q", bump.base_sha)  # the default branch pins triton==3.5.1
    (bump.path / ".github" / "kernel-review.toml").write_text(SMALL_POLICY)
    commit_all(bump.path, "policy: try triton 3.6.0 nightly\n")

    def measure(plan, **job):  # a CPU cannot run the deployment's first call: sweep and compiler
        plan = plan.model_copy(update={"checks": ("sweep", "compiler")})
        return measure_plan(plan, sweep_options=CPU_SWEEP, env_cache_dir=tmp_path / "envs", **job)

    monkeypatch.chdir(bump.path)
    # confined where this machine can (checks/procs); else as on a disposable runner
    isolation = "sandbox" if detect().ready else "disposable"
    for key, value in {
        "INPUT_VENDOR": "nvidia",
        "INPUT_RESULTS_PATH": str(tmp_path / "out"),
        "INPUT_RUNNER_ISOLATION": isolation,
    }.items():
        monkeypatch.setenv(key, value)
    env = app.ActionEnv.from_environ(dict(__import__("os").environ))
    try:
        assert app.scheduled_mode(env, measure_fn=measure) == 0
    except ToolchainError as exc:
        pytest.skip(
            f"triton 3.5.1 cannot be installed here (package index unreachable?): {exc.message}"
        )
    finally:
        configure(None)  # the next test's processes start as a local command's do
    results = ScheduledResults.model_validate_json(
        (tmp_path / "out" / "scheduled-nvidia.json").read_text()
    )
    assert [(c.kernel, c.old_version, c.new_version) for c in results.changes] == [
        ("triton", "==3.5.1", "==3.6.0")
    ]
    sides = {t.side: t.versions["triton"] for t in results.evidence.toolchains}
    assert sides == {"base": "3.5.1", "head": "3.6.0"}
    (sweep,) = results.evidence.sweeps
    assert sweep.timing_kind == "cpu" and sweep.shapes[0].kernel == "vector_add"
    record = history_record(results)
    assert record.timing == "cpu" and record.pinned["triton"] == "3.5.1"
    assert record.candidate["triton"] == "3.6.0" and set(record.kernels) == {"vector_add"}


def test_the_scheduled_job_is_refused_on_a_runner_that_cannot_confine_the_code(
    tmp_path, monkeypatch
):
    # the default branch's code runs there too: on a runner that keeps state between jobs and
    # cannot confine it, the job says what is missing and measures nothing, as a measure job does
    from bot.gitutil import init_repo
    from checks.procs.cgroup import CGROUP_ENV
    from checks.procs.sandbox import DISPOSABLE_ENV, IsolationError

    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / ".github").mkdir()
    # nothing to upgrade: the job reaches the measurement without a package index
    policy = SMALL_POLICY.replace('upgrade = ["triton==3.6.0"]', "upgrade = []")
    (repo / ".github" / "kernel-review.toml").write_text(policy)
    commit_all(repo, "policy")
    monkeypatch.chdir(repo)
    monkeypatch.setenv(CGROUP_ENV, str(tmp_path / "not-a-cgroup"))  # no cgroup for the workers
    monkeypatch.delenv(DISPOSABLE_ENV, raising=False)
    out = tmp_path / "out"
    env = app.ActionEnv.from_environ({"INPUT_VENDOR": "nvidia", "INPUT_RESULTS_PATH": str(out)})
    assert env.runner_isolation == "sandbox"  # the default
    measured = []
    with pytest.raises(IsolationError) as refused:
        app.scheduled_mode(env, measure_fn=lambda plan, **job: measured.append(plan))
    assert measured == []
    assert "this runner cannot confine the measured code, so it is not run" in refused.value.message
    assert f"{CGROUP_ENV}={tmp_path / 'not-a-cgroup'}" in refused.value.message
    assert "runner-isolation: disposable" in refused.value.hint
    assert not out.exists() or not any(out.iterdir())


def test_the_gate_plans_every_kernel_for_a_pull_request_that_bumps_the_pin(tmp_path, monkeypatch):
    from bot.gitutil import diff_text
    from kernels_fixture.build_repo import build_fixture_repo
    from kernels_fixture.toolchain_bump import add_toolchain_bump
    from tests.fake_github import FakeGitHub

    bump = add_toolchain_bump(build_fixture_repo(tmp_path / "repo"))
    with FakeGitHub() as fake:
        e2e.load_commit(fake, bump.path, bump.base_sha)
        e2e.load_commit(fake, bump.path, bump.head_sha)
        fake.add_pull(e2e.PR, base_sha=bump.base_sha, head_sha=bump.head_sha, author="alice",
                      head_ref="triton-bump", diff=diff_text(bump.path, bump.base_sha, bump.head_sha))  # fmt: skip
        event = pr_event("opened", bump.base_sha, bump.head_sha)
        run = Run(fake, tmp_path / "plan", monkeypatch, "pull_request", event)
        assert run("plan") == 0
        plan = run.gate()["plan"]
    assert [k["name"] for k in plan["kernels"]] == ["vector_add", "softmax", "matmul"]
    assert [
        (c["kernel"], c["kind"], c["old_version"], c["new_version"]) for c in plan["changes"]
    ] == [("triton", "toolchain", "==3.5.1", "==3.6.0")]
    assert run.outputs()["run"] == "true"


STOP_POLICY = """
vendors = ["nvidia"]
[deployment]
kind = "long-lived"
[[kernels]]
name = "vector_add"
bench = "ops:vector_add"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[4096]]
[[kernels]]
name = "softmax"
bench = "ops:softmax"
paths = ["ops.py"]
dtypes = ["float16"]
shapes = [[1823, 781], [4096, 4096]]
"""


class _SweepStoppedBySigterm:
    """The sweep, stopped by SIGTERM (as bot.cli's handler of the runner's signal records it)
    after vector_add's shape and softmax's first: the cases it finished, the other STOPPED."""

    name, machine, keeps_on_stop = "sweep", "gpu", True

    def applies(self, ctx) -> bool:
        return True

    def run(self, ctx) -> Evidence:
        import signal

        from checks.procs import stopping

        stopping.stop(signal.SIGTERM)
        shapes = (
            ShapeLine(kernel="vector_add", shape=(4096,), dtype="float32", verdict="SAME",
                      ratio=1.0, base_us=10.0, head_us=10.0),
            ShapeLine(kernel="softmax", shape=(1823, 781), dtype="float16", verdict="SAME",
                      ratio=1.0, base_us=12.0, head_us=12.0),
            ShapeLine(kernel="softmax", shape=(4096, 4096), dtype="float16", verdict="STOPPED"),
        )  # fmt: skip
        return Evidence(
            sweeps=(SweepEvidence(vendor=ctx.vendor, gpu="NVIDIA H200", shapes=shapes),)
        )


class _FirstCall(_SweepStoppedBySigterm):
    """The first call, which the stop comes before: never run."""

    name, machine, keeps_on_stop = "first_call", "quiet", False


def test_a_stopped_scheduled_job_writes_what_it_measured_and_keeps_its_trend_whole(
    tmp_path, monkeypatch
):
    """The scheduled job shares the measure job's path: stopped, it writes
    scheduled-<vendor>.json with what it finished, the check the stop came before not run, and
    exits 7; the history's record of it keeps every case it timed, but no median for the kernel
    it did not finish (one over some of its shapes would read as a step in the trend)."""
    from bot.errors import EXIT_STOPPED
    from bot.gitutil import init_repo
    from checks import registry
    from checks.procs import stopping

    repo = init_repo(tmp_path / "repo")
    (repo / "ops.py").write_text("def vector_add(): ...\ndef softmax(): ...\n")
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(STOP_POLICY)
    commit_all(repo, "ops")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(registry, "CHECKS", (_SweepStoppedBySigterm(), _FirstCall()))
    out = tmp_path / "out"
    env = app.ActionEnv.from_environ(
        {"INPUT_VENDOR": "nvidia", "INPUT_RESULTS_PATH": str(out),
         "INPUT_RUNNER_ISOLATION": "disposable"}
    )  # fmt: skip
    try:
        assert app.scheduled_mode(env) == EXIT_STOPPED
    finally:
        stopping.clear()
    results = ScheduledResults.model_validate_json((out / "scheduled-nvidia.json").read_text())
    [not_run] = results.evidence.not_run
    assert (not_run.check, not_run.reason) == (
        "first_call",
        "the measure job was stopped by SIGTERM (a CI job's cancel or time limit, or `timeout`) "
        "before it started",
    )
    record = history_record(results)
    assert record.kernels == {"vector_add": 10.0}
    assert [(c.kernel, c.shape) for c in record.cases] == [
        ("vector_add", (4096,)), ("softmax", (1823, 781))
    ]  # fmt: skip
