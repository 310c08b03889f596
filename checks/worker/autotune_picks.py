"""Which config each Triton autotuner ran for a case: its ``best_config`` after the call.

The worker wraps a case's first call (where an autotuner times its candidates, or finds its
pick in Triton's on-disk cache) in ``recording``; each autotuner with more than one config that
ran inside answers which config it kept, as plain JSON: the kernel's name, the config's
keyword arguments, its launch options (``num_warps`` and ``num_stages`` always, the rest where
set), and a digest of every config it had to choose from (``offered``: base and head offered
the same list when the digests agree). A process where Triton is not imported records nothing.
Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
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


def offered(tuner: Any) -> str:
    """A digest of the configs an autotuner chooses from, in any order."""
    described = sorted(
        json.dumps(describe(tuner, c)["config"], sort_keys=True, default=str)
        for c in getattr(tuner, "configs", ())
    )
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:16]


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """The picks of the autotuners that run inside, each once, in the order they ran."""
    picks: list[dict[str, Any]] = []
    module = sys.modules.get("triton.runtime.autotuner")
    tuner_class = getattr(module, "Autotuner", None)
    if tuner_class is None:
        yield picks
        return

    def wrap(original: Any) -> Any:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            config = getattr(self, "best_config", None)
            if config is not None and len(getattr(self, "configs", ())) > 1:
                pick = {**describe(self, config), "offered": offered(self)}
                if pick not in picks:
                    picks.append(pick)
            return result

        return run

    # Triton's class, and every subclass with a ``run`` of its own (FlagGems' LibTuner picks
    # through its own ``run`` and never calls Triton's)
    patched = [c for c in _subclasses(tuner_class) if "run" in vars(c)]
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
