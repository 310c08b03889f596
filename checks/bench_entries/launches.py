"""Which kernels one call of a bench entry launched: the record the review holds its static
"what changed" against.

``recording(torch, device)`` wraps one call outside every timed region, so nothing of the
engine's own runs inside (no marker kernel, no L2 flush, no input copy): ``main.py``'s check
makes one more call after the case's first, which compiled and tuned, on a GPU; on the CPU it
wraps the first call itself (an interpreted call takes as long as its kernels). It records

- Triton's launches, by the JIT function's name: through Triton's launch hook
  (``triton.knobs.runtime.launch_enter_hook``) on a GPU, and through the interpreter's ``GridExecutor``
  under the CPU interpreter, which calls no hook;
- on a GPU, every kernel the profiler saw (``torch.profiler``'s device activity, kernels only:
  copies and memsets are left out), a C++ name demangled and cut to its qualified name
  (``void ns::add<float>(float*, int)`` is ``ns::add``);
- on a GPU, whether each Triton kernel's compiled code holds atomic operations (``atomics``),
  whose time can depend on where each process's buffers land.

What it could not record is said in ``note``: on the CPU no kernel but Triton's is seen; a
profiler that would not start leaves Triton's launches only, as does ``profiler=False`` (a
kernel whose files are all Python: ``checks.sweep.shapes.launch_recorder``). A name in ``leave_out`` (the
engine's marker kernel) is never recorded. Standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

MAX_KERNELS = 64  # distinct kernels one call's record names
MAX_NAME = 300  # characters of a name
CPU_NOTE = "on the CPU only Triton's launches (through its interpreter) are recorded"
# a kernel whose files are all Python is recorded without the profiler, whose start in a
# process cost 3 s on the H200, about 6 s of each run with two processes starting it
TRITON_ONLY_NOTE = (
    "Triton's launches only: the kernel's files are Python, so the profiler (seconds to start) "
    "did not run"
)
# what the profiler names a device activity that is no kernel, where it does not say its type
_NOT_KERNELS = ("Memcpy", "Memset", "Context Sync", "CopyDeviceTo", "CopyHostTo", "FillBuffer")

# an anonymous namespace as the C++ runtime's demangler and Nsight's write it
ANONYMOUS = ("(anonymous namespace)::", "<unnamed>::")

_DEMANGLER: list[Any] = []  # ``__cxa_demangle`` once found, or None when there is none


def _cxa_demangle() -> Any:
    if not _DEMANGLER:
        found = None
        for library in (None, "libstdc++.so.6", "libc++.so.1"):
            try:
                found = ctypes.CDLL(library).__cxa_demangle
                break
            except (OSError, AttributeError):
                continue
        if found is not None:
            found.restype = ctypes.c_void_p
            found.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        _DEMANGLER.append(found)
    return _DEMANGLER[0]


def demangle(name: str) -> str:
    """A C++ symbol (``_Z...``) as the C++ runtime's demangler writes it; any other name, or
    one it cannot read, as it is."""
    if not name.startswith("_Z"):
        return name
    fn = _cxa_demangle()
    if fn is None:
        return name
    status = ctypes.c_int(1)
    out = fn(name.encode(), None, None, ctypes.byref(status))
    if not out:
        return name
    try:
        text = ctypes.string_at(out).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(out))
    return text if status.value == 0 else name


def short_name(name: str) -> str:
    """A kernel's qualified name without its return type, template arguments and parameters:
    ``void (anonymous namespace)::ns::add<float, 4>(float const*, int)`` is ``ns::add`` (an
    anonymous namespace as each demangler writes it, ``<unnamed>`` too, left out)."""
    text = demangle(name.strip())
    for anonymous in ANONYMOUS:
        text = text.replace(anonymous, "")
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and not depth:
            break
        elif not depth:
            out.append(ch)
    words = "".join(out).split()
    return (words[-1] if words else text)[:MAX_NAME]


def device_kernels(events: Iterable[tuple[str, str | None]]) -> list[str]:
    """The kernel names among a profile's device activities, each (name, activity type; None
    where the profiler does not say it), in the order they ran: copies, memsets and the
    profiler's own annotations left out."""
    kept = []
    for name, kind in events:
        if kind is not None and kind != "kernel":
            continue
        if kind is None and name.startswith(_NOT_KERNELS):
            continue
        kept.append(name)
    return kept


