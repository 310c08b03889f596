"""A launch argument made on the host and copied to the device holds what it would hold made on
the device: no launch change.

The wrapper is shortened from python/xgrammar/kernels/apply_token_bitmask_inplace_triton.py of
mlc-ai/xgrammar at 8bf3651c775e and its parent (Apache-2.0; that pull request, a negative
control, is in tests/data/real_prs): ``indices`` became a CPU tensor copied with
``non_blocking=True``. The pinned spelling (``pin_memory=True).to(device, non_blocking=True)``)
is the one serving engines use for the same copy.
"""

from __future__ import annotations

from tests.diff_util import changes_between

PATH = "python/xgrammar/kernels/apply_token_bitmask_inplace_triton.py"
BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def apply_token_bitmask_inplace_kernel(logits_ptr, indices_ptr, num_rows, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    batch_id = pid if indices_ptr is None else tl.load(indices_ptr + pid)
    offsets = tl.arange(0, BLOCK_SIZE)
    tl.store(logits_ptr + batch_id * BLOCK_SIZE + offsets, -float("inf"))


def apply_token_bitmask_inplace_triton(logits, indices=None):
    BLOCK_SIZE = 4096
    num_rows = len(indices) if indices is not None else logits.shape[0]

    if indices is not None:
        indices = torch.tensor(indices, dtype=torch.int32, device=logits.device)

    apply_token_bitmask_inplace_kernel[(num_rows,)](logits, indices, num_rows, BLOCK_SIZE)
"""
MADE = "        indices = torch.tensor(indices, dtype=torch.int32, device=logits.device)\n"
COPIED = (
    "        indices_cpu = torch.tensor(indices, dtype=torch.int32)\n"
    "        indices = indices_cpu.to(device=logits.device, non_blocking=True)\n"
)
PINNED = (
    "        indices = torch.tensor(indices, dtype=torch.int32, pin_memory=True)"
    ".to(logits.device, non_blocking=True)\n"
)


def _changes(after: str) -> list[str]:
    return changes_between({PATH: BEFORE}, {PATH: after})


def test_a_tensor_copied_to_the_device_is_no_launch_change():
    assert _changes(BEFORE.replace(MADE, COPIED)) == []
    assert _changes(BEFORE.replace(MADE, PINNED)) == []


def test_a_copy_that_changes_the_values_is_a_launch_change():
    as_int64 = COPIED.replace("torch.int32", "torch.int64")
    assert _changes(BEFORE.replace(MADE, as_int64)) == ["launch apply_token_bitmask_inplace_kernel"]
    to_dtype = PINNED.replace(".to(logits.device,", ".to(torch.int64,")
    assert _changes(BEFORE.replace(MADE, to_dtype)) == ["launch apply_token_bitmask_inplace_kernel"]
