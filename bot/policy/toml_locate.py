"""Where each key and value of a TOML document sits: key path -> (line, column).

tomllib returns plain data without positions; error messages that name a line need them. This is a
small scanner over text that tomllib has already accepted: table headers ``[a.b]``, every
``[[a]]`` occurrence (indexed like the parsed list), ``key = value`` lines with dotted and quoted
keys, and arrays and inline tables spanning lines. Best effort by design: whatever it cannot place,
:meth:`TomlLocations.find` places at the nearest enclosing key or table it did see.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from dataclasses import dataclass, field

Path_ = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_SCALAR = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}[^\s,\]\}#]*|[^\s,\]\}#]+"  # a date-time may hold a space
)


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based
    value_line: int
    value_column: int


@dataclass
class TomlLocations:
    text: str
    _offsets: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    _line_starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\n", self.text)]

    def _line_col(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def find(self, path: Path_) -> tuple[Position | None, Path_]:
        """The position of ``path`` or of its nearest located ancestor, and which path that was."""
        for n in range(len(path), -1, -1):
            hit = self._offsets.get(tuple(path[:n]))
            if hit is not None:
                line, col = self._line_col(hit[0])
                vline, vcol = self._line_col(hit[1])
                return Position(line, col, vline, vcol), tuple(path[:n])
        return None, ()


def locate(text: str) -> TomlLocations:
    """Scan ``text`` (valid TOML) and return where its keys are; never raises."""
    locations = TomlLocations(text)
    # Best effort: on anything unexpected keep what was found before the scanner lost its way.
    with contextlib.suppress(IndexError, ValueError, RecursionError):
        _Scanner(text, locations._offsets).run()
    return locations


class _Scanner:
    def __init__(self, text: str, offsets: dict[Path_, tuple[int, int]]) -> None:
        self.text = text
        self.pos = 0
        self.offsets = offsets
        self.array_tables: dict[Path_, int] = {}

    def mark(self, path: Path_, key_at: int, value_at: int | None = None, dotted: int = 1) -> None:
        """Record ``path``; with a dotted key (``a.b = 1`` defines table ``a`` too) also the
        ``dotted - 1`` tables it implies."""
        self.offsets.setdefault(path, (key_at, key_at if value_at is None else value_at))
        for n in range(len(path) - dotted + 1, len(path)):
            self.offsets.setdefault(path[:n], (key_at, key_at))

    def skip(self, newlines: bool = True) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.pos += 1
            elif ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end == -1 else end
            else:
                return

    def expect(self, token: str) -> None:
        self.skip(newlines=False)
        if not self.text.startswith(token, self.pos):
            raise ValueError(f"expected {token!r} at {self.pos}")
        self.pos += len(token)

    def run(self) -> None:
        table: Path_ = ()
        while True:
            self.skip()
            if self.pos >= len(self.text):
                return
            start = self.pos
            if self.text.startswith("[[", self.pos):
                self.pos += 2
                keys = self.key()
                self.expect("]]")
                base = (*self.resolve(keys[:-1]), keys[-1])
                index = self.array_tables.get(base, 0)
                self.array_tables[base] = index + 1
                self.mark(base, start)
                table = (*base, index)
                self.mark(table, start)
            elif self.text[self.pos] == "[":
                self.pos += 1
                table = self.resolve(self.key())
                self.expect("]")
                self.mark(table, start)
            else:
                keys = self.key()
                self.expect("=")
                self.skip(newlines=False)
                path = table + keys
                self.mark(path, start, self.pos, dotted=len(keys))
                self.value(path)

    def resolve(self, keys: tuple[str, ...]) -> Path_:
        """Dotted header keys -> a path, stepping into the latest entry of each array of tables."""
        path: Path_ = ()
        for key in keys:
            path = (*path, key)
            if path in self.array_tables:
                path = (*path, self.array_tables[path] - 1)
        return path

    def key(self) -> tuple[str, ...]:
        parts: list[str] = []
        while True:
            self.skip(newlines=False)
            text, pos = self.text, self.pos
            if text.startswith('"', pos):
                match = _BASIC.match(text, pos)
                if match is None:
                    raise ValueError("unterminated quoted key")
                try:
                    parts.append(json.loads(match.group()))
                except ValueError:
                    parts.append(match.group()[1:-1])
            elif text.startswith("'", pos):
                match = _LITERAL.match(text, pos)
                if match is None:
                    raise ValueError("unterminated literal key")
                parts.append(match.group()[1:-1])
            else:
                match = _BARE_KEY.match(text, pos)
                if match is None:
                    raise ValueError(f"no key at {pos}")
                parts.append(match.group())
            self.pos = match.end()
            self.skip(newlines=False)
            if not self.text.startswith(".", self.pos):
                return tuple(parts)
            self.pos += 1

    def value(self, path: Path_) -> None:
        text, pos = self.text, self.pos
        if text.startswith("[", pos):
            self.pos += 1
            index = 0
            while True:
                self.skip()
                if self.text.startswith("]", self.pos):
                    self.pos += 1
                    return
                self.mark((*path, index), self.pos)
                self.value((*path, index))
                index += 1
                self.skip()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
        elif text.startswith("{", pos):
            self.pos += 1
            while True:
                self.skip()
                if self.text.startswith("}", self.pos):
                    self.pos += 1
                    return
                start = self.pos
                keys = self.key()
                self.expect("=")
                self.skip(newlines=False)
                self.mark(path + keys, start, self.pos, dotted=len(keys))
                self.value(path + keys)
                self.skip()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
        elif text.startswith(('"""', "'''"), pos):
            self.pos = self._end_of_multiline(text[pos : pos + 3])
        elif text.startswith('"', pos):
            match = _BASIC.match(text, pos)
            self.pos = match.end() if match else len(text)
        elif text.startswith("'", pos):
            match = _LITERAL.match(text, pos)
            self.pos = match.end() if match else len(text)
        else:
            match = _SCALAR.match(text, pos)
            if match is None:
                raise ValueError(f"no value at {pos}")
            self.pos = match.end()

    def _end_of_multiline(self, quote: str) -> int:
        pos = self.pos + 3
        text = self.text
        while True:
            end = text.find(quote, pos)
            if end == -1:
                return len(text)
            if quote == '"""':
                backslashes = len(text[:end]) - len(text[:end].rstrip("\\"))
                if backslashes % 2:
                    pos = end + 1
                    continue
            end += 3
            while end < len(text) and text[end] == quote[0]:  # up to two quotes may end it
                end += 1
            return end
