"""What the diff's lines alone show of a kernel whose text changed and whose code did not: the
diff-mode counterpart of ``bot.analysis.same_code``, which reads whole files.

- ``spelled_alike``: the removed and added lines are the same statements once each name a module
  alias stands for is written as the module (``tl.load`` after ``import triton.language as tl``
  is ``triton.language.load``) and the layout is set aside (lines wrapped otherwise, grouping
  parentheses around a whole expression dropped). The aliases are those the file's own shown
  lines bind on each side. A namespace one side uses and no shown import binds may stand for
  what the other side writes in its place (``tl.load`` for ``triton.language.load``, the import
  of ``tl`` outside the diff's lines): ``guessed_namespaces`` finds such a reading, and a kernel
  that reads the same only under it is undecided, not changed (a module swapped for another,
  ``libdevice.exp`` for ``tl.math.exp``, reads so too: the diff's lines cannot tell them apart).
- ``removed_parameters``: the removed lines are parameters of the kernel's signature (the lines
  show the signature: its ``def``, or a hunk whose header is the ``def`` and whose lines are
  parameters, each ending in a comma and one of them annotated, as only a signature's are).
  Removing a parameter that no line of the kernel reads compiles the same kernel (``same_code``
  drops such a parameter from whole files); whether a line the diff does not show reads it is
  unknown, so the caller leaves the kernel unclassified, not changed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

_PIECE = re.compile(
    r"""(?P<string>[rRbBuUfF]{0,2}
        (?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    |(?P<comment>\#[^\n]*)
    |(?P<name>[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<newline>\n)
    |(?P<space>[ \t\r\f\\]+)
    |(?P<other>.)""",
    re.S | re.X,
)
# A parameter on a line of its own: ``name``, ``name: annotation``, ``name=default``, with its
# comma; the groups: stars, name, annotation, default.
_PARAMETER = re.compile(
    r"^\s*(\*{0,2})([A-Za-z_]\w*)\s*(?::\s*([^=,#]+?))?\s*(?:=\s*([^,#]+?))?\s*,?\s*(?:#.*)?$"
)
_WORD = re.compile(r"[A-Za-z_]\w*")
# A clause that parses only after the statement it opens onto, written as one that parses alone.
_CLAUSES = (
    (re.compile(r"^elif\b"), "if"),
    (re.compile(r"^(?:else|finally)\b"), "if True"),
    (re.compile(r"^(?=except\b)"), "try: pass\n"),
)


def spelled_alike(
    gone: Sequence[str],
    came: Sequence[str],
    old_names: Mapping[str, str],
    new_names: Mapping[str, str],
) -> bool:
    """Whether ``gone`` (a kernel's removed lines) and ``came`` (its added lines) are the same
    statements, in the same order, with the module each alias of ``old_names`` / ``new_names``
    (local name -> module) stands for written out, whitespace, line breaks and comments aside.
    A statement whole in the lines is compared as a syntax tree (``x = (a + b)`` is ``x = a +
    b``); a part of one (the rest is a line the diff shows unchanged) as its tokens."""
    if not gone and not came:
        return False
    return _statements(gone, old_names) == _statements(came, new_names)


def guessed_namespaces(
    gone: Sequence[str],
    came: Sequence[str],
    old_names: Mapping[str, str],
    new_names: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str]]:
    """For each side, the namespaces (``tl`` of ``tl.load``) its lines use where the other
    side's do not and that its names do not bind, each with what the other side writes in its
    place most often (``triton.language`` for ``tl`` where ``tl.load`` stands for
    ``triton.language.load``): ``(guesses for gone, guesses for came)``."""
    chains = [_chains(gone, old_names), _chains(came, new_names)]
    bases = [{c[0] for c in side} for side in chains]
    out: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for mine, other, names, guessed in ((0, 1, old_names, out[0]), (1, 0, new_names, out[1])):
        for base in sorted(bases[mine] - bases[other] - set(names)):
            tails = {c[1:] for c in chains[mine] if c[0] == base}
            found = [
                ".".join(c[: -len(t)])
                for c in chains[other]
                for t in tails
                if len(c) > len(t) and c[-len(t) :] == t
            ]
            if found:
                guessed[base] = max(set(found), key=found.count)
    return out


def _chains(lines: Sequence[str], names: Mapping[str, str]) -> list[tuple[str, ...]]:
    """The dotted names of ``lines`` (``tl.load``: ``("tl", "load")``), each alias of
    ``names`` written out, strings and comments aside."""
    out = []
    previous = ""
    for m in _PIECE.finditer("\n".join(lines)):
        kind, piece = m.lastgroup, m.group()
        if kind == "name" and previous != "." and "." in piece:
            out.append(tuple(_spelled(piece, names).replace(" ", "").split(".")))
        if kind not in ("space", "newline", "comment"):
            previous = piece
    return out


def _statements(lines: Sequence[str], names: Mapping[str, str]) -> list[str]:
    """Each logical line of ``lines`` (a line break inside brackets continues it) as a key:
    its syntax tree where it parses, else its tokens."""
    out: list[str] = []
    text: list[str] = []
    tokens: list[str] = []
    depth = 0
    previous = ""
    for m in _PIECE.finditer("\n".join(lines)):
        kind, piece = m.lastgroup, m.group()
        if kind == "comment":
            continue
        if kind == "newline" and depth <= 0:
            if text:
                out.append(_key("".join(text).strip(), tokens))
            text, tokens, depth = [], [], 0
            continue
        if kind == "name" and previous != ".":
            piece = _spelled(piece, names)
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        text.append(piece)
        if kind not in ("space", "newline"):
            tokens.append(piece)
            previous = piece
    if text:
        out.append(_key("".join(text).strip(), tokens))
    return out


def _spelled(dotted: str, names: Mapping[str, str]) -> str:
    """``tl.load`` as ``triton.language.load`` where ``names`` binds ``tl`` to
    ``triton.language``; a name alone (not the base of an attribute) is left as written."""
    parts = [p.strip() for p in dotted.split(".")]
    if len(parts) < 2 or parts[0] not in names:
        return dotted
    return ".".join([names[parts[0]], *parts[1:]])


def _key(statement: str, tokens: list[str]) -> str:
    """The statement's syntax tree (a block's header given an empty body; a clause such as
    ``else:`` keyed by its word too), else its tokens."""
    tries = [("", statement), ("", statement + " pass")]
    tries += [
        (tokens[0], p.sub(by, statement) + " pass") for p, by in _CLAUSES if p.match(statement)
    ]
    for word, text in tries:
        try:
            return word + ast.dump(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            continue
    return " ".join(tokens)


def removed_parameters(
    name: str,
    removed: Sequence[tuple[int, str]],
    seen: Sequence[tuple[int, str]],
    header: str | None = None,
) -> list[str]:
    """The parameters that ``removed`` (numbered lines of the kernel ``name``, nothing added)
    drop from its signature and that no other line of ``seen`` (the kernel's lines the diff
    shows at base, the removed ones among them) names; empty unless every removed line is such
    a parameter, without a default (as ``same_code`` has it: one with a default may be passed
    by keyword, or be a launch option such as ``num_warps``) and without ``*``. ``header``: the
    section header of the hunk the kernel's lines start in, when its ``def`` line is not among
    them."""
    signature = _signature(name, sorted(seen), header)
    names: list[str] = []
    for number, text in removed:
        m = _PARAMETER.match(text)
        if number not in signature or m is None or m.group(1) or m.group(4):
            return []
        names.append(m.group(2))
    gone = {number for number, _ in removed}
    read = {w for number, text in seen if number not in gone for w in _WORD.findall(text)}
    return [] if read & set(names) else names


def _signature(name: str, seen: list[tuple[int, str]], header: str | None) -> set[int]:
    """The numbers of ``seen``'s lines that are parameter lines of ``name``'s signature, as far
    as the lines show it."""
    opener = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(")
    start = next((i for i, (_, t) in enumerate(seen) if opener.match(t)), None)
    if start is not None:
        depth = _depth(seen[start][1])
        out: set[int] = set()
        for (number, text), (before, _) in zip(seen[start + 1 :], seen[start:], strict=False):
            if depth <= 0 or number != before + 1:
                break
            out.add(number)
            depth += _depth(text)
        return out
    if header is None or not opener.match(header) or _depth(header) <= 0 or not seen:
        return set()
    # the lines from the hunk's first while they are parameters, each with its comma (which a
    # statement of the body does not end with), one of them annotated
    run: list[tuple[int, re.Match[str]]] = []
    for number, text in seen:
        m = _PARAMETER.match(text)
        if m is None or not text.split("#", 1)[0].rstrip().endswith(","):
            break
        if run and number != run[-1][0] + 1:
            break
        run.append((number, m))
    if not run or run[0][0] != seen[0][0] or not any(m.group(3) for _, m in run):
        return set()
    return {n for n, _ in run}


def _depth(text: str) -> int:
    """How many more brackets ``text`` opens than it closes (strings and comments aside)."""
    depth = 0
    for m in _PIECE.finditer(text):
        depth += {"open": 1, "close": -1}.get(m.lastgroup or "", 0)
    return depth
