"""The pieces of ``init``: reading benchmarks from source, the value evaluator, op grouping and
the policy text for what could not be read."""

from __future__ import annotations

import ast
import textwrap

import pytest

from bot.onboard.benchmarks import find_benchmarks
from bot.onboard.choose import choose
from bot.onboard.scan import module_name, scan_files
from bot.onboard.stubs import render_stubs
from bot.onboard.values import Unknown, evaluate
from bot.onboard.write import MAX_SERVED, render_policy
from bot.policy.load import validate_policy
from tests.paths import ROOT


def value(text: str, env: dict | None = None):
    return evaluate(ast.parse(text, mode="eval").body, env or {})


def test_the_evaluator_reads_sweeps_as_benchmarks_write_them() -> None:
    assert value("[2**i for i in range(12, 15)]") == [4096, 8192, 16384]
    assert value("[128 * i for i in range(2, 5)]") == [256, 384, 512]
    assert value("[(M, 4096) for M in (1, 16)]") == [(1, 4096), (16, 4096)]
    assert value("[(a, b) for a in [1, 2] for b in [3]]") == [(1, 3), (2, 3)]
    assert value("list(range(N))", {"N": 3}) == [0, 1, 2]
    assert value("-(1 << 4)") == -16


@pytest.mark.parametrize(
    "text",
    ["open('x')", "x.shape", "2 ** 1000", "list(range(10**9))", "[i for i in y]", "lambda: 1"],
)
def test_the_evaluator_refuses_what_it_cannot_read_safely(text: str) -> None:
    with pytest.raises(Unknown):
        value(text)


PERF_REPORTS = """\
import torch
import triton

SIZES = [512, 1024]
configs = []
for mode in ["fwd"]:
    configs.append(
        triton.testing.Benchmark(
            x_names=["M", "N", "K"],
            x_vals=[128 * i for i in range(2, 40)],
            line_arg="provider",
            line_vals=["cublas", "triton"],
            line_names=["cuBLAS", "Triton"],
            plot_name="matmul",
            args={"dtype": torch.float16},
        )
    )


@triton.testing.perf_report(configs)
def bench_matmul(M, N, K, provider, dtype):
    a = torch.randn((M, K), device="cuda", dtype=dtype)
    return triton.testing.do_bench(lambda: matmul(a, a))


@triton.testing.perf_report(
    triton.testing.Benchmark(["N"], SIZES, "provider", ["triton"], ["Triton"], "softmax", {})
)
def bench_softmax(N, provider):
    x = torch.randn(64, N, device="cuda", dtype=torch.bfloat16)
    return triton.testing.do_bench(lambda: softmax(x))


def helper(n):
    return n
"""


def test_perf_report_benchmarks_are_read_with_their_sweep_lines_and_dtype() -> None:
    matmul, softmax = find_benchmarks("bench/b.py", PERF_REPORTS)
    assert matmul.form == "perf_report" and matmul.name == "bench_matmul" and matmul.line == 21
    assert matmul.dims == ("M", "N", "K") and matmul.lines == ("cublas", "triton")
    assert matmul.shapes[0] == (256, 256, 256) and len(matmul.shapes) == 38
    assert matmul.dtypes == ("float16",) and matmul.takes_dtype and "matmul" in matmul.calls
    assert softmax.dims == ("N",) and softmax.shapes == ((512,), (1024,))
    assert softmax.dtypes == ("bfloat16",) and not softmax.takes_dtype
    assert softmax.spec("triton") == "perf_report:bench/b.py:bench_softmax@triton"


def test_a_do_bench_function_takes_its_shapes_from_the_registry_that_fits() -> None:
    text = """\
    from triton.testing import do_bench
    CONFIGS = [(1, 2, 3)]
    SHAPES = [(4096, 4096), (1823, 781)]

    def bench(rows, cols, dtype=None, device="cuda"):
        return do_bench(lambda: rows + cols)

    def not_a_benchmark(rows, cols):
        return rows
    """
    [found] = find_benchmarks("b.py", textwrap.dedent(text))
    assert found.form == "do_bench" and found.dims == ("rows", "cols")
    assert found.shapes == ((4096, 4096), (1823, 781)) and found.takes_dtype
    assert found.spec() == "do_bench:b.py:bench"


