"""The results file: what one measure job (one vendor, one shard) hands to the report job."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.contracts.base import Vendor
from bot.contracts.evidence import Evidence

RESULTS_SCHEMA_VERSION: Final = 1


SHA = Field(pattern=r"^[0-9a-f]{40}$")


class ResultsFile(BaseModel):
    """What one measure job (one vendor, one shard) hands to the report job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = RESULTS_SCHEMA_VERSION
    head_sha: str = SHA
    base_sha: str = SHA
    vendor: Vendor
    shard: str = Field(default="1/1", pattern=r"^[0-9]{1,3}/[0-9]{1,3}$")
    evidence: Evidence
