"""Files a command writes where the user asked (``--out``, ``--json``): the folder is made when
it is missing, and a path that cannot be written is an error that says so, not a traceback."""

from __future__ import annotations

from pathlib import Path

from bot.errors import UsageError


def prepare(path: str | Path, *, option: str) -> Path:
    """``path`` with its folder made; raises ``UsageError`` when that cannot be done."""
    where = Path(path).expanduser()
    if where.is_dir():
        raise UsageError(
            f"{option} {path} is a folder", hint=f"give {option} a file name, e.g. {where / 'x'}"
        )
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot make the folder {where.parent} ({exc.strerror})",
            hint=f"give {option} a path in a folder you can write",
        ) from None
    return where


def write_text(path: str | Path, text: str, *, option: str) -> Path:
    """Write ``text`` to ``path`` (its folder made when missing)."""
    where = prepare(path, option=option)
    try:
        where.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot write it ({exc.strerror})",
            hint=f"give {option} a path you can write",
        ) from None
    return where
