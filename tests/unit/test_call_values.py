"""A host change one call above the launches: an assert that decided whether a call could run,
and the values a changed function hands to an unchanged launcher (``reach/call_gates``), followed
through module aliases of an autograd Function's ``apply`` to the kernels its ``forward`` and
``backward`` launch, in files the diff does not touch.

The interface is shortened from lightning_attn/ops/lightning_attn_interface.py in
OpenNLPLab/lightning-attention (MIT) at 144c6cd304a7 and 55af742acee1 and their parents (both in
tests/data/real_prs; the launchers are test_module_bindings' excerpt of the same repository), and
at 80188c2a5ef1 ("Fix typo": the unsplit no-decay call handed ``q1, k1``, not in the corpus);
the repacked arguments from src/ffpa_attn/ffpa_attn_interface.py in xlite-dev/ffpa-attn
(Apache-2.0) at 0ae4adb74b77; the jit helper from cut_cross_entropy/cce_backward.py and
tl_utils.py in apple/ml-cross-entropy (Apple sample code licence) at 390ba218df40 (both in
tests/data/real_prs too).
"""

from __future__ import annotations

import ast

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from bot.analysis.reach.call_gates import fed_calls, guarded_calls
from tests.diff_util import file_diff
from tests.unit.test_module_bindings import LA, LIGHTNING

INTERFACE = "lightning_attn/ops/lightning_attn_interface.py"
DECAY, NO_DECAY = f"{LA}/lightning_attn2.py", f"{LA}/lightning_attn2_no_decay.py"


def _interface(guard: str, split: str) -> str:
    return f"""\
from .triton import lightning_attn2, lightning_attn2_no_decay


def lightning_attn_func(q, k, v, s=None):
{guard}    b, h, n, d = q.shape
    if d > 128:
        if {split.format(64)}:
            m = 64
        elif {split.format(32)}:
            m = 32
        arr = [m * i for i in range(d // m + 1)]
        o = 0
        for i in range(len(arr) - 1):
            q1 = q[..., arr[i] : arr[i + 1]]
            k1 = k[..., arr[i] : arr[i + 1]]
            if s != None:
                o += lightning_attn2(q1, k1, v, s)
            else:
                o += lightning_attn2_no_decay(q1, k1, v)
    else:
        if s != None:
            o = lightning_attn2(q, k, v, s)
        else:
            o = lightning_attn2_no_decay(q, k, v)
    return o
"""


ASSERTED = "    assert s != None\n"
BROKEN_SPLIT, FIXED_SPLIT = "{0} % d", "d % {0} == 0"


def analysis_between(old: dict[str, str], new: dict[str, str]) -> Analysis:
    """As ``analyze_repo`` reads a range: the changed files whole, though their changed lines
    hold no kernel marker."""
    diff = "".join(file_diff(p, old.get(p), new[p]) for p in sorted(new) if old.get(p) != new[p])
    return analyze_diff(
        diff, old_source=old.get, new_source=new.get, old_files=sorted(old), thrifty=False
    )


def _changes(before: str, after: str) -> set[tuple[str, str, str]]:
    old, new = {**LIGHTNING, INTERFACE: before}, {**LIGHTNING, INTERFACE: after}
    return {(c.kind, c.name, c.path) for c in analysis_between(old, new).changes}


def test_an_assert_contradicting_a_branch_makes_its_calls_never_run():
    func = ast.parse(_interface(ASSERTED, BROKEN_SPLIT)).body[-1]
    assert isinstance(func, ast.FunctionDef)
    guards = guarded_calls(func)
    assert guards["lightning_attn2_no_decay"] == {("<never runs>",)}
    assert ("not (d > 128)", "s != None") in guards["lightning_attn2"]


def test_an_assert_removed_in_front_of_a_call_that_could_not_run_launches_its_kernels():
    before, after = _interface(ASSERTED, BROKEN_SPLIT), _interface("", BROKEN_SPLIT)
    assert _changes(before, after) == {
        ("launch", "_fwd_kernel", NO_DECAY),
        ("launch", "_bwd_intra_kernel", NO_DECAY),
    }


def test_a_changed_value_handed_to_an_unchanged_launcher_is_a_launch_change_of_its_kernels():
    before, after = _interface("", BROKEN_SPLIT), _interface("", FIXED_SPLIT)
    assert _changes(before, after) == {
        ("launch", kernel, path)
        for kernel in ("_fwd_kernel", "_bwd_intra_kernel")
        for path in (DECAY, NO_DECAY)
    }


def test_one_calls_arguments_fixed_change_the_launches_behind_that_call_alone():
    before = _interface("", FIXED_SPLIT).replace(
        "            o = lightning_attn2_no_decay(q, k, v)",
        "            o = lightning_attn2_no_decay(q1, k1, v)",
    )
    assert before != _interface("", FIXED_SPLIT)
    assert _changes(before, _interface("", FIXED_SPLIT)) == {
        ("launch", "_fwd_kernel", NO_DECAY),
        ("launch", "_bwd_intra_kernel", NO_DECAY),
    }


