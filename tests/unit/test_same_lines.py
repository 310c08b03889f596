"""A parameter removed from a kernel's signature that no line the diff shows reads: from the
diff's lines alone the kernel is not classified, rather than changed (bot/analysis/same_lines.py).

Excerpts, from two real pull requests of tests/data/real_prs:

- xlite-dev/ffpa-attn b8da57e79fdd (Apache-2.0), src/ffpa_attn/triton/_ffpa_bwd.py: the unread
  ``num_k_blocks`` removed from ``_ffpa_bwd_decode_dq_reduce_kernel`` and from its launch; the
  hunk's header is the kernel's ``def``, its lines a part of the signature;
- FlagOpen/FlagGems e364c3e67791 (Apache-2.0), src/flag_gems/ops/instancenorm.py: ``num_warps=4``
  removed from ``update_running_stats_kernel``'s signature, a parameter with a default (and a
  launch option's name), which is a change.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

FFPA = "src/ffpa_attn/triton/_ffpa_bwd.py"
HEAD = "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
SIGNATURE = """\
@@ -1222,7 +1222,6 @@ def _ffpa_bwd_decode_dq_reduce_kernel(
   stride_dqm: int,
   nheads: int,
   seqlen_q: int,
-  num_k_blocks: int,
   headdim: int,
   BLOCK_K: tl.constexpr,
   BLOCK_M: tl.constexpr,
"""
LAUNCH = """\
@@ -1541,7 +1540,6 @@ def _ffpa_attn_backward_triton_impl(
         dq.stride(2),
         nheads,
         seqlen_q,
-        num_k_blocks,
         headdim,
         BLOCK_K=64,
         BLOCK_M=block_m_decode,
"""


def _changes(analysis: Analysis) -> list[str]:
    return [f"{c.kind} {c.name}" for c in analysis.changes]


def test_from_the_diff_alone_an_unread_parameter_removed_is_left_unclassified():
    analysis = analyze_diff(HEAD.format(path=FFPA) + SIGNATURE + LAUNCH)
    assert analysis.changes == []
    [named] = analysis.unclassified
    assert named.path == FFPA
    assert "_ffpa_bwd_decode_dq_reduce_kernel:" in named.why and "num_k_blocks" in named.why


def test_lines_that_are_not_shown_to_be_the_signature_are_read_as_the_body():
    # the hunk's header is the def, but its lines are a call's arguments: no annotation marks
    # them as parameters, and the lines between the def and the hunk are not shown
    call = HEAD.format(path=FFPA) + SIGNATURE.replace(": int,", ",").replace(": tl.constexpr,", ",")
    assert _changes(analyze_diff(call)) == ["body _ffpa_bwd_decode_dq_reduce_kernel"]


INSTANCENORM = "src/flag_gems/ops/instancenorm.py"
DEFAULTED = """\
@@ -280,7 +280,6 @@ def update_running_stats_kernel(
     eps,
     BLOCK_BATCH_SIZE: tl.constexpr = 1,
     BLOCK_CHANNEL_SIZE: tl.constexpr = 2048,
-    num_warps=4,
 ):
     cid = tl.program_id(0) * BLOCK_CHANNEL_SIZE + tl.arange(0, BLOCK_CHANNEL_SIZE)
     col_mask = cid < C
"""


def test_a_parameter_with_a_default_removed_is_a_change():
    analysis = analyze_diff(HEAD.format(path=INSTANCENORM) + DEFAULTED)
    assert [c.name for c in analysis.changes] == ["update_running_stats_kernel"]


# The same removal where the kernel's def and its launch are shown whole: the launch's argument
# for the parameter goes with it.
KERNEL = "ops/reduce.py"
KERNEL_BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _reduce_kernel(
    DQ,
    DQ_accum,
    num_k_blocks,
    BLOCK_M: tl.constexpr,
):
    off = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(DQ + off, tl.load(DQ_accum + off))


def reduce(dq, dq_accum, num_k_blocks, headdim):
    _reduce_kernel[(triton.cdiv(headdim, 64),)](dq, dq_accum, num_k_blocks, 64)
"""
KERNEL_AFTER = KERNEL_BEFORE.replace("    num_k_blocks,\n", "").replace(
    "(dq, dq_accum, num_k_blocks, 64)", "(dq, dq_accum, 64)"
)


def test_a_parameter_that_a_shown_line_reads_removed_is_a_body_change():
    offsets = "tl.arange(0, BLOCK_M)\n"
    before = KERNEL_BEFORE.replace(offsets, "tl.arange(0, BLOCK_M) % num_k_blocks\n")
    after = KERNEL_AFTER.replace(offsets, "tl.arange(0, BLOCK_M) % num_k_blocks\n")
    analysis = analyze_diff(file_diff(KERNEL, before, after))
    assert _changes(analysis) == ["body _reduce_kernel"]


def test_from_the_diff_alone_the_launch_argument_of_an_unread_parameter_goes_with_it():
    analysis = analyze_diff(file_diff(KERNEL, KERNEL_BEFORE, KERNEL_AFTER))
    assert analysis.changes == []
    assert [u.path for u in analysis.unclassified] == [KERNEL]
    other = KERNEL_AFTER.replace("(dq, dq_accum, 64)", "(dq, dq_accum, 128)")
    analysis = analyze_diff(file_diff(KERNEL, KERNEL_BEFORE, other))
    assert _changes(analysis) == ["launch _reduce_kernel"]
