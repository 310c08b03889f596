"""CPU stand-ins for kernels, head side: the same entry-point names as base, each one broken in
its own way (crash, segfault, hang, out of memory, wrong result, a CUDA-fault message, Triton's
OutOfResources, chatter on stdout, a slowdown), so the sweep must report each and go on.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

import numpy as np
import side_marker


def _inputs(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)


def _entry(shape, dtype, seed, fn_factory):
    x, y = _inputs(shape, dtype, seed)
    return {
        "fn": fn_factory(x, y),
        "reference": lambda: 2 * x + y,
        "bytes_moved": 3 * x.nbytes,
        "flops": 2 * x.size,
        "atol": 1e-5,
        "rtol": 1e-5,
    }


def axpy(shape, dtype, *, device="cpu", seed=0):
    return _entry(shape, dtype, seed, lambda x, y: lambda: 2 * x + y)


def crash(shape, dtype, *, device="cpu", seed=0):
    """Dies without a word, like a process whose driver aborted it."""
    return _entry(shape, dtype, seed, lambda x, y: lambda: os._exit(7))


def segfault(shape, dtype, *, device="cpu", seed=0):
    """Reads address 0: SIGSEGV."""
    return _entry(shape, dtype, seed, lambda x, y: lambda: ctypes.string_at(0))


def hang(shape, dtype, *, device="cpu", seed=0):
    def factory(x, y):
        def fn():
            while True:
                time.sleep(0.05)

        return fn

    return _entry(shape, dtype, seed, factory)


def oom(shape, dtype, *, device="cpu", seed=0):
    """Asks for an allocation no machine has: a real MemoryError."""
    return _entry(shape, dtype, seed, lambda x, y: lambda: bytearray(1 << 62))


def wrong(shape, dtype, *, device="cpu", seed=0):
    def factory(x, y):
        def fn():
            out = 2 * x + y
            out.reshape(-1)[-1] += 1.0  # the last element is off, like a missing mask
            return out

        return fn

    return _entry(shape, dtype, seed, factory)


def drifts(shape, dtype, *, device="cpu", seed=0):
    """Right for its first two calls, then off by one at the last element: passes the check on
    fresh inputs and is caught only by the recheck after timing."""

    def factory(x, y):
        calls = [0]

        def fn():
            calls[0] += 1
            out = 2 * x + y
            if calls[0] > 2:
                out.reshape(-1)[-1] += 1.0
            return out

        return fn

    return _entry(shape, dtype, seed, factory)


def cuda_fault(shape, dtype, *, device="cpu", seed=0):
    """The error torch raises after an out-of-bounds access on the GPU; it poisons the context."""

    def factory(x, y):
        def fn():
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

        return fn

    return _entry(shape, dtype, seed, factory)


def out_of_resources(shape, dtype, *, device="cpu", seed=0):
    from triton.runtime.errors import OutOfResources

    def factory(x, y):
        def fn():
            raise OutOfResources(262144, 232448, "shared memory")

        return fn

    return _entry(shape, dtype, seed, factory)


def noisy(shape, dtype, *, device="cpu", seed=0):
    """Writes protocol-looking junk to stdout, stderr and straight to fds 1 and 2."""

    def factory(x, y):
        def fn():
            print('{"ok": false, "kind": "crashed"}')
            print("::set-output name=x::y", file=sys.stderr)
            os.write(1, b'{"ok": true, "value_us": -1}\n')
            os.write(2, b"garbage\n")
            return 2 * x + y

        return fn

    print("environment:", " ".join(sorted(os.environ)))
    return _entry(shape, dtype, seed, factory)


def slow(shape, dtype, *, device="cpu", seed=0):
    """Correct, but does the work three times."""

    def factory(x, y):
        def fn():
            for _ in range(2):
                2 * x + y
            return 2 * x + y

        return fn

    return _entry(shape, dtype, seed, factory)


def which_side(shape, dtype, *, device="cpu", seed=0):
    value = np.full(shape, side_marker.VALUE, dtype=dtype)
    return {"fn": lambda: value.copy(), "bytes_moved": value.nbytes, "flops": 0}


def huge_bytes(shape, dtype, *, device="cpu", seed=0):
    """Claims to move 10**30 bytes, which would make its throughput absurd."""
    item = axpy(shape, dtype, device=device, seed=seed)
    return {**item, "bytes_moved": 10**30}


def negative_atol(shape, dtype, *, device="cpu", seed=0):
    """Gives its check a tolerance no comparison can mean."""
    item = axpy(shape, dtype, device=device, seed=seed)
    return {**item, "atol": -1e-3}


def _leave_daemon(name, *, new_session):
    """Leaves a double-forked process behind that would outlive the job (in a session of its
    own with ``new_session``); its pid is written to ``<name>.pid`` in the worker's private
    Triton cache folder so the test can look for it."""
    path = os.path.join(os.environ["TRITON_CACHE_DIR"], f"{name}.pid")
    if os.fork() == 0:
        if new_session:
            os.setsid()
        if os.fork() == 0:
            # a copy of the worker: whatever happens here must never reach its command loop,
            # which would answer on the worker's channel. Its own temporary name: an entry
            # called more than once leaves a daemon per call, and they must not share one
            try:
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    f.write(str(os.getpid()))
                os.replace(tmp, path)  # whole, or not there
                time.sleep(120)
            finally:
                os._exit(0)
        # the daemon is running and has said so before the entry returns (a loaded machine
        # could otherwise end the worker before the daemon wrote its pid)
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.01)
        os._exit(0)
    os.wait()


def daemon(shape, dtype, *, device="cpu", seed=0):
    """Leaves a double-forked process behind; its pid in ``daemon.pid``."""
    _leave_daemon("daemon", new_session=False)
    return axpy(shape, dtype, device=device, seed=seed)


def setsid_daemon(shape, dtype, *, device="cpu", seed=0):
    """Like ``daemon``, but the daemon starts a session of its own (``setsid``), out of reach
    of a kill of the worker's session; its pid in ``setsid_daemon.pid``."""
    _leave_daemon("setsid_daemon", new_session=True)
    return axpy(shape, dtype, device=device, seed=seed)


