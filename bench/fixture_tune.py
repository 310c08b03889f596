"""The ``--tune`` sweep of bench/fixture_gpu_check.py: the launch settings of the fixture's Triton
softmax and matmul, measured on the GPU, every measurement kept.

softmax, at 4096x4096 fp32 and fp16, 32768x1024, 1823x781 and 8192x8192 fp32: one program per row
(unpipelined, and pipelined through shared memory) and the persistent grid (pipelining depth 1 to
4), each at 4, 8, 16 and 32 warps; then, for the best persistent setting, the grid size (programs
per SM below what fits). Each shape also gets ``toyops.softmax`` as shipped, ``torch.softmax``, a
copy of the same bytes (the ceiling at this size), and the copy and the best setting timed after
a read-only L2 flush: do_bench's flush writes 256 MB and leaves L2 full of dirty lines, which the
timed kernel then writes back, a fixed cost that weighs more on small transfers.

matmul, bf16 at 4096^3, 1000^3, 8192^3 and the ragged 1023x4097x511 (M, N, K): a list of Hopper
configs (the fixture's own autotune list included), the autotuned ``toyops.matmul`` as shipped,
``torch.matmul``, and where the kernel's DIVISOR hint is neither 1 nor 16 (1000^3), the best three
configs without it.

Every timing is ``triton.testing.do_bench`` (median, L2 flushed before each call). Every kernel
is compiled first by a pool of processes into the shared Triton cache, so the sweep only times.
"""

from __future__ import annotations

import importlib
import os
import statistics
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any

Emit = Callable[[dict[str, Any]], None]

SOFTMAX_SHAPES = [
    ((4096, 4096), "float32"),
    ((4096, 4096), "float16"),
    ((32768, 1024), "float32"),
    ((1823, 781), "float32"),
    ((8192, 8192), "float32"),
]
SOFTMAX_WARPS = (4, 8, 16, 32)
SOFTMAX_STAGES = (1, 2, 3, 4)  # the persistent loop's pipelining depth
PER_ROW_STAGES = (
    1,
    2,
)  # one row per program: 2 only shows what staging through shared memory costs
PROGRAMS_PER_SM = (1, 2, 3, 4, 6, 8, 12, 16)

MATMUL_SHAPES = [(4096, 4096, 4096), (1000, 1000, 1000), (8192, 8192, 8192), (1023, 4097, 511)]
MATMUL_DTYPE = "bfloat16"
# (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages, GROUP_SIZE_M); the fixture's
# own list is added to these.
MATMUL_CANDIDATES = [
    (128, 256, 64, 8, 3, 8),
    (256, 128, 64, 8, 3, 8),
    (128, 128, 64, 4, 4, 8),
    (128, 128, 128, 8, 3, 8),
    (64, 256, 64, 4, 4, 8),
    (128, 64, 64, 4, 4, 8),
    (64, 64, 64, 4, 4, 8),
    (64, 128, 64, 4, 3, 8),
    (128, 256, 64, 8, 4, 8),
    (256, 128, 64, 8, 4, 8),
    (128, 128, 64, 8, 3, 8),
    (128, 128, 64, 8, 4, 8),
    (64, 128, 64, 4, 4, 8),
    (64, 64, 64, 4, 5, 8),
    (64, 64, 128, 4, 3, 8),
    (128, 64, 128, 4, 3, 8),
    (64, 128, 128, 4, 3, 8),
    (32, 64, 128, 4, 4, 8),
    (128, 256, 64, 8, 3, 4),
    (128, 256, 64, 8, 3, 16),
]
NO_HINT_TOP = 3
POOL_TIMEOUT_S = 240
DEVICE = "cuda"


# --- timing --------------------------------------------------------------------------------------


