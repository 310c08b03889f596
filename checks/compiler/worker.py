"""One target's compiler report, in its own process: ``python -m checks.compiler.worker JOB.json``
(with several job files, one process imports torch and Triton once for all of a report's targets
and runs each in a forked child: ``run_targets``).

The process makes the target the active (compile-only) GPU *before* importing the user's code,
so a module that picks its config list by vendor at import time picks the right one. Then it
calls each bench entry point on CPU tensors for every served shape and dtype, records what each
Triton call asks the compiler for, compiles each distinct variant once (or reads it from the
cache) and writes the records as JSON.

Job: ``checks.job_files.CompilerReportJob``. The answer (``CompilerReportAnswer``)
carries the records and, per kernel, the live autotune lists of the autotuners its calls went
through (``autotune``).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bot.contracts.evidence import AutotuneList
from checks import job_child
from checks.bench_entries import bench_capture
from checks.compiler import triton_compat
from checks.compiler.cheap_inputs import unfilled_random
from checks.compiler.measure import measure
from checks.compiler.records import KernelCompileRecord
from checks.compiler.targets import target_for, vendor_of
from checks.job_child import short_error
from checks.job_files import CompilerReportAnswer, CompilerReportJob, KernelSpec
from checks.worker.exiting import end_now

T = TypeVar("T")
RECORD_CACHE_VERSION = "2"  # 2: the layouts of the Triton GPU IR


def _shape_text(shape: tuple[int, ...], dtype: str) -> str:
    return "x".join(str(d) for d in shape) + f":{dtype}"


def _error_record(kernel: str, target: str, function: str, label: str, error: str) -> dict:
    return KernelCompileRecord(
        kernel=kernel,
        function=function,
        config_label=label,
        vendor=vendor_of(target),
        target=target,
        error=error,
        error_stage="entry",
    ).model_dump(mode="json")


def repo_modules(repo_root: str) -> list[Any]:
    """The imported modules whose files live under the repository root (those of its packages
    named like the bot's, ``bench_capture.checkout_names``, included)."""
    root = str(Path(repo_root).resolve())
    return [
        m
        for m in [*sys.modules.values(), *bench_capture.checkout_modules()]
        if str(getattr(m, "__file__", "") or "").startswith(root + "/")
    ]


def record_kernel(
    kernel: KernelSpec, target: str, repo_root: str
) -> tuple[list[tuple[Any, str]], list[dict], list[dict]]:
    """Run one kernel's entry point for every shape and dtype under the compile-only driver.

    Returns ``(request, shape text)`` pairs, error records for calls that failed, and the live
    autotune lists of the autotuners the calls went through.
    """
    attr = bench_capture.entry_name(kernel.bench)
    with triton_compat.compile_only(target) as recorder:
        try:
            entry = bench_capture.load_entry(kernel.bench, repo_root)
        except Exception as exc:
            msg = f"cannot import the bench entry point {kernel.bench}: {short_error(exc)}"
            return [], [_error_record(kernel.name, target, attr, "-", msg)], []
        kernels = triton_compat.find_kernels(repo_modules(repo_root))
        with unfilled_random():
            pairs, errors = _call_entry(entry, kernel, target, recorder, kernels)
        live = triton_compat.live_autotune(recorder.tuners, kernels)
    return pairs, errors, [{"kernel": kernel.name, "targets": [target], **t} for t in live]


def _call_entry(
    entry: Any, kernel: KernelSpec, target: str, recorder: Any, kernels: list
) -> tuple[list[tuple[Any, str]], list[dict]]:
    pairs: list[tuple[Any, str]] = []
    errors: list[dict] = []
    attr = bench_capture.entry_name(kernel.bench)
    for dtype in kernel.dtypes:
        for shape in kernel.shapes:
            start = len(recorder.requests)
            text = _shape_text(shape, dtype)
            try:
                case = entry(shape, dtype, device="cpu", seed=0)
                case["fn"]()
                recorder.expand_autotuned(kernels, start)
            except Exception as exc:
                msg = f"calling {kernel.bench} at {text} failed: {short_error(exc)}"
                errors.append(_error_record(kernel.name, target, attr, text, msg))
            pairs.extend((r, text) for r in recorder.requests[start:])
    return pairs, errors


def _cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "records" / key[:2] / f"{key}.json"


def _cached_fields(req: Any, target: str, cache_dir: Path) -> dict | None:
    path = _cache_path(cache_dir, req.cache_key(target) + RECORD_CACHE_VERSION)
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def _store(req: Any, target: str, cache_dir: Path, fields: dict) -> None:
    path = _cache_path(cache_dir, req.cache_key(target) + RECORD_CACHE_VERSION)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(fields))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache costs time, not correctness


def fresh_fields(req: Any, target: str) -> dict:
    """Compile one variant (bypassing Triton's cache, so ptxas runs) and measure it."""
    start = time.perf_counter()
    try:
        out = triton_compat.compile_request(req, target)
        cuobjdump = ""
        if target_for(target).wants_resource_dump(out.ptxas_log):
            cuobjdump = _cuobjdump(out.binary)
        fields = measure(
            target=target,
            texts=out.texts,
            metadata=out.metadata,
            ptxas_log=out.ptxas_log,
            cuobjdump_text=cuobjdump,
            options=req.options,
        )
        fields["compile_s"] = round(out.wall_s, 4)
    except Exception as exc:
        fields = {"error": short_error(exc), "compile_s": round(time.perf_counter() - start, 4)}
    return fields


# set in the parent before forking; read by the pool's children
_FORKED: dict[str, Any] = {}


