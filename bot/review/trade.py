"""The trade a rewrite makes (the seed's Part D): a modest slowdown paid for the code it deletes.
Pure.

A kernel whose every change in the pull request is a rewrite of a hand-written CUDA/HIP kernel
is judged, at each shape the sweep found slower than its tolerance or could not tell from it,
against its rewrite price (the policy's ``rewrite_price``) instead:

- within the price: the upper end of the shape's 95% interval (its ratio where there is none)
  is at most ``1 + price`` (for a shape the sweep could not decide, only where its executions
  agreed);
- over the price: the lower end is above ``1 + price``, so the sweep tells it apart;
- undecided: the interval crosses ``1 + price``.

A tuning, body or launch change keeps the tolerance, and so does every kernel of a pull request
whose two sides are known to run different toolchains (another triton or torch): there a
slowdown may be the toolchain's, not the rewrite's. The
sentence that states a trade says what it costs (how much slower, at how many shapes, within
which price) and what it gives (Part A's lines and files, the vendors one source serves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from bot.contracts.accept import AcceptedLine
from bot.contracts.evidence import Evidence, ShapeLine
from bot.contracts.review import ChangeLine, PartATable, Requirements
from bot.outputs import plural
from bot.review.explain import varied_between_processes
from bot.review.toolchain import toolchain_differs
from bot.review.words import and_list, percent, slower_by, speed

PriceState = Literal["within", "over", "undecided"]
HAND_WRITTEN = frozenset({"cuda", "hip"})  # the languages a priced rewrite replaces


def _hand_written(c: ChangeLine) -> bool:
    """Whether ``c`` replaces hand-written CUDA/HIP with a kernel language that is not."""
    old = {p.strip().lower() for p in (c.old_language or "").split("+")} - {""}
    new = {p.strip().lower() for p in (c.new_language or "").split("+")} - {""}
    return bool(old) and old <= HAND_WRITTEN and not new & HAND_WRITTEN


def priced_kernels(changes: Sequence[ChangeLine], ev: Evidence) -> frozenset[str]:
    """The policy kernels judged at their rewrite price: each change to them is a rewrite of a
    hand-written kernel, and the two sides are not known to run different toolchains (a rewrite
    to Triton often adds a triton pin at the version both sides run)."""
    if toolchain_differs(changes, ev):  # known to run another triton or torch on each side
        return frozenset()
    rewrites: dict[str, bool] = {}
    for c in changes:
        if c.kind == "toolchain":
            continue
        ok = c.mapped and c.kind == "rewrite" and _hand_written(c)
        rewrites[c.kernel] = rewrites.get(c.kernel, True) and ok
    return frozenset(k for k, ok in rewrites.items() if ok)


def price_state(x: ShapeLine, price: float) -> PriceState | None:
    """Where shape ``x`` stands against a rewrite price; None when it was not timed."""
    high = x.ci_high if x.ci_high is not None else x.ratio
    low = x.ci_low if x.ci_low is not None else x.ratio
    if high is None or low is None:
        return None
    limit = 1.0 + price
    if high <= limit:
        return "within"
    if low > limit:
        return "over"
    return "undecided"


def inconclusive_within(x: ShapeLine, price: float) -> bool:
    """Whether a shape the sweep could not tell from the tolerance is within the rewrite price:
    its interval is, and its executions (fresh processes) did not disagree, since a process
    there may run at a speed the interval does not show."""
    return price_state(x, price) == "within" and not varied_between_processes(x.detail)


def price_words(kernels: Sequence[str], req: Requirements) -> str:
    """The rewrite price the ``kernels`` are judged at, quoted as the policy has it per kernel:
    "softmax's 8% rewrite price", or "each rewrite's price (softmax 8%, vector_add 6%)"."""
    each = {k: req.price_of(k) for k in kernels}
    if len(each) == 1:
        [(kernel, price)] = each.items()
        return f"{kernel}'s {percent(price)} rewrite price"
    if len(set(each.values())) == 1:
        return f"the {percent(next(iter(each.values())))} rewrite price"
    return "each rewrite's price (" + ", ".join(f"{k} {percent(p)}" for k, p in each.items()) + ")"


def _shape(x: ShapeLine) -> str:
    return f"{'x'.join(map(str, x.shape))} {x.dtype}"


def _gives(kernel: str, changes: Sequence[ChangeLine], part_a: Sequence[PartATable]) -> str:
    """What a rewrite gives, in Part A's numbers where they were counted."""
    table = next((t for t in part_a if t.kernel == kernel), None)
    if table is None or table.old_lines is None or table.new_lines is None:
        change = next(c for c in changes if c.kernel == kernel)
        return (
            f"replaces hand-written {change.old_language or 'CUDA/HIP'} with "
            f"{change.new_language or 'a kernel language'}"
        )
    per_vendor = " per vendor" if table.old_lines_one_vendor else ""
    old_files = f"{plural(table.old_files, 'file')} of " if table.old_files else ""
    new_files = f"{plural(table.new_files, 'file')} of " if table.new_files else ""
    text = (
        f"replaces {old_files}{table.old_label} ({table.old_lines} lines of kernel and launch "
        f"code{per_vendor}) with {new_files}{table.new_label} ({table.new_lines} lines)"
    )
    if table.new_files == 1 and {"nvidia", "amd"} <= set(table.new_vendors):
        text += ", one source for NVIDIA and AMD"
    return text


