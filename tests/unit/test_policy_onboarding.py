"""The policy keys a real repository needs: benchmarks named by file, python_path, [setup], and
the placeholders ``init`` leaves, each refused with its line and what to write."""

from __future__ import annotations

import pytest

from bot.policy.load import validate_policy

HEAD = """\
[deployment]
kind = "long-lived"
"""


def kernel(**keys: str) -> str:
    values = {
        "name": '"softmax"',
        "bench": '"pkg.bench:softmax"',
        "paths": '["pkg/softmax.py"]',
        "dtypes": '["float16"]',
        "shapes": "[[1823, 781]]",
        **keys,
    }
    return "\n[[kernels]]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())


def problems(text: str) -> list[str]:
    _, found = validate_policy(text, "p.toml")
    return [str(p) for p in found]


@pytest.mark.parametrize(
    "bench",
    [
        "pkg.bench:softmax",
        "perf_report:benchmarks/bench_softmax.py:benchmark",
        "perf_report:benchmarks/bench_softmax.py:benchmark@triton",
        "do_bench:bench.py:time_softmax",
        "pytest_benchmark:tests/test_perf.py:test_softmax@triton",
        "asv:asv_bench/benchmarks/ops.py:Softmax.time_softmax",
        "asv:asv_bench/benchmarks/ops.py:Softmax.time_softmax@C",
        "timer:bench/timer.py:time_softmax",
    ],
)
def test_every_bench_form_is_accepted(bench: str) -> None:
    assert problems(HEAD + kernel(bench=f'"{bench}"', baseline=f'"{bench}"')) == []


@pytest.mark.parametrize(
    ("bench", "message"),
    [
        ("perf_report:bench.py", "is not a perf_report benchmark; write 'perf_report:"),
        ("perf_report:bench.txt:b", "'bench.txt' is not a Python file"),
        ("do_bench:/abs/bench.py:b", "'/abs/bench.py' is absolute"),
        ("do_bench:../up/bench.py:b", "leaves the repository with '..'"),
        ("do_bench:bench.py:b@triton", "'@triton' picks a perf_report line"),
        ("timer:bench.py:b@triton", "a timer function has none"),
        ("asv:bench.py:time_softmax", "an asv benchmark is named 'Class.time_method'"),
        ("pytest_benchmark:t.py:A.test_b", "any other form by its function's name alone"),
        ("asv:bench.py", "is not a asv benchmark; write 'asv:path/to/bench.py:Class.time_method'"),
        ("perf_reprot:bench.py:b", "did you mean 'perf_report'?"),
        ("softmax", "is not a bench entry point; write 'module.path:function'"),
    ],
)
def test_a_wrong_bench_says_what_is_wrong_at_its_line(bench: str, message: str) -> None:
    [problem] = problems(HEAD + kernel(bench=f'"{bench}"'))
    assert problem.startswith("p.toml:6:9: kernels[0].bench: ") and message in problem


def test_python_path_and_setup_are_read_and_checked() -> None:
    text = 'python_path = ["src"]\n' + HEAD + '[setup]\ncommand = "pip install -e ."\n' + kernel()
    policy, found = validate_policy(text)
    assert found == [] and policy is not None
    assert policy.python_path == ["src"] and policy.setup is not None
    assert policy.setup.command == "pip install -e ." and policy.setup.timeout_s == 1800
    [outside] = problems('python_path = ["../lib"]\n' + HEAD + kernel())
    assert outside.startswith("p.toml:1:16: python_path[0]: '../lib' leaves the repository")
    [empty] = problems(HEAD + '[setup]\ncommand = ""\ntimeout_s = 0\n' + kernel())[:1]
    assert "setup.command" in empty


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("shapes", "fill in the shapes this op serves"),
        ("dtypes", "fill in the dtypes this op runs in"),
        ("bench", "fill in the bench entry point"),
        ("paths", "fill in the files of this op"),
    ],
)
def test_a_placeholder_is_refused_at_its_line_with_what_to_fill_in(key: str, message: str) -> None:
    text = HEAD + kernel(**{key: '"FILL-IN"  # init could not tell'})
    [problem] = problems(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith(f"{key} ="))
    assert problem.startswith(f"p.toml:{line}:") and f"kernels[0].{key}: {message}" in problem


def test_every_placeholder_of_a_kernel_is_reported_at_once() -> None:
    text = HEAD + kernel(dtypes='"FILL-IN"', shapes='["FILL-IN"]')
    found = problems(text)
    assert len(found) == 2 and "kernels[0].dtypes" in found[0] and "kernels[0].shapes" in found[1]
