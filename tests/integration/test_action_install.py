"""The action's install step (its first ``run:`` block, taken from action.yml as the runner runs
it) on a runner whose ``python3`` is externally managed (PEP 668), as on current GitHub images:
a Python of its own prefix, not a virtual environment, with an ``EXTERNALLY-MANAGED`` file in
its standard library, which makes pip refuse to install into it. The step installs into a
virtual environment of its own and hands its ``bin`` folder to the next step.

The install builds kernel-review from a copy of this checkout and takes its dependencies from
the package index, as scripts/setup does."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.action_yml import ACTION, run_blocks
from tests.source_copy import copy_source

MARKER = "[externally-managed]\nError=this Python is the system's: install into a virtual environment\n"  # fmt: skip
STDLIB = Path(sysconfig.get_paths()["stdlib"])
VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _system_python(root: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A Python installed at ``root`` as a distribution installs one: this interpreter's binary
    and its standard library (linked entry by entry, less ``without``), pip in its
    site-packages, and the EXTERNALLY-MANAGED marker. Its bin folder."""
    lib = root / "lib" / VERSION
    (lib / "site-packages").mkdir(parents=True)
    for entry in STDLIB.iterdir():
        if entry.name not in ("site-packages", *without):
            (lib / entry.name).symlink_to(entry)
    for entry in (STDLIB / "site-packages").glob("pip*"):
        (lib / "site-packages" / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text(MARKER, encoding="utf-8")
    (root / "bin").mkdir()
    real = Path(sys._base_executable).resolve()  # type: ignore[attr-defined]
    (root / "bin" / "python3").write_bytes(real.read_bytes())
    (root / "bin" / "python3").chmod(0o755)
    return root / "bin"


def _env(bin_dir: Path, tmp: Path, **extra: str) -> dict[str, str]:
    keep = ("HOME", "LANG", "SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CACHE_DIR", "XDG_CACHE_HOME")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        PATH=f"{bin_dir}:/usr/bin:/bin", RUNNER_TEMP=str(tmp), GITHUB_OUTPUT=str(tmp / "out")
    )
    return {**env, **extra}


def _install_step(bin_dir: Path, tmp: Path, action_path: Path) -> subprocess.CompletedProcess:
    script = run_blocks(ACTION)[0]
    assert "pip install" in script  # the install step, first in the action
    env = _env(bin_dir, tmp, ACTION_PATH=str(action_path), INPUT_INSTALL="", INPUT_MODE="report")
    return subprocess.run(
        ["bash", "-c", script], cwd=tmp, env=env, capture_output=True, text=True, timeout=900
    )


def test_the_stand_in_refuses_pip_as_a_managed_python_does(tmp_path: Path) -> None:
    bin_dir = _system_python(tmp_path / "python")
    probe = subprocess.run(
        ["python3", "-I", "-c", "import sys; print(sys.prefix == sys.base_prefix, sys.prefix)"],
        env=_env(bin_dir, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.split() == ["True", str(tmp_path / "python")]  # no virtual environment
    # the install line the action had before: refused
    old = subprocess.run(
        ["python3", "-I", "-m", "pip", "install", "--quiet", "--no-index", "kernel-review"],
        env=_env(bin_dir, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert old.returncode != 0 and "externally-managed-environment" in old.stderr


@pytest.mark.slow
def test_the_install_step_installs_into_its_own_environment(tmp_path: Path) -> None:
    bin_dir = _system_python(tmp_path / "python")
    source = copy_source(tmp_path / "action")
    runner = tmp_path / "runner"
    runner.mkdir()
    proc = _install_step(bin_dir, runner, source)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = (runner / "out").read_text().splitlines()
    assert line == f"bin={runner}/kernel-review-venv/bin"
    kr = Path(line.split("=", 1)[1]) / "kernel-review"
    version = subprocess.run(
        [str(kr), "--version"], capture_output=True, text=True, timeout=120, check=True
    )
    assert version.stdout.split()[0] == "kernel-review"
    # nothing went into the system Python
    system = tmp_path / "python" / "lib" / VERSION / "site-packages"
    assert {p.name for p in system.iterdir()} == {p.name for p in (STDLIB / "site-packages").glob("pip*")}  # fmt: skip


def test_a_python_that_cannot_make_a_virtual_environment_is_told_what_to_install(
    tmp_path: Path,
) -> None:
    # Debian and Ubuntu ship venv's ensurepip in a package of its own (python3-venv)
    bin_dir = _system_python(tmp_path / "python", without=("ensurepip",))
    runner = tmp_path / "runner"
    runner.mkdir()
    proc = _install_step(bin_dir, runner, tmp_path / "unused")
    assert proc.returncode == 1
    assert "::error title=kernel-review::python3 cannot make a virtual environment" in proc.stdout
    assert "apt-get install python3-venv" in proc.stdout and "actions/setup-python" in proc.stdout
    assert not (runner / "out").exists()
