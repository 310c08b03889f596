"""Benchmark forms beyond ``triton.testing``: read from real repositories' files by ``init``
(``tests/data/bench_forms``, sources and licences in its README), and run by the worker's
``bench_forms.py`` on small files of each form, the callable each would time captured."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from bot.onboard.benchmarks import find_benchmarks
from bot.onboard.scan import scan_files
from bot.policy.load import validate_policy
from tests.paths import ROOT

DATA = ROOT / "tests" / "data" / "bench_forms"


def real(name: str) -> list:
    return find_benchmarks(f"bench/{name}.py", (DATA / f"{name}.py.txt").read_text())


def test_asv_benchmarks_of_two_repositories_give_shapes_dtypes_and_values() -> None:
    one_d, two_d = real("asv_bottleneck_reduce")
    assert one_d.spec() == "asv:bench/asv_bottleneck_reduce.py:Time1DReductions.time_nanmin"
    assert one_d.shapes == ((1000,), (100000,), (10000000,))
    assert one_d.dtypes == ("int32", "int64", "float32", "float64") and one_d.takes_dtype
    assert two_d.shapes == ((1000, 1000),) and two_d.lines == ("C", "F")
    assert "bottleneck.nanmin" in one_d.resolved_calls  # `import bottleneck as bn`
    dwt, idwt = real("asv_pywt_dwt")  # params set on a base class
    assert dwt.spec() == "asv:bench/asv_pywt_dwt.py:DwtTimeSuite.time_dwt"
    assert dwt.dims == ("n",) and dwt.shapes[:3] == ((16,), (100,), (101,))
    assert dwt.lines == ("haar", "db4", "sym8") and "pywt.idwt" in idwt.resolved_calls
    assert any("could not read" in note for note in dwt.notes)  # Modes.modes: read at run time


def test_pytest_benchmark_tests_of_two_repositories_are_found_with_their_parameters() -> None:
    fft, total = real("pytest_benchmark_pybench_array")
    assert fft.spec("numpy") == (
        "pytest_benchmark:bench/pytest_benchmark_pybench_array.py:test_FFT@numpy"
    )
    assert fft.shapes == ((1000, 1000), (10000, 10000), (20000, 20000))
    assert fft.lines == ("numpy", "cupy") and total.name == "test_Sum"
    tests = real("pytest_benchmark_snecs")
    assert [t.name for t in tests] == [
        "test_create_empty_entities_esper",
        "test_create_empty_entities_snecs",
    ]
    assert "snecs.ecs.new_entity" in tests[1].resolved_calls  # called in the timed closure


OP = """\
import triton

@triton.jit
def _k(x_ptr):
    pass

def _launch(x):
    _k[(1,)](x)

def nanmin(x):
    return _launch(x)
"""


def test_init_names_an_asv_benchmark_of_the_op_it_calls() -> None:
    bench = (DATA / "asv_bottleneck_reduce.py.txt").read_text()
    scan = scan_files({"bottleneck/nanmin.py": OP, "asv_bench/benchmarks/reduce.py": bench})
    [op] = scan.ops
    assert op.benchmark is not None and op.benchmark.name == "Time1DReductions.time_nanmin"
    from bot.onboard.write import render_policy

    policy, problems = validate_policy(render_policy(scan).text)
    assert problems == [] and policy is not None
    kernel = policy.kernel("nanmin")
    assert kernel.bench == "asv:asv_bench/benchmarks/reduce.py:Time1DReductions.time_nanmin"
    assert kernel.dtypes == ["int32", "int64", "float32", "float64"]


FORMS = """\
import pytest
import torch
from torch.utils.benchmark import Timer


def run(benchmark, fn, x):  # a helper the test hands the fixture to
    return benchmark.pedantic(fn, args=(x,), rounds=5)


@pytest.mark.parametrize("provider", ["torch", "mine"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(4, 8), (16, 32)])
def test_scale(benchmark, shape, dtype, provider):
    x = torch.randn(shape, dtype=dtype)
    fn = (lambda t: t * 2) if provider == "torch" else (lambda t: t + t)
    run(benchmark, fn, x)


@pytest.mark.parametrize("rows, cols", [(2, 3), (5, 7)])
def test_plain(benchmark, rows, cols, device="cpu"):
    x = torch.ones(rows, cols, device=device)
    benchmark(torch.sum, x)


def test_fixture(benchmark, world):
    benchmark(lambda: world)


class Base:
    params = [[16, 32], ["float32", "float64"], ["sum", "max"]]
    param_names = ["n", "dtype", "how"]

    def setup(self, n, dtype, how):
        self.x = torch.arange(n, dtype=getattr(torch, dtype))


class Reduce(Base):
    def time_reduce(self, n, dtype, how):
        return getattr(self.x, how)()


