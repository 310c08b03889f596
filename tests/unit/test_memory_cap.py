"""An allocation that runs into the worker memory cap says which cap it was and how to raise it."""

from __future__ import annotations

import pytest

from bot.errors import UsageError
from checks.memory_cap import MEMORY_ENV, memory_cap_hint, memory_from_env
from checks.worker_env import default_memory_bytes

TORCH_CPU_OOM = RuntimeError(
    "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
    "you tried to allocate 17179869184 bytes. Error code 12 (Cannot allocate memory)"
)


@pytest.mark.parametrize("exc", [MemoryError(), TORCH_CPU_OOM])
def test_out_of_memory_under_a_cap_names_the_cap_and_its_settings(exc: BaseException) -> None:
    hint = memory_cap_hint(exc, cap=8 * 2**30)
    assert hint.startswith("hit the worker memory cap of 8.0 GiB")
    assert "[limits] worker_memory_gib" in hint and f"{MEMORY_ENV}=N" in hint


def test_other_errors_and_uncapped_processes_get_no_hint() -> None:
    assert memory_cap_hint(ValueError("bad shape"), cap=8 * 2**30) == ""
    assert memory_cap_hint(MemoryError(), cap=0) == ""


def test_the_environment_sets_the_default_cap_and_a_wrong_value_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MEMORY_ENV, "48")
    assert memory_from_env() == default_memory_bytes() == 48 * 2**30
    monkeypatch.setenv(MEMORY_ENV, "lots")
    with pytest.raises(UsageError, match=f"{MEMORY_ENV}='lots': give a whole number of GiB"):
        default_memory_bytes()
    monkeypatch.delenv(MEMORY_ENV)
    assert memory_from_env() is None
