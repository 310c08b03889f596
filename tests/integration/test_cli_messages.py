"""The command line never misleads: each user mistake gets a message that says what is wrong
(never "internal error", never pydantic's text), and the exit codes mean what the help says.

Every test runs the real command line (``main`` or a subprocess) on real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot import gitutil
from bot.cli import main
from tests.paths import ROOT

RAW_MARKUP = ("<details>", "<summary>", "<sub>", "<br>", "&gt;", "&lt;", "&#64;", "\\_", "\u200b")

BENCH = """
def broken(shape, dtype, *, device="cpu", seed=0):
    raise RuntimeError("this kernel runs on a GPU only")
"""

POLICY = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[[kernels]]
name = "broken"
bench = "ops:broken"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[1000]]
"""


def _err_of(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert "validation error" not in err and "pydantic" not in err
    return err


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory):
    from kernels_fixture.build_repo import build_fixture_repo

    return build_fixture_repo(tmp_path_factory.mktemp("fx") / "toyops")


@pytest.fixture
def broken_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "broken"
    gitutil.init_repo(repo)
    (repo / "ops.py").write_text(textwrap.dedent(BENCH))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    gitutil.commit_all(repo, "ops")
    return repo


# --- review --repo: the comment's review of a local range, readable in a terminal -------------


