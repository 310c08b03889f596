"""One worker at a time on a GPU for the calls that tune themselves: a case's first call, where
an autotuner (Triton's, cuDNN's benchmark mode, a kernel's own) times its candidates.

Base and head check a case side by side; if both autotuned at once, each would time its configs
while the other's ran on the same GPU and might keep a config it would not pick alone, as in
production it runs alone. The workers of one GPU share a lock file (``GPU_LOCK_ENV``, set by the
parent); the first call of a case's entry point holds it. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

GPU_LOCK_ENV = "KERNEL_REVIEW_GPU_LOCK"


@contextlib.contextmanager
def exclusive(path: str | None) -> Iterator[None]:
    """Hold the lock file ``path`` (no lock when None or empty)."""
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
