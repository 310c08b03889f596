"""Toolchain changes found in real pull requests (tests/data/toolchain_bumps/README.md), read
from real git repositories the way ``analyze --repo`` and the gate read them."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.analysis.changes import change_lines
from bot.analysis.repo import analyze_repo
from bot.gitutil import commit_all, init_repo
from bot.plan import make_plan
from bot.policy.load import parse_policy
from tests.paths import DATA

BUMPS = DATA / "toolchain_bumps"
POLICY = parse_policy(
    """
[deployment]
kind = "long-lived"
[[kernels]]
name = "chunk_gla"
bench = "fla.bench:chunk_gla"
paths = ["fla/ops/gla/**"]
dtypes = ["bfloat16"]
shapes = [[8, 2048, 16, 128]]
[[kernels]]
name = "fused_recurrent"
bench = "fla.bench:fused_recurrent"
paths = ["fla/ops/common/**"]
dtypes = ["bfloat16"]
shapes = [[8, 2048, 16, 128]]
""",
    "kernel-review.toml",
)


def _repo(case: str, dest: Path) -> tuple[Path, str, str]:
    """The case's base files committed, then its head files in their place."""
    src = BUMPS / case
    init_repo(dest, branch="main")
    shutil.copytree(src / "base", dest, dirs_exist_ok=True)
    base = commit_all(dest, "base\n")
    for f in (src / "base").rglob("*"):
        if f.is_file():
            (dest / f.relative_to(src / "base")).unlink()
    shutil.copytree(src / "head", dest, dirs_exist_ok=True)
    return dest, base, commit_all(dest, "head\n")


def _moved(lines) -> set[tuple[str, str | None, str | None, str]]:
    return {
        (c.kernel, c.old_version, c.new_version, (c.new_paths or c.old_paths)[0]) for c in lines
    }


def test_ci_install_lines_moving_torch_and_its_wheel_index(tmp_path: Path) -> None:
    repo, base, head = _repo("fla_c1ac8d0c", tmp_path / "fla")
    analysis = analyze_repo(repo, base, head, use_base_policy=False)
    moved = _moved(analysis.toolchain)
    h100 = ".github/workflows/nvidia-h100.yml"
    assert ("torch", None, "~=2.7.0", h100) in moved  # the old line was a comment
    assert ("torch wheel index", None, "cu128", h100) in moved
    assert ("torch", "(any)", None, "pyproject.toml") in moved  # dropped from build requires
    a100 = ".github/workflows/nvidia-a100.yml"  # a new workflow: its pins are new
    assert ("triton", None, "(any)", a100) in moved
    assert not any(c.kind == "toolchain" for c in analysis.changes)  # kernels are apart


def test_a_renamed_triton_build_in_one_extra(tmp_path: Path) -> None:
    repo, base, head = _repo("unsloth_e87c0dd4", tmp_path / "unsloth")
    analysis = analyze_repo(repo, base, head, use_base_policy=False)
    extra = "project.optional-dependencies.intelgputorch210"
    assert [(c.kernel, c.old_version, c.new_version) for c in analysis.toolchain] == [
        ("pytorch-triton-xpu", "==3.5.0", None),
        ("triton-xpu", None, "==3.6.0"),
    ]
    assert all(extra in c.detail for c in analysis.toolchain)


def test_a_bump_plans_every_policy_kernel(tmp_path: Path) -> None:
    repo, base, head = _repo("unsloth_e87c0dd4", tmp_path / "unsloth")
    changes = change_lines(analyze_repo(repo, base, head, policy=POLICY))
    plan = make_plan(changes, POLICY, base_sha=base, head_sha=head)
    assert [k.name for k in plan.kernels] == ["chunk_gla", "fused_recurrent"]
    assert {c.kernel for c in plan.toolchain} == {"pytorch-triton-xpu", "triton-xpu"}
    assert "compiler" in plan.checks and "sweep" in plan.checks


def test_analyze_prints_the_toolchain_changes(tmp_path: Path, capsys) -> None:
    from bot.cli import main

    repo, base, head = _repo("fla_c1ac8d0c", tmp_path / "fla")
    assert main(["analyze", "--repo", str(repo), "--base", base, "--head", head]) == 0
    out = capsys.readouterr().out
    assert "Toolchain changes (11): every policy kernel is affected" in out
    assert "  torch: not pinned -> ~=2.7.0  (.github/workflows/nvidia-h100.yml: PyTorch)" in out
