"""A sweep stopped before its end (a CI job's time limit: SIGINT, then SIGTERM) keeps the cases it
measured with their verdicts; the review shows the shapes it did not get to as not run, with
why, never as a failure of the change and never approved: the sweep's condition is not run
where what was measured blocks nothing, and a measured slowdown still requests changes. The
journal of a run killed without a chance to write its results reads as those results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.contracts.evidence import Evidence, ShapeLine
from bot.errors import ResultsError
from bot.review.conditions import evaluate
from bot.review.explain import inconclusive_reason
from bot.review.render import render_comment
from bot.review.verdict import decide
from checks.procs.stopping import stop_words
from checks.sweep.evidence import to_evidence
from checks.sweep.models import Journal, ShapeResult, SweepResult
from checks.sweep.run import _Recorder
from checks.sweep.summary import from_journal
from tests.unit.test_golden_reviews import CASES, REQ, SAME, _sweep
from tests.unit.test_render import CTX
from tests.unit.test_sweep_skipped import _sweep as _results

WHY = f"the sweep was stopped by {stop_words('SIGTERM')}"
_, CHANGES, APPROVED = CASES["review_approve_gpu.md"]  # every condition met


def _stopped(kernel: str, shape: tuple[int, ...]) -> ShapeLine:
    """A case the sweep never got to, as its results file has it and the review reads it."""
    case = ShapeResult(
        kernel=kernel, shape=shape, dtype="float16", tolerance=0.03, status="stopped", message=WHY
    )
    return to_evidence(_results("cuda-events", case)).shapes[0]


STOPPED = tuple(_stopped("softmax", (n, 1024)) for n in (2048, 8192, 16384))


def _with(*shapes: ShapeLine) -> Evidence:
    """The approved evidence, nvidia's sweep with ``shapes`` besides the three it measured."""
    nvidia = _sweep("nvidia", "NVIDIA H200", *SAME, *shapes)
    return APPROVED.model_copy(update={"sweeps": (nvidia, APPROVED.sweeps[1])})


def test_a_stopped_shape_reads_stopped_with_why() -> None:
    x = STOPPED[0]
    assert x.verdict == "STOPPED" and x.failure_kind == "stopped" and x.failure_reason == WHY
    assert x.ratio is None and not x.fixed


def test_shapes_a_stop_left_unmeasured_are_not_run_and_never_approved() -> None:
    assert decide(CHANGES, REQ, APPROVED).decision == "approve"  # without them
    verdict = decide(CHANGES, REQ, _with(*STOPPED))
    assert verdict.decision == "approve_with_conditions", verdict.why
    [sweep] = [c for c in verdict.conditions if c.key == "sweep"]
    assert sweep.state == "not_run" and not sweep.blocking
    assert sweep.summary.startswith(f"not run at 3 of 9 shapes: {WHY}; run the sweep again")
    assert "within tolerance at all 6 shapes it measured" in sweep.summary
    text = render_comment(verdict, CTX, _with(*STOPPED), full=True)
    rows = [line for line in text.splitlines() if line.startswith("|") and "x1024 |" in line]
    assert len(rows) == 3 and all(f"| STOPPED: {WHY} |" in row for row in rows), rows
    assert "the evidence is not complete" in verdict.why


def test_a_measured_slowdown_still_requests_changes_beside_shapes_not_run() -> None:
    slower = SAME[2].model_copy(  # matmul, a retune: its tolerance judges it
        update={"verdict": "SLOWER", "ratio": 1.2, "ci_low": 1.18, "ci_high": 1.22}
    )
    evidence = APPROVED.model_copy(
        update={"sweeps": (_sweep("nvidia", "NVIDIA H200", slower, *STOPPED),)}
    )
    [sweep] = [c for c in evaluate(CHANGES, REQ, evidence) if c.key == "sweep"]
    assert sweep.state == "open" and sweep.blocking
    assert sweep.summary.endswith(f"not run at 3 of 4 shapes: {WHY}; run the sweep again for them")


