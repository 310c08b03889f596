"""A first call that compiles a real Triton kernel (for an H100, on the CPU, as the JIT does on a
GPU) and then runs for 0.2 s, logging both spans beside the GPU lock the parent gave the worker:
what ``checks.worker.exclusive`` lets run side by side (the compile) and what it keeps apart."""

import os
import time

import numpy as np
import triton.compiler as tc
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime.jit import JITFunction

_DONE: set[tuple] = set()


def _double_source(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


# compiled, not interpreted: the CPU workers run with TRITON_INTERPRET=1, which ``triton.jit`` obeys
_double = JITFunction(_double_source)


def _log(what: str, start: float, end: float) -> None:
    lock = os.environ.get("KERNEL_REVIEW_GPU_LOCK")
    if lock:
        with open(os.path.join(os.path.dirname(lock), "first_calls.log"), "a") as log:
            log.write(f"{os.getpid()} {what} {start} {end}\n")


def compiling(shape, dtype, *, device="cpu", seed=0):
    x = np.ones(shape, dtype=dtype)

    def fn():
        if tuple(shape) not in _DONE:
            _DONE.add(tuple(shape))
            t0 = time.monotonic()
            source = tc.ASTSource(
                fn=_double,
                signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                constexprs={"BLOCK": 1024},
            )
            tc.compile(source, target=GPUTarget("cuda", 90, 32))
            t1 = time.monotonic()
            time.sleep(0.2)  # the part of a first call that runs on the GPU
            _log("compile", t0, t1)
            _log("run", t1, time.monotonic())
        return 2 * x

    return {"fn": fn, "reference": lambda: 2 * x, "bytes_moved": 2 * x.nbytes, "flops": x.size}
