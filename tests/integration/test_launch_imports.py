"""What Triton imports at a kernel's first launch is imported ahead
(``driver_utils.import_launch_modules``): after it, a launch's specialization of a tensor argument (real Triton, its CUDA backend,
on the CPU) imports no module of Triton's any more."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import ROOT

PROBE = """
import sys
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend
from triton.runtime import jit
from checks.worker import driver_utils

def launch_imported():
    before = {m for m in sys.modules if m.startswith("triton")}
    backend = CUDABackend(GPUTarget("cuda", 90, 32))
    jit.native_specialize_impl(backend, torch.empty(4), False, True, True)
    return sorted({m for m in sys.modules if m.startswith("triton")} - before)

if sys.argv[1] == "ahead":
    print("ahead:", ",".join(driver_utils.import_launch_modules()))
print("launch:", ",".join(launch_imported()))
"""


def _probe(mode: str) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return dict(
        line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in out.splitlines()
    )


def test_a_first_launch_imports_triton_modules_unless_imported_ahead() -> None:
    cold = _probe("cold")
    assert "triton.experimental.gluon" in cold["launch"].split(",")  # what the rule is about
    ahead = _probe("ahead")
    assert ahead["ahead"] == "triton.experimental.gluon,triton.tools.tensor_descriptor"
    assert ahead["launch"] == ""  # nothing left for a first launch to import
