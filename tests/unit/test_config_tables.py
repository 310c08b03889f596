"""Tuning read from a table: a module-level config table (or what fills it) changes, and the
kernels whose launches take their options from it are tuning changes
(``bot/analysis/tuning/tables``, through ``tuning_helpers``).

``INTMM`` is shortened from torchao/kernel/intmm_triton.py in pytorch/ao at cac526145711 and its
parent (BSD-3-Clause): the module-level search space ``int8_mm_kernel_configs`` is rebound to an
exhaustive list under ``max_autotune_gemm_search_space == "EXHAUSTIVE"``; ``int_matmul_cuda``
hands that table to ``get_best_config_fn`` (torchao/kernel/autotuner.py, unchanged) and the
config it picks to ``int_matmul_kernel``, whose launch takes ``num_warps=config.num_warps``. The
kernel body and the launch are the same on both sides.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

INTMM_PATH = "torchao/kernel/intmm_triton.py"
AUTOTUNER_PATH = "torchao/kernel/autotuner.py"

AUTOTUNER = """\
import triton


def get_best_config_fn(fn, args, configs):
    if len(configs) == 0:
        return None
    best_config = configs[0]
    best_time = triton.testing.do_bench(lambda: fn(*(args + [best_config])))
    for config in configs[1:]:
        time = triton.testing.do_bench(lambda: fn(*(args + [config])))
        if time < best_time:
            best_time, best_config = time, config
    return best_config
"""

INTMM = """\
import itertools

import torch
import triton
import triton.language as tl

from torchao.kernel.autotuner import get_best_config_fn

int8_powers_of_two = [32, 64, 128, 256]
int8_mm_kernel_configs = sum(
    [
        [(i, j, k, 1, 1), (i, j, k, 2, 4), (i, j, k, 4, 8)]
        for (i, j, k) in itertools.product(
            int8_powers_of_two, int8_powers_of_two, int8_powers_of_two
        )
    ],
    [],
)
# EXHAUSTIVE

int8_mm_kernel_configs = [
    triton.Config(
        {"BLOCK_M": i, "BLOCK_N": j, "BLOCK_K": k, "GROUP_M": 8},
        num_stages=s,
        num_warps=w,
    )
    for (i, j, k, s, w) in int8_mm_kernel_configs
]


@triton.jit
def matmul_kernel_with_block_pointers(
    a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        acc += tl.load(a_ptr + pid + k)
    tl.store(c_ptr + pid, acc)


def int_matmul_kernel(a, b, c, config):
    M, K = a.shape
    K, N = b.shape
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    matmul_kernel_with_block_pointers[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        num_ctas=config.num_ctas,
        **config.kwargs,
    )
    return c


def int_matmul_cuda(a, b):
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.int32)
    best_config = get_best_config_fn(int_matmul_kernel, [a, b, c], int8_mm_kernel_configs)
    if best_config is None:
        return torch.tensor([])
    return int_matmul_kernel(a, b, c, best_config)
"""

EXHAUSTIVE = """\
if torch._inductor.config.max_autotune_gemm_search_space == "EXHAUSTIVE":
    int8_mm_kernel_configs = [
        (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)
        for BLOCK_M, BLOCK_N, BLOCK_K in itertools.product([16, 32, 64, 128, 256], repeat=3)
        for num_stages in [1, 2, 3, 4, 5, 6, 7, 8]
        for num_warps in [2, 4, 8]
    ]
