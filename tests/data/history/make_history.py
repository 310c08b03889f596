"""Writes history.jsonl beside it from the H200 results of the fixture review
(bench/results/h200/fixture_review/results-nvidia.json, this repository, commit 53fbb7c).

A default branch's nights, in the history file's format: three nights at the fixture's base
commit (each case's base time), then the rewrite merged and three nights at its head commit
(each case's head time), four of the cases; one older record without cases (the kernels'
medians only, as records were written before cases were kept) and one CPU-timed record, which
the trend leaves out. The times are those one H200 run measured for each commit, so the nights
of one commit repeat them; the dates are made up."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bot.contracts.history import HistoryCase, HistoryRecord
from tests.paths import ROOT

HERE = Path(__file__).parent
CASES = {
    ("vector_add", (1000003,), "bfloat16"),
    ("vector_add", (16777216,), "float32"),
    ("softmax", (1823, 781), "float16"),
    ("softmax", (4096, 4096), "float16"),
}


def main() -> None:
    results = json.loads(
        (ROOT / "bench/results/h200/fixture_review/results-nvidia.json").read_text()
    )
    versions = results["evidence"]["toolchains"][0]["versions"]
    shapes = [
        s
        for sweep in results["evidence"]["sweeps"]
        for s in sweep["shapes"]
        if (s["kernel"], tuple(s["shape"]), s["dtype"]) in CASES
    ]
    records = []

    def record(day: int, sha: str, side: str, *, timing: str = "gpu", cases: bool = True):
        kept = tuple(
            HistoryCase(kernel=s["kernel"], shape=tuple(s["shape"]), dtype=s["dtype"],
                        us=round(s[f"{side}_us"], 3))
            for s in shapes
        )  # fmt: skip
        medians = {
            k: round(statistics.median(c.us for c in kept if c.kernel == k), 3)
            for k in sorted({c.kernel for c in kept})
        }
        return HistoryRecord(
            date=f"2026-11-{day:02d}T03:17:00+00:00", sha=sha, vendor="nvidia", timing=timing,
            pinned=versions, kernels=medians, cases=kept if cases else (),
        )  # fmt: skip

    base, head = results["base_sha"], results["head_sha"]
    records.append(record(1, base, "base", cases=False))
    records += [record(day, base, "base") for day in (2, 3, 4)]
    records.append(record(4, base, "base", timing="cpu"))
    records += [record(day, head, "head") for day in (5, 6, 7)]
    (HERE / "history.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))


if __name__ == "__main__":
    main()
