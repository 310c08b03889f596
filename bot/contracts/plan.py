"""The Plan: what the gate job asks the measure jobs to run. The JSON contract between them."""

from __future__ import annotations

from bot.contracts.base import Check, Frozen, Vendor
from bot.contracts.review import ChangeLine, DeploymentKind

__all__ = ["Check", "Plan", "PlanDeployment", "PlanLimits", "PlannedKernel", "PlannedShape"]


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


class PlanLimits(Frozen):
    """The base policy's limits on a run, as the measure job applies them."""

    max_shapes: int
    max_elements_per_tensor: int
    max_gpu_seconds: float
    worker_memory_gib: int | None = None  # None: a quarter of the runner's memory, at least 4 GiB


class PlanDeployment(Frozen):
    """How the base policy says the kernels are deployed: what the first call is judged by."""

    kind: DeploymentKind
    first_call_budget_ms: float | None = None


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
    # what the measure job needs from the base policy; None: it reads the base policy itself
    limits: PlanLimits | None = None
    deployment: PlanDeployment | None = None
    compiler_targets: tuple[str, ...] | None = None  # for the plan's vendors, e.g. sm_90, gfx942

    @property
    def cases(self) -> int:
        return sum(k.cases for k in self.kernels)

    @property
    def toolchain(self) -> tuple[ChangeLine, ...]:
        """The toolchain pins this change moves (triton, torch, ...): each side then runs under
        its own toolchain."""
        return tuple(c for c in self.changes if c.kind == "toolchain")
