"""The worker's capture of a repository's own benchmarks: ``do_bench`` swapped for a capture, the
benchmarked callable returned instead of timed, the timers put back afterwards."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import triton.testing

BENCH = """\
import triton
from triton.testing import do_bench

CALLS = []


class Tensor:
    def __init__(self, n):
        self.n = n

    def numel(self):
        return self.n

    def element_size(self):
        return 4


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["M", "N"],
        x_vals=[128, 256],
        line_arg="provider",
        line_vals=["ref", "fast"],
        line_names=["Ref", "Fast"],
        plot_name="p",
        args={"scale": 3},
    )
)
def sweep(M, N, provider, scale, dtype=None, device="cuda"):
    x = Tensor(M * N)
    try:
        if provider == "ref":
            ms = triton.testing.do_bench(lambda: ("ref", x.n, scale, dtype, device))
        else:
            ms = do_bench(lambda: ("fast", x.n, scale, dtype, device))
    except Exception:
        ms = float("nan")
    CALLS.append("after timing")
    return ms


def plain(rows, cols, dtype="float32"):
    x = Tensor(rows * cols)
    return do_bench(lambda: ("plain", x.n, dtype))


def no_timing(rows):
    return 0.0


sweep.run(print_data=True)  # a script that runs its sweep at import, as many do
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.py").write_text(textwrap.dedent(BENCH))
    return tmp_path


def test_a_perf_report_line_becomes_the_case_callable(capture, root: Path) -> None:
    before = (triton.testing.do_bench, triton.testing.do_bench_cudagraph)
    entry = capture.entry_for("perf_report:bench/b.py:sweep@fast", str(root))
    case = entry((128, 64), "float16", device="cpu", seed=3)
    assert case["fn"]()[:3] == ("fast", 128 * 64, 3)
    assert case["fn"]()[4] == "cpu" and case["bytes_moved"] == 0 and case["flops"] == 0
    assert [t.numel() for t in case["inputs"]] == [128 * 64]
    assert (triton.testing.do_bench, triton.testing.do_bench_cudagraph) == before
    module = sys.modules[next(n for n in sys.modules if n.startswith("_kernel_review_bench_"))]
    assert module.do_bench is before[0]  # the module's own binding is put back too
    assert module.CALLS == []  # not run at import, and stopped at the timing when captured
    ref = capture.entry_for("perf_report:bench/b.py:sweep@ref", str(root))
    assert ref((512,), "float32")["fn"]()[:2] == ("ref", 512 * 512)  # one value for every x


def test_the_line_must_be_named_when_there_are_several(capture, root: Path) -> None:
    entry = capture.entry_for("perf_report:bench/b.py:sweep", str(root))
    with pytest.raises(capture.BadBenchmark, match=r"compares 2 lines .*sweep@ref"):
        entry((128, 128), "float32")
    wrong = capture.entry_for("perf_report:bench/b.py:sweep@slow", str(root))
    with pytest.raises(capture.BadBenchmark, match="with line 'slow'; it sweeps M, N"):
        wrong((128, 128), "float32")
    with pytest.raises(
        capture.BadBenchmark, match=r"takes a 3-dimensional shape with line .ref.; it sweeps M, N"
    ):
        capture.entry_for("perf_report:bench/b.py:sweep@ref", str(root))((1, 2, 3), "float32")
    with pytest.raises(capture.BadBenchmark, match=r"not a triton\.testing\.perf_report benchmark"):
        capture.entry_for("perf_report:bench/b.py:plain", str(root))


def test_a_do_bench_function_gets_the_dimensions_in_order(capture, root: Path) -> None:
    entry = capture.entry_for("do_bench:bench/b.py:plain", str(root))
    assert entry((3, 5), "bfloat16", device="cpu")["fn"]() == ("plain", 15, "bfloat16")
    with pytest.raises(
        capture.BadBenchmark, match=r"takes 2 dimension argument\(s\) \(rows, cols\)"
    ):
        entry((3,), "float32")
    with pytest.raises(capture.BadBenchmark, match="returned without calling"):
        capture.entry_for("do_bench:bench/b.py:no_timing", str(root))((3,), "float32")


def test_a_benchmark_missing_from_a_checkout_is_not_found(capture, root: Path) -> None:
    with pytest.raises(capture.NotFound, match=r"no file bench/none\.py"):
        capture.entry_for("do_bench:bench/none.py:plain", str(root))
    with pytest.raises(capture.NotFound, match="outside the checkout"):
        capture.entry_for("do_bench:../b.py:plain", str(root / "bench"))
    with pytest.raises(capture.NotFound, match="has no 'gone'"):
        capture.entry_for("do_bench:bench/b.py:gone", str(root))
    assert capture.is_file_spec("perf_report:a.py:b") and not capture.is_file_spec("a.b:c")
