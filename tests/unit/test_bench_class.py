"""The benchmark-class form (FlagGems' ``benchmark/``): a test makes an object of a class that
builds its inputs from ``shapes`` (``get_input_iter``) and times its op in ``run()``; the
worker's ``bench_forms.py`` runs it as a bench entry point, in-process here, on a small package
of that shape (relative imports, a base class in ``base.py``, an op whose kernels are put in
place by a context that ``run()`` holds around the timing, as FlagGems' ``use_gems()`` does); and
``init`` reads the form from real files of flagos-ai/FlagGems and flagos-ai/FlagGems-sglang
(``tests/data/bench_forms``: its README names each source, commit and licence)."""

from __future__ import annotations

import ast
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from bot.onboard.benchmarks import find_benchmarks, yaml_block
from bot.onboard.scan import scan_files
from bot.onboard.write import render_policy
from bot.policy.load import validate_policy
from tests.paths import ROOT

MYLIB = """\
import contextlib

ENABLED = [None]  # the ops left out while the library is in place, None while it is not


@contextlib.contextmanager
def use_mylib(exclude=()):  # the library's kernels in place of torch's while it is held
    ENABLED[0] = tuple(exclude)
    try:
        yield
    finally:
        ENABLED[0] = None


def op(x):
    return x * 3 if ENABLED[0] is not None else x * 2
"""
BASE = """\
import time

import mylib

Config = None  # made by the package's pytest_configure hook, which pytest alone runs


class Benchmark:
    device = "cuda"

    def __init__(self, op_name, torch_op, dtypes=None, is_backward=False, **kwargs):
        self.op_name, self.torch_op, self.dtypes = op_name, torch_op, dtypes
        self.gems_op = kwargs.get("gems_op")
        self.is_backward = is_backward
        self.shapes = [(1024, 1024)]
        self.to_bench_dtypes = dtypes
        self.to_bench_metrics = ["latency_base", "latency", "speedup"]

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

    def run(self):  # as FlagGems' Benchmark.run branches around its timing
        if Config.query:
            return
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            for made in self.get_input_iter(dtype):
                args, kwargs = self.unpack_to_args_kwargs(made)
                try:
                    if "latency_base" in self.to_bench_metrics:
                        self.get_latency(self.torch_op, *args, **kwargs)
                    if "latency" in self.to_bench_metrics:
                        if self.gems_op:
                            self.get_latency(self.gems_op, *args, **kwargs)
                        elif self.op_name == "zero_":
                            with mylib.use_mylib():
                                self.get_latency(self.torch_op, *args, **kwargs)
                        else:
                            with mylib.use_mylib(exclude=["zero_"]):
                                self.get_latency(self.torch_op, *args, **kwargs)
                finally:
                    time.sleep(0)


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


def test_op(monkeypatch):  # FlagGems' tests take pytest's monkeypatch
    monkeypatch.setenv("MYLIB_TEST_OP", "1")
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
    op runs inside the `with` run() holds around the timing of its torch_op, on the branch run()
    takes for it, entered for the rest of the process (run() itself, which reads what pytest's
    hooks made, is not called)."""
    entry = capture.entry_for("bench_class:benchmark/test_op.py:test_op", str(root))
    case = entry((3, 5), "float16", device="cpu", seed=1)
    [x] = case["inputs"]
    assert x.shape == (3, 5) and x.dtype == torch.float16
    assert torch.equal(case["fn"](), x * 3)  # the library's op, as run() times it
    again = entry((3, 5), "float16", device="cpu", seed=1)  # a second copy: the same state held
    assert torch.equal(again["inputs"][0], x) and torch.equal(again["fn"](), x * 3)
    mylib = sys.modules["mylib"]
    assert mylib.ENABLED == [("zero_",)]  # the branch run() takes for op "op", held on
    assert os.environ.pop("MYLIB_TEST_OP") == "1"  # its monkeypatch was pytest's


