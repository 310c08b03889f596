"""Where a worker's own time goes, command by command (``cProfile``), a diagnostic
(bench/README.md, "Compiling ahead").

Off unless the parent sets ``KERNEL_REVIEW_WORKER_PROFILE`` to a folder: then each command's
handler runs under one profiler per command name, and at ``quit`` the worker writes
``<folder>/<worker name>.<command>.prof`` (``pstats`` format). Standard library only.
"""

from __future__ import annotations

import cProfile
import os
from collections.abc import Callable, Mapping
from typing import Any

PROFILE_ENV = "KERNEL_REVIEW_WORKER_PROFILE"


class OpProfiler:
    """One ``cProfile.Profile`` per command name; a no-op without a folder."""

    def __init__(self, folder: str | None, name: str) -> None:
        self.folder, self.name = folder or None, name
        self._profiles: dict[str, cProfile.Profile] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str], name: str) -> OpProfiler:
        return cls(environ.get(PROFILE_ENV), name)

    def run(self, op: str, handler: Callable[[], Any]) -> Any:
        if self.folder is None:
            return handler()
        prof = self._profiles.setdefault(op, cProfile.Profile())
        prof.enable()
        try:
            return handler()
        finally:
            prof.disable()

    def dump(self) -> list[str]:
        """Write every command's profile; the paths written."""
        if self.folder is None:
            return []
        os.makedirs(self.folder, exist_ok=True)
        paths = []
        for op, prof in self._profiles.items():
            path = os.path.join(self.folder, f"{self.name}.{op}.prof")
            prof.dump_stats(path)
            paths.append(path)
        return paths
