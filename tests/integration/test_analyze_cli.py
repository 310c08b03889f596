"""``kernel-review analyze``: a table or JSON for a diff file, stdin or a repository."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from bot.analysis.model import Analysis
from bot.cli import main
from tests.integration.test_classify import DIFFS, TOY, build_repo
from tests.paths import ROOT

POLICY_FILE = str(TOY / "base/.github/kernel-review.toml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["analyze", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_for_a_diff_file(capsys):
    code, out, err = run(capsys, "--diff", str(DIFFS / "toy_rewrite.diff"), "--policy", POLICY_FILE)
    assert (code, err) == (0, "")
    assert out.startswith("4 kernel changes in 6 changed files\n")
    assert "from diff context only" in out
    assert "rewrite  vector_add_kernel" in out
    assert "cuda -> triton" in out
    assert "old: toyops/csrc/vector_add.cu:6-11\n" in out
    assert "old kernel deleted from toyops/csrc/vector_add.cu" in out
    assert "Part A: vector_add_kernel (cuda -> triton)" in out
    assert "Lines that exist only to check errors   3" in out
    assert "Kernels to measure: matmul, softmax, vector_add" in out


def test_json_round_trips(capsys):
    code, out, _ = run(capsys, "--diff", str(DIFFS / "binary_patch.diff"), "--json")
    assert code == 0
    analysis = Analysis.model_validate_json(out)
    assert [s.reason for s in analysis.skipped] == ["binary file"]
    assert [(c.kind, c.name) for c in analysis.changes] == [("body", "scale_kernel")]


def test_diff_from_stdin(capsys, monkeypatch):
    data = (DIFFS / "mode_only.diff").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "--diff", "-")
    assert code == 0
    assert "scripts/build.sh: mode change only (100644 -> 100755)" in out


def test_repo_uses_the_policy_at_base(tmp_path, capsys):
    repo, base, head = build_repo(tmp_path / "toy", TOY / "base", TOY / "head")
    code, out, err = run(capsys, "--repo", str(repo), "--base", base, "--head", head)
    assert (code, err) == (0, "")
    assert "from diff context only" not in out
    assert "old: toyops/csrc/softmax.cu:7-33, toyops/csrc/softmax.hip:15-41\n" in out
    assert "old kernel kept in toyops/csrc/softmax.cu, toyops/csrc/softmax.hip" in out
    assert "Part A: softmax_kernel (cuda+hip -> triton)" in out
    assert "Kernels to measure: matmul, softmax, vector_add" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--diff", "no/such.diff"], "no such file"),
        (["--diff", str(DIFFS / "malformed_short_hunk.diff")], "malformed diff: diff line 10"),
        (["--diff", str(DIFFS / "not_a_diff.diff")], "not a unified diff"),
        (
            ["--diff", str(DIFFS / "rename.diff"), "--base", "HEAD"],
            "--base and --head go with --repo",
        ),
        (["--repo", "."], "--repo needs both --base and --head"),
        (["--repo", "no/such/dir", "--base", "a", "--head", "b"], "no such folder"),
        (["--diff", str(DIFFS / "rename.diff"), "--policy", "no/such.toml"], "cannot read policy"),
    ],
)
def test_user_errors_are_messages_not_tracebacks(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert expected in err
    assert "hint:" in err and "Traceback" not in err
    assert out == ""


def test_bad_revision_in_a_repo(tmp_path, capsys):
    repo, base, _ = build_repo(tmp_path / "toy", TOY / "base", TOY / "head")
    code, _, err = run(capsys, "--repo", str(repo), "--base", base, "--head", "nope")
    assert code == 2 and "revision 'nope' does not exist" in err


def test_console_entry_point_runs_it():
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "analyze", "--diff", str(DIFFS / "hip_body.diff")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "body  softmax_kernel  hip" in proc.stdout


def test_policy_from_a_repository_folder(capsys):
    code, out, _ = run(
        capsys, "--diff", str(DIFFS / "tuning_matmul_configs.diff"), "--policy", str(TOY / "base")
    )
    assert code == 0
    assert "Kernels to measure: matmul" in out


def test_a_bad_policy_is_reported_with_its_line(tmp_path, capsys):
    bad = tmp_path / "kernel-review.toml"
    bad.write_text('tolerance = "loose"\n')
    code, _, err = run(capsys, "--diff", str(DIFFS / "rename.diff"), "--policy", str(bad))
    assert code == 2
    assert "kernel-review.toml:1" in err and "tolerance" in err


def test_a_file_past_the_kernel_cap_is_said_in_the_table(tmp_path, capsys):
    # a file of more jit functions than the analysis reads: the table says what was left unread
    from bot.analysis.model import MAX_PER_FILE
    from bot.gitutil import commit_all, init_repo
    from tests.integration.test_classify import _many_jit_functions

    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "k.py").write_text(_many_jit_functions(MAX_PER_FILE + 1, "pass"))
    base = commit_all(repo, "base")
    (repo / "pkg" / "k.py").write_text(_many_jit_functions(MAX_PER_FILE + 1, "return x + 1"))
    head = commit_all(repo, "head")
    code, out, _ = run(capsys, "--repo", str(repo), "--base", base, "--head", head)
    assert code == 0
    assert out.startswith(f"{MAX_PER_FILE} kernel changes in 1 changed file\n")
    assert (
        f"note: pkg/k.py has more than {MAX_PER_FILE} kernels: {MAX_PER_FILE} of them were "
        "read, the others not analysed\n"
    ) in out + "\n"