def test_a_file_that_does_not_parse_has_no_benchmarks() -> None:
    assert find_benchmarks("b.py", "def (:\n") == []


TRITON_OP = """\
import triton
import triton.language as tl

@triton.jit
def _softmax_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass

def _grid(n):
    return (n,)

def launch(x):
    _softmax_kernel[_grid(x.numel())](x, x.numel(), BLOCK=128)

def softmax(x):
    launch(x)
    return x

def _selftest():
    softmax(None)
"""


def test_an_op_is_named_by_the_public_function_users_call() -> None:
    scan = scan_files({"pkg/softmax.py": TRITON_OP})
    [op] = scan.ops
    assert op.name == "softmax" and op.entry == "softmax" and op.kernels == ("_softmax_kernel",)


def test_many_shapes_are_thinned_and_an_mnk_sweep_gets_its_tensors() -> None:
    bench = PERF_REPORTS.replace("def helper", "def uses(x):\n    return matmul(x)\n\ndef helper")
    kernel = TRITON_OP.replace("softmax", "matmul")
    scan = scan_files({"pkg/matmul.py": kernel, "bench/b.py": bench})
    [op] = scan.ops
    assert op.benchmark is not None and op.benchmark.name == "bench_matmul"
    written = render_policy(scan)
    policy, problems = validate_policy(written.text)
    assert problems == [] and policy is not None
    kernel_policy = policy.kernel("matmul")
    assert len(kernel_policy.shapes) == MAX_SERVED
    assert kernel_policy.shapes[0].dims == (256, 256, 256)
    assert kernel_policy.shapes[-1].dims == (4992, 4992, 4992)
    assert kernel_policy.tensors == [[0, 2], [2, 1], [0, 1]]
    assert kernel_policy.bench.endswith("@triton")
    assert [b.name for b in scan.unmatched] == ["bench_softmax"]  # calls none of the ops
    assert "bench_softmax" not in written.text  # listed in init's output, not in the file


def test_every_gap_is_listed_with_its_line() -> None:
    written = render_policy(scan_files({"pkg/softmax.py": TRITON_OP}))
    lines = written.text.splitlines()
    assert [g.key for g in written.gaps] == ["bench", "dtypes", "shapes"]
    for gap in written.gaps:
        assert lines[gap.line - 1].startswith(f'{gap.key} = "FILL-IN"  # ')
    _, problems = validate_policy(written.text, "p.toml")
    assert [p.line for p in problems] == [g.line for g in written.gaps]


def test_an_entry_point_named_like_the_op_is_its_bench_and_leaves_shapes_to_fill() -> None:
    entries = """\
    def _case(shape, dtype, device, seed, op):
        return {"fn": op}

    def softmax(shape, dtype, *, device="cuda", seed=0):
        return _case(shape, dtype, device, seed, None)
    """
    scan = scan_files(
        {"src/pkg/softmax.py": TRITON_OP, "src/pkg/bench.py": textwrap.dedent(entries)},
        src_layout=True,
    )
    [op] = scan.ops
    assert op.benchmark is not None and op.benchmark.spec() == "pkg.bench:softmax"
    assert scan.unmatched == ()  # the private helper is not an entry point
    written = render_policy(scan)
    assert 'bench = "pkg.bench:softmax"' in written.text
    assert [g.key for g in written.gaps] == ["dtypes", "shapes"]
    assert written.benches == (("softmax", "pkg.bench:softmax"),)


def test_module_names_follow_the_import_roots() -> None:
    assert module_name("src/pkg/bench.py", ("src/",)) == "pkg.bench"
    assert module_name("pkg/__init__.py") == "pkg"
    assert module_name("bench-scripts/run.py") == ""


