"""A launch whose grid and arguments pass the same values and whose tuning options alone
change is a tuning change (``bot/analysis/launch_values``, ``cross_file.compare_launches``).

The host code is shortened from native_sparse_attention/ops/triton/flash_attention.py
(``_flash_attention_bwd``'s launch of ``backward_sum_o_do``) in XunhaoLai/native-sparse-attention-
triton at 9bea856c911e and its parent b17f5745456d (Apache-2.0; that pull request is in
tests/data/real_prs): ``head_dim`` unpacked from ``o.shape`` became ``v_head_dim``, unpacked from
the same place, and ``num_warps`` / ``num_stages`` now come from ``max(qk_head_dim,
v_head_dim)``.
"""

from __future__ import annotations

import ast

from bot.analysis.launch_values import LaunchValues
from tests.diff_util import analysis_between

BEFORE = """\
def _flash_attention_bwd(o, do, q, k):
    q_len, num_q_heads, head_dim = q.shape
    k_len, num_k_heads, head_dim = k.shape
    o_len, num_o_heads, head_dim = o.shape
    BLOCK_SIZE_O = 256
    BLOCK_SIZE_D = triton.next_power_of_2(head_dim)
    num_warps, num_stages = get_num_warps_stages(head_dim, BLOCK_SIZE_O, IS_HOPPER_GPU)
    grid = (triton.cdiv(o_len, BLOCK_SIZE_O), num_o_heads)
    backward_sum_o_do[grid](
        o, do, delta, o_len, head_dim,
        BLOCK_SIZE_O=BLOCK_SIZE_O,
        BLOCK_SIZE_D=BLOCK_SIZE_D,
        num_warps=num_warps,
        num_stages=num_stages,
    )
"""

AFTER = (
    BEFORE.replace("head_dim = q.shape", "qk_head_dim = q.shape")
    .replace("head_dim = k.shape", "qk_head_dim = k.shape")
    .replace("head_dim = o.shape", "v_head_dim = o.shape")
    .replace(
        "BLOCK_SIZE_D = triton.next_power_of_2(head_dim)",
        "BLOCK_SIZE_VD = triton.next_power_of_2(v_head_dim)",
    )
    .replace(
        "get_num_warps_stages(head_dim, BLOCK_SIZE_O, IS_HOPPER_GPU)",
        "get_num_warps_stages(\n        max(qk_head_dim, v_head_dim), BLOCK_SIZE_O, IS_HOPPER_GPU\n    )",
    )
    .replace("o_len, head_dim,", "o_len, v_head_dim,")
    .replace("BLOCK_SIZE_D=BLOCK_SIZE_D,", "BLOCK_SIZE_D=BLOCK_SIZE_VD,")
)


def _values(source: str) -> tuple[LaunchValues, ast.Call]:
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    launch = next(
        n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
    )
    return LaunchValues(func), launch


def _digest(source: str, untuned: bool) -> str | None:
    values, launch = _values(source)
    return values.digest(launch, untuned=untuned)


def test_names_unpacked_from_the_same_value_pass_the_same_argument():
    assert _digest(BEFORE, untuned=True) == _digest(AFTER, untuned=True)
    assert _digest(BEFORE, untuned=True) is not None


def test_the_tuning_options_are_what_differs():
    assert _digest(BEFORE, untuned=False) != _digest(AFTER, untuned=False)
    values, launch = _values(AFTER)
    assert "get_num_warps_stages" in values.options[id(launch)]["num_warps"]


def test_an_element_unpacked_from_another_place_is_another_argument():
    swapped = AFTER.replace(
        "o_len, num_o_heads, v_head_dim = o.shape", "o_len, v_head_dim, x = o.shape"
    )
    assert _digest(BEFORE, untuned=True) != _digest(swapped, untuned=True)
    other = AFTER.replace("= o.shape", "= do.shape")
    assert _digest(BEFORE, untuned=True) != _digest(other, untuned=True)


KERNEL = """\
import triton
import triton.language as tl
from native_sparse_attention.ops.triton.utils import get_num_warps_stages


@triton.jit
def backward_sum_o_do(o_ptr, do_ptr, delta_ptr, o_len, HEAD_DIM, BLOCK_SIZE_O: tl.constexpr,
                      BLOCK_SIZE_D: tl.constexpr):
    off_o = tl.program_id(0) * BLOCK_SIZE_O + tl.arange(0, BLOCK_SIZE_O)
    o = tl.load(o_ptr + off_o, mask=off_o < o_len, other=0)
    do = tl.load(do_ptr + off_o, mask=off_o < o_len, other=0)
    tl.store(delta_ptr + off_o, o * do, mask=off_o < o_len)


"""


def test_a_launch_whose_options_alone_pass_other_values_is_a_tuning_change():
    path = "native_sparse_attention/ops/triton/flash_attention.py"
    analysis = analysis_between({path: KERNEL + BEFORE}, {path: KERNEL + AFTER})
    assert [(c.kind, c.name) for c in analysis.changes] == [("tuning", "backward_sum_o_do")]
