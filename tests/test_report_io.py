"""Results files from the GPU runners are untrusted: capped, validated, and only for the pinned head."""

from __future__ import annotations

import json

from bot.contracts.evidence import Evidence, ShapeLine, SweepEvidence
from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from bot.contracts.results import ResultsFile
from bot.contracts.review import ChangeLine, Requirements
from bot.jobs.gate import GateDecision
from bot.jobs.report import MAX_RESULTS_BYTES, annotations, merge_evidence, read_results, status_for
from bot.review.verdict import decide

HEAD, OTHER, BASE = "a" * 40, "b" * 40, "c" * 40


def sweep(
    vendor: str, verdict: str = "SAME", ratio: float = 1.0, kernel: str = "softmax"
) -> SweepEvidence:
    return SweepEvidence(
        vendor=vendor,
        gpu="gpu",
        shapes=(
            ShapeLine(
                kernel=kernel, shape=(4096, 4096), dtype="float16", verdict=verdict, ratio=ratio
            ),
        ),
    )


def write(tmp_path, name: str, head: str, vendor: str, ev: Evidence) -> None:
    (tmp_path / name).write_text(
        ResultsFile(head_sha=head, base_sha=BASE, vendor=vendor, evidence=ev).model_dump_json()
    )


def test_results_for_another_head_malformed_or_oversized_are_dropped(tmp_path):
    write(tmp_path, "ok.json", HEAD, "nvidia", Evidence(sweeps=(sweep("nvidia"),)))
    write(tmp_path, "stale.json", OTHER, "amd", Evidence(sweeps=(sweep("amd"),)))
    (tmp_path / "extra.json").write_text(
        json.dumps(
            {"head_sha": HEAD, "base_sha": BASE, "vendor": "amd", "evidence": {}, "pr_number": 1}
        )
    )
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "big.json").write_bytes(b" " * (MAX_RESULTS_BYTES + 1))
    kept, dropped = read_results(sorted(tmp_path.glob("*.json")), head_sha=HEAD)
    assert [r.vendor for r in kept] == ["nvidia"]
    reasons = " | ".join(dropped)
    assert (
        "not the pinned" in reasons
        and "over the" in reasons
        and "extra.json: not a results file" in reasons
    )
    assert "deep.json: not a results file" in reasons


def test_merge_marks_missing_vendors_not_run():
    kept = [
        ResultsFile(
            head_sha=HEAD,
            base_sha=BASE,
            vendor="nvidia",
            evidence=Evidence(sweeps=(sweep("nvidia"),)),
        )
    ]
    ev = merge_evidence(kept, ["nvidia", "amd"])
    assert [s.vendor for s in ev.sweeps] == ["nvidia"]
    assert [(n.check, n.vendor) for n in ev.not_run] == [("sweep", "amd")]


def test_annotations_are_escaped_workflow_commands_on_the_kernel_file():
    plan = Plan(
        base_sha=BASE,
        head_sha=HEAD,
        vendors=("nvidia",),
        checks=("sweep",),
        kernels=(
            PlannedKernel(
                name="soft,max",
                bench="m:f",
                paths=("k/soft.py",),
                dtypes=("float16",),
                shapes=(PlannedShape(dims=(4096, 4096)),),
                tolerance=0.03,
                change_kinds=("rewrite",),
            ),
        ),
        changes=(ChangeLine(kernel="soft,max", kind="rewrite", new_paths=("k/soft:max.py",)),),
    )
    decision = GateDecision(repository="o/r", event="pull_request", plan=plan, run=True)
    ev = Evidence(
        sweeps=(
            sweep("nvidia", "SLOWER", 1.2, kernel="soft,max"),
            sweep("nvidia", "CRASHED", None, kernel="x\n::error::y"),
        )
    )
    lines = annotations(ev, decision)
    assert lines[0].startswith(
        "::warning file=k/soft%3Amax.py,title=kernel-review%3A slower::soft,max 4096x4096"
    )
    assert all("\n" not in line for line in lines)
    assert "x%0A::error::y" in lines[1]


def test_status_follows_the_decision():
    req = Requirements(vendors=("nvidia",))
    changes = [ChangeLine(kernel="softmax", kind="rewrite", old_kernel_kept=True)]
    bad = decide(changes, req, Evidence(sweeps=(sweep("nvidia", "SLOWER", 1.2),)))
    assert status_for(bad)[0] == "failure"
    partial = decide(changes, req, Evidence())
    assert status_for(partial)[0] == "pending" and "not met yet" in status_for(partial)[1]
    assert status_for(decide([], req, Evidence()))[0] == "success"
