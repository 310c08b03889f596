"""A host function's change is a launch change only where it reaches the launch: the statements
its grid and arguments are computed through, the tests around them, the defaults of the
parameters among them. An input assertion or a value computed for something else is not.

The wrapper is deepspeed/ops/transformer/inference/triton/gelu.py in microsoft/DeepSpeed at the
parent of 807d1b5dfc63 (Apache-2.0; that pull request, a negative control in
tests/data/real_prs, changes only the assertion).
"""

from __future__ import annotations

import pytest

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

PATH = "deepspeed/ops/transformer/inference/triton/gelu.py"

BASE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x * 0.5 * (1.0 + tl.math.erf(x / 1.41421356237)), mask=mask)


def gelu(activations: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    assert activations.is_contiguous()
    assert activations.is_cuda

    output = torch.empty_like(activations)
    n_elements = output.numel()
    flops = 8 * n_elements
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
    gelu_kernel[grid](activations, output, n_elements, BLOCK_SIZE=1024)
    return output
"""


def _analyse(after: str) -> Analysis:
    diff = file_diff(PATH, BASE, after)
    return analyze_diff(diff, old_source={PATH: BASE}.get, new_source={PATH: after}.get)


@pytest.mark.parametrize(
    "old, new",
    [
        # 807d1b5dfc63 itself
        (
            "    assert activations.is_cuda\n",
            "    assert get_accelerator().on_accelerator(activations)\n",
        ),
        (
            "    flops = 8 * n_elements\n",
            "    flops = 10 * n_elements\n",
        ),  # read by nothing launched
        ("    return output\n", "    print(output.shape)\n    return output\n"),  # after the launch
    ],
)
def test_what_does_not_reach_the_launch_is_no_change(old, new):
    assert not _analyse(BASE.replace(old, new)).changes


@pytest.mark.parametrize(
    "old, new",
    [
        # the output allocated otherwise: an argument of the launch
        ("output = torch.empty_like(activations)", "output = torch.zeros_like(activations)"),
        # the element count the grid reads, through n_elements
        ("n_elements = output.numel()", "n_elements = output.shape[-1]"),
        # a launch now under a condition
        (
            "    gelu_kernel[grid]",
            "    if n_elements == 0:\n        return output\n    if scale > 0:\n        gelu_kernel[grid]",
        ),
        # an argument changed in place before the launch
        ("    grid = lambda", "    activations.mul_(scale)\n    grid = lambda"),
    ],
)
def test_what_reaches_the_launch_is_a_launch_change(old, new):
    after = BASE.replace(old, new)
    assert after != BASE
    [change] = _analyse(after).changes
    assert (change.name, change.kind) == ("gelu_kernel", "launch")
