"""What tests read from ``action.yml`` without a YAML library: the shell of its ``run: |``
steps, and its inputs and outputs (the file keeps one shape: two-space keys under ``inputs:``
and ``outputs:``, each with four-space ``description``, ``required``, ``default``, ``value``);
and the steps of a workflow's jobs (``job_steps``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


Step = dict[str, Any]  # a step's keys: text, or the keys of its ``with:``/``env:`` as text


def job_steps(text: str) -> dict[str, list[Step]]:
    """Each job's steps of a workflow, in order: the keys of each step (``name``, ``if``,
    ``uses``, ...) as text, a folded ``>-`` value joined into one line and a trailing comment
    dropped, and a mapping's (``with:``, ``env:``) keys likewise. The file keeps the shape of
    docs/workflows: jobs at two spaces, ``steps:`` at four, each step a ``- `` at six."""
    jobs = text.split("\njobs:\n", 1)[1]
    out: dict[str, list[Step]] = {}
    for job, body in re.findall(r"^  ([\w-]+):\n((?:(?:   .*)?\n)*)", jobs, re.M):
        listed = body.split("\n    steps:\n", 1)
        if len(listed) == 1:
            continue
        steps = re.split(r"\n    (?=\S)", listed[1], maxsplit=1)[0]  # to the job's next key
        items = re.split(r"^      - ", steps, flags=re.M)[1:]
        out[job] = [_mapping(("        " + item).splitlines(), 8) for item in items]
    return out


def _mapping(lines: list[str], indent: int) -> Step:
    """The keys at ``indent`` spaces of ``lines``, each with its value: the text after the
    colon (a folded value's lines joined), or the mapping of the lines below it."""
    keys: Step = {}
    i = 0
    while i < len(lines):
        m = re.match(rf"^ {{{indent}}}([\w-]+):(.*)$", lines[i])
        i += 1
        if not m:
            continue
        below = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
            below.append(lines[i])
            i += 1
        value = _uncommented(m.group(2)).strip()
        if value in (">-", ">", "|", "|-"):
            keys[m.group(1)] = " ".join(x.strip() for x in below if x.strip())
        elif not value and below:
            keys[m.group(1)] = _mapping(below, _indent(next(x for x in below if x.strip())))
        else:
            keys[m.group(1)] = _scalar(value)
    return keys


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _uncommented(value: str) -> str:
    """``value`` without a trailing YAML comment (`` #`` outside quotes)."""
    quote = ""
    for i, ch in enumerate(value):
        if ch in "\"'" and not quote:
            quote = ch
        elif ch == quote:
            quote = ""
        elif ch == "#" and not quote and (i == 0 or value[i - 1] == " "):
            return value[:i]
    return value
