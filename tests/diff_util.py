"""Git-style unified diffs of in-memory files, for tests that analyse a change without a
repository."""

from __future__ import annotations

import difflib


def file_diff(path: str, before: str | None, after: str) -> str:
    """The ``diff --git`` text of one file from ``before`` (None: a new file) to ``after``."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{path}" if before is not None else "/dev/null",
        f"b/{path}",
    )
    head = f"diff --git a/{path} b/{path}\n"
    if before is None:
        head += "new file mode 100644\n"
    return head + "".join(lines)
