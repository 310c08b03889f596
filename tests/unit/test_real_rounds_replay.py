"""The verdict rule replayed on rounds real kernels gave on an H200 with identical code on both
sides (``bench/results/h200/real_kernels/raw-part*``: the A/A runs of 35 kernels of five
repositories, and the earlier engine's in ``real_kernels_steps``; the sweep's own results files). Whatever the rule becomes, identical code must
never read SLOWER or FASTER there, and each INCONCLUSIVE says why; a head with real extra work
(the ``slow5``/``slow10`` runs kept beside them) never reads FASTER."""

from __future__ import annotations

import json

import pytest

from checks.sweep.models import SweepResult
from checks.sweep.summary import recompute
from tests.paths import ROOT

H200 = ROOT / "bench" / "results" / "h200"
KEPT = sorted(
    [
        *H200.glob("real_kernels/raw-part*/*.json"),
        *H200.glob("real_kernels_steps/*/raw-part*/*.json"),
    ]
)
RAW = [p for p in KEPT if "-aa-" in p.name]
SLOW = [p for p in KEPT if "-slow" in p.name]


def _replayed(path):
    """The kept run's cases, their verdicts worked out again by today's rule; every one measured."""
    recorded = SweepResult.model_validate(json.loads(path.read_text(encoding="utf-8")))
    again = recompute(recorded)
    assert again.cases and all(c.status == "ok" for c in again.cases)
    return again.cases


@pytest.mark.parametrize("path", RAW, ids=[p.stem for p in RAW])
def test_identical_code_on_real_kernels_never_reads_a_difference(path) -> None:
    for c in _replayed(path):
        assert c.verdict in ("SAME", "INCONCLUSIVE"), (c.kernel, c.verdict, c.ratio)
        if c.verdict == "INCONCLUSIVE":
            assert c.explanation, c.kernel


@pytest.mark.parametrize("path", SLOW, ids=[p.stem for p in SLOW])
def test_real_extra_work_never_reads_faster(path) -> None:
    for c in _replayed(path):
        assert c.verdict in ("SLOWER", "SAME", "INCONCLUSIVE"), (c.kernel, c.verdict, c.ratio)
        assert c.ratio > 1.0, (c.kernel, c.ratio)


def test_the_replayed_record_is_there() -> None:
    assert len(RAW) >= 18
    assert set(KEPT) == set(RAW) | set(SLOW), "a kept run that is neither A/A nor a slow head"
