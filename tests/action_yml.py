"""What tests read from ``action.yml`` without a YAML library: the shell of its ``run: |``
steps, and its inputs and outputs (the file keeps one shape: two-space keys under ``inputs:``
and ``outputs:``, each with four-space ``description``, ``required``, ``default``, ``value``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.paths import ROOT

ACTION = (ROOT / "action.yml").read_text(encoding="utf-8")


def run_blocks(text: str) -> list[str]:
    """The shell of every ``run: |`` block of a workflow or action, in file order."""
    blocks, current = [], None
    for line in text.splitlines():
        m = re.match(r"^(\s*)(?:- )?run: \|", line)
        if m:
            current = (len(m.group(1)), [])
            blocks.append(current[1])
            continue
        if current is not None:
            indent = len(line) - len(line.lstrip())
            if line.strip() and indent <= current[0]:
                current = None
            else:
                current[1].append(line)
    return ["\n".join(b) for b in blocks]


@dataclass(frozen=True)
class Field:
    name: str
    description: str
    required: bool = False
    default: str | None = None


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def fields(section: str, text: str = ACTION) -> list[Field]:
    """The inputs or outputs (``section``) the action declares, in file order."""
    body = re.search(rf"^{section}:\n((?:(?:  .*)?\n)*)", text, re.M)
    assert body, f"action.yml has no {section}: section"
    out: list[Field] = []
    for name, block in re.findall(r"^  ([\w-]+):\n((?:    .*\n)*)", body.group(1), re.M):
        keys = dict(re.findall(r"^    (\w+): ?(.*)$", block, re.M))
        out.append(
            Field(
                name=name,
                description=_scalar(keys.get("description", "")),
                required=_scalar(keys.get("required", "false")) == "true",
                default=_scalar(keys["default"]) if "default" in keys else None,
            )
        )
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(section: str) -> str:
    """The README's table of the action's inputs or outputs, as action.yml says them."""
    if section == "inputs":
        rows = ["| input | required | default | what it is |", "|---|---|---|---|"]
        for f in fields("inputs"):
            default = f"`{f.default}`" if f.default else ""
            rows.append(
                f"| `{f.name}` | {'yes' if f.required else 'no'} | {default} | {_cell(f.description)} |"
            )
    else:
        rows = ["| output | what it is |", "|---|---|"]
        rows += [f"| `{f.name}` | {_cell(f.description)} |" for f in fields("outputs")]
    return "\n".join(rows)
