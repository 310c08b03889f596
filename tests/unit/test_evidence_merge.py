"""Evidence.merge: one generic merge for the measure job's checks and the report's results files."""

from __future__ import annotations

import pytest

from bot.contracts.evidence import (
    CompilerEvidence,
    CompilerFlag,
    CompilerRow,
    Evidence,
    FirstCallEvidence,
    NotRun,
    ShapeLine,
    SweepEvidence,
    merge_all,
)
from bot.contracts.repo import PerfGateFact, RepoConditions
from bot.contracts.results import ResultsFile
from bot.jobs.report import merge_evidence

HEAD, BASE = "a" * 40, "c" * 40


def sweep(vendor: str) -> SweepEvidence:
    line = ShapeLine(kernel="softmax", shape=(64,), dtype="float16", verdict="SAME", ratio=1.0)
    return SweepEvidence(vendor=vendor, gpu="gpu", shapes=(line,))


def row(vendor: str, target: str) -> CompilerRow:
    return CompilerRow(
        kernel="softmax", side="new", language="triton", vendor=vendor, target=target, config="-"
    )


def test_every_field_is_merged_in_order():
    first = Evidence(
        sweeps=(sweep("nvidia"),),
        compiler=CompilerEvidence(
            rows=(row("nvidia", "sm_90"),), configs_differ_per_vendor={"a": True}
        ),
        not_run=(NotRun(check="sweep", vendor="amd", reason="one"),),
    )
    flag = CompilerFlag(
        severity="warning", kernel="softmax", vendor="amd", target="gfx942", message="m"
    )
    second = Evidence(
        first_calls=(
            FirstCallEvidence(vendor="nvidia", kernel="softmax", cold_ms=1.0, warm_ms=0.5),
        ),
        compiler=CompilerEvidence(
            rows=(row("amd", "gfx942"),), flags=(flag,), configs_differ_per_vendor={"a": False}
        ),
        not_run=(NotRun(check="compiler", reason="two"),),
    )
    ev = first.merge(second)
    assert [s.vendor for s in ev.sweeps] == ["nvidia"] and len(ev.first_calls) == 1
    assert ev.compiler is not None
    assert [r.target for r in ev.compiler.rows] == ["sm_90", "gfx942"]
    assert ev.compiler.flags == (flag,)
    assert ev.compiler.configs_differ_per_vendor == {"a": False}
    assert [n.reason for n in ev.not_run] == ["one", "two"]
    assert merge_all([first, second]) == ev
    assert merge_all([]) == Evidence()
    assert Evidence().merge(first) == first == first.merge(Evidence())


def test_two_different_single_values_are_refused():
    def repo(gated: bool) -> RepoConditions:
        gate = PerfGateFact(workflow="ci.yml" if gated else None, detail="")
        return RepoConditions(owners=(), pins=(), perf_gate=gate)

    assert Evidence(repo=repo(True)).merge(Evidence()).repo == repo(True)
    with pytest.raises(ValueError, match=r"Evidence\.repo"):
        Evidence(repo=repo(True)).merge(Evidence(repo=repo(False)))


def test_the_report_takes_what_runners_measure_and_no_empty_compiler_part():
    files = [
        ResultsFile(
            head_sha=HEAD,
            base_sha=BASE,
            vendor=v,
            evidence=Evidence(sweeps=(sweep(v),), compiler=CompilerEvidence()),
        )
        for v in ("nvidia", "amd")
    ]
    ev = merge_evidence(files, ["nvidia", "amd"])
    assert [s.vendor for s in ev.sweeps] == ["nvidia", "amd"]
    assert ev.compiler is None and ev.not_run == ()
