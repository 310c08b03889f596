"""Which failure a kernel's exception is. Runs inside a worker; standard library only, and the
exception classes are recognised by name so torch and triton need not be imported."""

from __future__ import annotations

import linecache
import os
import re

CUDA_MARKERS = (
    "cuda error",
    "illegal memory access",
    "triton error [cuda]",
    "device-side assert",
    "unspecified launch failure",
    "misaligned address",
    "hiperror",
    "hip error",
    "illegal instruction",
    "an illegal",
)


# what torch says when code asks it for a GPU it does not have
NO_GPU_MARKERS = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
)
# what a package says on import when its own device detection finds no GPU (FlagGems'
# ``runtime/error.py``: ``import flag_gems`` raises it on a machine without one)
NO_DEVICE_MARKERS = ("No device were detected",)
LIBDEVICE_RE = re.compile(r"\blibdevice\.(\w+)\s*\(")


def interpreter_reason(exc: BaseException) -> str | None:
    """Why the code cannot run under Triton's CPU interpreter (``TRITON_INTERPRET=1``), where
    that is what ``exc`` says: a ``libdevice`` function the interpreter has no implementation
    of (named from the kernel's failing line), a GPU driver asked for, a GPU asked of torch
    (a benchmark that picks its own device), or a package's own search for a device on import
    finding none; None otherwise."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    seen: list[BaseException] = []
    at: BaseException | None = exc
    while at is not None and at not in seen and len(seen) < 8:
        seen.append(at)
        at = at.__cause__ or at.__context__
    for one in seen:
        if "active drivers" in str(one):
            return (
                "it asks Triton for a GPU driver (triton.runtime.driver.active), and the CPU "
                "interpreter has none"
            )
        if any(marker in str(one) for marker in NO_GPU_MARKERS):
            return f"it puts its tensors on a GPU, and there is none here ({one})"
        if any(marker in str(one) for marker in NO_DEVICE_MARKERS):
            return f"it looks for a GPU and finds none here ({' '.join(str(one).split())})"
    if not any("InterpreterError" in {c.__name__ for c in type(e).__mro__} for e in seen):
        return None
    for one in seen:
        tb = one.__traceback__
        while tb is not None:
            line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            found = LIBDEVICE_RE.search(line)
            if found:
                return f"libdevice.{found[1]} has no implementation in Triton's CPU interpreter"
            tb = tb.tb_next
    return None


def classify(exc: BaseException) -> str:
    """A failure kind the parent maps to a case status (and to a restart where needed)."""
    if interpreter_reason(exc):
        return "interpreter"
    names = {c.__name__ for c in type(exc).__mro__}
    text = str(exc).lower()
    if "OutOfResources" in names:
        return "out_of_resources"
    if isinstance(exc, MemoryError) or "OutOfMemoryError" in names or "out of memory" in text:
        return "oom"
    if "AcceleratorError" in names or any(m in text for m in CUDA_MARKERS):
        return "cuda_error"
    if names & {"CompilationError", "PTXASError", "CompileTimeAssertionFailure"}:
        return "compile_error"
    return "error"
