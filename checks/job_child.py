"""The helper program's side of ``checks.job_process.run_job``: read the job file, run it, and
write the answer to the job's ``out`` (or ``{"fatal": ..., "traceback": ...}`` when it raised).
Standard library only, so a helper pays nothing for it before it measures anything.

A helper program ends with ``run_and_exit``: once the answer is written, the process ends at
once (``checks.worker.exiting``)."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from checks.memory_cap import memory_cap_hint
from checks.worker.exiting import end_now


def short_error(exc: BaseException, *, lines: int = 3, limit: int = 600) -> str:
    """``Type: message`` on one line: its first ``lines`` non-empty lines, at most ``limit``
    characters; where it ran out of memory under the worker's cap, the cap and how to raise it
    after."""
    kept = [ln for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    hint = memory_cap_hint(exc)
    return " | ".join(kept[:lines])[:limit] + (f" ({hint})" if hint else "")


def main(argv: list[str], run: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """``run`` the job in the file ``argv[0]`` and write what it answers to the job's ``out``."""
    job = json.loads(Path(argv[0]).read_text())
    try:
        result = run(job)
    except Exception as exc:
        result = {"fatal": short_error(exc), "traceback": traceback.format_exc()[-4000:]}
    Path(job["out"]).write_text(json.dumps(result))
    return 0


def run_and_exit(argv: list[str], run: Callable[[dict[str, Any]], dict[str, Any]]) -> NoReturn:
    """``main``, then ``end_now``: what a helper program's ``__main__`` does."""
    end_now(main(argv, run))
