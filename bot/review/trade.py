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

A shape the policy does not serve decides neither way unless it collapsed
(``bot.review.served``): over the price there, it is named as a condition of its own.

A tuning, body or launch change keeps the tolerance, and so does every kernel of a pull request
whose two sides are known to run different toolchains (another triton or torch): there a
slowdown may be the toolchain's, not the rewrite's. The
sentence that states a trade says what it costs (how much slower, at how many shapes, within
which price) and what it gives (Part A's lines and files, the vendors one source serves, the
nvcc or hipcc build it no longer needs); over the price, a sentence says the same so that a
maintainer can weigh it, and what to do either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.contracts.accept import AcceptedLine
from bot.contracts.evidence import Evidence, ShapeLine
from bot.contracts.review import ChangeLine, PartATable, Requirements
from bot.outputs import plural
from bot.review.served import decides
from bot.review.toolchain import toolchain_differs
from bot.words import language, percent, slower_by

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
    return price_state(x, price) == "within" and not x.varied_between_processes


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


_BUILDS = {"cuda": "nvcc", "hip": "hipcc"}  # the compiler a hand-written language needs


def _builds(change: ChangeLine) -> str:
    """The build a rewrite no longer needs: ", and needs no nvcc or hipcc build for it" (once
    the kept kernel goes, where it is kept)."""
    old = [p.strip().lower() for p in (change.old_language or "").split("+")]
    tools = [_BUILDS[p] for p in old if p in _BUILDS]
    if not tools:
        return ""
    kept = " once the kept kernel goes" if change.old_kernel_kept else ""
    return f", and needs no {' or '.join(tools)} build for it{kept}"


def _gives(kernel: str, changes: Sequence[ChangeLine], part_a: Sequence[PartATable]) -> str:
    """What a rewrite gives, in Part A's numbers where they were counted, and the build it
    no longer needs."""
    change = next(c for c in changes if c.kernel == kernel)
    table = next((t for t in part_a if t.kernel == kernel), None)
    if table is None or table.old_lines is None or table.new_lines is None:
        old = language(change.old_language) if change.old_language else "CUDA/HIP"
        new = language(change.new_language) if change.new_language else "a kernel language"
        return f"replaces hand-written {old} with {new}{_builds(change)}"
    per_vendor = " per vendor" if table.old_lines_one_vendor else ""
    old_files = f"{plural(table.old_files, 'file')} of " if table.old_files else ""
    new_files = f"{plural(table.new_files, 'file')} of " if table.new_files else ""
    text = (
        f"replaces {old_files}{table.old_label} ({table.old_lines} lines of kernel and launch "
        f"code{per_vendor}) with {new_files}{table.new_label} ({table.new_lines} lines)"
    )
    if table.new_files == 1 and {"nvidia", "amd"} <= set(table.new_vendors):
        text += ", one source for NVIDIA and AMD"
    return text + _builds(change)


@dataclass(frozen=True)
class _Priced:
    """A priced rewrite's slower shapes, by where they stand against its price."""

    kernel: str
    price: float
    timed: int  # shapes with a ratio
    paid: tuple[ShapeLine, ...]  # slower than tolerance, within the price
    over: tuple[ShapeLine, ...]  # over it at a shape that decides (served, collapsed)
    aside: int  # over it only at shapes nobody serves (bot.review.served): named, not paid
    clear: bool  # nothing failed, nothing undecided against the price


def _priced(
    changes: Sequence[ChangeLine],
    req: Requirements,
    ev: Evidence,
    accepted: Sequence[AcceptedLine],
) -> list[_Priced]:
    """Each priced rewrite's slower shapes (those an acceptance covers are the acceptance's)."""
    covered = {
        (a.kernel, tuple(a.shape), a.dtype, a.vendor) for a in accepted if a.state == "accepted"
    }
    gpu = [s for s in ev.sweeps if s.timing_kind == "gpu"]
    priced = priced_kernels(changes, ev)
    out = []
    for kernel in dict.fromkeys(c.kernel for c in changes if c.kernel in priced):
        price = req.price_of(kernel)
        cases = [(s.vendor, x) for s in gpu for x in s.shapes if x.kernel == kernel]
        paid, over = [], []
        aside, clear = 0, True
        for vendor, x in cases:
            if x.verdict in ("SAME", "FASTER"):
                continue
            if x.verdict == "SLOWER" and (kernel, tuple(x.shape), x.dtype, vendor) in covered:
                continue
            if x.verdict == "INCONCLUSIVE":
                clear = clear and inconclusive_within(x, price)
            elif x.verdict != "SLOWER":  # a failure
                clear = False
            elif price_state(x, price) == "within":
                paid.append(x)
            elif price_state(x, price) == "over" and decides(x):
                over.append(x)
            elif price_state(x, price) == "over":
                aside += 1
            else:
                clear = False
        timed = sum(1 for _, x in cases if x.ratio is not None)
        out.append(_Priced(kernel, price, timed, tuple(paid), tuple(over), aside, clear))
    return out


def _slower_by(shapes: Sequence[ShapeLine]) -> str:
    """How much slower ``shapes`` are: "by 4.3–6.1%" (the first screen's worst shapes name
    them)."""
    ratios = [x.ratio or 1.0 for x in shapes]
    return slower_by(min(ratios), max(ratios))


def trade_sentences(
    changes: Sequence[ChangeLine],
    req: Requirements,
    ev: Evidence,
    accepted: Sequence[AcceptedLine] = (),
    part_a: Sequence[PartATable] = (),
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The trade each priced rewrite makes, in one sentence: those within their price, then
    those over it.

    Within: a rewrite that pays a measured slowdown within its price and nothing beyond it at a
    shape that decides (shapes slower than its tolerance, every one within its price or at a
    shape nobody serves, none failed or undecided). Over: a rewrite over its price at a shape
    that decides, what it gives up there and what it deletes, so that a maintainer can weigh
    the two (``OVER_ADVICE`` says what to do either way). Shapes an acceptance covers are the
    acceptance's, not the trade's."""
    within, over = [], []
    for k in _priced(changes, req, ev, accepted):
        gives = _gives(k.kernel, changes, part_a)
        if k.over:
            over.append(
                f"{k.kernel}, slower {_slower_by(k.over)} at {len(k.over)} of its {k.timed} measured shapes, "
                f"{gives}."
            )
        elif k.clear and k.paid:
            aside = (
                f", and past it at {plural(k.aside, 'added shape')} nobody serves (condition 1)"
                if k.aside
                else ""
            )
            within.append(
                f"{k.kernel} is slower {_slower_by(k.paid)} at {len(k.paid)} of its {k.timed} "
                f"measured shapes, within its {percent(k.price)} rewrite price{aside}; in return it "
                f"{gives}."
            )
    return tuple(within), tuple(over)


OVER_ADVICE = (
    "bring each shape over it back within it or, if the code deleted is worth more, raise the "
    "kernel's `rewrite_price` in the base branch's policy"
)
