"""The base of every boundary type, the vendor names and the checks' names."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Vendor = Literal["nvidia", "amd"]
VENDORS: tuple[Vendor, ...] = ("nvidia", "amd")
VENDOR_NAMES: dict[str, str] = {"nvidia": "NVIDIA", "amd": "AMD"}

# What a plan asks the measure jobs for, and what a not-run row names: one list of names.
Check = Literal["sweep", "first_call", "compiler", "repo", "smem"]


class Frozen(BaseModel):
    """Immutable, and strict about its keys: a typo in a JSON file is an error, not a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")
