"""The worker process: runs one side's bench entry points (base or head) on one device.

Started by ``checks.sweep.workers`` as ``python -I -B -u worker_main.py --cmd-fd R --resp-fd W --root DIR
--device cpu|cuda --side base|head [--python-path SUB ...]``. Isolated mode keeps the current
directory, PYTHONPATH and the user site out of ``sys.path``; the worker then puts its checkout (its
``--python-path`` folders, then its root, and nothing else) in front, so base and head never see
each other's modules. An entry point is ``module:function``, or a benchmark the checkout already
has, named by file (``perf_report:PATH:NAME``, ``do_bench:PATH:FUNCTION``; see
``checks/bench_entries/bench_capture.py``). Commands arrive as JSON lines on fd R and answers
leave on fd W; the measured code's own stdout and stderr go to a log file and cannot corrupt the
channel. The sibling modules this program uses are loaded by file path under private names, so a
checkout that has its own ``checks`` package does not shadow them.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import importlib
import importlib.util
import math
import os
import select
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the types only: the worker loads ``contract.py`` by path (``_sibling``)
    from checks.worker.contract import (
        Block,
        BlockReply,
        CeilingsReply,
        Check,
        CheckReply,
        Configure,
        ConfigureReply,
        Env,
        EnvReply,
        Estimate,
        EstimateReply,
        Finish,
        FinishReply,
        Hello,
        HelloReply,
        Launched,
        MeasureCeilings,
        Pick,
        Prepare,
        PrepareReply,
        Replays,
        ReplaysReply,
        Warmup,
        WarmupReply,
    )

_HERE = os.path.dirname(os.path.abspath(__file__))
MAX_COUNT = 2**53  # bytes and flops of one call: larger is no real kernel (and no JSON number)


def _sibling(name: str, folder: str = _HERE) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"_kernel_review_worker_{name}", os.path.join(folder, f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


timing = _sibling("timing")
telemetry = _sibling("telemetry")
correctness = _sibling("correctness")
fingerprint = _sibling("env_fingerprint")
ceilings = _sibling("ceilings")
failures = _sibling("failures")
bench_capture = _sibling("bench_capture", os.path.join(os.path.dirname(_HERE), "bench_entries"))
triton_key = _sibling("triton_key")
driver_utils = _sibling("driver_utils")
exclusive = _sibling("exclusive")
autotune_picks = _sibling("autotune_picks")
launches = _sibling("launches", os.path.join(os.path.dirname(_HERE), "bench_entries"))
exiting = _sibling("exiting")
contract = _sibling("contract")
classify = failures.classify


def warm_triton_key(places: list[str], key_dir: str | None = None) -> threading.Event | None:
    """Start making Triton's key in a thread (every compile and every cache lookup needs it, and
    a process makes it once, on its first: hashing about 400 MB, 0.35 s and more, unless it was
    kept in ``key_dir`` by an earlier run, ``triton_key.py``): meanwhile torch imports and the GPU
    warms up, rather than the first case waiting for it. The event is set once Triton is
    imported (then the checkout may join ``sys.path``); ``join_warm`` waits for the key. None,
    and nothing started, where Triton is not installed or one of ``places`` has a ``triton`` of
    its own (that one is what the checkout's code imports)."""
    if any(os.path.exists(os.path.join(d, "triton")) for d in places):
        return None
    if importlib.util.find_spec("triton") is None:
        return None
    imported = threading.Event()

    def run() -> None:
        try:
            import triton.runtime.cache  # noqa: F401
        except BaseException:
            return
        finally:
            imported.set()
        with contextlib.suppress(Exception):  # a broken install is the first compile's to report
            triton_key.warm(key_dir)
        MARKS["key_at"] = time.monotonic()

    thread = threading.Thread(target=run, name="triton-key", daemon=True)
    thread.start()
    _WARMING.append(thread)
    return imported


_WARMING: list[threading.Thread] = []
_DRIVER: list[threading.Thread] = []
_UTILS: list[threading.Thread] = []
# time.monotonic() when the worker's program began (``main_at``), its torch had the GPU
# (``torch_at``), its start was done (``ready_at``), each start-up thread ended (``key_at``,
# ``utils_at``, ``driver_at``, ``checks_at``) and its GPU context was asked for and made
# (``context_asked_at``, ``context_at``): ``hello`` answers those set by then, the first check
# all of them
MARKS: dict[str, float] = {}


def _join(threads: list[threading.Thread]) -> None:
    while threads:
        threads.pop().join()


def join_warm() -> None:
    """Wait for ``warm_triton_key``'s thread, if one still runs."""
    _join(_WARMING)


def build_driver_utils_ahead() -> threading.Thread:
    """Build Triton's driver utilities (C, with the system's compiler: 0.3 s on the H200 host) in
    a thread from the worker's start, beside its GPU context's creation: on the sweep's fresh
    Triton cache every worker builds them once, and built by ``load_triton_driver`` once torch
    had the GPU they had kept the first check waiting. Only the build, which needs no GPU: the
    vendor is torch's (``torch.version``, which does not touch a GPU either)."""

    def run() -> None:
        with contextlib.suppress(Exception):  # a failed build is the driver's to report
            import torch

            if getattr(torch.version, "hip", None):
                from triton.backends.amd import driver as amd

                amd.HIPUtils()
            elif getattr(torch.version, "cuda", None):
                from triton.backends.nvidia import driver as nvidia

                nvidia.CudaUtils()
        MARKS["utils_at"] = time.monotonic()

    thread = threading.Thread(target=run, name="triton-utils", daemon=True)
    thread.start()
    _UTILS.append(thread)
    return thread


def load_triton_driver() -> threading.Thread:
    """Load Triton's GPU driver in a thread. On a cold Triton cache (a sweep's own, every run)
    it builds its C utilities with the C compiler, which a process otherwise does at its first
    kernel launch: inside a case's first call, under the GPU's lock, one side after the other.
    Started once Triton is imported and torch has the GPU (the driver asks torch for the
    device); the first check waits for it (``join_driver``) before the checkout's code runs."""

    def run() -> None:
        _join(_UTILS)  # the utilities, if ``build_driver_utils_ahead`` builds them
        with contextlib.suppress(Exception):  # a broken driver is the first launch's to report
            from triton.runtime import driver

            driver.active.get_current_target()
        driver_utils.import_launch_modules()  # none left to import once forked from the zygote
        MARKS["driver_at"] = time.monotonic()

    thread = threading.Thread(target=run, name="triton-driver", daemon=True)
    thread.start()
    _DRIVER.append(thread)
    return thread


def join_driver() -> None:
    """Wait for ``load_triton_driver``'s thread, if one still runs."""
    _join(_DRIVER)


# The commands that may run while the checks' functions load (``load_checks_ahead``) are those
# the contract marks ``BESIDE_LOADING``: every other waits for them first, so nothing of theirs
# runs on the GPU while a worker times. A check times nothing, and its compile (seconds of CPU)
# overlaps the loading; the loading's own kernels (on 4096 elements) may then run beside another
# worker's first call, which an autotuner times.


CONTEXT_WAIT_S = 3.0  # the longest a worker waits for the marks of ``--context-after``


def load_checks_ahead(
    torch: Any, *, after: Sequence[str] = (), mark: str | None = None
) -> threading.Thread:
    """Make the GPU context, then run the checks once on small outputs, in a thread
    (``correctness.exercise``): a GPU loads each of their functions on its first call, which
    took a fresh worker's first recheck 0.2 s on the H200. Started once the worker's torch has
    the GPU; it runs beside the start of the other workers, the warm-up and the first check
    (``BESIDE_LOADING``); in the warm-up it had kept the workers 0.8 s on the H200 once the GPU
    was warm.

    The driver makes the contexts of processes that ask at once side by side, each slower: four
    workers' took 0.40-0.44 s each, one alone 0.11-0.14 s on the H200
    (``bench/results/h200/start_diag/contexts.md``). The crossover's second pair, which the
    first case needs only after the first pair's check, makes its context once the files
    ``after`` exist (the first pair's ``mark``, written once its context is made or could not
    be), or ``CONTEXT_WAIT_S`` has passed."""

    def run() -> None:
        deadline = time.monotonic() + CONTEXT_WAIT_S
        while after and time.monotonic() < deadline:
            if all(os.path.exists(p) for p in after):
                break
            time.sleep(0.005)
        MARKS["context_asked_at"] = time.monotonic()
        try:
            with contextlib.suppress(Exception):  # a fault here is the first command's to meet
                torch.zeros(1, device="cuda")
                torch.cuda.synchronize()
            MARKS["context_at"] = time.monotonic()
        finally:
            if mark:
                with contextlib.suppress(OSError):
                    os.makedirs(os.path.dirname(mark), exist_ok=True)
                    with open(mark, "w", encoding="utf-8"):
                        pass
        with contextlib.suppress(Exception):
            correctness.exercise(torch, "cuda")
            torch.cuda.synchronize()
        MARKS["checks_at"] = time.monotonic()

    thread = threading.Thread(target=run, name="load-checks", daemon=True)
    thread.start()
    return thread


class EntryError(Exception):
    """The entry point is missing or returned something the contract does not allow."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Worker:
    def __init__(self, root: str, device: str, side: str, slot: int = 1) -> None:
        self.root, self.device, self.side, self.slot = root, device, side, slot
        self.torch: Any = None
        self.nvml: Any = None
        self.timer: Any = None
        self.items: list[dict[str, Any]] = []
        self.case: dict[str, Any] = {}
        self.loading: threading.Thread | None = None  # ``load_checks_ahead``, once started
        # whether the checkout's code (or a burn) may have left GPU memory since the last
        # release: a release with nothing to free does not wait for the GPU, which at a worker's
        # first command still loads the checks' functions (``load_checks_ahead``) and had kept
        # the first check 0.3 s on the H200
        self.held = False
        self.marks_told = False  # the first check's answer tells ``MARKS``, the threads' too
        # what importing an entry raised, by its candidates: raised again for each later case
        self.import_failures: dict[tuple[str, ...], Exception] = {}

    # ----------------------------------------------------------------------------- utilities

    def _torch(self) -> Any:
        if self.torch is None and (self.device != "cpu" or "torch" in sys.modules):
            import torch

            self.torch = torch
            if self.device != "cpu":
                torch.cuda.init()
                if self.nvml is None:
                    props = torch.cuda.get_device_properties(0)
                    uuid = getattr(props, "uuid", None)
                    self.nvml = telemetry.Nvml.open(str(uuid) if uuid else None, 0)
        return self.torch

    def _sync(self) -> None:
        if self.device != "cpu":
            self._torch().cuda.synchronize()

    def _resolve(self, candidates: Sequence[str]) -> tuple[str, Any]:
        join_warm()  # before the checkout's code is imported (the warm-up usually waited already)
        join_driver()
        failed = self.import_failures.get(tuple(candidates))
        if failed is not None:  # not imported again: a half-imported package fails otherwise
            raise failed
        try:
            return bench_capture.first_entry(list(candidates), self.root)
        except bench_capture.NotFound as exc:
            raise EntryError("missing_entry", str(exc)) from None
        except bench_capture.BadBenchmark as exc:
            raise EntryError("error", str(exc)) from None
        except Exception as exc:
            self.import_failures[tuple(candidates)] = exc
            raise

    def _call_entry(self, fn: Any, shape: Sequence[int], dtype: str, seed: int) -> dict[str, Any]:
        self.held = True
        item = fn(tuple(shape), dtype, device=self.device, seed=seed)
        if not isinstance(item, dict) or not callable(item.get("fn")):
            raise EntryError("error", "the entry point must return a dict with a callable 'fn'")
        if item.get("checked") is not None and not callable(item["checked"]):
            raise EntryError(
                "error",
                "the entry point's 'checked' must be a callable taking what 'fn' returned",
            )
        for key in ("bytes_moved", "flops"):
            value = item.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                raise EntryError(
                    "error", f"the entry point's {key!r} must be an int from 0 to 2**53"
                )
        return item

    def _l2_bytes(self) -> int:
        if self.device == "cpu":
            return 0
        props = self._torch().cuda.get_device_properties(0)
        return int(getattr(props, "L2_cache_size", 0) or 0)

    # ------------------------------------------------------------------------------ commands

    def op_hello(self, msg: Hello) -> HelloReply:
        problem = contract.version_problem(msg.version, "bot")
        if problem:
            raise EntryError("error", problem)
        return contract.HelloReply(
            version=contract.VERSION,
            pid=os.getpid(),
            python=sys.version.split()[0],
            side=self.side,
            root=self.root,
            gc_frozen=gc.get_freeze_count(),
            **MARKS,  # when its program began and its torch was ready (system monotonic clock)
        )

    def op_env(self, msg: Env) -> EnvReply:
        torch = self._torch() if self.device != "cpu" else sys.modules.get("torch")
        nv = self.nvml.static_info() if self.nvml else None
        env = fingerprint.collect(self.device, torch=torch, nvml_info=nv)
        return contract.EnvReply(env)

    def op_prepare(self, msg: Prepare) -> PrepareReply:
        self._release()
        t0 = time.perf_counter()
        spec, fn = self._resolve(msg.entries)
        shape, dtype, seed = msg.shape, msg.dtype, msg.seed
        self._torch()
        if os.environ.get(exclusive.GPU_LOCK_ENV):  # counted as the check counts it
            exclusive.yield_while_compiling()
        spent = sum(exclusive.SPENT.values())
        first = self._call_entry(fn, shape, dtype, seed)
        first["restore"] = correctness.keep_inputs(first.get("inputs"))  # the recheck's calls
        footprint = int(first.get("bytes_moved") or 0) or _nbytes(first.get("inputs"))
        copies = timing.input_copies(
            footprint,
            self._l2_bytes() if self.device != "cpu" else None,
            max_copies=timing.MAX_COPIES if msg.max_copies is None else msg.max_copies,
            max_bytes=2**31 if msg.max_copy_bytes is None else msg.max_copy_bytes,
        )
        if msg.copies:
            copies = msg.copies  # the caller keeps two sides' rotations alike
        self.items = [first] + [
            self._call_entry(fn, shape, dtype, seed + i) for i in range(1, copies)
        ]
        # compile / autotune / first-touch before any timing; ``pins``: the configs this side's
        # checking worker timed, so that every worker of a side times the same one
        with autotune_picks.recording(_pins(msg), _case_id(msg)) as picks:
            for item in self.items:
                item["fn"]()
            self._sync()
        fns = [item["fn"] for item in self.items]
        if self.device == "cpu":
            self.timer = timing.CpuTimer(fns)
        else:
            torch = self._torch()
            self.timer = timing.CudaTimer(
                fns,
                torch,
                l2_bytes=self._l2_bytes(),
                make_mark=lambda: _sibling("mark_kernel").marker(torch),
            )
        # Several workers prepare side by side; the parent then asks each for its estimate in
        # turn, so no estimate times another process's GPU work.
        est = self.timer.estimate_us() if msg.estimate else None
        self.case = {"entry": spec, "shape": shape, "dtype": dtype}
        return contract.PrepareReply(
            entry=spec,
            est_us=est,
            host_us=getattr(self.timer, "host_us", None) if est is not None else None,
            bytes_moved=int(first.get("bytes_moved") or 0),
            flops=int(first.get("flops") or 0),
            copies=copies,
            footprint_bytes=footprint,
            prepare_s=time.perf_counter() - t0,
            configs_picked=_picks(picks),
            compile_s=sum(exclusive.SPENT.values()) - spent,
        )

    def op_estimate(self, msg: Estimate) -> EstimateReply:
        if self.timer is None:
            raise EntryError("error", "estimate before prepare")
        est = self.timer.estimate_us()
        return contract.EstimateReply(est_us=est, host_us=getattr(self.timer, "host_us", None))

    def op_check(self, msg: Check) -> CheckReply:
        step = Steps()
        self._release()
        self._torch()
        join_warm()
        step("wait_key")
        join_driver()
        step("wait_driver")
        _, fn = self._resolve(msg.entries)
        step("resolve")
        item = self._call_entry(fn, msg.shape, msg.dtype, msg.seed)
        step("inputs")
        restore = correctness.keep_inputs(item.get("inputs"))  # each call gets the inputs made
        ref_fn = item.get("reference")
        ref = correctness.own_outputs(ref_fn(), item.get("inputs")) if callable(ref_fn) else None
        self._sync()
        restore()
        step("reference")
        # the first call compiles and autotunes: alone on the GPU (``exclusive``), Triton's
        # compiles and loads with the lock let go (the checkout has imported its Triton by now)
        # (and which config each autotuner kept is recorded: the timed runs use it)
        lock = os.environ.get(exclusive.GPU_LOCK_ENV)
        if lock:
            exclusive.yield_while_compiling()
        spent = dict(exclusive.SPENT)
        alone = exclusive.exclusive(lock)
        # the kernels launched: on the CPU those of the first call itself (an interpreted call
        # takes as long as its kernels: one more had doubled a large case's check), on a GPU
        # those of one more call after the check (``_launch_call``), outside compiling and tuning
        first_launches = bool(msg.launches) and self.device == "cpu"
        recorder = (
            launches.recording(self.torch, self.device, (timing.MARKER,))
            if first_launches
            else contextlib.nullcontext({})
        )
        if ref is None:
            with (
                alone,
                autotune_picks.recording(_pins(msg), _case_id(msg)) as picks,
                recorder as record,
            ):
                step("lock_wait")
                sizing = item["fn"]()
                self._sync()
                step("first_call")
            correctness.poison(correctness.flatten_outputs(sizing))
            del sizing
            restore()
            out = item["fn"]()
        else:
            correctness.poison(correctness.flatten_outputs(ref))
            step("poison")
            with (
                alone,
                autotune_picks.recording(_pins(msg), _case_id(msg)) as picks,
                recorder as record,
            ):
                step("lock_wait")
                out = item["fn"]()
                self._sync()
                step("first_call")
        self._sync()
        for name, before in spent.items():  # how much of the first call compiled and loaded
            step.seconds[f"first_call_{name}"] = round(exclusive.SPENT[name] - before, 6)
        # the entry point's own tolerance (None: each output's dtype decides, here and when the
        # parent compares base's digest with head's)
        atol, rtol = _tolerance(item, "atol"), _tolerance(item, "rtol")
        result: dict[str, Any] = {
            "has_reference": ref is not None,
            "atol": atol,
            "rtol": rtol,
            "configs_picked": picks,
        }
        out, ref = _checked(item, out), _checked(item, ref)
        step("checked")
        if ref is not None:
            result.update(correctness.compare(out, ref, atol=atol, rtol=rtol))
        else:
            result.update({"ok": True, "bad_elements": 0, "max_abs_err": None, "message": ""})
        step("compare")
        result["correct"] = result.pop("ok")
        result["digest"] = correctness.digest(out)
        step("digest")
        del out, ref
        if first_launches:
            result["launched"] = _as_launched(record)
        elif msg.launches:
            result["launched"] = self._launch_call(
                item, restore, lock, profiler=msg.launches == "profiler"
            )
            step("launches")
        del item, restore
        self._release()
        step("release")
        if not self.marks_told:
            self.marks_told = True
            result["marks"] = contract.Marks(**MARKS)
        result["configs_picked"] = _picks(result["configs_picked"])
        result["digest"] = tuple(contract.from_json(contract.Digest, d) for d in result["digest"])
        return contract.CheckReply(**result, steps_s=step.seconds)

    def _launch_call(
        self, item: dict[str, Any], restore: Any, lock: str | None, *, profiler: bool
    ) -> Launched:
        """On a GPU, one more call of the case, on the inputs the entry point made, its kernels
        recorded (``launches.recording``; ``profiler``: every kernel, else Triton's launches
        alone): what the timed calls launch, once the first call compiled and tuned. Alone on
        the GPU, as the first call was (another worker's autotuner may be timing its configs);
        a call that fails here is said in the record, not raised."""
        restore()
        try:
            recorder = launches.recording(
                self.torch, self.device, (timing.MARKER,), profiler=profiler
            )
            before = self._allocations()
            with recorder as record, exclusive.exclusive(lock):
                out = item["fn"]()
                self._sync()
            after = self._allocations()
            returned = _storages(correctness.flatten_outputs(out))
            del out
        except Exception as exc:
            note = f"not recorded: its call raised {type(exc).__name__}: {exc}"
            return contract.Launched(kernels=(), profiler=False, note=note[: launches.MAX_NAME])
        finally:
            restore()
        made = None if before is None or after is None else max(0, after - before - returned)
        return _as_launched(record, made)

    def _allocations(self) -> int | None:
        """The device allocations this process has made so far (the caching allocator's count
        of requests, served from its cache or not); None on the CPU or where it keeps none."""
        if self.device == "cpu" or self.torch is None:
            return None
        try:
            return int(self.torch.cuda.memory_stats().get("allocation.all.allocated", 0))
        except Exception:
            return None

    def op_configure(self, msg: Configure) -> ConfigureReply:
        if self.timer is None:
            raise EntryError("error", "configure before prepare")
        like = contract.as_json(msg.like) if msg.like is not None else None
        try:
            got = self.timer.configure(
                msg.mode,
                msg.block_ms,
                est_us=msg.est_us or None,
                like=like,
                preroll=msg.preroll,
                time_replays=msg.time_replays,
            )
        except Exception as exc:
            if msg.mode == "graph" and classify(exc) == "error":
                raise EntryError("graph_capture", f"CUDA graph capture failed: {exc}") from exc
            if msg.mode.startswith("kernels") and classify(exc) == "error":
                raise EntryError(
                    "kernel_timing", f"timing by the GPU's busy time failed: {exc}"
                ) from exc
            raise
        return contract.from_json(contract.ConfigureReply, got)

    def op_replays(self, msg: Replays) -> ReplaysReply:
        """A captured graph's replays per block: given, or timed now for ``block_ms``."""
        set_replays = getattr(self.timer, "set_replays", None)
        if set_replays is None:
            raise EntryError("error", "replays before a graph was configured")
        if msg.replays:
            got = set_replays(replays=msg.replays)
        else:
            got = set_replays(block_ms=msg.block_ms)
        return contract.from_json(contract.ReplaysReply, got)

    def op_block(self, msg: Block) -> BlockReply:
        out = self.timer.block()
        tel = self.nvml.read() if self.nvml else None
        # built as it is, and checked once, as its line is written (``contract.encode_reply``)
        return contract.BlockReply(**out, telemetry=contract.Telemetry(**tel) if tel else None)

    def op_finish(self, msg: Finish) -> FinishReply:
        """Recheck the timed copy's output against its reference, then free everything."""
        step = Steps()
        result: dict[str, Any] = {"rechecked": False, "correct": True, "message": ""}
        if msg.recheck and self.items and callable(self.items[0].get("reference")):
            item = self.items[0]
            # ``alone``: another pair checks the next case meanwhile, its first call autotuning
            # (``exclusive``): the recheck's calls wait for it (at most ``lock_wait_s``: a check
            # that hangs holding the lock must not fail this case) and keep it waiting
            alone = msg.alone
            lock = os.environ.get(exclusive.GPU_LOCK_ENV) if alone else None
            wait = msg.lock_wait_s
            with exclusive.exclusive(lock, wait) as held:
                step("lock_wait")
                item["restore"]()
                out = correctness.own_outputs(item["fn"](), item.get("inputs"))
                self._sync()
                item["restore"]()
                ref = item["reference"]()
                self._sync()
            step("calls")
            out, ref = _checked(item, out), _checked(item, ref)
            cmp = correctness.compare(
                out, ref, atol=_tolerance(item, "atol"), rtol=_tolerance(item, "rtol")
            )
            step("compare")
            result = {"rechecked": True, "correct": cmp["ok"], "message": cmp["message"]}
            if lock and not held:
                result["lock_not_taken_s"] = float(wait or 0.0)
        self._release()
        step("release")
        return contract.FinishReply(**result, steps_s=step.seconds)

    def op_warmup(self, msg: Warmup) -> WarmupReply:
        """Keep the GPU busy until its SM clock holds at ``clock_fraction`` of its maximum
        (three readings in a row, at least ``min_s``). With ``unless_up``, nothing is burnt
        when the clock already reads up: the work before (an autotuner's benchmarks) kept it
        there, or the sweep's early warm-up (``warmer.py``) did."""
        if self.device == "cpu":
            return contract.WarmupReply(seconds=0.0, reached=True, sm_clock_mhz=None)
        torch = self._torch()
        t0 = time.perf_counter()
        good, reading = 0, None
        min_s, max_s, frac = msg.min_s, msg.max_s, msg.clock_fraction
        if msg.unless_up and self.nvml:
            reading = self.nvml.read()
            if clock_up(reading, frac):
                join_warm()
                return contract.WarmupReply(
                    seconds=time.perf_counter() - t0,
                    reached=True,
                    skipped=True,
                    sm_clock_mhz=reading.get("sm_clock_mhz"),
                )
        self.held = True
        while time.perf_counter() - t0 < max_s:
            timing.burn(torch, "cuda", 0.05)
            reading = self.nvml.read() if self.nvml else None
            up = reading is None or clock_up(reading, frac) is not False
            good = good + 1 if up else 0
            if good >= 3 and time.perf_counter() - t0 >= min_s:
                break
        join_warm()  # Triton's key was made meanwhile
        return contract.WarmupReply(
            seconds=time.perf_counter() - t0,
            reached=good >= 3,
            sm_clock_mhz=reading.get("sm_clock_mhz") if reading else None,
        )

    def start_loading_checks(self, *, after: Sequence[str] = (), mark: str | None = None) -> None:
        """Make the GPU context and load the checks' GPU functions in a thread
        (``load_checks_ahead``), once."""
        if self.loading is None and self.device != "cpu" and self.torch is not None:
            self.loading = load_checks_ahead(self.torch, after=after, mark=mark)

    def join_loading(self) -> None:
        """Wait for the checks' functions, if they still load."""
        if self.loading is not None:
            self.loading.join()

    def op_ceilings(self, msg: MeasureCeilings) -> CeilingsReply:
        torch = self._torch() if self.device != "cpu" else sys.modules.get("torch")
        self.held = True
        return contract.CeilingsReply(ceilings.measure(torch, self.device))

    def _release(self) -> None:
        if self.timer is not None:
            self.timer.release()
        self.timer = None
        self.items = []
        self.case = {}
        if self.held and self.torch is not None and self.device != "cpu":
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()
        self.held = False


def clock_up(reading: dict[str, Any] | None, fraction: float) -> bool | None:
    """Whether an NVML reading has the SM clock at ``fraction`` of its maximum or above; None
    when the reading cannot tell (no reading, no maximum)."""
    top = reading.get("max_sm_clock_mhz") if reading else None
    if not reading or not top:
        return None
    return (reading.get("sm_clock_mhz") or 0) >= fraction * top


class Steps:
    """Seconds since the previous step, by name, for a command's answer (``steps_s``): where a
    check's or a recheck's time went."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 6)
        self._last = now


def _case_id(msg: Prepare | Check) -> tuple[Any, ...]:
    """What names a case in a check or prepare message: its entries, shape and dtype."""
    return (tuple(msg.entries), tuple(msg.shape), msg.dtype)


def _pins(msg: Prepare | Check) -> list[dict[str, Any]] | None:
    """A check's or prepare's pins as ``autotune_picks.recording`` reads them."""
    return [contract.as_json(p) for p in msg.pins] if msg.pins else None


def _picks(picks: list[dict[str, Any]]) -> tuple[Pick, ...]:
    """The picks ``autotune_picks.recording`` made, as the contract's."""
    return tuple(contract.from_json(contract.Pick, p) for p in picks)


def _checked(item: dict[str, Any], out: Any) -> Any:
    """What is checked of an output of ``fn`` (or of the reference): the entry point's
    ``checked`` of it, outside every timed call (an operator whose outputs come in no fixed
    order, pairs appended with atomics, is compared sorted without timing the sort), else the
    output itself. None stays None (no reference)."""
    view = item.get("checked")
    return out if out is None or view is None else view(out)


def _as_launched(record: dict[str, Any], allocations: int | None = None) -> Launched:
    """What ``launches.recording`` recorded, as the contract's, with the device buffers the
    call allocated beyond those it returned."""
    kernels = tuple(contract.Launch(**k) for k in record["kernels"])
    return contract.Launched(kernels, record["profiler"], record["note"], allocations)


def _storages(outputs: Sequence[Any]) -> int:
    """How many distinct device buffers ``outputs`` (tensors, a view counted with what it views)
    live in."""
    seen = set()
    for x in outputs:
        with contextlib.suppress(Exception):
            if getattr(x, "is_cuda", False):
                seen.add(x.untyped_storage().data_ptr())
    return len(seen)


def _tolerance(item: dict[str, Any], key: str) -> float | None:
    """The entry point's own ``atol`` or ``rtol``: None, or a finite number of 0 or more."""
    value = item.get(key)
    if value is None:
        return None
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if correctness.tolerance_problem(key, number):
        raise EntryError(
            "error", f"the entry point's {key!r} must be a number of 0 or more, not {value!r}"
        )
    return number


def _nbytes(tensors: Any) -> int:
    total = 0
    for t in tensors or []:
        try:
            total += int(t.numel()) * int(t.element_size())
        except Exception:
            total += int(getattr(t, "nbytes", 0) or 0)
    return total


class Commands:
    """The command lines the bot sends, read from ``fd``. ``poll_s`` > 0: after a timed
    block's answer the next command is polled for that long before sleeping in ``select``
    (``checks.sweep.workers.POLL_MS``: during the rounds it comes a few ms later)."""

    def __init__(self, fd: int, poll_s: float = 0.0) -> None:
        self.fd, self.poll_s, self.buf = fd, poll_s, b""
        if poll_s > 0:
            os.set_blocking(fd, False)

    def next(self, polled: bool = False) -> bytes | None:
        """The next line (without its newline); None once the bot closed its end. ``polled``:
        after the answer to a command of the rounds (the contract's ``POLLED``)."""
        poll_until = time.monotonic() + self.poll_s if polled else 0.0
        while b"\n" not in self.buf:
            if self.poll_s > 0:
                try:
                    chunk = os.read(self.fd, 1 << 20)
                except BlockingIOError:
                    if time.monotonic() >= poll_until:
                        select.select([self.fd], [], [])
                    continue
            else:
                chunk = os.read(self.fd, 1 << 20)
            if not chunk:  # the bot is gone: a line it did not end is not a command
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line


def serve(worker: Worker, cmd_fd: int, resp_fd: int, poll_s: float = 0.0) -> None:
    cmds = Commands(cmd_fd, poll_s)
    resp = os.fdopen(resp_fd, "wb")
    polled = False
    while (line := cmds.next(polled)) is not None:
        if not line.strip():
            continue
        try:
            msg = contract.decode_request(line)
        except contract.ContractError as exc:  # a line of another program: it is not run
            polled = False
            resp.write(contract.encode_reply(contract.Failure("error", str(exc), "ContractError")))
            resp.flush()
            continue
        polled = msg.POLLED
        if isinstance(msg, contract.Quit):
            resp.write(contract.encode_reply(contract.QuitReply()))
            resp.flush()
            return
        if not msg.BESIDE_LOADING:
            worker.join_loading()
        try:
            answer = getattr(worker, f"op_{msg.OP}")(msg)
        except EntryError as exc:
            answer = contract.Failure(exc.kind, str(exc), "EntryError")
        except BaseException as exc:  # user code can raise anything, even SystemExit
            traceback.print_exc()
            sys.stderr.flush()
            why = failures.interpreter_reason(exc)
            answer = contract.Failure(
                kind=classify(exc),
                error=(
                    f"cannot run under the CPU interpreter: {why}; it needs a GPU"
                    if why
                    else f"{type(exc).__name__}: {exc}"
                )[:4000],
                type=type(exc).__name__,
                traceback=traceback.format_exc()[-4000:],
            )
        resp.write(contract.encode_reply(answer))
        resp.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernel-review-worker")
    parser.add_argument("--cmd-fd", type=int, required=True)
    parser.add_argument("--resp-fd", type=int, required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--side", choices=["base", "head"], required=True)
    parser.add_argument("--slot", type=int, choices=[1, 2], default=1)
    parser.add_argument("--triton-key-dir", help="where Triton's key is kept between runs")
    parser.add_argument(
        "--context-mark", help="a file to write once this worker's GPU context is made"
    )
    parser.add_argument(
        "--context-after",
        action="append",
        default=[],
        help="make the GPU context once this file exists (another worker's --context-mark)",
    )
    parser.add_argument(
        "--python-path",
        action="append",
        default=[],
        help="a folder of the checkout put on sys.path before the checkout itself (src/ layouts)",
    )
    parser.add_argument(
        "--bot-pid",
        type=int,
        help="the process that started this worker: once it is gone, the worker ends",
    )
    parser.add_argument(
        "--poll-ms",
        type=float,
        default=0.0,
        help="after a timed block, poll for the next command this long before sleeping",
    )
    MARKS["main_at"] = time.monotonic()
    args = parser.parse_args(argv)
    faulthandler.enable()
    exiting.end_with_parent(args.bot_pid)
    root = os.path.abspath(args.root)
    worker = Worker(root, args.device, args.side, args.slot)
    places = [os.path.join(root, p) for p in args.python_path] + [root]
    if args.device != "cpu":
        imported = warm_triton_key(places, args.triton_key_dir)
        if imported is not None:
            build_driver_utils_ahead()
        # torch and the GPU context first, before the first command: the parent starts every
        # worker at once, so their imports (seconds each) overlap instead of queueing behind the
        # commands. Before the checkout joins sys.path, so nothing in it can stand in for torch.
        # A failure here is the first command's to report.
        try:
            worker._torch()
            MARKS["torch_at"] = time.monotonic()
            worker.start_loading_checks(after=args.context_after, mark=args.context_mark)
        except BaseException:
            traceback.print_exc()
            worker.torch = worker.nvml = None
        if imported is not None:
            imported.wait()
            if worker.torch is not None:
                load_triton_driver()
    MARKS["ready_at"] = time.monotonic()
    sys.path[:0] = places
    os.chdir(root)
    # torch's and Triton's objects stay out of the garbage collector's passes (each a pause in
    # whatever command it lands in); what the checkout's code makes is still collected
    gc.freeze()
    serve(worker, args.cmd_fd, args.resp_fd, max(0.0, args.poll_ms) / 1000.0)
    return 0


if __name__ == "__main__":
    exiting.end_now(main())  # answered quit: nothing is left to tear down