"""


def _analyse(head: str):
    base = {INTMM_PATH: INTMM, AUTOTUNER_PATH: AUTOTUNER}
    return analysis_between(base, {**base, INTMM_PATH: head})


def test_a_search_space_table_rebound_tunes_the_kernel_launched_with_its_pick():
    analysis = _analyse(INTMM.replace("# EXHAUSTIVE\n", EXHAUSTIVE))
    [change] = analysis.changes
    assert (change.kind, change.name) == ("tuning", "matmul_kernel_with_block_pointers")
    assert "int_matmul_cuda" in change.notes[0]
    assert "num_warps" in change.notes[0]


def test_a_changed_table_read_beside_the_launch_but_not_by_its_options_tunes_nothing():
    # a module-level list the caller checks its inputs against: the caller reads a changed
    # table, but what it hands the launching function is computed from no table
    check = "    assert a.dtype in SUPPORTED\n    M, K = a.shape\n    K, N = b.shape\n    c ="
    body = INTMM.replace("    M, K = a.shape\n    K, N = b.shape\n    c =", check)
    base = body.replace("# EXHAUSTIVE\n", "SUPPORTED = [torch.int8]\n")
    head = body.replace("# EXHAUSTIVE\n", "SUPPORTED = [torch.int8, torch.uint8]\n")
    assert base.count("SUPPORTED") == 2  # the caller reads it
    analysis = analysis_between(
        {INTMM_PATH: base, AUTOTUNER_PATH: AUTOTUNER}, {INTMM_PATH: head, AUTOTUNER_PATH: AUTOTUNER}
    )
    assert analysis.changes == []


# Shortened from segment_anything_fast/flash_4.py in pytorch-labs/segment-anything-fast at
# d40f920b81a3 and its parent (Apache-2.0; that pull request is in tests/data/real_prs): the
# loader that fills the module-level BEST_CONFIGS (a ``global`` the custom op's implementation
# binds) loses a ``return None``; the launching function takes its block sizes, warps and stages
# as parameters from that implementation, out of the table.
FLASH_PATH = "segment_anything_fast/flash_4.py"
FLASH = """\
import pathlib

import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel_aligned(Q, Out, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(Out + off, tl.load(Q + off))


def _attention_device(q, o, BLOCK_M, BLOCK_N, num_warps, num_stages):
    grid = (triton.cdiv(q.shape[2], BLOCK_M), q.shape[0] * q.shape[1], 1)
    _fwd_kernel_aligned[grid](
        q, o, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages
    )


def _load_best_configs():
    device_name = torch.cuda.get_device_name()
    saved_configs = pathlib.Path("flash_4_configs_a100.p")
    if not device_name.startswith('NVIDIA A100'):
        saved_configs = pathlib.Path.cwd() / "flash_4_configs.p"
        return None
    if saved_configs.is_file():
        import pickle
        with open(saved_configs, 'rb') as f:
            return pickle.load(f)


BEST_CONFIGS = None


def _attention_aligned(q, sm_scale):
    o = torch.empty_like(q)
    global BEST_CONFIGS
    if BEST_CONFIGS is None:
        BEST_CONFIGS = _load_best_configs()
    if BEST_CONFIGS is None:
        BEST_CONFIGS = {}
    key = (q.size(), q.stride())
    best_config = BEST_CONFIGS[key]
    _attention_device(q, o, best_config[0], best_config[1], best_config[2], best_config[3])
    return o
"""


def test_a_changed_loader_of_a_table_tunes_the_launch_handed_its_values():
    head = FLASH.replace("        return None\n", "")
    analysis = analysis_between({FLASH_PATH: FLASH}, {FLASH_PATH: head})
    [change] = analysis.changes
    assert (change.kind, change.name) == ("tuning", "_fwd_kernel_aligned")
    assert "_attention_aligned" in change.notes[0]


# A device-keyed table read at the launch itself, written for the test.
TABLE_PATH = "ops/rmsnorm.py"
TABLE = """\
import torch
import triton
import triton.language as tl

_CONFIGS = {
    "NVIDIA A100-SXM4-80GB": (1024, 4),
    "NVIDIA H100 80GB HBM3": (2048, 8),
}


@triton.jit
def _rmsnorm_kernel(x_ptr, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + off, tl.load(x_ptr + off, mask=off < n), mask=off < n)


def rmsnorm(x):
    block, warps = _CONFIGS.get(torch.cuda.get_device_name(), (512, 4))
    _rmsnorm_kernel[(triton.cdiv(x.numel(), block),)](x, x.numel(), BLOCK=block, num_warps=warps)
    return x
"""


def test_a_new_row_of_a_table_the_launch_reads_tunes_its_kernel():
    head = TABLE.replace('    "NVIDIA H100', '    "NVIDIA H200": (4096, 8),\n    "NVIDIA H100')
    [change] = analysis_between({TABLE_PATH: TABLE}, {TABLE_PATH: head}).changes
    assert (change.kind, change.name) == ("tuning", "_rmsnorm_kernel")
    assert "_CONFIGS" in change.notes[0]
