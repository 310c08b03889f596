"""The detection rules the real pull requests needed, each on a small real-looking snippet.

jit helpers reported through their callers, config lists built at import, autotune applied by a
call, vendor and architecture branches on the launch path, moves and renames, launches through a
local name, call sites switched per function (N:M rewrites), C++ host code and local headers,
kernel files the diff alone cannot classify, Python DSL kernels, and how the output shows them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.analysis.changes import change_lines
from bot.analysis.classify import analyze_diff
from bot.analysis.cli import render_table
from bot.analysis.code_counts import part_a_side
from bot.analysis.model import Analysis, KernelChange
from bot.analysis.scan import scan_source
from bot.contracts.evidence import Evidence
from bot.contracts.review import Requirements
from bot.gitutil import commit_all, diff_text, init_repo
from bot.review.verdict import decide


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def run(tmp_path: Path, base: dict[str, str], head: dict[str, str], whole: bool = True) -> Analysis:
    """The analysis of base -> head; ``whole``: with both sides' files (as repo mode reads them)."""
    repo = init_repo(tmp_path / "repo")
    _write(repo, base)
    b = commit_all(repo, "base")
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    _write(repo, head)
    h = commit_all(repo, "head")
    diff = diff_text(repo, b, h)
    if not whole:
        return analyze_diff(diff)
    return analyze_diff(
        diff, old_source=base.get, new_source=head.get, old_files=sorted(base), thrifty=False
    )


def by_name(analysis: Analysis) -> dict[str, KernelChange]:
    return {c.name: c for c in analysis.changes}


SORT = """\
import triton
import triton.language as tl


@triton.jit
def to_bits(x):
    return x.to(tl.uint32, bitcast=True) ^ MASK


@triton.jit
def ordered(x):
    return to_bits(x)


@triton.jit
def hist_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, ordered(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def hist(x, out):
    hist_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
"""


def test_a_changed_jit_helper_is_its_callers_change(tmp_path):
    head = SORT.replace("^ MASK", "^ tl.full((), 0x80000000, tl.uint32)")
    a = run(tmp_path, {"ops/sort.py": SORT}, {"ops/sort.py": head})
    c = by_name(a)
    assert set(c) == {"hist_kernel"}  # not the helpers, not copy_kernel
    assert c["hist_kernel"].kind == "body"
    assert c["hist_kernel"].via_helpers == ["to_bits"]
    scan = scan_source("ops/sort.py", head)
    assert {k.name: k.launched for k in scan.kernels} == {
        "to_bits": False,
        "ordered": False,
        "hist_kernel": True,
        "copy_kernel": True,
    }


def test_a_helper_counts_in_its_callers_part_a():
    side = part_a_side({"ops/sort.py": SORT}, [("ops/sort.py", "hist_kernel")])
    assert sorted(side.helpers) == ["ordered", "to_bits"]


COMPUTED = """\
import itertools
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK": b}, num_warps=w)
    for b, w in itertools.product([64, 128], [4, 8])
]
# triton.Config({"BLOCK": 32}, num_warps=2),


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""


def test_a_config_list_built_at_import_is_unknown_not_zero(tmp_path):
    head = COMPUTED.replace("[4, 8]", "[4, 8, 16]")
    c = by_name(run(tmp_path, {"k.py": COMPUTED}, {"k.py": head}))["scale_kernel"]
    assert c.kind == "tuning"
    assert c.configs_old_computed and c.configs_new_computed
    assert "configs: computed at import; read on the GPU runner -> computed at import" in (
        render_table(run(tmp_path / "again", {"k.py": COMPUTED}, {"k.py": head}))
    )


def test_autotune_added_to_an_unchanged_body_is_tuning(tmp_path):
    base = COMPUTED.replace('@triton.autotune(configs=CONFIGS, key=["n"])\n', "")
    c = by_name(run(tmp_path, {"k.py": base}, {"k.py": COMPUTED}))["scale_kernel"]
    assert c.kind == "tuning"
    assert not c.configs_old_computed and c.configs_new_computed


APPLIED = """\
import triton
import triton.language as tl


@triton.jit
def permute_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


try:
    permute_kernel = triton.autotune(
        configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"]
    )(permute_kernel)
except RuntimeError:
    pass
"""


def test_autotune_applied_by_a_call_is_read():
    (k,) = scan_source("p.py", APPLIED).kernels
    assert k.configs is not None and len(k.configs) == 2
    assert k.autotune_key == ("n",)


LAUNCHER = """\
import torch
import triton
import triton.language as tl


def is_hip():
    return torch.version.hip is not None


@triton.jit
def ce_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch_params(n):
    if torch.cuda.get_device_capability() >= (10, 0):
        return 64
    return 128


