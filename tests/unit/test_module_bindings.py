"""Names a module binds to others are followed to what they reach (``reach/follow.Side._bound``):
a package's ``__init__.py`` re-exporting a wrapper (``from .kernels import f``), a star import
(``from .lightning_attn2 import *``) and a module-level alias (``f = Fn.apply``); and the call
graph reads a module of the diff whole though the analysis leaves it empty for holding no
kernel marker (``Context.old_whole``).

Shortened from two real repositories, both in tests/data/real_prs:

- mlc-ai/xgrammar 6e73e1dbbf0e (Apache-2.0): python/xgrammar/matcher.py switches from
  ``apply_token_bitmask_inplace_cuda`` (kernels/apply_token_bitmask_inplace_cuda.py, a CUDA
  source string compiled by NVRTC) to ``apply_token_bitmask_inplace_triton``, both imported
  through kernels/__init__.py;
- OpenNLPLab/lightning-attention 55af742acee1 (MIT): lightning_attn/ops/triton/__init__.py
  star-imports lightning_attn2.py, whose ``lightning_attn2 = LightningAttention2.apply``
  launches ``_fwd_kernel`` in forward and ``_bwd_intra_kernel`` in backward;
  lightning_attn2_no_decay.py defines kernels of the same names.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side
from tests.diff_util import file_diff

PKG = "python/xgrammar/kernels"
MATCHER = "python/xgrammar/matcher.py"
INIT = f"{PKG}/__init__.py"
CUDA = f"{PKG}/apply_token_bitmask_inplace_cuda.py"
TRITON = f"{PKG}/apply_token_bitmask_inplace_triton.py"

CUDA_TEXT = '''\
from cuda import cuda, nvrtc

_apply_token_bitmask_inplace_kernel = """
extern "C" __global__ void __launch_bounds__(1024) ApplyTokenBitmaskInplaceKernel(
    float* __restrict__ logits, const int* __restrict__ bitmask, int vocab_size
) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < vocab_size && ((bitmask[tid / 32] >> (tid % 32)) & 1) == 0) {
    logits[tid] = -1e30f;
  }
}
""".strip()


class KernelStore:
    _func = None

    @classmethod
    def compile(cls, device_id: int):
        prog = nvrtc.nvrtcCreateProgram(
            str.encode(_apply_token_bitmask_inplace_kernel), b"sourceCode.cu", 0, [], []
        )
        cls._func = cuda.cuModuleGetFunction(prog, b"ApplyTokenBitmaskInplaceKernel")
        return cls._func


def apply_token_bitmask_inplace_cuda(logits, bitmask, indices=None):
    kernel = KernelStore.compile(logits.device.index)
    cuda.cuLaunchKernel(kernel, 1, 1, 1, 1024, 1, 1, 0, 0, (logits, bitmask), 0)
'''

TRITON_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def apply_token_bitmask_inplace_kernel(logits_ptr, bitmask_ptr, vocab_size, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    packed = tl.load(bitmask_ptr + offsets // 32, offsets < vocab_size)
    logits = tl.load(logits_ptr + offsets, offsets < vocab_size)
    logits = tl.where((packed >> (offsets % 32)) & 1 == 0, -float("inf"), logits)
    tl.store(logits_ptr + offsets, logits, offsets < vocab_size)


def apply_token_bitmask_inplace_triton(logits, bitmask, indices=None):
    grid = (triton.cdiv(logits.shape[-1], 4096),)
    apply_token_bitmask_inplace_kernel[grid](logits, bitmask, logits.shape[-1], BLOCK_SIZE=4096)
"""


def _matcher(backend: str, imported: str) -> str:
    return f"""\
import torch

from .kernels import apply_token_bitmask_inplace_cpu, {imported}


def apply_token_bitmask_inplace(logits, bitmask, indices=None):
    if logits.device.type == "cuda":
        apply_token_bitmask_inplace_{backend}(logits, bitmask, indices)
    elif logits.device.type == "cpu":
        apply_token_bitmask_inplace_cpu(logits, bitmask, indices)
"""


INIT_OLD = """\
from .apply_token_bitmask_inplace_cpu import apply_token_bitmask_inplace_cpu
from .apply_token_bitmask_inplace_cuda import apply_token_bitmask_inplace_cuda
"""
INIT_NEW = INIT_OLD + (
    "from .apply_token_bitmask_inplace_triton import apply_token_bitmask_inplace_triton\n"
)
CPU_TEXT = "def apply_token_bitmask_inplace_cpu(logits, bitmask, indices=None):\n    pass\n"

OLD = {
    MATCHER: _matcher("cuda", "apply_token_bitmask_inplace_cuda"),
    INIT: INIT_OLD,
    CUDA: CUDA_TEXT,
    f"{PKG}/apply_token_bitmask_inplace_cpu.py": CPU_TEXT,
}
NEW = {
    **OLD,
    MATCHER: _matcher(
        "triton", "apply_token_bitmask_inplace_triton, apply_token_bitmask_inplace_cuda"
    ),
    INIT: INIT_NEW,
    TRITON: TRITON_TEXT,
}


def test_a_qualified_name_is_followed_through_a_packages_re_export():
    side = Side(sorted(OLD), OLD.get, ExtensionIndex(sorted(OLD), OLD.get))
    found = side.follow("python.xgrammar.kernels.apply_token_bitmask_inplace_cuda")
    assert {op.name for op in found[""].ops} == {"ApplyTokenBitmaskInplaceKernel"}


