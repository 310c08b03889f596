"""The slow heads' extra work (``bench/real_kernels/rk_extra.py``) on the CPU: identical code
leaves the entry alone; a fraction sizes a busy wait to that fraction of ``fn``'s own time at
the first call, once per case, and adds it after every call."""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "real_kernels"))

import rk_extra

SLEEP_S = 0.004


@pytest.fixture
def entries(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """A module ``rk_fake_entries`` whose ``op`` sleeps SLEEP_S per call; the calls it got."""
    built: list[tuple[Any, ...]] = []
    mod = types.ModuleType("rk_fake_entries")

    def op(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> dict:
        built.append((shape, dtype, device, seed))
        return {"fn": lambda: time.sleep(SLEEP_S) or "out", "bytes_moved": 12}

    mod.op = op  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rk_fake_entries", mod)
    monkeypatch.setattr(rk_extra, "SIZED", {})
    return built


def test_no_fraction_returns_the_entrys_own_mapping(entries: list[tuple[Any, ...]]):
    case = rk_extra.wrap(
        "rk_fake_entries", "op", "k", (3, 5), "float16", device="cpu", seed=7, fraction=0.0
    )
    assert entries == [((3, 5), "float16", "cpu", 7)]
    assert case["bytes_moved"] == 12
    assert case["fn"].__name__ == "<lambda>"  # the entry's own fn, not a wrapper
    case["fn"]()
    assert rk_extra.SIZED == {}


def test_a_fraction_adds_that_share_of_the_kernels_time(entries: list[tuple[Any, ...]]):
    wrap = dict(device="cpu", fraction=0.5)
    case = rk_extra.wrap("rk_fake_entries", "op", "k", (64,), "float32", seed=0, **wrap)
    assert case["bytes_moved"] == 12
    assert case["fn"]() == "out"
    ((key, extra),) = rk_extra.SIZED.items()
    assert key == ("k", (64,), "float32", "cpu")
    assert extra.kernel_us == pytest.approx(SLEEP_S * 1e6, rel=0.5)
    assert extra.spin_us == pytest.approx(0.5 * extra.kernel_us)
    t0 = time.perf_counter()
    for _ in range(5):
        case["fn"]()
    per_call = (time.perf_counter() - t0) / 5
    assert per_call >= (extra.kernel_us + extra.spin_us) * 1e-6 * 0.95
    # another seed of the same case reuses the sizing; another shape is sized anew
    other = rk_extra.wrap("rk_fake_entries", "op", "k", (64,), "float32", seed=1, **wrap)
    other["fn"]()
    assert len(rk_extra.SIZED) == 1
    rk_extra.wrap("rk_fake_entries", "op", "k", (65,), "float32", seed=0, **wrap)["fn"]()
    assert len(rk_extra.SIZED) == 2


def test_a_malformed_entry_is_passed_on_for_the_sweep_to_report(
    monkeypatch: pytest.MonkeyPatch, entries: list[tuple[Any, ...]]
):
    monkeypatch.setattr(sys.modules["rk_fake_entries"], "op", lambda *a, **k: {"fn": 3})
    got = rk_extra.wrap(
        "rk_fake_entries", "op", "k", (4,), "float32", device="cpu", seed=0, fraction=0.1
    )
    assert got == {"fn": 3}