def ce(x):
    kernel = ce_kernel
    num_warps = 32
    kernel[(1,)](x, x.numel(), BLOCK=launch_params(x.numel()), num_warps=num_warps)
"""


def test_vendor_and_arch_branches_on_the_launch_path(tmp_path):
    head = LAUNCHER.replace("num_warps = 32", "num_warps = 16 if is_hip() else 32")
    a = run(tmp_path, {"ce.py": LAUNCHER}, {"ce.py": head})
    c = by_name(a)["ce_kernel"]  # launched through the local name ``kernel``
    assert c.kind == "tuning"
    kinds = {b.kind: b for b in c.branches}
    assert set(kinds) == {"vendor", "arch"}
    assert kinds["vendor"].condition == "is_hip()" and kinds["vendor"].where == "ce"
    assert "sm_100" in kinds["arch"].note and "outside the compiler targets" in kinds["arch"].note
    (line,) = change_lines(a)
    assert len(line.branches) == 2
    verdict = decide([line], Requirements(), Evidence())
    vendors = next(x for x in verdict.conditions if x.key == "vendors")
    assert any(e.startswith("ce_kernel: ce.py:") and "is_hip()" in e for e in vendors.evidence)


def test_a_module_level_flag_counts_as_its_test():
    text = LAUNCHER.replace(
        "def ce(x):", "TESLA = 'Tesla' in torch.cuda.get_device_name(0)\n\n\ndef ce(x):"
    ).replace("num_warps = 32", "num_warps = 4 if TESLA else 8")
    from bot.analysis.reach.branches import LaunchPath

    module = LaunchPath.parse(text)
    assert module is not None
    assert {b.kind for b in module.branches("ce_kernel", "ce.py")} >= {"arch"}


def test_a_file_move_with_the_same_code_is_moved(tmp_path):
    a = run(tmp_path, {"ops/old/sort.py": SORT}, {"ops/new_sort.py": SORT})
    assert not a.changes
    assert {(c.name, c.kind, c.moved_from) for c in a.moved} == {
        (n, "moved", "ops/old/sort.py") for n in ("hist_kernel", "copy_kernel")
    }  # the helpers moved with their callers: nothing of theirs to report


def test_a_kernel_renamed_with_the_same_body_is_moved(tmp_path):
    head = SORT.replace("copy_kernel", "copy_rows_kernel")
    a = run(tmp_path, {"ops/sort.py": SORT}, {"ops/sort.py": head})
    assert [(c.name, c.kind) for c in a.moved] == [("copy_rows_kernel", "moved")]
    assert "renamed from copy_kernel" in a.moved[0].notes[-1]
    assert not [c for c in a.changes if c.kind in ("new", "deleted")]


INDEX_CU = """\
#include <torch/extension.h>

__global__ void index_select_cu(const float* src, const long* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = src[idx[i]];
}

__global__ void index_add_cu(const float* src, const long* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out + idx[i], src[i]);
}

at::Tensor index_select(at::Tensor src, at::Tensor idx) {
  auto out = at::empty_like(src);
  index_select_cu<<<(idx.numel() + 255) / 256, 256>>>(
      src.data_ptr<float>(), idx.data_ptr<long>(), out.data_ptr<float>(), idx.numel());
  return out;
}

at::Tensor index_add(at::Tensor src, at::Tensor idx) {
  auto out = at::zeros_like(src);
  index_add_cu<<<(idx.numel() + 255) / 256, 256>>>(
      src.data_ptr<float>(), idx.data_ptr<long>(), out.data_ptr<float>(), idx.numel());
  return out;
}

TORCH_LIBRARY_IMPL(mylib, CUDA, m) {
  m.impl(TORCH_SELECTIVE_NAME("mylib::index_select"), TORCH_FN(index_select));
  m.impl(TORCH_SELECTIVE_NAME("mylib::index_add"), TORCH_FN(index_add));
}
"""

OPS_BASE = """\
import torch

from .common import get_operator


class IndexSelect:
    OPERATOR = get_operator("index_select")


class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, src, idx):
        ctx.save_for_backward(idx)
        return IndexSelect.OPERATOR(src, idx)

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        return torch.ops.mylib.index_add(grad, idx), None
"""

OPS_HEAD = """\
import torch

from .triton_ops import gather_bwd, gather_fwd


