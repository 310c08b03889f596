"""Compile one side's Triton kernels ahead of its workers: ``python -m checks.sweep.precompile_job
JOB``.

Runs beside the sweep, without a GPU, for the GPU's compiler target: every case's entry point is
called on CPU tensors (unfilled, ``checks.compiler.cheap_inputs``) under the compile-only driver,
which records each variant a Triton call would compile, every config of an autotuner included;
then each distinct variant is compiled into Triton's cache (``TRITON_CACHE_DIR``, the side's
own, which its workers read) by forked processes, in the order of the cases (the first case's
before the others are recorded), with the C launcher and driver utilities a GPU process would
build at its first launch. A worker that
reaches a case finds what it needs compiled, and autotuning only times the configs. Anything that
fails here (an entry point that insists on a GPU, an unsupported Triton) costs nothing but the
attempt: the worker compiles as it would have.

Job: ``checks.job_files.CompileAhead``. The answer (``AheadAnswer``) counts variants,
compiles and cache hits, and names the cases that could not be recorded.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

from checks import job_child
from checks.job_child import short_error
from checks.job_files import AheadAnswer, AheadCase, CompileAhead


def _short(exc: BaseException) -> str:
    return short_error(exc, lines=1, limit=300)


def _entry(
    candidates: tuple[str, ...], root: str, loaded: dict[tuple[str, ...], tuple[Any, list[Any]]]
) -> tuple[Any, list[Any]]:
    """The first of ``candidates`` this checkout has, as the worker resolves them, and the
    checkout's Triton kernels once it is imported (each looked up once)."""
    from checks.bench_entries import bench_capture
    from checks.compiler import triton_compat as compat
    from checks.compiler.worker import repo_modules

    if candidates not in loaded:
        entry = bench_capture.first_entry(list(candidates), root)[1]
        loaded[candidates] = entry, compat.find_kernels(repo_modules(root))
    return loaded[candidates]


def record(
    job: CompileAhead,
    cases: tuple[AheadCase, ...],
    loaded: dict[tuple[str, ...], tuple[Any, list[Any]]],
) -> tuple[list[Any], list[str]]:
    """``cases``' compile requests, in case order, and a line per case that failed; ``loaded``
    keeps each entry point and the checkout's kernels found, for the next call."""
    from checks.compiler import triton_compat as compat
    from checks.compiler.cheap_inputs import unfilled_random

    errors: list[str] = []
    with compat.compile_only(job.target) as recorder:
        for case in cases:
            start = len(recorder.requests)
            label = "x".join(map(str, case.shape)) + f":{case.dtype}"
            try:
                entry, kernels = _entry(case.entries, job.repo_root, loaded)
                with unfilled_random():
                    item = entry(case.shape, case.dtype, device="cpu", seed=0)
                    item["fn"]()
                recorder.expand_autotuned(kernels, start)
            except Exception as exc:
                errors.append(f"{label}: {_short(exc)}")
    return recorder.requests, errors


class _Compiler:
    """Each distinct variant compiled once, with its launcher, ``jobs`` at a time."""

    def __init__(self, target: str, jobs: int) -> None:
        self.target, self.jobs = target, jobs
        self.seen: set[str] = set()
        self.outcomes: list[str] = []
        self.launcher_errors: list[str] = []

    def run(self, requests: list[Any]) -> None:
        from checks.compiler import triton_compat as compat
        from checks.compiler.worker import fork_map

        todo = []
        for req in requests:
            if req.error is not None or req.fn is None:
                continue
            key = req.cache_key(self.target)
            if key not in self.seen:
                self.seen.add(key)
                todo.append(req)

        def compile_one(i: int) -> tuple[str, str | None]:
            try:
                out = compat.compile_request(todo[i], self.target, fresh=False, launcher=True)
            except Exception as exc:
                return f"error: {todo[i].function}: {_short(exc)}", None
            return ("hit" if out.cache_hit else "compiled"), out.launcher_error

        for outcome, launcher_error in fork_map(compile_one, len(todo), self.jobs).values():
            self.outcomes.append(outcome)
            if launcher_error:
                self.launcher_errors.append(launcher_error)


def run_job(job: CompileAhead) -> AheadAnswer:
    """The first case's variants first, recorded and compiled before the other cases are even
    recorded: that case's check comes about as soon as the workers have the GPU, and on the
    H200 it had found nothing compiled yet and compiled its kernel and launcher itself (0.5 s,
    the first verdict waiting). Then the rest, in case order."""
    from checks.compiler import triton_compat as compat

    started = time.perf_counter()
    compat.check_triton_version()
    root = str(Path(job.repo_root).resolve())
    job = dataclasses.replace(job, repo_root=root)
    sys.path[:0] = [os.path.join(root, p) for p in job.python_path] + [root]
    os.chdir(root)
    compiler = _Compiler(job.target, max(1, job.jobs))
    loaded: dict[tuple[str, ...], tuple[Any, list[Any]]] = {}
    requests, errors = record(job, job.cases[:1], loaded)
    compiler.run(requests)
    first_s = time.perf_counter() - started
    requests, more = record(job, job.cases[1:], loaded)
    errors += more
    recorded_s = time.perf_counter() - started

    utils_error = None
    try:
        compat.build_driver_utils(compat.gpu_target(job.target).backend)
    except Exception as exc:
        utils_error = _short(exc)
    compiler.run(requests)
    outcomes = compiler.outcomes
    failed = [o[len("error: ") :] for o in outcomes if o.startswith("error: ")]
    return AheadAnswer(
        variants=len(outcomes),
        compiled=outcomes.count("compiled"),
        cache_hits=outcomes.count("hit"),
        compile_errors=tuple(failed[:5]),
        launcher_errors=tuple(
            ([utils_error] if utils_error else []) + compiler.launcher_errors[:5]
        ),
        case_errors=tuple(errors[:5]),
        cases_failed=len(errors),
        first_case_s=round(first_s, 3),
        record_s=round(recorded_s, 3),
        seconds=round(time.perf_counter() - started, 3),
    )


if __name__ == "__main__":
    job_child.run_and_exit(sys.argv[1:], CompileAhead, run_job)
