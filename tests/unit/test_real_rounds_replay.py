"""The verdict rule replayed on rounds real kernels gave on an H200 with identical code on both
sides (``bench/results/h200/real_kernels/raw-part*``: the A/A runs of 35 kernels of five
repositories, and the earlier engine's in ``real_kernels_steps``; the sweep's own results files). Whatever the rule becomes, identical code must
never read SLOWER or FASTER there, and each INCONCLUSIVE says why."""

from __future__ import annotations

import json

import pytest

from checks.sweep.models import SweepResult
from checks.sweep.summary import recompute
from tests.paths import ROOT

H200 = ROOT / "bench" / "results" / "h200"
RAW = sorted(
    [
        *H200.glob("real_kernels/raw-part*/*.json"),
        *H200.glob("real_kernels_steps/*/raw-part*/*.json"),
    ]
)


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
    assert len(RAW) >= 18
