"""``kernel-review bench``'s table says head against base in words, as the review does."""

from __future__ import annotations

from checks.sweep.cli import format_table
from checks.sweep.models import SweepResult
from tests.paths import ROOT

RECORDED = ROOT / "bench/results/h200/fixture_review/sweep-nvidia-1of1.json"


def test_the_recorded_h200_sweep_is_said_in_words():
    result = SweepResult.model_validate_json(RECORDED.read_text(encoding="utf-8"))
    table = format_table(result)
    row = next(
        line for line in table.splitlines() if line.startswith("vector_add       bfloat16  1000003")
    )
    assert "62.3% slower" in row and "61.5–63.2% slower" in row
    assert "worst: vector_add bfloat16 67108859 2.4x slower (2.4x slower)" in table
    assert "geomean small: 1.3% faster (1.3% faster) over 12 cases" in table
    assert "+" not in table.split("\n", 1)[1]  # no signed percentages anywhere