def time_ms(fn: Callable[[], Any]) -> float:
    """do_bench's median with its defaults: L2 flushed (256 MB written) before each call."""
    import triton

    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def time_ms_read_flush(fn: Callable[[], Any], reps: int = 50) -> float:
    """Median of ``reps`` calls, each after reading 256 MiB: L2 then holds only clean lines, so
    the call writes back none of the flush's data (do_bench's flush writes)."""
    import torch

    buf = torch.zeros(64 * 2**20, dtype=torch.int32, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(3):
        buf.sum()
        fn()
    for start, end in zip(starts, ends, strict=True):
        buf.sum()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:600]


# --- compiling ahead, in a pool of processes -----------------------------------------------------


def _compile_one(task: dict[str, Any]) -> dict[str, Any]:
    """In a pool process: compile one kernel variant through the JIT (``warmup``), exactly as the
    sweep will launch it, so that the sweep finds it in the shared Triton cache."""
    started = time.perf_counter()
    try:
        import torch
        import triton

        dtype = getattr(torch, task["dtype"])
        if task["kind"] == "matmul":
            mm = importlib.import_module("toyops.matmul")
            M, N, K = task["shape"]
            a, b, c = (torch.empty(16, dtype=dtype, device=DEVICE) for _ in range(3))
            config = triton.Config(
                task["kwargs"], num_warps=task["num_warps"], num_stages=task["num_stages"]
            )
            mm.matmul_kernel.fn.warmup(
                a, b, c, M, N, K, K, 1, N, 1, N, 1,
                grid=(1,), **config.all_kwargs(), DIVISOR=task["divisor"],
            )  # fmt: skip
        else:
            sm = importlib.import_module("toyops.softmax")
            rows, cols = task["shape"]
            x, y = (torch.empty(16, dtype=dtype, device=DEVICE) for _ in range(2))
            sm.softmax_kernel.warmup(
                y, x, cols, cols, rows, cols,
                BLOCK_SIZE=task["block"], NUM_STAGES=task["num_stages"],
                num_warps=task["num_warps"], grid=(1,),
            )  # fmt: skip
        return {**task, "ok": True, "compile_s": time.perf_counter() - started}
    except Exception as exc:
        return {
            **task,
            "ok": False,
            "error": _error(exc),
            "compile_s": time.perf_counter() - started,
        }


def _brief(task: dict[str, Any]) -> dict[str, Any]:
    keys = ("shape", "label", "block", "num_warps", "num_stages", "error")
    return {k: task[k] for k in keys if k in task}


def precompile(tasks: list[dict[str, Any]], emit: Emit, kind: str) -> None:
    """Compile every task in parallel; what fails or is late is compiled again when launched."""
    import multiprocessing

    started = time.perf_counter()
    workers = max(1, min(len(tasks), (os.cpu_count() or 2) - 2, 12))
    done: list[dict[str, Any]] = []
    error = None
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(_compile_one, task) for task in tasks]
        for future in as_completed(futures, timeout=POOL_TIMEOUT_S):
            done.append(future.result())
    except FuturesTimeout:
        error = f"timed out after {POOL_TIMEOUT_S} s"
    except Exception as exc:  # a broken pool: the sweep compiles as it goes
        error = _error(exc)
    finally:
        if error is not None:  # stop what is still compiling: the sweep would wait on the CPUs
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
        pool.shutdown(wait=error is None, cancel_futures=True)
    failed = [t for t in done if not t["ok"]]
    emit(
        {
            "tune": "precompile",
            "kind": kind,
            "tasks": len(tasks),
            "compiled": len(done) - len(failed),
            "failed": [_brief(t) for t in failed],
            "processes": workers,
            "compile_s_total": sum(t["compile_s"] for t in done),
            "wall_s": time.perf_counter() - started,
            **({"error": error} if error else {}),
        }
    )


# --- measuring one variant -----------------------------------------------------------------------