AUTOGRAD_OP = """\
import torch
import triton
import triton.language as tl

@triton.jit
def _rms_norm_fwd(x_ptr, BLOCK: tl.constexpr):
    pass

@triton.jit
def _rms_norm_bwd(x_ptr, BLOCK: tl.constexpr):
    pass

class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _rms_norm_fwd[(1,)](x, BLOCK=128)
        return x

    @staticmethod
    def backward(ctx, dy):
        _rms_norm_bwd[(1,)](dy, BLOCK=128)
        return dy

rms_norm = _RMSNorm.apply
"""

RMS_BENCH = """\
import torch
import triton

@triton.testing.perf_report(
    triton.testing.Benchmark(["seq_len"], [256, 512], "provider", ["triton"], ["t"], "p", {})
)
def bench_rms_norm(seq_len, provider, device="cuda"):
    x = torch.randn([4, seq_len, 128], device=device)
    return triton.testing.do_bench(lambda: rms_norm(x))

def bench_linear(rows, cols):
    dtype = torch.bfloat16
    x = torch.randn([rows, cols], dtype=dtype)
    return triton.testing.do_bench(lambda: x)
"""


def test_an_autograd_function_is_one_op_named_by_its_public_alias() -> None:
    scan = scan_files({"pkg/norm.py": AUTOGRAD_OP, "bench/rms.py": RMS_BENCH})
    [op] = scan.ops
    assert op.name == "rms_norm" and op.kernels == ("_rms_norm_fwd", "_rms_norm_bwd")
    assert op.benchmark is not None and op.benchmark.name == "bench_rms_norm"


def test_dtypes_are_read_through_a_local_name_or_default_to_torchs() -> None:
    rms, linear = find_benchmarks("bench/rms.py", RMS_BENCH)
    assert rms.dtypes == ("float32",) and "torch's default, float32" in rms.notes[0]
    assert linear.dtypes == ("bfloat16",) and linear.notes == ()


def _op_file(names: list[str], *, method: bool = False) -> str:
    """A Triton file whose kernel is launched from each public function of ``names`` (from a
    ``forward`` method with ``method``)."""
    lines = [
        "import torch",
        "import triton",
        "",
        "@triton.jit",
        "def _k(x_ptr):",
        "    pass",
        "",
        "def _launch(x):",
        "    _k[(1,)](x)",
        "",
    ]
    if method:
        lines += [
            "class _Fn(torch.autograd.Function):",
            "    @staticmethod",
            "    def forward(ctx, x):",
            "        _k[(1,)](x)",
            "",
        ]
    for name in names:
        lines += [f"def {name}(x, dim=-1):", "    return _launch(x)", ""]
    return "\n".join(lines)


def test_an_op_is_a_file_named_after_its_function_or_module_never_a_method_or_a_test() -> None:
    scan = scan_files(
        {
            "pkg/ops/softmax.py": _op_file(["softmax", "softmax_backward"]),
            "pkg/ops/activations.py": _op_file(["gelu", "silu"]),
            "pkg/ops/flash/__init__.py": _op_file([], method=True),
            "pkg/ops/layer_norm_kernels.py": _op_file([], method=True),
            "tests/test_softmax.py": _op_file(["test_float32_internal"]),
            "pkg/test_utils.py": _op_file(["check"]),
        }
    )
    names = {op.name: op for op in scan.ops}
    assert sorted(names) == ["activations", "flash", "layer_norm", "softmax"]
    assert names["softmax"].entries == ("softmax", "softmax_backward")
    assert names["softmax"].signature == "x, dim=-1"
    assert names["activations"].entries == ("gelu", "silu")
    assert names["layer_norm"].paths == ("pkg/ops/layer_norm_kernels.py",)


def test_a_vendor_copy_of_an_op_is_the_same_op_spoken_for_by_the_shortest_path() -> None:
    scan = scan_files(
        {
            "pkg/runtime/backend/_npu/ops/softmax.py": _op_file(["softmax"]),
            "pkg/ops/softmax.py": _op_file(["softmax"]),
        }
    )
    [op] = scan.ops
    assert op.paths == ("pkg/ops/softmax.py", "pkg/runtime/backend/_npu/ops/softmax.py")
    assert op.module == "pkg.ops.softmax"


