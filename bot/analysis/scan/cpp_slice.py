"""The lines of a C++ host function that decide one launch: a backward slice over its statements.

The C++ counterpart of ``launch_slice`` (Python), read from masked text rather than a syntax
tree. A launch ``k<<<grid, block, smem, stream>>>(args)`` depends on the names its statement
reads, on the statements before it that assign those names or pass them to a call (an in-place
effect: ``cudaMemsetAsync(hist_ptr, ...)``), on the names those read in turn, on the headers of
the blocks around it (``if``, loops), and on the parameters among those names (the lines of the
function's own header that declare them). What is outside the slice cannot change what is
launched: a check (``TORCH_CHECK``, ``assert``), another launch, a value computed for another
launch (exllamav3's ``fused_sampler`` gains a bitmask argument and its guards, passed to four of
its six launches: the other two launch the same). Statements are split at ``;``, ``{``, ``}``
and preprocessor lines; a launch inside a ``#define`` is read within that macro's text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

_IDENT = re.compile(r"[A-Za-z_]\w*")
_BOUNDARY = re.compile(r"[;{}]|\n(?=[ \t]*#)|^[ \t]*#(?:\\\n|[^\n])*", re.M)
_ASSIGNED = re.compile(
    r"([A-Za-z_]\w*)\s*(?:\[[^\]\n]*\]\s*)*(?:[-+*/%&|^]|<<|>>)?=(?!=)|([A-Za-z_]\w*)\s*(?:\+\+|--)"
    r"|(?:\+\+|--)\s*([A-Za-z_]\w*)"
)
_DECLARED = re.compile(
    r"^\s*(?:const\s+)?[A-Za-z_][\w:]*(?:\s*<[^;]*?>)?[\s*&]+([A-Za-z_]\w*)\s*[({]"
)
_CHECK = re.compile(r"^\s*(?:[A-Z][A-Z0-9_]*CHECK\w*|assert|static_assert)\s*\(")
_DEFINE = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)")
_CONDITIONAL = re.compile(r"\s*#\s*(?:if|ifdef|ifndef|elif|else|endif)\b")
_LAMBDA = re.compile(r"\]\s*(?:<[^<>{};]*>\s*)?\([^;{}]*\)[^;{}()]*$")
_ERROR_CHECK = re.compile(
    r"\b(?:cuda|hip)(?:GetLastError|PeekAtLastError)\s*\(|\b[A-Z0-9_]*KERNEL_LAUNCH_CHECK\b"
)
_LOOP = re.compile(r"^\s*(?:for|while|do)\b")
_LIMIT = 20  # rounds over the statements


def launch_lines(
    bare: str, body: tuple[int, int], launch: int, line: Callable[[int], int]
) -> set[int] | None:
    """The lines of ``bare`` (masked text; 1-based line numbers by ``line``) that the launch at
    offset ``launch`` depends on, within the function whose text spans ``body`` (its header's
    first offset, its closing brace). ``None`` when the launch's statement is not found."""
    first, last = body
    spans, texts, reads, blocks = _parsed(bare, first, last)
    at = next((i for i, (a, b) in enumerate(spans) if a <= launch < b), None)
    if at is None:
        return None
    enclosing = sorted(o for o, c in blocks.values() if o < launch < c)
    outer = enclosing[0] if enclosing else None  # the function's own body
    if any(_LAMBDA.search(bare, max(first, o - 300), o) for o in enclosing[1:]):
        return None  # a lambda's launch runs where the lambda is called, maybe after it
    headers = {i for i, (o, _) in blocks.items() if o in enclosing}
    loops = [blocks[i] for i in headers if _LOOP.match(texts[i])]
    wanted = set(reads[at])
    kept = {at} | {i for i, x in enumerate(texts) if _CONDITIONAL.match(x)}
    kept |= {  # the launches' error checks after it
        i for i in range(at + 1, len(spans)) if _ERROR_CHECK.search(texts[i])
    }
    signature = None
    for i in headers:
        if spans[i][1] - 1 == outer:
            signature = i
        else:
            kept.add(i)
            wanted |= reads[i]
    for _ in range(_LIMIT):
        grew = False
        for i, (o, c) in blocks.items():  # the tests of the blocks around what is kept
            if i not in kept and i != signature and any(o < spans[k][0] < c for k in kept):
                kept.add(i)
                wanted |= reads[i]
                grew = True
        for i, text in enumerate(texts):
            a, b = spans[i]
            if i in kept or i in blocks or "<<<" in text or _CHECK.match(text):
                continue
            macro = _DEFINE.match(text)
            if macro is not None or "#" in text:  # a macro the launch reads is assigned
                if macro is not None and macro.group(1) in wanted:
                    kept.add(i)
                    wanted |= reads[i]
                    grew = True
                continue
            if a > launch and not any(o < a and b <= c for o, c in loops):
                continue  # after the launch, not in a loop that holds it
            assigned = _assigned(text)
            if assigned & wanted or (not assigned and reads[i] & wanted and "(" in text):
                kept.add(i)
                wanted |= reads[i]
                grew = True
        if not grew:
            break
    out = {n for i in kept for n in range(line(_first(bare, spans[i])), line(spans[i][1] - 1) + 1)}
    if signature is not None:  # the parameters the launch reads, declared on their own lines
        a, b = spans[signature]
        for n, text in _lines(bare, a, b, line):
            declared = _IDENT.findall(text)[-1:]  # a parameter's name ends its line
            if n not in out and set(declared) & wanted:
                out.add(n)
    return out


