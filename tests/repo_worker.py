"""A real worker on a checkout a test writes: ``repo_worker(folder, files)`` writes each file
of ``files`` (path: text) under ``folder/repo`` and gives a started worker on it, closed after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec

# generous: the worker imports torch, and a check may compile (or build a C++ extension)
TIMEOUTS = Timeouts(start_s=60, prepare_s=120, check_s=120)


@contextlib.contextmanager
def repo_worker(
    folder: Path,
    files: Mapping[str, str],
    *,
    device: str = "cpu",
    timeouts: Timeouts = TIMEOUTS,
) -> Iterator[WorkerClient]:
    """A head worker on ``folder/repo`` holding ``files``; on the CPU Triton's interpreter
    (``TRITON_INTERPRET=1``) runs its kernels."""
    for name, text in files.items():
        path = folder / "repo" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    worker = WorkerClient(
        WorkerSpec(
            side="head",
            root=folder / "repo",
            device=device,  # type: ignore[arg-type]
            work_dir=folder / "work",
            timeouts=timeouts,
        )
    )
    worker.start()
    try:
        yield worker
    finally:
        worker.close()
