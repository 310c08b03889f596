"""The Python kernel languages the analysis reads, one module each, and the rules over them.

A decorator names its function's role (a kernel, a tuner stacked on one, a factory that builds
kernels, a host function that launches them) in one language. Beyond the languages here, a
repository's policy can name its own kernel decorators (``kernel_decorators``: language
``custom``), and a function whose decorator looks like a kernel's (``@x.jit``, ``@x.kernel``) in a
file that imports a GPU module is a kernel in an ``unrecognised`` language: reported, never
dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.analysis.languages.base import KernelLanguage, Role
from bot.analysis.languages.cute import CUTE
from bot.analysis.languages.gluon import GLUON
from bot.analysis.languages.helion import HELION
from bot.analysis.languages.tilelang import TILELANG
from bot.analysis.languages.triton import TRITON
from bot.analysis.model import Language

__all__ = ["LANGUAGES", "KernelLanguage", "Role", "decorator_role", "language_named"]

# Most specific first: Gluon lives under ``triton.``.
LANGUAGES: tuple[KernelLanguage, ...] = (GLUON, HELION, CUTE, TILELANG, TRITON)
DSLS = tuple(lang for lang in LANGUAGES if lang is not TRITON)

CUSTOM = KernelLanguage(
    name="custom",
    display="kernel_decorators language",
    modules=(),
    roles={},
    vendors=(),
    compiler_gap=(
        "its kernels are marked by the policy's kernel_decorators, in a language the compiler "
        "report cannot compile"
    ),
)
UNRECOGNISED = KernelLanguage(
    name="unrecognised",
    display="unrecognised kernel language",
    modules=(),
    roles={},
    vendors=(),
    compiler_gap="the analysis does not know its kernel language",
)

_TRITON_ROLES: dict[str, Role] = {"jit": "kernel", "autotune": "tuner", "heuristics": "tuner"}

# Modules whose import makes a file one that may define GPU kernels: the languages above, and
# GPU modules whose kernels the analysis does not read (``@ct.kernel`` of ``cuda.tile``,
# ``@cuda.jit`` of ``numba.cuda``, ``@wp.kernel`` of ``warp``, FlyDSL's ``@flyc.kernel``).
GPU_MODULES: tuple[str, ...] = (
    *(m for lang in LANGUAGES for m in lang.modules),
    "cuda",
    "cupy",
    "pycuda",
    "numba.cuda",
    "warp",
    "flydsl",
    "jax.experimental.pallas",
    "thunderkittens",
    "tilus",
    "hidet",
    "taichi",
)
# A decorator ending in one of these reads as a kernel's; these modules' own do not.
_KERNEL_WORDS = ("jit", "kernel", "prim_func", "cuda_kernel", "gpu_kernel")
_NOT_KERNELS = ("torch.", "jax.jit", "numba.jit", "numba.njit", "functools.", "typing.")

# Words (for ``git grep`` and diff lines) without which a file holds no kernel of these languages.
MARKER_WORDS: tuple[str, ...] = (
    "triton",
    "gluon",
    "helion",
    "cutlass",
    "cute\\.",
    "tilelang",
    "prim_func",
    "flydsl",
    "numba",
    "cuda\\.tile",
    "import warp",
)


def language_named(name: str) -> KernelLanguage | None:
    for lang in (*LANGUAGES, CUSTOM, UNRECOGNISED):
        if lang.name == name:
            return lang
    return None


def decorator_role(
    dotted: str | None, markers: Sequence[str] = (), written: str | None = None
) -> tuple[Role, Language] | None:
    """``(role, language)`` of a decorator (its dotted name, resolved through the file's
    imports), or None for a decorator no language claims. ``markers``: the policy's
    ``kernel_decorators``, matched as resolved or as ``written``."""
    if not dotted:
        return None
    if dotted in markers or (written is not None and written in markers):
        return "kernel", CUSTOM.name
    for lang in DSLS:
        role = lang.role(dotted)
        if role is not None:
            return role, lang.name
    parts = dotted.split(".")
    if parts[0] == "triton" and parts[-1] in _TRITON_ROLES:
        return _TRITON_ROLES[parts[-1]], GLUON.name if "gluon" in parts else TRITON.name
    if "autotune" in parts[-1].lower():
        return "tuner", TRITON.name  # a repository's own autotuner (``@fla_cache_autotune``)
    return None


def imports_gpu_module(modules: Iterable[str]) -> bool:
    """Whether any of the imported ``modules`` is (or is under) a GPU module."""
    return any(m == g or m.startswith(g + ".") for m in modules for g in GPU_MODULES)


def kernel_like(dotted: str | None) -> bool:
    """A decorator no language claims whose name says it makes a kernel (``@ct.kernel``,
    ``@cuda.jit``, ``@flyc.kernel``), outside the modules known to make none (``torch.jit``)."""
    if not dotted or dotted.startswith(_NOT_KERNELS) or "." not in dotted:
        return False
    return dotted.rsplit(".", 1)[-1] in _KERNEL_WORDS


def unrecognised_note(decorators: Sequence[str]) -> str:
    """What the review says of a kernel in an unrecognised language, and what to do."""
    marks = ", ".join(f"@{d}" for d in decorators) or "its decorator"
    return (
        f"unrecognised kernel language: {marks} looks like a kernel decorator in a file that "
        "imports a GPU module, but no language the analysis reads claims it; its changes are "
        "listed, not classified further. Name the decorator in the policy's kernel_decorators "
        "to mark it as a kernel of this repository"
    )


def name_noise() -> frozenset[str]:
    """Words of kernel names that say only which language a kernel is written in."""
    return frozenset(w for lang in LANGUAGES for w in lang.noise)
