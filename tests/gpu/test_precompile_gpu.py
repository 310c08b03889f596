"""Compiling ahead on a real GPU (skipped without one): what the helpers compile off the GPU is
what a process on the GPU looks up, and a sweep says what it compiled ahead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checks.sweep.gpus import gpu_target_name
from checks.sweep.models import SweepResult
from checks.sweep.precompile import Precompile, SideJob
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from tests.paths import DATA, ROOT

pytestmark = pytest.mark.gpu

KERNELS = DATA / "kernels"

FIRST_CALLS = """
import json, sys
import torch
from checks.compiler import triton_compat as compat
from toykern import bench
with compat.observe_compiles_and_autotuning() as (compiles, tunes):
    for shape in ((512, 512, 512), (200, 200, 200)):
        bench.matmul(shape, "float16", device="cuda")["fn"]()
    torch.cuda.synchronize()
print(json.dumps({"hits": sum(c.cache_hit for c in compiles),
                  "compiled": sum(not c.cache_hit for c in compiles), "tuned": len(tunes)}))
"""


def _first_calls(cache: Path) -> dict[str, int]:
    env = {
        **os.environ,
        "TRITON_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(KERNELS), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_what_is_compiled_ahead_is_what_the_gpu_process_finds(tmp_path: Path) -> None:
    """The autotuned matmul at two specializations (four variants): with the cache compiled
    ahead for this GPU's target, a fresh process on the GPU autotunes both keys and compiles
    nothing; with an empty cache it compiles all four."""
    target = gpu_target_name(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0")
    assert target is not None, "NVML or the KFD topology should name this GPU's target"
    cases = tuple(
        Case(kernel="matmul", bench="toykern.bench:matmul", dims=d, dtype="float16", tolerance=0.03)
        for d in ((512, 512, 512), (200, 200, 200))
    )
    cache = tmp_path / "ahead"
    job = SideJob("head", "head", KERNELS, sys.executable, (), cache, target, cases)
    (line,) = Precompile([job], processes=2, timeout_s=300).start().finish(wait=True)
    assert "4 Triton variants" in line and "(4 compiled, 0 already in the cache)" in line, line
    # the launchers and the driver's utilities too, built with the system's C compiler
    assert "launchers left" not in line, line
    assert list(cache.rglob("__triton_launcher*.so")) and list(cache.rglob("*_utils*.so"))
    warm = _first_calls(cache)
    assert warm["tuned"] == 2 and warm["compiled"] == 0 and warm["hits"] == 4, warm
    cold = _first_calls(tmp_path / "empty")
    assert cold["compiled"] == 4, cold


def _matmul_sweep(cases: int, work_dir: Path) -> SweepResult:
    """A quick sweep of the autotuned matmul at 512^3, ``cases`` times, the same code both sides."""
    case = Case(
        kernel="matmul", bench="toykern.bench:matmul", dims=(512, 512, 512), dtype="float16",
        tolerance=0.03,
    )  # fmt: skip
    quick = ProtocolConfig(block_ms=2.5, min_rounds=6, max_rounds=12, crossover=True)
    return run_sweep(
        [case] * cases,
        base_root=KERNELS,
        head_root=KERNELS,
        base_rev="b" * 40,
        head_rev="b" * 40,
        options=SweepOptions(device="cuda", protocol=quick, max_gpu_seconds=120),
        work_dir=work_dir,
    )


def test_a_sweep_compiles_ahead_and_says_so(tmp_path: Path) -> None:
    result = _matmul_sweep(1, tmp_path)
    assert result.cases[0].status == "ok", result.cases[0].message
    ahead = [n for n in result.notes if "compiled ahead" in n or "compiling ahead" in n]
    assert len(ahead) == 2 and all("Triton variant" in n or "stopped" in n for n in ahead), ahead


def test_a_check_says_how_much_of_its_first_call_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each check's answer counts the time its first call spent in Triton's compile and in
    loading kernels: a part of the first call, and the second case of the same kernel (the
    same variants, now loaded) spends next to nothing compiling. Every pass (fresh workers)
    checks each case again; the first pass's checks are the ones that compile."""
    from checks.sweep import workers
    from checks.worker import contract

    answers: list[tuple[int, str, dict[str, float]]] = []  # (pass, worker, its steps)
    call = workers.WorkerClient.call

    def traced(self: workers.WorkerClient, request: Any, *, timeout: float) -> Any:
        out = call(self, request, timeout=timeout)
        if isinstance(out, contract.CheckReply):
            answers.append((self.spec.execution, self.spec.name, out.steps_s))
        return out

    monkeypatch.setattr(workers.WorkerClient, "call", traced)
    result = _matmul_sweep(2, tmp_path)
    assert [c.status for c in result.cases] == ["ok", "ok"], [c.message for c in result.cases]
    passes = sorted({e for e, _, _ in answers})
    assert len(passes) >= 2 and passes == list(range(len(passes))), answers
    # in each pass, one pair checks each case (the second during the first one's recheck)
    assert all(sum(e == p for e, _, _ in answers) == 4 for p in passes), answers
    for _, _, steps in answers:
        for part in ("first_call_compile", "first_call_load"):
            assert 0 <= steps[part] <= steps["first_call"] + 1e-3, steps
    second = [steps for e, _, steps in answers if e == 0][2:]
    assert all(s["first_call_compile"] < 0.05 for s in second), second