def _repo_mode(whole: bool):
    """As ``analyze_repo`` reads them: a file of the diff with no kernel marker (the base's
    matcher.py and kernels/__init__.py name no Triton and launch nothing) reads as empty."""
    empty = {MATCHER, INIT}

    def source(files: dict[str, str]):
        return lambda p: "" if p in empty and "triton" not in files[p] else files.get(p)

    diff = "".join(file_diff(p, OLD.get(p), NEW[p]) for p in sorted(NEW) if OLD.get(p) != NEW[p])
    return analyze_diff(
        diff,
        old_source=source(OLD),
        new_source=source(NEW),
        old_files=sorted(OLD),
        whole_source=(OLD.get, NEW.get) if whole else (None, None),
    )


def test_a_switch_through_modules_the_analysis_reads_as_empty_is_a_rewrite():
    [change] = _repo_mode(whole=True).changes
    assert (change.kind, change.name) == ("rewrite", "apply_token_bitmask_inplace_kernel")
    assert change.old is not None and change.old.name == "ApplyTokenBitmaskInplaceKernel"
    assert change.old_kernel_kept


def test_without_whole_files_the_call_graph_cannot_see_the_switch():
    [change] = _repo_mode(whole=False).changes
    assert change.kind == "new"


LA = "lightning_attn/ops/triton"
LIGHTNING = {
    f"{LA}/__init__.py": (
        "from .lightning_attn2 import *\n"
        "from .lightning_attn2_no_decay import lightning_attn2_no_decay\n"
    ),
    "lightning_attn/ops/lightning_attn_interface.py": """\
from .triton import lightning_attn2, lightning_attn2_no_decay


def lightning_attn_func(q, k, v, s=None):
    if s != None:
        o = lightning_attn2(q, k, v, s)
    else:
        o = lightning_attn2_no_decay(q, k, v)
    return o
""",
}


def _launcher(cls: str, bound: str) -> str:
    return f"""\
import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(Q, Out, n, BLOCK: tl.constexpr):
    off_bh = tl.program_id(0)
    tl.store(Out + off_bh * BLOCK + tl.arange(0, BLOCK), tl.load(Q + off_bh * BLOCK))


@triton.jit
def _bwd_intra_kernel(DO, DQ, n, BLOCK: tl.constexpr):
    off_bh = tl.program_id(0)
    tl.store(DQ + off_bh * BLOCK + tl.arange(0, BLOCK), tl.load(DO + off_bh * BLOCK))


class {cls}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, *s):
        o = torch.empty_like(q)
        _fwd_kernel[(triton.cdiv(q.numel(), 64),)](q, o, q.numel(), BLOCK=64)
        return o

    @staticmethod
    def backward(ctx, do):
        dq = torch.empty_like(do)
        _bwd_intra_kernel[(triton.cdiv(do.numel(), 64),)](do, dq, do.numel(), BLOCK=64)
        return dq, None, None, None


{bound} = {cls}.apply
"""


LIGHTNING[f"{LA}/lightning_attn2.py"] = _launcher("LightningAttention2", "lightning_attn2")
LIGHTNING[f"{LA}/lightning_attn2_no_decay.py"] = _launcher(
    "LightningAttention2NoDecay", "lightning_attn2_no_decay"
)


def test_a_star_import_and_an_alias_of_an_autograd_functions_apply_are_followed():
    side = Side(sorted(LIGHTNING), LIGHTNING.get, ExtensionIndex([], LIGHTNING.get))
    interface = "lightning_attn/ops/lightning_attn_interface.py"
    reach = side.reach_call(interface, "lightning_attn_func", "lightning_attn2")
    assert reach.kernels == {"_fwd_kernel", "_bwd_intra_kernel"}
    assert reach.back_kernels == {"_bwd_intra_kernel"}
    # of the two modules defining kernels of these names, the one the call reaches
    assert reach.sites == {
        (f"{LA}/lightning_attn2.py", "_fwd_kernel"),
        (f"{LA}/lightning_attn2.py", "_bwd_intra_kernel"),
    }


def test_an_alias_bound_in_each_branch_of_a_test_reaches_both_functions():
    """The same excerpt with the entry bound by a module-level test, as modules pick a backend
    at import (``if ...: f = A.apply else: f = B.apply``)."""
    chosen = {
        **LIGHTNING,
        f"{LA}/__init__.py": """\
import os

from .lightning_attn2 import LightningAttention2
from .lightning_attn2_no_decay import LightningAttention2NoDecay

if os.environ.get("LIGHTNING_DECAY"):
    lightning_attn2 = LightningAttention2.apply
else:
    lightning_attn2 = LightningAttention2NoDecay.apply
lightning_attn2_no_decay = LightningAttention2NoDecay.apply
""",
    }
    side = Side(sorted(chosen), chosen.get, ExtensionIndex([], chosen.get))
    interface = "lightning_attn/ops/lightning_attn_interface.py"
    reach = side.reach_call(interface, "lightning_attn_func", "lightning_attn2")
    assert {path for path, _ in reach.sites} == {
        f"{LA}/lightning_attn2.py",
        f"{LA}/lightning_attn2_no_decay.py",
    }