def test_a_retuned_kernel_handed_other_values_stays_a_tuning_change_with_the_cause_named():
    retuned = {
        **LIGHTNING,
        DECAY: LIGHTNING[DECAY].replace(
            "@triton.jit\ndef _fwd_kernel",
            "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n'])\n"
            "@triton.jit\ndef _fwd_kernel",
        ),
    }
    old = {**LIGHTNING, INTERFACE: _interface("", BROKEN_SPLIT)}
    new = {**retuned, INTERFACE: _interface("", FIXED_SPLIT)}
    [fwd] = [c for c in analysis_between(old, new).changes if c.path == DECAY and "fwd" in c.name]
    assert fwd.kind == "tuning"
    assert any("hands to lightning_attn2 " in n for n in fwd.notes)


def test_the_same_values_written_otherwise_are_no_change():
    before = _interface("", BROKEN_SPLIT)
    step = before.replace(
        "        arr = [m * i for i in range(d // m + 1)]\n",
        "        step = m\n        arr = [step * i for i in range(d // step + 1)]\n",
    )
    assert step != before
    assert not _changes(before, step)


FFPA = "src/ffpa_attn/ffpa_attn_interface.py"
FFPA_TRITON = "src/ffpa_attn/triton/_ffpa_bwd.py"
FFPA_TRITON_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def _ffpa_bwd_kernel_impl(DO, DQ, n, causal, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(DQ + offs, tl.load(DO + offs, mask=offs < n), mask=offs < n)


def _ffpa_attn_backward_triton(dO, causal, autotune):
    dQ = dO.new_empty(dO.shape)
    _ffpa_bwd_kernel_impl[(triton.cdiv(dO.numel(), 64),)](dO, dQ, dO.numel(), causal, BLOCK=64)
    return dQ
"""
FFPA_OLD = """\
import torch

from .triton._ffpa_bwd import _ffpa_attn_backward_triton


class FFPAAttnFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, causal, triton_backward_autotune):
        ctx.causal = causal
        ctx.triton_backward_autotune = triton_backward_autotune
        return Q

    @staticmethod
    def backward(ctx, dO):
        dQ = _ffpa_attn_backward_triton(
            dO, causal=ctx.causal, autotune=ctx.triton_backward_autotune
        )
        return dQ, None, None


def ffpa_attn_func(Q, causal=False, triton_backward_autotune=False):
    return FFPAAttnFunc.apply(Q, bool(causal), bool(triton_backward_autotune))
"""
FFPA_NEW = """\
import torch

from .triton._ffpa_bwd import _ffpa_attn_backward_triton


class FFPAAttnFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, meta):
        ctx.meta = meta
        return Q

    @staticmethod
    def backward(ctx, dO):
        meta = ctx.meta
        dQ = _ffpa_attn_backward_triton(
            dO, causal=meta.causal, autotune=meta.triton_backward_autotune
        )
        return dQ, None


def ffpa_attn_func(Q, causal=False, triton_backward_autotune=False):
    _meta = FFPAAttnMeta(
        causal=bool(causal), triton_backward_autotune=bool(triton_backward_autotune)
    )
    return FFPAAttnFunc.apply(Q, _meta)
"""


def test_where_a_flag_is_held_is_not_what_it_is():
    [old_backward, new_backward] = (
        ast.parse(text).body[-2].body[1]  # type: ignore[attr-defined]
        for text in (FFPA_OLD, FFPA_NEW)
    )
    callee = "_ffpa_attn_backward_triton"
    assert fed_calls(old_backward)[callee] == fed_calls(new_backward)[callee]


def test_arguments_repacked_for_a_callee_changed_with_its_callers_are_no_launch_change():
    old = {FFPA: FFPA_OLD, FFPA_TRITON: FFPA_TRITON_TEXT}
    new = {FFPA: FFPA_NEW, FFPA_TRITON: FFPA_TRITON_TEXT}
    assert not analysis_between(old, new).changes


CCE = "cut_cross_entropy/cce_backward.py"
CCE_UTILS = "cut_cross_entropy/tl_utils.py"
CCE_UTILS_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def tl_softcapping(v, softcap):
    return tl.extra.cuda.libdevice.tanh(v / softcap) * softcap
"""


def _cce(scale: str) -> str:
    return f"""\
import triton
import triton.language as tl

from .tl_utils import tl_softcapping


@triton.jit
def _cce_backward_kernel(E, C, dE, n, softcap, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    accum = tl.load(E + offs, mask=offs < n)
    accum = tl_softcapping({scale}, softcap)
    tl.store(dE + offs, accum, mask=offs < n)


def cce_backward(e, c, softcap):
    de = e.new_empty(e.shape)
    _cce_backward_kernel[(triton.cdiv(e.numel(), 64),)](e, c, de, e.numel(), softcap, BLOCK=64)
    return de
"""


def test_what_a_kernel_hands_to_a_jit_helper_launches_nothing():
    old = {CCE: _cce("accum"), CCE_UTILS: CCE_UTILS_TEXT}
    new = {CCE: _cce("accum * 2.0"), CCE_UTILS: CCE_UTILS_TEXT}
    changes = {(c.kind, c.name) for c in analysis_between(old, new).changes}
    assert changes == {("body", "_cce_backward_kernel")}
