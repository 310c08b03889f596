"""Build the compiler report: one worker process, a forked child of it per target, run side by
side, cached twice.

- Per variant (source with dependencies + specialization + options + target + toolchain): the
  measured fields, under ``<cache>/records``; a variant is compiled once.
- Per target and job (every ``.py`` file of the repository + entry points + shapes + target +
  Triton): the worker's whole answer, under ``<cache>/jobs``; an unchanged repository skips the
  worker entirely, so a warm report costs file hashing only.

The cache directory is ``$KERNEL_REVIEW_CACHE`` or ``~/.cache/kernel-review``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot.contracts.evidence import AutotuneList
from bot.errors import CompilerError
from bot.outputs import cache_root, plural
from checks import job_files
from checks.compiler.records import CompilerReport, KernelCompileRecord
from checks.compiler.report import make_report
from checks.compiler.targets import compile_targets, known_target, known_target_names, vendor_of
from checks.job_files import CompilerReportAnswer, CompilerReportJob, JobFailure, KernelSpec
from checks.job_process import NO_GPU_ENV, run_jobs
from checks.worker.contract import ContractError, as_json
from checks.worker_env import tree_digest

JOB_CACHE_VERSION = "5"  # 2: the live autotune lists; 3: the layouts of each variant; 4: a
# checkout's own `checks`/`bot` package imported (3 cached its import error); 5: the answer
# kept as its typed file (checks.job_files)
_SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages", "build", "dist"}
_MAX_FILES = 20000
_MAX_SOURCE_BYTES = 256 * 2**20
Outcome = CompilerReportAnswer | JobFailure


def default_cache_dir() -> Path:
    return cache_root()


def specs_for(kernels: Any, python_path: Sequence[str] = ()) -> list[KernelSpec]:
    """Specs of policy kernels or planned kernels (both have name, bench, shapes, dtypes);
    ``python_path``: the policy's (``checks.checkout.Checkout.python_path``)."""
    return [
        KernelSpec(
            name=k.name,
            bench=k.bench,
            shapes=tuple(tuple(s.dims) for s in k.shapes),
            dtypes=tuple(k.dtypes),
            python_path=tuple(python_path or ()),
        )
        for k in kernels
    ]


def specs_from_policy(policy: Any) -> list[KernelSpec]:
    return specs_for(policy.kernels, getattr(policy, "python_path", ()))


def targets_from_policy(policy: Any) -> list[str]:
    return compile_targets(policy.compiler, policy.vendors)


def source_digest(repo_root: Path) -> str | None:
    """Hash of every ``.py`` file under the repository (None when there are too many, or too
    many bytes). Symbolic links are hashed as links, never followed."""
    return tree_digest(
        repo_root,
        suffix=".py",
        skip_dir=lambda d: d.startswith(".") or d in _SKIP_DIRS,
        max_files=_MAX_FILES,
        max_bytes=_MAX_SOURCE_BYTES,
    )


