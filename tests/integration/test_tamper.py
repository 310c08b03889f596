"""Measured code that rewrites a checked-out tree voids the run; hashing a tree never follows a
symbolic link and never reads past its byte cap (a ``.py`` link to ``/dev/zero``)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from bot import gitutil
from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from bot.errors import ResultsError
from checks.compiler.run import source_digest
from checks.context import MeasureContext
from checks.measure import measure_plan
from checks.sweep.evidence import sweep_for_plan
from checks.sweep.run import SweepOptions
from checks.worker_env import run_sealed, tree_digest
from tests.integration.test_measure import BENCH, POLICY
from tests.integration.test_sweep_cpu import FAST, QUICK

# the head's entry point slows the base side down by rewriting the base worktree next to it
TAMPER = '    open("../base/ops.py", "a").write("\\nimport time; time.sleep(0.001)\\n")\n'
HEAD_BENCH = BENCH.replace("    return {", TAMPER + "    return {")


def test_a_head_that_rewrites_the_base_worktree_voids_the_sweep(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    gitutil.init_repo(repo)
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    (repo / "ops.py").write_text(textwrap.dedent(BENCH))
    base = gitutil.commit_all(repo, "base")
    assert HEAD_BENCH != BENCH
    (repo / "ops.py").write_text(textwrap.dedent(HEAD_BENCH))
    head = gitutil.commit_all(repo, "head")
    plan = Plan(
        base_sha=base, head_sha=head, vendors=("nvidia",), checks=("sweep",), quick=True,
        kernels=(PlannedKernel(name="double", bench="ops:double", paths=("ops.py",),
                               dtypes=("float32",), shapes=(PlannedShape(dims=(20000,)),),
                               tolerance=0.5, change_kinds=("body",)),),
    )  # fmt: skip
    opts = SweepOptions(device="cpu", protocol=QUICK, timeouts=FAST, max_gpu_seconds=600)
    with (
        MeasureContext.open(plan, vendor="nvidia", repo_root=repo) as ctx,
        pytest.raises(ResultsError, match="worktree base changed while the measured code ran"),
    ):
        sweep_for_plan(
            plan,
            base_root=ctx.tree("base"),
            head_root=ctx.tree("head"),
            limits=ctx.limits,
            options=opts,
            work_dir=tmp_path / "w",
        )
    assert gitutil.git(repo, "worktree", "list").count("\n") == 1  # still cleaned up
    # the measure job: no sweep evidence, and the review's "not run" says why
    ev = measure_plan(plan, vendor="nvidia", repo_root=repo, sweep_options=opts)
    assert ev.sweeps == ()
    [void] = [n for n in ev.not_run if n.check == "sweep"]
    assert "changed while the measured code ran" in void.reason


def test_a_tree_changed_and_left_so_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert run_sealed([tmp_path], lambda: 7) == 7
    with pytest.raises(ResultsError, match="void"):
        run_sealed([tmp_path], lambda: (tmp_path / "a.py").write_text("x = 2\n"))
    with pytest.raises(ResultsError, match="void"):
        run_sealed([tmp_path], lambda: (tmp_path / "torch.py").write_text(""))  # a new module


def test_hashing_never_follows_links_or_reads_past_its_cap(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    before = source_digest(tmp_path)
    os.symlink("/dev/zero", tmp_path / "zero.py")
    os.symlink("/", tmp_path / "root")  # a link to a directory is not walked either
    after = source_digest(tmp_path)  # returns at once instead of reading /dev/zero forever
    assert after is not None and after != before
    os.remove(tmp_path / "zero.py")
    os.symlink("/dev/null", tmp_path / "zero.py")
    assert source_digest(tmp_path) != after  # the link's target is part of the digest
    (tmp_path / "big.py").write_bytes(b"#" * 5000)
    assert tree_digest(tmp_path, max_bytes=4096) is None
    assert tree_digest(tmp_path, max_bytes=10_000) is not None
    os.mkfifo(tmp_path / "pipe.py")
    assert tree_digest(tmp_path) is not None  # a pipe is hashed as a pipe, never opened
