"""``kernel-review init`` on small generated repositories: the policy it writes validates (or
names each line still to fill in), and the benchmarks it names run as bench entry points in a
real worker, under the Triton interpreter on CPU tensors."""

from __future__ import annotations

import contextlib
import shutil
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot import gitutil
from bot.cli import main
from bot.onboard.scan import SETUP_BUILD, read_repository
from bot.policy.load import POLICY_FILE, load_policy, tree_policy, validate_policy
from checks.checkout import checkout_for, prepare
from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec

KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def _launch(x, y, out, alpha):
    n = out.numel()
    scale_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, alpha, BLOCK=256)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    out = torch.empty_like(x)
    _launch(x, y, out, alpha)
    return out
"""

ROWSUM = """\
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    start = x_ptr + tl.program_id(0) * n_cols
    total = tl.sum(tl.load(start + cols, mask=cols < n_cols, other=0.0), axis=0)
    tl.store(out_ptr + tl.program_id(0), total)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
"""

PERF_REPORT = """\
import torch
import triton

from minilib.scale_add import scale_add


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["size"],
        x_vals=[2**i for i in range(10, 13)],
        line_arg="provider",
        line_vals=["torch", "triton"],
        line_names=["Torch", "Triton"],
        ylabel="GB/s",
        plot_name="scale-add",
        args={"dtype": torch.float32},
    )
)
def bench_scale_add(size, provider, dtype, device="cuda"):
    x = torch.rand(size, device=device, dtype=dtype)
    y = torch.rand(size, device=device, dtype=dtype)
    if provider == "torch":
        ms = triton.testing.do_bench(lambda: 2.0 * x + y)
    else:
        ms = triton.testing.do_bench(lambda: scale_add(x, y))
    return 3 * x.numel() * x.element_size() * 1e-6 / ms


if __name__ == "__main__":
    bench_scale_add.run(print_data=True)
"""

DO_BENCH = """\
import torch
from triton.testing import do_bench

from minilib.row_sum import row_sum

SHAPES = [(4, 100), (16, 300)]


def time_row_sum(rows, cols, device="cuda"):
    x = torch.randn(rows, cols, device=device, dtype=torch.float32)
    return do_bench(lambda: row_sum(x))


if __name__ == "__main__":
    for rows, cols in SHAPES:
        print(rows, cols, time_row_sum(rows, cols))
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@contextlib.contextmanager
def cpu_worker(repo: Path, work: Path, python_path: Sequence[str]) -> Iterator[WorkerClient]:
    """A started head worker on ``repo`` under the Triton interpreter (``TRITON_INTERPRET=1`` in
    its environment), closed after."""
    client = WorkerClient(
        WorkerSpec(
            side="head",
            root=repo,
            device="cpu",
            work_dir=work,
            timeouts=Timeouts(start_s=60, prepare_s=120, check_s=120),
            python_path=tuple(python_path),
        )
    )
    client.start()
    try:
        yield client
    finally:
        client.close()


def check_every_kernel(client: WorkerClient, kernels: Sequence[Any], *, last: bool = False) -> None:
    """Each kernel's bench, checked, prepared and rechecked on one of its shapes."""
    for kernel in kernels:
        dims = kernel.shapes[-1 if last else 0].dims
        checked = client.check([kernel.bench], dims, kernel.dtypes[0], seed=1)
        assert checked.correct, (kernel.name, checked)
        prepared = client.prepare([kernel.bench], dims, kernel.dtypes[0], seed=0)
        assert prepared.entry == kernel.bench and prepared.est_us > 0
        assert prepared.footprint_bytes > 0  # the captured callable's tensors
        assert client.finish().correct


@pytest.fixture
def minirepo(tmp_path: Path) -> Path:
    """A src/ layout with two Triton ops, a perf_report benchmark and a do_bench script."""
    return write(
        tmp_path / "minirepo",
        {
            "src/minilib/__init__.py": "",
            "src/minilib/scale_add.py": KERNEL,
            "src/minilib/row_sum.py": ROWSUM,
            "benchmarks/bench_scale_add.py": PERF_REPORT,
            "benchmarks/time_row_sum.py": DO_BENCH,
        },
    )


