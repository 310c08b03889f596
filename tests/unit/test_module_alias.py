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

from tests.diff_util import changes_between

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
