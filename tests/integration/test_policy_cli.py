"""``kernel-review policy check``: the effective policy when valid, every problem when not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.cli import main
from tests.paths import ROOT
from tests.unit.test_policy import FULL, MINIMAL, as_pyproject, write


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["policy", "check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_policy_prints_the_effective_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, ".github/kernel-review.toml", MINIMAL)
    code, out, err = run(capsys, str(tmp_path))
    assert (code, err) == (0, "")
    assert out.startswith(".github/kernel-review.toml: valid\n")
    # Defaults the file does not state are shown filled in.
    assert "tolerance    3% (head/base time up to 1.03 counts as the same)" in out
    assert "vendors      nvidia, amd" in out
    assert "deployment   long-lived, no first-call budget" in out
    assert "limits       64 shapes x dtypes per kernel, 1,073,741,824 elements per tensor" in out
    assert "compiler     nvidia sm_90; amd gfx942, gfx90a" in out
    assert (
        "github       /bench needs write permission, /bench accept maintain; merge gate: check"
        in out
    )
    assert "  add\n    bench      ops.bench:add\n    baseline   (none)" in out
    assert "    shapes     1 x 1 dtypes = 1 measurements (limit 64)" in out
    assert "      98432" in out and "weight 1" in out


def test_full_policy_text_shows_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "policy.toml", FULL)
    code, out, _ = run(capsys, str(path))
    assert code == 0
    assert "deployment   cli, first-call budget 3000 ms" in out
    assert "tolerance  5% (overrides the global 3%)" in out
    assert "kernels (2)" in out
    assert "4096 x 4096" in out and "weight 10" in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, ".github/kernel-review.toml", FULL)
    code, out, _ = run(capsys, str(tmp_path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["valid"] is True and doc["table"] is None
    assert doc["path"] == str(tmp_path / ".github" / "kernel-review.toml")
    policy = doc["policy"]
    assert policy["deployment"] == {"kind": "cli", "first_call_budget_ms": 3000.0}
    assert policy["kernels"][0]["shapes"][1] == {"shape": [4096, 4096], "weight": 10.0}
    assert policy["limits"]["max_gpu_seconds"] == 600


def test_pyproject_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "pyproject.toml", as_pyproject(MINIMAL))
    code, out, _ = run(capsys, str(path), "--json")
    assert code == 0
    assert json.loads(out)["table"] == "tool.kernel-review"
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 0 and out.startswith("pyproject.toml [tool.kernel-review]: valid")


def test_default_path_is_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, ".github/kernel-review.toml", MINIMAL)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys)
    assert code == 0 and "  add" in out


def test_invalid_policy_exits_2_with_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "tolerence = 0.03\n" + MINIMAL.replace('"float32"', '"fp16"')
    write(tmp_path, ".github/kernel-review.toml", text)
    code, out, err = run(capsys, str(tmp_path))
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0] == "kernel-review: error: policy .github/kernel-review.toml has 2 problems:"
    assert lines[1].startswith(".github/kernel-review.toml:1:1: tolerence: unknown key")
    assert "did you mean 'tolerance'?" in lines[1]
    assert lines[2].startswith(".github/kernel-review.toml:9:11: kernels[0].dtypes[0]: ")
    assert "did you mean 'float16'?" in lines[2]
    assert "Traceback" not in err


def test_invalid_policy_json_lists_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "p.toml", "tolerance = 2\n" + MINIMAL)
    code, out, _ = run(capsys, str(path), "--json")
    assert code == 2
    doc = json.loads(out)
    assert doc["valid"] is False
    [problem] = doc["problems"]
    assert {k: problem[k] for k in ("line", "column", "key")} == {
        "line": 1,
        "column": 13,
        "key": "tolerance",
    }
    assert problem["file"] == str(path) and "must be <= 1" in problem["message"]


def test_syntax_error_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "p.toml", MINIMAL.replace('"long-lived"', "long-lived"))
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert f"{path}:2:8: TOML syntax error: Invalid value" in err


def test_no_policy_says_where_it_looked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(tmp_path))
    assert (code, out) == (2, "")
    assert "looked for .github/kernel-review.toml and for a [tool.kernel-review] table" in err
    assert "[[kernels]]" in err  # the example to paste


@pytest.mark.parametrize(
    ("name", "wrong"), [("missing.toml", "does not exist"), ("policy.yaml", "not a .toml file")]
)
def test_bad_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, wrong: str
) -> None:
    if name.endswith(".yaml"):
        write(tmp_path, name, "tolerance: 0.03\n")
    code, _, err = run(capsys, str(tmp_path / name))
    assert code == 2 and wrong in err


def test_policy_without_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy"]) == 2
    assert "check" in capsys.readouterr().out


DOC = ROOT / "docs" / "policy.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_every_policy_in_the_docs_is_valid_except_the_wrong_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _blocks("toml")
    assert len(blocks) == 5
    for index, block in enumerate(blocks):
        name = "pyproject.toml" if block.startswith("[tool.kernel-review]") else "policy.toml"
        path = write(tmp_path / str(index), name, block)
        code, _, err = run(capsys, str(path))
        assert code == (2 if block.startswith("# wrong on purpose") else 0), err


def test_the_error_example_in_the_docs_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [wrong] = [b for b in _blocks("toml") if b.startswith("# wrong on purpose")]
    [shown] = _blocks("text")
    write(tmp_path, ".github/kernel-review.toml", wrong)
    code, _, err = run(capsys, str(tmp_path))
    assert code == 2 and err == shown
