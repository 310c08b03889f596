"""Compiling ahead: while a GPU's workers start and measure, helper processes compile each
side's Triton kernels for that GPU into the side's Triton cache (``checks.sweep.precompile_job``),
so the GPU does not sit idle while a worker compiles (an autotuned matmul compiles every config
of every new specialization, seconds of LLVM and ptxas per case, one config after the other).

Nothing waits for it: a worker that reaches a case first compiles what it needs itself, as it
would without this. A helper runs the side's own code under the same treatment as the workers
(``checks.job_process``: scrubbed environment, memory cap, killed with its session) and sees no
GPU; it writes only to the cache of its own side, which base and head never share. Helpers are
started below normal priority and stopped when the sweep ends. Where the sweep has a zygote
(``zygote.py``) they are forked from it, so they do not import torch beside it at the sweep's
start (which had slowed its imports) and find it imported when it is done.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.outputs import plural
from checks.job_files import AheadAnswer, AheadCase, CompileAhead, JobFailure
from checks.job_process import BACKGROUND_NICE, NO_GPU_ENV, JobForker, run_job
from checks.sweep.shapes import Case
from checks.sweep.zygote import own_triton

MAX_JOBS = 4  # compiling processes per side and GPU


@dataclass(frozen=True)
class SideJob:
    """One side's cases on one GPU: what to compile, for which target, into which cache."""

    side: str
    label: str  # "base" or "base-gpu0": how the notes name it
    root: Path
    python: str
    python_path: tuple[str, ...]
    cache_dir: Path
    target: str
    cases: tuple[Case, ...]


def _ahead_case(case: Case, side: str) -> AheadCase:
    entries = case.base_entries if side == "base" else case.head_entries
    return AheadCase(tuple(entries), case.dims, case.dtype)


def compile_jobs(gpus: int, cpus: int | None = None) -> int:
    """Compiling processes per side and GPU: what the cores leave after the workers (four per
    GPU with crossover) and one for the bot, split over both sides of every GPU."""
    cores = cpus if cpus is not None else os.cpu_count() or 1
    spare = cores - 4 * gpus - 1
    return max(1, min(MAX_JOBS, spare // max(1, 2 * gpus)))


class Precompile:
    """The helpers of one sweep: ``start`` them, ``finish`` to stop what still runs and read
    what each did."""

    def __init__(
        self,
        jobs: Sequence[SideJob],
        processes: int,
        timeout_s: float,
        forker: JobForker | None = None,
    ) -> None:
        self.jobs = tuple(jobs)
        self.forker = forker  # the sweep's zygote: helpers forked with torch imported
        self.processes = processes
        self.timeout_s = timeout_s
        self.cancel = threading.Event()
        self.answers: dict[str, AheadAnswer | JobFailure] = {}
        self._threads: list[threading.Thread] = []
        self._tmp = Path(tempfile.mkdtemp(prefix="kr-precompile-"))

    def start(self) -> Precompile:
        for job in self.jobs:
            t = threading.Thread(target=self._run, args=(job,), name=f"precompile-{job.label}")
            t.daemon = True
            t.start()
            self._threads.append(t)
        return self

    def _run(self, job: SideJob) -> None:
        work = self._tmp / job.label
        work.mkdir(parents=True, exist_ok=True)
        answer = run_job(
            CompileAhead(
                repo_root=str(job.root),
                python_path=job.python_path,
                target=job.target,
                jobs=self.processes,
                cases=tuple(_ahead_case(c, job.side) for c in job.cases),
            ),
            workdir=work,
            triton_cache=job.cache_dir,
            timeout_s=self.timeout_s,
            what=f"compiling ahead ({job.label})",
            python=job.python,
            env=NO_GPU_ENV,
            cancel=self.cancel,
            nice=BACKGROUND_NICE,
            # not for a checkout with a triton of its own: the zygote imported the installed one
            forker=None if own_triton(job.root, job.python_path) else self.forker,
        )
        self.answers[job.label] = answer

    def finish(self, *, wait: bool = False) -> list[str]:
        """Stop the helpers still running (``wait``: let them end first); a note per side on
        what was compiled ahead."""
        if not wait:
            self.cancel.set()
        for t in self._threads:
            t.join()
        shutil.rmtree(self._tmp, ignore_errors=True)
        unanswered = JobFailure("it did not answer")
        return [note(job.label, self.answers.get(job.label, unanswered)) for job in self.jobs]


def note(label: str, answer: AheadAnswer | JobFailure) -> str:
    """One line for the results' notes."""
    if isinstance(answer, JobFailure):
        return f"compiling ahead ({label}): not done: {answer.fatal[:300]}"
    line = (
        f"compiled ahead ({label}): {plural(answer.variants, 'Triton variant')} in "
        f"{answer.seconds:.1f} s ({answer.compiled} compiled, "
        f"{answer.cache_hits} already in the cache)"
    )
    if answer.cases_failed:
        first = (answer.case_errors or ("?",))[0]
        line += (
            f"; {plural(answer.cases_failed, 'case')} could not be recorded off the GPU "
            f"(first: {first})"
        )
    if answer.compile_errors:
        line += (
            f"; {plural(len(answer.compile_errors), 'variant')} did not compile "
            f"(first: {answer.compile_errors[0]})"
        )
    if answer.launcher_errors:
        line += f"; launchers left to the workers ({answer.launcher_errors[0]})"
    return line
