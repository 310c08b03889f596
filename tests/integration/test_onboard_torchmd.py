"""The second onboarding's repository, as bundled for the GPU run (bench/onboard_src/): torchmd-net's
neighbor list, a C++/CUDA extension built by setup.py, rewritten in Triton by its pull request #373
(MIT licence; bench/onboard_src/README.md names the commits). ``init`` on the commit before the
rewrite, the policy the onboarding wrote, and the review's kernel changes, all on the real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import gitutil
from bot.analysis.changes import change_lines
from bot.analysis.repo import analyze_repo
from bot.onboard.scan import SETUP_BUILD, read_repository
from bot.policy.load import load_policy
from tests.paths import ROOT

BUNDLE = ROOT / "bench" / "onboard_src" / "torchmd-net.bundle"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("torchmd") / "repo"
    gitutil.git(ROOT, "clone", "-q", str(BUNDLE), str(root))
    for branch in ("kr-base", "kr-head"):
        gitutil.git(root, "branch", "-q", "-f", branch, f"origin/{branch}")
    return root


def test_init_on_the_commit_before_the_rewrite_finds_the_cuda_ops_and_the_build(
    repo: Path, tmp_path: Path
) -> None:
    before = gitutil.add_worktree(repo, tmp_path / "before", "kr-base~1")
    scan = read_repository(before)
    assert scan.setup == SETUP_BUILD  # setup.py builds torch.utils.cpp_extension's CUDAExtension
    assert {op.name: op.languages for op in scan.ops} == {
        "neighbors_cuda_brute": ("cuda",),
        "neighbors_cuda_cell": ("cuda",),
        "neighbors_cuda_shared": ("cuda",),
    }
    # benchmarks/neighbors.py times with CUDA events, a form init does not read
    assert scan.benchmarks == ()


def test_the_onboarded_policy_pairs_each_cuda_kernel_with_its_triton_rewrite(repo: Path) -> None:
    base = gitutil.add_worktree(repo, repo.parent / "base", "kr-base")
    policy = load_policy(base).policy
    assert policy.setup is not None and policy.setup.command == SETUP_BUILD
    lines = change_lines(analyze_repo(repo, "kr-base", "kr-head"))
    found = {(c.kernel, c.kind, c.old_language, c.new_language) for c in lines}
    assert ("neighbors_brute", "rewrite", "CUDA", "Triton") in found
    assert ("neighbors_cell", "rewrite", "CUDA", "Triton") in found
    # paired by role through the op's strategy choice: the one Triton brute kernel does the
    # shared kernel's work too (strategy "shared" is gone; "brute" took it at 32768 atoms or
    # more), as the corpus's label of this pull request says (tests/data/real_prs/torchmd-*)
    brute = next(c for c in lines if c.kernel == "neighbors_brute")
    assert {"forward_kernel_brute", "add_self_kernel", "forward_kernel_shared"} <= set(
        brute.old_functions
    )
    assert "torchmdnet/extensions/neighbors/neighbors_cuda_shared.cuh" in brute.old_paths
    assert (
        "traverseCellList" in next(c for c in lines if c.kernel == "neighbors_cell").old_functions
    )
    assert all(c.old_kernel_kept is False for c in lines if c.kind == "rewrite")
