"""The launch record through a real worker on the CPU (Triton's interpreter): a check asked for
it makes one more call after the first and names the Triton kernels that call launched (through
a heuristics wrapper too), each as often as it ran, says that nothing but
Triton's launches is seen on the CPU, says so when that call fails, and records nothing when not
asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec
from checks.worker import contract
from checks.worker.launches import CPU_NOTE

OPS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 64 else 64})
@triton.jit
def _shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def twice(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device, generator=torch.Generator().manual_seed(seed))
    n = x.numel()

    def fn():
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)
        z = torch.empty_like(y)
        _scale_kernel[(triton.cdiv(n, 64),)](y, z, n, BLOCK=64)
        _shift_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](z, n)
        return z

    return {"fn": fn, "reference": lambda: 4 * x + 1, "inputs": [x]}


def torch_only(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device)
    return {"fn": lambda: x * 2, "reference": lambda: x + x, "inputs": [x]}


CALLS = [0]


def fails_later(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device)

    def fn():
        CALLS[0] += 1
        if CALLS[0] > 2:  # the first call, the checked call, then the recorded one
            raise RuntimeError("the third call fails")
        return x * 2

    return {"fn": fn, "inputs": [x]}
"""


@pytest.fixture
def client(tmp_path: Path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "ops.py").write_text(OPS)
    worker = WorkerClient(
        WorkerSpec(
            side="head",
            root=tmp_path / "repo",
            device="cpu",  # TRITON_INTERPRET=1
            work_dir=tmp_path / "work",
            timeouts=Timeouts(start_s=60, prepare_s=120, check_s=120),
        )
    )
    worker.start()
    yield worker
    worker.close()


def _check(client: WorkerClient, entry: str, launches: bool = True) -> contract.CheckReply:
    return client.check([entry], (100,), "float32", seed=3, launches=launches)


def test_a_check_names_the_triton_kernels_one_call_launched_and_how_often(
    client: WorkerClient,
) -> None:
    got = _check(client, "ops:twice")
    assert got.correct
    assert got.launched is not None
    # one call's launches: the first call's (and the checked call's) are not in it
    assert [(k.name, k.triton, k.count) for k in got.launched.kernels] == [
        ("_scale_kernel", True, 2),
        ("_shift_kernel", True, 1),
    ]
    assert not got.launched.profiler and got.launched.note == CPU_NOTE
    assert "launches" in got.steps_s  # its time is the check's own step
    # the recorded call left the inputs as the entry point made them: a second check agrees
    assert _check(client, "ops:twice", launches=False).digest == got.digest


def test_a_call_without_triton_records_no_kernel_and_says_what_the_cpu_cannot_see(
    client: WorkerClient,
) -> None:
    got = _check(client, "ops:torch_only")
    assert got.launched == contract.Launched(kernels=(), profiler=False, note=CPU_NOTE)


def test_a_recorded_call_that_fails_is_said_in_the_record_and_the_check_stands(
    client: WorkerClient,
) -> None:
    got = _check(client, "ops:fails_later")
    assert got.correct and got.launched is not None and got.launched.kernels == ()
    assert got.launched.note == "not recorded: its call raised RuntimeError: the third call fails"


def test_nothing_is_recorded_unless_asked(client: WorkerClient) -> None:
    got = _check(client, "ops:twice", launches=False)
    assert got.launched is None and "launches" not in got.steps_s
