"""A compiled op kept beside a new Triton call is its rewrite when the two are the branches of
one test (a backend flag), not when they run in sequence (``reach/moved_calls._alternatives``);
guards that read the same flags from another holder are the same guards
(``reach/call_gates._held``).

Shortened from two real repositories:

- xlite-dev/ffpa-attn (Apache-2.0), src/ffpa_attn/ffpa_attn_interface.py at 2136b3044885 and
  0ae4adb74b77 (in tests/data/real_prs): ``FFPAAttnFunc.forward`` runs the CUDA or the Triton
  forward by ``meta.forward_backend``; its backward reads the flags from ``ctx.meta`` instead
  of ``ctx``;
- AutoGPTQ/AutoGPTQ (MIT), auto_gptq/modeling/_utils.py at 9c405b162891 (in tests/data/real_prs):
  ``pack_model`` builds the layers (``make_quant``, whose CUDA layers reach ``quant_cuda``), then
  warms the Triton kernels up: two steps, not a choice.
"""

from __future__ import annotations

import ast

from bot.analysis.reach.call_gates import _held, guarded_calls
from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side
from bot.analysis.reach.moved_calls import moved_calls

CHOICE = """\
    if meta.forward_backend == "cuda":
      O = _ffpa_attn_forward_cuda(q, k, v, meta.stages, meta.causal, meta.softmax_scale)
    elif meta.forward_backend == "triton":
      O = _ffpa_attn_forward_triton(q, k, v, meta.causal, meta.softmax_scale)
    else:
      raise ValueError(f"Unsupported forward_backend={meta.forward_backend!r}")
"""
FFPA_BASE = {
    "setup.py": """\
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
ext_modules = [CUDAExtension(name="ffpa_attn._C", sources=ENV.get_build_sources(build_pkg=True))]
""",
    "src/ffpa_attn/ffpa_attn_interface.py": """\
import torch
from ._C import ffpa_attn_forward as _ffpa_attn_fwd_cuda


def _ffpa_attn_forward_cuda(Q, K, V, stages, causal, softmax_scale):
  O = torch.empty_like(Q)
  _ffpa_attn_fwd_cuda(Q, K, V, O, stages, causal, softmax_scale)
  return O


class FFPAAttnFunc(torch.autograd.Function):
  @staticmethod
  def forward(ctx, q, k, v, stages, causal, softmax_scale):
    O = _ffpa_attn_forward_cuda(q, k, v, stages, causal, softmax_scale)
    return O
""",
}
FFPA_HEAD = {
    "setup.py": FFPA_BASE["setup.py"],
    "src/ffpa_attn/ffpa_attn_interface.py": """\
import torch
from .cuda import _ffpa_attn_forward_cuda
from .triton import _ffpa_attn_forward_triton


class FFPAAttnFunc(torch.autograd.Function):
  @staticmethod
  def forward(ctx, q, k, v, meta):
CHOICE    return O
""".replace("CHOICE", CHOICE),
    "src/ffpa_attn/triton/__init__.py": "from ._ffpa_fwd import _ffpa_attn_forward_triton\n",
    "src/ffpa_attn/triton/_ffpa_fwd.py": """\
import triton
import triton.language as tl


@triton.jit
def _ffpa_fwd_kernel_impl(Q, O, BLOCK_M: tl.constexpr):
    tl.store(O + tl.arange(0, BLOCK_M), tl.load(Q + tl.arange(0, BLOCK_M)))


_ffpa_fwd = _ffpa_fwd_kernel_impl


def _ffpa_attn_forward_triton(q, k, v, causal, softmax_scale):
    _ffpa_fwd[(1,)](q, q, BLOCK_M=64)
""",
}
WHERE = "src/ffpa_attn/ffpa_attn_interface.py::FFPAAttnFunc.forward"
SWITCH = (WHERE, {"~_ffpa_attn_forward_cuda"}, {"_ffpa_attn_forward_triton"})


def _side(files: dict[str, str]) -> Side:
    paths = sorted(files)
    return Side(paths, files.get, ExtensionIndex(paths, files.get))


def test_a_backend_choice_moves_the_op_to_the_triton_kernel() -> None:
    (moved,) = moved_calls((_side(FFPA_BASE), _side(FFPA_HEAD)), [SWITCH])
    assert [o.name for o in moved.ops] == ["ffpa_attn_forward"]
    assert moved.kernels == ("_ffpa_fwd_kernel_impl",)  # through the module-level alias
    assert moved.kept


def test_calls_in_sequence_are_no_choice() -> None:
    head = dict(FFPA_HEAD)
    head["src/ffpa_attn/ffpa_attn_interface.py"] = head[
        "src/ffpa_attn/ffpa_attn_interface.py"
    ].replace(
        CHOICE,
        # pack_model's shape (AutoGPTQ): build with one, then warm the other up
        """\
    O = _ffpa_attn_forward_cuda(q, k, v, meta.stages, meta.causal, meta.softmax_scale)
    if meta.autotune_warmup:
      _ffpa_attn_forward_triton(q, k, v, meta.causal, meta.softmax_scale)
""",
    )
    assert moved_calls((_side(FFPA_BASE), _side(head)), [SWITCH]) == []


def _guards(source: str) -> set[tuple[str, ...]]:
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    return guarded_calls(func)["_ffpa_attn_backward_triton"]


def test_flags_read_from_another_holder_are_the_same_guards() -> None:
    base = """\
def backward(ctx, grad_out):
    if D > 256:
      if ctx.backward_backend == "triton":
        dq = _ffpa_attn_backward_triton(q, causal=ctx.causal)
"""
    head = base.replace("ctx.backward_backend", "meta.backward_backend")
    other = base.replace("D > 256", "D > 128")
    assert _guards(base) != _guards(head)
    assert _held(_guards(base)) == _held(_guards(head))
    assert _held(_guards(base)) != _held(_guards(other))
