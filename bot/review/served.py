"""How much a slower shape weighs, by whether the policy serves it (the seed's Part D). Pure.

The sweep times the policy's own shapes (served) and the small and ragged ones the planner adds
around them (``ShapeLine.small_or_ragged``). A slowdown past the tolerance, or past a rewrite's
price, at a served shape requests changes. At an added shape it does so only when the shape
collapses, its time at least ``COLLAPSE`` times the base's (the lower end of its interval, so
the sweep tells it apart): a cliff there is one any served shape of that kind would fall off.
Any other slowdown at an added shape is named, with the time it adds to a call, as an open
condition: the maintainer confirms that no caller passes such shapes, or adds them to the
policy's ``shapes``, where they are judged strictly from then on.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.contracts.evidence import ShapeLine
from bot.outputs import plural
from bot.words import number, speed

COLLAPSE = 2.0  # head / base from which an added shape's slowdown blocks as if served


def collapsed(x: ShapeLine) -> bool:
    """Whether ``x`` takes at least ``COLLAPSE`` times the base's time, told apart by the
    sweep: the lower end of its interval (its ratio where there is none)."""
    low = x.ci_low if x.ci_low is not None else x.ratio
    return low is not None and low >= COLLAPSE


def decides(x: ShapeLine) -> bool:
    """Whether a slowdown at ``x`` past what the policy allows requests changes: the policy
    serves the shape, or it collapsed."""
    return not x.small_or_ragged or collapsed(x)


def _added_us(x: ShapeLine) -> float | None:
    """The time the head adds to one call of ``x``, in µs; None where a side was not timed."""
    if x.base_us is None or x.head_us is None:
        return None
    return x.head_us - x.base_us


def unserved_words(aside: Sequence[tuple[str, ShapeLine]], vendors: int) -> str:
    """The added shapes slower than allowed that do not block, in one clause: how many, how
    much slower at most, and the most time one adds to a call, that shape named where it is not
    the slowest (the first screen's worst shapes name the slowest)."""
    shapes = [x for _, x in aside]
    n = len(shapes)
    worst = max(x.ratio or 1.0 for x in shapes)
    notes = [f"up to {speed(worst)}" if n > 1 else speed(worst)]
    timed = [(extra, v, x) for v, x in aside if (extra := _added_us(x)) is not None]
    if timed:
        extra, vendor, x = max(timed, key=lambda t: t[0])
        amount = f"+{number(extra, 2 if extra < 1 else 1 if extra < 10 else 0)} µs a call"
        on = f" on {vendor}" if vendors > 1 else ""
        where = f"{x.kernel} {'x'.join(map(str, x.shape))} {x.dtype}{on}"
        # named where it is not the slowest, which the first screen's worst shapes name
        slowest = (x.ratio or 1.0) >= worst
        notes.append(amount if n == 1 else f"up to {amount}" + ("" if slowest else f", at {where}"))
    them = "them" if n > 1 else "it"
    return (
        f"not blocking: {plural(n, 'added shape')} the policy does not serve, slower than "
        f"allowed ({('; ' if n > 1 else ', ').join(notes)}): confirm "
        f"{'none is' if n > 1 else 'it is not'} served, or add {them} to the policy's `shapes`"
    )
