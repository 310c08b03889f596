"""Repository facts a reviewer asks for (owners, version pins, a perf gate), read at head."""

from __future__ import annotations

from typing import Literal

from bot.contracts.base import Frozen


class OwnerFact(Frozen):
    path: str
    owners: tuple[str, ...]
    source: str  # "CODEOWNERS:12", "policy", or "" when none


class PinFact(Frozen):
    package: str
    spec: str | None  # e.g. ">=3.6,<3.7", "==2.5.1", "locked 3.6.0"; None when not pinned
    source: str | None  # file (and line) where the pin was found
    kind: Literal["exact", "range", "lock", "unbounded", "absent"]

    @property
    def pinned(self) -> bool:
        return self.kind in ("exact", "range", "lock")


class PerfGateFact(Frozen):
    workflow: str | None  # path of the workflow that gates, None when there is none
    detail: str


class RepoConditions(Frozen):
    owners: tuple[OwnerFact, ...]
    pins: tuple[PinFact, ...]
    perf_gate: PerfGateFact

    @property
    def all_owned(self) -> bool:
        return bool(self.owners) and all(o.owners for o in self.owners)

    @property
    def all_pinned(self) -> bool:
        return all(p.pinned for p in self.pins)
