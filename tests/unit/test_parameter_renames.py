"""A function whose parameters are only renamed hands its calls the same values
(``reach/call_gates.parameter_renames``): a formatter pass that renames a host function's
parameters and passes them on in the same order changes no launch below it.

The host function is shortened from sonicmoe/functional/__init__.py in Dao-AILab/sonic-moe
(Apache-2.0) at e4018df2d1e8 ("style") and its parent c6ba863ee90d (both in tests/data/real_prs):
moe_general_routing_inputs renames ``router_scores_selected, sorted_selected_T, selected_E`` to
``router_scores, token_indices, expert_indices``. The kernel and its launcher are cut down from
sonicmoe/functional/reduction_over_k_gather.py of the same commits.
"""

from __future__ import annotations

import ast

from bot.analysis.reach.call_gates import parameter_renames
from tests.unit.test_call_values import analysis_between

INIT = "sonicmoe/functional/__init__.py"
GATHER = "sonicmoe/functional/reduction_over_k_gather.py"
GATHER_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def token_gather_sum_kernel(
    x_ptr,  # (Mtotal, H)
    M_perm_ptr,  # (Mtotal,) int32
    M_offset_ptr,  # (T+1,)   int32
    out_ptr,  # (T, H)
    H: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    # 1D tiling over T only
    t_idx = tl.program_id(axis=0).to(tl.uint32)
    Ms = tl.load(M_offset_ptr + t_idx).to(tl.uint32)
    h_idx = tl.arange(0, BLOCK_H)
    row = tl.load(M_perm_ptr + Ms)
    tl.store(out_ptr + t_idx * H + h_idx, tl.load(x_ptr + row * H + h_idx, mask=h_idx < H))


def token_gather_and_sum(x, out, M_perm, M_offset):
    T, H = out.shape
    # 1D grid over T only
    token_gather_sum_kernel[(T,)](
        x,
        M_perm,
        M_offset,
        out,
        H=H,
        BLOCK_H=triton.next_power_of_2(H),
    )
    return out
"""


def _init(scores: str, tokens: str, experts: str, tk: str = "size(0)") -> str:
    return f"""\
import torch

from .reduction_over_k_gather import token_gather_and_sum


class _UpProjection(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w1, TK, x_gather_idx):
        out = torch.empty(TK, w1.size(1), device=x.device)
        return token_gather_and_sum(x @ w1, out, x_gather_idx, x_gather_idx)


def general_routing_router_metadata(router_scores_selected, sorted_selected_T, selected_E, T, E):
    x_gather_idx = sorted_selected_T.int()
    return selected_E.bincount(minlength=E), x_gather_idx


def moe_general_routing_inputs(
    x: torch.Tensor,
    {scores}: torch.Tensor,
    {tokens}: torch.Tensor,
    {experts}: torch.Tensor,
    w1: torch.Tensor,
    is_inference_mode_enabled: bool = False,
) -> torch.Tensor:
    T = x.size(0)
    TK = {scores}.{tk}
    E = w1.size(-1)
    (
        expert_frequency,
        x_gather_idx,
    ) = general_routing_router_metadata({scores}, {tokens}, {experts}, T, E)

    y1 = _UpProjection.apply(
        x,
        w1,
        TK,
        x_gather_idx,
    )
    return y1, expert_frequency
"""


BASE = _init("router_scores_selected", "sorted_selected_T", "selected_E")


def _changes(head: str) -> set[tuple[str, str]]:
    old = {INIT: BASE, GATHER: GATHER_TEXT}
    new = {INIT: head, GATHER: GATHER_TEXT}
    return {(c.kind, c.name) for c in analysis_between(old, new).changes}


def test_parameters_renamed_and_passed_on_in_the_same_order_change_no_launch():
    assert _changes(_init("router_scores", "token_indices", "expert_indices")) == set()


def test_a_value_changed_under_renamed_parameters_is_still_a_launch_change():
    head = _init("router_scores", "token_indices", "expert_indices", tk="size(1)")
    assert _changes(head) == {("launch", "token_gather_sum_kernel")}


def test_parameters_swapped_are_not_renames():
    def func(params: str) -> ast.FunctionDef:
        node = ast.parse(f"def f({params}):\n    pass\n").body[0]
        assert isinstance(node, ast.FunctionDef)
        return node

    assert parameter_renames(func("x, a, b"), func("x, b, a")) == {}
    assert parameter_renames(func("x, a, b"), func("x, c, b")) == {"a": "c"}
    assert parameter_renames(func("x, a"), func("x, a, c=1")) == {}
