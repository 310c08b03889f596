"""The measure job on the CPU: a real repository, real worktrees, real worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bot import gitutil
from bot.contracts.evidence import Evidence, FirstCallEvidence, NotRun
from bot.contracts.plan import Plan, PlanDeployment, PlanLimits, PlannedKernel, PlannedShape
from bot.errors import KernelReviewError, PolicyError
from checks import registry
from checks.context import MeasureContext
from checks.measure import GRACE_S, measure_plan
from checks.procs import stopping
from checks.sweep.models import load_results
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions
from checks.sweep.workers import Timeouts

BENCH = """
import numpy as np


def double(shape, dtype, *, device="cpu", seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return {"fn": lambda: x * 2, "reference": lambda: x * 2, "bytes_moved": 2 * x.nbytes, "flops": x.size}
"""
POLICY = """
tolerance = 0.5
vendors = ["nvidia"]
[deployment]
kind = "long-lived"
[limits]
max_shapes = 1
[[kernels]]
name = "double"
bench = "ops:double"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[20000]]
"""


# a short CPU sweep: plumbing, labelled CPU timing
CPU_SWEEP = SweepOptions(
    device="cpu",
    protocol=ProtocolConfig(block_ms=2.0, min_rounds=4, max_rounds=8, warmup_rounds=1),
    timeouts=Timeouts(start_s=20, prepare_s=8.0, check_s=5, configure_s=5, block_s=5, finish_s=5),
)


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = gitutil.init_repo(tmp_path / "repo")
    (repo / "ops.py").write_text(textwrap.dedent(BENCH))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    return repo, gitutil.commit_all(repo, "ops")


def test_measure_plan_reports_what_ran_and_why_the_rest_did_not(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    plan = Plan(
        base_sha=sha, head_sha=sha, vendors=("nvidia",), checks=("sweep", "first_call", "compiler", "repo"),
        kernels=(PlannedKernel(name="double", bench="ops:double", paths=("ops.py",), dtypes=("float32",),
                               shapes=(PlannedShape(dims=(20000,)),), tolerance=0.5, change_kinds=("body",)),),
    )  # fmt: skip
    details = tmp_path / "details"
    ev = measure_plan(
        plan, vendor="nvidia", repo_root=repo, details_dir=details, sweep_options=CPU_SWEEP
    )

    # The sweep ran (CPU timing, so labelled as such) and its raw blocks were kept.
    assert len(ev.sweeps) == 1 and ev.sweeps[0].timing_kind == "cpu"
    assert ev.sweeps[0].shapes[0].verdict in ("SAME", "INCONCLUSIVE")
    raw = load_results(details / "sweep-nvidia-1of1.json")
    assert raw.cases[0].status == "ok"
    # No GPU here: the first call could not be measured in the deployment's process, and says so.
    assert not any(not f.compile_only and f.cold_ms for f in ev.first_calls)
    assert any(n.check == "first_call" for n in ev.not_run) or all(
        f.cold_ms is None for f in ev.first_calls
    )
    # Nothing left behind.
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_the_first_call_primes_no_interpreter_the_sweep_workers_already_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A priming process only reads torch's and Triton's files before the cold run; once the
    sweep's workers of the same job have read them under the same interpreter, it is skipped
    (on the H200 about 2.5 s a job). Without a sweep the first kernel's run is still primed."""
    import checks.first_call.measure as first_call_measure
    from bot.errors import KernelReviewError

    repo, sha = _repo(tmp_path)
    primes: list[bool] = []

    def recorded(tree: Path, spec: Any, **kw: Any) -> Any:
        primes.append(kw["prime"])
        raise KernelReviewError("recorded, not measured")

    monkeypatch.setattr(first_call_measure, "measure_first_call", recorded)
    ev = measure_plan(_plan(sha, ("first_call",)), vendor="nvidia", repo_root=repo)
    assert primes == [True]
    assert [n.reason for n in ev.not_run] == ["double: recorded, not measured"]
    primes.clear()
    lines: list[str] = []
    ev = measure_plan(
        _plan(sha, ("sweep", "first_call")), vendor="nvidia", repo_root=repo,
        sweep_options=CPU_SWEEP, progress=lines.append,
    )  # fmt: skip
    assert ev.sweeps[0].shapes[0].verdict in ("SAME", "INCONCLUSIVE")
    assert primes == [False]
    # the job's log says where the sweep's time went, as `kernel-review bench` does
    assert any(line.startswith("sweep where: start-up ") for line in lines), lines


