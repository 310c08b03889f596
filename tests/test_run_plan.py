"""The measure job on the CPU: a real repository, real worktrees, real worker processes."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bot import gitutil
from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from checks.measure import measure_plan
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


def test_measure_plan_reports_what_ran_and_why_the_rest_did_not(tmp_path: Path) -> None:
    repo = gitutil.init_repo(tmp_path / "repo")
    (repo / "ops.py").write_text(textwrap.dedent(BENCH))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    sha = gitutil.commit_all(repo, "ops")
    plan = Plan(
        base_sha=sha, head_sha=sha, vendors=("nvidia",), checks=("sweep", "first_call", "compiler", "repo"),
        kernels=(PlannedKernel(name="double", bench="ops:double", paths=("ops.py",), dtypes=("float32",),
                               shapes=(PlannedShape(dims=(20000,)),), tolerance=0.5, change_kinds=("body",)),),
    )  # fmt: skip
    opts = SweepOptions(
        device="cpu",
        protocol=ProtocolConfig(block_ms=2.0, min_rounds=4, max_rounds=8, warmup_rounds=1),
        timeouts=Timeouts(
            start_s=20, prepare_s=8.0, check_s=5, configure_s=5, block_s=5, finish_s=5
        ),
    )
    details = tmp_path / "details"
    ev = measure_plan(
        plan, vendor="nvidia", repo_root=repo, details_dir=details, sweep_options=opts
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
