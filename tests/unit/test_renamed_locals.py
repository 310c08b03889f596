"""A local renamed throughout a kernel is the same kernel, in whole files and in the diff's lines.

The kernel is shortened from colossalai/kernel/triton/flash_decoding.py in hpcaitech/ColossalAI
at bd38fe6b9123 and its parent (Apache-2.0; that pull request, a negative control, is in
tests/data/real_prs): the running sum ``l`` became ``l_i``.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.compare import renamed_only
from tests.diff_util import file_diff

PATH = "colossalai/kernel/triton/flash_decoding.py"
KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def _flash_decoding_fwd_kernel(Q, KCache, mid_o_lse, n, BLOCK_KV: tl.constexpr):
    m = tl.max(tl.load(Q + tl.arange(0, BLOCK_KV)), 0)
    l = tl.sum(tl.exp(tl.load(KCache + tl.arange(0, BLOCK_KV)) - m), 0)
    tl.store(mid_o_lse, m + tl.log(l))
"""
RENAMED = KERNEL.replace("    l = ", "    l_i = ").replace("tl.log(l)", "tl.log(l_i)")


def _changes(after: str, whole_files: bool) -> list[str]:
    diff = file_diff(PATH, KERNEL, after)
    if whole_files:
        old, new = {PATH: KERNEL}, {PATH: after}
        analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[PATH])
    else:
        analysis = analyze_diff(diff)
    return [f"{c.kind} {c.name}" for c in analysis.changes]


def test_a_local_renamed_throughout_is_no_change():
    assert _changes(RENAMED, whole_files=True) == []
    assert _changes(RENAMED, whole_files=False) == []


def test_a_local_swapped_for_another_is_a_body_change():
    swapped = KERNEL.replace("tl.log(l)", "tl.log(m)")
    assert _changes(swapped, whole_files=True) == ["body _flash_decoding_fwd_kernel"]
    assert _changes(swapped, whole_files=False) == ["body _flash_decoding_fwd_kernel"]


def test_a_rename_onto_a_name_already_used_is_not_a_rename():
    assert renamed_only(["l = a + 1", "x = l"], ["l_i = a + 1", "x = l_i"])
    assert not renamed_only(["l = m + 1"], ["m = m + 1"])  # the new name was there already
    assert not renamed_only(["l = a + 1"], ["l = a + 2"])  # a value, not a name
