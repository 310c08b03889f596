"""Packaging: one version, read by setuptools from ``bot.__version__`` and printed by
``kernel-review --version``; the extras the measuring runners need; bounded torch and Triton."""

from __future__ import annotations

import re
import subprocess
import sys

from packaging.requirements import Requirement

import bot
from tests.paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_and_the_command_line_prints_it() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bot.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", bot.__version__)
    out = subprocess.run(
        [sys.executable, "-m", "bot", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.split() == ["kernel-review", bot.__version__]


def test_the_gpu_extra_has_nvml_and_bounded_torch_and_triton() -> None:
    gpu = {req.name: req for req in map(Requirement, PYPROJECT["project"]["optional-dependencies"]["gpu"])}  # fmt: skip
    assert "nvidia-ml-py" in gpu  # the telemetry that drops throttled rounds
    for package in ("torch", "triton"):
        assert {s.operator for s in gpu[package].specifier} == {">=", "<"}, gpu[package]
    # the Triton series the compiler report reads are the ones the extra allows
    from checks.compiler.triton_compat._targets import SUPPORTED_SERIES

    allowed = {
        (3, minor) for minor in range(10) if gpu["triton"].specifier.contains(f"3.{minor}.0")
    }
    assert allowed == set(SUPPORTED_SERIES)


def test_the_licence_is_an_spdx_expression_with_a_backend_that_reads_it() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    (backend,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert backend == "setuptools>=77"  # the first release that reads PEP 639 licences
    assert PYPROJECT["project"]["urls"]["Source"].startswith("https://github.com/")
