"""An einops pattern with its axis names renamed throughout is the same operation, so a host
wrapper whose patterns only rename axes launches the same kernel the same way
(``bot/analysis/same_code.with_einops_axes_named_in_order``).

Shortened from ring_attention_pytorch/triton_flash_attn.py of lucidrains/ring-attention-pytorch
(MIT): at ab57c271fa9c (in tests/data/real_prs, a negative control) flash_attn_forward's
head-first patterns change from ``'b n h d -> b h n d'`` to ``'b h n d -> b n h d'`` (and back
for the output): both swap axes 1 and 2. The kernel is cut to one load and store.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

PATH = "ring_attention_pytorch/triton_flash_attn.py"
CODE = """\
import triton
import triton.language as tl
from einops import rearrange


@triton.jit
def _fwd_kernel(Q, Out, stride_qb, stride_qh, stride_qm, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.load(Q + offs))


def flash_attn_forward(q, o, head_first_dim=False):
    if head_first_dim:
        q = rearrange(q, '@IN@')
        o = rearrange(o, '@IN@')
    batch, seqlen_q, nheads, d = q.shape
    grid = (triton.cdiv(seqlen_q, 128), batch * nheads)
    _fwd_kernel[grid](q, o, q.stride(0), q.stride(2), q.stride(1), BLOCK=128)
    if head_first_dim:
        o = rearrange(o, '@OUT@')
    return o
"""


def _changes(before: tuple[str, str], after: tuple[str, str]) -> list[str]:
    old, new = (CODE.replace("@IN@", i).replace("@OUT@", o) for i, o in (before, after))
    analysis = analyze_diff(
        file_diff(PATH, old, new), old_source={PATH: old}.get, new_source={PATH: new}.get
    )
    return [f"{c.kind} {c.name}" for c in analysis.changes]


def test_patterns_that_swap_the_same_axes_launch_the_same():
    before = ("b n h d -> b h n d", "b h n d -> b n h d")
    after = ("b h n d -> b n h d", "b n h d -> b h n d")
    assert _changes(before, after) == []


def test_a_pattern_that_moves_other_axes_changes_the_launch():
    before = ("b n h d -> b h n d", "b h n d -> b n h d")
    after = ("b n h d -> b n d h", "b n d h -> b n h d")
    assert _changes(before, after) == ["launch _fwd_kernel"]
