"""``--engine-option KEY=VALUE``: the measuring commands' advanced settings, behind one flag.

Each command names its keys, what reads each value and the line ``--help`` says of it
(``Known``); a key no command knows is refused with the known keys named, a value its reader
refuses with the reader's reason, and a key given twice with a UsageError. The everyday flags
stay few; what a maintainer rarely changes lives here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bot.errors import UsageError

# key -> (the reader of its value, raising argparse.ArgumentTypeError; its line of --help)
Known = Mapping[str, tuple[Callable[[str], object], str]]


def on_off(text: str) -> bool:
    value = text.strip().lower()
    if value in ("on", "true", "yes", "1"):
        return True
    if value in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not on or off")


def folder(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty folder name")
    return Path(text).resolve()


def add_engine_option(parser: argparse.ArgumentParser, known: Known) -> None:
    """The command's ``--engine-option``, repeatable; ``args.engine_option`` holds the
    (key, value) pairs, each value read by its key's reader."""

    def one(text: str) -> tuple[str, object]:
        key, sep, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            what = f"{key!r} is not an engine option" if sep else f"{text!r} is not KEY=VALUE"
            raise argparse.ArgumentTypeError(f"{what}; the known keys: {', '.join(known)}")
        read, _ = known[key]
        try:
            return key, read(value)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{key}: {exc}") from None

    parser.add_argument(
        "--engine-option",
        metavar="KEY=VALUE",
        action="append",
        type=one,
        default=[],
        help="an advanced setting (repeatable): "
        + "; ".join(f"{key}: {what}" for key, (_, what) in known.items()),
    )


def given(pairs: Sequence[tuple[str, object]]) -> dict[str, object]:
    """The settings a command line gave; a key given twice is a UsageError."""
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise UsageError(
            f"--engine-option {', '.join(twice)} given more than once", hint="give each key once"
        )
    return dict(pairs)
