"""CPU stand-ins for kernels, base side: every entry point here is correct and quick.

Entry-point contract: ``entry(shape, dtype, *, device, seed) -> dict`` with ``fn`` (runs the
"kernel", returns its output), ``bytes_moved``, ``flops`` and a ``reference``.
"""

from __future__ import annotations

import time

import numpy as np
import side_marker


def axpy(shape, dtype, *, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    return {
        "fn": lambda: 2 * x + y,
        "reference": lambda: 2 * x + y,
        "bytes_moved": 3 * x.nbytes,
        "flops": 2 * x.size,
        "atol": 1e-5,
        "rtol": 1e-5,
    }


# The same names as the head side's faulty stand-ins; here they all behave.
crash = segfault = oom = wrong = cuda_fault = out_of_resources = noisy = slow = axpy


def hang(shape, dtype, *, device="cpu", seed=0):
    """axpy, its inputs made slowly: head's ``hang`` takes the GPU lock first and hangs holding
    it, and this side's first call waits for it."""
    time.sleep(0.5)
    return axpy(shape, dtype, device=device, seed=seed)


def slot2_slower(shape, dtype, *, device="cpu", seed=0):
    """axpy, each call taking twice its time in the worker of slot 2 (``--slot 2`` on its
    command line): a bias that follows the worker slot, not the code, which the crossover must
    cancel. A worker whose slot cannot be told fails the case, never times it unbiased."""
    import sys

    argv = sys.argv
    if "--slot" not in argv[:-1]:
        raise RuntimeError(f"slot2_slower: no --slot on the worker's command line {argv}")
    case = axpy(shape, dtype, device=device, seed=seed)
    if argv[argv.index("--slot") + 1] == "2":
        plain = case["fn"]

        def twice_as_long():
            start = time.perf_counter()
            out = plain()
            now = time.perf_counter()
            until = now + (now - start)  # as long again, spinning
            while time.perf_counter() < until:
                pass
            return out

        case["fn"] = twice_as_long
    return case


def which_side(shape, dtype, *, device="cpu", seed=0):
    """Returns the value of a module that exists in both checkouts with different contents."""
    value = np.full(shape, side_marker.VALUE, dtype=dtype)
    return {"fn": lambda: value.copy(), "bytes_moved": value.nbytes, "flops": 0}


_TUNED: set[tuple] = set()


def self_tuning(shape, dtype, *, device="cpu", seed=0):
    """Tunes itself on its first call in a process (as an autotuner would: 0.3 s of timing its
    candidates), and logs when, beside the GPU lock the parent gave the worker."""
    import os
    import time

    x = np.ones(shape, dtype=dtype)

    def fn():
        if tuple(shape) not in _TUNED:
            _TUNED.add(tuple(shape))
            start = time.monotonic()
            time.sleep(0.3)
            lock = os.environ.get("KERNEL_REVIEW_GPU_LOCK")
            if lock:
                with open(os.path.join(os.path.dirname(lock), "tuning.log"), "a") as log:
                    log.write(f"{os.getpid()} {start} {time.monotonic()}\n")
        return 2 * x

    return {"fn": fn, "reference": lambda: 2 * x, "bytes_moved": 2 * x.nbytes, "flops": x.size}
