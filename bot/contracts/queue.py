"""What the report job learns of the measure jobs no runner picked up (``queued.json``)."""

from __future__ import annotations

from pydantic import Field

from bot.contracts.base import Frozen, Vendor
from bot.contracts.evidence import Label


class QueuedJob(Frozen):
    """A measure job still queued when its wait ran out: no runner with its labels took it."""

    name: Label  # the job's name, e.g. "measure (amd 1/2)"
    vendor: Vendor
    labels: tuple[Label, ...] = Field(default=(), max_length=16)  # its runs-on labels
    waited_s: float = Field(ge=0)  # from being queued to the end of the wait


class QueueReport(Frozen):
    """The wait for the measure jobs: how long a queued one may wait, and those that did."""

    timeout_s: float = Field(ge=0)
    stuck: tuple[QueuedJob, ...] = Field(default=(), max_length=64)

    @property
    def vendors(self) -> tuple[Vendor, ...]:
        return tuple(dict.fromkeys(j.vendor for j in self.stuck))

    def reason(self, vendor: str) -> str:
        """Why ``vendor`` was not measured, in the review's words."""
        jobs = [j for j in self.stuck if j.vendor == vendor]
        labels = ", ".join(jobs[0].labels) if jobs and jobs[0].labels else vendor
        return (
            f"no runner labelled {labels} picked up the {vendor} measure job within "
            f"{self.timeout_s / 60:.0f} minutes, so it was cancelled: bring a {vendor} runner "
            f"online, or leave {vendor} out of the policy's vendors"
        )