BENCH_CALLS = """\
import torch
import triton
from pkg.ops.softmax import softmax as fused

SHAPES = [(64, 64), (128, 256)]

def softmax(x):
    return torch.softmax(x, -1)

def bench_torch(n):
    x = torch.randn(n, n)
    return triton.testing.do_bench(lambda: torch.softmax(x, -1))

def bench_local(n):
    x = torch.randn(n, n)
    return triton.testing.do_bench(lambda: softmax(x))

def bench_pkg(rows, cols):
    x = torch.randn(rows, cols)
    return triton.testing.do_bench(lambda: fused(x))
"""


def test_a_benchmark_belongs_to_an_op_only_through_an_import_of_its_package() -> None:
    scan = scan_files(
        {"pkg/ops/softmax.py": _op_file(["softmax"]), "bench/b.py": BENCH_CALLS},
    )
    [op] = scan.ops
    assert op.benchmark is not None and op.benchmark.name == "bench_pkg"
    assert {b.name for b in scan.unmatched} == {"bench_torch", "bench_local"}


def test_call_sites_and_last_changes_rank_the_ops() -> None:
    users = "from pkg.ops.a import a\nfrom pkg.ops.b import b\n\ndef f(x):\n    return b(a(b(x)))\n"
    scan = scan_files(
        {"pkg/ops/a.py": _op_file(["a"]), "pkg/ops/b.py": _op_file(["b"]), "pkg/use.py": users},
        changed={"pkg/ops/a.py": 200, "pkg/ops/b.py": 100},
    )
    facts = {op.name: (op.call_sites, op.changed) for op in scan.ops}
    assert facts == {"a": (1, 200), "b": (2, 100)}
    assert [op.name for op in choose(scan.ops).kept] == ["b", "a"]
    capped = choose(scan.ops, max_kernels=1)
    assert [op.name for op in capped.kept] == ["b"]
    [left] = capped.left_out
    assert left.line() == (
        "a (1 kernel, pkg/ops/a.py): past the 1 best ranked (1 call sites); --only names it"
    )
    only = choose(scan.ops, only=["pkg/ops/a.py"])
    assert [op.name for op in only.kept] == ["a"]
    assert only.left_out[0].why == "no file under --only pkg/ops/a.py"
    # the ops --only names are written, however many: no cap past them
    both = choose(scan.ops, only=["pkg/ops"], max_kernels=1)
    assert [op.name for op in both.kept] == ["b", "a"] and not both.left_out


def test_where_some_op_has_a_benchmark_the_ops_without_one_are_left_out() -> None:
    scan = scan_files(
        {
            "pkg/ops/softmax.py": _op_file(["softmax"]),
            "pkg/ops/gelu.py": _op_file(["gelu"]),
            "bench/b.py": BENCH_CALLS,
        }
    )
    choice = choose(scan.ops)
    assert [op.name for op in choice.kept] == ["softmax"]
    assert [x.line() for x in choice.left_out] == [
        "gelu (1 kernel, pkg/ops/gelu.py): no benchmark calls gelu()"
    ]
    stubs = render_stubs([x.op for x in choice.left_out])
    assert "from pkg.ops.gelu import gelu as op" in stubs
    assert "def gelu(shape: tuple[int, ...], dtype: str, *, device" in stubs
    assert "build the inputs of gelu(x, dim=-1)" in stubs
    ast.parse(stubs)
    written = render_policy(scan, choice.kept)
    policy, problems = validate_policy(written.text)
    assert problems == [] and policy is not None and policy.kernel("softmax") is not None


