"""Launch tuning chosen by a changed host function of another module: the kernels it tunes are
tuning changes (``bot/analysis/tuning/tuning_helpers``).

``UTILS`` and ``ATTENTION`` are shortened from native_sparse_attention/ops/triton/utils.py and
compressed_attention.py in XunhaoLai/native-sparse-attention-triton at 9bea856c911e and its parent
b17f5745456d (Apache-2.0; that pull request is in tests/data/real_prs): ``get_num_warps_stages``
gains ``if head_dim > 128: num_stages = 2``, and compressed_attention.py, unchanged, launches
``forward_kernel`` with ``num_warps, num_stages = get_num_warps_stages(...)``.
``SETTINGS`` is shortened from unsloth/kernels/utils.py in unslothai/unsloth at 4e4bdc4fcf7c and
its parent 578c8fde961b (Apache-2.0; a negative control of tests/data/real_prs): only type
annotations are added to ``calculate_settings``, which launches elsewhere read. The threshold
the last test moves (2048 to 4096) is an edit made for the test, not a commit of that repository.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

UTILS_PATH = "native_sparse_attention/ops/triton/utils.py"
ATTENTION_PATH = "native_sparse_attention/ops/triton/compressed_attention.py"

UTILS = '''\
import torch


def get_num_warps_stages(head_dim, block_size, is_hopper_gpu):
    """Returns recommended num_warps and num_stages for a Sparse Attention kernel in Triton."""
    head_large = head_dim > 64
    block_large = block_size > 64
    if head_large and block_large:
        num_warps = 8
        num_stages = 3
    elif head_large or block_large:
        num_warps = 4
        num_stages = 3
    else:
        num_warps = 2
        num_stages = 2
    return num_warps, num_stages
'''

UTILS_AFTER = UTILS.replace(
    "    return num_warps, num_stages\n",
    "    if head_dim > 128:\n        num_stages = 2\n    return num_warps, num_stages\n",
)

ATTENTION = """\
import torch
import triton
import triton.language as tl
from native_sparse_attention.ops.triton.utils import get_num_warps_stages, is_hopper_gpu

IS_HOPPER_GPU = is_hopper_gpu()


@triton.jit
def forward_kernel(q_ptr, o_ptr, q_len, BLOCK_SIZE_Q: tl.constexpr, BLOCK_SIZE_D: tl.constexpr):
    pid = tl.program_id(0)
    off = pid * BLOCK_SIZE_Q + tl.arange(0, BLOCK_SIZE_Q)
    q = tl.load(q_ptr + off, mask=off < q_len)
    tl.store(o_ptr + off, q, mask=off < q_len)


@triton.jit
def _transform_score_kernel(s_ptr, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(s_ptr + off, tl.load(s_ptr + off, mask=off < n) * 2, mask=off < n)


def _compressed_attention_fwd(q):
    q_len, num_q_heads, head_dim = q.shape
    o = torch.zeros_like(q)
    BLOCK_SIZE_Q = 128
    BLOCK_SIZE_D = triton.next_power_of_2(head_dim)
    num_warps, num_stages = get_num_warps_stages(head_dim, BLOCK_SIZE_Q, IS_HOPPER_GPU)
    grid = (triton.cdiv(q_len, BLOCK_SIZE_Q),)
    forward_kernel[grid](
        q,
        o,
        q_len,
        BLOCK_SIZE_Q=BLOCK_SIZE_Q,
        BLOCK_SIZE_D=BLOCK_SIZE_D,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return o


def transform_score(s):
    _transform_score_kernel[(triton.cdiv(s.numel(), 128),)](s, s.numel(), BLOCK=128, num_warps=8)
    return s
"""

SETTINGS_PATH = "unsloth/kernels/utils.py"
SETTINGS = """\
MAX_FUSED_SIZE = 65536
next_power_of_2 = triton.next_power_of_2


def calculate_settings(n):
    BLOCK_SIZE = next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds "\\
                           f"the maximum CUDA blocksize = {MAX_FUSED_SIZE}.")
    num_warps = 4
    if   BLOCK_SIZE >= 32768: num_warps = 32
    elif BLOCK_SIZE >=  8192: num_warps = 16
    elif BLOCK_SIZE >=  2048: num_warps = 8
    return BLOCK_SIZE, num_warps
"""
SETTINGS_ANNOTATED = (
    SETTINGS.replace("MAX_FUSED_SIZE = 65536", "MAX_FUSED_SIZE : int = 65536")
    .replace("def calculate_settings(n):", "def calculate_settings(n : int) -> (int, int,):")
    .replace("    BLOCK_SIZE = next_power_of_2(n)", "    BLOCK_SIZE : int = next_power_of_2(n)")
    .replace("    num_warps = 4", "    num_warps : int = 4")
)
LAYERNORM_PATH = "unsloth/kernels/rms_layernorm.py"
LAYERNORM = """\
import triton
import triton.language as tl
from .utils import calculate_settings


@triton.jit
def _rms_layernorm_forward(Y, X, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    X_row = tl.load(X + row_idx * n_cols + col_offsets, mask=mask, other=0).to(tl.float32)
    inv_var = tl.math.rsqrt(tl.sum(X_row * X_row, axis=0) / n_cols + eps)
    tl.store(Y + row_idx * n_cols + col_offsets, X_row * inv_var, mask=mask)


def fast_rms_layernorm(X, W, eps):
    n_rows, n_cols = X.shape
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    Y = torch.empty_like(X)
    _rms_layernorm_forward[(n_rows,)](Y, X, W, n_cols, eps, BLOCK_SIZE=BLOCK_SIZE,
                                      num_warps=num_warps)
    return Y
"""


def _analyse(old: dict[str, str], new: dict[str, str], unchanged: dict[str, str]) -> Analysis:
    """The diff of ``old`` -> ``new``, with ``unchanged`` files of the repository beside it."""
    diff = "".join(file_diff(p, old[p], new[p]) for p in new)
    before, after = {**unchanged, **old}, {**unchanged, **new}
    return analyze_diff(diff, old_source=before.get, new_source=after.get, old_files=sorted(before))


def test_a_changed_tuning_helper_of_another_module_tunes_the_kernels_launched_with_it():
    analysis = _analyse({UTILS_PATH: UTILS}, {UTILS_PATH: UTILS_AFTER}, {ATTENTION_PATH: ATTENTION})
    [change] = analysis.changes
    assert (change.kind, change.name, change.path) == ("tuning", "forward_kernel", ATTENTION_PATH)
    assert "get_num_warps_stages" in change.notes[0]
    assert "num_stages" in change.notes[0]


def test_a_helper_whose_code_is_the_same_tunes_nothing():
    comment = UTILS.replace('    """Returns', '    """Now returns')
    analysis = _analyse({UTILS_PATH: UTILS}, {UTILS_PATH: comment}, {ATTENTION_PATH: ATTENTION})
    assert analysis.changes == []


def test_annotations_added_to_a_tuning_helper_change_no_launch():
    analysis = _analyse(
        {SETTINGS_PATH: SETTINGS},
        {SETTINGS_PATH: SETTINGS_ANNOTATED},
        {LAYERNORM_PATH: LAYERNORM},
    )
    assert analysis.changes == []
    threshold = SETTINGS_ANNOTATED.replace("BLOCK_SIZE >=  2048", "BLOCK_SIZE >=  4096")
    analysis = _analyse(
        {SETTINGS_PATH: SETTINGS}, {SETTINGS_PATH: threshold}, {LAYERNORM_PATH: LAYERNORM}
    )
    assert [(c.kind, c.name) for c in analysis.changes] == [("tuning", "_rms_layernorm_forward")]
