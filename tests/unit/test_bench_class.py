"""The benchmark-class form (FlagGems' ``benchmark/``): a test makes an object of a class that
builds its inputs from ``shapes`` (``get_input_iter``) and times its op in ``run()``; the
worker's ``bench_forms.py`` runs it as a bench entry point, in-process here, on a small package
of that shape (relative imports, a base class in ``base.py``, an op whose kernels are put in
place by a context that ``run()`` holds around the timing, as FlagGems' ``use_gems()`` does)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

MYLIB = """\
import contextlib

ENABLED = [False]


@contextlib.contextmanager
def use_mylib():  # the library's kernels in place of torch's while it is held
    ENABLED[0] = True
    try:
        yield
    finally:
        ENABLED[0] = False


def op(x):
    return x * 3 if ENABLED[0] else x * 2
"""
BASE = """\
import time

import mylib


class Benchmark:
    device = "cuda"

    def __init__(self, op_name, torch_op, dtypes=None, is_backward=False, **kwargs):
        self.op_name, self.torch_op, self.dtypes = op_name, torch_op, dtypes
        self.gems_op = kwargs.get("gems_op")
        self.is_backward = is_backward
        self.shapes = [(1024, 1024)]
        self.to_bench_dtypes = dtypes

    def set_gems(self, gems_op):
        self.gems_op = gems_op

    def init_user_config(self):
        self.shapes = [(4096, 4096)]  # read from a shapes file

    def unpack_to_args_kwargs(self, made):
        return [a for a in made if not isinstance(a, dict)], {}

    def get_latency(self, op, *args, **kwargs):
        start = time.perf_counter()
        op(*args, **kwargs)
        return time.perf_counter() - start

    def run(self):
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            for made in self.get_input_iter(dtype):
                args, kwargs = self.unpack_to_args_kwargs(made)
                if self.gems_op:
                    self.get_latency(self.gems_op, *args, **kwargs)
                else:
                    with mylib.use_mylib():
                        self.get_latency(self.torch_op, *args, **kwargs)


class UnaryPointwiseBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield (torch_randn(shape, dtype, self.device),)


class WrappedShapes(Benchmark):  # FlagGems-sglang's AbsBenchmark: each shape in a 1-tuple
    def get_input_iter(self, dtype):
        for (shape,) in self.shapes:
            yield (torch_randn(shape, dtype, self.device),)


def torch_randn(shape, dtype, device):
    import torch

    return torch.randn(shape, dtype=dtype, device=device)
"""
TESTS = """\
import pytest
import torch

import mylib

from . import base


def test_op():
    bench = base.UnaryPointwiseBenchmark(
        op_name="op", torch_op=mylib.op, dtypes=[torch.float16, torch.float32]
    )
    bench.run()


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_op_gems(dtype):
    bench = base.WrappedShapes(op_name="op", torch_op=torch.neg, dtypes=[dtype])
    bench.set_gems(lambda x: x * 5)
    bench.run()


def test_backward():
    bench = base.UnaryPointwiseBenchmark(op_name="op", torch_op=mylib.op, is_backward=True)
    bench.run()


def test_no_run():
    base.UnaryPointwiseBenchmark(op_name="op", torch_op=mylib.op)
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    files = {
        "mylib/__init__.py": MYLIB,
        "benchmark/__init__.py": "",
        "benchmark/base.py": BASE,
        "benchmark/test_op.py": TESTS,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    sys.path.insert(0, str(tmp_path))  # the checkout is importable, as in the worker
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [n for n in sys.modules if n.split(".")[0] in ("mylib", "benchmark")]:
        del sys.modules[name]
    sys.modules.pop("_kernel_review_bench_benchmark_test_op_py", None)


def test_the_object_a_test_makes_gives_the_case(capture, root: Path) -> None:
    """The object gets the case's shape and dtype (not the shapes its config would read); its
    op runs inside what run() holds around the timing, held on from another thread."""
    entry = capture.entry_for("bench_class:benchmark/test_op.py:test_op", str(root))
    case = entry((3, 5), "float16", device="cpu", seed=1)
    [x] = case["inputs"]
    assert x.shape == (3, 5) and x.dtype == torch.float16
    assert torch.equal(case["fn"](), x * 3)  # the library's op, as run() times it
    again = entry((3, 5), "float16", device="cpu", seed=1)  # a second copy: the same state held
    assert torch.equal(again["inputs"][0], x) and torch.equal(again["fn"](), x * 3)
    mylib = sys.modules["mylib"]
    assert mylib.ENABLED == [True]  # held for the rest of the process


def test_a_gems_op_is_called_directly_with_shapes_as_the_class_takes_them(
    capture, root: Path
) -> None:
    entry = capture.entry_for("bench_class:benchmark/test_op.py:test_op_gems", str(root))
    case = entry((4, 6), "float32", device="cpu")
    [x] = case["inputs"]
    assert x.shape == (4, 6) and x.dtype == torch.float32  # the parametrized dtype is the case's
    assert torch.equal(case["fn"](), x * 5)


def test_what_the_form_cannot_run_is_said(capture, root: Path) -> None:
    backward = capture.entry_for("bench_class:benchmark/test_op.py:test_backward", str(root))
    with pytest.raises(capture.BadBenchmark, match="times a backward pass"):
        backward((4,), "float32", device="cpu")
    none = capture.entry_for("bench_class:benchmark/test_op.py:test_no_run", str(root))
    with pytest.raises(capture.BadBenchmark, match="made no benchmark object whose run"):
        none((4,), "float32", device="cpu")
