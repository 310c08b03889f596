"""Launches compared by the values they pass, not by their text (``bot/analysis/launch_values``).

The block-size code is shortened from kernels/MoE/group_GEMM/triton/tgroup_gemm_backwards.py in
pytorch-labs/applied-ai at b57282f271b8 and its parent (BSD-3-Clause; that pull request is in
tests/data/real_prs): one ``if`` setting ``BLOCK_SIZE_K_X`` became ``BLOCK_SIZE = 64 if ... else
32`` and the launch passes ``BLOCK_SIZE_K`` instead. The device context is shortened from
server/text_generation_server/layers/gptq/triton.py in huggingface/text-generation-inference at
6624fec1f97c (Apache-2.0; in tests/data/real_prs too).
"""

from __future__ import annotations

import ast

from bot.analysis.launch_values import LaunchValues

BEFORE = """\
def grouped_gemm_backward(grad_output, x, w, K_x):
    grad_x = torch.zeros_like(x)
    if K_x <= 64:
        BLOCK_SIZE_K_X = 64
        BLOCK_SIZE_M = 64
    else:
        # For larger K, use smaller blocks to avoid register pressure
        BLOCK_SIZE_K_X = 32
        BLOCK_SIZE_M = 32
    grid = (NUM_SMS,)
    _kernel_backward_x[grid](grad_output, w, grad_x, BLOCK_SIZE_M=BLOCK_SIZE_M,
                             BLOCK_SIZE_K=BLOCK_SIZE_K_X)
    return grad_x
"""

AFTER = """\
def grouped_gemm_backward(grad_output, x, w, K_x):
    grad_x = torch.zeros_like(x)
    # For larger K, use smaller blocks to reduce register pressure
    BLOCK_SIZE = 64 if K_x <= 64 else 32

    BLOCK_SIZE_K = BLOCK_SIZE
    BLOCK_SIZE_M = BLOCK_SIZE
    grid = (NUM_SMS,)
    _kernel_backward_x[grid](grad_output, w, grad_x, BLOCK_SIZE_M=BLOCK_SIZE_M,
                             BLOCK_SIZE_K=BLOCK_SIZE_K)
    return grad_x
"""


def _digests(source: str) -> list[str | None]:
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    values = LaunchValues(func)
    launches = [
        n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
    ]
    return [values.digest(n) for n in launches]


def test_the_same_values_reached_another_way_are_the_same_launch():
    assert _digests(BEFORE) == _digests(AFTER)
    assert None not in _digests(AFTER)


def test_a_value_that_changed_is_another_launch():
    assert _digests(BEFORE) != _digests(AFTER.replace("64 if K_x <= 64 else 32", "64"))
    assert _digests(BEFORE) != _digests(AFTER.replace("K_x <= 64", "K_x <= 128"))


def test_an_argument_changed_in_place_before_the_launch_is_another_launch():
    zeroed = AFTER.replace(
        "    grid = (NUM_SMS,)\n", "    grid = (NUM_SMS,)\n    grad_x.fill_(1)\n"
    )
    assert _digests(zeroed) != _digests(AFTER)


DEVICE = """\
def matmul248(input, qweight, output, M):
    with torch.cuda.device(input.device):
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]),)
        matmul_248_kernel[grid](input, qweight, output, M)
"""


def test_the_device_context_around_a_launch_is_part_of_it():
    xpu = DEVICE.replace(
        "torch.cuda.device(input.device)",
        "torch.xpu.device(input.device) if torch.xpu.is_available() else "
        "torch.cuda.device(input.device)",
    )
    assert _digests(DEVICE) != _digests(xpu)
