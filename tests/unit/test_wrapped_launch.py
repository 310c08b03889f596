"""``wrap_triton(k)[grid](...)`` launches ``k``: PyTorch's ``torch.library.wrap_triton`` (once
``capture_triton``) hands the kernel back for a ``triton_op`` to launch.

Two real excerpts, shortened: torchmdnet/extensions/triton_brute.py of torchmd/torchmd-net at
33447912a7b0 (MIT; that pull request is in tests/data/real_prs), and the example in the
docstring of ``triton_op`` in torch/_library/triton.py of pytorch/pytorch (BSD-3-Clause).
"""

from __future__ import annotations

from bot.analysis.scan import scan_source

TORCHMD = """\
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def _neighbor_brute_kernel(positions_ptr, neighbors_ptr, n_atoms, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(neighbors_ptr + offs, tl.load(positions_ptr + offs, mask=offs < n_atoms), mask=offs < n_atoms)


@triton_op("torchmdnet::triton_neighbor_bruteforce", mutates_args={})
def triton_neighbor_bruteforce(positions, neighbors):
    n_atoms = positions.size(0)
    grid = (triton.cdiv(n_atoms, 128),)
    wrap_triton(_neighbor_brute_kernel)[grid](positions, neighbors, n_atoms, BLOCK=128)
    return neighbors
"""
PYTORCH_DOC = """\
import torch
import triton
from torch.library import capture_triton, triton_op
from triton import language as tl


@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: "tl.constexpr"):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    y = tl.load(in_ptr1 + offsets, mask=mask)
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


@triton_op("mylib::add", mutates_args={})
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    output = torch.empty_like(x)
    n_elements = output.numel()

    def grid(meta):
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    capture_triton(add_kernel)[grid](x, y, output, n_elements, 16)
    return output
"""


def _launched(path: str, text: str) -> list[tuple[str, str | None]]:
    return [(x.kernel, x.wrapper) for x in scan_source(path, text).launches]


def test_a_wrapped_kernel_is_the_one_launched():
    assert _launched("torchmdnet/extensions/triton_brute.py", TORCHMD) == [
        ("_neighbor_brute_kernel", "triton_neighbor_bruteforce")
    ]
    assert _launched("mylib/add.py", PYTORCH_DOC) == [("add_kernel", "add")]


def test_a_call_handed_something_else_is_not_read_as_its_argument():
    picked = TORCHMD.replace("wrap_triton(_neighbor_brute_kernel)", "pick_kernel(n_atoms)")
    assert [k for k, _ in _launched("torchmdnet/extensions/triton_brute.py", picked)] != ["n_atoms"]