def _measure(
    emit: Emit,
    record: dict[str, Any],
    run: Callable[[], Any],
    reference: Any,
    tol: tuple[float, float],
    work: tuple[int, int],
    poison: Any = None,
) -> dict[str, Any]:
    """Check one variant against the reference (its output poisoned first), time it, emit it.
    ``work`` is (bytes moved, flops) of one call."""
    import torch

    try:
        if poison is not None:
            poison.fill_(float("nan"))
        out = run()
        _sync()
        record["max_abs_err"] = float((out.float() - reference.float()).abs().max())
        record["ok"] = bool(
            torch.allclose(out.float(), reference.float(), atol=tol[0], rtol=tol[1])
        )
        if record["ok"]:
            ms = time_ms(run)
            record["median_us"] = 1000.0 * ms
            record["gbps"] = work[0] / (ms * 1e-3) / 1e9
            record["tflops"] = work[1] / (ms * 1e-3) / 1e12
        else:
            record["error"] = f"wrong result (atol={tol[0]}, rtol={tol[1]})"
    except Exception as exc:
        record["ok"] = False
        record["error"] = _error(exc)
        record["traceback"] = traceback.format_exc()[-2000:]
    emit(record)
    return record


def _fastest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r for r in records if r.get("median_us")), key=lambda r: r["median_us"])


# --- softmax -------------------------------------------------------------------------------------


def tune_softmax(emit: Emit) -> None:
    import torch
    import triton

    sm = importlib.import_module("toyops.softmax")
    tasks = [
        {
            "kind": "softmax",
            "shape": list(shape),
            "dtype": dtype,
            "block": triton.next_power_of_2(shape[1]),
            "num_warps": warps,
            "num_stages": stages,
        }
        for shape, dtype in SOFTMAX_SHAPES
        for warps in SOFTMAX_WARPS
        for stages in SOFTMAX_STAGES
    ]
    precompile(tasks, emit, "softmax")
    num_sm = torch.cuda.get_device_properties(0).multi_processor_count
    for shape, dtype in SOFTMAX_SHAPES:
        _SoftmaxShape(emit, sm, shape, dtype, num_sm).sweep()


