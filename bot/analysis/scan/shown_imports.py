"""What a diff's lines show of a Python file's imports, one side at a time.

Only the import statements among the lines a diff shows (context and changed) are read: an
import the diff does not show is unknown, not absent. ``import triton.language as tl`` binds
``tl`` to ``triton.language``; ``from .utils import make_configs`` in ``pkg/ops.py`` binds
``make_configs`` to ``pkg.utils.make_configs``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence

from bot.analysis.reach.follow import imports_in


def shown_imports(lines: Sequence[tuple[int, str]], path: str) -> dict[str, set[str]]:
    """Local name -> the qualified names it is bound to by the imports among ``lines``
    (numbered, one side of a file's diff); a parenthesised ``from`` import is read across its
    lines when they are all shown."""
    out: dict[str, set[str]] = {}
    pending: list[str] = []
    last = 0
    for number, text in sorted(lines):
        stripped = text.strip()
        if pending and number != last + 1:
            pending = []  # cut by lines the diff does not show
        last = number
        if not pending and not stripped.startswith(("import ", "from ")):
            continue
        pending.append(stripped)
        statement = "\n".join(pending)
        if statement.count("(") > statement.count(")"):
            continue
        pending = []
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            continue
        for name, qualified in imports_in(tree.body, path).items():
            out.setdefault(name, set()).update(qualified)
    return out


def single_bindings(bindings: Iterable[Mapping[str, set[str]]]) -> dict[str, str]:
    """Each name that ``bindings`` (of one file's side, or of several files) bind to one
    qualified name only, with it."""
    found: dict[str, set[str]] = {}
    for names in bindings:
        for name, qualified in names.items():
            found.setdefault(name, set()).update(qualified)
    return {name: next(iter(q)) for name, q in found.items() if len(q) == 1}
