"""The typed helper for bench entry points: checks what the worker will check, imports nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.bench_entry import bench_case


def test_a_case_carries_only_what_was_given() -> None:
    def run() -> int:
        return 1

    assert bench_case(run) == {"fn": run, "bytes_moved": 0, "flops": 0}
    case = bench_case(run, bytes_moved=12, flops=4, reference=run, atol=1e-3, rtol=0, inputs=(1,))
    assert case == {
        "fn": run,
        "bytes_moved": 12,
        "flops": 4,
        "reference": run,
        "atol": 1e-3,
        "rtol": 0.0,
        "inputs": [1],
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fn": 3}, "fn must be a callable"),
        ({"reference": "x"}, "reference must be a callable"),
        ({"bytes_moved": -1}, "bytes_moved must be an int >= 0"),
        ({"flops": 2.5}, "flops must be an int >= 0"),
        ({"atol": -1.0}, "atol must be a number >= 0"),
        ({"rtol": True}, "rtol must be a number >= 0"),
    ],
)
def test_a_wrong_value_is_refused_where_it_is_made(kwargs: dict, message: str) -> None:
    args = {"fn": lambda: None, **kwargs}
    with pytest.raises((TypeError, ValueError), match=message):
        bench_case(args.pop("fn"), **args)


def test_importing_the_helper_loads_neither_torch_nor_triton() -> None:
    code = "import sys, bot.bench_entry; print(sorted({'torch', 'triton', 'pydantic'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
