"""The review: the changes it lists, the policy's requirements, the conditions and the verdict,
and the context the comment is rendered in."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.contracts.accept import AcceptedLine
from bot.contracts.base import VENDORS, Frozen, Vendor
from bot.contracts.evidence import FlagKind

Decision = Literal["approve", "approve_with_conditions", "request_changes"]


State = Literal["met", "open", "not_run"]


DeploymentKind = Literal["long-lived", "cli", "serverless", "latency-slo"]


# The slowdown a rewrite may cost at each measured shape, unless the policy says otherwise: the
# seed's reviewer pays about 6% for the code a rewrite deletes (bot.policy.model's default too).
DEFAULT_REWRITE_PRICE = 0.06

DECISION_TITLES: dict[str, str] = {
    "approve": "Approve",
    "approve_with_conditions": "Approve with conditions",
    "request_changes": "Request changes",
}


class ChangeFinding(Frozen):
    """Something the changed code does that a reviewer should hear about, at its line: C++
    lane-level primitives a rewrite replaces (B-6), wall-clock timing of an asynchronous launch
    in the head's benchmark or test code (Part A)."""

    kind: Literal["lane_primitives", "async_timing"]
    path: str
    line: int
    message: str


class ChangeLine(Frozen):
    """One kernel change as the review lists it, or one toolchain pin that moved (kind
    "toolchain": ``kernel`` is the package, every policy kernel is affected)."""

    kernel: str  # policy kernel name when mapped, else the kernel's own name; the package
    kind: Literal["rewrite", "tuning", "body", "launch", "new", "deleted", "toolchain"]
    old_language: str | None = None  # "cuda+hip", "triton", ...
    new_language: str | None = None
    old_paths: tuple[str, ...] = ()
    new_paths: tuple[str, ...] = ()
    old_kernel_kept: bool | None = None
    kept_how: str = ""
    mapped: bool = True  # False: no policy kernel covers these paths, so nothing is measured
    detail: str = ""
    branches: tuple[str, ...] = ()  # launch settings chosen by vendor or architecture
    old_version: str | None = None  # toolchain: the pin before ("==3.5.1"); None: not pinned
    new_version: str | None = None  # toolchain: the pin after; None: no longer pinned
    new_lines: tuple[int, int] | None = None  # first and last line of the new kernel in head
    findings: tuple[ChangeFinding, ...] = ()
    not_compiled: str = ""  # why the compiler report cannot cover the new kernel's language
    # the kernel functions the change names on each side (a rewrite's replaced C++ kernels and
    # its Triton kernel), which the launch record is held against (``bot.review.launched``)
    old_functions: tuple[str, ...] = ()
    new_functions: tuple[str, ...] = ()


class Requirements(Frozen):
    """The parts of the policy the verdict needs."""

    vendors: tuple[Vendor, ...] = VENDORS
    deployment: DeploymentKind = "long-lived"
    first_call_budget_ms: float | None = None
    tolerance: float = 0.03
    # each policy kernel's own tolerance (the policy's unless the kernel sets one), by name
    tolerances: dict[str, float] = Field(default_factory=dict)
    rewrite_price: float = DEFAULT_REWRITE_PRICE
    # each policy kernel's own rewrite price (bot.policy.model: effective_rewrite_price), by name
    prices: dict[str, float] = Field(default_factory=dict)

    @property
    def kernels(self) -> tuple[str, ...]:
        """The policy's kernels, in its order."""
        return tuple(self.tolerances)

    def tolerance_of(self, kernel: str) -> float:
        """The tolerance ``kernel`` is judged at: its own, else the policy's."""
        return self.tolerances.get(kernel, self.tolerance)

    def price_of(self, kernel: str) -> float:
        """The slowdown a rewrite of ``kernel`` may cost at each shape: its own price, else the
        policy's, never below the kernel's tolerance."""
        if kernel in self.prices:
            return self.prices[kernel]
        return max(self.rewrite_price, self.tolerance_of(kernel))


class Condition(Frozen):
    number: int
    key: str  # its key in bot.review.conditions.CONDITIONS
    title: str
    state: State
    summary: str  # one line: what we found
    evidence: tuple[str, ...] = ()  # the lines behind it
    # those of the evidence lines that are about one shape each (a failure, an inconclusive or
    # a judged shape), which the comment's worst shapes already say
    per_shape: tuple[str, ...] = ()
    # the lists of shapes its evidence lines name ("1x781:float32"), each with its line: the
    # comment names a long one's first shapes and a count
    shape_lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the compiler flags (kernel, kind) its evidence says, which the comment leaves to it
    flags: tuple[tuple[str, FlagKind], ...] = ()
    blocking: bool = False  # a measured violation: requests changes


class Verdict(Frozen):
    decision: Decision
    why: str
    conditions: tuple[Condition, ...]
    not_asking_for: tuple[str, ...]
    changes: tuple[ChangeLine, ...]
    no_kernel_changes: bool = False
    accepted: tuple[AcceptedLine, ...] = ()  # slower shapes an acceptance names, judged
    # one sentence per rewrite that pays a slowdown within its price: what it costs, what it gives
    trade: tuple[str, ...] = ()
    # one sentence per rewrite over its price: what it gives up there and what it deletes
    trade_over: tuple[str, ...] = ()
    # the rewrite price each kernel judged at one (bot.review.trade.priced_kernels) was judged at
    prices: dict[str, float] = Field(default_factory=dict)

    @property
    def title(self) -> str:
        return DECISION_TITLES[self.decision]


class PartATable(BaseModel):
    """The seed's Part A table for one rewrite: (measure, old, new) rows."""

    model_config = ConfigDict(frozen=True)
    kernel: str
    old_label: str
    new_label: str
    rows: tuple[tuple[str, str, str], ...]
    # the same counts as numbers, for the sentence that says what a rewrite gives: lines of
    # kernel body and launch wrapper, source files, the vendors the new source covers
    old_lines: int | None = None
    new_lines: int | None = None
    old_files: int | None = None
    new_files: int | None = None
    new_vendors: tuple[str, ...] = ()
    old_lines_one_vendor: bool = False  # old lines counted on one vendor's file of a twin pair


class ReviewContext(BaseModel):
    model_config = ConfigDict(frozen=True)
    repository: str = ""
    base_sha: str
    head_sha: str
    policy_source: str = ""
    deployment: str = "long-lived"
    first_call_budget_ms: float | None = None
    vendors: tuple[str, ...] = ()
    note: str = ""  # e.g. "demo on a machine without a GPU"
    owners: tuple[str, ...] = ()  # the policy's: who re-tunes after a toolchain change
    kernels: tuple[str, ...] = ()  # the policy's kernels: what a toolchain change affects
