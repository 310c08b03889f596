"""tritonbench operators (``@register_benchmark`` methods of a ``BenchmarkOperator`` subclass,
inputs from ``get_input_iter``): read by ``init`` from the operator files of tritonbench and of
TorchBench (``tests/data/bench_forms``, sources and licences in its README), and run by the
worker's ``bench_forms.py``, the operator's own module imported by its dotted name."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from bot.onboard.benchmarks import find_benchmarks
from bot.onboard.scan import scan_files
from bot.onboard.write import render_policy
from bot.policy.load import validate_policy
from tests.paths import ROOT

DATA = ROOT / "tests" / "data" / "bench_forms"


def text(name: str) -> str:
    return (DATA / f"{name}.py.txt").read_text()


def test_the_register_benchmark_methods_of_two_repositories_are_found_with_their_sweeps() -> None:
    add, torch_add = find_benchmarks(
        "ops/vector_add/operator.py", text("tritonbench_vector_add_operator")
    )
    assert add.spec() == "tritonbench:ops/vector_add/operator.py:Operator.triton_add"
    assert torch_add.name == "Operator.torch_add"
    assert add.dims == ("size",) and add.shapes[0] == (4096,) and add.shapes[-1] == (2**27,)
    assert len(add.shapes) == 16  # get_input_iter loops over self.get_x_vals()
    assert add.dtypes == ("float32",) and add.takes_dtype  # no DEFAULT_PRECISION
    assert "triton_add_kernel" in add.calls
    softmax = find_benchmarks("ops/softmax/operator.py", text("tritonbench_softmax_operator"))
    assert [b.name for b in softmax] == [
        "Operator.triton_softmax",
        "Operator.naive_softmax",
        "Operator.quack",
    ]
    assert softmax[0].dims == ("M", "N")  # ``for M, N in shapes`` with M = 4096 read
    assert softmax[0].shapes[:2] == ((4096, 256), (4096, 384)) and len(softmax[0].shapes) == 98
    torchbench = find_benchmarks(
        "ops/vector_add/operator.py", text("torchbench_vector_add_operator")
    )
    assert [b.name for b in torchbench] == ["Operator.triton_add", "Operator.torch_add"]
    assert torchbench[0].shapes == add.shapes
    norm = find_benchmarks("ops/layer_norm/operator.py", text("torchbench_layer_norm_operator"))
    assert norm[0].dims == ("N",) and norm[0].shapes[:2] == ((1024,), (1536,))


def test_init_names_the_operator_folder_and_its_triton_method_and_the_policy_is_valid() -> None:
    for prefix, repo in (
        ("tritonbench", "tritonbench/operators/vector_add"),
        ("torchbench", "torchbenchmark/operators/vector_add"),
    ):
        scan = scan_files(
            {
                f"{repo}/__init__.py": "from .operator import Operator\n",
                f"{repo}/operator.py": text(f"{prefix}_vector_add_operator"),
                f"{repo}/kernels.py": text(f"{prefix}_vector_add_kernels"),
            }
        )
        [op] = scan.ops
        assert op.name == "vector_add"  # the folder: operator.py says nothing of the op
        assert op.benchmark is not None and op.benchmark.name == "Operator.triton_add"
        policy, problems = validate_policy(render_policy(scan).text)
        assert problems == [] and policy is not None, problems
        kernel = policy.kernel("vector_add")
        assert kernel.bench == f"tritonbench:{repo}/operator.py:Operator.triton_add"
        assert kernel.dtypes == ["float32"] and kernel.shapes[0].dims == (4096,)


STANDIN = ROOT / "tests" / "data" / "tritonbench_standin"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the kernel runs on the CPU
    shutil.copytree(STANDIN, tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "tritonbench" / "operators" / "vector_add"
    folder.mkdir()
    (folder / "__init__.py").write_text("from .operator import Operator\n")
    (folder / "operator.py").write_text(text("tritonbench_vector_add_operator"))
    (folder / "kernels.py").write_text(text("tritonbench_vector_add_kernels"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m == "tritonbench" or m.startswith("tritonbench.")]:
        del sys.modules[name]


def test_an_operator_method_is_called_with_the_input_of_the_case_shape(capture, root: Path) -> None:
    spec = "tritonbench:tritonbench/operators/vector_add/operator.py:Operator.triton_add"
    entry = capture.entry_for(spec, str(root))
    case = entry((8192,), "float32", device="cpu", seed=1)
    out = case["fn"]()  # the Triton kernel, under the interpreter
    x, y = [t for t in case["inputs"] if t is not out]  # what the function closes over
    assert x.shape == (8192,) and x.dtype == torch.float32
    assert torch.equal(out, x + y)
    baseline = capture.entry_for(spec.replace("triton_add", "torch_add"), str(root))
    half = baseline((4096,), "float16", device="cpu")
    assert half["fn"]().dtype == torch.float16  # the operator's dtype is the case's
    ragged = entry((4097,), "float32", device="cpu")  # a shape it does not yield
    out = ragged["fn"]()
    x, y = [t for t in ragged["inputs"] if t is not out]  # both made anew in that shape
    assert x.shape == y.shape == (4097,) and torch.equal(out, x + y)
    with pytest.raises(capture.BadBenchmark, match=r"yields no input of shape \[64, 64\]"):
        entry((64, 64), "float32", device="cpu")  # its tensors have one dimension