class _Accuracy:
    """A check the registry did not know: its evidence must reach the result unedited."""

    name = "accuracy"
    machine = "gpu"

    def __init__(self) -> None:
        self.trees: list[Path] = []

    def applies(self, ctx: MeasureContext) -> bool:
        return True

    def run(self, ctx: MeasureContext) -> Evidence:
        self.trees += [ctx.tree("head"), ctx.tree("head")]
        assert gitutil.git(ctx.repo_root, "worktree", "list").count("\n") == 2
        return Evidence(
            first_calls=(FirstCallEvidence(vendor=ctx.vendor, kernel="double", cold_ms=2.0, warm_ms=1.0),),
            not_run=(NotRun(check="repo", vendor=ctx.vendor, reason="accuracy: float16 not run"),),
        )  # fmt: skip


def _plan(sha: str, checks: tuple = ()) -> Plan:
    return Plan(
        base_sha=sha, head_sha=sha, vendors=("nvidia",), checks=checks,
        kernels=(PlannedKernel(name="double", bench="ops:double", paths=("ops.py",), dtypes=("float32",),
                               shapes=(PlannedShape(dims=(20000,)),), tolerance=0.5, change_kinds=("body",)),),
    )  # fmt: skip


def test_a_check_added_to_the_registry_has_its_evidence_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, sha = _repo(tmp_path)
    accuracy = _Accuracy()
    monkeypatch.setattr(registry, "CHECKS", (*registry.CHECKS, accuracy))
    ev = measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
    assert [(f.kernel, f.cold_ms) for f in ev.first_calls] == [("double", 2.0)]
    assert [n.reason for n in ev.not_run] == ["accuracy: float16 not run"]
    # the context made the head worktree once for the job, and removed it at the end
    assert accuracy.trees[0] == accuracy.trees[1]
    assert not accuracy.trees[0].exists()
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_an_unknown_vendor_is_refused_with_a_message(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    with pytest.raises(
        PolicyError, match=r"'intel'.*not a vendor this version knows \(nvidia, amd\)"
    ):
        measure_plan(_plan(sha, ("sweep",)), vendor="intel", repo_root=repo)
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_the_plan_carries_what_the_job_would_read_from_the_policy(tmp_path: Path) -> None:
    repo, sha = _repo(tmp_path)
    old = _plan(sha)
    # a plan written before these fields existed still loads, and the base policy answers
    assert (
        Plan.model_validate_json(
            old.model_dump_json(exclude={"limits", "deployment", "compiler_targets"})
        )
        == old
    )
    with MeasureContext.open(old, vendor="nvidia", repo_root=repo) as ctx:
        assert ctx.limits.max_shapes == 1
        assert ctx.deployment == PlanDeployment(kind="long-lived")
        assert ctx.compiler_targets == ["sm_90"]
    carried = old.model_copy(
        update={
            "limits": PlanLimits(max_shapes=3, max_elements_per_tensor=10, max_gpu_seconds=5),
            "deployment": PlanDeployment(kind="cli", first_call_budget_ms=3000),
            "compiler_targets": ("gfx942",),
        }
    )
    with MeasureContext.open(carried, vendor="amd", repo_root=repo) as ctx:
        assert (ctx.vendor, ctx.limits.max_shapes, ctx.compiler_targets) == ("amd", 3, ["gfx942"])
        assert ctx.deployment is not None and ctx.deployment.first_call_budget_ms == 3000


def test_the_registry_imports_neither_torch_nor_triton() -> None:
    code = "import sys, checks.registry, checks.measure; print(sorted({'torch', 'triton'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Standin:
    """A check that says where and when it ran; ``wait_for``: an event it needs set first;
    ``started``: one it sets as it starts."""

    keeps_on_stop = False

    def __init__(
        self, name: str, machine: str, log: list, wait_for=None, sets=None, started=None
    ) -> None:
        self.name, self.machine, self.log = name, machine, log
        self.wait_for, self.sets, self.started = wait_for, sets, started

    def applies(self, ctx: MeasureContext) -> bool:
        return True

    def run(self, ctx: MeasureContext) -> Evidence:
        self.log.append(("start", self.name, threading.current_thread().name))
        if self.started is not None:
            self.started.set()
        if self.wait_for is not None:
            assert self.wait_for.wait(30), f"{self.name} waited in vain"
        ctx.tree("head")  # made once, whichever thread asks first
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        if self.sets is not None:
            time.sleep(0.2)
            self.sets.set()
        self.log.append(("end", self.name, nice))
        reason = f"{self.name} ran"
        return Evidence(not_run=(NotRun(check="repo", vendor=ctx.vendor, reason=reason),))


def _registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *checks: Any) -> tuple[Path, str]:
    """A repository, and ``checks`` as the registry's checks."""
    monkeypatch.setattr(registry, "CHECKS", checks)
    return _repo(tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread priority is Linux's")
def test_checks_that_need_no_gpu_run_alongside_and_the_wall_clock_one_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU check can only finish if the CPU check runs meanwhile (it waits for an event that
    the CPU check sets); the wall-clock check starts after the CPU check has ended; the CPU
    check's thread runs at a lower priority; the evidence is in registry order all the same."""
    log: list = []
    compiled = threading.Event()
    repo, sha = _registered(
        tmp_path,
        monkeypatch,
        _Standin("sweep", "gpu", log, wait_for=compiled),
        _Standin("first_call", "quiet", log),
        _Standin("compiler", "cpu", log, sets=compiled),
    )
    lines: list[str] = []
    ev = measure_plan(_plan(sha), vendor="nvidia", repo_root=repo, progress=lines.append)
    assert [n.reason for n in ev.not_run] == ["sweep ran", "first_call ran", "compiler ran"]
    order = [(what, name) for what, name, _ in log]
    assert order.index(("end", "compiler")) < order.index(("start", "first_call"))
    assert order.index(("start", "compiler")) < order.index(("end", "sweep"))
    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    nice = {name: n for what, name, n in log if what == "end"}
    assert nice["compiler"] == 19 and nice["sweep"] == here  # below compiling ahead's 10
    away = {name for what, name, where in log if what == "start" and where != "MainThread"}
    assert away == {"compiler"}
    assert sorted(line.split(":")[0] for line in lines if " done in " in line) == [
        "compiler", "first_call", "sweep"
    ]  # fmt: skip
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_with_alongside_off_every_check_runs_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list = []
    repo, sha = _registered(tmp_path, monkeypatch, _Standin("sweep", "gpu", log),
                            _Standin("compiler", "cpu", log), _Standin("first_call", "quiet", log))  # fmt: skip
    ev = measure_plan(_plan(sha), vendor="nvidia", repo_root=repo, alongside=False)
    assert [n.reason for n in ev.not_run] == ["sweep ran", "compiler ran", "first_call ran"]
    assert [(what, name) for what, name, _ in log] == [
        ("start", "sweep"), ("end", "sweep"), ("start", "compiler"), ("end", "compiler"),
        ("start", "first_call"), ("end", "first_call"),
    ]  # fmt: skip
    assert {thread for what, _, thread in log if what == "start"} == {"MainThread"}


def test_a_thread_lowered_in_priority_starts_processes_at_that_priority() -> None:
    from checks.job_process import lower_this_thread

    here = os.getpriority(os.PRIO_PROCESS, 0)
    seen: dict[str, int] = {}

    def lowered() -> None:
        if lower_this_thread():
            out = subprocess.run([sys.executable, "-c", "import os; print(os.nice(0))"],
                                 capture_output=True, text=True, check=True)  # fmt: skip
            seen["child"] = int(out.stdout)

    t = threading.Thread(target=lowered)
    t.start()
    t.join()
    if sys.platform == "linux":
        assert seen["child"] == min(19, here + 10)
    else:
        assert seen == {}
    assert os.getpriority(os.PRIO_PROCESS, 0) == here  # the rest of the process keeps its own


class _Broken(_Standin):
    def run(self, ctx: MeasureContext) -> Evidence:
        ctx.tree("base")
        raise RuntimeError("the compiler report broke")


def test_a_check_that_breaks_alongside_is_raised_after_the_others_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list = []
    repo, sha = _registered(tmp_path, monkeypatch, _Standin("sweep", "gpu", log),
                            _Broken("compiler", "cpu", log), _Standin("first_call", "quiet", log))  # fmt: skip
    with pytest.raises(RuntimeError, match="the compiler report broke"):
        measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
    assert [(what, name) for what, name, _ in log if what == "end"] == [
        ("end", "sweep"), ("end", "first_call")
    ]  # fmt: skip
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_a_check_that_breaks_is_raised_once_the_checks_alongside_have_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of the job's own thread that breaks while the compiler report runs alongside is
    raised once that has ended, not while it still runs on the worktrees being removed."""
    log: list = []
    repo, sha = _registered(tmp_path, monkeypatch, _Broken("sweep", "gpu", log),
                            _Standin("compiler", "cpu", log, sets=threading.Event()))  # fmt: skip
    with pytest.raises(RuntimeError, match="the compiler report broke"):
        measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
    assert ("end", "compiler") in [(what, name) for what, name, _ in log]
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


@pytest.fixture
def stop_after():
    """A command's stop, set by a test as bot.cli's handlers set it, cleared after it."""
    yield stopping.stop
    stopping.clear()


class _Stopping(_Standin):
    """The sweep, stopped from outside (``sig``) while it runs, as bot.cli's handler of the
    signal stops the command (None: a Ctrl-C that nothing handled, the command not stopped);
    with ``raises``, the handler's exception cuts it off, else it returns what it finished;
    ``after``: the stop waits for this event (a check alongside that has started)."""

    def __init__(
        self, log: list, sig: int | None, *, keeps: bool, raises: bool = False, after=None
    ) -> None:
        super().__init__("sweep", "gpu", log)
        self.sig, self.keeps_on_stop, self.raises, self.after = sig, keeps, raises, after

    def run(self, ctx: MeasureContext) -> Evidence:
        part = super().run(ctx)
        if self.after is not None:
            assert self.after.wait(30), "the check alongside never started"
        if self.sig is not None:
            stopping.stop(self.sig)
        if self.raises:
            raise SystemExit(128 + self.sig) if self.sig == signal.SIGTERM else KeyboardInterrupt
        return part


STOP_WORDS = {
    "SIGINT": "SIGINT (Ctrl-C, or a CI job's cancel or time limit)",
    "SIGTERM": "SIGTERM (a CI job's cancel or time limit, or `timeout`)",
}


def test_a_stopped_job_keeps_what_finished_and_waits_for_no_check_alongside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_after
) -> None:
    """Stopped by SIGTERM while the sweep runs: the sweep's evidence is kept (it keeps what it
    finished), the checks the stop came before are not started, and the compiler report
    alongside, which does not end, is waited for ``GRACE_S`` at most: each is a NotRun naming
    the signal, in registry order, and the worktrees are removed."""
    log: list = []
    released = threading.Event()  # the compiler report's end, once the test is over
    # the stop comes once the compiler report has started (under load its thread could start
    # after the stop, and "before it started" would then be the right words)
    began = threading.Event()
    repo, sha = _registered(
        tmp_path,
        monkeypatch,
        _Stopping(log, signal.SIGTERM, keeps=True, after=began),
        _Standin("smem", "gpu", log),
        _Standin("first_call", "quiet", log),
        _Standin("compiler", "cpu", log, wait_for=released, started=began),
    )
    try:
        t0 = time.monotonic()
        ev = measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
        took = time.monotonic() - t0
    finally:
        released.set()
    words = f"the measure job was stopped by {STOP_WORDS['SIGTERM']}"
    assert [(n.check, n.reason) for n in ev.not_run] == [
        ("repo", "sweep ran"),
        ("smem", f"{words} before it started"),
        ("first_call", f"{words} before it started"),
        ("compiler", f"{words} before it finished"),
    ]
    assert {n.vendor for n in ev.not_run} == {"nvidia"}
    assert took < GRACE_S + 2.0, f"measure_plan took {took:.1f} s"
    assert not any(name in ("smem", "first_call") for _, name, _ in log)
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


def test_a_check_that_outlives_its_job_makes_no_worktree_after_they_are_removed(
    tmp_path: Path,
) -> None:
    """A check still running in its thread when the job ends (stopped, past its grace) asks
    for a worktree after they were removed: it gets an error saying the job has ended, and the
    repository is left with no worktree of the job (it had one, under load, "locked" while
    being added after the job's cleanup)."""
    repo, sha = _repo(tmp_path)
    with MeasureContext.open(_plan(sha), vendor="nvidia", repo_root=repo) as ctx:
        base = ctx.tree("base")
        assert base.is_dir()
    with pytest.raises(KernelReviewError, match="the measure job has ended: the head's worktree"):
        ctx.tree("head")
    assert not base.exists()
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1


@pytest.mark.parametrize(
    ("sig", "raises"),
    [(signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGTERM, False)],
    ids=["sigint", "sigterm", "returned"],
)
def test_a_check_the_stop_cuts_off_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_after, sig: int, raises: bool
) -> None:
    """A check that keeps nothing of a stopped run, cut off by the exception bot.cli's handler
    of SIGINT or SIGTERM raises, or returning what it made of the stop, is not run, and the job
    goes on to hand on the rest; the same exception where the command is not stopping (Ctrl-C
    in a program calling measure_plan without bot.cli's handlers) is raised."""
    log: list = []
    repo, sha = _registered(
        tmp_path,
        monkeypatch,
        _Stopping(log, sig, keeps=False, raises=raises),
        _Standin("first_call", "quiet", log),
    )
    ev = measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
    words = f"the measure job was stopped by {STOP_WORDS[signal.Signals(sig).name]}"
    assert [(n.check, n.reason) for n in ev.not_run] == [
        ("sweep", f"{words} before it finished"),
        ("first_call", f"{words} before it started"),
    ]
    stopping.clear()
    monkeypatch.setattr(registry, "CHECKS", (_Stopping(log, None, keeps=False, raises=True),))
    with pytest.raises(KeyboardInterrupt):
        measure_plan(_plan(sha), vendor="nvidia", repo_root=repo)
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1
