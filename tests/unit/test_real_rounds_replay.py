"""The verdict rule replayed on rounds real kernels gave on an H200 with identical code on both
sides (``bench/results/h200/real_kernels/raw-part1``: bitsandbytes' and cut-cross-entropy's ops,
three A/A runs, the sweep's own results files). Whatever the rule becomes, identical code must
never read SLOWER or FASTER there, and each INCONCLUSIVE says why."""

from __future__ import annotations

import json

import pytest

from checks.sweep.models import SweepResult
from checks.sweep.summary import recompute
from tests.paths import ROOT

RAW = sorted((ROOT / "bench" / "results" / "h200" / "real_kernels" / "raw-part1").glob("*.json"))


@pytest.mark.parametrize("path", RAW, ids=[p.stem for p in RAW])
def test_identical_code_on_real_kernels_never_reads_a_difference(path) -> None:
    recorded = SweepResult.model_validate(json.loads(path.read_text(encoding="utf-8")))
    again = recompute(recorded)
    assert again.cases and all(c.status == "ok" for c in again.cases)
    for c in again.cases:
        assert c.verdict in ("SAME", "INCONCLUSIVE"), (c.kernel, c.verdict, c.ratio)
        if c.verdict == "INCONCLUSIVE":
            assert c.explanation, c.kernel


def test_the_replayed_record_is_there() -> None:
    assert len(RAW) >= 5
