"""The measured processes' memory cap, as a user meets it: what sets it, and what an allocation
that ran into it says.

Every process that runs a checkout's code (the sweep's workers, the compiler report's and the
first-call probe's helpers) runs with its heap capped (``checks.procs.launch``): by the policy's
``[limits] worker_memory_gib`` in a sweep, else by ``KERNEL_REVIEW_WORKER_MEMORY_GIB``, else a
quarter of the machine's memory (at least 4 GiB). An allocation past it fails inside the
measured code (``MemoryError``, or torch's ``DefaultCPUAllocator: can't allocate memory``);
:func:`memory_cap_hint` names the cap and how to raise it. Standard library only.
"""

from __future__ import annotations

import os

MEMORY_ENV = "KERNEL_REVIEW_WORKER_MEMORY_GIB"
OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory")


def memory_from_env() -> int | None:
    """The cap ``KERNEL_REVIEW_WORKER_MEMORY_GIB`` sets, in bytes; None where unset. A value
    that is not a positive integer is refused with what to write."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{MEMORY_ENV}={text!r}: give a whole number of GiB, 1 or more")
    return int(text) * 2**30


def is_out_of_memory(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    text = str(exc).lower()
    return (
        isinstance(exc, MemoryError)
        or "OutOfMemoryError" in names
        or any(m in text for m in OOM_MARKERS)
    )


def current_cap() -> int | None:
    """This process's heap cap in bytes (``RLIMIT_DATA``); None where it has none."""
    try:
        import resource
    except ImportError:  # not on this system
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    return None if soft == resource.RLIM_INFINITY else soft


def memory_cap_hint(exc: BaseException, cap: int | None = None) -> str:
    """What to say after an out-of-memory ``exc`` in a capped process (``cap``: this process's
    cap where None): the cap, its settings and how to raise them; "" for any other error, or
    where there is no cap (the machine itself ran out)."""
    cap = current_cap() if cap is None else cap
    if not cap or not is_out_of_memory(exc):
        return ""
    return (
        f"hit the worker memory cap of {cap / 2**30:.1f} GiB (default: a quarter of this "
        "machine's memory); raise it with [limits] worker_memory_gib in the policy for a sweep, "
        f"or {MEMORY_ENV}=N (GiB) in the environment for every command"
    )
