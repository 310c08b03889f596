"""What a command writes for the user: files where the user asked (``--out``, ``--json``; the
folder must exist, never made for the user, and a path that cannot be written is an error that
says so, not a traceback), the cache folder for what was not asked for, and counted words."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from bot.errors import UsageError


def prepare(path: str | Path, *, option: str, make_folder: bool = False) -> Path:
    """``path``, checked before the work that writes it: not a folder, in a folder that exists
    (made, with any folders above it, only with ``make_folder``: the cache's own paths). Raises
    ``UsageError`` saying what to do otherwise."""
    where = Path(path).expanduser()
    if where.is_dir():
        raise UsageError(
            f"{option} {path} is a folder", hint=f"give {option} a file name, e.g. {where / 'x'}"
        )
    folder = where.parent
    if make_folder:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"{option} {path}: cannot make the folder {folder} ({exc.strerror})",
                hint=f"give {option} a path in a folder you can write",
            ) from None
    elif not folder.is_dir():
        if folder.exists() or folder.is_symlink():
            raise UsageError(
                f"{option} {path}: {folder} is not a folder",
                hint=f"give {option} a path in an existing folder",
            )
        raise UsageError(
            f"{option} {path}: the folder {folder} does not exist",
            hint=f"create it first (mkdir -p {folder}), or give {option} a path in an existing "
            "folder",
        )
    return where


def write_text(path: str | Path, text: str, *, option: str) -> Path:
    """Write ``text`` to ``path``, in a folder that exists (see ``prepare``)."""
    where = prepare(path, option=option)
    try:
        where.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot write it ({exc.strerror})",
            hint=f"give {option} a path you can write",
        ) from None
    return where


JOURNAL_SUFFIX = ".partial.jsonl"


def journal_path(results: Path) -> Path:
    """The journal ``kernel-review bench`` keeps beside the results file it is to write
    (``results.partial.jsonl`` for ``results.json``): each case as it is measured, so a run
    killed before its end still leaves what it finished (``checks.sweep.journal``)."""
    return results.with_name(results.stem + JOURNAL_SUFFIX)


def cache_root() -> Path:
    """Where kernel-review keeps what it makes outside the user's repository (compile caches,
    build outputs, bench results not asked for elsewhere): ``$KERNEL_REVIEW_CACHE``, else
    ``$XDG_CACHE_HOME/kernel-review``, else ``~/.cache/kernel-review``."""
    env = os.environ.get("KERNEL_REVIEW_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-review"


def triton_key_dir() -> Path:
    """Where Triton's key is kept between runs (``checks/worker/triton_key.py``), for the
    workers, their zygote and the compiler report."""
    return cache_root() / "triton-key"


BYTECODE_SWITCH = "KERNEL_REVIEW_BYTECODE_CACHE"


def bytecode_dir() -> Path | None:
    """Where the zygote keeps torch's and Triton's compiled bytecode between runs, for an
    installation that ships none (``checks/worker/zygote.py``'s ``keep_bytecode``); None when
    ``KERNEL_REVIEW_BYTECODE_CACHE=0`` turned that off."""
    if os.environ.get(BYTECODE_SWITCH, "").strip() == "0":
        return None
    return cache_root() / "bytecode"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 case``, ``2 cases``; ``many`` for a plural that is not noun + s."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def text_width(text: str) -> int:
    """Columns ``text`` takes in a terminal (wide characters and emoji take two)."""
    return sum(
        0
        if unicodedata.combining(ch) or ch == "\ufe0f"
        else 2
        if unicodedata.east_asian_width(ch) in "WF"
        else 1
        for ch in text
    )


def columns(rows: list[list[str]], *, right: frozenset[int] = frozenset()) -> list[str]:
    """Rows of cells as aligned text columns, the first row a header underlined; no cell is
    cut. Columns in ``right`` are right-aligned (numbers)."""
    ncol = max(len(r) for r in rows)
    rows = [r + [""] * (ncol - len(r)) for r in rows]
    widths = [max(text_width(r[i]) for r in rows) for i in range(ncol)]

    def line(r: list[str]) -> str:
        pads = [" " * (w - text_width(c)) for c, w in zip(r, widths, strict=True)]
        return "  ".join(
            p + c if i in right else c + p for i, (c, p) in enumerate(zip(r, pads, strict=True))
        ).rstrip()

    return [line(rows[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in rows[1:]]
