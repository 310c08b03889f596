"""A case the sweep skipped (the CPU interpreter cannot run it, the budget was spent) reads as
skipped with its reason in the review's shape table, not as an error; it is still no evidence,
so a GPU sweep with a skipped shape does not meet the condition."""

from __future__ import annotations

from bot.contracts.base import VENDORS
from bot.contracts.evidence import Clause, Evidence, ShapeLine, SweepEvidence, said
from bot.contracts.review import Requirements
from bot.review.render import render_comment
from bot.review.verdict import decide
from checks.sweep.evidence import to_evidence
from checks.sweep.models import ShapeResult, SweepResult
from checks.sweep.protocol import ProtocolConfig
from tests.unit.test_render import CHANGES, CTX

WHY = (
    "cannot run under the CPU interpreter: it looks for a GPU and finds none here "
    "(No device were detected on your machine ! Please check that your driver is complete.); "
    "it needs a GPU"
)


def _sweep(timing: str, *cases: ShapeResult) -> SweepResult:
    return SweepResult(
        vendor="cpu" if timing == "cpu" else "nvidia",
        timing=timing,
        base_rev="a" * 40,
        head_rev="b" * 40,
        protocol=ProtocolConfig(),
        family_size=len(cases),
        cases=cases,
    )


def _case(status: str, message: str, shape: tuple[int, ...]) -> ShapeResult:
    return ShapeResult(
        kernel="ones",
        shape=shape,
        dtype="float16",
        tolerance=0.03,
        status=status,
        failed_side="base",
        message=message,
    )


SKIPPED = _case("skipped", WHY, (64, 64))
ERROR = _case("error", "RuntimeError: boom", (4096, 4096))


def test_a_skipped_case_reads_skipped_with_its_reason_and_an_error_stays_an_error() -> None:
    ev = to_evidence(_sweep("cpu", SKIPPED, ERROR), vendor=VENDORS[0])
    skipped, error = ev.shapes
    assert skipped.verdict == "SKIPPED" and "it looks for a GPU and finds none" in skipped.detail
    assert error.verdict == "ERROR"
    evidence = Evidence(sweeps=(ev,))
    text = render_comment(decide(CHANGES, Requirements(), evidence), CTX, evidence, full=True)
    [row] = [line for line in text.splitlines() if line.startswith("| ") and "64x64" in line]
    assert "SKIPPED: base: cannot run under the CPU interpreter" in row, row
    assert "ERROR" not in row


def test_a_gpu_sweep_with_a_skipped_shape_is_not_met() -> None:
    ev = to_evidence(_sweep("cuda-events", SKIPPED))
    evidence = Evidence(sweeps=(ev,))
    verdict = decide(CHANGES, Requirements(), evidence)
    [sweep] = [c for c in verdict.conditions if c.key == "sweep"]
    assert sweep.state != "met"
    assert any("SKIPPED" in line for line in sweep.evidence), sweep.evidence


def test_a_shape_the_budget_skipped_is_not_run_not_the_changes_failure() -> None:
    """The GPU-seconds budget spent before a shape (or a worker that could not start) leaves it
    unmeasured: the evidence is not complete, as for a stopped sweep, but nothing the change did
    failed, so the review asks to run it rather than requesting changes; a real failure beside
    it still does."""
    budget = ShapeResult(
        kernel="ones", shape=(64, 64), dtype="float16", tolerance=0.03, status="skipped",
        message="the GPU-seconds budget (limits.max_gpu_seconds = 60) was spent",
    )  # fmt: skip
    evidence = Evidence(sweeps=(to_evidence(_sweep("cuda-events", budget)),))
    verdict = decide(CHANGES, Requirements(), evidence)
    [sweep] = [c for c in verdict.conditions if c.key == "sweep"]
    assert (sweep.state, sweep.blocking) == ("not_run", False), sweep
    assert verdict.decision == "approve_with_conditions", verdict.why
    assert sweep.summary.startswith("not run at 1 of 1 shapes: the GPU-seconds budget"), sweep
    error = ERROR.model_copy(update={"failed_side": "head"})
    both = Evidence(sweeps=(to_evidence(_sweep("cuda-events", budget, error)),))
    verdict = decide(CHANGES, Requirements(), both)
    [sweep] = [c for c in verdict.conditions if c.key == "sweep"]
    assert sweep.state == "open" and sweep.blocking and verdict.decision == "request_changes"
    assert "1 shape failed" in sweep.summary and "not run at 1 of 2 shapes" in sweep.summary


def test_skipped_shapes_are_counted_apart_from_those_that_did_not_hold() -> None:
    many = [_case("skipped", WHY, (64, n)) for n in range(1, 9)]
    ev = to_evidence(_sweep("cpu", *many, ERROR), vendor=VENDORS[0])
    evidence = Evidence(sweeps=(ev,))
    text = render_comment(decide(CHANGES, Requirements(), evidence), CTX, evidence, full=False)
    assert "9 shapes did not hold" not in text
    assert "1 shape did not hold, 8 skipped (not run)" in text, text
    few = Evidence(sweeps=(to_evidence(_sweep("cpu", SKIPPED, ERROR), vendor=VENDORS[0]),))
    text = render_comment(decide(CHANGES, Requirements(), few), CTX, few, full=False)
    assert "the 1 shape that did not hold and the one skipped, in a table" in text, text


def _row(line: ShapeLine) -> str:
    """The shape's row of the per-shape table in the job summary."""
    s = SweepEvidence(vendor="nvidia", gpu="GPU", shapes=(line,), timing_kind="cpu")
    evidence = Evidence(sweeps=(s,))
    text = render_comment(decide(CHANGES, Requirements(), evidence), CTX, evidence, full=True)
    [row] = [x for x in text.splitlines() if x.startswith("| ") and "64x64" in x]
    return row


def test_a_skipped_shapes_cell_says_why_from_its_failure_not_the_sweeps_word_for_a_skip() -> None:
    """The cell leaves out the failure's kind, which the verdict says, by the line's kind and
    its failure clause: a sweep that names a skip otherwise reads the same, a note that begins
    with the word stays whole, and an older line (no such keys) reads as it did."""
    ran = to_evidence(_sweep("cpu", SKIPPED), vendor=VENDORS[0]).shapes[0]
    assert [c.kind for c in ran.clauses] == ["failure"] and ran.failure_kind == "skipped"
    assert "| SKIPPED: base: cannot run under the CPU interpreter: it looks for" in _row(ran)
    failure = Clause(kind="failure", text="not run: the budget was spent")
    note = Clause(kind="note", text="skipped: the next pass too")
    named = ran.model_copy(
        update={
            "failure_kind": "not run",
            "clauses": (failure, note),
            "detail": said((failure, note)),
        }
    )
    assert "| SKIPPED: the budget was spent; skipped: the next pass too |" in _row(named)
    older = ShapeLine.model_validate(
        {"kernel": "ones", "shape": [64, 64], "dtype": "float16", "verdict": "SKIPPED",
         "detail": "skipped: the GPU-seconds budget was spent; execution 2 not measured"}
    )  # fmt: skip
    assert (older.failure_kind, [c.kind for c in older.clauses]) == ("skipped", ["failure", "note"])
    assert "| SKIPPED: the GPU-seconds budget was spent; execution 2 not measured |" in _row(older)
