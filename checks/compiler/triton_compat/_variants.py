"""What one compile is: the request a call site makes, and how its variant is named."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from checks.compiler.triton_compat._targets import backend_hash

_OPTION_KNOBS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


@dataclass
class CompileRequest:
    """One compile a call site asked for, for one target: everything ``triton.compile`` needs."""

    fn: Any
    function: str
    signature: dict[str, str]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], Any]
    options: dict[str, Any]
    config: dict[str, Any]
    autotuned: bool
    autotune_key: str | None = None
    error: str | None = None
    specialization: str = ""  # e.g. "x_ptr:*fp32/16, n:i32, stride_bn=1"
    refused: str | None = None  # why the launch fails on this target (recorded without the option)
    call: tuple | None = field(default=None, repr=False)  # (args, kwargs, grid) while recording

    @property
    def label(self) -> str:
        return config_label(self.config)

    def cache_key(self, target: str) -> str:
        """Source (with dependencies) + specialization + options + target + toolchain."""
        import triton

        parts = [
            triton.__version__,
            target,
            backend_hash(target),
            self.fn.cache_key if self.fn is not None else self.function,
            json.dumps(self.signature, sort_keys=True),
            repr(sorted((k, _plain(v)) for k, v in self.constexprs.items())),
            repr(sorted(self.attrs.items())),
            repr(sorted(self.options.items())),
            self.error or "",
        ]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def config_label(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for a constexpr value (dtypes become their names)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return str(value)


def _tupled(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupled(v) for v in value)
    return value


def _specialization(
    jit: Any, signature: dict[str, str], constexprs: dict, attrs: dict, declared: set[int]
) -> str:
    """How Triton specialised the non-constexpr arguments: types, 16-byte divisibility (``/16``)
    and integers fixed to 1 (``=1``)."""
    parts = []
    for i, name in enumerate(jit.arg_names):
        if i in declared:
            continue
        ty = signature.get(name, "?")
        if ty == "constexpr":
            parts.append(f"{name}={_plain(constexprs.get((i,)))}")
            continue
        hints = attrs.get((i,), [])
        div = any(h[0] == "tt.divisibility" for h in hints)
        parts.append(f"{name}:{ty}{'/16' if div else ''}")
    return ", ".join(parts)


def _arg_name(fn: Any, path: tuple[int, ...]) -> str:
    name = fn.arg_names[path[0]]
    return name + "".join(f"[{i}]" for i in path[1:])


def _config(jit: Any, constexprs: dict, options: dict, tuned: dict[str, Any]) -> dict[str, Any]:
    """What picks this variant: the declared constexprs, the autotune/heuristic values that are
    not kernel arguments (e.g. ``matrix_instr_nonkdim``), ``num_warps`` and ``num_stages``, and
    other options only where a config set them to something other than the default."""
    declared = set(jit.constexprs)
    config: dict[str, Any] = {}
    for path, value in constexprs.items():
        if path[0] in declared and isinstance(value, (bool, int, float, str)):
            config[_arg_name(jit, path)] = value
    for name, value in tuned.items():
        if name not in jit.arg_names and name not in _OPTION_KNOBS and value is not None:
            config[name] = _plain(value)
    for knob in _OPTION_KNOBS:
        value = options.get(knob)
        if knob in ("num_warps", "num_stages") or (knob in tuned and value not in (None, 0, 1)):
            config[knob] = value
    return config
