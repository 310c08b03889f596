"""Ctrl-C stops a command at once: ``compiler-report`` waiting on a helper that compiles for
minutes (here: an entry point that sleeps) exits within 2 s of SIGINT, and the helper, in a
session of its own, is killed with it. ``bench`` stopped (SIGINT, or the SIGTERM of a cancelled
job) while its workers are inside a call of the bench entry does the same, and keeps what it
measured: it writes the results of the cases it finished, the others with the status
``stopped``, exits 7, and removes its worktrees; the review of those results shows the cases it
did not get to as not run, and the journal a run killed without a chance to write (SIGKILL)
leaves is reviewed in their place. ``job measure`` stopped by SIGINT (a workflow's cancel or
``timeout-minutes``) writes its results file with what it finished, the rest not run, and
exits 7 well before the runner's SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot import gitutil
from bot.cli import main
from bot.contracts.results import ResultsFile
from bot.errors import EXIT_STOPPED
from bot.outputs import journal_path
from checks.sweep.models import SweepResult, load_results
from checks.sweep.summary import from_journal

SLOW = """
import os
import time


def slow(shape, dtype, *, device="cpu", seed=0):
    # the worker's environment is scrubbed: a path here; every worker that calls it appends
    marker = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(marker, f"{os.getpid()}\\n".encode())
    os.close(marker)
    time.sleep(600)
"""

# a case that measures in well under a second: the one the stopped sweep finishes; and a Triton
# kernel, which the head changes, so that the review has a change to judge by the sweep
SCALE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, generator=torch.Generator().manual_seed(seed))
    return {"fn": lambda: x * 2.0, "reference": lambda: x * 2.0, "inputs": [x],
            "bytes_moved": 8 * x.numel(), "flops": x.numel()}
"""

POLICY = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[[kernels]]
name = "slow"
bench = "ops:slow"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[1000]]
"""

# scale first, then slow: the sweep finishes scale and is inside slow's first call when stopped
SCALE_FIRST = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[[kernels]]
name = "scale"
bench = "ops:scale"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[4096]]
""" + POLICY.split("\n\n", 2)[2]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _ops_repo(tmp_path: Path, marker: Path, policy: str = POLICY) -> Path:
    """A repository whose ``ops.slow`` sleeps once it wrote its pid into ``marker`` (and whose
    ``ops.scale`` is quick), with a head commit besides its base that changes the body of its
    Triton kernel (which neither calls)."""
    repo = tmp_path / "ops"
    gitutil.init_repo(repo)
    ops = f"MARKER = {str(marker)!r}\n" + textwrap.dedent(SLOW) + textwrap.dedent(SCALE)
    (repo / "ops.py").write_text(ops)
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(policy)
    gitutil.commit_all(repo, "ops")
    (repo / "ops.py").write_text(ops.replace("* 2, mask", "* 3, mask"))
    gitutil.commit_all(repo, "head")
    return repo


@dataclass
class Stopped:
    code: int
    err: str
    out: str
    took: float  # seconds from the signal to the exit
    left: list[int]  # the processes that ran the entry point and outlived the command


