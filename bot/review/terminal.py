"""The review comment as a terminal reads it: the same text, without GitHub's markup.

The comment is GitHub markdown made safe for a pull request (``bot.escape``): HTML entities,
backslash escapes, a zero-width space after each ``@``, ``<details>`` sections, ``<sub>`` and
``<br>`` inside table cells. A terminal shows all of that raw. ``terminal_text`` undoes it for
the markup this project writes: headings underlined, tables aligned in columns, collapsed
sections shown open under their summary, emphasis and code marks dropped, and a chart as a text
bar per shape. Pure.
"""

from __future__ import annotations

import html
import re

from bot.outputs import columns, text_width
from bot.review import chart

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_TAG = re.compile(r"</?(?:sub|sup|b|i|em|strong|code|p|span)\b[^>]*>", re.IGNORECASE)
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SUMMARY = re.compile(r"^\s*<summary>(.*?)</summary>\s*$", re.IGNORECASE)
_DETAILS = re.compile(r"^\s*</?details\b[^>]*>\s*$", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash before ASCII punctuation
_INVISIBLE = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff]")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def inline_text(text: str) -> str:
    """One line of markdown as plain text: code spans kept as their text, escapes and entities
    undone, emphasis and invisible characters dropped."""
    text = _BR.sub(", ", _TAG.sub("", text))
    parts = re.split(r"(`+)", text)
    out: list[str] = []
    fence: str | None = None
    for part in parts:
        if part.startswith("`"):
            if fence is None:
                fence = part
                continue
            if part == fence:
                fence = None
                continue
        if fence is not None:  # inside a code span only | is escaped (and HTML)
            out.append(part.strip() if part.strip() else part)
            out[-1] = out[-1].replace("\\|", "|")
            continue
        part = _LINK.sub(r"\1 (\2)", part)
        part = _EMPHASIS.sub(r"\2", part)
        out.append(_ESCAPED.sub(r"\1", part))
    return _INVISIBLE.sub("", html.unescape("".join(out)))


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [inline_text(c.strip()) for c in re.split(r"(?<!\\)\|", row)]


def _table(rows: list[str]) -> list[str]:
    return columns([_cells(r) for r in rows if not _RULE.match(r)])


def chart_text(source: list[str]) -> list[str]:
    """A mermaid chart as ``bot.review.chart`` writes it, as text bars (``chart.text_bars``);
    any other chart is left out with a line saying so."""
    found = chart.read(source)
    return chart.text_bars(found) if found else ["(a chart: see the comment on GitHub)"]


def terminal_text(markdown: str) -> str:
    """``markdown`` (a comment as ``bot.review.render`` writes it) for a terminal."""
    lines = _COMMENT.sub("", markdown).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            out += _table(block)
            continue
        i += 1
        if line.strip().startswith("```mermaid"):
            block = []
            while i < len(lines) and not lines[i].strip().startswith("```"):
                block.append(lines[i])
                i += 1
            i += 1  # the closing fence
            out += chart_text(block)
            continue
        if _DETAILS.match(line):
            continue
        summary = _SUMMARY.match(line)
        if summary:
            title = inline_text(summary.group(1))
            out += [title, "-" * text_width(title)]
            continue
        heading = _HEADING.match(line)
        if heading:
            title = inline_text(heading.group(2))
            out += [title, ("=" if len(heading.group(1)) <= 2 else "-") * text_width(title)]
            continue
        if line.startswith(">"):
            out.append("  " + inline_text(line.lstrip(">").strip()))
            continue
        out.append(inline_text(line))
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
