"""The tests around a call to a launcher, one call up and in another file, gate its kernels
(``bot/analysis/reach/call_gates``).

The selector is shortened from inference_lib/src/aqlm/inference_kernels/kernel_selector.py and
triton_kernel.py in Vahe1994/AQLM at 4f31eae0c1fd and its parent (Apache-2.0); the vendor flag
from ktransformers/operators/triton_attention.py in kvcache-ai/ktransformers at 4890f18605bd
(Apache-2.0). Both pull requests are in tests/data/real_prs.
"""

from __future__ import annotations

import ast

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from bot.analysis.reach.call_gates import guarded_calls
from tests.diff_util import file_diff

PKG = "inference_lib/src/aqlm/inference_kernels"
SELECTOR = f"{PKG}/kernel_selector.py"
KERNELS = f"{PKG}/triton_kernel.py"

TRITON = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _aqlm_gemv_simple(input_vec_ptr, output_vec_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(output_vec_ptr + offs, tl.load(input_vec_ptr + offs, mask=offs < n), mask=offs < n)


def triton_matmul(input, codes, codebooks, scales, bias):
    output = torch.empty_like(input)
    _aqlm_gemv_simple[(triton.cdiv(input.numel(), 64),)](input, output, input.numel(), BLOCK=64)
    return output
"""

BEFORE = """\
import torch.nn.functional as F

from .triton_kernel import triton_matmul


def forward_pass_quantized_linear(input, codes, codebooks, scales, bias):
    if input.is_cuda:
        return triton_matmul(input, codes, codebooks, scales, bias)
    else:
        dequantized_weight = _dequantize_weight(codes, codebooks, scales)
        return F.linear(input, dequantized_weight, bias)
"""

AFTER = """\
import torch.nn.functional as F

from .triton_kernel import triton_matmul


def forward_pass_quantized_linear(input, codes, codebooks, scales, bias):
    num_codebooks, codebook_size, out_group_size, in_group_size = codebooks.shape
    if cuda_kernel_applicable(input.is_cuda, num_codebooks, codebook_size):
        from aqlm.cuda.cuda_kernel import cuda_matmul

        return cuda_matmul(input, codes, codebooks, scales, bias)

    if triton_kernel_applicable(input.is_cuda):
        return triton_matmul(input, codes, codebooks, scales, bias)

    dequantized_weight = _dequantize_weight(codes, codebooks, scales)
    return F.linear(input, dequantized_weight, bias)
"""


def _analyse(before: str, after: str) -> Analysis:
    old = {SELECTOR: before, KERNELS: TRITON}
    new = {SELECTOR: after, KERNELS: TRITON}
    diff = file_diff(SELECTOR, before, after)
    return analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))


def test_guards_are_the_tests_around_a_call_and_the_early_returns_before_it():
    func = ast.parse(AFTER).body[-1]
    assert isinstance(func, ast.FunctionDef)
    guards = guarded_calls(func)
    [triton] = guards["triton_matmul"]
    assert triton == tuple(
        sorted(
            (
                "not (cuda_kernel_applicable(input.is_cuda, num_codebooks, codebook_size))",
                "triton_kernel_applicable(input.is_cuda)",
            )
        )
    )


def test_a_launcher_called_under_new_tests_in_another_file_is_a_launch_change():
    [change] = _analyse(BEFORE, AFTER).changes
    assert (change.name, change.kind, change.path) == ("_aqlm_gemv_simple", "launch", KERNELS)
    assert any("triton_matmul" in n and "forward_pass_quantized_linear" in n for n in change.notes)


def test_a_caller_changed_around_the_same_tests_is_no_launch_change():
    comment = BEFORE.replace("    else:\n", "    else:  # the CPU path\n")
    assert not _analyse(BEFORE, comment).changes


VENDOR = """\
import torch
from ktransformers.util.vendors import device_manager, GPUVendor

IS_COREX_TORCH = device_manager.gpu_vendor == GPUVendor.Iluvatar


def decode_attention_fwd_grouped(q, k_buffer, v_buffer, o, attn_logits):
    if IS_COREX_TORCH:
        decode_attention_fwd_grouped_no_mask_gqa(q, k_buffer, v_buffer, o)
    else:
        _decode_softmax_reducev_fwd(attn_logits, q, o, v_buffer)
"""


def test_a_vendor_flag_around_the_call_is_the_kernels_vendor_branch():
    before = VENDOR.replace(
        "    if IS_COREX_TORCH:\n        decode_attention_fwd_grouped_no_mask_gqa(q, k_buffer, "
        "v_buffer, o)\n    else:\n        _decode",
        "    _decode",
    ).replace(
        "        _decode_softmax_reducev_fwd(attn_logits",
        "    _decode_softmax_reducev_fwd(attn_logits",
    )
    launcher = """\
import triton


@triton.jit
def _fwd_kernel_stage2(logits, o, n):
    pass


def _decode_softmax_reducev_fwd(logits, q, o, v_buffer):
    _fwd_kernel_stage2[(1,)](logits, o, 1)
"""
    path = "ktransformers/operators/triton_attention.py"
    old = {path: before + launcher}
    new = {path: VENDOR + launcher}
    diff = file_diff(path, old[path], new[path])
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[path])
    [change] = analysis.changes
    assert (change.name, change.kind) == ("_fwd_kernel_stage2", "launch")
    assert [(b.kind, b.condition) for b in change.branches] == [("vendor", "not (IS_COREX_TORCH)")]
    assert "iluvatar" in change.branches[0].note.lower()
