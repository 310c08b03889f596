"""The Plan: what the gate job asks the measure jobs to run. The JSON contract between them."""

from __future__ import annotations

from typing import Literal

from bot.contracts.base import Frozen, Vendor
from bot.contracts.review import ChangeLine

Check = Literal["sweep", "first_call", "compiler", "repo"]


PLAN_SCHEMA_VERSION = 1


class PlannedShape(Frozen):
    dims: tuple[int, ...]
    weight: float = 1.0


class PlannedKernel(Frozen):
    name: str
    tensors: tuple[tuple[int, ...], ...] | None = None
    bench: str
    baseline: str | None = None
    paths: tuple[str, ...]
    dtypes: tuple[str, ...]
    shapes: tuple[PlannedShape, ...]
    tolerance: float
    change_kinds: tuple[str, ...]

    @property
    def cases(self) -> int:
        return len(self.shapes) * len(self.dtypes)


class Plan(Frozen):
    schema_version: int = PLAN_SCHEMA_VERSION
    repository: str = ""
    pr_number: int | None = None
    base_sha: str
    head_sha: str
    vendors: tuple[Vendor, ...]
    kernels: tuple[PlannedKernel, ...]
    checks: tuple[Check, ...]
    quick: bool = False
    unmapped: tuple[str, ...] = ()  # changed kernels no policy entry covers: not measured
    changes: tuple[ChangeLine, ...] = ()

    @property
    def cases(self) -> int:
        return sum(k.cases for k in self.kernels)
