"""The live autotune lists of a process that imported the user's code: what each ``Autotuner``
holds once its module ran, however the list was built (a comprehension, ``itertools.product``,
a function, a vendor conditional)."""

from __future__ import annotations

from typing import Any

from bot.contracts.evidence import MAX_CONFIGS, MAX_LABEL
from checks.compiler.triton_compat._variants import _OPTION_KNOBS, _plain, config_label


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def live_config_label(cfg: Any) -> str:
    """A ``triton.Config`` as its kwargs, ``num_warps`` and ``num_stages``, and ``num_ctas`` /
    ``maxnreg`` where set to something other than the default."""
    values: dict[str, Any] = {k: _plain(v) for k, v in cfg.kwargs.items()}
    for knob in _OPTION_KNOBS:
        value = getattr(cfg, knob, None)
        if knob in ("num_warps", "num_stages") or value not in (None, 0, 1):
            values[knob] = value
    return _clip(config_label(values))


def picked_label(pick: Any) -> str | None:
    """A worker's record of an autotuner's pick (``checks/worker/autotune_picks.py``: the
    kernel's name and the config's values) as ``"kernel: k=v, ..."``; None for anything else (a
    worker runs the checkout's code, so what it sends is not trusted to be well formed)."""
    if not isinstance(pick, dict):
        return None
    function, config = pick.get("function"), pick.get("config")
    if not isinstance(function, str) or not isinstance(config, dict):
        return None
    values = {str(k)[:64]: _plain(v) for k, v in list(config.items())[:32]}
    return _clip(f"{function[:64]}: {config_label(values)}")


def _chain(kernel: Any) -> list[Any]:
    """A module-level kernel and what it wraps, outermost first, down to the JIT function."""
    from triton.runtime.jit import JITFunction

    nodes = []
    node = kernel
    while node is not None and node not in nodes:
        nodes.append(node)
        if isinstance(node, JITFunction):
            break
        node = getattr(node, "fn", None)
    return nodes


def _heuristics(tuner: Any, kernels: list[Any]) -> list[str]:
    """The names ``@triton.heuristics`` sets, above or below ``tuner``."""
    from triton.runtime.autotuner import Heuristics

    names: list[str] = []
    chains = [c for c in (_chain(k) for k in kernels) if tuner in c] or [_chain(tuner)]
    for chain in chains:
        for node in chain:
            if isinstance(node, Heuristics):
                names += [_clip(str(n)) for n in node.values if str(n) not in names]
    return names


def _function_name(tuner: Any) -> str:
    return _clip(str(getattr(_chain(tuner)[-1], "__name__", "?")))


def live_autotune(tuners: list[Any], kernels: list[Any]) -> list[dict[str, Any]]:
    """Per autotuner: its ``function``, ``configs`` (labels, at most MAX_CONFIGS, with the rest
    counted in ``more_configs``), ``key``, whether configs are ``pruned`` at run time, the
    ``heuristics`` names, and the ``best`` config per key where this process tuned one."""
    out = []
    for tuner in tuners:
        configs = list(tuner.configs)
        best = {
            _clip(repr(key)): live_config_label(cfg)
            for key, cfg in list(getattr(tuner, "cache", {}).items())[:MAX_CONFIGS]
        }
        out.append(
            {
                "function": _function_name(tuner),
                "configs": [live_config_label(c) for c in configs[:MAX_CONFIGS]],
                "more_configs": max(0, len(configs) - MAX_CONFIGS),
                "key": [_clip(str(k)) for k in tuner.keys][:64],
                "pruned": bool(
                    getattr(tuner, "early_config_prune", None) or getattr(tuner, "perf_model", None)
                ),
                "heuristics": _heuristics(tuner, kernels)[:64],
                "best": best,
            }
        )
    return out
