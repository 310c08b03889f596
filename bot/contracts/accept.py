"""Accepted regressions: a slowdown the team decided to pay, and how the review judged it.

Two sources make an ``Acceptance``: ``/bench accept`` on the pull request (recorded in a comment
of the bot's own, ``source = "comment"``) and an ``[[accepted]]`` entry of the base branch's
policy (``source = "policy"``, with an expiry date). ``bot.review.accept`` alone decides whether
a measured shape falls within one.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field

from bot.contracts.base import Frozen, Vendor

MAX_REASON_CHARS = 500
Dims = tuple[Annotated[int, Field(ge=1)], ...]


class Acceptance(Frozen):
    """Slowdowns of ``kernel`` up to ``max_ratio`` (head time / base time) are accepted."""

    kernel: str
    shapes: tuple[Dims, ...] = ()  # empty: every shape
    dtype: str | None = None  # None: every dtype
    vendor: Vendor | None = None  # None: every vendor
    max_ratio: Annotated[float, Field(gt=1, allow_inf_nan=False)]
    by: str  # who accepted: "@login" (a /bench accept) or the policy entry's owner
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS)]
    source: Literal["comment", "policy"]
    expires: date | None = None  # policy entries: the last day it accepts
    head_sha: str | None = None  # comment acceptances: the head whose measurement was accepted
    # comment acceptances: the ratio measured when it was accepted (max_ratio is its bound)
    measured: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # comment acceptances: the CI run whose results were accepted, once the report verified
    # them there (the bound is derived from that run's results, never taken from the record)
    run_id: int | None = None


class AcceptRecord(Frozen):
    """What one ``/bench accept`` recorded: one acceptance per measured slower case."""

    actor: str
    comment_id: int | None = None
    run_id: int | None = None  # the CI run whose results the review that was accepted showed
    acceptances: tuple[Acceptance, ...] = Field(min_length=1, max_length=1000)


class MeasuredRatio(Frozen):
    """A shape the review found slower, as the sticky comment's hidden state keeps it, so that
    ``/bench accept`` can record what was measured."""

    kernel: str
    vendor: Vendor
    dtype: str
    shape: Dims
    ratio: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    ci_high: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None


class ReviewState(Frozen):
    """The sticky comment's hidden state: what the review it shows measured."""

    head_sha: str
    run_id: int | None = None  # the CI run whose results the review shows (its report's run)
    slower: tuple[MeasuredRatio, ...] = Field(default=(), max_length=1000)


AcceptState = Literal["accepted", "exceeded", "expired"]


class AcceptedLine(Frozen):
    """A slower shape that an acceptance names, and the judgement: within it (accepted), slower
    than it (exceeded: flagged again), or named by an expired policy entry (flagged again)."""

    kernel: str
    vendor: Vendor
    dtype: str
    shape: Dims
    ratio: float
    state: AcceptState
    acceptance: Acceptance
