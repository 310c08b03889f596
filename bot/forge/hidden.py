"""State the bot keeps in its own comments: one hidden line, a pydantic model as data.

A line of the form::

    <!-- kernel-review:KIND v1 BASE64URL-JSON -->

The JSON is base64url-encoded, so nothing a user wrote into it (a reason, a kernel name) can
end the HTML comment or show in the rendered text. Only comments written by the bot's own login
are read: a stranger who pastes such a line into their comment is ignored. A line that does
not decode, or does not validate, counts as absent.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bot.forge.types import CommentInfo

MAX_HIDDEN_CHARS = 256 * 1024
_KIND = re.compile(r"[a-z][a-z-]{0,30}")

M = TypeVar("M", bound=BaseModel)


def _pattern(kind: str) -> re.Pattern[str]:
    if not _KIND.fullmatch(kind):
        raise ValueError(f"not a hidden-state kind: {kind!r}")
    return re.compile(
        rf"^<!-- kernel-review:{kind} v1 ([A-Za-z0-9_=-]{{1,{MAX_HIDDEN_CHARS}}}) -->$", re.M
    )


def hidden(kind: str, value: BaseModel) -> str:
    """The hidden line carrying ``value``."""
    _pattern(kind)
    data = base64.urlsafe_b64encode(value.model_dump_json().encode("utf-8")).decode("ascii")
    return f"<!-- kernel-review:{kind} v1 {data} -->"


def read_hidden(body: str, kind: str, model: type[M]) -> M | None:
    """The value of the first ``kind`` line in ``body``, or None."""
    m = _pattern(kind).search(body)
    if m is None:
        return None
    try:
        return model.model_validate_json(base64.urlsafe_b64decode(m.group(1)))
    except (binascii.Error, ValueError, ValidationError):
        return None


def bot_records(
    comments: Iterable[CommentInfo], bot_login: str, kind: str, model: type[M]
) -> list[tuple[CommentInfo, M]]:
    """Each comment by ``bot_login`` carrying a ``kind`` line, oldest first, with its value."""
    out: list[tuple[CommentInfo, M]] = []
    for c in comments:
        if c.author != bot_login:
            continue
        value = read_hidden(c.body, kind, model)
        if value is not None:
            out.append((c, value))
    return out