def test_a_shard_that_sent_nothing_keeps_the_review_from_approving() -> None:
    """A vendor's measure job split in shards, one of which sent no results: the shapes that
    came are its sweep, the others were never measured (``merge_evidence`` says which shard)."""
    from bot.contracts.results import ResultsFile
    from bot.jobs.report import merge_evidence

    files = [
        ResultsFile(
            head_sha="b" * 40,
            base_sha="a" * 40,
            vendor=s.vendor,
            shard="1/2",
            evidence=APPROVED.model_copy(update={"sweeps": (s,)}),
        )
        for s in APPROVED.sweeps
    ]
    evidence = merge_evidence(files, [s.vendor for s in APPROVED.sweeps])
    verdict = decide(CHANGES, REQ, evidence)
    assert verdict.decision == "approve_with_conditions", verdict.why
    [sweep] = [c for c in verdict.conditions if c.key == "sweep"]
    assert sweep.state == "not_run" and not sweep.blocking
    assert "no results came back for shard 2/2 of the nvidia measure job" in sweep.summary
    assert "shapes it measured" in sweep.summary


def test_shapes_not_run_are_counted_apart_and_are_not_among_the_worst() -> None:
    many = tuple(_stopped("softmax", (n, 64)) for n in range(1, 9))
    evidence = _with(*many)
    text = render_comment(decide(CHANGES, REQ, evidence), CTX, evidence, full=False)
    assert "8 not run (the sweep was stopped)" in text, text
    assert "did not hold" not in text
    assert "**Worst shapes**" not in text  # nothing measured did not hold


def test_a_case_the_stop_cut_short_of_its_passes_says_so() -> None:
    """A case measured in its first pass, stopped before the next it wanted, keeps what that
    pass gave; undecided, it says why."""
    case = ShapeResult(
        kernel="softmax", shape=(4096, 4096), dtype="float16", tolerance=0.03, status="ok",
        verdict="INCONCLUSIVE", ratio=1.02, ci_low=0.98, ci_high=1.06, rounds=40,
        stop_reason="stopped",
    )  # fmt: skip
    [line] = to_evidence(_results("cuda-events", case)).shapes
    assert inconclusive_reason(line) == (
        "the sweep was stopped after 40 rounds, before its executions were done"
    )


# -------------------------------------------------------------------------------- the journal


def _journal(path: Path, *cases: ShapeResult) -> SweepResult:
    """A journal as ``run_sweep`` writes it: the run with every case not measured, then
    ``cases`` as they were recorded."""
    planned = tuple(c.model_copy(update={"status": "stopped", "message": ""}) for c in cases)
    planned += (
        ShapeResult(kernel="k", shape=(9,), dtype="float32", tolerance=0.1, status="stopped"),
    )
    run = _results("cpu", *planned)
    journal = Journal(path, run)
    for c in cases:
        journal.case(c)
    return run


def test_a_journal_reads_as_the_results_of_a_killed_run(tmp_path: Path) -> None:
    failed = ShapeResult(
        kernel="k", shape=(4,), dtype="float32", tolerance=0.1, status="error", message="boom"
    )
    path = tmp_path / "r.partial.jsonl"
    _journal(path, failed)
    with open(path, "a") as f:
        f.write('{"case": {"kernel": "k", "sha')  # the kill came while it was written
    result = from_journal(path)
    assert result.stopped == "killed" and result.base_rev == "a" * 40
    first, second = result.cases
    assert (first.status, first.message) == ("error", "boom")
    assert second.status == "stopped" and "killed before it wrote its results" in second.message
    assert "after measuring 1 of 2 cases" in result.notes[-1]


def test_a_case_recorded_after_the_sweep_took_its_results_leaves_no_journal(
    tmp_path: Path,
) -> None:
    """A stop waits for the runner threads a moment only (``run._let_go``); one that records a
    case after the sweep took its results neither changes them nor makes the journal again
    once ``kernel-review bench`` wrote the results and removed it."""
    first, late = (
        ShapeResult(kernel="k", shape=(n,), dtype="float32", tolerance=0.1, status="error")
        for n in (4, 8)
    )
    path = tmp_path / "r.partial.jsonl"
    run = _results("cpu", first, late)
    recorder = _Recorder(2, Journal(path, run), None)
    recorder.add(first)
    taken = recorder.final()
    path.unlink()  # the results are written: the journal is not needed
    recorder.add(late)  # the thread the stop did not wait for
    assert not path.exists()
    assert list(taken) == list(recorder.final()) == [first.key]


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "it is empty"),
        ("{}\n", "its first line is not the run"),
        ('{"run": 1}\n{"run": 2}\n', "line 1 is not a journal line"),
    ],
)
def test_a_file_that_is_no_journal_says_what_it_is_not(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "r.partial.jsonl"
    path.write_text(text)
    with pytest.raises(ResultsError, match=said):
        from_journal(path)
