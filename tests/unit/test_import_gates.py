"""A kernel's module imported under a vendor test that changed: the kernel's launch changed, on
the vendors the new test names, even where its own file only moved.

Shortened from server/text_generation_server/layers/gptq/__init__.py and gptq/cuda.py (renamed
to triton.py) in huggingface/text-generation-inference at the parent of cece8635f8ec
(Apache-2.0; that pull request is in tests/data/real_prs).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

INIT = "server/text_generation_server/layers/gptq/__init__.py"
CUDA = "server/text_generation_server/layers/gptq/cuda.py"
TRITON = "server/text_generation_server/layers/gptq/triton.py"

GATE = """\
import torch
from text_generation_server.utils.import_utils import SYSTEM

if SYSTEM == "ipex":
    from .ipex import QuantLinear
elif SYSTEM == "cuda":
    from .cuda import QuantLinear
"""

KERNELS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_248_kernel(a_ptr, c_ptr, M, BLOCK_SIZE_M: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=offs < M), mask=offs < M)


def matmul248(input, output):
    grid = lambda META: (triton.cdiv(input.shape[0], META["BLOCK_SIZE_M"]),)
    matmul_248_kernel[grid](input, output, input.shape[0], BLOCK_SIZE_M=64)
"""


def _analyse(gate_after: str, rename: bool) -> Analysis:
    diff = file_diff(INIT, GATE, gate_after)
    old = {INIT: GATE, CUDA: KERNELS}
    new = {INIT: gate_after, TRITON if rename else CUDA: KERNELS}
    if rename:
        diff += (
            f"diff --git a/{CUDA} b/{TRITON}\nsimilarity index 100%\n"
            f"rename from {CUDA}\nrename to {TRITON}\n"
        )
    return analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))


def test_a_kernel_module_renamed_and_imported_for_another_vendor_is_a_launch_change():
    after = GATE.replace(
        'SYSTEM == "cuda":\n    from .cuda', 'SYSTEM in {"cuda", "rocm"}:\n    from .triton'
    )
    analysis = _analyse(after, rename=True)
    [change] = [*analysis.changes, *analysis.moved]
    assert (change.name, change.kind, change.path) == ("matmul_248_kernel", "launch", TRITON)
    [branch] = change.branches
    assert branch.kind == "vendor" and "rocm" in branch.condition
    assert branch.path == INIT


def test_an_unchanged_kernel_module_gated_for_a_new_vendor_is_a_launch_change():
    after = GATE.replace('SYSTEM == "cuda"', 'SYSTEM in {"cuda", "rocm"}')
    [change] = _analyse(after, rename=False).changes
    assert (change.name, change.kind) == ("matmul_248_kernel", "launch")
    assert [b.kind for b in change.branches] == ["vendor"]


def test_a_gate_that_names_no_vendor_or_did_not_change_is_no_launch_change():
    flag = GATE.replace('SYSTEM == "cuda"', "USE_TRITON_GPTQ")
    assert not _analyse(flag, rename=False).changes
    same = GATE.replace("import torch\n", "import torch  # the gate itself is unchanged\n")
    assert not _analyse(same, rename=False).changes