def trade_sentences(
    changes: Sequence[ChangeLine],
    req: Requirements,
    ev: Evidence,
    accepted: Sequence[AcceptedLine] = (),
    part_a: Sequence[PartATable] = (),
) -> tuple[str, ...]:
    """One sentence per priced rewrite that pays a measured slowdown within its price and
    nothing beyond it: shapes slower than its tolerance, every one within its price, none over
    it, undecided or failed. Shapes an acceptance covers are the acceptance's, not the trade's."""
    covered = {
        (a.kernel, tuple(a.shape), a.dtype, a.vendor) for a in accepted if a.state == "accepted"
    }
    gpu = [s for s in ev.sweeps if s.timing_kind == "gpu"]
    priced = priced_kernels(changes, ev)
    out = []
    for kernel in dict.fromkeys(c.kernel for c in changes if c.kernel in priced):
        price = req.price_of(kernel)
        cases = [(s.vendor, x) for s in gpu for x in s.shapes if x.kernel == kernel]
        paid: list[tuple[str, ShapeLine]] = []
        clear = True
        for vendor, x in cases:
            if x.verdict in ("SAME", "FASTER"):
                continue
            if x.verdict == "SLOWER" and (kernel, tuple(x.shape), x.dtype, vendor) in covered:
                continue
            within = (
                price_state(x, price) == "within"
                if x.verdict == "SLOWER"
                else x.verdict == "INCONCLUSIVE" and inconclusive_within(x, price)
            )
            clear = clear and within
            if within and x.verdict == "SLOWER":
                paid.append((vendor, x))
        if not clear or not paid:
            continue
        timed = sum(1 for _, x in cases if x.ratio is not None)
        ratios = [x.ratio or 1.0 for _, x in paid]
        worst_vendor, worst = max(paid, key=lambda p: p[1].ratio or 1.0)
        on = f" on {worst_vendor}" if len(gpu) > 1 else ""
        out.append(
            f"{kernel} is slower {slower_by(min(ratios), max(ratios))} at {len(paid)} of its "
            f"{timed} measured shapes (the most at {_shape(worst)}{on}), within its "
            f"{percent(price)} rewrite price; in return it {_gives(kernel, changes, part_a)}."
        )
    return tuple(out)


LISTED = 3  # shapes over the price named per kernel; the rest are counted


def over_words(over: Sequence[tuple[str, ShapeLine]], req: Requirements, vendors: int) -> str:
    """The shapes over their kernel's rewrite price, named, kernel by kernel: "softmax over its
    6% rewrite price at 1823x781 float16 (9.1% slower) and 1x781 float16 (31.0% slower)"."""
    parts = []
    for kernel in dict.fromkeys(x.kernel for _, x in over):
        mine = sorted(
            ((v, x) for v, x in over if x.kernel == kernel), key=lambda p: -(p[1].ratio or 1.0)
        )
        named = [
            f"{_shape(x)}{f' on {v}' if vendors > 1 else ''} ({speed(x.ratio or 1.0)})"
            for v, x in mine[:LISTED]
        ]
        if len(mine) > LISTED:
            named.append(f"{len(mine) - LISTED} more")
        parts.append(
            f"{kernel} over its {percent(req.price_of(kernel))} rewrite price at {and_list(named)}"
        )
    return "; ".join(parts)
