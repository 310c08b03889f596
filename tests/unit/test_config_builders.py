"""A config list moved into a function that returns the same list is the same search space.

Shortened from attorch/softmax_kernels.py and attorch/utils.py of BobMcDear/attorch at
3da6ee9f8382 and its parent (MIT; that pull request, a negative control, is in
tests/data/real_prs): ``configs=[triton.Config({}, num_warps=2**i) for i in range(6)]`` became
``configs=warps_kernel_configs()``, a function of utils.py returning that comprehension.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import changes_between, file_diff

KERNELS = "attorch/softmax_kernels.py"
UTILS = "attorch/utils.py"
LISTED = "configs=[triton.Config({}, num_warps=2**i) for i in range(6)],"
BUILT = "configs=warps_kernel_configs(),"
KERNEL = """\
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({}, num_warps=2**i) for i in range(6)],
    key=['batch_dim', 'feat_dim'],
)
@triton.jit
def softmax_forward_kernel(input_pointer, output_pointer, feat_dim, BLOCK_SIZE_FEAT: tl.constexpr):
    feat_offset = tl.arange(0, BLOCK_SIZE_FEAT)
    x = tl.load(input_pointer + feat_offset, mask=feat_offset < feat_dim, other=-float('inf'))
    x = tl.exp(x - tl.max(x, axis=0))
    tl.store(output_pointer + feat_offset, x / tl.sum(x, axis=0), mask=feat_offset < feat_dim)
"""
UTILS_BEFORE = """\
import triton


def element_wise_kernel_configs(block_name='BLOCK_SIZE'):
    return [triton.Config({block_name: 64}, num_warps=2)]
"""
BUILDER = """

def warps_kernel_configs():
    \"\"\"
    Returns kernel configurations with all possible number of warps.
    \"\"\"
    return [triton.Config({}, num_warps=2**i) for i in range(6)]
"""
IMPORTED = KERNEL.replace(LISTED, BUILT).replace(
    "import triton.language as tl\n",
    "import triton.language as tl\n\nfrom .utils import warps_kernel_configs\n",
)


def _changes(kernel_after: str, utils_after: str) -> list[str]:
    old = {KERNELS: KERNEL, UTILS: UTILS_BEFORE}
    return changes_between(old, {KERNELS: kernel_after, UTILS: utils_after})


def test_the_same_list_built_by_an_imported_function_is_no_change():
    assert _changes(IMPORTED, UTILS_BEFORE + BUILDER) == []


def test_the_same_list_built_by_a_function_of_the_file_is_no_change():
    here = KERNEL.replace(LISTED, BUILT).replace(
        "\n\n@triton.autotune", BUILDER + "\n\n@triton.autotune"
    )
    assert _changes(here, UTILS_BEFORE) == []


def test_a_builder_returning_another_list_is_tuning():
    other = BUILDER.replace("range(6)", "range(5)")
    assert _changes(IMPORTED, UTILS_BEFORE + other) == ["tuning softmax_forward_kernel"]


def test_a_builder_reading_a_module_name_is_not_followed():
    reads = BUILDER.replace("range(6)", "range(MAX_LOG_WARPS)")
    assert _changes(IMPORTED, "MAX_LOG_WARPS = 6\n" + UTILS_BEFORE + reads) == [
        "tuning softmax_forward_kernel"
    ]


# From the diff's lines alone: the builder's def and return are lines of the diff.


def _from_the_diff(kernel_after: str, utils_after: str, kernel: str = KERNEL) -> Analysis:
    return analyze_diff(
        file_diff(KERNELS, kernel, kernel_after) + file_diff(UTILS, UTILS_BEFORE, utils_after)
    )


def test_from_the_diff_alone_the_same_list_built_by_an_imported_function_is_no_change():
    analysis = _from_the_diff(IMPORTED, UTILS_BEFORE + BUILDER)
    assert analysis.changes == []
    assert {u.path for u in analysis.unclassified} == {KERNELS, UTILS}  # never silent


def test_from_the_diff_alone_the_same_list_built_by_a_function_of_the_file_is_no_change():
    here = KERNEL.replace(LISTED, BUILT).replace(
        "\n\n@triton.autotune", BUILDER + "\n\n@triton.autotune"
    )
    assert _from_the_diff(here, UTILS_BEFORE).changes == []


def test_from_the_diff_alone_a_builder_returning_another_list_is_tuning():
    other = BUILDER.replace("range(6)", "range(5)")
    analysis = _from_the_diff(IMPORTED, UTILS_BEFORE + other)
    assert all(c.kind == "tuning" for c in analysis.changes) and analysis.changes
    reads = BUILDER.replace("range(6)", "range(MAX_LOG_WARPS)")
    assert _from_the_diff(IMPORTED, "MAX_LOG_WARPS = 6\n" + UTILS_BEFORE + reads).changes


# The kernel's def among the lines the diff shows: the list is compared as the kernel's.
INLINE = KERNEL.replace(
    "@triton.autotune(\n    " + LISTED + "\n    key=['batch_dim', 'feat_dim'],\n)",
    "@triton.autotune(" + LISTED + " key=['batch_dim', 'feat_dim'])",
)


def test_from_the_diff_alone_a_shown_kernel_whose_list_a_builder_returns_is_no_change():
    after = INLINE.replace(LISTED, BUILT).replace(
        "import triton.language as tl\n",
        "import triton.language as tl\n\nfrom .utils import warps_kernel_configs\n",
    )
    analysis = _from_the_diff(after, UTILS_BEFORE + BUILDER, INLINE)
    assert analysis.changes == []
    other = BUILDER.replace("range(6)", "range(5)")
    analysis = _from_the_diff(after, UTILS_BEFORE + other, INLINE)
    assert "tuning softmax_forward_kernel" in [f"{c.kind} {c.name}" for c in analysis.changes]


def test_from_the_diff_alone_a_builder_on_one_line_is_followed():
    listed = "[triton.Config({}, num_warps=2**i) for i in range(6)]"
    one_line = f"\n\ndef warps_kernel_configs(): return {listed}\n"
    assert _from_the_diff(IMPORTED, UTILS_BEFORE + one_line).changes == []