@functools.lru_cache(maxsize=4)  # a launcher's launches share its statements
def _parsed(
    bare: str, first: int, last: int
) -> tuple[list[tuple[int, int]], list[str], list[set[str]], dict[int, tuple[int, int]]]:
    """The statements' spans, texts, the names each reads, and for each block's header its
    ``{`` and ``}`` offsets (a block not closed in the function ends at ``last``)."""
    spans = _statements(bare, first, last)
    texts = [bare[a:b] for a, b in spans]
    reads = [set(_IDENT.findall(x)) for x in texts]
    blocks: dict[int, tuple[int, int]] = {}
    stack: list[int] = []
    for i, (_a, b) in enumerate(spans):
        if b < 1 or b > len(bare):
            continue
        if bare[b - 1] == "{":
            stack.append(i)
        elif bare[b - 1] == "}" and stack:
            o = stack.pop()
            blocks[o] = (spans[o][1] - 1, b - 1)
    for o in stack:
        blocks[o] = (spans[o][1] - 1, last + 1)
    return spans, texts, reads, blocks


def _statements(bare: str, first: int, last: int) -> list[tuple[int, int]]:
    """``(start, end)`` spans of the statements between ``first`` and ``last``; each ends at
    its ``;``/``{``/``}`` (included) or before a preprocessor line."""
    out = []
    start = first
    for m in _BOUNDARY.finditer(bare, first, last + 1):
        end = m.start() if m.group() == "\n" else m.end()
        if bare[start:end].strip():
            out.append((start, end))
        start = end
    if bare[start : last + 1].strip():
        out.append((start, last + 1))
    return out


def _lines(bare: str, a: int, b: int, line: Callable[[int], int]) -> Sequence[tuple[int, str]]:
    out = []
    pos = a
    for text in bare[a:b].split("\n"):
        out.append((line(pos), text))
        pos += len(text) + 1
    return out


def _first(bare: str, span: tuple[int, int]) -> int:
    """The offset of a statement's first non-blank character."""
    a, b = span
    return a + len(bare[a:b]) - len(bare[a:b].lstrip())


@functools.lru_cache(maxsize=4096)
def _assigned(text: str) -> set[str]:
    """The names a statement assigns or declares."""
    out = {m.group(1) or m.group(2) or m.group(3) for m in _ASSIGNED.finditer(text)}
    declared = _DECLARED.match(text)
    if declared is not None:
        out.add(declared.group(1))
    return out
