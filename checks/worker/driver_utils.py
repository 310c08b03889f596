"""Triton's driver utilities, built once for a sweep instead of once per worker.

    python -I -B driver_utils.py --vendor nvidia|amd      (TRITON_CACHE_DIR: where to build)

Triton builds its vendor's C utilities (``CudaUtils``, ``HIPUtils``) with the system's C compiler
into its cache the first time a process needs its driver: 0.3-0.5 s on the H200 host, and every
worker of a sweep has a fresh cache of its own, so each built them, and a case's first check
waited up to 0.24 s for them. The zygote (``zygote.py``) runs this program at its start, beside
its torch import, into a folder of the sweep's; each process it forks then finds the utilities in
its own cache (``copy_into``), and its driver only loads them. A process started on its own, or
forked before the build ended, builds them itself as before. This program loads what it built
(Triton does), which loads the vendor's driver library but makes no GPU context.

It also imports ahead what Triton imports at a kernel's first launch rather than at its own
import (``import_launch_modules``): Triton 3.6 imports its Gluon package (36 modules, with its
code generator) and its tensor descriptors the first time a launch specializes a tensor argument
(``native_specialize_impl``), so every fresh worker did it inside its first check's call:
0.12-0.29 s of each of the eight workers of one `kernel-review bench` run profiled on an H100,
compiled from source each time, as workers write no bytecode
(``bench/results/h100/cost_profile/``). The zygote imports them once, before it forks, with its
bytecode kept between runs; a worker started on its own imports them in its driver thread, which
its first check waits for.

Standard library only at import.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import sys
import time

DEVICE_NODES = (("nvidia", "/dev/nvidiactl"), ("amd", "/dev/kfd"))


def vendor_of_machine(nodes: tuple[tuple[str, str], ...] = DEVICE_NODES) -> str | None:
    """The GPU vendor whose device node this machine has (what a worker's torch will use,
    known before importing it); None with none or both."""
    found = [vendor for vendor, node in nodes if os.path.exists(node)]
    return found[0] if len(found) == 1 else None


def build(vendor: str) -> None:
    """The vendor's utilities, built into (or found in) ``TRITON_CACHE_DIR`` and loaded."""
    if vendor == "amd":
        from triton.backends.amd import driver as amd

        amd.HIPUtils()
    elif vendor == "nvidia":
        from triton.backends.nvidia import driver as nvidia

        nvidia.CudaUtils()
    else:
        raise ValueError(f"no driver utilities for {vendor!r}")


def copy_into(built: str, cache: str) -> bool:
    """Every file ``built`` holds added to the Triton cache ``cache`` (Triton's own layout: one
    folder per key), each written under a name of its own and renamed into place, and none that
    the cache has already: the workers of one side share a cache and are forked moments apart,
    and a library rewritten in place under a process that had loaded it can kill that process.
    False, and the process builds its own, when they cannot be copied."""
    try:
        for folder, _, files in os.walk(built):  # nothing, where nothing was built
            into = os.path.join(cache, os.path.relpath(folder, built))
            os.makedirs(into, exist_ok=True)
            for name in files:
                target = os.path.join(into, name)
                if os.path.exists(target):
                    continue
                part = f"{target}.{os.getpid()}.part"
                shutil.copy2(os.path.join(folder, name), part)
                os.replace(part, target)
    except OSError:
        return False
    return os.path.isdir(built)


LAUNCH_MODULES = ("triton.experimental.gluon", "triton.tools.tensor_descriptor")


def import_launch_modules() -> tuple[str, ...]:
    """Import each of ``LAUNCH_MODULES`` that the installed Triton has (an older one has none);
    the names imported."""
    done = []
    for name in LAUNCH_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
            done.append(name)
    return tuple(done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernel-review-driver-utils")
    parser.add_argument("--vendor", required=True, choices=["nvidia", "amd"])
    args = parser.parse_args(argv)
    if not os.environ.get("TRITON_CACHE_DIR"):
        print("TRITON_CACHE_DIR is not set: nothing to build into", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    build(args.vendor)
    print(f"{args.vendor} driver utilities built in {time.monotonic() - t0:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
