"""A jit function that nothing calls, imports or launches, in a file that launches its kernels
itself, and that never reads its program's index, is a helper no kernel uses
(``reach/helpers._compiled_into_nothing``): its change changes no kernel and is not listed.

Shortened from stickbreaking_attention/sb_varlen/sb_varlen_bwd.py in
shawntan/stickbreaking-attention at ff45fee78c5b and 3147a3841b02 (Apache-2.0; both pull requests
are in tests/data/real_prs): the spin-locked accumulation ``_locked_add`` is kept beside the
``locked_add`` that ``_backward_one_row`` calls, and nothing calls it.
"""

from __future__ import annotations

from tests.diff_util import changes_between

PATH = "stickbreaking_attention/sb_varlen/sb_varlen_bwd.py"

BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _locked_add(Lock_ptr, Count_ptr, A_ptrs, a, B_ptrs, b):
    while tl.atomic_cas(Lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(Count_ptr, eviction_policy="evict_last")
    if count == 0:
        tl.store(Count_ptr, True, eviction_policy="evict_last")
    else:
        a += tl.load(A_ptrs, eviction_policy="evict_last")
        b += tl.load(B_ptrs, eviction_policy="evict_last")
    tl.store(A_ptrs, a, eviction_policy="evict_last")
    tl.store(B_ptrs, b, eviction_policy="evict_last")
    tl.atomic_xchg(Lock_ptr, 0)


@triton.jit
def locked_add(Lock_ptr, Count_ptr, A_ptrs, a, B_ptrs, b):
    tl.atomic_add(A_ptrs, a)
    tl.atomic_add(B_ptrs, b)


@triton.jit
def _backward_one_row(KV_Lock_ptr, KV_Count_ptr, DK_ptrs, DV_ptrs, block_dk, block_dv):
    locked_add(KV_Lock_ptr, KV_Count_ptr, DK_ptrs, block_dk, DV_ptrs, block_dv)


@triton.jit
def _backward(KV_Lock_ptr, KV_Count_ptr, DK_ptr, DV_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    block = tl.zeros([BLOCK], dtype=tl.float32)
    _backward_one_row(KV_Lock_ptr, KV_Count_ptr, DK_ptr + offs, DV_ptr + offs, block, block)


def _compileable_backward(dkdv_lock, dkdv_count, dk, dv, num_blocks):
    _backward[(num_blocks,)](dkdv_lock, dkdv_count, dk, dv, BLOCK=64)
"""

# the head of 3147a3841b02: the unused spin lock writes 1 for True and prints no more
AFTER = BEFORE.replace(
    """        tl.store(Count_ptr, True, eviction_policy="evict_last")""",
    """        tl.store(Count_ptr, 1, eviction_policy="evict_last")""",
)


def test_a_helper_nothing_calls_changes_no_kernel():
    assert AFTER != BEFORE
    assert changes_between({PATH: BEFORE}, {PATH: AFTER}) == []


def test_a_new_helper_nothing_calls_is_not_a_new_kernel():
    # the head of ff45fee78c5b: the spin lock kept under a new name, called by nothing
    without = (
        BEFORE[: BEFORE.index("@triton.jit")]
        + BEFORE[BEFORE.index("@triton.jit\ndef locked_add") :]
    )
    assert "_locked_add" not in without
    assert changes_between({PATH: without}, {PATH: BEFORE}) == []


def test_a_jit_function_that_reads_its_program_index_is_a_kernel_launched_elsewhere():
    before = BEFORE.replace(
        "    count = tl.load(", "    pid = tl.program_id(0)\n    count = tl.load("
    )
    after = AFTER.replace(
        "    count = tl.load(", "    pid = tl.program_id(0)\n    count = tl.load("
    )
    assert changes_between({PATH: before}, {PATH: after}) == ["body _locked_add"]


def test_in_a_file_that_launches_nothing_it_may_be_launched_from_another_module():
    cut = BEFORE.index("def _compileable_backward")
    assert "body _locked_add" in changes_between({PATH: BEFORE[:cut]}, {PATH: AFTER[:cut]})


def test_the_helper_a_kernel_calls_still_changes_that_kernel():
    after = BEFORE.replace(
        "    tl.atomic_add(B_ptrs, b)", "    tl.atomic_add(B_ptrs, b, sem='relaxed')"
    )
    assert changes_between({PATH: BEFORE}, {PATH: after}) == ["body _backward"]