class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, src, idx):
        ctx.save_for_backward(idx)
        return gather_fwd(src, idx)

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        return gather_bwd(grad, idx), None
"""

TRITON_OPS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def gather_fwd_kernel(src_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.load(src_ptr + i, mask=offs < n), mask=offs < n)


@triton.jit
def gather_bwd_kernel(src_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs, mask=offs < n)
    tl.atomic_add(out_ptr + i, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def gather_fwd(src, idx):
    out = torch.empty_like(src)
    gather_fwd_kernel[(triton.cdiv(idx.numel(), 256),)](src, idx, out, idx.numel(), BLOCK=256)
    return out


def gather_bwd(grad, idx):
    out = torch.zeros_like(grad)
    gather_bwd_kernel[(triton.cdiv(idx.numel(), 256),)](grad, idx, out, idx.numel(), BLOCK=256)
    return out
"""


def test_call_sites_switched_per_function_pair_by_role(tmp_path):
    base = {"csrc/index.cu": INDEX_CU, "mylib/ops.py": OPS_BASE}
    head = {"csrc/index.cu": INDEX_CU, "mylib/ops.py": OPS_HEAD, "mylib/triton_ops.py": TRITON_OPS}
    for whole in (True, False):
        a = run(tmp_path / str(whole), base, head, whole=whole)
        c = by_name(a)
        if not whole:  # the C++ kernels are not in the diff: nothing to pair them with
            assert {x.kind for x in c.values()} == {"new"}
            continue
        assert c["gather_fwd_kernel"].kind == "rewrite"
        assert c["gather_fwd_kernel"].old.name == "index_select_cu"
        assert c["gather_bwd_kernel"].old.name == "index_add_cu"
        assert c["gather_fwd_kernel"].old_kernel_kept is True


COMMON_CUH = """\
#pragma once
struct WarpScan {
  __device__ float scan(float x) {
    for (int i = 1; i < 32; i *= 2) x += __shfl_up_sync(0xffffffff, x, i);
    return x;
  }
};
"""

SCAN_CU = """\
#include "common.cuh"

__global__ void scan_kernel(const float* x, float* y, int n) {
  WarpScan s;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s.scan(x[i]);
}

__global__ void copy_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

void launch(const float* x, float* y, int n) {
  TORCH_CHECK(n > 0, "empty");
  scan_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}

void copy(const float* x, float* y, int n) {
  copy_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""


def _scan_change(tmp_path: Path, header: str, source: str) -> KernelChange:
    """The one change of csrc/scan.cu's kernels when its header and it become these."""
    base = {"csrc/common.cuh": COMMON_CUH, "csrc/scan.cu": SCAN_CU}
    c = by_name(run(tmp_path, base, {"csrc/common.cuh": header, "csrc/scan.cu": source}))
    assert set(c) == {"scan_kernel"}
    assert c["scan_kernel"].host_changes
    return c["scan_kernel"]


def test_a_local_header_change_reaches_the_kernels_that_use_it(tmp_path):
    head = COMMON_CUH.replace("#pragma once", "#pragma once\n#ifdef USE_ROCM\n#define W 64\n#endif")
    c = _scan_change(tmp_path, head.replace("x += __shfl", "x = x + __shfl"), SCAN_CU)
    assert c.kind == "body"
    assert "WarpScan" in c.via_helpers


def test_a_host_function_change_is_a_launch_change(tmp_path):
    # an early return that decides whether the launch runs (a check alone, TORCH_CHECK, is no
    # part of the launch: ``scan/cpp_slice``)
    head = SCAN_CU.replace('TORCH_CHECK(n > 0, "empty");', "if (n <= 0) return;")
    assert _scan_change(tmp_path, COMMON_CUH, head).kind == "launch"


def test_a_c_plus_plus_launch_through_a_pointer_is_the_kernel():
    text = SCAN_CU.replace(
        "  scan_kernel<<<",
        "  auto kernel = n > 4096 ? scan_kernel : copy_kernel;\n  kernel<<<",
    )
    scan = scan_source("csrc/scan.cu", text)
    assert [x.kernel for x in scan.launches] == ["scan_kernel", "copy_kernel"]


def test_diff_mode_names_the_kernel_files_it_cannot_classify(tmp_path):
    head = COMMON_CUH.replace("x += __shfl", "x = x + __shfl")
    base = {"csrc/common.cuh": COMMON_CUH, "csrc/scan.cu": SCAN_CU}
    a = run(tmp_path, base, {"csrc/common.cuh": head, "csrc/scan.cu": SCAN_CU}, whole=False)
    assert not a.changes
    assert [u.path for u in a.unclassified] == ["csrc/common.cuh"]
    assert "cannot be classified from the diff alone" in a.unclassified[0].why
    assert "Kernel files the diff alone does not classify:" in render_table(a)