def summarize(
    triton_launches: Sequence[str],
    device_launches: Sequence[str] | None,
    leave_out: Sequence[str] = (),
    atomics: Mapping[str, bool] | None = None,
) -> list[dict[str, Any]]:
    """What one call launched, a kernel a row (``name``, ``triton``, ``count``, ``atomics``),
    in the order each first ran: Triton's launches by their function's name, then the
    profiler's kernels (None: no profiler ran) by their short name, those Triton launched
    already left out (the profiler sees Triton's kernels too, by the same name); a name holding
    one of ``leave_out`` never. ``atomics``: by Triton kernel, whether its compiled code holds
    atomics (``atomics_by_name``; a kernel not in it, or not Triton's, None). At most
    ``MAX_KERNELS`` rows."""
    triton = Counter(n[:MAX_NAME] for n in triton_launches)
    device = Counter(short_name(n) for n in device_launches or ())
    atomic = atomics or {}
    rows: list[dict[str, Any]] = [
        {"name": n, "triton": True, "count": c, "atomics": atomic.get(n)} for n, c in triton.items()
    ]
    rows += [
        {"name": n, "triton": False, "count": c, "atomics": None}
        for n, c in device.items()
        if n not in triton
    ]
    return [r for r in rows if not any(x in r["name"] for x in leave_out)][:MAX_KERNELS]


# ------------------------------------------------------------------------------ atomics

# an atomic operation in Triton's IR (``tl.atomic_add`` and its kin, ``tl.atomic_cas``): the
# same words whatever the vendor it is compiled for
_ATOMIC_OPS = ("tt.atomic_rmw", "tt.atomic_cas")


def has_atomics(kernel: Any) -> bool | None:
    """Whether a compiled Triton kernel (``triton.compiler.CompiledKernel``) holds an atomic
    operation, from its Triton IR; None where the IR cannot be read."""
    try:
        ir = kernel.asm["ttir"]
    except Exception:
        return None
    if isinstance(ir, bytes):
        ir = ir.decode("utf-8", "replace")
    return any(op in ir for op in _ATOMIC_OPS) if isinstance(ir, str) else None


def atomics_by_name(names: Iterable[str], objects: Iterable[Any] | None = None) -> dict[str, bool]:
    """For each Triton kernel name among ``names``, whether a compiled kernel of that name in
    this process holds atomics (``has_atomics``; a name compiled several ways, as an autotuner
    does, holds them when any variant does). ``objects``: where to look, by default what the
    garbage collector tracks, which a worker's ``gc.freeze`` has left to what the checkout made
    (a few thousand objects). A name with no compiled kernel found is left out."""
    wanted = set(names)
    mod = sys.modules.get("triton.compiler.compiler")
    kind = getattr(mod, "CompiledKernel", None)
    if not wanted or kind is None:
        return {}
    if objects is None:
        import gc

        objects = gc.get_objects()
    found: dict[str, bool] = {}
    for obj in objects:
        if type(obj) is not kind or getattr(obj, "name", None) not in wanted:
            continue
        atomic = has_atomics(obj)
        if atomic is not None:
            found[obj.name] = found.get(obj.name, False) or atomic
    return found


# ------------------------------------------------------------------------------ recording


