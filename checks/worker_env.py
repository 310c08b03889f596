"""What a worker may see and how long it may take: the scrubbed environment, the per-command
timeouts, and the failure a command ends in."""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict, Field

# Failures after which the process (or its CUDA context) cannot be trusted any more.
RESTART_KINDS = frozenset({"crashed", "timeout", "cuda_error", "oom", "out_of_resources"})

KEEP_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "LD_LIBRARY_PATH",
        "LIBRARY_PATH",
        "CPATH",
        "CC",
        "CXX",
        "SYSTEMROOT",
        "COMSPEC",
    }
)
KEEP_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "NVCC_",
    "HIP_",
    "HSA_",
    "ROCM_",
    "ROCR_",
    "HCC_",
    "AMD_",
    "TRITON_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
)
SECRET_RE = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE|AUTH|COOKIE|SESSION|^GITHUB_|^ACTIONS_|"
    r"^RUNNER_|^GH_|^AWS_|^AZURE_|^GOOGLE_|^GCP_|^HF_",
    re.IGNORECASE,
)


def scrubbed_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment reduced to what a kernel needs: paths, locale, GPU selection,
    toolchain locations. Nothing that can write to GitHub or a cloud, no token of any kind."""
    src = dict(os.environ if base is None else base)
    out = {}
    for k, v in src.items():
        if (k in KEEP_NAMES or k.startswith(KEEP_PREFIXES)) and not SECRET_RE.search(k):
            out[k] = v
    return out


class Timeouts(BaseModel):
    """Seconds each command may take before the worker is killed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    start_s: float = Field(default=120.0, gt=0)
    prepare_s: float = Field(default=600.0, gt=0, description="entry call, compile, autotune")
    check_s: float = Field(default=600.0, gt=0, description="first call: compile, autotune")
    configure_s: float = Field(default=120.0, gt=0)
    block_s: float = Field(default=60.0, gt=0)
    finish_s: float = Field(default=120.0, gt=0)
    warmup_s: float = Field(default=60.0, gt=0)
    ceilings_s: float = Field(default=300.0, gt=0)
    env_s: float = Field(default=120.0, gt=0)


class WorkerFailure(Exception):
    def __init__(self, kind: str, message: str, *, side: str = "", log_tail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.side = side
        self.log_tail = log_tail

    @property
    def needs_restart(self) -> bool:
        return self.kind in RESTART_KINDS
