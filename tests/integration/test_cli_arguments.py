"""Command-line values a user can get wrong are refused before any work starts, with a message
that says what is wrong and what to do, and exit code 2 (issue 43)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from bot import gitutil
from bot.cli import main
from bot.errors import UsageError
from checks.sweep import gpus

BENCH = """
def copy(shape, dtype, *, device="cpu", seed=0):
    raise RuntimeError("never called: the command line is refused first")
"""

POLICY = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[[kernels]]
name = "copy"
bench = "ops:copy"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[1000]]
"""


def _err_of(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "ops"
    gitutil.init_repo(root)
    (root / "ops.py").write_text(textwrap.dedent(BENCH))
    (root / ".github").mkdir()
    (root / ".github" / "kernel-review.toml").write_text(POLICY)
    gitutil.commit_all(root, "ops")
    return root


# --- bench --engine-option gpus= --------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "0,x", "-1", "1.5", ",", "0,,1 2"])
def test_bench_gpu_ids_must_be_non_negative_integers(
    repo: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--repo", str(repo), "--engine-option", f"gpus={value}"])
    assert exc.value.code == 2
    err = _err_of(capsys)
    assert "argument --engine-option: gpus:" in err
    assert "non-negative integers" in err and "e.g. gpus=0,1" in err


def test_bench_names_gpus_the_machine_does_not_have(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpus, "visible_gpus", lambda: ["0", "1"])
    assert main(["bench", "--repo", str(repo), "--engine-option", "gpus=1,7,9"]) == 2
    err = _err_of(capsys)
    assert "no GPU 7, 9 here" in err
    assert "this machine's GPUs are 0, 1" in err


def test_bench_gpus_on_a_machine_without_one_is_the_no_gpu_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpus, "visible_gpus", lambda: [])
    assert main(["bench", "--repo", str(repo), "--engine-option", "gpus=0"]) == 2
    err = _err_of(capsys)
    assert "no GPU 0 here: no GPU is visible to this process" in err
    assert "--device cpu" in err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("gpu=0", "'gpu' is not an engine option; the known keys: gpus, block_ms, crossover"),
        ("first_call_alone=off", "'first_call_alone' is not an engine option"),
        ("crossover", "'crossover' is not KEY=VALUE; the known keys: gpus,"),
        ("crossover=maybe", "crossover: 'maybe' is not on or off"),
        ("work_dir=", "work_dir: an empty folder name"),
    ],
)
def test_bench_engine_options_are_checked_and_the_known_keys_named(
    repo: Path, option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--repo", str(repo), "--engine-option", option])
    assert exc.value.code == 2
    assert f"argument --engine-option: {message}" in _err_of(capsys)


def test_bench_engine_option_given_twice_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--repo", str(repo), "--device", "cpu"]
    twice = ["--engine-option", "zygote=off", "--engine-option", "zygote=on"]
    assert main([*argv, *twice]) == 2
    assert "--engine-option zygote given more than once" in _err_of(capsys)


def test_bench_engine_options_are_read_as_the_engine_takes_them() -> None:
    from bot.cli import build_parser
    from checks.sweep.cli import EngineOptions

    words = ["crossover=off", "block-ms=2.5", "gpus=1,0,1"]
    args = build_parser("bench").parse_args(
        ["bench", *(w for text in words for w in ("--engine-option", text))]
    )
    engine = EngineOptions.given(args.engine_option)
    assert engine.crossover is False and engine.block_ms == 2.5 and engine.gpus == ("1", "0")
    assert engine.precompile is True and engine.zygote is True and engine.work_dir is None


# --- compiler-report / first-call --target ----------------------------------------------------


@pytest.mark.parametrize("command", [["compiler-report"], ["first-call", "--device", "cpu"]])
@pytest.mark.parametrize("target", ["sm_999", "gfx999", "nvidia"])
def test_an_unknown_target_is_a_usage_error_naming_the_known_ones(
    repo: Path, command: list[str], target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--repo", str(repo), "--target", target]) == 2
    err = _err_of(capsys)
    assert f"--target {target}: not a target this version knows" in err
    assert "sm_80" in err and "sm_90" in err and "gfx942" in err


def test_a_target_the_policy_names_is_accepted_though_untabled(repo: Path) -> None:
    from checks.compiler.cli import check_targets
    from checks.compiler.targets import known_target

    assert not known_target("sm_87")
    check_targets(["sm_90", "sm_87"], policy_targets=["sm_87"])  # no error
    with pytest.raises(UsageError, match="sm_87"):
        check_targets(["sm_87"], policy_targets=["sm_90"])


# --- compiler-report --engine-option jobs= -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "must be 1 or more (got 0)"), ("-2", "must be 1 or more (got -2)"),
     ("many", "'many' is not a whole number of processes")],
)  # fmt: skip
def test_jobs_below_one_is_refused(
    repo: Path, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compiler-report", "--repo", str(repo), "--engine-option", f"jobs={value}"])
    assert exc.value.code == 2
    assert f"argument --engine-option: jobs: {message}" in _err_of(capsys)


def test_first_call_reads_its_engine_option(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["first-call", "--repo", str(repo), "--engine-option", "time_distribution=maybe"])
    assert "argument --engine-option: time_distribution: 'maybe' is not on or off" in _err_of(
        capsys
    )


def test_compiler_report_names_its_known_engine_options(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["compiler-report", "--repo", str(repo), "--engine-option", "gpus=0"])
    assert "'gpus' is not an engine option; the known keys: jobs" in _err_of(capsys)


# --- --out / --json in a folder that does not exist -------------------------------------------


def _out_commands(repo: Path, out: Path) -> list[list[str]]:
    return [
        ["bench", "--repo", str(repo), "--device", "cpu", "--out", str(out)],
        ["review", "--repo", str(repo), "--base", "HEAD", "--no-compile", "--out", str(out)],
        ["compiler-report", "--repo", str(repo), "--json", str(out)],
        ["first-call", "--repo", str(repo), "--device", "cpu", "--json", str(out)],
        ["init", "--repo", str(repo), "--out", str(out)],
    ]


@pytest.mark.parametrize("which", range(5), ids=["bench", "review", "compiler", "first", "init"])
def test_an_output_in_a_missing_folder_is_refused_and_no_folder_made(
    repo: Path, tmp_path: Path, which: int, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "folder"
    out = missing / "out.json"
    command = _out_commands(repo, out)[which]
    option = command[-2]
    assert main(command) == 2
    err = _err_of(capsys)
    assert f"{option} {out}: the folder {missing} does not exist" in err
    assert f"mkdir -p {missing}" in err
    assert not (tmp_path / "no").exists()


def test_an_output_whose_folder_is_a_file_is_refused(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").write_text("a file, not a folder\n")
    out = tmp_path / "plain" / "out.md"
    assert main(["review", "--repo", str(repo), "--base", "HEAD", "--out", str(out)]) == 2
    assert f"--out {out}: {tmp_path / 'plain'} is not a folder" in _err_of(capsys)


# --- the light install: no torch ------------------------------------------------------------

TORCH_DISTS = ("torch", "functorch", "torchgen")
TORCH_BENCH = """
import torch


def copy(shape, dtype, *, device="cpu", seed=0):
    x = torch.ones(shape, dtype=getattr(torch, dtype), device=device)
    moved = 2 * x.numel() * x.element_size()
    return {"fn": x.clone, "bytes_moved": moved, "flops": 0, "reference": x.clone}
"""


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with every package of this one but torch: the light install
    (``pip install kernel-review``), as the measuring commands' own worker processes see it."""
    root = tmp_path_factory.mktemp("light") / "venv"
    subprocess.run(
        [getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", root],
        check=True,
        timeout=120,
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    theirs = Path(sysconfig.get_paths(vars={"base": str(root), "platbase": str(root)})["purelib"])
    for entry in ours.iterdir():
        if not entry.name.lower().startswith(TORCH_DISTS):
            (theirs / entry.name).symlink_to(entry)
    python = root / "bin" / "python"
    probe = "import importlib.util as u; print(u.find_spec('torch'), u.find_spec('bot'))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("None ") and "None" not in done.stdout[5:], done
    return python


@pytest.mark.parametrize(
    "command",
    [["bench", "--device", "cpu", "--engine-option", "added_shapes=off",
      "--engine-option", "max_rounds=3"],
     ["bench"],
     ["first-call", "--device", "cpu"]],
    ids=["bench-cpu", "bench-cuda", "first-call-cpu"],
)  # fmt: skip
def test_without_torch_a_measuring_command_says_so_once_and_measures_nothing(
    python_without_torch: Path, tmp_path: Path, command: list[str]
) -> None:
    repo = tmp_path / "ops"
    gitutil.init_repo(repo)
    (repo / "ops.py").write_text(textwrap.dedent(TORCH_BENCH))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    gitutil.commit_all(repo, "ops")
    out = tmp_path / "out.json"
    option = "--json" if command[0] == "first-call" else "--out"
    done = subprocess.run(
        [python_without_torch, "-m", "bot", *command, "--repo", str(repo), option, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "KERNEL_REVIEW_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # nothing printed as if measured
    assert done.stderr.count("\n") == 2, done.stderr  # the error and its hint
    assert f"kernel-review: error: torch is not installed here, so {command[0]}" in done.stderr
    assert "install kernel-review[gpu] or torch" in done.stderr
    assert "ModuleNotFoundError" not in done.stderr and not out.exists()