class _SoftmaxShape:
    """The softmax sweep at one shape: its inputs, reference and every variant measured."""

    def __init__(self, emit: Emit, sm: Any, shape: tuple[int, int], dtype: str, num_sm: int):
        import torch
        import triton

        bench = importlib.import_module("toyops.bench")
        case = bench.softmax(shape, dtype, device=DEVICE)
        self.emit, self.sm, self.num_sm = emit, sm, num_sm
        self.rows = shape[0]
        self.x = case["inputs"][0]
        self.y = torch.empty_like(self.x)
        self.reference = case["reference"]()
        self.tol = (case["atol"], case["rtol"])
        self.work = (case["bytes_moved"], 0)
        self.block = triton.next_power_of_2(shape[1])
        self.shape = {"shape": list(shape), "dtype": dtype, "bytes_moved": case["bytes_moved"]}
        self.runs: list[tuple[dict[str, Any], Callable[[], Any]]] = []

    def launcher(self, programs: int, warps: int, stages: int) -> Callable[[], Any]:
        sm, x, y, block = self.sm, self.x, self.y, self.block

        def run() -> Any:
            sm.launch(y, x, programs=programs, block_size=block, num_warps=warps, num_stages=stages)
            return y

        return run

    def measure(self, variant: dict[str, Any], run: Callable[[], Any], poison: bool = True) -> dict:
        record = {"tune": "softmax", **self.shape, **variant}
        poisoned = self.y if poison else None
        record = _measure(self.emit, record, run, self.reference, self.tol, self.work, poisoned)
        self.runs.append((record, run))
        return record

    def references(self) -> None:
        import torch

        x, y = self.x, self.y
        ref: dict[str, Any] = {"tune": "softmax_ref", **self.shape, "num_sm": self.num_sm}
        try:
            ref["torch_us"] = 1000.0 * time_ms(lambda: torch.softmax(x, dim=-1))
            ref["copy_us"] = 1000.0 * time_ms(lambda: y.copy_(x))
            ref["copy_read_flush_us"] = 1000.0 * time_ms_read_flush(lambda: y.copy_(x))
        except Exception as exc:
            ref["error"] = _error(exc)
        self.emit(ref)

    def sweep(self) -> None:
        sm, x = self.sm, self.x
        self.references()
        plan = sm.launch_plan(self.block, x.element_size(), sm.active_backend())
        shipped = {
            "variant": "shipped",
            "grid": "persistent" if plan.persistent else "per_row",
            "num_warps": plan.num_warps,
            "num_stages": plan.num_stages,
        }
        self.measure(shipped, lambda: sm.softmax(x), poison=False)
        persistent = []
        for warps in SOFTMAX_WARPS:
            for stages in PER_ROW_STAGES:
                variant = {"variant": "sweep", "grid": "per_row", "num_warps": warps,
                           "num_stages": stages, "programs": self.rows}  # fmt: skip
                self.measure(variant, self.launcher(self.rows, warps, stages))
            for stages in SOFTMAX_STAGES:
                variant = {"variant": "sweep", "grid": "persistent", "num_warps": warps,
                           "num_stages": stages}  # fmt: skip
                try:
                    fill = sm.persistent_grid(self.y, x, self.block, warps, stages)
                except Exception as exc:
                    self.emit({"tune": "softmax", **self.shape, **variant, "ok": False,
                               "error": _error(exc)})  # fmt: skip
                    continue
                programs = min(fill, self.rows)
                variant.update(programs=programs, programs_per_sm=fill // self.num_sm)
                persistent.append(self.measure(variant, self.launcher(programs, warps, stages)))
        # The grid size of the best persistent setting: fewer programs per SM than fit.
        best = _fastest(persistent)
        if best:
            warps, stages = best[0]["num_warps"], best[0]["num_stages"]
            fits = best[0]["programs_per_sm"]
            for per_sm in PROGRAMS_PER_SM:
                programs = per_sm * self.num_sm
                if per_sm < fits and programs < self.rows:
                    variant = {"variant": "grid_size", "grid": "persistent", "num_warps": warps,
                               "num_stages": stages, "programs": programs,
                               "programs_per_sm": per_sm}  # fmt: skip
                    self.measure(variant, self.launcher(programs, warps, stages))
        fastest = _fastest([record for record, _ in self.runs])
        if fastest:
            top = fastest[0]
            run = next(fn for record, fn in self.runs if record is top)
            keys = ("variant", "grid", "num_warps", "num_stages", "programs", "programs_per_sm")
            flush = {"tune": "softmax_read_flush", **self.shape}
            flush.update({k: top[k] for k in keys if k in top})
            flush["median_us"] = 1000.0 * time_ms_read_flush(run)
            self.emit(flush)


# --- matmul --------------------------------------------------------------------------------------


def config_label(kwargs: dict[str, Any], num_warps: int, num_stages: int) -> str:
    m, n, k = kwargs["BLOCK_SIZE_M"], kwargs["BLOCK_SIZE_N"], kwargs["BLOCK_SIZE_K"]
    return f"{m}x{n}x{k} w{num_warps} s{num_stages} g{kwargs['GROUP_SIZE_M']}"


def matmul_configs(shipped: list[Any]) -> list[dict[str, Any]]:
    """The candidates and the fixture's own list, once each, as plain data."""
    configs: dict[str, dict[str, Any]] = {}
    for m, n, k, w, s, g in MATMUL_CANDIDATES:
        kwargs = {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": g}
        entry = {"kwargs": kwargs, "num_warps": w, "num_stages": s}
        configs.setdefault(config_label(kwargs, w, s), entry)
    for c in shipped:
        entry = {"kwargs": dict(c.kwargs), "num_warps": c.num_warps, "num_stages": c.num_stages}
        configs.setdefault(config_label(c.kwargs, c.num_warps, c.num_stages), entry)["shipped"] = (
            True
        )
    return [{"label": label, **entry} for label, entry in configs.items()]


def tune_matmul(emit: Emit) -> None:
    mm = importlib.import_module("toyops.matmul")
    configs = matmul_configs(mm.autotune_configs("cuda"))
    tasks, seen = [], set()
    for M, N, K in MATMUL_SHAPES:
        divisor = mm._divisor(K, N, K, N, N)  # contiguous a, b and c
        spec = (tuple(v % 16 == 0 for v in (M, N, K)), divisor)  # what the compiler specialises on
        for cfg in configs:
            if (spec, cfg["label"]) not in seen:
                seen.add((spec, cfg["label"]))
                task = {"kind": "matmul", "shape": [M, N, K], "dtype": MATMUL_DTYPE}
                tasks.append({**task, "divisor": divisor, **cfg})
    precompile(tasks, emit, "matmul")
    for shape in MATMUL_SHAPES:
        _MatmulShape(emit, mm, shape).sweep(configs)


class _MatmulShape:
    """The matmul sweep at one shape: its inputs, reference and every config measured."""

    def __init__(self, emit: Emit, mm: Any, shape: tuple[int, int, int]):
        import torch

        bench = importlib.import_module("toyops.bench")
        case = bench.matmul(shape, MATMUL_DTYPE, device=DEVICE)
        self.emit, self.mm = emit, mm
        self.a, self.b = case["inputs"]
        self.c = torch.empty((shape[0], shape[1]), device=DEVICE, dtype=self.a.dtype)
        self.reference = case["reference"]()
        self.tol = (case["atol"], case["rtol"])
        self.work = (case["bytes_moved"], case["flops"])
        a, b, c = self.a, self.b, self.c
        self.divisor = mm._divisor(shape[2], shape[1], a.stride(0), b.stride(0), c.stride(0))
        self.shape = {"shape": list(shape), "dtype": MATMUL_DTYPE, "divisor": self.divisor}

    def launcher(self, cfg: dict[str, Any], divisor: int) -> Callable[[], Any]:
        import triton

        mm, a, b, c = self.mm, self.a, self.b, self.c
        (M, K), N = a.shape, b.shape[1]
        config = triton.Config(
            cfg["kwargs"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"]
        )
        tiles = triton.cdiv(M, cfg["kwargs"]["BLOCK_SIZE_M"])
        tiles *= triton.cdiv(N, cfg["kwargs"]["BLOCK_SIZE_N"])
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

        def run() -> Any:
            mm.matmul_kernel.fn[(tiles,)](
                a, b, c, M, N, K, *strides, **mm._launch_kwargs(config), DIVISOR=divisor
            )
            return c

        return run

    def measure(self, fields: dict[str, Any], run: Callable[[], Any], poison: bool = True) -> dict:
        record = {"tune": "matmul", **self.shape, **fields}
        poisoned = self.c if poison else None
        return _measure(self.emit, record, run, self.reference, self.tol, self.work, poisoned)

    def sweep(self, configs: list[dict[str, Any]]) -> None:
        import torch

        a, b, mm = self.a, self.b, self.mm
        ref: dict[str, Any] = {"tune": "matmul_ref", **self.shape, "flops": self.work[1]}
        try:
            ref["torch_us"] = 1000.0 * time_ms(lambda: torch.matmul(a, b))
        except Exception as exc:
            ref["error"] = _error(exc)
        self.emit(ref)
        swept = [
            self.measure(
                {"variant": "sweep", "config": cfg["label"], "shipped": bool(cfg.get("shipped"))},
                self.launcher(cfg, self.divisor),
            )
            for cfg in configs
        ]
        self.measure({"variant": "shipped", "config": "autotuned"}, lambda: mm.matmul(a, b), False)
        best = getattr(mm.matmul_kernel, "best_config", None)  # set by the last autotuned call
        if best is not None:
            pick = config_label(best.kwargs, best.num_warps, best.num_stages)
            self.emit({"tune": "matmul_autotune_pick", **self.shape, "config": pick})
        if self.divisor not in (1, 16):
            by_label = {cfg["label"]: cfg for cfg in configs}
            for top in _fastest(swept)[:NO_HINT_TOP]:
                fields = {"variant": "no_divisor_hint", "config": top["config"], "divisor": 1}
                self.measure(fields, self.launcher(by_label[top["config"]], 1))


# --- parent side: what the sweep found ---------------------------------------------------------


def _key(record: dict[str, Any]) -> tuple[tuple[int, ...], str]:
    return tuple(record["shape"]), record["dtype"]


def _setting(r: dict[str, Any]) -> str:
    if r.get("tune") == "matmul":
        return "shipped (autotuned)" if r.get("variant") == "shipped" else str(r.get("config"))
    text = f"{r.get('grid')} w{r.get('num_warps')} s{r.get('num_stages')}"
    if r.get("grid") == "persistent" and r.get("programs_per_sm") is not None:
        text += f" {r['programs_per_sm']}/SM"
    return text if r.get("variant") != "shipped" else f"shipped ({text})"


def summarize(
    records: list[dict[str, Any]], copy_gbps: float | None, goals: list[tuple]
) -> dict[str, Any]:
    """Ratios against the ceilings, the fastest setting per shape, and the goals with it."""
    sm_refs = {_key(r): r for r in records if r.get("tune") == "softmax_ref"}
    mm_refs = {_key(r): r for r in records if r.get("tune") == "matmul_ref"}
    read_flush = {_key(r): r for r in records if r.get("tune") == "softmax_read_flush"}
    picks = {_key(r): r["config"] for r in records if r.get("tune") == "matmul_autotune_pick"}
    softmax = [r for r in records if r.get("tune") == "softmax"]
    matmul = [r for r in records if r.get("tune") == "matmul"]
    for r in softmax:
        ref = sm_refs.get(_key(r), {})
        if r.get("gbps") and copy_gbps:
            r["frac_copy"] = r["gbps"] / copy_gbps
        if r.get("median_us") and ref.get("copy_us"):
            r["frac_same_size_copy"] = ref["copy_us"] / r["median_us"]
    for r in matmul:
        ref = mm_refs.get(_key(r), {})
        if r.get("median_us") and ref.get("torch_us"):
            r["frac_torch"] = ref["torch_us"] / r["median_us"]

    def fastest(rows: list[dict[str, Any]], key: tuple) -> dict[str, Any] | None:
        ok = [r for r in rows if _key(r) == key and r.get("median_us")]
        return min(ok, key=lambda r: r["median_us"]) if ok else None

    def shipped(rows: list[dict[str, Any]], key: tuple) -> dict[str, Any] | None:
        return next((r for r in rows if _key(r) == key and r.get("variant") == "shipped"), None)

    softmax_best = []
    for key, ref in sm_refs.items():
        best, ship = fastest(softmax, key), shipped(softmax, key)
        entry: dict[str, Any] = {"shape": list(key[0]), "dtype": key[1], "best": best,
                                 "shipped": ship, "torch_us": ref.get("torch_us"),
                                 "copy_us": ref.get("copy_us")}  # fmt: skip
        if ref.get("copy_us") and copy_gbps:
            entry["copy_frac_copy"] = ref["bytes_moved"] / (ref["copy_us"] * 1e-6) / 1e9 / copy_gbps
        flush = read_flush.get(key)
        if flush and ref.get("copy_read_flush_us"):
            entry["read_flush_best_us"] = flush["median_us"]
            entry["read_flush_copy_us"] = ref["copy_read_flush_us"]
            entry["read_flush_frac_same_size_copy"] = ref["copy_read_flush_us"] / flush["median_us"]
        softmax_best.append(entry)
    matmul_best = []
    for key, ref in mm_refs.items():
        sweep = [r for r in matmul if r.get("variant") == "sweep"]
        no_hint = [r for r in matmul if _key(r) == key and r.get("variant") == "no_divisor_hint"]
        matmul_best.append(
            {"shape": list(key[0]), "dtype": key[1], "best": fastest(sweep, key),
             "shipped": shipped(matmul, key), "autotune_pick": picks.get(key),
             "torch_us": ref.get("torch_us"), "no_divisor_hint": no_hint}
        )  # fmt: skip
    goals_best = []
    for op, shape, dtype, metric, threshold in goals:
        rows = softmax if op == "softmax" else matmul if op == "matmul" else []
        # Settings the kernel can ship: not the matmul without its DIVISOR hint.
        rows = [r for r in rows if r.get("variant") != "no_divisor_hint"]
        best = fastest(rows, (tuple(shape), dtype))
        value = best.get(metric) if best else None
        goals_best.append(
            {"op": op, "shape": list(shape), "dtype": dtype, "metric": metric,
             "threshold": threshold, "value": value, "setting": best and _setting(best),
             "met": value is not None and value >= threshold}
        )  # fmt: skip
    return {
        "softmax": softmax,
        "softmax_refs": list(sm_refs.values()),
        "softmax_best": softmax_best,
        "matmul": matmul,
        "matmul_refs": list(mm_refs.values()),
        "matmul_best": matmul_best,
        "goals_best": [g for g in goals_best if g["op"] in ("softmax", "matmul")],
        "precompile": [r for r in records if r.get("tune") == "precompile"],
        "worker_failures": [r for r in records if r.get("tune") == "worker_failed"],
    }


def _fmt(value: Any, spec: str, scale: float = 1.0) -> str:
    return "" if value is None else format(value * scale, spec)


def _shape(shape: list[int]) -> str:
    return "x".join(map(str, shape))


def markdown(tune: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Tune: softmax, fastest setting per shape",
        "",
        "% copy: of the 1 GiB copy (the goal's ceiling); % same-size copy: of a copy of the same "
        "bytes under the same flush. Read-only flush: L2 holds no dirty lines when the call starts.",
        "",
        "| shape | dtype | fastest | us | GB/s | % copy | % same-size copy | shipped | us | % copy | "
        "torch us | same-size copy us | its % of 1 GiB copy | read-only flush: fastest us | copy us | % |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in tune["softmax_best"]:
        b, s = e["best"] or {}, e["shipped"] or {}
        lines.append(
            f"| {_shape(e['shape'])} | {e['dtype']} | {_setting(b) if b else 'none'} | "
            f"{_fmt(b.get('median_us'), '.1f')} | {_fmt(b.get('gbps'), '.0f')} | "
            f"{_fmt(b.get('frac_copy'), '.1f', 100)} | {_fmt(b.get('frac_same_size_copy'), '.1f', 100)} | "
            f"{_setting(s) if s else ''} | {_fmt(s.get('median_us'), '.1f')} | "
            f"{_fmt(s.get('frac_copy'), '.1f', 100)} | {_fmt(e.get('torch_us'), '.1f')} | "
            f"{_fmt(e.get('copy_us'), '.1f')} | {_fmt(e.get('copy_frac_copy'), '.1f', 100)} | "
            f"{_fmt(e.get('read_flush_best_us'), '.1f')} | {_fmt(e.get('read_flush_copy_us'), '.1f')} | "
            f"{_fmt(e.get('read_flush_frac_same_size_copy'), '.1f', 100)} |"
        )
    lines += [
        "",
        "## Tune: matmul, fastest config per shape",
        "",
        "| shape (MxNxK) | dtype | DIVISOR | fastest | us | TFLOP/s | % torch | shipped (autotune pick) | us | % torch | torch us | without DIVISOR: config us |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in tune["matmul_best"]:
        b, s = e["best"] or {}, e["shipped"] or {}
        no_hint = ", ".join(
            f"{r['config']} {_fmt(r.get('median_us'), '.1f')}" for r in e["no_divisor_hint"]
        )
        lines.append(
            f"| {_shape(e['shape'])} | {e['dtype']} | {b.get('divisor', s.get('divisor', ''))} | "
            f"{b.get('config', 'none')} | {_fmt(b.get('median_us'), '.1f')} | {_fmt(b.get('tflops'), '.0f')} | "
            f"{_fmt(b.get('frac_torch'), '.1f', 100)} | {e.get('autotune_pick') or ''} | "
            f"{_fmt(s.get('median_us'), '.1f')} | {_fmt(s.get('frac_torch'), '.1f', 100)} | "
            f"{_fmt(e.get('torch_us'), '.1f')} | {no_hint} |"
        )
    lines += [
        "",
        "## Goals with the fastest setting found",
        "",
        "| op | shape | dtype | metric | value | goal | met | setting |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for g in tune["goals_best"]:
        lines.append(
            f"| {g['op']} | {_shape(g['shape'])} | {g['dtype']} | {g['metric']} | {_fmt(g['value'], '.3f')} | "
            f"{g['threshold']} | {'yes' if g['met'] else 'NO'} | {g['setting'] or ''} |"
        )
    lines += ["", "## Tune: every softmax measurement", "",
              "| shape | dtype | setting | programs | ok | us | GB/s | % copy | % same-size copy |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in tune["softmax"]:
        lines.append(
            f"| {_shape(r['shape'])} | {r['dtype']} | {_setting(r)} | {r.get('programs', '')} | "
            f"{'yes' if r.get('ok') else 'NO: ' + str(r.get('error', ''))[:100].replace('|', '/')} | "
            f"{_fmt(r.get('median_us'), '.1f')} | {_fmt(r.get('gbps'), '.0f')} | "
            f"{_fmt(r.get('frac_copy'), '.1f', 100)} | {_fmt(r.get('frac_same_size_copy'), '.1f', 100)} |"
        )
    lines += ["", "## Tune: every matmul measurement", "",
              "| shape (MxNxK) | dtype | variant | config | in the shipped list | ok | us | TFLOP/s | % torch |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in tune["matmul"]:
        lines.append(
            f"| {_shape(r['shape'])} | {r['dtype']} | {r.get('variant')} | {r.get('config')} | "
            f"{'yes' if r.get('shipped') else ''} | "
            f"{'yes' if r.get('ok') else 'NO: ' + str(r.get('error', ''))[:100].replace('|', '/')} | "
            f"{_fmt(r.get('median_us'), '.1f')} | {_fmt(r.get('tflops'), '.0f')} | "
            f"{_fmt(r.get('frac_torch'), '.1f', 100)} |"
        )
    for f in tune["worker_failures"]:
        lines += ["", f"## Tune: the {f['kind']} sweep stopped", "", "```", f["error"], "```"]
    lines += ["", "## Tune: compiling ahead", ""]
    for p in tune["precompile"]:
        lines.append(
            f"- {p['kind']}: {p['compiled']}/{p['tasks']} compiled by {p['processes']} processes in "
            f"{p['wall_s']:.0f} s ({p['compile_s_total']:.0f} s of compiling)"
            + (f"; {p['error']}" if p.get("error") else "")
            + (f"; {len(p['failed'])} failed, first: {p['failed'][:3]}" if p["failed"] else "")
        )
    return lines


def best_lines(tune: dict[str, Any]) -> list[str]:
    """One line per shape for the console: the fastest setting and how far it gets."""
    out = [f"the {f['kind']} sweep stopped: {f['error'][-300:]}" for f in tune["worker_failures"]]
    for e in tune["softmax_best"]:
        b = e["best"]
        if b:
            out.append(
                f"softmax {_shape(e['shape'])} {e['dtype']}: {_setting(b)} {b['median_us']:.1f} us, "
                f"{_fmt(b.get('frac_copy'), '.1f', 100)}% of copy, "
                f"{_fmt(b.get('frac_same_size_copy'), '.1f', 100)}% of a same-size copy"
            )
    for e in tune["matmul_best"]:
        b = e["best"]
        if b:
            out.append(
                f"matmul {_shape(e['shape'])} {e['dtype']}: {b['config']} {b['median_us']:.1f} us, "
                f"{_fmt(b.get('frac_torch'), '.1f', 100)}% of torch.matmul "
                f"(autotuned: {e.get('autotune_pick')})"
            )
    return out
