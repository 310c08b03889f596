"""Turn what tomllib and pydantic report about a policy into messages a maintainer can act on.

Each :class:`PolicyProblem` names the file, the line and column, the key path as written in the
TOML (``kernels[1].shapes[0]``), what is wrong and what is allowed; an unknown key gets the
closest allowed key and the list of allowed ones. Lines come from :mod:`bot.policy.toml_locate`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from bot.policy.model import (
    CompilerTargets,
    Deployment,
    GitHubSettings,
    KernelPolicy,
    Limits,
    Policy,
)
from bot.policy.toml_locate import TomlLocations, locate


class PolicyProblem(BaseModel):
    """One thing wrong with a policy, where it is and what is allowed instead."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int  # 1-based
    column: int  # 1-based
    key: str  # e.g. "kernels[1].shapes[0]"; "" for the file as a whole
    message: str

    def __str__(self) -> str:
        key = f" {self.key}:" if self.key else ""
        return f"{self.file}:{self.line}:{self.column}:{key} {self.message}"


def whole_file_problem(source: str, message: str, line: int = 1, column: int = 1) -> PolicyProblem:
    return PolicyProblem(file=source, line=line, column=column, key="", message=message)


def validation_problems(
    exc: ValidationError, data: Any, text: str, table: tuple[str, ...], source: str
) -> list[PolicyProblem]:
    """One problem per pydantic error (cross-field checks split per key path), by line."""
    locations = locate(text)
    problems = [
        _problem_from(error, data, table, locations, source)
        for raw in exc.errors(include_url=False)
        for error in _expand(raw)
    ]
    return sorted(problems, key=lambda p: (p.line, p.column))


def syntax_problem(exc: Exception, text: str, source: str) -> PolicyProblem:
    message = str(exc)
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if match:
        line, col = int(match.group(1)), int(match.group(2))
        message = message[: match.start()]
    else:
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1  # "(at end of document)"
        message = re.sub(r"\s*\(at end of document\)$", " at the end of the file", message)
    offending = (text.splitlines()[line - 1 : line] or [""])[0][col - 1 :]
    bare = re.match(r"[A-Za-z_][A-Za-z0-9_.-]*", offending)
    if message.startswith("Invalid value") and bare and bare.group() not in ("true", "false"):
        message += f'; strings need quotes: "{bare.group()}"'
    return whole_file_problem(source, f"TOML syntax error: {message}", line, col)


def _expand(error: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Split the policy's cross-field checks into one error per key path they name."""
    ctx = error.get("ctx") or {}
    if error["type"] == "policy_many":
        return [
            {**error, "type": "policy", "loc": (*error["loc"], *at), "msg": msg}
            for at, msg in ctx["problems"]
        ]
    if error["type"] == "policy":
        return [{**error, "loc": (*error["loc"], *ctx.get("at", ()))}]
    return [error]


def _problem_from(
    error: Mapping[str, Any],
    data: Any,
    table: tuple[str, ...],
    locations: TomlLocations,
    source: str,
) -> PolicyProblem:
    loc = tuple(error["loc"])
    shown = _data_path(data, loc)
    position, found = locations.find(table + shown)
    if position is None:
        line, col = 1, 1
    elif found == table + shown and error["type"] not in ("extra_forbidden", "missing"):
        line, col = position.value_line, position.value_column
    else:
        line, col = position.line, position.column
    return PolicyProblem(
        file=source, line=line, column=col, key=_key_text(shown), message=_message(error, loc)
    )


def _data_path(data: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """The error's key path as the maintainer wrote it: a shape given as a bare list has no
    ``shape`` key, so ``shapes[0].shape[1]`` reads ``shapes[0][1]``."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(part, str) and isinstance(node, list):
            continue
        out.append(part)
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(out)


def _key_text(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _keys(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {(info.alias or name): info for name, info in model.model_fields.items()}


def _walk(loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model holding the last key of ``loc`` and that key's field, from the schema."""
    model: type[BaseModel] | None = Policy
    info: FieldInfo | None = None
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None:
            return None, None
        info = _keys(model).get(part)
        if info is None:
            return model, None
        model = _model_in(info.annotation)
    return model, info


_TABLES: dict[str, type[BaseModel]] = {
    "the top level": Policy,
    "[deployment]": Deployment,
    "[limits]": Limits,
    "[compiler]": CompilerTargets,
    "[github]": GitHubSettings,
    "[[kernels]]": KernelPolicy,
}

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string in quotes",
    "list_type": "an array [...]",
    "tuple_type": "an array [...]",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "bool_type": "true or false",
}

_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}


def _toml(value: Any) -> str:
    """A short TOML-like rendering of a value for messages."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(_toml(v) for v in value) + "]"
    elif isinstance(value, str):
        text = json.dumps(value)
    else:
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _toml_type(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int, "an integer")):
        if isinstance(value, kind):
            return name
    if isinstance(value, float):
        return "a float"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


# Spellings people use elsewhere (PyTorch, NumPy, papers) for the dtypes the policy names.
_ALIASES = {
    "fp16": "float16",
    "half": "float16",
    "f16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
    "f32": "float32",
    "fp64": "float64",
    "double": "float64",
    "fp8": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "int": "int32",
    "long": "int64",
}


def _suggest(word: str, choices: list[str]) -> str:
    bare = word.lower().removeprefix("torch.").removeprefix("np.")
    if bare in choices and bare != word:
        return f"did you mean {bare!r}? "
    if _ALIASES.get(bare) in choices:
        return f"did you mean {_ALIASES[bare]!r}? "
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def _message(error: Mapping[str, Any], loc: tuple[str | int, ...]) -> str:
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    _, info = _walk(loc)
    allowed = info.description if info is not None and info.description else ""
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "missing":
        return f"missing required key {loc[-1]!r}: {allowed}"
    if kind == "policy":
        return error["msg"]
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        word = value if isinstance(value, str) else str(value)
        return f"{_toml(value)} is not allowed; {_suggest(word, choices)}allowed: {' | '.join(choices)}"
    if kind in _TYPE_NAMES:
        return f"expected {_TYPE_NAMES[kind]}, got {_toml_type(value)} {_toml(value)}" + (
            f"; {allowed}" if allowed else ""
        )
    if kind in _BOUNDS:
        bound = next(iter(ctx.values()))
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"{_toml(value)} is out of range: must be {_BOUNDS[kind]} {bound}" + (
            f"; {allowed}" if allowed else ""
        )
    if kind in ("too_short", "string_too_short"):
        return f"must not be empty; {allowed}" if allowed else "must not be empty"
    if kind == "string_pattern_mismatch":
        return f"{_toml(value)} is not valid; expected {allowed}"
    if kind == "finite_number":
        return f"{_toml(value)} is not a finite number; {allowed}"
    return f"{error['msg']} (got {_toml(value)})" + (f"; {allowed}" if allowed else "")


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    key = str(loc[-1])
    model, _ = _walk(loc[:-1])
    allowed = list(_keys(model)) if model is not None else []
    message = f"unknown key {key!r}; " + _suggest(key, allowed)
    if not _suggest(key, allowed):
        homes = [
            name for name, other in _TABLES.items() if other is not model and key in _keys(other)
        ]
        if homes:
            message += (
                f"{key!r} belongs in {homes[0]} (in TOML, the keys after a [table] header "
                "belong to that table); "
            )
    return message + f"allowed keys here: {', '.join(allowed)}"
