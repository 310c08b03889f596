"""One sign convention for speed, in words: "9.0% faster", "5.7% slower", "2.4x slower".

A ratio is head time / base time. Below 1 the head is faster by ``1 - ratio`` of the base's time;
above 1 it is slower by ``ratio - 1``, and from twice the time on it is said as a multiple. The
review, the job summary and ``kernel-review bench`` all say it this way, so no reader has to
guess what a sign means.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

SAME_WITHIN = 0.0005  # |ratio - 1| below this is "as fast" at one decimal of a percent
MULTIPLE_FROM = 2.0  # from this ratio on: "2.4x slower"


LARGE = 1e6  # from here on a number is written in powers of ten


def number(x: float, places: int = 0) -> str:
    """Every number the review prints, in one form: ``places`` decimals below a million, beyond
    that a power of ten ("3.2×10^12"), so that no bound or time runs to dozens of digits."""
    if not math.isfinite(x):
        return "not a number" if math.isnan(x) else ("∞" if x > 0 else "-∞")
    if abs(x) >= LARGE:
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa}×10^{int(exponent)}"
    return f"{x:.{places}f}"


def and_list(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def percent(fraction: float) -> str:
    """A fraction as a percentage with at most one decimal: 0.05 -> "5%", 0.025 -> "2.5%"."""
    return f"{number(fraction * 100, 1).removesuffix('.0')}%"


def _amount(ratio: float) -> str:
    if ratio >= MULTIPLE_FROM:
        return f"{number(ratio, 1)}x"
    return f"{number(abs(ratio - 1.0) * 100, 1)}%"


def speed(ratio: float) -> str:
    """``ratio`` (head time / base time) in words: "9.0% faster", "5.7% slower", "2.4x slower"."""
    if abs(ratio - 1.0) < SAME_WITHIN:
        return "as fast"
    return f"{_amount(ratio)} {'slower' if said_slower(ratio) else 'faster'}"


def said_slower(ratio: float) -> bool:
    """Whether ``speed`` says ``ratio`` is slower (not "as fast")."""
    return ratio > 1.0 and abs(ratio - 1.0) >= SAME_WITHIN


def speed_range(low: float, high: float) -> str:
    """An interval of ratios in words: "8.0–10.0% faster", "3.1–5.2% slower", "4.4% to 2.4x
    slower", and one that spans 1 end by end: "2.0% faster to 1.0% slower"."""
    low, high = min(low, high), max(low, high)
    if high < 1.0 - SAME_WITHIN:
        a, b = _amount(high), _amount(low)  # the smaller speed-up first
        return f"{a} faster" if a == b else f"{a[:-1]}–{b} faster"
    if low > 1.0 + SAME_WITHIN:
        return slower_by(low, high).removeprefix("by ") + " slower"
    return f"{speed(low)} to {speed(high)}"


def interval_words(ratio: float, low: float, high: float) -> str:
    """The interval of ``ratio`` as said beside it: "3.2–3.8%" beside "3.5% slower" (the word
    said once); an interval that crosses 1 in full."""
    said, interval = speed(ratio), speed_range(low, high)
    for word in (" slower", " faster"):
        if said.endswith(word) and interval.endswith(word) and " to " not in interval:
            return interval.removesuffix(word)
    return interval


def speed_within(ratio: float, low: float, high: float) -> str:
    """A ratio and its interval: "3.5% slower (3.2–3.8%)"; the ratio alone where its interval
    reads the same."""
    said = speed(ratio)
    return (
        said if speed_range(low, high) == said else f"{said} ({interval_words(ratio, low, high)})"
    )


def slower_by(low: float, high: float) -> str:
    """How much slower a set of ratios above 1 is, lowest to highest: "by 5.7%", "by 3.7–5.7%",
    "by 4.4% to 2.4x", "by 2.2–2.4x"."""
    low, high = min(low, high), max(low, high)
    a, b = _amount(low), _amount(high)
    if a == b:
        return f"by {a}"
    if a[-1] == b[-1]:
        return f"by {a[:-1]}–{b}"
    return f"by {a} to {b}"


_LANGUAGES = {"cuda": "CUDA", "hip": "HIP", "triton": "Triton"}


def language(name: str) -> str:
    """A kernel language as the review writes it: "cuda+hip" -> "CUDA + HIP", an unknown one
    as given."""
    parts = [p.strip() for p in re.split(r"\s*\+\s*", name)]
    return " + ".join(_LANGUAGES.get(p.lower(), p) for p in parts)
