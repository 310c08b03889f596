"""The helper program's side of ``checks.job_process.run_job``: read the job file, run it, and
write the answer where the job file says (``checks.job_files``: a typed answer, or a
``JobFailure`` when it raised). Standard library only, so a helper pays nothing for it before
it measures anything.

A helper program ends with ``run_and_exit``: once the answer is written, the process ends at
once (``checks.worker.exiting``)."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from checks import job_files
from checks.job_files import Job, JobFailure
from checks.memory_cap import memory_cap_hint
from checks.worker.exiting import end_now

J = TypeVar("J", bound=Job[Any])


def short_error(exc: BaseException, *, lines: int = 3, limit: int = 600) -> str:
    """``Type: message`` on one line: its first ``lines`` non-empty lines, at most ``limit``
    characters; where it ran out of memory under the worker's cap, the cap and how to raise it
    after."""
    kept = [ln for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    hint = memory_cap_hint(exc)
    return " | ".join(kept[:lines])[:limit] + (f" ({hint})" if hint else "")


def main(argv: list[str], cls: type[J], run: Callable[[J], Any]) -> int:
    """``run`` the job of class ``cls`` in the file ``argv[0]`` and write its answer (or the
    failure it raised, a job file that does not fit among them) where the job file says; a job
    file that names no such place is raised (the bot then reports the helper's output)."""
    text = Path(argv[0]).read_text()
    out = job_files.answer_path(text)
    try:
        answer = job_files.answer_text(cls, run(job_files.read_job(cls, text)))
    except Exception as exc:
        failure = JobFailure(short_error(exc), traceback.format_exc()[-4000:])
        answer = job_files.answer_text(cls, failure)
    # whole or not at all: ``run_jobs`` reads a job's answer while its siblings still run
    tmp = Path(f"{out}.{os.getpid()}.tmp")
    tmp.write_text(answer)
    tmp.replace(out)
    return 0


def run_and_exit(argv: list[str], cls: type[J], run: Callable[[J], Any]) -> NoReturn:
    """``main``, then ``end_now``: what a helper program's ``__main__`` does."""
    end_now(main(argv, cls, run))