def _hook_triton(stack: contextlib.ExitStack, seen: Callable[[str], None]) -> None:
    """Call ``seen`` with the function's name at each Triton launch in the ``stack``'s block:
    the launch hook, and the interpreter's launches. Nothing where Triton is not imported (the
    checkout's code imported it, if it launches Triton kernels at all)."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    # every interpreted launch runs a GridExecutor (Triton 3.5 and 3.6 alike; 3.5's
    # InterpretedFunction.run is made per instance, 3.6's is a method that skips warm-ups)
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is not None:
        original = executor.__call__

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen(str(getattr(self.fn, "__name__", None) or "?"))
            return original(self, *args, **kwargs)

        executor.__call__ = call
        stack.callback(setattr, executor, "__call__", original)
    knobs = getattr(sys.modules.get("triton"), "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    if runtime is None or not hasattr(runtime, "launch_enter_hook"):
        return

    def hook(metadata: Any) -> None:
        data = getattr(metadata, "data", None)
        name = data.get("name") if isinstance(data, dict) else None
        seen(str(name or "?"))

    chain = runtime.launch_enter_hook
    if hasattr(chain, "add") and hasattr(chain, "remove"):  # Triton 3.6: a chain of hooks
        chain.add(hook)
        stack.callback(chain.remove, hook)
        return

    def both(metadata: Any) -> None:  # Triton 3.5: one hook, which may be someone's already
        hook(metadata)
        if chain is not None:
            chain(metadata)

    runtime.launch_enter_hook = both
    stack.callback(setattr, runtime, "launch_enter_hook", chain)


def _profile(stack: contextlib.ExitStack, torch: Any) -> tuple[Any, str]:
    """torch's profiler of device activity, started in the ``stack``'s block; None and why
    where it cannot start."""
    profiler = getattr(torch, "profiler", None)
    if profiler is None:
        return None, "this torch has no profiler: only Triton's launches are recorded"
    try:
        prof = profiler.profile(activities=[profiler.ProfilerActivity.CUDA])
        stack.enter_context(prof)
    except Exception as exc:
        return (
            None,
            f"the profiler did not start ({type(exc).__name__}: {exc}): only Triton's launches are recorded",
        )
    return prof, ""


def _profiled(prof: Any) -> list[str]:
    """The kernels the stopped profiler ``prof`` recorded on the device, in the order they ran."""
    events = []
    for e in sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns()):
        if not str(e.device_type()).endswith("CUDA"):
            continue
        kind = e.activity_type() if hasattr(e, "activity_type") else None
        events.append((str(e.name()), str(kind) if kind is not None else None))
    return device_kernels(events)


@contextlib.contextmanager
def recording(
    torch: Any, device: str, leave_out: Sequence[str] = (), *, profiler: bool = True
) -> Iterator[dict[str, Any]]:
    """Record the kernels launched inside the block; the dict it gives is filled once the
    block ends: ``kernels`` (``summarize``'s rows), ``profiler`` (every GPU kernel was
    recorded, not only Triton's) and ``note`` (what was not recorded, and why). The block
    waits for the GPU before it ends (the profiler's record of a kernel comes once it ran).
    ``profiler`` False: Triton's launches alone on a GPU too (no profiler is started)."""
    record: dict[str, Any] = {"kernels": [], "profiler": False, "note": ""}
    launched: list[str] = []
    prof, note = None, CPU_NOTE if device == "cpu" else ""
    if device != "cpu" and not profiler:
        note = TRITON_ONLY_NOTE
    with contextlib.ExitStack() as stack:
        if device != "cpu" and profiler:
            prof, note = _profile(stack, torch)
        _hook_triton(stack, launched.append)
        yield record
    device_launches = None
    if prof is not None:
        try:
            device_launches = _profiled(prof)
        except Exception as exc:
            note = f"the profiler's record could not be read ({type(exc).__name__}: {exc})"
    atomic = atomics_by_name(launched) if device != "cpu" else None  # the interpreter compiles none
    record.update(
        kernels=summarize(launched, device_launches, leave_out, atomic),
        profiler=device_launches is not None,
        note=note[:MAX_NAME],
    )
