"""A changed default of a caller's parameter counts in the values it hands a launcher only where
those values read it: handed on, or tested for whether the call runs, or picking a value of its
own (``64 if fast else 32``). A default that only picks which of the function's own tensors are
handed on (``k.chunk(...)[rank] if shard_kv_seq else k``) leaves every path's values as they
were (``launch_values._values_read``).

Shortened from ring_attention_pytorch/tree_attn_decoding.py and triton_flash_attn.py in
lucidrains/ring-attention-pytorch (MIT) at ab57c271fa9c and its parent f3ed323ddcb0 (in
tests/data/real_prs): ``tree_attn_decode``'s ``shard_kv_seq`` default goes from False to True;
the kernel is cut down to a copy.
"""

from __future__ import annotations

from tests.diff_util import changes_between

FLASH = "ring_attention_pytorch/triton_flash_attn.py"
DECODE = "ring_attention_pytorch/tree_attn_decoding.py"
FLASH_TEXT = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(
    Q,
    Out,
    seqlen_q,
    BLOCK_M: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(Out + offs_m, tl.load(Q + offs_m, mask=offs_m < seqlen_q) * 2.0, mask=offs_m < seqlen_q)


def flash_attn_forward(q, k, v, causal=False, block=128, head_first_dim=False):
    o = torch.empty_like(q)
    seqlen_q = q.numel()
    grid = (triton.cdiv(seqlen_q, block),)
    _fwd_kernel[grid](q, o, seqlen_q, BLOCK_M=block)
    return o, k, v
"""


def _decode(shard: str = "False", use_triton: str = "None", fast: str = "") -> str:
    block = "\n        block = 64 if fast else 32," if fast else ""
    return f"""\
import torch
import torch.distributed as dist

from ring_attention_pytorch.triton_flash_attn import flash_attn_forward


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


@torch.no_grad()
def tree_attn_decode(
    q,
    k=None,
    v=None,
    eps=1e-8,
    shard_kv_seq={shard},
    use_triton={use_triton},{f"{chr(10)}    fast={fast}," if fast else ""}
):
    if shard_kv_seq:
        assert exists(k), "keys and values must be passed if not already sharded across sequence"
        rank, world_size = dist.get_rank(), dist.get_world_size()
        k = k.chunk(world_size, dim=-2)
        v = v.chunk(world_size, dim=-2)

        k, v = (k[rank], v[rank]) if rank < len(k) else (None, None)

    if exists(k):
        use_triton = default(use_triton, q.is_cuda)
        if use_triton and q.is_cuda:
            local_out, _, lse = flash_attn_forward(
                q, k, v,
                causal=False,{block}
                head_first_dim=True,
            )
    return local_out
"""


def _changes(**head: str) -> list[str]:
    old = {FLASH: FLASH_TEXT, DECODE: _decode()}
    return changes_between(old, {FLASH: FLASH_TEXT, DECODE: _decode(**head)})


def test_a_default_that_picks_which_tensors_are_handed_on_changes_no_launch() -> None:
    assert _changes(shard="True") == []


def test_a_default_tested_for_whether_the_call_runs_changes_the_launch() -> None:
    assert _changes(use_triton="False") == ["launch _fwd_kernel"]


def test_a_default_that_picks_a_launch_value_changes_the_launch() -> None:
    old = {FLASH: FLASH_TEXT, DECODE: _decode(fast="False")}
    new = {FLASH: FLASH_TEXT, DECODE: _decode(fast="True")}
    assert changes_between(old, new) == ["launch _fwd_kernel"]