NORM_MODULE = """\
import torch
import triton

@triton.jit
def _norm_kernel(x_ptr):
    pass

class _NormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _norm_kernel[(1,)](x)
        return x

def l2norm(x):
    return _NormFn.apply(x)

class L2Norm(torch.nn.Module):
    def forward(self, x):
        return l2norm(x)
"""

NORM_BENCH = """\
import torch
import triton
import torch.nn.functional as F

from pkg.modules import L2Norm
from pkg.modules.l2norm import l2norm


@triton.testing.perf_report(
    triton.testing.Benchmark(["T"], [128, 256], "provider", ["naive", "fused", "fused_bwd"], ["a", "b", "c"], "p", {})
)
def bench_alias(T, provider):
    x = torch.randn(T, 64, dtype=torch.bfloat16)
    if provider.startswith("naive"):
        norm = F.normalize
        return triton.testing.do_bench(lambda: norm(x))
    if provider.startswith("fused"):
        norm = l2norm
        return triton.testing.do_bench(lambda: norm(x))


def bench_module(T):
    x = torch.randn(T, 64)
    layer = L2Norm()
    return triton.testing.do_bench(lambda: layer(x))
"""


def test_a_benchmark_using_an_op_through_a_local_name_or_its_module_class_belongs_to_it() -> None:
    scan = scan_files({"pkg/modules/l2norm.py": NORM_MODULE, "bench/norm.py": NORM_BENCH})
    [op] = scan.ops
    assert op.name == "l2norm" and op.entries == ("l2norm", "L2Norm")  # not named after the class
    assert op.benchmark is not None and op.benchmark.name == "bench_alias"
    # the line whose branch uses the op, read from a startswith test
    written = render_policy(scan)
    assert 'bench = "perf_report:bench/norm.py:bench_alias@fused"' in written.text
    without = NORM_BENCH.replace("norm = l2norm", "norm = F.normalize")
    [other] = scan_files({"pkg/modules/l2norm.py": NORM_MODULE, "bench/norm.py": without}).ops
    assert other.benchmark is not None and other.benchmark.name == "bench_module"  # the class


def test_ops_in_files_of_the_same_name_are_named_after_their_own_functions() -> None:
    scan = scan_files(
        {
            "pkg/ops/gla/chunk.py": _op_file(["chunk_gla", "chunk_gla_fwd"]),
            "pkg/ops/comba/chunk.py": _op_file(["chunk_comba", "chunk_comba_bwd"]),
        }
    )
    assert sorted(op.name for op in scan.ops) == ["chunk_comba", "chunk_gla"]  # not one "chunk"


def test_a_file_named_for_what_it_teaches_gives_way_to_its_folder() -> None:
    # tritonbench keeps its layer norm's kernels in operators/layer_norm/tutorial.py
    scan = scan_files(
        {
            "bench/operators/layer_norm/tutorial.py": _op_file([], method=True),
            "bench/operators/softmax/example.py": _op_file([], method=True),
        }
    )
    assert sorted(op.name for op in scan.ops) == ["layer_norm", "softmax"]


def test_a_file_left_unparsed_for_benchmarks_holds_none() -> None:
    """``find_benchmarks`` parses only a file holding what one of the forms needs: on every
    Python file of the test data and the benchmark scripts, the files it skips have no benchmark
    when read whole, and the others give what a whole reading gives."""
    from bot.analysis.text import parse_python_or_none
    from bot.onboard.benchmarks import _benchmarks_in, _Files, may_hold_benchmark

    paths = [
        p
        for folder in (ROOT / "tests" / "data", ROOT / "bench", ROOT / "kernels_fixture")
        for p in sorted(folder.rglob("*.py*"))
        if p.name.endswith((".py", ".py.txt"))
    ]
    skipped = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        tree = parse_python_or_none(text)
        if tree is None:
            continue
        whole = _benchmarks_in(path.name, tree, "m", _Files({}))
        assert find_benchmarks(path.name, text, module="m") == whole, path
        if not may_hold_benchmark(text):
            skipped += 1
            assert whole == [], path
    assert skipped > 20 and len(paths) - skipped > 20  # both kinds were seen