def _run_forked(index: int) -> tuple[int, Any]:
    return index, _FORKED["fn"](index)


def fork_map(fn: Callable[[int], T], count: int, jobs: int) -> dict[int, T]:
    """``{i: fn(i)}`` for i in range(count), spread over ``jobs`` forked processes: they inherit
    what this process recorded (live Triton functions, requests), so nothing is re-imported or
    pickled but the index and the answer. Handed out in order, one at a time; in this process
    when forking is not possible or not worth it."""
    if jobs > 1 and count > 1 and "fork" in multiprocessing.get_all_start_methods():
        triton_compat.warm_up()  # once here, not once per forked process
        _FORKED["fn"] = fn
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, count)) as pool:
                return dict(pool.imap_unordered(_run_forked, range(count), chunksize=1))
        finally:
            _FORKED.clear()
    return {i: fn(i) for i in range(count)}


def compile_all(requests: list[Any], target: str, cache_dir: Path, jobs: int) -> list[tuple]:
    """``(fields, cached)`` per request: cache hits read here, misses compiled by ``jobs``
    forked processes."""
    results: list[tuple | None] = [None] * len(requests)
    todo = []
    for i, req in enumerate(requests):
        hit = _cached_fields(req, target, cache_dir)
        if hit is not None:
            results[i] = (hit, True)
        else:
            todo.append(i)
    done = fork_map(lambda k: fresh_fields(requests[todo[k]], target), len(todo), jobs)
    for k, fields in done.items():
        i = todo[k]
        _store(requests[i], target, cache_dir, fields)
        results[i] = (fields, False)
    return results  # type: ignore[return-value]


def _cuobjdump(cubin: bytes) -> str:
    import subprocess

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        tool = triton_compat.nvidia_tool("cuobjdump")
        done = subprocess.run(
            [tool, "--dump-resource-usage", f.name], capture_output=True, text=True, timeout=60
        )
    return done.stdout


def run_job(job: CompilerReportJob) -> CompilerReportAnswer:
    start = time.perf_counter()
    version = triton_compat.check_triton_version()
    target = job.target
    folders = dict.fromkeys(p for k in job.kernels for p in k.python_path)
    sys.path[:0] = [os.path.join(job.repo_root, p) for p in folders] + [job.repo_root]
    records: list[dict] = []
    slots: list[dict[str, Any]] = []
    autotune: list[dict] = []
    for kernel in job.kernels:
        pairs, errors, live = record_kernel(kernel, target, job.repo_root)
        records.extend(errors)
        autotune.extend(live)
        variants: dict[str, dict[str, Any]] = {}
        for req, shape in pairs:
            key = req.cache_key(target)
            slot = variants.setdefault(key, {"req": req, "shapes": [], "keys": []})
            if shape not in slot["shapes"]:
                slot["shapes"].append(shape)
            if req.autotune_key and req.autotune_key not in slot["keys"]:
                slot["keys"].append(req.autotune_key)
        for slot in variants.values():
            req = slot["req"]
            slot["base"] = {
                "kernel": kernel.name,
                "function": req.function,
                "config_label": req.label,
                "config": {k: triton_compat.plain(v) for k, v in req.config.items()},
                "specialization": req.specialization,
                "autotuned": req.autotuned,
                "autotune_keys": slot["keys"],
                "shapes": slot["shapes"],
                "vendor": vendor_of(target),
                "target": target,
                "launch_refused": req.refused,
            }
            if req.error is not None:
                records.append({**slot["base"], "error": req.error, "error_stage": "compile"})
            else:
                slots.append(slot)
    recorded = time.perf_counter()
    jobs = job.jobs or os.cpu_count() or 1
    results = compile_all([s["req"] for s in slots], target, Path(job.cache_dir), jobs)
    compiled = cached = 0
    for slot, (fields, hit) in zip(slots, results, strict=True):
        compiled += not hit
        cached += hit
        stage = {"error_stage": "compile"} if fields.get("error") else {}
        records.append({**slot["base"], **fields, **stage, "cached": hit})
    checked = [KernelCompileRecord.model_validate(r).model_dump(mode="json") for r in records]
    return CompilerReportAnswer(
        triton_version=version,
        target=target,
        records=tuple(checked),
        autotune=tuple(AutotuneList.model_validate(t).model_dump(mode="json") for t in autotune),
        compiled=compiled,
        cached=cached,
        wall_s=round(time.perf_counter() - start, 3),
        record_s=round(recorded - start, 3),  # imports + calling the entry points
    )


def run_targets(paths: list[str]) -> int:
    """Several jobs (one target each, ``checks.job_process.run_jobs``) in this one process:
    torch and Triton are imported here once, then each job runs in a forked child of its own,
    side by side, as a process of its own would run it: the child makes its target the active
    GPU before it imports the repository's code (``record_kernel``), which this process never
    imports. The exit status: 0, or the first child's that ended otherwise (128 + its signal)."""
    with contextlib.suppress(ImportError):  # what every job imports: its inputs are torch's
        import torch  # noqa: F401
    import triton.compiler  # noqa: F401

    children = []
    for path in paths:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _one(path)
            finally:
                end_now(code)
        children.append(pid)
    status = 0
    for pid in children:
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code and not status:
            status = code if code > 0 else 128 - code
    return status


def _one(path: str) -> int:
    """The job in the file ``path``, its answer written where the job file says."""
    return job_child.main([path], CompilerReportJob, run_job)


if __name__ == "__main__":
    end_now(run_targets(sys.argv[1:]) if len(sys.argv) > 2 else _one(sys.argv[1]))
