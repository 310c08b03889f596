"""The built distributions: the sdist and the wheel built from it (``uv build``, as the release
workflow builds them) hold every file of the packages and the licence, and the wheel, installed
(not editable) in a fresh virtual environment, runs the demo on the fixture and a review of the
repository the demo built, from a folder outside this checkout.

Needs the package index (the build back end, and the wheel's dependencies), as scripts/setup
does; uv's cache makes a second run quick."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import bot
from checks.toolchain_env import uv_binary
from tests.paths import ROOT
from tests.source_copy import copy_source

PACKAGES = ("bot", "checks", "kernels_fixture")
DIST_NAME = f"kernel_review-{bot.__version__}"


def _run(args: list[str], cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _package_files() -> set[str]:
    """Every file of the packages that git tracks (the code and what it reads at runtime)."""
    out = _run(["git", "ls-files", "--", *PACKAGES], ROOT)
    return {p for p in out.splitlines() if "__pycache__" not in p}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An sdist, then the wheel built from that sdist (what a release uploads)."""
    src = copy_source(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    _run([uv_binary(), "build", "--quiet", "--out-dir", str(out), str(src)], src)
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed: its bin folder."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    _run([uv_binary(), "venv", "--quiet", "--python", sys.executable, str(venv)], dist)
    wheel = dist / f"{DIST_NAME}-py3-none-any.whl"
    _run([uv_binary(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)], dist)  # fmt: skip
    return venv / "bin"


def test_the_wheel_holds_every_file_of_the_packages_and_the_licence(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"{DIST_NAME}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"{DIST_NAME}.dist-info/METADATA").decode()
        licence = wheel.read(f"{DIST_NAME}.dist-info/licenses/LICENSE").decode()
    missing = sorted(_package_files() - names)
    assert not missing, (
        f"files the packages ship are not in the wheel: {missing}; "
        "add them to [tool.setuptools.package-data] in pyproject.toml"
    )
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence


def test_the_sdist_holds_the_packages_the_licence_and_the_build_files(dist: Path) -> None:
    with tarfile.open(dist / f"{DIST_NAME}.tar.gz") as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    wanted = _package_files() | {"LICENSE", "README.md", "pyproject.toml"}
    assert not sorted(wanted - names), sorted(wanted - names)


def test_the_installed_wheel_runs_the_demo_and_a_review_of_its_repository(
    installed: Path, tmp_path: Path
) -> None:
    python = str(installed / "python")
    where = _run([python, "-c", "import bot, checks, kernels_fixture as k; print(k.__file__)"], tmp_path)  # fmt: skip
    assert where.startswith(str(installed.parent)) and "site-packages" in where  # not this checkout
    assert _run([str(installed / "kernel-review"), "--version"], tmp_path).split() == [
        "kernel-review",
        bot.__version__,
    ]
    repo, demo_md, review_md = tmp_path / "fixture", tmp_path / "demo.md", tmp_path / "review.md"
    kr = str(installed / "kernel-review")
    _run([kr, "demo", "--no-compile", "--out", str(demo_md)], tmp_path)
    _run([python, "-m", "kernels_fixture.build_repo", str(repo)], tmp_path)  # the fixture to keep
    base = _run(["git", "rev-parse", "HEAD~1"], repo).strip()
    _run([kr, "review", "--repo", ".", "--base", base, "--out", str(review_md)], repo)
    for md in (demo_md, review_md):
        text = md.read_text(encoding="utf-8")
        assert "Kernel review:" in text.splitlines()[0]
        assert "| vector\\_add | rewrite CUDA + HIP → Triton |" in text
        assert "sweep and first call on nvidia: needs an NVIDIA GPU runner" in text
    assert "Demo on the bundled fixture" in demo_md.read_text(encoding="utf-8")
    assert "None of the repository's code was run" in review_md.read_text(encoding="utf-8")
