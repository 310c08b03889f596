"""Template arguments of a C++ launch that the kernel never reads.

``kernel<CDIM, TILE_SIZE, UseHitDistance, float><<<grid, block>>>(...)``: each template argument
is bound, by position, to a template parameter of the kernel's definition. One bound to a
parameter that neither the kernel's signature nor its body names (gsplat's ``UseHitDistance``,
dropped from the kernel and from its launch together) makes instances that compile to the same
code, so it is no part of what the launch's host code decides: its text is left out of the
launcher's fingerprint (``LaunchSite.wrapper_digest``). Works on masked text (comments and
strings blanked), by character offsets; pure.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_TEMPLATE = re.compile(r"\btemplate\s*<")
_OPENS, _CLOSES = "<([{", ">)]}"


def split_top(text: str, at: int) -> list[tuple[int, int]]:
    """Spans (offsets from ``at``) of ``text``'s parts between commas outside any brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in _OPENS:
            depth += 1
        elif ch in _CLOSES:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append((at + start, at + i))
            start = i + 1
    parts.append((at + start, at + len(text)))
    return [(a, b) for a, b in parts if text[a - at : b - at].strip()]


def _closing(text: str, open_at: int) -> int | None:
    """Where the ``<`` at ``open_at`` closes (the other brackets counted with it)."""
    depth = 0
    for i in range(open_at, min(len(text), open_at + 4_000)):
        if text[i] in _OPENS:
            depth += 1
        elif text[i] in _CLOSES:
            depth -= 1
            if depth == 0:
                return i
        elif text[i] in ";{}":
            return None
    return None


def unread_parameters(bare: str, name_at: int, end: int) -> list[bool] | None:
    """Per template parameter of the kernel whose name is at ``name_at`` (its definition ends at
    ``end``), whether the kernel never names it; None when it is no template."""
    found = None
    for found in _TEMPLATE.finditer(bare, max(0, name_at - 4_000), name_at):  # noqa: B007
        pass  # the last one
    close = _closing(bare, found.end() - 1) if found else None
    if found is None or close is None or re.search(r"[;{}]", bare[close:name_at]):
        return None
    names = []
    for a, b in split_top(bare[found.end() : close], found.end()):
        words = _IDENT.findall(bare[a:b].split("=", 1)[0])
        if not words:
            return None
        names.append(words[-1])
    used = set(_IDENT.findall(bare[close + 1 : end]))
    return [name not in used for name in names]


def unread_argument_spans(bare: str, launch_at: int, unread: list[bool]) -> list[tuple[int, int]]:
    """The spans of the template arguments (each with its comma) before the ``<<<`` at
    ``launch_at`` that are bound to unread parameters; none when they cannot be bound."""
    k = launch_at - 1
    while k >= 0 and bare[k].isspace():
        k -= 1
    if k < 0 or bare[k] != ">":
        return []
    depth = 0
    while k >= max(0, launch_at - 4_000):
        if bare[k] in _CLOSES:
            depth += 1
        elif bare[k] in _OPENS:
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if depth != 0 or bare[k] != "<":
        return []
    close = launch_at - 1
    while bare[close] != ">":
        close -= 1
    args = split_top(bare[k + 1 : close], k + 1)
    if len(args) != len(unread):
        return []
    out = []
    for index, ((a, b), drop) in enumerate(zip(args, unread, strict=True)):
        if drop:  # with the comma after it, or before it for the last
            out.append(
                (a, args[index + 1][0])
                if index + 1 < len(args)
                else (args[index - 1][1] if index else a, b)
            )
    return out