def test_local_review_prints_plain_text_and_writes_the_markdown(
    fixture_repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "review.md"
    args = ["review", "--repo", str(fixture_repo.path), "--base", fixture_repo.base_sha]
    code = main([*args, "--head", fixture_repo.head_sha, "--no-compile", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "Kernel review: Approve with conditions" in text
    # a table, aligned in columns (the pyproject's torch and triton pins are rows of it too)
    rows = [line for line in text.splitlines() if line.startswith(("vector_add ", "triton "))]
    assert len(rows) == 2 and "rewrite CUDA + HIP → Triton" in rows[0], rows
    assert rows[0].index("rewrite") == rows[1].index("toolchain")
    # what is missing first (the owner, present, is the job summary's: two lines a condition)
    assert "torch>=2.4" in text and "perf gate: no workflow runs kernel-review" in text
    assert not [m for m in RAW_MARKUP if m in text]
    markdown = out.read_text()
    assert "<details>" in markdown and "vector\\_add" in markdown  # the comment, as posted
    assert "Local review" in markdown


def test_demo_prints_plain_text_and_no_folder_it_deletes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--no-compile"]) == 0
    captured = capsys.readouterr()
    assert "Kernel review:" in captured.out
    assert not [m for m in RAW_MARKUP if m in captured.out]
    assert "kernel-review-demo-" not in captured.err  # the temporary folder is not named
    assert "removed at the end" in captured.err


def test_review_without_a_base_says_what_it_needs_and_names_the_workflow_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["review"]) == 2
    err = _err_of(capsys)
    assert "a local review needs --base" in err and "--repo . --base origin/main" in err
    assert "kernel-review job MODE" in err


def test_measure_mode_outside_actions_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith(("INPUT_", "GITHUB_")):
            monkeypatch.delenv(name)
    assert main(["job", "measure"]) == 2
    err = _err_of(capsys)
    assert "None" not in err and "INPUT_VENDOR" in err and "review --repo" in err


# --- --repo that is not a repository ----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["bench", "--device", "cpu"],
        ["analyze", "--base", "HEAD", "--head", "HEAD"],
        ["review", "--base", "HEAD"],
        ["compiler-report"],
        ["first-call", "--device", "cpu"],
    ],
)
def test_a_missing_repo_is_named(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nope = tmp_path / "nope"
    assert main([*command, "--repo", str(nope)]) == 2
    err = _err_of(capsys)
    assert f"{nope}: no such folder" in err
    assert "[[kernels]]" not in err  # no policy template for a path that is not there


def test_a_folder_that_is_not_a_repository_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--repo", str(tmp_path), "--device", "cpu"]) == 2
    assert "is not a git repository" in _err_of(capsys)


# --- bench ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--engine-option", "max_rounds=2", "max_rounds: must be 3 or more"),
        ("--engine-option", "max_rounds=0", "max_rounds: must be 3 or more"),
        ("--engine-option", "added_shapes=few", "added_shapes: 'few' is not on or off"),
        ("--engine-option", "block_ms=-1", "block_ms: must be more than 0 ms"),
        ("--engine-option", "block_ms=0", "block_ms: must be more than 0 ms"),
        ("--engine-option", "block_ms=fast", "block_ms: 'fast' is not a number"),
    ],
)
def test_bench_values_out_of_range_are_refused(
    broken_repo: Path, option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--repo", str(broken_repo), "--device", "cpu", option, value])
    assert exc.value.code == 2
    err = _err_of(capsys)
    assert f"argument {option}: {message}" in err


def test_bench_without_a_policy_names_the_commit_not_a_worktree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "nopolicy"
    gitutil.init_repo(repo)
    (repo / "README.md").write_text("no policy here\n")
    sha = gitutil.commit_all(repo, "readme")
    assert main(["bench", "--repo", str(repo), "--device", "cpu", "--base", sha]) == 2
    err = _err_of(capsys)
    assert f"no policy at the base commit {sha[:12]}" in err
    assert "kernel-review init" in err
    assert "kernel-review-bench-" not in err and "/base/" not in err


@pytest.mark.slow
def test_bench_exits_5_when_nothing_could_be_measured(
    broken_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    args = ["bench", "--repo", str(broken_repo), "--device", "cpu"]
    shorter = ["--engine-option", "added_shapes=off", "--engine-option", "max_rounds=3"]
    assert main([*args, *shorter, "--out", str(out)]) == 5
    err = _err_of(capsys)
    assert "1 of 1 case not measured" in err
    # the same broken code at base and head: each side failed on its own
    assert "error (both sides): 1 case; first, broken float32 1000:" in err
    assert "this kernel runs on a GPU only" in err
    assert out.is_file() and not list(broken_repo.glob("*.json*"))


def test_a_cpu_bench_on_cuda_only_base_kernels_says_so_once(fixture_repo) -> None:
    from bot.plan import compiled_only_bases
    from bot.policy.load import find_policy
    from bot.revision import GitRevision
    from checks.sweep.cli import planned_kernels

    repo = Path(fixture_repo.path)
    found = find_policy(GitRevision(repo, fixture_repo.base_sha))
    assert found is not None
    kernels = planned_kernels(
        found[0], None, None, base_sha=fixture_repo.base_sha, head_sha=fixture_repo.head_sha
    )
    lines = compiled_only_bases(repo, fixture_repo.base_sha, kernels)
    assert len(lines) == 1  # once, for every kernel it applies to
    # matmul was Triton already at base (the pull request retunes it)
    assert "the base side of vector_add, softmax has only CUDA/HIP kernels" in lines[0]
    # at head they are Triton: nothing to say
    assert compiled_only_bases(repo, fixture_repo.head_sha, kernels) == []


# --- first-call -------------------------------------------------------------------------------


def test_first_call_refuses_an_unknown_device_and_target(
    fixture_repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = str(fixture_repo.path)
    with pytest.raises(SystemExit) as exc:
        main(["first-call", "--repo", repo, "--device", "tpu"])
    assert exc.value.code == 2
    assert "invalid choice: 'tpu'" in _err_of(capsys)
    assert main(["first-call", "--repo", repo, "--device", "cpu", "--target", "nosuch"]) == 2
    assert "--target nosuch: not a target this version knows" in _err_of(capsys)


def test_first_call_without_torch_says_so(fixture_repo) -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # import torch raises ImportError, as when not installed\n"
        "from bot.cli import main\n"
        f"sys.exit(main(['first-call', '--repo', {str(fixture_repo.path)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "torch is not installed here" in done.stderr
    assert "internal error" not in done.stderr
