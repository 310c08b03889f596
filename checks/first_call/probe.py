"""One fresh process measuring a kernel's first call: ``python -m checks.first_call.probe JOB``.

Timed in order: ``import torch``, ``import triton``, importing the bench entry point, creating the
GPU context; then two passes over the served shapes:

- ``standalone``: before each shape the in-process compiled kernels and autotuner choices are
  dropped and Triton's on-disk cache points at that shape's own directory, so each shape pays
  what a fresh process serving only that shape would pay (the fixed costs above are added by
  the caller);
- ``distribution``: one cache directory, shapes in order, nothing dropped between them: the cost
  of serving the whole distribution once.

On a GPU (``mode = "gpu"``) the entry point's callable runs for real, so compiling, loading and
autotuning happen as in production. In ``compile-only`` mode (a CPU, e.g. CI) the call is
recorded for ``target`` and every variant it would compile is compiled through Triton's cache.
Job: ``checks.job_files.FirstCallProbe``, answered ``ProbeAnswer``; with ``prime`` the
process only imports torch and Triton (and creates the GPU context); without ``distribution``
it leaves the distribution pass out.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

_T0 = time.perf_counter()
_WALL0 = time.time()

from checks import job_child  # noqa: E402  (standard library only)
from checks.bench_entries import bench_capture  # noqa: E402  (standard library only)
from checks.compiler import triton_compat as compat  # noqa: E402  (imports neither torch nor triton)
from checks.job_files import FirstCallProbe, ProbeAnswer, ProbeShape  # noqa: E402


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _shape_text(shape: tuple[int, ...], dtype: str) -> str:
    return "x".join(str(d) for d in shape) + f":{dtype}"


def _one_call(
    text: str, case: dict, job: FirstCallProbe, kernels: list[Any], torch: Any
) -> ProbeShape:
    """Time one first call: its time, compile events and autotune events."""
    try:
        return _timed_call(text, case, job, kernels, torch)
    except Exception as exc:
        return ProbeShape(text, error=_error(exc))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:400]


def _timed_call(
    text: str, case: dict, job: FirstCallProbe, kernels: list[Any], torch: Any
) -> ProbeShape:
    gpu = job.mode == "gpu"
    keys: list[str] = []
    with (
        compat.observe_compiles_and_autotuning() as (compiles, tunes),
        compat.observe_module_builds() as modules,
    ):
        start = time.perf_counter()
        if gpu:
            case["fn"]()
            torch.cuda.synchronize()
        else:
            with compat.compile_only(job.target) as recorder:
                case["fn"]()
                recorder.expand_autotuned(kernels)
            seen: set[str] = set()
            for req in recorder.requests:
                keys.append(f"{req.function}{req.autotune_key}" if req.autotune_key else "")
                key = req.cache_key(job.target)
                if req.error is None and key not in seen:
                    seen.add(key)
                    compat.compile_request(req, job.target, fresh=False)
        first = time.perf_counter() - start
    second = None
    if gpu:
        start = time.perf_counter()
        case["fn"]()
        torch.cuda.synchronize()
        second = _ms(time.perf_counter() - start)
    if gpu:
        keys = [f"{t.function}{t.key}" for t in tunes]
    stages: dict[str, float] = {}
    for c in compiles:
        for stage, us in c.stage_us:
            stages[stage] = round(stages.get(stage, 0.0) + us / 1000.0, 3)
    bench = [t.bench_s for t in tunes if t.bench_s is not None]
    return ProbeShape(
        shape=text,
        first_call_ms=_ms(first),
        second_call_ms=second,
        compiles=sum(not c.cache_hit for c in compiles),
        cache_hits=sum(c.cache_hit for c in compiles),
        compile_ms=round(sum(c.total_us for c in compiles) / 1000.0, 3),
        # what each compile and C module cost, by what the variant or source is: the cost of
        # serving the shapes in one process is derived from these (checks.first_call.measure)
        compiled=tuple(
            (c.hash, round(c.total_us / 1000.0, 3)) for c in compiles if not c.cache_hit
        ),
        modules=tuple((m.key, m.ms) for m in modules),
        stage_ms=stages,
        autotune_ms=_ms(sum(bench)) if bench else None,
        autotune_keys=tuple(sorted({k for k in keys if k})),
        configs_picked=tuple(sorted({f"{t.function}: {t.config}" for t in tunes})),
    )


def run_job(job: FirstCallProbe) -> ProbeAnswer:
    # from the parent's spawn to this module's first line: the interpreter starting
    python_start_ms = _ms(max(0.0, _WALL0 - (job.spawned_at or _WALL0)))
    # our own imports: not something a production process pays
    probe_overhead_ms = _ms(time.perf_counter() - _T0)
    start = time.perf_counter()
    import torch

    import_torch_ms = _ms(time.perf_counter() - start)
    start = time.perf_counter()
    import triton  # noqa: F401

    answer = ProbeAnswer(
        python_start_ms=python_start_ms,
        probe_overhead_ms=probe_overhead_ms,
        import_torch_ms=import_torch_ms,
        import_triton_ms=_ms(time.perf_counter() - start),
    )
    if job.prime:
        # only bring torch's, Triton's and the driver's files into the OS file cache
        if job.mode == "gpu":
            torch.empty(1, device=job.device)
        return answer
    compat.check_triton_version()
    repo_root = str(Path(job.repo_root).resolve())
    sys.path[:0] = [os.path.join(repo_root, p) for p in job.python_path] + [repo_root]
    start = time.perf_counter()
    if job.mode == "gpu":
        entry = bench_capture.load_entry(job.bench, repo_root)
    else:
        with compat.compile_only(job.target):
            entry = bench_capture.load_entry(job.bench, repo_root)
    answer = dataclasses.replace(answer, import_entry_ms=_ms(time.perf_counter() - start))
    if job.mode == "gpu":
        start = time.perf_counter()
        torch.cuda.init()
        torch.empty(1, device=job.device)
        torch.cuda.synchronize()
        context_ms = _ms(time.perf_counter() - start)
        answer = dataclasses.replace(
            answer, context_ms=context_ms, device=torch.cuda.get_device_name()
        )
    # Triton's one-off set-up, paid by a fresh process at its first compile or cache lookup
    # (its key made as Triton makes it: what a served process pays, not the bot's kept key)
    start = time.perf_counter()
    compat.warm_up(gpu=job.mode == "gpu", kept_key=False)
    answer = dataclasses.replace(answer, triton_setup_ms=_ms(time.perf_counter() - start))
    modules = [
        m
        for m in list(sys.modules.values())
        if str(getattr(m, "__file__", "") or "").startswith(repo_root + "/")
    ]
    kernels = compat.find_kernels(modules)
    cache_root = Path(job.cache_root)
    where = job.device if job.mode == "gpu" else "cpu"
    cases = [(s, d) for d in job.dtypes for s in job.shapes]

    def first_call(shape: tuple[int, ...], dtype: str) -> ProbeShape:
        text = _shape_text(shape, dtype)
        try:
            case = entry(shape, dtype, device=where, seed=0)
        except Exception as exc:
            return ProbeShape(text, error=_error(exc))
        return _one_call(text, case, job, kernels, torch)

    standalone = []
    for i, (shape, dtype) in enumerate(cases):
        compat.forget_compiled(kernels)
        compat.set_cache_dir(str(cache_root / f"shape-{i}"))
        standalone.append(first_call(shape, dtype))
    distribution = None
    if job.distribution:
        compat.forget_compiled(kernels)
        compat.set_cache_dir(str(cache_root / "distribution"))
        distribution = tuple(first_call(shape, dtype) for shape, dtype in cases)
    return dataclasses.replace(answer, standalone=tuple(standalone), distribution=distribution)


if __name__ == "__main__":
    job_child.run_and_exit(sys.argv[1:], FirstCallProbe, run_job)
