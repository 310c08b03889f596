"""The compilers of the kernel languages are toolchain packages (``bot/toolchain/packages.py``).

Excerpts: quack's ``pyproject.toml`` around Dao-AILab/quack 98c7ea542b50 ("Bump CuTe-DSL to
4.6.1", Apache-2.0; in tests/data/real_prs), and mamba's ``setup.py`` install_requires around
state-spaces/mamba 70f7eaa45db9 ("Fix Mamba-3 SISO state shape, Amend README and
pyproject.toml", Apache-2.0), which moves the TileLang pin and drops the CuTe DSL one.
"""

from __future__ import annotations

import pytest

from bot.analysis.languages import GPU_MODULES, LANGUAGES
from bot.toolchain.detect import toolchain_changes
from bot.toolchain.packages import PACKAGES
from bot.toolchain.pins import canonical, is_toolchain

QUACK = """\
[project]
name = "quack-kernels"
dependencies = [
    "nvidia-cutlass-dsl=={v}",
    "torch",
    "apache-tvm-ffi>=0.1.6,<0.2",
]

[project.optional-dependencies]
cu13 = ["nvidia-cutlass-dsl[cu13]=={v}"]
jax = ["jax", "jax-tvm-ffi"]
"""

MAMBA_OLD = """\
    install_requires=[
        "torch",
        "triton>=3.5.0",
        "transformers",
        "tilelang>=0.1.7.post3",
        "nvidia-cutlass-dsl==4.4.1",
        "quack-kernels==0.3.1",
    ],
"""
MAMBA_NEW = """\
    install_requires=[
        "torch",
        "triton>=3.5.0",
        "transformers",
        "tilelang==0.1.8",
        "quack-kernels==0.3.1",
    ],
"""


def test_the_cute_dsl_compiler_pin_is_a_toolchain_change_in_each_table():
    old, new = QUACK.format(v="4.6.0"), QUACK.format(v="4.6.1")
    moved = toolchain_changes("pyproject.toml", "pyproject.toml", old, new)
    assert [(c.kernel, c.old_version, c.new_version) for c in moved] == [
        ("nvidia-cutlass-dsl", "==4.6.0", "==4.6.1"),
        ("nvidia-cutlass-dsl", "==4.6.0", "==4.6.1"),
    ]
    assert moved[1].detail.startswith("CuTe DSL compiler")
    assert moved[1].detail.endswith("(project.optional-dependencies.cu13)")


def test_tilelang_moved_and_the_cute_dsl_pin_dropped_in_setup_py():
    moved = toolchain_changes("setup.py", "setup.py", MAMBA_OLD, MAMBA_NEW)
    assert {(c.kernel, c.old_version, c.new_version) for c in moved} == {
        ("tilelang", ">=0.1.7.post3", "==0.1.8"),
        ("nvidia-cutlass-dsl", "==4.4.1", None),
    }


@pytest.mark.parametrize(
    "name", ["helion", "cuda_tile", "cupy-cuda12x", "cupy-rocm-5-0", "nvidia-cutlass-dsl-libs-cu12"]
)
def test_other_kernel_compilers_and_their_vendor_builds_are_toolchain(name):
    assert is_toolchain(name)


@pytest.mark.parametrize(
    "name", ["quack-kernels", "apache-tvm-ffi", "torchvision", "transformers", "cupyx-tools"]
)
def test_libraries_of_kernels_and_other_packages_are_not(name):
    assert not is_toolchain(name)


def _provided(module: str) -> bool:
    """A toolchain package provides ``module``, a package above it, or one under it."""
    return any(
        p.module
        and (
            module == p.module
            or module.startswith(p.module + ".")
            or p.module.startswith(module + ".")
        )
        for p in PACKAGES
    )


# GPU modules with no compiler package of their own: ThunderKittens is a C++ header library
# built into the extension that includes it; Pallas is part of JAX, a framework whose pin moves
# for its models, and the analysis reads no Pallas kernel.
_NO_PACKAGE = {"thunderkittens", "jax.experimental.pallas"}


def test_every_kernel_language_and_gpu_module_has_its_compiler_in_the_toolchain():
    modules = {m for lang in LANGUAGES for m in lang.modules} | set(GPU_MODULES)
    assert {m for m in modules if not _provided(m)} == _NO_PACKAGE


def test_entries_are_canonical_names():
    assert all(canonical(p.name) == p.name for p in PACKAGES)
