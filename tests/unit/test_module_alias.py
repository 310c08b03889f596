"""A module's import alias renamed is the same kernel: ``tl.x`` and ``triton.language.x`` are one
program, and so are ``tle.x`` and ``ext.x`` when both name one module.

Two real excerpts, shortened:
- trident/kernel/relu.py of kakaobrain/trident at 534b127c1b5c and its parent (Apache-2.0; that
  pull request, a negative control, is in tests/data/real_prs): ``triton.language.x`` written as
  ``tl.x`` after a new ``import triton.language as tl``, in the body and the annotations;
- src/flag_gems/ops/argmin.py of flagos-ai/FlagGems (Apache-2.0): its pull request #2973 renamed
  the alias of ``from flag_gems.utils import triton_lang_extension as tle`` to ``ext``.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import changes_between, file_diff

RELU = "trident/kernel/relu.py"
RELU_BEFORE = """\
import triton

from trident import language


class ReLU:
    @staticmethod
    @triton.jit
    def forward(x_ptr, y_ptr, stride, size, block_size: triton.language.constexpr):
        i = triton.language.program_id(0)
        j = triton.language.program_id(1)

        block = triton.language.arange(0, block_size) + j * block_size
        mask = block < size
        span = i * stride + block

        x = triton.language.load(x_ptr + span, mask, 0.0)
        y = language.relu(x)

        triton.language.store(y_ptr + span, y, mask)
"""
RELU_AFTER = RELU_BEFORE.replace(
    "import triton\n", "import triton\nimport triton.language as tl\n"
).replace("triton.language.", "tl.")

ARGMIN = "src/flag_gems/ops/argmin.py"
ARGMIN_BEFORE = """\
import triton
import triton.language as tl

from flag_gems.utils import libentry
from flag_gems.utils import triton_lang_extension as tle


@libentry()
@triton.jit
def argmin_kernel_1(inp, mid_value, mid_index, M, BLOCK_SIZE: tl.constexpr):
    pid = tle.program_id(0)
    offset = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inp_val = tl.load(inp + offset, mask=offset < M, other=float("inf"))
    min_val, min_index = tl.min(inp_val, axis=0, return_indices=True)
    tl.store(mid_value + pid, min_val)
    tl.store(mid_index + pid, min_index + pid * BLOCK_SIZE)
"""
ARGMIN_AFTER = ARGMIN_BEFORE.replace(" as tle", " as ext").replace("tle.", "ext.")


def _changes(path: str, before: str, after: str) -> list[str]:
    return changes_between({path: before}, {path: after})


def test_the_module_written_through_a_new_alias_is_no_change():
    assert _changes(RELU, RELU_BEFORE, RELU_AFTER) == []


def test_an_alias_of_a_module_renamed_is_no_change():
    assert _changes(ARGMIN, ARGMIN_BEFORE, ARGMIN_AFTER) == []


def test_an_alias_bound_to_another_module_is_a_body_change():
    other = ARGMIN_BEFORE.replace("utils import triton_lang_extension", "utils import tl_shim")
    assert _changes(ARGMIN, ARGMIN_BEFORE, other) == ["body argmin_kernel_1"]
    moved = RELU_AFTER.replace("tl.program_id(1)", "tl.program_id(2)")
    assert _changes(RELU, RELU_BEFORE, moved) == ["body forward"]


# From the diff's lines alone (no whole file): the aliases are those the shown import lines bind.


def _from_the_diff(*files: tuple[str, str, str]) -> Analysis:
    return analyze_diff("".join(file_diff(path, before, after) for path, before, after in files))


def test_from_the_diff_alone_the_module_written_through_a_new_alias_is_no_change():
    analysis = _from_the_diff((RELU, RELU_BEFORE, RELU_AFTER))
    assert analysis.changes == []
    assert [u.path for u in analysis.unclassified] == [RELU]  # named, never silent
    moved = RELU_AFTER.replace("tl.program_id(1)", "tl.program_id(2)")
    analysis = _from_the_diff((RELU, RELU_BEFORE, moved))
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == ["body forward"]


def test_from_the_diff_alone_an_alias_bound_to_another_module_is_a_body_change():
    other = RELU_AFTER.replace("import triton.language as tl", "import triton_shim as tl")
    analysis = _from_the_diff((RELU, RELU_BEFORE, other))
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == ["body forward"]


# trident/language/function.py of the same pull request: the formatter re-wraps a statement
# that the alias made shorter, and drops the grouping parentheses around its whole value.
FUNCTION = "trident/language/function.py"
FUNCTION_BEFORE = """\
import triton


@triton.jit
def make_conv2d_blk(ch_st, w_st, ch_bs, h_bs, w_bs):
    blk = (
        triton.language.arange(0, w_bs)[:, None]
        + (triton.language.arange(0, h_bs) * w_st)[None, :]
    )
    return blk[:, :, None] + (triton.language.arange(0, ch_bs) * ch_st)[None, None, :]
"""
FUNCTION_AFTER = """\
import triton
import triton.language as tl


@triton.jit
def make_conv2d_blk(ch_st, w_st, ch_bs, h_bs, w_bs):
    blk = tl.arange(0, w_bs)[:, None] + (tl.arange(0, h_bs) * w_st)[None, :]
    return blk[:, :, None] + (tl.arange(0, ch_bs) * ch_st)[None, None, :]
"""


def test_from_the_diff_alone_lines_wrapped_otherwise_are_no_change():
    assert _from_the_diff((FUNCTION, FUNCTION_BEFORE, FUNCTION_AFTER)).changes == []
    grouped = FUNCTION_AFTER.replace(
        "blk = tl.arange(0, w_bs)[:, None] + (tl.arange(0, h_bs) * w_st)[None, :]",
        "blk = (tl.arange(0, w_bs)[:, None] + tl.arange(0, h_bs)) * w_st",
    )
    analysis = _from_the_diff((FUNCTION, FUNCTION_BEFORE, grouped))
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == ["body make_conv2d_blk"]


# A file whose alias import is older than the change and far from it: the diff does not show it.
FAR = "ops/far.py"
FAR_BEFORE = (
    "import triton\nimport triton.language as tl\n\n"
    + "".join(f"SIZE_{i} = {i}\n" for i in range(12))
    + RELU_BEFORE[RELU_BEFORE.index("\n\nclass ReLU") :]
)
FAR_AFTER = FAR_BEFORE.replace("triton.language.", "tl.")


def test_from_the_diff_alone_an_alias_bound_in_lines_it_does_not_show_is_undecided():
    assert "import triton.language" not in file_diff(FAR, FAR_BEFORE, FAR_AFTER)
    # tl.x for triton.language.x throughout: the same code if the file binds tl so, which no
    # line of the diff shows; the kernel is named as not classified, not changed
    analysis = _from_the_diff((FAR, FAR_BEFORE, FAR_AFTER))
    assert analysis.changes == []
    [far] = analysis.unclassified
    assert far.path == FAR and "forward:" in far.why and "tl as triton.language" in far.why
    moved = FAR_AFTER.replace("tl.program_id(1)", "tl.program_id(2)")
    analysis = _from_the_diff((FAR, FAR_BEFORE, moved))
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == ["body forward"]
