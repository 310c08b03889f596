"""The fixture repository: two real commits, a policy, and entry points that import on each side."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import FixtureError
from bot.gitutil import add_worktree, git, list_files, rev_parse, show_file
from kernels_fixture import build_repo
from kernels_fixture.build_repo import CHANGED_FILES, KERNELS, FixtureRepo, build_fixture_repo
from tests.interpreted import Interpreter, Ran
from tests.paths import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

VECTOR_ADD_CXX = {
    "toyops/csrc/vector_add.cu",
    "toyops/csrc/vector_add.hip",
    "toyops/csrc/vector_add_binding.cpp",
}


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> FixtureRepo:
    return build_fixture_repo(tmp_path_factory.mktemp("fixture") / "toyops")


@pytest.fixture(scope="module")
def worktrees(
    fixture_repo: FixtureRepo, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("worktrees")
    return {
        "base": add_worktree(fixture_repo.path, root / "base", fixture_repo.base_sha),
        "head": add_worktree(fixture_repo.path, root / "head", fixture_repo.head_sha),
    }


def run_in(interpreter: Interpreter, worktree: Path, code: str, **env: str) -> Ran:
    """Run ``code`` under the Triton interpreter with the worktree's ``toyops`` importable, as the
    bot's workers would."""
    return interpreter.run(code, cwd=worktree, path=(worktree,), **env)


# --- the two commits -----------------------------------------------------------------------------


def test_base_and_head_are_two_commits_on_their_branches(fixture_repo: FixtureRepo) -> None:
    repo = fixture_repo.path
    assert re.fullmatch(r"[0-9a-f]{40}", fixture_repo.base_sha)
    assert rev_parse(repo, "main") == fixture_repo.base_sha
    assert rev_parse(repo, "triton-rewrite") == fixture_repo.head_sha
    assert rev_parse(repo, f"{fixture_repo.head_sha}^") == fixture_repo.base_sha
    assert git(repo, "status", "--porcelain") == ""
    subject = git(repo, "log", "-1", "--format=%s", fixture_repo.head_sha).strip()
    assert "Triton" in subject


def test_diff_touches_exactly_the_rewritten_files(fixture_repo: FixtureRepo) -> None:
    out = git(
        fixture_repo.path,
        "diff",
        "--name-status",
        "--no-renames",
        fixture_repo.base_sha,
        fixture_repo.head_sha,
    )
    changed = dict(reversed(line.split("\t", 1)) for line in out.splitlines())
    assert changed == {
        "README.md": "M",
        "pyproject.toml": "M",
        "toyops/matmul.py": "M",
        "toyops/softmax.py": "M",
        "toyops/vector_add.py": "M",
        **dict.fromkeys(VECTOR_ADD_CXX, "D"),
    }
    assert changed == CHANGED_FILES
    # Every kernel's changed paths are in the diff, and every changed toyops file has a kernel.
    kernel_paths = {p for k in KERNELS for p in k.changed_paths}
    assert kernel_paths == {p for p in changed if p.startswith("toyops/")}


def test_head_deletes_vector_add_cxx_and_keeps_softmax_behind_a_flag(
    fixture_repo: FixtureRepo,
) -> None:
    repo, base, head = fixture_repo.path, fixture_repo.base_sha, fixture_repo.head_sha
    base_files, head_files = set(list_files(repo, base)), set(list_files(repo, head))
    assert base_files >= VECTOR_ADD_CXX
    assert not VECTOR_ADD_CXX & head_files
    for kept in ("softmax.cu", "softmax.hip", "softmax_binding.cpp", "matmul.cu", "matmul.hip"):
        assert f"toyops/csrc/{kept}" in base_files & head_files

    base_softmax = show_file(repo, base, "toyops/softmax.py") or ""
    head_softmax = show_file(repo, head, "toyops/softmax.py") or ""
    assert '_cext.call("softmax"' in base_softmax and "@triton.jit" not in base_softmax
    assert "@triton.jit" in head_softmax
    assert "TOYOPS_SOFTMAX_IMPL" in head_softmax
    assert re.search(r"#.*[Rr]ollback for one release", head_softmax)
    assert '_cext.call("softmax"' in head_softmax

    base_add = show_file(repo, base, "toyops/vector_add.py") or ""
    head_add = show_file(repo, head, "toyops/vector_add.py") or ""
    assert '_cext.call("vector_add"' in base_add and "@triton.jit" not in base_add
    assert "@triton.jit" in head_add and "_cext" not in head_add


