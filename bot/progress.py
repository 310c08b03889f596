"""Progress of a long command on stderr: a bar in a terminal, plain lines in a CI log.

Every command that takes more than a few seconds (``bench``, ``compiler-report``,
``first-call``, the local review) reports through one ``Progress``: ``step(text)`` when a unit
of work is done, ``say(text)`` for a line that stays. In a terminal a ``tqdm`` bar counts the
steps and its clock keeps running between them; elsewhere (a pipe, a CI log) each step is one
line, ``what [i/n] text``, so a log shows where a slow job is, and with ``quiet_s`` one more,
``what [i/n] still at work after N s``, each ``quiet_s`` seconds without a line, as the
terminal's clock runs. ``KERNEL_REVIEW_PROGRESS=bar`` or ``=lines`` overrides the choice.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import IO, Any

from bot.escape import log_safe

REFRESH_S = 1.0


def _bar_wanted(stream: IO[str]) -> bool:
    choice = os.environ.get("KERNEL_REVIEW_PROGRESS", "").strip().lower()
    if choice in ("bar", "lines"):
        return choice == "bar"
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """``total`` steps of ``what`` (``None``: not known in advance)."""

    def __init__(
        self,
        what: str,
        total: int | None,
        *,
        stream: IO[str] | None = None,
        unit: str = "step",
        counted: bool = True,
        quiet_s: float | None = None,
    ) -> None:
        self.what = what
        # in a log, a line each ``quiet_s`` without one, as a terminal's bar redraws its clock
        self.quiet_s = quiet_s
        self._start = self._last_line = time.monotonic()
        self.counted = counted  # False: each step's text carries its own "[i/n]"
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()
        self._bar: Any = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if _bar_wanted(self.stream):
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=what, unit=unit, file=self.stream, dynamic_ncols=True, leave=True
            )
        if self._bar is not None or quiet_s is not None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:  # the bar's clock runs while one step takes long; in a log, a line
        while not self._stop.wait(min(REFRESH_S, self.quiet_s or REFRESH_S)):
            with self._lock:
                if self._bar is not None:
                    self._bar.refresh()
                elif self.quiet_s is not None:
                    now = time.monotonic()
                    if now - self._last_line >= self.quiet_s:
                        self._line(f"still at work after {now - self._start:.0f} s")

    def step(self, text: str = "", n: int = 1) -> None:
        """``n`` more steps are done; ``text`` says which."""
        text = log_safe(text)
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.set_postfix_str(text[:60], refresh=False)
                self._bar.update(n)
                return
            if not self.counted:
                self._print(text)
                return
            self._line(text)

    def _line(self, text: str) -> None:  # with the lock held
        count = f"[{self.done}/{self.total}]" if self.total else f"[{self.done}]"
        self._print(f"{self.what} {count} {text}".rstrip())

    def _print(self, line: str) -> None:  # with the lock held
        print(line, file=self.stream, flush=True)
        self._last_line = time.monotonic()

    def say(self, text: str) -> None:
        """A line that stays (above the bar in a terminal)."""
        text = log_safe(text)
        with self._lock:
            if self._bar is not None:
                self._bar.write(text, file=self.stream)
            else:
                self._print(text)

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
