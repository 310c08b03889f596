"""The kernel languages of ``bot.analysis.languages``: each DSL's kernels found and named, a
policy's own decorators, kernel-like decorators no language claims reported as unrecognised,
ports between languages paired, and Part A counted in each language's own words."""

from __future__ import annotations

import textwrap

import pytest

from bot.analysis.changes import change_lines
from bot.analysis.classify import analyze_diff
from bot.analysis.code_counts import part_a_side
from bot.analysis.scan import scan_source
from bot.errors import PolicyError
from bot.policy.load import parse_policy

GLUON = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


@gluon.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])
    smem = gl.allocate_shared_memory(gl.float32, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    mbarrier.wait(smem, 0)


def copy(x, y):
    copy_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
"""

HELION = """
import torch
import helion
import helion.language as hl


@helion.kernel(config=helion.Config(block_sizes=[64], num_warps=4))
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.size(0)
    for tile in hl.tile(n):
        out[tile] = x[tile] + y[tile]
    return out
"""

CUTE = """
import cutlass
import cutlass.cute as cute


class Scale:
    @cute.jit
    def _twice(self, v):
        return v * 2

    @cute.kernel
    def kernel(self, x: cute.Tensor, y: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        y[tidx] = self._twice(x[tidx])
        cute.arch.barrier()

    @cute.jit
    def __call__(self, x: cute.Tensor, y: cute.Tensor):
        self.kernel(x, y).launch(grid=[1, 1, 1], block=[128, 1, 1])
"""

TILELANG = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=128, block_N=128, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, K), "float16")
            T.copy(A[by * block_M, 0], A_shared)
            T.sync_threads()

    return main
"""

CUTILE = """
import cuda.tile as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(c, index=(pid,), tile=ct.load(a, index=(pid,), shape=(TILE,)) + 1)
"""


def _kernels(path: str, text: str, markers: tuple[str, ...] = ()) -> dict[str, str]:
    scan = scan_source(path, textwrap.dedent(text), markers)
    return {k.name: k.language for k in scan.kernels if k.launched}


def test_each_dsl_names_its_kernels_and_only_them() -> None:
    assert _kernels("g.py", GLUON) == {"copy_kernel": "gluon"}
    assert _kernels("h.py", HELION) == {"add": "helion"}
    assert _kernels("c.py", CUTE) == {"kernel": "cute"}  # __call__ launches, _twice is called
    assert _kernels("t.py", TILELANG) == {"main": "tilelang"}


def test_a_cute_jit_device_function_is_a_helper_and_the_host_launch_is_read() -> None:
    scan = scan_source("c.py", CUTE)
    helper = scan.kernel("_twice")
    assert helper is not None and helper.language == "cute" and not helper.launched
    assert scan.kernel("__call__") is None
    [launch] = scan.launches
    assert (launch.kernel, launch.wrapper, launch.grid) == ("kernel", "__call__", "[1, 1, 1]")
    assert launch.tuning == {"block": "[128, 1, 1]"}


def test_a_kernel_like_decorator_no_language_claims_is_unrecognised_not_dropped() -> None:
    assert _kernels("v.py", CUTILE) == {"vector_add": "unrecognised"}
    # without a GPU import, a ``.kernel`` decorator is nobody's kernel
    plain = CUTILE.replace("import cuda.tile as ct", "import mylib.tile as ct")
    assert _kernels("v.py", plain) == {}
    # decorators of modules known to make no kernels stay out, whatever the file imports
    assert _kernels("v.py", CUTILE.replace("@ct.kernel", "@torch.jit.ignore")) == {}


def test_the_policy_names_its_own_kernel_decorators() -> None:
    assert _kernels("v.py", CUTILE, ("cuda.tile.kernel",)) == {"vector_add": "custom"}
    assert _kernels("v.py", CUTILE, ("ct.kernel",)) == {"vector_add": "custom"}  # as written
    own = "import mylib\n\n@mylib.gpu_op\ndef fused(x):\n    return x\n"
    assert _kernels("m.py", own) == {}
    assert _kernels("m.py", own, ("mylib.gpu_op",)) == {"fused": "custom"}


def _new_file(path: str, text: str) -> str:
    lines = textwrap.dedent(text).strip("\n").split("\n")
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def test_an_unrecognised_kernel_says_so_in_the_review() -> None:
    analysis = analyze_diff(_new_file("ops/add.py", CUTILE))
    [change] = analysis.changes
    assert (change.kind, change.name, change.language) == ("new", "vector_add", "unrecognised")
    assert "unrecognised kernel language: @ct.kernel" in change.notes[0]
    assert "kernel_decorators" in change.notes[0]
    [line] = change_lines(analysis)
    assert line.new_language == "unrecognised kernel language"
    assert "does not know its kernel language" in line.not_compiled


TRITON_COPY = """
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def copy(x, y):
    copy_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
"""


def _replaced(path: str, old: str, new: str) -> tuple[str, dict[str, str], dict[str, str]]:
    a = textwrap.dedent(old).strip("\n").split("\n")
    b = textwrap.dedent(new).strip("\n").split("\n")
    body = "".join(f"-{line}\n" for line in a) + "".join(f"+{line}\n" for line in b)
    diff = (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(a)} +1,{len(b)} @@\n{body}"
    )
    return diff, {path: "\n".join(a) + "\n"}, {path: "\n".join(b) + "\n"}


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [(TRITON_COPY, GLUON, "triton → gluon"), (GLUON, TRITON_COPY, "gluon → triton")],
)
def test_a_port_between_languages_is_a_rewrite(old: str, new: str, kind: str) -> None:
    diff, before, after = _replaced("ops/copy.py", old, new)
    analysis = analyze_diff(diff, old_source=before.get, new_source=after.get)
    [change] = analysis.changes
    assert change.kind == "rewrite" and change.old_kernel_kept is False
    assert f"{change.old_language} → {change.language}" == kind
    assert change.part_a is not None
    gluon_side = change.part_a.new if change.language == "gluon" else change.part_a.old
    assert gluon_side.barriers == 1 and gluon_side.shared_memory_declarations == 1


