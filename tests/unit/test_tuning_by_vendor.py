"""A warp count chosen in the host by a vendor and architecture test changes the launch's
tuning, not the launch: the grid and arguments read nothing the test decides.

Shortened from python/xgrammar/kernels/apply_token_bitmask_inplace_triton.py of mlc-ai/xgrammar
at 3c5a333661c7 and its parent (Apache-2.0; that pull request is in tests/data/real_prs):
``WARP_SIZE`` is 64 on AMD parts other than gfx1xxx (``gcnArchName``), else 32, and
``num_warps`` divides by it instead of a literal 32.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

PATH = "python/xgrammar/kernels/apply_token_bitmask_inplace_triton.py"
BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def apply_token_bitmask_inplace_kernel(logits_ptr, num_rows, NUM_SMS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    for row_id in tl.range(pid, num_rows, NUM_SMS):
        offsets = tl.arange(0, BLOCK_SIZE)
        tl.store(logits_ptr + row_id * BLOCK_SIZE + offsets, -float("inf"))


def apply_token_bitmask_inplace_triton(logits):
    NUM_SMS = torch.cuda.get_device_properties("cuda").multi_processor_count
    BLOCK_SIZE = 4096

    apply_token_bitmask_inplace_kernel[(NUM_SMS,)](
        logits,
        logits.shape[0],
        NUM_SMS,
        BLOCK_SIZE,
        num_warps=BLOCK_SIZE // 32 // (16 // logits.element_size()),
        num_stages=3,
    )
"""
TEST = """\
    BLOCK_SIZE = 4096

    arch = torch.cuda.get_device_properties(0).gcnArchName
    if torch.version.hip is not None and "gfx1" not in arch:
        # For AMD GPUs (non-Navi)
        WARP_SIZE = 64
    else:
        WARP_SIZE = 32
"""
AFTER = BEFORE.replace("    BLOCK_SIZE = 4096\n", TEST).replace(
    "BLOCK_SIZE // 32 //", "BLOCK_SIZE // WARP_SIZE //"
)


def _changes(after: str) -> list[tuple[str, str, list[str]]]:
    old, new = {PATH: BEFORE}, {PATH: after}
    diff = file_diff(PATH, BEFORE, after)
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[PATH])
    return [(c.kind, c.name, sorted({b.kind for b in c.branches})) for c in analysis.changes]


def test_a_warp_count_chosen_by_vendor_and_arch_is_tuning_with_both_branches():
    assert _changes(AFTER) == [("tuning", "apply_token_bitmask_inplace_kernel", ["arch", "vendor"])]


def test_the_same_option_text_computed_otherwise_is_still_tuning():
    named = BEFORE.replace("BLOCK_SIZE // 32 //", "BLOCK_SIZE // WARP_SIZE //").replace(
        "    BLOCK_SIZE = 4096\n", "    BLOCK_SIZE = 4096\n    WARP_SIZE = 32\n"
    )
    moved = named.replace("    BLOCK_SIZE = 4096\n    WARP_SIZE = 32\n", TEST)
    old, new = {PATH: named}, {PATH: moved}
    analysis = analyze_diff(
        file_diff(PATH, named, moved), old_source=old.get, new_source=new.get, old_files=[PATH]
    )
    assert [(c.kind, c.name) for c in analysis.changes] == [
        ("tuning", "apply_token_bitmask_inplace_kernel")
    ]


def test_a_vendor_test_that_decides_the_grid_is_a_launch_change():
    grid = AFTER.replace("[(NUM_SMS,)]", "[(NUM_SMS * WARP_SIZE // 32,)]")
    assert _changes(grid)[0][:2] == ("launch", "apply_token_bitmask_inplace_kernel")
