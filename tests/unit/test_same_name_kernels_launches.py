"""Launches of kernels of one name defined in two files are compared per file
(``cross_file.compare_launches``), and a kernel whose launch changed and whose jit helper changed
is a body change with a host change (``reach/helpers.fold_helpers``).

Shortened from shawntan/stickbreaking-attention at 3147a3841b02 and its parent ff45fee78c5b
(Apache-2.0; that pull request is in tests/data/real_prs): sb_varlen/sb_varlen_bwd.py's
``_backward`` runs a changed helper ``locked_add`` while its launcher ``_compileable_backward``
now allocates the lock buffers itself (int32 counts, not bool), and sb_attn/sb_bwd.py's own
``_backward`` is launched with dk/dv allocated as bfloat16.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

VARLEN = "stickbreaking_attention/sb_varlen/sb_varlen_bwd.py"
ATTN = "stickbreaking_attention/sb_attn/sb_bwd.py"

VARLEN_BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def locked_add(Lock_ptr, Count_ptr, A_ptrs, a):
    while tl.atomic_cas(Lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(Count_ptr)
    if count == 0:
        tl.store(Count_ptr, True)
    else:
        a += tl.load(A_ptrs)
    tl.store(A_ptrs, a)
    tl.atomic_xchg(Lock_ptr, 0)


@triton.jit
def _backward(KV_Lock_ptr, KV_Count_ptr, DK_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    locked_add(KV_Lock_ptr, KV_Count_ptr, DK_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))


def _compileable_backward(dk, dkdv_lock, dkdv_count, num_blocks):
    _backward[(num_blocks,)](dkdv_lock, dkdv_count, dk, BLOCK=64)


def varlen_bwd(k, num_blocks):
    dk = torch.zeros_like(k, dtype=torch.float32)
    dkdv_lock = torch.zeros((num_blocks,), dtype=torch.int32, device=k.device)
    dkdv_count = torch.zeros((num_blocks,), dtype=torch.bool, device=k.device)
    _compileable_backward(dk, dkdv_lock, dkdv_count, num_blocks)
    return dk
"""

VARLEN_AFTER = """\
import torch
import triton
import triton.language as tl


@triton.jit
def locked_add(Lock_ptr, Count_ptr, A_ptrs, a):
    tl.atomic_add(A_ptrs, a)


@triton.jit
def _backward(KV_Lock_ptr, KV_Count_ptr, DK_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    locked_add(KV_Lock_ptr, KV_Count_ptr, DK_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))


def _compileable_backward(dk, num_blocks):
    dkdv_lock = torch.zeros((num_blocks,), dtype=torch.int32, device=dk.device)
    dkdv_count = torch.zeros((num_blocks,), dtype=torch.int32, device=dk.device)
    _backward[(num_blocks,)](dkdv_lock, dkdv_count, dk, BLOCK=64)


def varlen_bwd(k, num_blocks):
    dk = torch.zeros_like(k)
    _compileable_backward(dk, num_blocks)
    return dk
"""

ATTN_BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _backward(DK_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(DK_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))


def _bwd(k, num_blocks):
    dk = torch.zeros_like(k)
    _backward[(num_blocks,)](dk, BLOCK=64)
    return dk
"""

ATTN_AFTER = ATTN_BEFORE.replace(
    "dk = torch.zeros_like(k)", "dk = torch.zeros_like(k, dtype=torch.bfloat16)"
)


def _by_path() -> dict[str, tuple[str, list[str]]]:
    analysis = analysis_between(
        {VARLEN: VARLEN_BEFORE, ATTN: ATTN_BEFORE}, {VARLEN: VARLEN_AFTER, ATTN: ATTN_AFTER}
    )
    assert {c.name for c in analysis.changes} == {"_backward"}
    for c in analysis.changes:  # each change names its own file's kernel
        assert c.new is not None and c.new.path == c.path
    return {c.path: (c.kind, c.host_changes) for c in analysis.changes}


def test_each_file_s_kernel_keeps_its_own_change():
    found = _by_path()
    assert set(found) == {VARLEN, ATTN}
    assert found[ATTN] == ("launch", [])


def test_a_changed_helper_and_a_changed_launch_are_a_body_change_with_a_host_change():
    kind, host = _by_path()[VARLEN]
    assert kind == "body"
    assert host == [f"{VARLEN}: the host code that launches it changed"]


def test_values_a_caller_hands_to_a_retuned_launcher_are_a_host_change():
    # ff45fee78c5b's form: the launcher keeps its parameters while its launch is retuned, and
    # its caller allocates dk in another dtype
    after = (
        VARLEN_BEFORE.replace(
            "    tl.store(A_ptrs, a)\n", "    tl.store(A_ptrs, a, eviction_policy='evict_last')\n"
        )
        .replace("dkdv_count, dk, BLOCK=64)", "dkdv_count, dk, BLOCK=64, num_warps=4)")
        .replace("torch.zeros_like(k, dtype=torch.float32)", "torch.zeros_like(k)")
    )
    changes = analysis_between({VARLEN: VARLEN_BEFORE}, {VARLEN: after}).changes
    assert [(c.name, c.kind, c.host_changes) for c in changes] == [
        ("_backward", "body", [f"{VARLEN}: the host code that launches it changed"])
    ]
