"""Bring a GPU's clock up while the workers start: device-to-device copies through the CUDA
driver, without torch.

Started by ``checks.sweep.warmer`` as ``python -I -B -u warmer.py --max-s S`` with the GPU
selected by ``CUDA_VISIBLE_DEVICES``, at a sweep's start (``kernel-review bench`` starts it first
thing). It needs only the driver library, so it burns about 0.3 s after its launch, while the
zygote still imports torch; each worker's own warm-up then finds the clock up and burns nothing.
It copies for ``--max-s`` (the bot asks for a fraction of a second, which brings the clock up),
or until its standard input closes, and runs no code but this.

Prints one line when it burns (``burning``) and one when it cannot (``no warm-up: ...``, exit
code 3): another vendor's GPU, no driver, no memory. Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import sys
import time

COPY_BYTES = 128 * 2**20  # a copy large enough to keep the memory system busy, as the worker's burn
COPIES_PER_SYNC = 16


class DriverError(Exception):
    pass


def _driver() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise DriverError(f"no CUDA driver library ({exc})") from None


def _check(lib: ctypes.CDLL, name: str, *args: object) -> None:
    code = getattr(lib, name)(*args)
    if code != 0:
        raise DriverError(f"{name} returned CUDA error {code}")


def burn(lib: ctypes.CDLL, until: float, stop_fd: int | None) -> int:
    """Copy between two buffers on device 0 until ``until`` (``time.monotonic``) or until
    ``stop_fd`` is readable (closed); how many copies were made."""
    device = ctypes.c_int()
    context = ctypes.c_void_p()
    src, dst = ctypes.c_uint64(), ctypes.c_uint64()
    _check(lib, "cuInit", 0)
    _check(lib, "cuDeviceGet", ctypes.byref(device), 0)
    _check(lib, "cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    _check(lib, "cuCtxSetCurrent", context)
    _check(lib, "cuMemAlloc_v2", ctypes.byref(src), ctypes.c_size_t(COPY_BYTES))
    _check(lib, "cuMemAlloc_v2", ctypes.byref(dst), ctypes.c_size_t(COPY_BYTES))
    print("burning", flush=True)
    copies = 0
    while time.monotonic() < until:
        if stop_fd is not None and select.select([stop_fd], [], [], 0)[0]:
            break
        for _ in range(COPIES_PER_SYNC):
            _check(lib, "cuMemcpyDtoD_v2", dst, src, ctypes.c_size_t(COPY_BYTES))
        _check(lib, "cuCtxSynchronize")
        copies += COPIES_PER_SYNC
    return copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernel-review-warmer")
    parser.add_argument("--max-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    until = time.monotonic() + args.max_s
    try:
        copies = burn(_driver(), until, sys.stdin.fileno())
    except DriverError as exc:
        print(f"no warm-up: {exc}", flush=True)
        return 3
    print(f"stopped after {copies} copies", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    os._exit(code)  # no teardown to wait for: the driver frees the context with the process
