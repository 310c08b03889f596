"""Two real Triton releases, each in its own environment: the compiler report of the fixture
kernels under both, and the fixture's bump commit reviewed end to end with both really used.

The 3.5.1 environment is made by uv from the package index (the wheel is about 170 MB the
first time; uv's cache keeps it); the tests skip, saying why, where the index cannot be
reached. 3.6.0 is the runner's own.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.analysis.changes import change_lines
from bot.analysis.repo import analyze_repo
from bot.contracts.plan import PlannedKernel, PlannedShape
from bot.errors import ToolchainError
from bot.plan import make_plan
from bot.policy.load import find_policy
from bot.review.conclude import conclude, review_context
from bot.revision import GitRevision
from checks.compiler.evidence import compiler_evidence_for_trees
from checks.measure import measure_plan
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions
from checks.sweep.workers import Timeouts
from checks.toolchain_env import SideEnv, runner_env, side_environment
from kernels_fixture.build_repo import build_fixture_repo
from kernels_fixture.toolchain_bump import NEW_TRITON, OLD_TRITON, add_toolchain_bump

pytestmark = pytest.mark.slow

# Small shapes: the point is two toolchains, not the served sizes.
SMALL = {
    "vector_add": ((4096,), "float32"),
    "softmax": ((64, 256), "float16"),
    "matmul": ((128, 128, 128), "float16"),
}


# CPU timing, briefly: the pipeline with both toolchains, not a measurement
CPU_SWEEP = SweepOptions(
    device="cpu",
    protocol=ProtocolConfig(block_ms=2.0, min_rounds=4, max_rounds=6, warmup_rounds=1),
    timeouts=Timeouts(
        start_s=60, prepare_s=120, check_s=120, configure_s=30, block_s=30, finish_s=30
    ),
    measure_ceilings=False,
)


@pytest.fixture(scope="module")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("envs")


@pytest.fixture(scope="module")
def bump(tmp_path_factory: pytest.TempPathFactory):
    repo = build_fixture_repo(tmp_path_factory.mktemp("fixture") / "repo")
    return add_toolchain_bump(repo)


def _checkout(repo: Path, sha: str, dest: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(dest), sha], check=True
    )
    return dest


@pytest.fixture(scope="module")
def old_env(bump, env_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> SideEnv:
    tree = _checkout(bump.path, bump.base_sha, tmp_path_factory.mktemp("base") / "tree")
    try:
        return side_environment(tree, cache_dir=env_cache)
    except ToolchainError as exc:
        pytest.skip(
            f"triton {OLD_TRITON} cannot be installed here (package index unreachable?): {exc.message}"
        )


def _narrow(kernels):
    return tuple(
        k.model_copy(
            update={"shapes": (PlannedShape(dims=SMALL[k.name][0]),), "dtypes": (SMALL[k.name][1],)}
        )
        for k in kernels
    )


def test_the_pin_bump_gives_each_side_its_own_triton(old_env: SideEnv) -> None:
    assert old_env.versions["triton"] == OLD_TRITON
    assert old_env.python != runner_env().python
    assert (
        "uv environment" in old_env.environment and f"triton=={OLD_TRITON}" in old_env.environment
    )
    assert runner_env().versions["triton"] == NEW_TRITON


def test_compiler_report_of_the_fixture_under_two_triton_releases(
    bump, old_env: SideEnv, tmp_path: Path
) -> None:
    tree = _checkout(bump.path, bump.head_sha, tmp_path / "head")
    kernels = tuple(
        PlannedKernel(name=name, bench=f"toyops.bench:{name}", paths=(), dtypes=(dtype,),
                      shapes=(PlannedShape(dims=dims),), tolerance=0.03, change_kinds=("toolchain",))
        for name, (dims, dtype) in SMALL.items()
    )  # fmt: skip

    class Plan:  # what the compiler report reads of a plan
        pass

    plan = Plan()
    plan.kernels = kernels  # type: ignore[attr-defined]
    compiler, not_run = compiler_evidence_for_trees(
        tree,
        tree,
        plan,
        ["sm_90", "gfx942"],
        details_dir=tmp_path / "details",
        envs=(old_env, runner_env()),
    )
    assert compiler is not None, not_run
    old = {(r.kernel, r.target, r.config): r for r in compiler.rows if r.side == "old"}
    new = {(r.kernel, r.target, r.config): r for r in compiler.rows if r.side == "new"}
    assert set(old) == set(new) and {k for k, _, _ in new} == set(SMALL)
    assert not [r for r in compiler.rows if r.error], [r.error for r in compiler.rows if r.error]
    # The same source under two compilers: some configs come out differently.
    moved = [
        (key, old[key].regs_per_thread, new[key].regs_per_thread)
        for key in new
        if (old[key].regs_per_thread, old[key].shared_bytes)
        != (new[key].regs_per_thread, new[key].shared_bytes)
    ]
    assert moved, "no config's registers or shared memory differ between the two releases"
    reports = {p.name: p.read_text() for p in (tmp_path / "details").iterdir()}
    assert f'"triton_version":"{OLD_TRITON}"' in reports["compiler-old.json"]
    assert f'"triton_version":"{NEW_TRITON}"' in reports["compiler-new.json"]


def test_the_bump_commit_reviewed_end_to_end_on_the_cpu(
    bump, old_env: SideEnv, env_cache: Path, tmp_path: Path
) -> None:
    # plan: the gate's analysis finds no kernel change, only the pin, and plans every kernel
    base_rev = GitRevision(bump.path, bump.base_sha)
    policy = find_policy(base_rev)[0]
    changes = change_lines(analyze_repo(bump.path, bump.base_sha, bump.head_sha, policy=policy))
    assert [(c.kernel, c.kind, c.old_version, c.new_version) for c in changes] == [
        ("triton", "toolchain", f"=={OLD_TRITON}", f"=={NEW_TRITON}")
    ]
    plan = make_plan(changes, policy, base_sha=bump.base_sha, head_sha=bump.head_sha, quick=True)
    assert [k.name for k in plan.kernels] == ["vector_add", "softmax", "matmul"]
    # a CPU cannot run the deployment's first call (tests/integration/test_first_call.py
    # measures it compile-only)
    plan = plan.model_copy(
        update={
            "kernels": _narrow(plan.kernels),
            "compiler_targets": ("sm_90",),
            "checks": ("sweep", "compiler"),
        }
    )

    # measure: CPU timing (labelled so), each side under its own Triton
    evidence = measure_plan(
        plan, vendor="nvidia", repo_root=bump.path, sweep_options=CPU_SWEEP, env_cache_dir=env_cache
    )
    sides = {t.side: t for t in evidence.toolchains}
    assert (
        sides["base"].versions["triton"] == OLD_TRITON
        and "uv environment" in sides["base"].environment
    )
    assert sides["head"].versions["triton"] == NEW_TRITON
    (sweep,) = evidence.sweeps
    assert sweep.timing_kind == "cpu" and {s.kernel for s in sweep.shapes} == set(SMALL)
    assert evidence.compiler is not None and {r.side for r in evidence.compiler.rows} == {
        "old",
        "new",
    }

    # report: the review says what moved, kernel by kernel, and who re-tunes
    ctx = review_context(
        policy,
        base_sha=bump.base_sha,
        head_sha=bump.head_sha,
        repository="toyops/toyops",
        policy_source=".github/kernel-review.toml",
    )
    review = conclude(changes, policy, evidence, ctx)
    comment = review.comment
    names = ", ".join(k.name for k in policy.kernels).replace("_", "\\_")
    assert f"| triton ({names}) | toolchain `=={OLD_TRITON}` → `=={NEW_TRITON}` |" in comment
    assert "### What the toolchain change moved" in comment
    assert "base: numpy" in comment and f"triton {OLD_TRITON} (uv environment" in comment
    moved = [
        ln for ln in comment.splitlines() if ln.startswith(("- matmul", "- softmax", "- vector"))
    ]
    assert sorted(ln.split(":")[0] for ln in moved[:3]) == [
        "- matmul",
        "- softmax",
        "- vector\\_add",
    ]
    matmul = next(ln for ln in moved if ln.startswith("- matmul:"))
    said = ("take more registers", "take fewer registers", "now spill", "compiled alike")
    assert any(w in matmul for w in said), matmul
    assert "(CPU timing, not evidence)" in comment
    assert "re-tuning for triton 3.6.0 is for @" in comment
    assert review.verdict.decision != "approve"  # CPU timings are not GPU evidence
