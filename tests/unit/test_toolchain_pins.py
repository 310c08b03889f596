"""Toolchain pins read from each kind of file, and the changes between two sides."""

from __future__ import annotations

import pytest

from bot.toolchain.detect import diff_toolchain, toolchain_changes
from bot.toolchain.pins import Pin, canonical, file_kind, pins


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("requirements.txt", "requirements"),
        ("requirements/cuda.txt", "requirements"),
        ("ci/constraints-gpu.txt", "requirements"),
        ("requirements-dev.in", "requirements"),
        ("pyproject.toml", "toml"),
        ("pixi.toml", "toml"),
        ("uv.lock", "lock"),
        ("poetry.lock", "lock"),
        ("pixi.lock", "conda"),
        ("environment.yml", "conda"),
        ("docker/Dockerfile", "docker"),
        ("Dockerfile.rocm", "docker"),
        ("gpu.Dockerfile", "docker"),
        (".github/workflows/ci.yml", "workflow"),
        ("setup.py", "setup"),
        ("README.md", None),
        ("toyops/matmul.py", None),
        ("docs/workflows/ci.yml", None),
    ],
)
def test_file_kinds(path: str, kind: str | None) -> None:
    assert file_kind(path) == kind


def test_names_are_normalised_and_conda_pytorch_is_torch() -> None:
    assert canonical("pytorch_triton_xpu") == "pytorch-triton-xpu"
    assert canonical("PyTorch") == "torch"
    assert canonical("Triton") == "triton"


def test_requirements_file() -> None:
    text = (
        "numpy>=1.26\n"
        "torch==2.4.0+cu121  # the CUDA build\n"
        'triton>=3.1,<3.2 ; sys_platform == "linux"\n'
        "--extra-index-url https://download.pytorch.org/whl/cu121\n"
        "# triton==9.9 commented out\n"
    )
    assert pins("requirements.txt", text) == [
        Pin("torch", "==2.4.0+cu121", "", 2),
        Pin("triton", ">=3.1,<3.2", "", 3),
        Pin("torch wheel index", "cu121", "", 4),
    ]


def test_direct_url_reads_the_wheel_version() -> None:
    text = "torch @ https://download.pytorch.org/whl/xpu/torch-2.10.0%2Bxpu-cp311-cp311-linux_x86_64.whl#sha256=ab\n"
    assert pins("requirements.txt", text) == [Pin("torch", "==2.10.0+xpu", "", 1)]


def test_pyproject_keeps_each_extra_apart() -> None:
    text = """
[project]
dependencies = ["torch>=2.4", "triton>=3.6,<3.7"]
[project.optional-dependencies]
cu121 = ["torch==2.4.0"]
[tool.poetry.dependencies]
torch = {version = "^2.5"}
"""
    found = {(p.package, p.where): p.spec for p in pins("pyproject.toml", text)}
    assert found == {
        ("torch", "project.dependencies"): ">=2.4",
        ("triton", "project.dependencies"): ">=3.6,<3.7",
        ("torch", "project.optional-dependencies.cu121"): "==2.4.0",
        ("torch", "tool.poetry.dependencies"): "^2.5",
    }


def test_broken_pyproject_still_reads_its_strings() -> None:
    assert pins("pyproject.toml", 'dependencies = ["triton==3.5.1",\n') == [
        Pin("triton", "==3.5.1", "", 1)
    ]


def test_uv_lock_and_poetry_lock() -> None:
    text = '[[package]]\nname = "numpy"\nversion = "2.1.0"\n\n[[package]]\nname = "triton"\nversion = "3.5.1"\n'
    assert pins("uv.lock", text) == [Pin("triton", "3.5.1", "", 6)]
    assert pins("poetry.lock", text) == [Pin("triton", "3.5.1", "", 6)]


def test_conda_environment_and_pixi_lock() -> None:
    env = "dependencies:\n  - pytorch=2.4.0\n  - pytorch::pytorch-cuda=12.1\n  - pip:\n    - triton==3.0.0\n"
    assert [(p.package, p.spec) for p in pins("environment.yml", env)] == [
        ("torch", "=2.4.0"),
        ("pytorch-cuda", "=12.1"),
        ("triton", "==3.0.0"),
    ]
    lock = (
        "  - pypi: https://files.pythonhosted.org/packages/ab/triton-3.5.1-cp311-cp311-manylinux_2_27_x86_64.whl\n"
        "  - conda: https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.5.1-cuda126_py311h1.conda\n"
    )
    assert [(p.package, p.spec) for p in pins("pixi.lock", lock)] == [
        ("triton", "3.5.1"),
        ("torch", "2.5.1"),
    ]


def test_dockerfile_base_image_args_and_install_lines() -> None:
    text = (
        "ARG CUDA_VERSION=12.4.1\n"
        "FROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:24.05-py3 AS build\n"
        "FROM ubuntu:22.04\n"
        "# RUN pip install torch==1.0\n"
        "RUN pip install torch==2.5.1 \\\n"
        "    triton==3.1.0 --index-url https://download.pytorch.org/whl/cu124 && pip install numpy\n"
    )
    assert pins("Dockerfile", text) == [
        Pin("cuda", "12.4.1", "", 1),
        Pin("image nvcr.io/nvidia/pytorch", "24.05-py3", "", 2),
        Pin("torch", "==2.5.1", "", 5),
        Pin("triton", "==3.1.0", "", 5),
        Pin("torch wheel index", "cu124", "", 5),
    ]


def test_workflow_install_lines_and_images() -> None:
    text = (
        "jobs:\n  test:\n    container:\n      image: rocm/pytorch:rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0\n"
        "    steps:\n      - run: uv pip install 'triton==3.5.1' pytest\n"
        "      - run: pip install -e .\n"
    )
    assert pins(".github/workflows/ci.yml", text) == [
        Pin("image rocm/pytorch", "rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0", "", 4),
        Pin("triton", "==3.5.1", "", 6),
    ]


def test_a_moved_pin_is_one_change_with_both_versions() -> None:
    old = "torch>=2.4\ntriton==3.5.1\n"
    new = "torch>=2.4\ntriton==3.6.0\n"
    (line,) = toolchain_changes("requirements.txt", "requirements.txt", old, new)
    assert (line.kernel, line.kind, line.old_version, line.new_version) == (
        "triton",
        "toolchain",
        "==3.5.1",
        "==3.6.0",
    )
    assert line.old_paths == line.new_paths == ("requirements.txt",)


def test_added_and_removed_pins_and_unchanged_ones() -> None:
    lines = toolchain_changes(
        "requirements.txt", "requirements.txt", "torch==2.4\n", "triton==3.6\n"
    )
    assert [(c.kernel, c.old_version, c.new_version) for c in lines] == [
        ("torch", "==2.4", None),
        ("triton", None, "==3.6"),
    ]
    assert toolchain_changes("uv.lock", "uv.lock", "x", "x") == []


def test_diff_lines_stand_in_for_a_file_that_cannot_be_read() -> None:
    files = [("requirements.txt", "requirements.txt", "triton==3.5.1", "triton==3.6.0")]
    (line,) = diff_toolchain(files, lambda _p: None, lambda _p: None)
    assert (line.old_version, line.new_version) == ("==3.5.1", "==3.6.0")
    assert diff_toolchain([("a.py", "a.py", "triton==1", "triton==2")]) == []