def _job_key(digest: str, target: str, kernels: list[KernelSpec], triton_version: str) -> str:
    parts = [
        JOB_CACHE_VERSION,
        triton_version,
        os.environ.get("TRITON_PTXAS_PATH", ""),
        digest,
        target,
        json.dumps(as_json(kernels), sort_keys=True),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _run_workers(
    repo_root: Path,
    targets: list[str],
    kernels: list[KernelSpec],
    cache_dir: Path,
    timeout_s: float,
    jobs: int,
    python: str | None,
    answered: Callable[[int, Outcome], None],
) -> list[Outcome]:
    """One worker process for all of ``targets``: it imports torch and Triton once and runs
    each target's job in a forked child (``checks.compiler.worker.run_targets``)."""
    with tempfile.TemporaryDirectory(prefix="kr-compile-") as tmp:
        work = [
            CompilerReportJob(str(repo_root), target, str(cache_dir), jobs, tuple(kernels))
            for target in targets
        ]
        return run_jobs(
            work,
            names=targets,
            workdir=Path(tmp),
            triton_cache=Path(tmp) / "triton-cache",
            timeout_s=timeout_s,
            what="compiling for",
            python=python,
            env=NO_GPU_ENV,  # it cross-compiles, with inputs on the CPU
            kept=(cache_dir,),  # its records, written by a trusted run only
            answered=answered,
        )


def _cached(path: Path) -> CompilerReportAnswer | None:
    """The answer kept at ``path``; None when there is none, or none this bot can read."""
    try:
        kept = job_files.read_answer(CompilerReportJob, path.read_text())
    except (OSError, ContractError):
        return None
    return kept if isinstance(kept, CompilerReportAnswer) else None


def _job_path(
    cache_dir: Path,
    target: str,
    kernels: list[KernelSpec],
    digest: str | None,
    version: str,
) -> Path | None:
    """Where the answer of ``target``'s job is kept; None for a repository not hashed."""
    if not digest:
        return None
    return cache_dir / "jobs" / f"{_job_key(digest, target, kernels, version)}.json"


def _keep(path: Path | None, result: Outcome) -> None:
    if path is not None and isinstance(result, CompilerReportAnswer):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(job_files.answer_text(CompilerReportJob, result))
        tmp.replace(path)


def build_compiler_report(
    repo_root: Path,
    kernels: list[KernelSpec],
    targets: list[str],
    *,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    timeout_s: float = 600.0,
    python: str | None = None,
    triton_version: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompilerReport:
    """Compile every variant of every kernel for every target and report what came out;
    ``progress`` hears of each target as it finishes. ``python`` and ``triton_version``: a
    side's own toolchain (``checks.toolchain_env``); the bot's own interpreter and Triton by
    default."""
    from checks.compiler.triton_compat import check_triton_version

    version = check_triton_version(triton_version)
    for t in targets:
        vendor_of(t)  # refuses an unknown target name up front
    start = time.perf_counter()
    cache_dir = cache_dir or default_cache_dir()
    repo_root = repo_root.resolve()
    digest = source_digest(repo_root)
    # every target's job runs at once (in one worker process, each forked from it after torch's
    # and Triton's imports) and compiles with ``jobs`` forked processes: the operating system
    # shares the cores, and no core idles while one target has a long tail
    jobs = max(1, jobs or os.cpu_count() or 1)

    def said(target: str, result: Outcome, hit: bool) -> None:
        if progress is not None:
            failed = isinstance(result, JobFailure)
            how = "failed" if failed else "cached" if hit else "compiled"
            count = 0 if isinstance(result, JobFailure) else len(result.records)
            progress(f"{target}: {how}, {plural(count, 'variant')}")

    paths = {t: _job_path(cache_dir, t, kernels, digest, version) for t in targets}
    done: dict[str, tuple[Outcome, bool]] = {}
    for target, path in paths.items():
        kept = _cached(path) if path is not None else None
        if kept is not None:
            done[target] = (kept, True)
            said(target, kept, True)
    todo = [t for t in targets if t not in done]

    def answered(i: int, result: Outcome) -> None:
        _keep(paths[todo[i]], result)
        said(todo[i], result, False)

    if todo:
        outcomes = _run_workers(
            repo_root, todo, kernels, cache_dir, timeout_s, jobs, python, answered
        )
        done.update({t: (r, False) for t, r in zip(todo, outcomes, strict=True)})
    results = [done[t] for t in targets]
    records: list[KernelCompileRecord] = []
    autotune: list[AutotuneList] = []
    notes: list[str] = []
    compiled = cached = 0
    for target, (result, job_hit) in zip(targets, results, strict=True):
        if isinstance(result, JobFailure):
            if "not supported by the compiler report" in result.fatal:
                raise CompilerError(result.fatal)
            notes.append(f"{target}: {result.fatal}")
            continue
        for r in result.records:
            rec = KernelCompileRecord.model_validate(r)
            records.append(rec.model_copy(update={"cached": True}) if job_hit else rec)
        autotune += [AutotuneList.model_validate(t) for t in result.autotune]
        compiled += 0 if job_hit else result.compiled
        cached += result.cached + result.compiled if job_hit else result.cached
    for target in targets:
        if not known_target(target):
            notes.append(
                f"{target}: no occupancy table or register cap here, so neither is reported "
                f"(known: {', '.join(known_target_names())})"
            )
    records.sort(key=lambda r: (r.kernel, r.target, r.function, r.config_label))
    return make_report(
        records,
        triton_version=version,
        targets=tuple(targets),
        wall_s=round(time.perf_counter() - start, 3),
        compiled=compiled,
        cached=cached,
        notes=tuple(notes),
        autotune=tuple(autotune),
    )
