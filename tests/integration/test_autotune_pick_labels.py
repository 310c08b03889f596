"""A worker's autotuner picks and the first-call check's, recorded in a real process under
Triton's interpreter: both name a config alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import ROOT

_BOTH_LABELS = """
import json
import torch
import triton
import triton.language as tl
from checks.compiler import triton_compat as compat
from checks.sweep.pair_runner import _offers, _picks
from checks.worker import autotune_picks, contract

CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)]


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=lambda fn, quantiles: [fn() or 1.0] * 3)
@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)


x = torch.ones(100)
with compat.observe_compiles_and_autotuning() as (_, tunes), autotune_picks.recording() as picks:
    double_kernel[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, 100)
# the worker's answer carries its picks as the contract's (``main.py``'s ``_picks``)
reply = contract.CheckReply(
    has_reference=False, atol=None, rtol=None,
    configs_picked=tuple(contract.from_json(contract.Pick, p) for p in picks),
    correct=True, message="", digest=(), steps_s={},
)
print(json.dumps({"probe": [f"{t.function}: {t.config}" for t in tunes], "sweep": _picks(reply)}))
"""


def test_the_first_call_check_and_the_sweep_name_a_pick_alike() -> None:
    """The review sets the config the sweep timed beside the ones fresh processes kept, which
    needs both checks to write one config the same way."""
    done = subprocess.run(
        [sys.executable, "-c", _BOTH_LABELS],
        cwd=ROOT, env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["probe"] == list(got["sweep"])
    assert got["sweep"][0].startswith("double_kernel: BLOCK=")
    assert "num_warps=" in got["sweep"][0] and "num_stages=" in got["sweep"][0]
