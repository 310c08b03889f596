"""Which failure a kernel's exception is. Runs inside a worker; standard library only, and the
exception classes are recognised by name so torch and triton need not be imported."""

from __future__ import annotations

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


def classify(exc: BaseException) -> str:
    """A failure kind the parent maps to a case status (and to a restart where needed)."""
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