def test_matmul_changes_only_its_autotune_configs(fixture_repo: FixtureRepo) -> None:
    repo = fixture_repo.path
    diff = git(
        repo, "diff", "-U0", fixture_repo.base_sha, fixture_repo.head_sha, "--", "toyops/matmul.py"
    )
    changed = [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed
    assert all(
        re.search(r"BLOCK_SIZE_|num_stages|num_warps|triton\.Config|\),|#", line)
        for line in changed
    ), changed
    head_text = show_file(repo, fixture_repo.head_sha, "toyops/matmul.py") or ""
    base_text = show_file(repo, fixture_repo.base_sha, "toyops/matmul.py") or ""
    assert build_repo.base_matmul_source(head_text) == base_text
    assert '"BLOCK_SIZE_K": 32' in base_text and '"BLOCK_SIZE_K": 32' not in head_text
    # Both sides keep the separate AMD list.
    assert "AMD_CONFIGS" in base_text and "AMD_CONFIGS" in head_text


def test_head_pins_triton_and_torch(fixture_repo: FixtureRepo) -> None:
    repo = fixture_repo.path
    base = tomllib.loads(show_file(repo, fixture_repo.base_sha, "pyproject.toml") or "")
    head = tomllib.loads(show_file(repo, fixture_repo.head_sha, "pyproject.toml") or "")
    assert "triton" in base["project"]["dependencies"]
    assert "torch" in base["project"]["dependencies"]
    assert "triton>=3.6,<3.7" in head["project"]["dependencies"]
    assert "torch>=2.4" in head["project"]["dependencies"]


def test_builds_are_reproducible(fixture_repo: FixtureRepo, tmp_path: Path) -> None:
    again = build_fixture_repo(tmp_path / "again")
    assert (again.base_sha, again.head_sha) == (fixture_repo.base_sha, fixture_repo.head_sha)


def test_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    with pytest.raises(FixtureError) as info:
        build_fixture_repo(tmp_path)
    assert "not an empty folder" in info.value.message
    assert info.value.hint


def test_base_matmul_needs_an_inline_config_list() -> None:
    with pytest.raises(FixtureError, match=r"triton\.autotune"):
        build_repo.base_matmul_source("CONFIGS = []\n")


def test_command_line_prints_the_path_and_shas(tmp_path: Path) -> None:
    dest = tmp_path / "repo"
    proc = subprocess.run(
        [sys.executable, "-m", "kernels_fixture.build_repo", str(dest), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["path"] == str(dest.resolve())
    assert data["base_sha"] == rev_parse(dest, "main")
    assert data["head_sha"] == rev_parse(dest, "triton-rewrite")

    again = subprocess.run(
        [sys.executable, "-m", "kernels_fixture.build_repo", str(dest)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2
    assert "not an empty folder" in again.stderr and "Traceback" not in again.stderr


# --- the policy ----------------------------------------------------------------------------------


def test_policy_names_the_three_kernels_with_served_shapes(fixture_repo: FixtureRepo) -> None:
    repo = fixture_repo.path
    text = show_file(repo, fixture_repo.base_sha, ".github/kernel-review.toml")
    assert text is not None
    assert show_file(repo, fixture_repo.head_sha, ".github/kernel-review.toml") == text
    policy = tomllib.loads(text)
    assert policy["vendors"] == ["nvidia", "amd"]
    assert policy["owners"]
    assert policy["deployment"] == {"kind": "cli", "first_call_budget_ms": 3000}
    kernels = {k["name"]: k for k in policy["kernels"]}
    assert set(kernels) == {"vector_add", "softmax", "matmul"}
    both = set(list_files(repo, fixture_repo.base_sha)) | set(
        list_files(repo, fixture_repo.head_sha)
    )
    for story in KERNELS:
        kernel = kernels[story.name]
        assert kernel["bench"] == story.bench
        # The paths name the Triton source and the CUDA and HIP ones, and all exist on a side.
        assert {Path(p).suffix for p in kernel["paths"]} >= {".py", ".cu", ".hip"}
        assert set(kernel["paths"]) <= both
        assert set(story.changed_paths) <= set(kernel["paths"])
        shapes = [s["shape"] if isinstance(s, dict) else s for s in kernel["shapes"]]
        assert any(isinstance(s, dict) and s["weight"] > 1 for s in kernel["shapes"])
        # Small and ragged shapes are served, not only the big powers of two.
        assert any(min(s) == 1 or max(s) <= 4096 for s in shapes)
        assert any(any(d % 16 for d in s) for s in shapes)


def test_policy_passes_the_bots_own_validation(fixture_repo: FixtureRepo) -> None:
    policy_module = pytest.importorskip("bot.policy.load")
    text = show_file(fixture_repo.path, fixture_repo.base_sha, ".github/kernel-review.toml")
    policy = policy_module.parse_policy(text or "", source=".github/kernel-review.toml")
    assert [k.name for k in policy.kernels] == ["vector_add", "softmax", "matmul"]
    assert policy.deployment.kind == "cli"
    assert [k.name for k in policy.kernels_for_path("toyops/csrc/vector_add.hip")] == ["vector_add"]
    assert [k.name for k in policy.kernels_for_path("toyops/matmul.py")] == ["matmul"]


def test_bench_entry_points_exist_with_the_same_names_on_both_sides(
    fixture_repo: FixtureRepo,
) -> None:
    repo = fixture_repo.path
    policy = tomllib.loads(
        show_file(repo, fixture_repo.base_sha, ".github/kernel-review.toml") or ""
    )
    wanted = {k["bench"].split(":")[1] for k in policy["kernels"]}
    wanted |= {k["baseline"].split(":")[1] for k in policy["kernels"] if "baseline" in k}
    for sha in (fixture_repo.base_sha, fixture_repo.head_sha):
        tree = ast.parse(show_file(repo, sha, "toyops/bench.py") or "")
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert wanted <= defined
    assert show_file(repo, fixture_repo.base_sha, "toyops/bench.py") == show_file(
        repo, fixture_repo.head_sha, "toyops/bench.py"
    )


# --- importing each side, as the workers do ------------------------------------------------------


def test_head_entries_run_triton_on_the_cpu(
    worktrees: dict[str, Path], interpreter: Interpreter
) -> None:
    proc = run_in(
        interpreter,
        worktrees["head"],
        """
        from pathlib import Path
        import torch
        import toyops.bench as bench
        assert Path(bench.__file__).resolve().is_relative_to(Path.cwd().resolve())
        for name, shape, dtype in (("vector_add", (1000,), "float32"),
                                   ("softmax", (7, 33), "float16"),
                                   ("matmul", (17, 33, 65), "float16")):
            case = getattr(bench, name)(shape, dtype, device="cpu", seed=1)
            torch.testing.assert_close(case["fn"](), case["reference"](), atol=case["atol"], rtol=case["rtol"])
            print(name, "ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["vector_add", "ok", "softmax", "ok", "matmul", "ok"]


def test_base_entries_call_the_cxx_kernels(
    worktrees: dict[str, Path], interpreter: Interpreter
) -> None:
    proc = run_in(
        interpreter,
        worktrees["base"],
        """
        import torch
        import toyops.bench as bench
        for name, shape, dtype in (("vector_add", (1000,), "float32"), ("softmax", (7, 33), "float32")):
            case = getattr(bench, name)(shape, dtype, device="cpu")
            assert case["reference"]().shape == case["inputs"][0].shape
            try:
                case["fn"]()
            except RuntimeError as exc:
                print(name, "needs a GPU:", "CUDA or ROCm GPU" in str(exc))
        case = bench.matmul((17, 33, 65), "float16", device="cpu")
        torch.testing.assert_close(case["fn"](), case["reference"](), atol=case["atol"], rtol=case["rtol"])
        print("matmul ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "vector_add needs a GPU: True",
        "softmax needs a GPU: True",
        "matmul ok",
    ]


def test_head_softmax_flag_selects_the_cxx_kernel(
    worktrees: dict[str, Path], interpreter: Interpreter
) -> None:
    code = """
        import toyops.bench as bench
        try:
            bench.softmax((7, 33), "float32", device="cpu")["fn"]()
            print("triton")
        except RuntimeError as exc:
            print("cxx" if "hand-written softmax" in str(exc) else exc)
        """
    # Unset, the Triton kernel runs (test_head_entries_run_triton_on_the_cpu).
    flagged = run_in(interpreter, worktrees["head"], code, TOYOPS_SOFTMAX_IMPL="cuda")
    assert flagged.stdout.strip() == "cxx", flagged.stderr
    wrong = run_in(interpreter, worktrees["head"], code, TOYOPS_SOFTMAX_IMPL="rocm")
    assert wrong.returncode != 0
    assert "TOYOPS_SOFTMAX_IMPL must be 'triton' or 'cuda'" in wrong.stderr