def test_a_gems_op_is_called_directly_with_shapes_as_the_class_takes_them(
    capture, root: Path
) -> None:
    entry = capture.entry_for("bench_class:benchmark/test_op.py:test_op_gems", str(root))
    case = entry((4, 6), "float32", device="cpu")
    [x] = case["inputs"]
    assert x.shape == (4, 6) and x.dtype == torch.float32  # the parametrized dtype is the case's
    assert torch.equal(case["fn"](), x * 5)


def test_flaggems_own_run_gives_the_with_it_times_its_torch_op_in(capture, tmp_path: Path) -> None:
    """FlagGems' Benchmark.run (its source, real): for op "abs" the `with
    flag_gems.use_gems(exclude=["zero_"])` of its last branch, for "zero_" the one before."""
    capture._forms()  # bench_forms.py, loaded as the worker loads it
    forms = sys.modules["_kernel_review_worker_bench_forms"]
    source = (DATA / "flaggems_base_run.py.txt").read_text()
    (tmp_path / "fg_base_run.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        import fg_base_run  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fg_base_run", None)
    bench = fg_base_run.Benchmark.__new__(fg_base_run.Benchmark)
    bench.to_bench_metrics, bench.gems_op, bench.torch_op = ["latency"], None, torch.abs
    for op, held in (("abs", "flag_gems.use_gems(exclude=['zero_'])"), ("zero_", None)):
        bench.op_name = op
        [(item, _)] = forms._contexts_around_timing(bench)
        assert ast.unparse(item.context_expr) == (held or "flag_gems.use_gems()")


def test_what_the_form_cannot_run_is_said(capture, root: Path) -> None:
    backward = capture.entry_for("bench_class:benchmark/test_op.py:test_backward", str(root))
    with pytest.raises(capture.BadBenchmark, match="times a backward pass"):
        backward((4,), "float32", device="cpu")
    none = capture.entry_for("bench_class:benchmark/test_op.py:test_no_run", str(root))
    with pytest.raises(capture.BadBenchmark, match="made no benchmark object whose run"):
        none((4,), "float32", device="cpu")


# ---------------------------------------------------------------------- init reads the form

DATA = ROOT / "tests" / "data" / "bench_forms"
FLAGGEMS = {  # the files of flagos-ai/FlagGems the test reads, at their paths there
    "benchmark/test_abs.py": "flaggems_test_abs.py.txt",
    "benchmark/base.py": "flaggems_base.py.txt",
    "benchmark/consts.py": "flaggems_consts.py.txt",
    "benchmark/core_shapes.yaml": "flaggems_core_shapes.yaml.txt",
    "benchmark/test_ones.py": "flaggems_test_ones.py.txt",
    "benchmark/test_blas_perf_parallel.py": "flaggems_test_blas_perf_parallel.py.txt",
    "src/flag_gems/ops/ones.py": "flaggems_ops_ones.py.txt",
}
L2NORM_OP = """\
import triton
import triton.language as tl


@triton.jit
def _l2norm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass


def l2norm(x):
    _l2norm_kernel[(1,)](x, x, x.numel(), BLOCK=128)
    return x
"""


def flaggems() -> dict[str, str]:
    return {path: (DATA / name).read_text() for path, name in FLAGGEMS.items()}


def test_flaggems_tests_name_their_op_and_read_dtypes_and_shapes_from_their_package() -> None:
    texts = flaggems()
    path = "benchmark/test_abs.py"
    found = find_benchmarks(path, texts[path], texts=texts)
    assert [(b.form, b.name, b.op_name) for b in found] == [
        ("bench_class", "test_abs", "abs"),
        ("bench_class", "test_abs_inplace", "abs_"),
    ]
    abs_ = found[0]
    assert abs_.spec() == "bench_class:benchmark/test_abs.py:test_abs"
    assert abs_.dtypes == ("float16", "float32", "bfloat16")  # consts.FLOAT_DTYPES
    # no key for abs in the shapes file: its class's block, UnaryPointwiseBenchmark
    assert abs_.shapes[1:3] == ((64, 64), (4096, 4096)) and abs_.dims == ("(B)", "M", "N")
    assert "shapes from benchmark/core_shapes.yaml (UnaryPointwiseBenchmark)" in abs_.notes
    assert "*.abs" in abs_.resolved_calls  # op_name: the op, though it times torch.abs


