"""Vendor targets: one implementation per vendor, found by one lookup; no name falls through."""

from __future__ import annotations

import pytest

from bot.errors import PolicyError
from checks.compiler import targets
from checks.compiler.targets import Arch, known_target_names, target_for
from checks.compiler.targets.nvidia import Nvidia


def test_a_vendor_its_backend_and_its_targets_find_the_same_implementation():
    for names, vendor in (
        (("nvidia", "cuda", "sm_90", "SM_90a"), "nvidia"),
        (("amd", "hip", "gfx942"), "amd"),
    ):
        assert {target_for(n).vendor for n in names} == {vendor}
    assert target_for("gfx942").triton_target("gfx942") == ("hip", "gfx942", 64)
    assert target_for("gfx1100").triton_target("gfx1100") == ("hip", "gfx1100", 32)
    assert target_for("sm_90").triton_target(90) == ("cuda", 90, 32)


@pytest.mark.parametrize("name", ["intel", "xe_2", "hopper", ""])
def test_an_unknown_vendor_or_target_is_an_error_not_another_vendors_path(name: str):
    with pytest.raises(PolicyError, match=r"unknown compile target .*\(nvidia, amd\)") as info:
        target_for(name)
    assert "sm_90" in (info.value.hint or "") and "gfx942" in (info.value.hint or "")


class _Xe(Nvidia):
    """A vendor the code has never seen, as one subclass."""

    vendor = "xpu"  # type: ignore[assignment]
    display = "Xe"
    backend = "xpu"

    def parse(self, name: str) -> Arch | None:
        return name[3:] if name.startswith("xe_") else None

    def target_name(self, arch: Arch) -> str:
        return f"xe_{arch}"

    def known_archs(self) -> tuple[Arch, ...]:
        return ("2",)


def test_a_new_vendor_is_one_implementation_in_the_list(monkeypatch: pytest.MonkeyPatch):
    xe = _Xe()
    monkeypatch.setattr(targets, "VENDOR_TARGETS", (*targets.VENDOR_TARGETS, xe))
    assert target_for("xe_2") is xe and target_for("xpu") is xe
    assert targets.known_target("xe_2") and known_target_names()[-1] == "xe_2"
