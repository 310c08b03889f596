"""Which config each Triton autotuner ran for a case: its ``best_config`` after the call.

The worker wraps a case's first call (where an autotuner times its candidates, or finds its
pick in Triton's on-disk cache) in ``recording``; each autotuner with more than one config that
ran inside answers which config it kept, as plain JSON: the kernel's name, the config's
keyword arguments, its launch options (``num_warps`` and ``num_stages`` always, the rest where
set), a digest of every config it had to choose from (``offered``: base and head offered
the same list when the digests agree) and one of the kernel's source (``source``: Triton's own
key of the function and what it calls). A process where Triton is not imported records nothing.

``recording(pins, case)`` can also fix an autotuner's pick: where a pin names the same function,
the same configs offered and the same source, the autotuner is left that one config for the case
(its ``configs`` narrowed; put back when the worker takes another case), so it runs it without
timing the others. Both sides of a case whose kernel and configs are identical then time the
config one autotuner picked (``checks.sweep.pair_runner``). Such a pick says ``pinned``.
Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import sys
from collections.abc import Iterator
from typing import Any

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def _name(tuner: Any) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(fn, "name", None) or "?")


def describe(tuner: Any, config: Any) -> dict[str, Any]:
    values = {str(k): _plain(v) for k, v in (getattr(config, "kwargs", None) or {}).items()}
    for option in OPTIONS:
        value = getattr(config, option, None)
        if option in ("num_warps", "num_stages") or value not in (None, 0, 1):
            values[option] = _plain(value)
    return {"function": _name(tuner), "config": values}


# autotuners whose configs a pin narrowed: their full lists, and the case the pins were for
_NARROWED: dict[Any, list[Any]] = {}
_PINNED_CASE: list[Any] = [None]


def _configs(tuner: Any) -> list[Any]:
    """The configs an autotuner chooses from (its full list while a pin narrows it)."""
    return _NARROWED.get(tuner, list(getattr(tuner, "configs", ())))


def offered(tuner: Any) -> str:
    """A digest of the configs an autotuner chooses from, in any order."""
    described = sorted(
        json.dumps(describe(tuner, c)["config"], sort_keys=True, default=str)
        for c in _configs(tuner)
    )
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:16]


def source(tuner: Any) -> str:
    """A digest of the tuned kernel's source: Triton's key of the JIT function (its source, what
    it calls, the globals it reads), or under the CPU interpreter (no such key) the Python
    function's own source; '' where there is none."""
    fn, seen = getattr(tuner, "fn", None), 0
    while fn is not None and not hasattr(fn, "cache_key") and not inspect.isfunction(fn):
        fn, seen = getattr(fn, "fn", None), seen + 1
        if seen > 8:
            return ""
    try:
        if inspect.isfunction(fn):
            key = f"{fn.__qualname__}\n{inspect.getsource(fn)}"
        else:
            key = str(fn.cache_key) if fn is not None else ""
    except Exception:  # a kernel whose source cannot be read: no identity to compare
        return ""
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


def _pinned_config(tuner: Any, pins: list[dict[str, Any]]) -> Any:
    """The config of ``tuner``'s that a pin fixes: the same function, configs offered and source
    (None when no pin fits)."""
    name, digest = _name(tuner), None
    for pin in pins:
        if not isinstance(pin, dict) or pin.get("function") != name:
            continue
        digest = digest or (offered(tuner), source(tuner))
        if (pin.get("offered"), pin.get("source")) != digest or not digest[1]:
            continue
        for config in _configs(tuner):
            if describe(tuner, config)["config"] == pin.get("config"):
                return config
    return None


def _restore() -> None:
    for tuner, configs in _NARROWED.items():
        tuner.configs = configs
    _NARROWED.clear()


@contextlib.contextmanager
def recording(
    pins: list[dict[str, Any]] | None = None, case: Any = None
) -> Iterator[list[dict[str, Any]]]:
    """The picks of the autotuners that run inside, each once, in the order they ran; ``pins``
    (picks another worker made, for the case ``case``) fix the config of each autotuner they
    fit. Narrowed autotuners are put back first when ``case`` is another one than before."""
    picks: list[dict[str, Any]] = []
    if case != _PINNED_CASE[0]:
        _restore()
        _PINNED_CASE[0] = case
    module = sys.modules.get("triton.runtime.autotuner")
    tuner_class = getattr(module, "Autotuner", None)
    if tuner_class is None:
        yield picks
        return
    wanted = [p for p in pins or () if isinstance(p, dict)]

    def wrap(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            pinned = False
            if wanted and self not in _NARROWED and len(getattr(self, "configs", ())) > 1:
                config = _pinned_config(self, wanted)
                if config is not None:
                    _NARROWED[self] = list(self.configs)
                    self.configs = [config]
                    pinned = True
            pinned = pinned or self in _NARROWED
            result = original(self, *args, **kwargs)
            config = getattr(self, "best_config", None)
            if config is not None and len(_configs(self)) > 1:
                pick = {**describe(self, config), "offered": offered(self), "source": source(self)}
                if pinned:
                    pick["pinned"] = True
                if pick not in picks:
                    picks.append(pick)
            return result

        return run

    # Triton's class, and every subclass with a ``run`` of its own (FlagGems' LibTuner picks
    # through its own ``run`` and never calls Triton's)
    patched: list[Any] = [c for c in _subclasses(tuner_class) if "run" in vars(c)]
    originals = {c: vars(c)["run"] for c in patched}
    for c, original in originals.items():
        c.run = wrap(original)
    try:
        yield picks
    finally:
        for c, original in originals.items():
            c.run = original


def _subclasses(cls: type) -> list[type]:
    """``cls`` and every class below it."""
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        if c not in out:
            out.append(c)
            todo.extend(c.__subclasses__())
    return out
