"""Whether a measured slowdown falls within an accepted one. Pure; the one place that decides.

Both forms of acceptance meet here: ``/bench accept`` (recorded on the pull request, with the
ratio measured when it was accepted) and ``[[accepted]]`` in the base branch's policy (a ratio,
an owner and an expiry date). The rule, for a shape the sweep found SLOWER:

- an acceptance names it when its kernel matches, and its shapes, dtype and vendor (where it
  gives them) include the shape's;
- it is within the acceptance while the measurement does not show it slower than the accepted
  ratio: the lower end of its confidence interval (the ratio itself where there is none) is at
  most ``max_ratio``. A bigger slowdown later is caught as soon as the sweep can tell it apart;
- a policy entry accepts up to and including its ``expires`` day; after that it names the shape
  only to say that it expired, and the shape is flagged again.

``/bench accept`` records ``max_ratio`` as the bound a later push must stay within: the upper
end of the interval it saw, so the same slowdown measured again stays accepted while a clearly
larger one does not, but never more than the kernel's tolerance beyond the ratio it measured
(``bound``). A later push is judged by the lower end of its interval, so an uncapped upper end
would let one noisy accepted run license any later slowdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date

from bot.contracts.accept import Acceptance, AcceptedLine, MeasuredRatio
from bot.contracts.evidence import ShapeLine, SweepEvidence
from bot.policy.model import Policy

MAX_MEASURED = 100  # slower cases the sticky comment keeps for /bench accept


def names(a: Acceptance, kernel: str, shape: Sequence[int], dtype: str, vendor: str) -> bool:
    """Whether acceptance ``a`` is about this case."""
    return (
        a.kernel == kernel
        and (not a.shapes or tuple(shape) in a.shapes)
        and a.dtype in (None, dtype)
        and a.vendor in (None, vendor)
    )


def expired(a: Acceptance, today: date) -> bool:
    return a.expires is not None and a.expires < today


def within(s: ShapeLine, a: Acceptance) -> bool:
    """Whether the measured shape does not show a slowdown beyond what ``a`` accepted."""
    low = s.ci_low if s.ci_low is not None else s.ratio
    return low is not None and low <= a.max_ratio


def judge_shape(
    s: ShapeLine, vendor: str, acceptances: Iterable[Acceptance], today: date
) -> AcceptedLine | None:
    """The judgement on one slower shape: accepted by the first acceptance it is within,
    else exceeded (the largest live acceptance it names), else expired; None when none names it."""
    named = [a for a in acceptances if names(a, s.kernel, s.shape, s.dtype, vendor)]
    live = [a for a in named if not expired(a, today)]
    fits = [a for a in live if within(s, a)]
    if fits:
        state, chosen = "accepted", fits[0]
    elif live:
        state, chosen = "exceeded", max(live, key=lambda a: a.max_ratio)
    elif named:
        state, chosen = "expired", max(named, key=lambda a: a.expires or date.min)
    else:
        return None
    return AcceptedLine(
        kernel=s.kernel,
        vendor=vendor,  # type: ignore[arg-type]
        dtype=s.dtype,
        shape=s.shape,
        ratio=s.ratio or 1.0,
        state=state,  # type: ignore[arg-type]
        acceptance=chosen,
    )


def judge(
    sweeps: Iterable[SweepEvidence], acceptances: Sequence[Acceptance], today: date
) -> tuple[AcceptedLine, ...]:
    """Every GPU-timed slower shape that an acceptance names, judged."""
    out: list[AcceptedLine] = []
    for sweep in sweeps:
        if sweep.timing_kind != "gpu":
            continue
        for s in sweep.slower:
            line = judge_shape(s, sweep.vendor, acceptances, today)
            if line is not None:
                out.append(line)
    return tuple(out)


def policy_acceptances(policy: Policy) -> tuple[Acceptance, ...]:
    """The base branch's ``[[accepted]]`` entries, in the form ``judge`` takes."""
    return tuple(
        Acceptance(
            kernel=e.kernel,
            shapes=tuple(tuple(s) for s in e.shapes),
            max_ratio=e.ratio,
            by=e.owner,
            reason=e.reason,
            source="policy",
            expires=e.expires,
        )
        for e in policy.accepted
    )


def measured_ratios(
    sweeps: Iterable[SweepEvidence], *, limit: int | None = MAX_MEASURED
) -> tuple[MeasuredRatio, ...]:
    """The GPU-timed slower shapes, slowest first, as the sticky comment keeps them for
    ``/bench accept`` (the ``limit`` slowest; None: all)."""
    found = [
        MeasuredRatio(
            kernel=s.kernel,
            vendor=sweep.vendor,
            dtype=s.dtype,
            shape=s.shape,
            ratio=s.ratio,
            ci_high=s.ci_high or None,
        )
        for sweep in sweeps
        if sweep.timing_kind == "gpu"
        for s in sweep.slower
        if s.ratio is not None
    ]
    return tuple(sorted(found, key=lambda m: -m.ratio)[:limit])


def bound(m: MeasuredRatio, tolerance: float) -> float:
    """The largest ratio a later push may show and stay accepted, for a case measured as ``m``.

    The upper end of ``m``'s interval, where it is narrow: the same slowdown measured again
    stays accepted. Capped at ``tolerance`` beyond the ratio measured (``ratio * (1 +
    tolerance)``): the tolerance is what the policy already calls the same speed, so a later
    push within it of the accepted slowdown is that slowdown, and anything more is one nobody
    accepted. A fixed cap would be too tight for a kernel with a wide tolerance and too loose
    for one with a narrow tolerance; the interval alone is as wide as the run was noisy.
    """
    return min(max(m.ratio, m.ci_high or m.ratio), m.ratio * (1 + tolerance))


def accept_measured(
    measured: Iterable[MeasuredRatio],
    *,
    kernel: str,
    shapes: Sequence[Sequence[int]],
    by: str,
    reason: str,
    head_sha: str,
    tolerance: float,
) -> tuple[Acceptance, ...]:
    """What ``/bench accept KERNEL [SHAPES]`` accepts: each slower case of ``kernel`` (at
    ``shapes``, when named) up to its ``bound`` under the kernel's ``tolerance``."""
    wanted = {tuple(s) for s in shapes}
    return tuple(
        Acceptance(
            kernel=m.kernel,
            shapes=(m.shape,),
            dtype=m.dtype,
            vendor=m.vendor,
            max_ratio=bound(m, tolerance),
            by=by,
            reason=reason,
            source="comment",
            head_sha=head_sha,
            measured=m.ratio,
        )
        for m in measured
        if m.kernel == kernel and (not wanted or m.shape in wanted)
    )
