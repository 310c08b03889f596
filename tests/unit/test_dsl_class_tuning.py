"""Tuning set by the host methods of a CuTe DSL kernel's class (``tuning.dsl_classes``): the
class's ``@cute.kernel`` is a tuning change, where only its tuning values moved.

Excerpt of quack/rotary.py of Dao-AILab/quack (Apache-2.0), class RotaryVectorized, at
5c3701cdc623 ("[Rotary] Tune for hdim 96": the constructor's ``self.tile_h`` threshold moves
from 64 to 96) and its parent; the launch and the kernel are cut to their first lines.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "quack/rotary.py"

BASE = """\
import cutlass
import cutlass.cute as cute


class RotaryVectorized:
    def __init__(
        self,
        dtype: type[cutlass.Numeric],
        dim: int,
        interleaved: bool = False,
        conjugate: bool = False,
    ):
        self.dtype = dtype
        self.dim = dim
        self.interleaved = interleaved
        self.conjugate = conjugate
        self.num_threads = 128
        self.tile_h = 2 if self.dim <= 64 else 1
        multiple = 32 if dim <= 32 else 64
        self.tile_d = (dim + multiple - 1) // multiple * multiple

    @cute.jit
    def __call__(self, mX: cute.Tensor, mO: cute.Tensor, stream):
        nheads, seqlen, batch = mX.shape[2], mX.shape[0], mX.shape[3]
        self.kernel(mX, mO).launch(
            grid=[cute.ceil_div(nheads, self.tile_h), seqlen, batch],
            block=[self.num_threads, 1, 1],
            stream=stream,
        )

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mO: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        mO[tidx] = mX[tidx]
"""

HEAD = BASE.replace("self.dim <= 64", "self.dim <= 96").replace("dim <= 32", "dim <= 128")


def test_a_tile_size_set_by_the_constructor_is_tuning_of_the_kernel() -> None:
    changes = analysis_between({PATH: BASE}, {PATH: HEAD}).changes
    assert [(c.kind, c.name, c.language) for c in changes] == [("tuning", "kernel", "cute")]
    key = "self.tile_h in RotaryVectorized.__init__"
    assert (changes[0].tuning_old[key], changes[0].tuning_new[key]) == (
        "2 if self.dim <= 64 else 1",
        "2 if self.dim <= 96 else 1",
    )


def test_host_changes_that_set_no_tuning_are_not_tuning() -> None:
    # another default of a flag, and the tile line written another way: no tuning moved
    head = BASE.replace("conjugate: bool = False", "conjugate: bool = True").replace(
        "self.tile_h = 2 if self.dim <= 64 else 1", "self.tile_h = (2 if (self.dim <= 64) else 1)"
    )
    changes = analysis_between({PATH: BASE}, {PATH: head}).changes
    assert [c for c in changes if c.kind == "tuning" or c.tuning_new] == []