def timed(n, dtype):
    x = torch.full((n,), 3.0, dtype=dtype)
    return Timer(stmt="y = x * k", setup="k = 2", globals={"x": x}).blocked_autorange()
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "forms.py").write_text(textwrap.dedent(FORMS))
    yield tmp_path
    sys.modules.pop("_kernel_review_bench_bench_forms_py", None)  # loaded once per process


def test_a_pytest_benchmark_test_is_called_with_the_case_and_its_timed_call_captured(
    capture, root: Path
) -> None:
    entry = capture.entry_for("pytest_benchmark:bench/forms.py:test_scale@mine", str(root))
    case = entry((3, 5), "float16", device="cpu", seed=1)
    [x] = case["inputs"]
    assert x.shape == (3, 5) and x.dtype == torch.float16  # the case's shape and dtype
    assert torch.equal(case["fn"](), x + x)  # the line picked by @mine
    again = entry((3, 5), "float16", device="cpu", seed=1)["inputs"][0]
    assert torch.equal(again, x)  # the seed is set before the test builds its inputs
    plain = capture.entry_for("pytest_benchmark:bench/forms.py:test_plain", str(root))
    case = plain((4, 6), "float32", device="cpu")
    assert case["fn"]().item() == 24.0 and case["inputs"][0].shape == (4, 6)
    with pytest.raises(capture.BadBenchmark, match="give shapes of 2 dimensions"):
        plain((1, 2, 3), "float32")
    fixture = capture.entry_for("pytest_benchmark:bench/forms.py:test_fixture", str(root))
    with pytest.raises(
        capture.BadBenchmark, match=r"needs the fixture.s. world, which only pytest"
    ):
        fixture((4,), "float32")


def test_an_asv_benchmark_is_set_up_and_its_method_is_the_case(capture, root: Path) -> None:
    entry = capture.entry_for("asv:bench/forms.py:Reduce.time_reduce@max", str(root))
    case = entry((8,), "float64", device="cpu")
    assert case["fn"]().item() == 7.0
    assert (
        capture.entry_for("asv:bench/forms.py:Reduce.time_reduce", str(root))((8,), "float32")[
            "fn"
        ]().item()
        == 28.0
    )  # no value named: each parameter's first
    with pytest.raises(capture.NotFound, match=r"has no 'Reduce\.time_gone'"):
        capture.entry_for("asv:bench/forms.py:Reduce.time_gone", str(root))


def test_a_timer_statement_is_the_case_with_its_setup_run_once(capture, root: Path) -> None:
    entry = capture.entry_for("timer:bench/forms.py:timed", str(root))
    case = entry((5,), "float32", device="cpu")
    case["fn"]()
    [x] = case["inputs"]
    assert x.shape == (5,) and x.dtype == torch.float32
    import torch.utils.benchmark as tbench

    assert tbench.Timer.__name__ == "Timer" and tbench.Timer.__module__.startswith("torch")


RUN_INPUT = """\
import torch
import triton
from utils import RunInput, run_benchmarks


def bench_speed_norm(input: RunInput):
    x = torch.randn(input.x, input.extra_config["hidden"], dtype=input.extra_config["dtype"])
    if input.kernel_provider == "fused":
        return triton.testing.do_bench(lambda: norm(x))
    return triton.testing.do_bench(lambda: torch.nn.functional.rms_norm(x, x.shape[-1:]))


def helper(input):
    return input


if __name__ == "__main__":
    args = parse_args()
    common = {
        "x_values": [2**i for i in range(10, 13)],
        "kernel_providers": ["torch", "fused"],
        "extra_benchmark_configs": [{"hidden": 4096, "dtype": torch.bfloat16}],
        "overwrite": args.overwrite,
    }
    run_benchmarks(bench_test_fn=bench_speed_norm, kernel_operation_modes=["full"], **common)
"""


def test_a_function_of_one_input_object_is_read_from_the_call_that_hands_it_over() -> None:
    [found] = find_benchmarks("benchmark/scripts/benchmark_norm.py", RUN_INPUT)
    assert found.form == "run_input" and found.name == "bench_speed_norm"  # not `helper`
    assert found.dims == ("x_values",) and found.shapes == ((1024,), (2048,), (4096,))
    assert found.lines == ("torch", "fused")  # compared in the function, unlike the modes
    assert found.dtypes == ("bfloat16",) and found.takes_dtype
    from bot.onboard.scan import Op
    from bot.onboard.write import bench_for

    op = Op("norm", ("triton",), ("_k",), ("pkg/norm.py",), "norm", benchmark=found)
    assert bench_for(op) == "run_input:benchmark/scripts/benchmark_norm.py:bench_speed_norm@fused"