def test_a_port_beside_the_kept_kernel_is_a_rewrite_that_keeps_it() -> None:
    diff = _new_file("ops/copy_gluon.py", GLUON)
    texts = {"ops/copy.py": textwrap.dedent(TRITON_COPY)}
    extra = (
        "diff --git a/ops/copy.py b/ops/copy.py\n--- a/ops/copy.py\n+++ b/ops/copy.py\n"
        "@@ -11,2 +11,3 @@ def copy(x, y):\n"
        " def copy(x, y):\n"
        "     copy_kernel[(1,)](x, y, x.numel(), BLOCK=1024)\n"
        "+    # a Gluon variant lives in copy_gluon.py\n"
    )
    new = {**texts, "ops/copy_gluon.py": textwrap.dedent(GLUON)}
    analysis = analyze_diff(diff + extra, old_source=texts.get, new_source=new.get)
    rewrites = [c for c in analysis.changes if c.kind == "rewrite"]
    assert [(c.name, c.old_language, c.old_kernel_kept) for c in rewrites] == [
        ("copy_kernel", "triton", True)
    ]


def test_helion_counts_its_tile_loops_as_the_kernel_and_the_rest_as_host() -> None:
    text = textwrap.dedent(HELION)
    side = part_a_side({"h.py": text}, [("h.py", "add")])
    assert side.language == "helion"
    assert side.kernel_body_lines == 2  # the hl.tile loop and its one statement
    assert side.host_wrapper_lines == 3  # out =, n =, return
    assert side.memory_lines == 1  # torch.empty_like
    assert side.vendors_covered == ["nvidia", "amd"]


def test_tilelang_and_cute_count_their_own_barriers_and_shared_memory() -> None:
    tl = part_a_side({"t.py": textwrap.dedent(TILELANG)}, [("t.py", "main")])
    assert (tl.barriers, tl.shared_memory_declarations) == (1, 1)
    cute = part_a_side({"c.py": textwrap.dedent(CUTE)}, [("c.py", "kernel")])
    assert cute.barriers == 1 and cute.vendors_covered == ["nvidia"]
    assert cute.wrappers == ["__call__"] and cute.host_wrapper_lines == 1


def test_kernel_decorators_must_be_dotted_names() -> None:
    base = textwrap.dedent(
        """
        [deployment]
        kind = "long-lived"
        [[kernels]]
        name = "k"
        bench = "m:f"
        paths = ["m.py"]
        dtypes = ["float32"]
        shapes = [[8]]
        """
    )
    ok = parse_policy('kernel_decorators = ["cuda.tile.kernel"]\n' + base, "p.toml")
    assert ok.kernel_decorators == ["cuda.tile.kernel"]
    with pytest.raises(PolicyError) as err:
        parse_policy('kernel_decorators = ["@ct.kernel(num_ctas=2)"]\n' + base, "p.toml")
    assert "not a dotted name" in str(err.value) and "p.toml:1:22" in str(err.value)
