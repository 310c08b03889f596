"""On a GPU (skipped without one, or without nvcc to build the extension): a real worker's
check records what one call of its case launched, a CUDA extension's templated kernel in a
namespace by its qualified name (demangled, template arguments and parameters cut), a Triton
kernel by its function's name through Triton's launch hook and counted once though the profiler
sees it too, and neither the device-to-device copy beside them nor the engine's own kernels; a
recorded call that fails is said in the record, and the check stands; a record of Triton's
launches alone starts no profiler."""

from __future__ import annotations

import shutil

import pytest

from checks.bench_entries.launches import TRITON_ONLY_NOTE
from checks.sweep.workers import Timeouts, WorkerClient
from tests.repo_worker import repo_worker

pytestmark = pytest.mark.gpu

OPS = '''\
import torch
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

CUDA = """
namespace kr {
template <typename T>
__global__ void scale_kernel(const T* x, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * x[i];
}
}  // namespace kr

torch::Tensor scale(torch::Tensor x) {
  auto out = torch::empty_like(x);
  int n = x.numel();
  kr::scale_kernel<float><<<(n + 255) / 256, 256>>>(
      x.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""
ext = load_inline(
    name="kr_launch_record_ext",
    cpp_sources="torch::Tensor scale(torch::Tensor x);",
    cuda_sources=CUDA,
    functions=["scale"],
)


@triton.jit
def _shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def both(shape, dtype, *, device="cuda", seed=0):
    x = torch.rand(shape, device=device)
    n = x.numel()

    def fn():
        y = ext.scale(x)
        _shift_kernel[(triton.cdiv(n, 1024),)](y, n, BLOCK=1024)
        return y.clone()  # a device-to-device copy: no kernel of the record

    return {"fn": fn, "reference": lambda: 2 * x + 1, "inputs": [x]}


@triton.jit
def _sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def atomic(shape, dtype, *, device="cuda", seed=0):
    x = torch.rand(shape, device=device)
    n = x.numel()

    def fn():
        out = torch.zeros(1, device=device)  # returned: no buffer besides the outputs
        _sum_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out

    return {"fn": fn, "reference": lambda: x.sum().reshape(1), "inputs": [x], "rtol": 1e-3}


CALLS = [0]


def fails_later(shape, dtype, *, device="cuda", seed=0):
    x = torch.rand(shape, device=device)

    def fn():
        CALLS[0] += 1
        if CALLS[0] > 1:  # the first call, checked; then the recorded one
            raise RuntimeError("the second call fails")
        return x * 2

    return {"fn": fn, "reference": lambda: x + x, "inputs": [x]}
'''


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    # one worker for the module: its first check builds the extension (about 40 s on the H200,
    # which a worker a test had paid per test)
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc to build the CUDA extension")
    timeouts = Timeouts(start_s=120, prepare_s=600, check_s=600)  # the build
    folder = tmp_path_factory.mktemp("launch-record-gpu")
    with repo_worker(folder, {"ops.py": OPS}, device="cuda", timeouts=timeouts) as worker:
        yield worker


def test_a_cuda_extension_kernel_and_a_triton_kernel_are_recorded_by_name(
    client: WorkerClient,
) -> None:
    got = client.check(["ops:both"], (100_000,), "float32", seed=1, launches="profiler")
    assert got.correct and got.launched is not None
    assert got.launched.profiler and got.launched.note == ""
    assert [(k.name, k.triton, k.count) for k in got.launched.kernels] == [
        ("_shift_kernel", True, 1),
        ("kr::scale_kernel", False, 1),
    ]
    # no atomics in the Triton kernel (a CUDA kernel's code is not read); the extension's
    # output, which the call copies before returning, is a buffer besides the outputs
    assert [k.atomics for k in got.launched.kernels] == [False, None]
    assert got.launched.allocations == 1


def test_a_triton_kernel_with_atomics_is_recorded_as_such(client: WorkerClient) -> None:
    got = client.check(["ops:atomic"], (100_000,), "float32", seed=1, launches="triton")
    assert got.correct and got.launched is not None
    assert [(k.name, k.atomics) for k in got.launched.kernels] == [("_sum_kernel", True)]
    assert got.launched.allocations == 0  # its one buffer is what it returns


def test_a_recorded_call_that_fails_is_said_in_the_record_and_the_check_stands(
    client: WorkerClient,
) -> None:
    got = client.check(["ops:fails_later"], (1000,), "float32", seed=1, launches="profiler")
    assert got.correct and got.launched is not None and got.launched.kernels == ()
    assert got.launched.note == "not recorded: its call raised RuntimeError: the second call fails"


def test_a_record_of_triton_launches_alone_starts_no_profiler_and_says_so(
    client: WorkerClient,
) -> None:
    """A kernel whose files are all Python is recorded by Triton's launch hook alone
    (``checks.sweep.shapes.launch_recorder``): its Triton kernel by name, no CUDA kernel beside it, no
    profiler started (its first start took seconds in a process), and the record says why."""
    got = client.check(["ops:both"], (100_000,), "float32", seed=1, launches="triton")
    assert got.correct and got.launched is not None
    assert not got.launched.profiler and got.launched.note == TRITON_ONLY_NOTE
    assert [(k.name, k.triton, k.count) for k in got.launched.kernels] == [
        ("_shift_kernel", True, 1)
    ]
    assert got.steps_s["launches"] < 1.0  # one call, no profiler's start
