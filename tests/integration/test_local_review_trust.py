"""``kernel-review review --repo`` on a branch nobody has read yet: by default nothing of the
reviewed repository runs (its modules are not imported, its bench entry points not called), the
compiler report says which flag cross-compiles its Triton kernels, and the command says what it
did; ``--run-repo-code`` runs them, and says so.

The repository's module writes a marker file when it is imported: the marker is the proof."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bot import gitutil
from bot.cli import main

POLICY = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[compiler]
nvidia_targets = ["sm_90"]

[[kernels]]
name = "scale"
bench = "ops:scale"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[1024]]
"""

OPS = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")  # what a hostile branch would do at import

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale(shape, dtype, *, device="cpu", seed=0):
    raise RuntimeError("this bench entry point is never needed here")
"""


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, str, Path]:
    """A repository whose kernel module writes ``marker`` at import; base..head changes the
    kernel, so the plan asks for the compiler report."""
    marker = tmp_path / "imported.txt"
    repo = tmp_path / "repo"
    gitutil.init_repo(repo)
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    ops = textwrap.dedent(OPS.format(marker=str(marker)))
    (repo / "ops.py").write_text(ops)
    base = gitutil.commit_all(repo, "base")
    (repo / "ops.py").write_text(ops.replace("* 2,", "* 3,"))
    gitutil.commit_all(repo, "head")
    return repo, base, marker


def test_a_local_review_runs_none_of_the_repositorys_code_unless_told(
    hostile: tuple[Path, str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path / "cache"))
    repo, base, marker = hostile
    out = tmp_path / "review.md"
    args = ["review", "--repo", str(repo), "--base", base, "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert not marker.exists(), "the reviewed repository's module was imported"
    # the command says what it did, and how to run the rest
    assert "the reviewed repository's code was not run" in err
    assert "--run-repo-code" in err
    # the comment's compiler section says it was not run, and which flag runs it
    markdown = out.read_text()
    assert "--run-repo-code" in markdown
    assert "imports the reviewed repository" in markdown

    assert main([*args, "--run-repo-code"]) == 0
    err = capsys.readouterr().err
    assert marker.read_text() == "imported"  # the compiler report imported it
    assert "the reviewed repository's code runs on this machine (--run-repo-code)" in err
    assert "imports the reviewed repository" not in out.read_text()


def test_the_flag_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["review", "--help"])
    assert "--run-repo-code" in capsys.readouterr().out