def test_init_writes_a_valid_policy_for_a_repository_with_benchmarks(
    minirepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--repo", str(minirepo)]) == 0
    out = capsys.readouterr().out
    assert "2 ops" in out and "the policy is valid" in out
    source = tree_policy(minirepo)
    policy, problems = validate_policy(source.text, source.display)
    assert problems == [] and policy is not None
    assert policy.python_path == ["src"]
    scale_add = policy.kernel("scale_add")
    assert scale_add.bench == "perf_report:benchmarks/bench_scale_add.py:bench_scale_add@triton"
    assert scale_add.paths == ["src/minilib/scale_add.py"]
    assert scale_add.dtypes == ["float32"]
    assert [s.dims for s in scale_add.shapes] == [(1024,), (2048,), (4096,)]
    row_sum = policy.kernel("row_sum")
    assert row_sum.bench == "do_bench:benchmarks/time_row_sum.py:time_row_sum"
    assert [s.dims for s in row_sum.shapes] == [(4, 100), (16, 300)]
    assert main(["policy", "check", str(minirepo)]) == 0


def test_the_entry_points_init_names_run_in_a_worker_under_the_interpreter(
    minirepo: Path, tmp_path: Path
) -> None:
    assert main(["init", "--repo", str(minirepo)]) == 0
    source = tree_policy(minirepo)
    policy, _ = validate_policy(source.text, source.display)
    assert policy is not None
    with cpu_worker(minirepo, tmp_path / "work", policy.python_path) as client:
        check_every_kernel(client, policy.kernels)


ASV = """\
import torch

from minilib.scale_add import scale_add


class ScaleAdd:
    params = [[1000, 4096], ["float32", "float16"]]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.x = torch.rand(n, dtype=getattr(torch, dtype))
        self.y = torch.rand(n, dtype=getattr(torch, dtype))

    def time_scale_add(self, n, dtype):
        scale_add(self.x, self.y)
"""

PYTEST_BENCHMARK = """\
import pytest
import torch

from minilib.row_sum import row_sum


@pytest.mark.parametrize("shape", [(4, 100), (16, 300)])
def test_row_sum(benchmark, shape):
    x = torch.randn(shape, dtype=torch.float32)
    benchmark(row_sum, x)
"""


def test_asv_and_pytest_benchmark_forms_init_names_run_in_a_worker(tmp_path: Path) -> None:
    repo = write(
        tmp_path / "forms",
        {
            "src/minilib/__init__.py": "",
            "src/minilib/scale_add.py": KERNEL,
            "src/minilib/row_sum.py": ROWSUM,
            "asv_bench/benchmarks/ops.py": ASV,
            "benchmarks/test_perf.py": PYTEST_BENCHMARK,
        },
    )
    assert main(["init", "--repo", str(repo)]) == 0
    policy = load_policy(repo).policy
    benches = {k.name: k.bench for k in policy.kernels}
    assert benches == {
        "scale_add": "asv:asv_bench/benchmarks/ops.py:ScaleAdd.time_scale_add",
        "row_sum": "pytest_benchmark:benchmarks/test_perf.py:test_row_sum",
    }
    assert policy.kernel("scale_add").dtypes == ["float32", "float16"]
    assert [s.dims for s in policy.kernel("row_sum").shapes] == [(4, 100), (16, 300)]
    with cpu_worker(repo, tmp_path / "work", policy.python_path) as client:
        check_every_kernel(client, policy.kernels, last=True)


RUN_INPUT_UTILS = """\
from dataclasses import dataclass
from typing import Any


@dataclass
class RunInput:
    x: int
    provider: str
    mode: str = "forward"
    extra_config: dict[str, Any] | None = None


def run_benchmarks(bench_test_fn, x_values, providers, modes, extra_configs, overwrite=False):
    for config in extra_configs:
        for mode in modes:
            for provider in providers:
                for x in x_values:
                    print(x, provider, bench_test_fn(RunInput(x, provider, mode, config)))
"""

RUN_INPUT = """\
from __future__ import annotations

import argparse

import torch
import triton
from utils import RunInput, run_benchmarks

from minilib.scale_add import scale_add

device = "cuda" if torch.cuda.is_available() else "cpu"


def bench_speed_scale_add(input: RunInput) -> float:
    cfg = input.extra_config
    x = torch.rand(cfg["rows"], input.x, dtype=cfg["dtype"], device=device)
    y = torch.rand(cfg["rows"], input.x, dtype=cfg["dtype"], device=device)
    fn = (lambda: scale_add(x, y)) if input.provider == "mine" else (lambda: 2.0 * x + y)
    return triton.testing.do_bench(fn)


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    configs = {
        "x_values": [2**i for i in range(8, 11)],
        "providers": ["mine", "torch"],
        "extra_configs": [{"rows": 4, "dtype": torch.float32}],
        "overwrite": args.overwrite,
    }
    run_benchmarks(bench_test_fn=bench_speed_scale_add, modes=["forward"], **configs)
"""


def test_a_function_of_one_input_object_is_recognised_from_the_scripts_call_and_runs(
    tmp_path: Path,
) -> None:
    repo = write(
        tmp_path / "runinput",
        {
            "src/minilib/__init__.py": "",
            "src/minilib/scale_add.py": KERNEL,
            "benchmark/scripts/utils.py": RUN_INPUT_UTILS,
            "benchmark/scripts/benchmark_scale_add.py": RUN_INPUT,
        },
    )
    assert main(["init", "--repo", str(repo)]) == 0
    kernel = load_policy(repo).policy.kernel("scale_add")
    assert kernel.bench == (
        "run_input:benchmark/scripts/benchmark_scale_add.py:bench_speed_scale_add@mine"
    )
    assert kernel.dtypes == ["float32"]
    assert [s.dims for s in kernel.shapes] == [(256,), (512,), (1024,)]
    with cpu_worker(repo, tmp_path / "work", ("src",)) as client:
        checked = client.check([kernel.bench], (300,), "float32", seed=1)
        assert checked.correct, checked
        prepared = client.prepare([kernel.bench], (300,), "float32", seed=0)
        assert prepared.footprint_bytes == 2 * 4 * 300 * 4  # x and y: 4 rows of 300 floats
        assert client.finish().correct


def test_an_op_no_benchmark_calls_gets_a_stub_and_a_policy_that_passes_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "nobench", {"ops/scale_add.py": KERNEL})
    assert main(["init", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    text = (repo / POLICY_FILE).read_text()
    # the bench is a stub, written beside, that names the op and raises until filled in; the
    # dtypes and shapes it is written with are marked as guesses and listed in the output
    assert 'bench = "kernel_review_bench:scale_add"  # a stub calling scale_add()' in text
    assert 'dtypes = ["float16"]  # a guess: the dtypes scale_add runs in' in text
    assert "shapes = [[4096, 4096]]  # a guess: the shapes scale_add serves" in text
    assert "check: the ops whose bench is a stub (kernel_review_bench.py)" in out
    assert "the policy is valid" in out
    stub = (repo / "kernel_review_bench.py").read_text()
    assert "from ops.scale_add import scale_add as op" in stub
    assert "build the inputs of scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float=2.0)" in (
        stub
    )
    assert main(["policy", "check", str(repo)]) == 0


def test_init_replaces_no_file_but_the_one_out_names(
    minirepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = minirepo / POLICY_FILE
    policy.parent.mkdir(parents=True)
    policy.write_text("# mine\n")
    assert main(["init", "--repo", str(minirepo)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and f"pass --out {policy} to replace it" in err
    assert policy.read_text() == "# mine\n"
    assert main(["init", "--repo", str(minirepo), "--out", str(policy)]) == 0
    assert policy.read_text().startswith("# kernel-review policy")
    policy.unlink()
    (minirepo / "pyproject.toml").write_text("[tool.kernel-review]\ntolerance = 0.05\n")
    assert main(["init", "--repo", str(minirepo)]) == 2
    err = capsys.readouterr().err
    assert "already has the policy ([tool.kernel-review])" in err and f"--out {policy}" in err
    assert not policy.exists()
    assert main(["init", "--repo", str(minirepo), "--out", str(policy)]) == 0
    other = minirepo / "elsewhere.toml"
    assert main(["init", "--repo", str(minirepo), "--out", str(other)]) == 0
    assert other.read_text() == policy.read_text()


def test_init_says_so_when_there_is_nothing_to_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "plain", {"pkg/util.py": "def f():\n    return 1\n"})
    assert main(["init", "--repo", str(repo)]) == 2
    assert "found no Triton, CUDA or HIP kernels" in capsys.readouterr().err
    assert not (repo / POLICY_FILE).exists()
    assert main(["init", "--repo", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_a_rewrite_is_one_op_and_a_cpp_extension_gets_a_build_step(tmp_path: Path) -> None:
    cuda = """\
    __global__ void scale_add_kernel(const float* x, const float* y, float* out, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = 2.0f * x[i] + y[i];
    }
    void scale_add_launch(const float* x, const float* y, float* out, int n) {
      scale_add_kernel<<<(n + 255) / 256, 256>>>(x, y, out, n);
    }
    """
    setup_py = """\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(name="ops", ext_modules=[CUDAExtension("ops._C", ["csrc/scale_add.cu"])],
          cmdclass={"build_ext": BuildExtension})
    """
    repo = write(
        tmp_path / "rewrite",
        {"ops/scale_add.py": KERNEL, "csrc/scale_add.cu": cuda, "setup.py": setup_py},
    )
    scan = read_repository(repo)
    [op] = scan.ops
    assert op.name == "scale_add" and op.languages == ("triton", "cuda")
    assert op.paths == ("csrc/scale_add.cu", "ops/scale_add.py")
    assert scan.setup == SETUP_BUILD and scan.python_path == ()


def test_the_build_step_init_writes_builds_base_and_skips_a_head_without_setup_py(
    tmp_path: Path,
) -> None:
    """The rewrite's head deletes setup.py (torchmd-net #373 did): the same command must build
    the base checkout and let the head one through, both run as the sweep runs them."""
    setup_py = """\
    # stands in for torch.utils.cpp_extension's CUDAExtension build: writes the built module
    import pathlib, sys
    assert sys.argv[1:] == ["build_ext", "--inplace"], sys.argv
    pathlib.Path("ops").mkdir(exist_ok=True)
    pathlib.Path("ops/_C.py").write_text("BUILT = True\\n")
    """
    files = {"ops/__init__.py": "", "ops/scale_add.py": KERNEL, "setup.py": setup_py}
    repo = gitutil.init_repo(write(tmp_path / "repo", files))
    (repo / ".gitignore").write_text("ops/_C.py\n")
    gitutil.commit_all(repo, "base: a C++ extension built by setup.py")
    assert main(["init", "--repo", str(repo)]) == 0
    written = repo / POLICY_FILE
    filled = {"bench": '"ops.bench:scale_add"', "dtypes": '["float32"]', "shapes": "[[4096]]"}
    written.write_text(
        "\n".join(
            f"{line.split(' =')[0]} = {filled[line.split(' =')[0]]}" if "FILL-IN" in line else line
            for line in written.read_text().splitlines()
        )
    )
    policy = load_policy(repo).policy
    assert policy.setup is not None and policy.setup.command == SETUP_BUILD
    gitutil.commit_all(repo, "the policy")
    (repo / "setup.py").unlink()
    gitutil.commit_all(repo, "head: the extension rewritten in Triton, setup.py deleted")
    checkout = checkout_for(policy)
    base = gitutil.add_worktree(repo, tmp_path / "base", "HEAD~1")
    head = gitutil.add_worktree(repo, tmp_path / "head", "HEAD")
    for side in (base, head):
        note = prepare(side, checkout, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache")
        assert note.startswith(f"setup ({side.name}): `{SETUP_BUILD}` took")
    assert (base / "ops" / "_C.py").read_text() == "BUILT = True\n"
    assert not (head / "ops" / "_C.py").exists()


def _many_ops(count: int) -> dict[str, str]:
    """A src/ layout with ``count`` Triton ops (each a file, one kernel launched from a method
    and a public alias), a vendor copy of the first, tests, and perf_report benchmarks for the
    first half; ops are called from a model file, op ``i`` from ``i`` call sites."""
    files = {"src/biglib/__init__.py": "", "src/biglib/ops/__init__.py": ""}
    model = ["import torch"]
    for i in range(count):
        op = KERNEL.replace("scale_add", f"op{i:02d}")
        files[f"src/biglib/ops/op{i:02d}.py"] = op
        files[f"tests/test_op{i:02d}.py"] = op.replace(f"def op{i:02d}(", "def test_float32(")
        model.append(f"from biglib.ops.op{i:02d} import op{i:02d}")
        model += [f"y{i}_{j} = op{i:02d}" + "(x, x)" for j in range(i)]
        if i < count // 2:
            files[f"benchmarks/bench_op{i:02d}.py"] = PERF_REPORT.replace(
                "minilib.scale_add", f"biglib.ops.op{i:02d}"
            ).replace("scale_add", f"op{i:02d}")
    files["src/biglib/runtime/backend/_npu/ops/op00.py"] = files["src/biglib/ops/op00.py"]
    files["src/biglib/model.py"] = "\n".join(model) + "\n"
    return files


def test_init_on_a_large_repository_writes_the_best_ranked_ops_and_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "big", _many_ops(100))
    assert main(["init", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "wrote " in out and "40 of 100 ops" in out and "the policy is valid" in out
    text = (repo / POLICY_FILE).read_text()
    assert len(text.encode()) < 32 * 1024
    policy, problems = validate_policy(text)
    assert problems == [] and policy is not None
    # the 40 most called ops with a benchmark (ops 10..49 of the 50 benchmarked), best first; a
    # benchmark's call counts too
    assert [k.name for k in policy.kernels] == [f"op{i:02d}" for i in range(49, 9, -1)]
    assert all(k.bench.startswith("perf_report:benchmarks/") for k in policy.kernels)
    left = [line for line in out.splitlines() if line.startswith("  op")]
    left = [line for line in left if ": " in line]
    assert len(left) == 60  # one short line per op left out
    assert (
        "  op09 (1 kernel, src/biglib/ops/op09.py): past the 40 best ranked (10 call sites); "
        "--only names it"
    ) in out
    assert "  op99 (1 kernel, src/biglib/ops/op99.py): no benchmark calls op99(); stub " in out
    assert "test_float32" not in text and "test_float32" not in out
    stubs = (repo / "kernel_review_bench.py").read_text()
    # stubs for the 40 best ranked of the ops without a benchmark
    assert "def op99(" in stubs and "def op60(" in stubs and "def op59(" not in stubs
    assert main(["policy", "check", str(repo)]) == 0


def test_init_only_keeps_the_ops_under_a_path_and_says_when_none_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "big", _many_ops(4))
    only = ["--only", "src/biglib/ops/op01.py", "--only", "src/biglib/runtime"]
    assert main(["init", "--repo", str(repo), *only]) == 0
    assert not (repo / "kernel_review_bench.py").exists()  # every op left out has a benchmark
    policy = load_policy(repo).policy
    assert [k.name for k in policy.kernels] == ["op01", "op00"]
    assert policy.kernel("op00").paths == [
        "src/biglib/ops/op00.py",
        "src/biglib/runtime/backend/_npu/ops/op00.py",
    ]
    capsys.readouterr()
    assert (
        main(["init", "--repo", str(repo), "--out", str(repo / POLICY_FILE), "--only", "docs"]) == 2
    )
    assert "none of the 4 ops found has a file under --only docs" in capsys.readouterr().err


def test_init_on_tritonbench_operators_names_their_triton_methods_which_run_in_a_worker(
    tmp_path: Path,
) -> None:
    """Two operators of tritonbench (their files as the repository has them, its
    ``utils/triton_op.py`` a stand-in): ``init`` names each operator's Triton method, the policy
    passes its check, and the first runs in a worker under the interpreter."""
    ops = "tritonbench/operators"
    repo = tmp_path / "tb"
    shutil.copytree(Path(__file__).parents[1] / "data" / "tritonbench_standin", repo)
    for op in ("vector_add", "softmax"):
        write(repo, {f"{ops}/{op}/__init__.py": "from .operator import Operator\n"})
        write(repo, {f"{ops}/{op}/operator.py": bench_form(f"tritonbench_{op}_operator")})
    write(repo, {f"{ops}/vector_add/kernels.py": bench_form("tritonbench_vector_add_kernels")})
    assert main(["init", "--repo", str(repo)]) == 0
    policy = load_policy(repo).policy
    assert {k.name: k.bench for k in policy.kernels} == {
        "vector_add": f"tritonbench:{ops}/vector_add/operator.py:Operator.triton_add",
        "softmax": f"tritonbench:{ops}/softmax/operator.py:Operator.triton_softmax",
    }
    with cpu_worker(repo, tmp_path / "work", policy.python_path) as client:
        check_every_kernel(client, [policy.kernel("vector_add")])  # softmax: minutes interpreted


def bench_form(name: str) -> str:
    return (Path(__file__).parents[1] / "data" / "bench_forms" / f"{name}.py.txt").read_text()


def test_files_read_in_several_processes_give_what_one_process_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``init`` reads a large repository's files in forked processes: the same ops, benchmarks
    and matches as in one, on this project's fixture, benchmark scripts and test data (the
    threshold lowered to their number)."""
    from bot.onboard import scan

    root = Path(__file__).parents[2]
    texts = {
        str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
        for folder in ("kernels_fixture", "bench", "tests/data/bench_forms", "tests/data/kernels")
        for p in sorted((root / folder).rglob("*.py*"))
        if p.name.endswith((".py", ".py.txt"))
    }
    texts = {k.removesuffix(".txt"): v for k, v in texts.items()}
    monkeypatch.setattr(scan, "PARALLEL_FROM", len(texts) // 2)
    alone = scan.scan_files(texts, jobs=1)
    assert alone.ops and alone.benchmarks  # the fixture's kernels and bench/'s benchmarks
    assert scan.scan_files(texts, jobs=2) == alone