def _stopped(
    tmp_path: Path,
    args: list[str],
    marker: Path,
    sig: int,
    ready: Callable[[], bool] = lambda: True,
    *,
    program: Sequence[str] = ("-m", "bot"),
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Stopped:
    """Run ``python -m bot ARGS`` (``python PROGRAM ARGS``, in ``cwd``, with ``env`` added)
    until the entry point has written its pid into ``marker`` and ``ready()``, send ``sig``;
    the processes that ran the entry point and outlived the command are killed here."""
    proc = subprocess.Popen(
        [sys.executable, *program, *args],
        cwd=cwd or tmp_path,
        env={**os.environ, "KERNEL_REVIEW_CACHE": str(tmp_path / "cache"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    helpers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text() or not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "nothing ever called the entry point"
            time.sleep(0.1)
        helpers = [int(pid) for pid in marker.read_text().split()]
        assert all(_alive(pid) for pid in helpers)
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if any(_alive(pid) for pid in helpers):
            time.sleep(0.5)  # their exit is asynchronous to ours: a moment to go
        left = [pid for pid in helpers if _alive(pid)]
        for pid in left:  # those the command failed to end: not left behind
            os.kill(pid, signal.SIGKILL)
    return Stopped(proc.returncode, err, out, took, left)


def test_ctrl_c_stops_the_compiler_report_and_kills_its_helper(tmp_path: Path) -> None:
    marker = tmp_path / "helper.pid"
    repo = _ops_repo(tmp_path, marker)
    args = ["compiler-report", "--repo", str(repo)]
    run = _stopped(tmp_path, args, marker, signal.SIGINT)
    assert run.code == 130 and "kernel-review: interrupted" in run.err, run.err
    assert run.took < 2.0, f"exited {run.took:.1f} s after SIGINT"
    assert not run.left, f"the helper {run.left} outlived the command"


def _both(marker: Path) -> bool:
    """Both workers (base's and head's) are inside the entry's call: each check calls it."""
    return len(marker.read_text().split()) == 2


def _bench_args(repo: Path, out: Path) -> list[str]:
    return [
        "bench", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD", "--device", "cpu",
        "--out", str(out), "--engine-option", "added_shapes=off",
        "--engine-option", "max_rounds=3",
    ]  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_ends_the_sweep_at_once_and_kills_its_workers(tmp_path: Path, sig: int) -> None:
    """``bench`` whose workers are inside a call of the bench entry (sleeping here, as a first
    call compiles or autotunes for minutes): Ctrl-C, or the SIGTERM of a cancelled job, ends
    the command within 2 s, and the workers with it; its results say that nothing was
    measured, and why."""
    marker = tmp_path / "worker.pid"
    repo = _ops_repo(tmp_path, marker)
    out = tmp_path / "results.json"
    run = _stopped(tmp_path, _bench_args(repo, out), marker, sig, lambda: _both(marker))
    assert run.code == EXIT_STOPPED, run.err
    assert run.took < 2.0, f"exited {run.took:.1f} s after the signal"
    assert not run.left, f"the workers {run.left} outlived the command"
    result = load_results(out)
    [case] = result.cases
    assert case.status == "stopped" and signal.Signals(sig).name in case.message
    assert result.stopped == signal.Signals(sig).name


@dataclass
class StoppedSweep:
    repo: Path
    results: SweepResult
    journal: Path  # the journal as it was when the signal was sent
    run: Stopped


@pytest.fixture(scope="module")
def stopped_sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoppedSweep]:
    """``bench`` over two cases (``added_shapes=off``): SIGTERM once its journal holds the
    first, finished, and the workers are inside the second's first call; the journal is copied
    at that moment, as a run killed there (SIGKILL) would leave it."""
    tmp = tmp_path_factory.mktemp("stopped")
    marker = tmp / "worker.pid"
    repo = _ops_repo(tmp, marker, SCALE_FIRST)
    out = tmp / "results.json"
    journal = journal_path(out)
    kept = tmp / "at-the-signal.partial.jsonl"

    def one_case_journaled() -> bool:
        if not _both(marker) or '"case"' not in (journal.read_text() if journal.exists() else ""):
            return False
        shutil.copyfile(journal, kept)
        return True

    run = _stopped(tmp, _bench_args(repo, out), marker, signal.SIGTERM, one_case_journaled)
    assert out.exists(), run.err
    yield StoppedSweep(repo, load_results(out), kept, run)


def test_a_stopped_sweep_writes_what_it_finished(stopped_sweep: StoppedSweep) -> None:
    """Exit 7 within 2 s, the workers killed; the results parse, the finished case keeps the
    verdict its journal's rounds give it, the other is ``stopped``, and the run says why; the
    journal and the worktrees are gone."""
    s = stopped_sweep
    assert s.run.code == EXIT_STOPPED, s.run.err
    assert s.run.took < 2.0, f"exited {s.run.took:.1f} s after SIGTERM"
    assert not s.run.left, f"the workers {s.run.left} outlived the command"
    assert "kernel-review bench: stopped by SIGTERM" in s.run.err
    scale, slow = s.results.cases
    assert (scale.kernel, scale.status) == ("scale", "ok") and scale.verdict is not None
    assert scale.stop_reason == "stopped"  # one pass of the two it wanted
    journaled = {c.kernel: c for c in from_journal(s.journal).cases}
    assert (scale.verdict, scale.ratio) == (journaled["scale"].verdict, journaled["scale"].ratio)
    assert scale.raw == journaled["scale"].raw
    assert (slow.kernel, slow.status, slow.verdict) == ("slow", "stopped", None)
    assert "stopped by SIGTERM" in slow.message
    assert s.results.stopped == "SIGTERM"
    assert any("after measuring 1 of 2 cases" in note for note in s.results.notes)
    assert not journal_path(s.repo.parent / "results.json").exists()
    assert gitutil.git(s.repo, "worktree", "list").count("\n") == 1


def _review(
    s: StoppedSweep, results: Path, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """``review --results`` of the stopped sweep's range, in this process: its exit code, the
    job summary's markdown and stderr."""
    md = tmp / "review.md"
    base, head = gitutil.rev_parse(s.repo, "HEAD~1"), gitutil.rev_parse(s.repo, "HEAD")
    code = main(
        ["review", "--repo", str(s.repo), "--base", base, "--head", head, "--no-compile",
         "--results", str(results), "--out", str(md), "--full"]
    )  # fmt: skip
    return code, md.read_text() if md.exists() else "", capsys.readouterr().err


def _row(comment: str, kernel: str) -> str:
    """The kernel's row of the per-shape table (one shape each here)."""
    shape = {"scale": 4096, "slow": 1000}[kernel]
    return next(x for x in comment.splitlines() if x.startswith(f"| {kernel} | {shape} |"))


def test_the_review_of_a_stopped_sweep_shows_its_rest_not_run(
    stopped_sweep: StoppedSweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = stopped_sweep
    out = s.repo.parent / "results.json"
    code, comment, err = _review(s, out, tmp_path, capsys)
    assert code == 0, err
    assert "STOPPED: the sweep was stopped by SIGTERM" in _row(comment, "slow")
    assert f"{s.results.cases[0].base_median_us:.2f}" in _row(comment, "scale")
    assert not comment.startswith("## ✅")  # not approved: CPU timing, and a case not run


def test_the_journal_of_a_killed_sweep_is_reviewed_where_it_wrote_no_results(
    stopped_sweep: StoppedSweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed where the journal was copied leaves it and no results file: ``review
    --results`` of that file reads the journal, says so and what to do, and shows the case it
    finished with its times and the other as not run."""
    s = stopped_sweep
    missing = tmp_path / "killed.json"
    shutil.copyfile(s.journal, journal_path(missing))
    code, comment, err = _review(s, missing, tmp_path, capsys)
    assert code == 0, err
    assert f"no results file {missing}, but the journal {journal_path(missing)}" in err
    assert "Reviewing the 1 of 2 cases it measured, the other 1 as not run" in err
    assert "run the sweep again" in err
    assert "STOPPED: the sweep was killed before it wrote its results" in _row(comment, "slow")
    scale = from_journal(s.journal).cases[0]
    assert f"{scale.base_median_us:.2f}" in _row(comment, "scale")
    assert not comment.startswith("## ✅")


# ``kernel-review job measure`` as the workflow runs it, its engine's sweep on the CPU (the
# measurement engine's own entry point, handed the sweep options a CPU needs, as the scheduled
# job's test hands them in; nothing else of the job is replaced)
MEASURE_ON_THE_CPU = """
import functools, sys
from bot import app
from bot.cli import main
from checks.measure import measure_plan
from checks.sweep.run import SweepOptions
options = SweepOptions.model_validate_json(sys.argv[1])
app._measurement_engine = lambda: functools.partial(measure_plan, sweep_options=options)
sys.exit(main(sys.argv[2:]))
"""


@dataclass
class StoppedJob:
    repo: Path
    results: ResultsFile
    raw: SweepResult  # the sweep's detailed results, written beside the results file
    run: Stopped


def _gate(repo: Path, results: Path) -> None:
    """The gate's decision for the range HEAD~1..HEAD of ``repo`` in ``results``: its base
    policy, and the plan of a ``/bench quick`` of both kernels (no small or ragged shapes) with
    the sweep and the first call."""
    from bot.jobs.gate import GATE_FILE, GateDecision
    from bot.plan import make_plan
    from bot.policy.load import find_policy
    from bot.revision import GitRevision

    base, head = gitutil.rev_parse(repo, "HEAD~1"), gitutil.rev_parse(repo, "HEAD")
    found = find_policy(GitRevision(repo, base))
    assert found is not None
    policy = found[0]
    plan = make_plan(
        (), policy, base_sha=base, head_sha=head, kernels=["scale", "slow"], quick=True
    )
    plan = plan.model_copy(update={"checks": ("sweep", "first_call")})
    gate = GateDecision(repository="o/r", event="pull_request", run=True, plan=plan, policy=policy)
    results.mkdir(parents=True, exist_ok=True)
    (results / GATE_FILE).write_text(gate.model_dump_json())


@pytest.fixture(scope="module")
def stopped_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoppedJob]:
    """``kernel-review job measure`` over two cases: SIGINT (a job's cancel or timeout-minutes)
    once the sweep's journal holds the first, finished, and its workers are inside the second's
    first call."""
    from checks.sweep.protocol import default_protocol
    from checks.sweep.run import SweepOptions

    tmp = tmp_path_factory.mktemp("stopped-job")
    marker = tmp / "worker.pid"
    repo = _ops_repo(tmp, marker, SCALE_FIRST)
    results, scratch = tmp / "results", tmp / "scratch"
    scratch.mkdir()
    _gate(repo, results)
    protocol = default_protocol("cpu", max_rounds=3).model_copy(update={"min_rounds": 3})
    options = SweepOptions(device="cpu", protocol=protocol)  # as bench's max_rounds=3

    def one_case_journaled() -> bool:  # the job's scratch folder is under TMPDIR
        journals = list(scratch.glob("kernel-review-measure-*/sweep/partial.jsonl"))
        return _both(marker) and any('"case"' in j.read_text() for j in journals)

    env = {
        "INPUT_VENDOR": "nvidia",
        "INPUT_SHARD": "1/1",
        "INPUT_RESULTS_PATH": str(results),
        # unconfined, as on a disposable runner: the sandbox's read-only filesystem would keep
        # the workers from writing their pids into the marker
        "INPUT_RUNNER_ISOLATION": "disposable",
        "TMPDIR": str(scratch),
    }
    run = _stopped(
        tmp, [options.model_dump_json(), "job", "measure"], marker, signal.SIGINT,
        one_case_journaled, program=("-c", MEASURE_ON_THE_CPU), cwd=repo, env=env,
    )  # fmt: skip
    path = results / "results-nvidia-1of1.json"
    assert path.exists(), run.err
    raw = load_results(results / "sweep-nvidia-1of1.json")
    yield StoppedJob(repo, ResultsFile.model_validate_json(path.read_text()), raw, run)


def test_a_stopped_measure_job_writes_what_it_finished(stopped_job: StoppedJob) -> None:
    """Exit 7 within 3 s of SIGINT (GitHub's runner sends SIGTERM 7.5 s after it), the
    workers killed and the worktrees removed; the results file holds the finished case with the
    verdict its rounds gave it, the other STOPPED, and the first call, which the stop came
    before, not run, saying which signal stopped the job."""
    s = stopped_job
    assert s.run.code == EXIT_STOPPED, s.run.err
    assert s.run.took < 3.0, f"exited {s.run.took:.1f} s after SIGINT"
    assert not s.run.left, f"the workers {s.run.left} outlived the command"
    assert gitutil.git(s.repo, "worktree", "list").count("\n") == 1
    [sweep] = s.results.evidence.sweeps
    scale, slow = sweep.shapes
    raw_scale = s.raw.cases[0]
    assert (scale.kernel, raw_scale.status) == ("scale", "ok")
    assert scale.verdict == raw_scale.verdict and scale.ratio == raw_scale.ratio
    assert (slow.kernel, slow.verdict) == ("slow", "STOPPED")
    assert "the sweep was stopped by SIGINT" in slow.failure_reason
    words = "the measure job was stopped by SIGINT (Ctrl-C, or a CI job's cancel or time limit)"
    assert [(n.check, n.vendor, n.reason) for n in s.results.evidence.not_run] == [
        ("first_call", "nvidia", f"{words} before it started")
    ]
    assert "stopped by SIGINT" in s.run.err + s.run.out and "sweep: stopped after" in s.run.out


def test_the_review_of_a_stopped_measure_job_says_what_was_not_run(
    stopped_job: StoppedJob, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's review of that file (``review --results``, the report job's reading and
    merge): the case the sweep did not get to is a STOPPED row, and the first call a not-run
    line naming the stop."""
    s = stopped_job
    results = tmp_path / "results-nvidia-1of1.json"
    results.write_text(s.results.model_dump_json())
    md = tmp_path / "review.md"
    base, head = s.results.base_sha, s.results.head_sha
    code = main(
        ["review", "--repo", str(s.repo), "--base", base, "--head", head, "--no-compile",
         "--results", str(results), "--out", str(md), "--full"]
    )  # fmt: skip
    comment = md.read_text()
    assert code == 0, capsys.readouterr().err
    assert "STOPPED: the sweep was stopped by SIGINT" in _row(comment, "slow")
    assert (
        "- first call on nvidia: the measure job was stopped by SIGINT (Ctrl-C, or a CI job's "
        "cancel or time limit) before it started"
    ) in comment
    assert not comment.startswith("## ✅")