def test_names_imported_from_the_package_and_every_base_class_are_followed() -> None:
    """``from .consts import FLOAT_DTYPES``; ``class ParallelMulBenchmark(ParallelBenchmarkMixin,
    Benchmark)`` with ``from .base import Benchmark``: the second base's shapes."""
    texts = flaggems()
    path = "benchmark/test_blas_perf_parallel.py"
    [mul] = find_benchmarks(path, texts[path], texts=texts)
    assert (mul.name, mul.op_name) == ("test_perf_mul", "mul")
    assert mul.dtypes == ("float16", "float32", "bfloat16")
    assert "shapes from benchmark/core_shapes.yaml (Benchmark)" in mul.notes
    assert (64, 512, 512) in mul.shapes


def test_a_builtin_a_benchmark_calls_is_no_call_of_an_op() -> None:
    text = "def bench_range(n):\n    for i in range(n):\n        do_bench(lambda: op(i))\n"
    [found] = find_benchmarks("bench/b.py", text)
    assert "*.op" in found.resolved_calls and "*.range" not in found.resolved_calls


def test_a_shapes_file_block_merged_from_an_anchor_and_a_base_class_block() -> None:
    yaml = (DATA / "flaggems_core_shapes.yaml.txt").read_text()
    assert yaml_block(yaml, "vdot") == (((64,), (1024,), (2048,), (4096,), (65536,)), "M")
    assert yaml_block(yaml, "Benchmark") is not None and yaml_block(yaml, "nothing") is None


def test_init_matches_flaggems_ops_to_their_benchmark_and_the_policy_is_valid() -> None:
    """ones (a kernel launched on a grid) is matched to test_ones, which times torch.ones and
    names no dtypes: its class's default (Benchmark.DEFAULT_DTYPES, consts.FLOAT_DTYPES) and
    its base's shapes (the shapes file's Benchmark block)."""
    scan = scan_files(flaggems())
    [op] = scan.ops
    assert op.name == "ones" and op.benchmark is not None
    assert op.benchmark.name == "test_ones"
    policy, problems = validate_policy(render_policy(scan).text)
    assert problems == [] and policy is not None
    kernel = policy.kernel("ones")
    assert kernel.bench == "bench_class:benchmark/test_ones.py:test_ones"
    assert kernel.dtypes and set(kernel.dtypes) <= {"float16", "float32", "bfloat16"}
    assert (4096, 4096) in [s.dims for s in kernel.shapes]  # the shapes file's Benchmark block


def test_a_flaggems_sglang_test_gives_its_shapes_and_the_op_it_sets() -> None:
    path = "benchmark/test_l2norm.py"
    text = (DATA / "flaggems_sglang_test_l2norm.py.txt").read_text()
    [found] = find_benchmarks(path, text)
    assert (found.form, found.op_name, found.dtypes) == ("bench_class", "l2norm", ("bfloat16",))
    assert found.dims == ("t", "d") and found.shapes[:2] == ((1, 64), (1, 128))
    assert len(found.shapes) == 12  # SHAPES, a comprehension
    assert "flaggems_sglang.l2norm" in found.resolved_calls  # bench.set_gems(...)
    scan = scan_files({path: text, "flaggems_sglang/ops/l2norm.py": L2NORM_OP})
    [op] = scan.ops
    assert op.benchmark is not None and op.benchmark.spec() == (
        "bench_class:benchmark/test_l2norm.py:test_perf_l2norm"
    )
