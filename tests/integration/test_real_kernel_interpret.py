"""bench/real_kernels/interpret_entries.py on a stand-in entry module (no real package needed).

The stand-in kernel is autotuned and loops with a builtin ``range`` whose variable it converts
with ``.to()``, as fla's kernels do: the interpreter runs it only with the script's adaptations.
A second entry returns a wrong answer, and the script must say so in its exit status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytest.importorskip("triton")
pytest.importorskip("numpy")

SCRIPT = ROOT / "bench" / "real_kernels" / "interpret_entries.py"

ENTRY = """
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32) for w in (1, 2)],
    key=["N"],
)
@triton.jit
def _row_sum(x, y, N, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(tl.cdiv(N, BLOCK)):
        start = i.to(tl.int64) * BLOCK
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x + row * N + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y + row, tl.sum(acc))


def row_sum(shape, dtype, *, device="cuda", seed=0):
    rows, n = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn((rows, n), generator=gen, device=device).to(getattr(torch, dtype))
    y = torch.empty(rows, device=device, dtype=torch.float32)

    def fn():
        _row_sum[(rows,)](x, y, n, ROWS=rows)
        return y

    return {"fn": fn, "reference": lambda: x.float().sum(-1), "atol": 1e-3, "rtol": 1e-3}


def wrong(shape, dtype, *, device="cuda", seed=0):
    case = row_sum(shape, dtype, device=device, seed=seed)
    return {**case, "reference": lambda: case["reference"]() + 1.0}
"""

CATALOGUE = """
[package]
import = "standin"
requirement = "standin==1.0"
repo = "example/standin"
ref = "v1.0"
licence = "MIT"

[[kernels]]
id = "standin_row_sum"
entry = "standin:row_sum"
source = "standin.py"
kinds = ["autotuned"]
configs = 4
dtype = "float32"
shapes = [[8, 100], [1024, 4096]]

[[kernels]]
id = "standin_wrong"
entry = "standin:wrong"
source = "standin.py"
kinds = ["plain"]
configs = 0
dtype = "float32"
shapes = [[8, 100], [1024, 4096]]
"""


def _run(tmp_path: Path, *args: str, interpret: bool = True) -> subprocess.CompletedProcess[str]:
    entries = tmp_path / "entries"
    entries.mkdir(exist_ok=True)
    (entries / "standin.py").write_text(ENTRY, encoding="utf-8")
    catalogue = tmp_path / "standin.toml"
    catalogue.write_text(CATALOGUE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    cmd = [sys.executable, str(SCRIPT), "--catalogue", str(catalogue), "--entries", str(entries)]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )


def test_an_autotuned_kernel_with_a_builtin_range_matches_under_either_config(
    tmp_path: Path,
) -> None:
    for config in ("first", "last"):
        done = _run(tmp_path, "--only", "standin_row_sum", "--config", config)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "match    standin_row_sum (8, 67) float32" in done.stdout
        assert "every selected kernel matched" in done.stdout


def test_a_wrong_answer_fails_the_run_and_a_shape_can_be_given(tmp_path: Path) -> None:
    done = _run(tmp_path, "--shape", "standin_wrong=3x5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "match    standin_row_sum (8, 67)" in done.stdout
    assert (
        "DIFFERS  standin_wrong (3, 5) float32: max |diff| 1, 3/3 out of tolerance" in done.stdout
    )
    assert "1 of the selected kernels did not match" in done.stdout


def test_usage_errors_say_what_to_write(tmp_path: Path) -> None:
    done = _run(tmp_path, interpret=False)
    assert done.returncode == 2 and "set TRITON_INTERPRET=1" in done.stderr
    done = _run(tmp_path, "--shape", "standin_wrong=3xfive")
    assert done.returncode == 2 and "write ID=AxBxC" in done.stderr
    done = _run(tmp_path, "--only", "standin_nothing")
    assert done.returncode == 2 and "standin_nothing" in done.stderr
