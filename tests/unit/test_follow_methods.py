"""A call on an untyped receiver (``adapter_data.punica_wrapper.add_lora(...)``) reaches the one
class, among the modules the caller imports from, that defines the method; a method chosen by
an annotated conditional (``fn: Callable = self.a if flag else self.b``) is followed to both.

Shortened from predibase/lorax 902a68c425ec (Apache-2.0; in tests/data/real_prs):
server/lorax_server/utils/layers.py (LoraLinear.forward_layer_type) and
server/lorax_server/utils/punica.py (PunicaWrapper).
"""

from __future__ import annotations

from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side

LAYERS = "server/lorax_server/utils/layers.py"
PUNICA = "server/lorax_server/utils/punica.py"
OPS = "server/lorax_server/utils/ops/sgmv_shrink.py"


def _layers(call: str) -> str:
    return f"""\
from lorax_server.utils.punica import has_sgmv


class LoraLinear:
    def forward_layer_type(self, result, input, adapter_data, lora_a, lora_b):
        if adapter_data.punica_wrapper is not None:
            {call}
        elif has_sgmv():
            pass
"""


PUNICA_TEXT = """\
from typing import Callable

from lorax_server.utils.ops.sgmv_shrink import sgmv_shrink, bgmv_shrink


def has_sgmv() -> bool:
    return True


class PunicaWrapper:
    def shrink_prefill(self, y, x, w_t_all, scale):
        sgmv_shrink(x, w_t_all, y, scale)

    def shrink_decode(self, y, x, w_t_all, scale):
        bgmv_shrink(x, w_t_all, y, scale)

    def add_shrink(self, y, x, w_t_all, scale):
        shrink_fun: Callable = self.shrink_prefill if self.is_prefill else self.shrink_decode
        shrink_fun(y, x, w_t_all, scale)

    def add_lora(self, y, x, wa_t_all, wb_t_all, scale):
        self.add_shrink(y, x, wa_t_all, scale)
"""
OPS_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def _sgmv_shrink_kernel(x_ptr, w_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * tl.load(w_ptr + offs), mask=offs < N)


@triton.jit
def _bgmv_shrink_kernel(x_ptr, w_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + tl.load(w_ptr + offs), mask=offs < N)


def sgmv_shrink(x, w, y, scale):
    _sgmv_shrink_kernel[(triton.cdiv(y.numel(), 64),)](x, w, y, y.numel(), BLOCK=64)


def bgmv_shrink(x, w, y, scale):
    _bgmv_shrink_kernel[(triton.cdiv(y.numel(), 64),)](x, w, y, y.numel(), BLOCK=64)
"""


def _reach(call: str, punica: str = PUNICA_TEXT) -> set[str]:
    files = {LAYERS: _layers(call), PUNICA: punica, OPS: OPS_TEXT}
    side = Side(sorted(files), files.get, ExtensionIndex(sorted(files), files.get))
    called = call.split("(", 1)[0]
    return side.reach_call(LAYERS, "LoraLinear.forward_layer_type", called).kernels


def test_a_method_of_the_one_class_that_has_it_is_followed_through_both_choices():
    found = _reach("adapter_data.punica_wrapper.add_lora(result, input, lora_a, lora_b, 1.0)")
    assert found == {"_sgmv_shrink_kernel", "_bgmv_shrink_kernel"}


def test_a_method_two_classes_define_says_nothing():
    twin = PUNICA_TEXT + "\n\nclass OtherWrapper:\n    def add_lora(self, y, x):\n        pass\n"
    call = "adapter_data.punica_wrapper.add_lora(result, input, lora_a, lora_b, 1.0)"
    assert _reach(call, twin) == set()


def test_a_method_name_many_objects_have_says_nothing():
    renamed = PUNICA_TEXT.replace("def add_lora(", "def forward(")
    assert _reach("adapter_data.punica_wrapper.forward(result, input)", renamed) == set()
