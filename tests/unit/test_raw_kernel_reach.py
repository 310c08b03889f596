"""A CUDA kernel held as a source string (``cupy.RawKernel``) is reached through the calls that
compile and run it, and a Triton kernel stored in a table is launched by its key
(``reach/follow._raw_ops``, ``scan/triton._kernel_tables``).

Shortened from two real repositories:

- ahb-sjsu/turboquant-pro (MIT) at de9b8658d888 (the corpus holds the whole pull request):
  turboquant_pro/kv_kernel.py runs ``_kernel(cp, "fused_decode_pck", _SRC_PCK)(...)``, its
  Triton port in kv_triton.py launches ``K["pck"][grid](...)`` of a table ``_build_kernels``
  fills;
- official-stockfish/nnue-pytorch (GPL-3.0) at 9f72946529c4:
  model/modules/feature_transformer/sparse_linear_functions.py's autograd Function calls
  ``make_sparse_input_linear_forward_kernel`` (sparse_linear_kernel.py), which compiles
  ``cp.RawKernel(rf\"\"\"...\"\"\", "sparse_input_linear_forward")``.
"""

from __future__ import annotations

from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side

TURBOQUANT = {
    "turboquant_pro/kv_kernel.py": '''\
_SRC_PCK = r"""
extern "C" __global__ void fused_decode_pck(const float* __restrict__ w, float* __restrict__ m_out)
{
    m_out[blockIdx.x] = w[threadIdx.x];
}
"""

_KERNEL = {}


def _kernel(cp, name, src):
    k = _KERNEL.get(name)
    if k is None:
        k = _KERNEL[name] = cp.RawKernel(src, name)
    return k


def pck_block_partials_cuda(q, blk, tq, scale=None):
    import cupy as cp

    print("fused_decode_pck")
    _kernel(cp, "fused_decode_pck", _SRC_PCK)((1,), (128,), (q, blk))
''',
    "turboquant_pro/_triton_kernels.py": """\
import triton
import triton.language as tl


@triton.jit
def pck_partials_kernel(W, M_OUT, BLOCK_D: tl.constexpr):
    tl.store(M_OUT + tl.program_id(0), tl.load(W + tl.arange(0, BLOCK_D)))
""",
    "turboquant_pro/kv_triton.py": """\
_K = {}


def _build_kernels():
    if _K:
        return _K
    import triton

    from . import _triton_kernels as tk

    _K["pck"] = tk.pck_partials_kernel
    _K["triton"] = triton
    return _K


def pck_block_partials_triton(q, blk, tq, scale=None):
    K = _build_kernels()
    K["pck"][(q.shape[0],)](q, blk, BLOCK_D=64)
""",
}

NNUE = {
    "model/modules/feature_transformer/sparse_linear_kernel.py": '''\
import cupy as cp

_sparse_input_linear_forward_kernel_cache = {}


def make_sparse_input_linear_forward_kernel(max_active_indices: int, output_size: int):
    key = (max_active_indices, output_size)
    if key not in _sparse_input_linear_forward_kernel_cache:
        kernel = cp.RawKernel(
            rf"""
extern "C" __global__
void sparse_input_linear_forward(
    const int32_t* const input_indices,
          float*   const output
) {{
    output[blockIdx.x * {output_size}] = input_indices[threadIdx.x];
}}
""",
            "sparse_input_linear_forward",
        )
        _sparse_input_linear_forward_kernel_cache[key] = kernel
    return _sparse_input_linear_forward_kernel_cache[key]
''',
    "model/modules/feature_transformer/sparse_linear_functions.py": """\
from torch import autograd

from .sparse_linear_kernel import make_sparse_input_linear_forward_kernel


class SparseLinearFunction(autograd.Function):
    @staticmethod
    def forward(ctx, feature_indices, weight, bias):
        kernel = make_sparse_input_linear_forward_kernel(feature_indices.shape[1], 32)
        kernel(grid=(feature_indices.shape[0],), args=(feature_indices.data_ptr(),))
""",
}


def _side(files: dict[str, str]) -> Side:
    paths = sorted(files)
    return Side(paths, files.get, ExtensionIndex(paths, files.get))


def test_a_source_string_kernel_is_an_op_of_the_call_that_runs_it() -> None:
    found = _side(TURBOQUANT).follow("turboquant_pro.kv_kernel.pck_block_partials_cuda")
    ops = found[""].ops
    assert {(o.name, o.extension.where) for o in ops} == {
        ("fused_decode_pck", "turboquant_pro/kv_kernel.py")
    }


def test_a_table_of_kernels_launched_by_key_launches_the_stored_kernel() -> None:
    found = _side(TURBOQUANT).follow("turboquant_pro.kv_triton.pck_block_partials_triton")
    assert found[""].kernels == {"pck_partials_kernel"}


def test_a_factory_compiling_a_raw_kernel_is_followed_from_an_autograd_function() -> None:
    found = _side(NNUE).follow(
        "model.modules.feature_transformer.sparse_linear_functions.SparseLinearFunction"
    )
    assert {o.name for o in found["forward"].ops} == {"sparse_input_linear_forward"}


def test_a_string_that_names_no_kernel_of_the_module_is_no_op() -> None:
    files = dict(TURBOQUANT)
    files["turboquant_pro/kv_kernel.py"] = files["turboquant_pro/kv_kernel.py"].replace(
        '_kernel(cp, "fused_decode_pck", _SRC_PCK)', "_kernel(cp, 'other', None)"
    )
    found = _side(files).follow("turboquant_pro.kv_kernel.pck_block_partials_cuda")
    assert not found[""].ops


# A CuPy launch, ``kernel(grid=..., args=...)`` of what a factory compiled, in another file than
# the kernel: shortened from sparse_linear_functions.py and sparse_linear_kernel.py of
# official-stockfish/nnue-pytorch at 9f72946529c4 (the corpus's 178821208403 changes the grid of
# fused_double_ft_backward the same way).
FUNCTIONS = "model/modules/feature_transformer/sparse_linear_functions.py"
LAUNCH = NNUE["model/modules/feature_transformer/sparse_linear_functions.py"].replace(
    "from torch import autograd", "import numpy as np\nfrom torch import autograd"
)


def _launch_changes(after: str) -> list[tuple[str, str, list[str]]]:
    from bot.analysis.classify import analyze_diff
    from tests.diff_util import file_diff

    old = {**NNUE, FUNCTIONS: LAUNCH}
    new = {**NNUE, FUNCTIONS: after}
    kernel_file = "model/modules/feature_transformer/sparse_linear_kernel.py"
    touched = NNUE[kernel_file].replace("threadIdx.x]", "threadIdx.x + 0]")
    new[kernel_file] = touched
    diff = file_diff(FUNCTIONS, LAUNCH, after) + file_diff(kernel_file, NNUE[kernel_file], touched)
    analysis = analyze_diff(
        diff, old_source=old.get, new_source=new.get, old_files=sorted(old), thrifty=False
    )
    return [(c.kind, c.name, c.host_changes) for c in analysis.changes]


def test_a_cupy_launch_in_another_file_is_the_kernel_s_host_change() -> None:
    regrid = LAUNCH.replace(
        "grid=(feature_indices.shape[0],)", "grid=((feature_indices.shape[0] + 3) // 4,)"
    )
    assert _launch_changes(regrid) == [
        (
            "body",
            "sparse_input_linear_forward",
            [f"{FUNCTIONS}: the host code that launches it changed"],
        )
    ]
    # the launch as it was: the body change alone
    assert _launch_changes(LAUNCH + "\n") == [("body", "sparse_input_linear_forward", [])]
