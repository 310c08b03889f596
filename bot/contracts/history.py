"""A scheduled run on the default branch: what it measured, and the record the history keeps.

``ScheduledResults`` is what the scheduled measure job writes (GPU runner, no token) for the
scheduled report job (hosted runner) to read; ``HistoryRecord`` is one line of the history file
on the data branch (docs/history.md), one per default-branch run and vendor.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.contracts.base import Frozen, Vendor
from bot.contracts.evidence import Dim, Evidence, Label, Positive
from bot.contracts.review import ChangeLine

HISTORY_SCHEMA_VERSION = 1


class ScheduledResults(Frozen):
    schema_version: int = HISTORY_SCHEMA_VERSION
    sha: str
    vendor: Vendor
    date: str  # ISO 8601, UTC
    changes: tuple[ChangeLine, ...] = ()  # the candidate toolchain: pinned -> newest
    pinned: dict[Label, Label] = Field(default_factory=dict)  # what the pinned side ran under
    evidence: Evidence


class HistoryCase(Frozen):
    """One served case of one kernel on one scheduled run: its median time per side."""

    kernel: Label
    shape: tuple[Dim, ...] = Field(max_length=8)
    dtype: Label
    us: Positive  # median µs, pinned toolchain
    candidate_us: Positive | None = None  # median µs under the newest release, if tried


class HistoryRecord(Frozen):
    schema_version: int = HISTORY_SCHEMA_VERSION
    date: str
    sha: str
    vendor: Vendor
    timing: Literal["gpu", "cpu"]
    pinned: dict[Label, Label] = Field(default_factory=dict)  # the pinned toolchain's versions
    candidate: dict[Label, Label] = Field(default_factory=dict)  # the newest release's, if tried
    kernels: dict[Label, Positive] = Field(default_factory=dict)  # median µs, pinned toolchain
    candidate_kernels: dict[Label, Positive] = Field(default_factory=dict)  # median µs, newest
    regressed: tuple[Label, ...] = ()  # kernels that would regress under the candidate
    # every timed case (records written before cases were kept have none): the trend per
    # kernel and shape (bot/review/trend.py)
    cases: tuple[HistoryCase, ...] = Field(default=(), max_length=4096)
