"""The GPU vendors the compiler report knows, and the one lookup from a name to a vendor.

``target_for`` takes a vendor (``"nvidia"``), Triton's back-end name for it (``"cuda"``) or a
compile target (``"sm_90"``, ``"gfx942"``) and answers with that vendor's ``VendorTarget``; a
name no vendor claims is a PolicyError, never some default vendor's code path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.contracts.base import Vendor
from bot.errors import PolicyError
from checks.compiler.targets.amd import Amd
from checks.compiler.targets.base import Arch, Compiled, VendorTarget
from checks.compiler.targets.nvidia import Nvidia

VENDOR_TARGETS: tuple[VendorTarget, ...] = (Nvidia(), Amd())

__all__ = [
    "VENDOR_TARGETS",
    "Arch",
    "Compiled",
    "VendorTarget",
    "compile_targets",
    "known_target",
    "known_target_names",
    "parse_target",
    "target_for",
    "vendor_of",
]


def target_for(name: str) -> VendorTarget:
    """The vendor of a vendor name, a Triton back-end name or a compile target name."""
    key = str(name).strip().lower()
    for target in VENDOR_TARGETS:
        if key in (target.vendor, target.backend) or target.parse(key) is not None:
            return target
    vendors = ", ".join(t.vendor for t in VENDOR_TARGETS)
    examples = " and ".join(f"{t.display} targets like {t.example!r}" for t in VENDOR_TARGETS)
    raise PolicyError(
        f"unknown compile target {str(name)[:60]!r}: not a vendor this version knows "
        f"({vendors}) nor one of their target names",
        hint=f"name {examples}; a new vendor needs its own VendorTarget in checks/compiler/targets",
    )


def parse_target(name: str) -> tuple[VendorTarget, Arch]:
    """``sm_90``/``sm_90a`` -> (NVIDIA, 90); ``gfx942`` -> (AMD, "gfx942")."""
    target = target_for(name)
    return target, target.arch(name)


def vendor_of(name: str) -> Vendor:
    return target_for(name).vendor


def known_target(name: str) -> bool:
    """Whether the limits (occupancy, register cap) of target ``name`` are tabled."""
    target, arch = parse_target(name)
    return target.known(arch)


def known_target_names() -> list[str]:
    return [t.target_name(a) for t in VENDOR_TARGETS for a in t.known_archs()]


def compile_targets(compiler: Any, vendors: Iterable[str]) -> list[str]:
    """The targets a policy's ``[compiler]`` table names for ``vendors``, vendor by vendor (a
    name no vendor claims is refused)."""
    return list(compiler.for_vendors(target_for(v).vendor for v in vendors))
