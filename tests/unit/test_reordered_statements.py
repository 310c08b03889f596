"""An assignment moved past others it shares no name with is the same kernel; moved past one
that writes what it reads, it is not.

Shortened from scattermoe/kernels/ops.py of shawntan/scattermoe at 07d3c115694e and its parent
(Apache-2.0; that pull request is in tests/data/real_prs): in ``_groupXtY``'s loop, ``acc +=
tl.dot(xt, dy, ...)`` moved below the two pointer increments (``xt`` and ``dy`` already loaded).
"""

from __future__ import annotations

from tests.diff_util import changes_between

PATH = "scattermoe/kernels/ops.py"
BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _groupXtY(DY_ptr, stride_dym, X_ptr, stride_xm, DW_ptr, iters, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    M_block = tl.arange(0, BLOCK_M)
    xt_blk_ptrs = X_ptr + tl.arange(0, BLOCK_K)[:, None] + M_block[None, :] * stride_xm
    dy_blk_ptrs = DY_ptr + M_block[:, None] * stride_dym + tl.arange(0, BLOCK_N)[None, :]
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for i in range(0, iters):
        xt = tl.load(xt_blk_ptrs)
        dy = tl.load(dy_blk_ptrs)
        acc += tl.dot(xt, dy, out_dtype=tl.float32)
        xt_blk_ptrs += BLOCK_M * stride_xm
        dy_blk_ptrs += BLOCK_M * stride_dym
    tl.store(DW_ptr + tl.arange(0, BLOCK_K)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], acc)
"""
DOT = "        acc += tl.dot(xt, dy, out_dtype=tl.float32)\n"
STEPS = "        xt_blk_ptrs += BLOCK_M * stride_xm\n        dy_blk_ptrs += BLOCK_M * stride_dym\n"
LOADS = "        xt = tl.load(xt_blk_ptrs)\n        dy = tl.load(dy_blk_ptrs)\n"


def _changes(after: str, before: str = BEFORE) -> list[str]:
    return changes_between({PATH: before}, {PATH: after})


def test_a_statement_moved_past_independent_ones_is_no_change():
    moved = BEFORE.replace(DOT + STEPS, STEPS + "        # was here\n" + DOT)
    assert _changes(moved) == []


def test_a_load_moved_past_the_pointer_step_it_reads_is_a_body_change():
    moved = BEFORE.replace(LOADS + DOT + STEPS, DOT + STEPS + LOADS)
    assert _changes(moved) == ["body _groupXtY"]


def test_an_assignment_moved_past_a_store_of_what_it_writes_is_a_body_change():
    store = "        tl.store(DW_ptr, acc)\n"
    before_store = BEFORE.replace(DOT, DOT + store)
    moved = before_store.replace(DOT + store, store + DOT)
    assert _changes(moved, before_store) == ["body _groupXtY"]