def test_python_dsl_kernels_are_kernels():
    gluon = (
        "from triton.experimental import gluon\nfrom triton.experimental.gluon import language"
        " as gl\n\n\n@gluon.jit\ndef add_kernel(x, n: gl.constexpr):\n    pass\n"
    )
    cute = (
        "import cutlass.cute as cute\n\n\nclass Step:\n    @cute.kernel\n    def kernel(self, x):"
        "\n        pass\n\n    @cute.jit\n    def __call__(self, x):\n        self.kernel(x)\n"
    )
    tile = (
        "import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\ndef gemm(M, block_M"
        "=128):\n    @T.prim_func\n    def main(A: T.Tensor((M,), 'float16')):\n        with "
        "T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:\n            pass\n\n    return main\n"
    )
    found = {
        k.name: k.language
        for path, text in (("g.py", gluon), ("c.py", cute), ("t.py", tile))
        for k in scan_source(path, text).kernels
    }
    assert found == {"add_kernel": "gluon", "kernel": "cute", "main": "tilelang"}
    # a prim_func is made by its factory: a tile change in the factory changes the kernel
    a = scan_source("t.py", tile).kernels[0]
    b = scan_source("t.py", tile.replace("block_M=128", "block_M=64")).kernels[0]
    assert a.digest != b.digest


def test_a_config_list_changed_where_it_is_built_is_a_tuning_change(tmp_path):
    base = COMPUTED.replace("CONFIGS = [", "if True:\n    pass\nCONFIGS = [")
    head = COMPUTED.replace(
        "CONFIGS = [",
        "if torch.version.hip is not None:\n    CONFIGS = [triton.Config({'BLOCK': 256})]\n"
        "else:\n    CONFIGS = [",
    ).replace('    triton.Config({"BLOCK": b}', '        triton.Config({"BLOCK": b}')
    head = head.replace("import itertools\n", "import itertools\nimport torch\n")
    c = by_name(run(tmp_path, {"k.py": base}, {"k.py": head}))["scale_kernel"]
    assert c.kind == "tuning" and c.configs_new_computed
    assert [b.kind for b in c.branches] == ["vendor"]


LOADER_CPP = """\
#include "triton_jit_function.h"

at::Tensor embedding(const at::Tensor& weight, const at::Tensor& indices) {
  const TritonJITFunction& f =
      TritonJITFunction::getInstance(std::string(src_path() / "embedding.py"),
                                     "embedding_kernel");
  return f(weight, indices);
}
"""

EMBEDDING_PY = """\
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(out_ptr, in_ptr, weight_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, tl.load(weight_ptr + tl.load(in_ptr + pid)))
"""


def test_a_triton_kernel_loaded_by_name_from_cpp(tmp_path):
    base = {"lib/embedding.cpp": LOADER_CPP, "src/pkg/ops/embedding.py": EMBEDDING_PY}
    head = dict(base)
    head["lib/embedding.cpp"] = LOADER_CPP.replace(
        'src_path() / "embedding.py"', 'src_path() / "ops" / "embedding.py"'
    )
    c = by_name(run(tmp_path, base, head))["embedding_kernel"]
    assert (c.kind, c.path) == ("launch", "src/pkg/ops/embedding.py")
    assert "through a loader in lib/embedding.cpp" in c.host_changes[0]


CUPY_PY = '''\
import cupy as cp


def make_forward_kernel(n):
    return cp.RawKernel(
        r"""
extern "C" __global__
void slice_forward(const float* x, float* y) {
    y[threadIdx.x] = x[threadIdx.x];
}
""",
        "slice_forward",
    )
'''


def test_cuda_in_a_python_string_is_a_kernel():
    (k,) = scan_source("ft.py", CUPY_PY).kernels
    assert (k.name, k.language, k.line_start, k.built_by) == (
        "slice_forward",
        "cuda",
        7,
        "make_forward_kernel",
    )


def test_part_a_counts_the_helpers_of_a_local_header_and_c10_checks():
    header = (
        "#pragma once\n__device__ float block_sum(float v) {\n  __shared__ float s[32];\n"
        "  s[threadIdx.x] = v;\n  __syncthreads();\n  return s[0];\n}\n"
    )
    cu = (
        '#include "reduce.cuh"\n\n__global__ void sum_kernel(const float* x, float* y) {\n'
        "  y[0] = block_sum(x[threadIdx.x]);\n}\n\nvoid sum(const float* x, float* y) {\n"
        "  sum_kernel<<<1, 32>>>(x, y);\n  C10_CUDA_CHECK(cudaGetLastError());\n}\n"
    )
    side = part_a_side(
        {"csrc/sum.cu": cu, "csrc/reduce.cuh": header}, [("csrc/sum.cu", "sum_kernel")]
    )
    assert side.helpers == ["block_sum"]
    assert (side.barriers, side.shared_memory_declarations) == (1, 1)
    assert side.error_check_lines == 1