def hog(shape, dtype, *, device="cpu", seed=0):
    """Allocates 4 GiB (and touches it) when called, as a runaway kernel would."""

    def fn():
        buf = bytearray(4 * 2**30)
        return len(buf)

    item = axpy(shape, dtype, device=device, seed=seed)
    return {**item, "fn": fn}


def escape(shape, dtype, *, device="cpu", seed=0):
    """Tries to write outside its scratch folder, as code after the runner's per-step files
    would: appends to every file named in ``targets.txt`` in the work folder (the test writes
    it there), and says in ``escape.txt`` (its own cache folder) which writes went
    through."""
    cache = os.environ["TRITON_CACHE_DIR"]
    work = os.path.dirname(os.path.dirname(cache))
    listing = os.path.join(work, "targets.txt")
    done = []
    with open(listing) as f:
        targets = f.read().split()
    for target in targets:
        try:
            with open(target, "a") as f:
                f.write("PATH=/attacker/bin\n")
            done.append(target)
        except OSError:
            pass
    with open(os.path.join(cache, "escape.txt"), "w") as f:
        f.write("\n".join(done))
    return axpy(shape, dtype, device=device, seed=seed)


def shm_hog(shape, dtype, *, device="cpu", seed=0):
    """Fills /dev/shm and a shared anonymous mapping with 384 MiB each when called: neither is
    the heap, so ``RLIMIT_DATA`` does not count them."""
    import mmap

    def fn():
        chunk = b"\1" * 2**20
        with open(f"/dev/shm/kernel-review-test-{os.getpid()}", "wb") as f:
            for _ in range(384):
                f.write(chunk)
        shared = mmap.mmap(-1, 384 * 2**20, flags=mmap.MAP_SHARED)
        for offset in range(0, 384 * 2**20, 2**20):
            shared[offset : offset + 2**20] = chunk
        return len(shared)

    item = axpy(shape, dtype, device=device, seed=seed)
    return {**item, "fn": fn}
