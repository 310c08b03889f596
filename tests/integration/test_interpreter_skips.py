"""A kernel that cannot run under Triton's CPU interpreter (``bench --device cpu``) says why,
the missing libdevice function, the GPU driver it asks for, the GPU it puts its tensors on or
the device its package looks for on import, and that it needs a GPU; the sweep marks such a case skipped, not failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.sweep.pair_runner import STATUS_OF_KIND
from checks.sweep.workers import WorkerClient
from checks.worker_env import WorkerFailure
from tests.repo_worker import repo_worker

OPS = """\
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _erfcinv_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, libdevice.erfcinv(x), mask=offs < n)


def erfcinv(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device)
    return {"fn": lambda: _erfcinv_kernel[(1,)](x, x.numel(), BLOCK=64), "inputs": [x]}


def own_device(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device="cuda")  # a benchmark that picks its device itself
    return {"fn": lambda: x + 1}


def driver(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device)
    index = triton.runtime.driver.active.get_current_device()
    return {"fn": lambda: x + index}
"""

# FlagGems' device detection on a machine without a GPU (flagos-ai/FlagGems ed2508bcb5a0,
# src/flag_gems/runtime/error.py, Apache 2.0): what ``import flag_gems`` raises. Its detector
# is a singleton that keeps its half-made self, so a second import fails otherwise
# (``'DeviceDetector' object has no attribute 'vendor_name'``): the stand-in does the same.
GEMS = """\
from gems_device import DeviceDetector

vendor = DeviceDetector().vendor_name
"""
GEMS_DEVICE = """\
class DeviceDetector:
    _made = None

    def __new__(cls):
        cls._made = cls._made or super().__new__(cls)
        return cls._made

    def __init__(self):
        if getattr(self, "started", False):
            return
        self.started = True
        raise RuntimeError(
            "No device were detected on your machine ! \\n "
            "Please check that your driver is complete. "
        )
"""


@pytest.fixture
def client(tmp_path: Path):
    files = {"ops.py": OPS, "gems.py": GEMS, "gems_device.py": GEMS_DEVICE}
    with repo_worker(tmp_path, files) as worker:
        yield worker


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("ops:erfcinv", "libdevice.erfcinv has no implementation in Triton's CPU interpreter"),
        ("ops:driver", "it asks Triton for a GPU driver (triton.runtime.driver.active)"),
        ("ops:own_device", "it puts its tensors on a GPU, and there is none here"),
        ("gems:ones", "it looks for a GPU and finds none here (No device were detected"),
    ],
)
def test_a_kernel_the_interpreter_cannot_run_says_why_and_is_skipped(
    client: WorkerClient, entry: str, reason: str
) -> None:
    with pytest.raises(WorkerFailure) as failed:
        client.check([entry], (64,), "float32", seed=1)
    assert failed.value.kind == "interpreter"
    assert failed.value.message.startswith("cannot run under the CPU interpreter: ")
    assert reason in failed.value.message and "it needs a GPU" in failed.value.message
    assert STATUS_OF_KIND[failed.value.kind] == "skipped"


def test_an_entry_whose_import_failed_fails_alike_on_every_later_case(client: WorkerClient) -> None:
    """A module that failed to import is not imported again for the next case: the second
    import of a half-imported package fails otherwise, without the reason."""
    for shape in ((64,), (128,)):
        with pytest.raises(WorkerFailure) as failed:
            client.check(["gems:ones"], shape, "float32", seed=1)
        assert failed.value.kind == "interpreter", failed.value.message
        assert "it looks for a GPU and finds none here" in failed.value.message
