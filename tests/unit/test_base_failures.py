"""A shape where the base fails and the head runs is fixed by the change, not failed by it; and a
failure is said by its kind and reason, not by the source a compiler quoted.

On the H200, tritonbench #269's base failed to compile past Triton's block limit at 2^21
elements and its head ran there; the review's first line said "2 shapes failed (wrong result,
crash or timeout)" as if the pull request broke them, and its worst shapes quoted the kernel's
source cut mid-word where Triton's reason was. The recorded results are
``tests/data/device_pr/tritonbench-269/`` (its README says which run made them)."""

from __future__ import annotations

import json

import pytest

from bot.contracts.evidence import Clause, Evidence, ShapeLine, SweepEvidence, said
from bot.contracts.results import ResultsFile
from bot.contracts.review import Requirements, ReviewContext
from bot.review.conditions import Facts, sweep
from bot.review.render import render_comment
from bot.review.verdict import decide
from checks.sweep.evidence import failure_headline, to_evidence
from checks.sweep.models import CaseLaunches, ShapeResult, SweepResult, load_results
from checks.sweep.summary import combine
from tests.paths import DATA, ROOT
from tests.unit.test_sweep_skipped import _sweep as _sweep_result
from tests.unit.test_verdict import TUNING

RESULTS = DATA / "device_pr" / "tritonbench-269" / "results-nvidia.json"
SWEEP = (
    ROOT / "bench" / "results" / "h200" / "pr_review" / "tritonbench-269" / "sweep-nvidia-1of1.json"
)
REASON = "numel (2097152) exceeds triton maximum tensor numel (1048576)"
CTX = ReviewContext(base_sha="a" * 40, head_sha="b" * 40)


def _recorded() -> SweepEvidence:
    (s,) = ResultsFile.model_validate_json(RESULTS.read_text(encoding="utf-8")).evidence.sweeps
    return s


def _held_and(side: str | None) -> SweepEvidence:
    """#269's sweep with its slower shapes left out: what held, and the two shapes the base
    failed at, laid on ``side``."""
    s = _recorded()
    shapes = tuple(
        x.model_copy(update={"failed_side": side}) if x.verdict == "ERROR" else x
        for x in s.shapes
        if x.verdict != "SLOWER"
    )
    return s.model_copy(update={"shapes": shapes})


def _facts(s: SweepEvidence) -> Facts:
    return Facts(changes=(TUNING,), req=Requirements(vendors=("nvidia",)), ev=Evidence(sweeps=(s,)))


def test_the_recorded_sweep_is_the_h200s_sweep_file_converted() -> None:
    """The results file's sweep is what the converter makes of the sweep's own file: nothing in
    it was written by hand."""
    assert to_evidence(load_results(SWEEP)) == _recorded()


def test_shapes_the_base_fails_at_and_the_head_runs_are_fixed_not_failed() -> None:
    s = _held_and("base")
    assert len(s.fixed) == 2 and not s.failures
    found = sweep(_facts(s))
    assert not found.blocking and found.state == "met"
    assert "failed" not in found.summary
    assert found.summary == (
        "within tolerance at all 3 shapes; 2 shapes fixed: the base fails there (compile error: "
        f"CompilationError at 12:22: {REASON}), the head runs"
    )
    assert decide([TUNING], Requirements(vendors=("nvidia",)), Evidence(sweeps=(s,))).decision != (
        "request_changes"
    )


@pytest.mark.parametrize("side", ["head", "both", None])
def test_a_shape_the_head_fails_at_stays_a_blocking_failure(side: str | None) -> None:
    """The other order, both sides, and results that do not say which side: a failure of the
    change, blocking, its reason short in the first screen."""
    s = _held_and(side)
    assert len(s.failures) == 2 and not s.fixed
    found = sweep(_facts(s))
    assert found.blocking and found.summary == "2 shapes failed (compile error)"
    verdict = decide([TUNING], Requirements(vendors=("nvidia",)), Evidence(sweeps=(s,)))
    assert verdict.decision == "request_changes"
    first = render_comment(verdict, CTX, Evidence(sweeps=(s,))).split("<details>")[0]
    (line,) = [x for x in first.splitlines() if x.startswith("- sum 2097152 f32:")]
    assert line.endswith(f"CompilationError at 12:22: {REASON.replace('_', chr(92) + '_')})")
    assert "def triton" not in first and len(line) < 160


def _failed_at_base(checked: tuple[str, ...]) -> ShapeResult:
    """A case whose base failed in its check, with no launch record of either side (the
    crossover's second pair checked it, or a later pass)."""
    return ShapeResult.model_validate(
        {"kernel": "sum", "shape": [2097152], "dtype": "float32", "tolerance": 0.03,
         "status": "compile_error", "failed_side": "base", "message": REASON, "checked": checked}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("checked", "side"),
    [(("head",), "base"), (("base", "head"), "base"), (("base",), None), ((), None)],
)
def test_a_base_failure_is_the_bases_alone_where_the_heads_check_answered(
    checked: tuple[str, ...], side: str | None
) -> None:
    """Which sides' checks answered decides it, not the launch record (none here): where the
    head's did not, the failure may have ended both checks and says no side."""
    [line] = to_evidence(_sweep_result("cuda-events", _failed_at_base(checked))).shapes
    assert line.failed_side == side and line.fixed == (side == "base")


def test_a_later_pass_that_failed_says_which_of_its_own_checks_answered() -> None:
    ok = _failed_at_base(("base", "head")).model_copy(
        update={"status": "ok", "failed_side": None, "message": ""}
    )
    joined = combine(ok, _failed_at_base(("head",)), 1)
    assert joined.status == "compile_error" and joined.checked == ("head",)


def test_an_older_sweep_file_reads_the_answered_checks_from_its_launch_records() -> None:
    """A file written before cases said which checks answered: a side answered where its
    launch record is (every answered check of the first pass made one then); a case that says
    it is read as it is."""
    record = CaseLaunches().model_dump()
    old = _sweep_result("cuda-events", _failed_at_base(())).model_dump(mode="json")
    (case,) = old["cases"]
    del case["checked"]
    cases = [{**case, "head_launches": record}, case, {**case, "checked": ["base"]}]
    loaded = SweepResult.model_validate({**old, "cases": cases})
    assert [c.checked for c in loaded.cases] == [("head",), (), ("base",)]
    assert [x.failed_side for x in to_evidence(loaded).shapes] == ["base", None, None]


def test_a_failure_is_said_by_its_kind_and_its_last_line() -> None:
    recorded = load_results(SWEEP)
    (message, *_) = {c.message for c in recorded.cases if c.status != "ok"}
    assert "def triton_sum_kernel_scalar_result(" in message  # the source Triton quotes
    assert failure_headline(message) == f"CompilationError at 12:22: {REASON}"
    traceback = 'Traceback (most recent call last):\n  File "k.py", line 3\nValueError: bad size\n'
    assert failure_headline(traceback) == "ValueError: bad size"
    one = "head differs from the reference: max abs err 0.5 > 0.01"
    assert failure_headline(one) == one
    assert len(failure_headline("RuntimeError: x\n" + "y" * 1000)) <= 300


def test_an_older_results_file_without_the_side_keeps_its_failures() -> None:
    """A results file written before the side was recorded reads as before: failures."""
    line = ShapeLine(kernel="k", shape=(8,), dtype="float32", verdict="ERROR", detail="x")
    assert not line.fixed and line.failed_side is None


def test_a_long_detail_keeps_whole_parts_and_counts_the_rest() -> None:
    """A detail past its room keeps whole parts, cuts the next one at a word where the room
    left lets it say something, and counts the rest; no part ends mid-word."""
    from checks.sweep.evidence import DETAIL, _clauses

    def detail(parts: list[str]) -> str:
        return said(_clauses([(Clause(kind="note", text=p),) for p in parts]))

    long = ["first part " * 10, "second part " * 10, "third part " * 10, "fourth " * 30, "fifth"]
    text = detail(long)
    assert len(text) <= DETAIL and text.endswith("; 1 more in the sweep's results")
    assert all(p.strip() in text for p in long[:3])
    assert "fourth fourth …;" in text and "fifth" not in text
    little = ["first part " * 40, "second part " * 10, "third"]
    text = detail(little)
    assert len(text) <= DETAIL and text.endswith("; 2 more in the sweep's results")
    assert "second" not in text, "too little room left: counted, not cut"
    one = detail(["word " * 200])
    assert len(one) <= DETAIL and one.endswith("word …")
    assert detail(["a", "b"]) == "a; b"


def test_a_part_cut_short_keeps_the_kinds_of_the_clauses_it_still_says_whole() -> None:
    """The sweep's explanation is one part of the detail, cut as one: the clauses it still
    says whole keep what they are about; what is left of the cut one is a note, never taken
    for what the whole clause was about."""
    from checks.sweep.evidence import _clauses

    explained = (
        Clause(kind="spread", text="head/base varied " + "a lot " * 30),
        Clause(kind="cause_picks", text="likely cause: the autotuner's picks"),
        Clause(kind="undecided", text="too much to decide " * 20),
    )
    stop = Clause(kind="stop", text="stopped: max executions after 36 rounds")
    out = _clauses([(stop,), explained, (Clause(kind="note", text="a note"),)])
    assert [c.kind for c in out] == ["stop", "spread", "cause_picks", "note", "note"]
    assert out[:3] == (stop, *explained[:2])
    assert out[3].text.startswith("too much to decide") and out[3].text.endswith(" …")
    assert out[4].text == "1 more in the sweep's results"


# The review reads a failure's kind and reason from their fields, never back out of the detail,
# which is worded for a reader: a detail reworded changes nothing the conditions say.


def _reworded(s: SweepEvidence) -> SweepEvidence:
    """``s`` with each failure's detail worded another way, its fields as they were."""
    shapes = tuple(
        x.model_copy(update={"detail": f"the base side did not compile ({x.failure_reason})"})
        if x.verdict == "ERROR"
        else x
        for x in s.shapes
    )
    return s.model_copy(update={"shapes": shapes})


def test_a_reworded_detail_leaves_a_failures_kind_and_reason_as_they_were() -> None:
    for side, summary in (
        ("head", "2 shapes failed (compile error)"),
        (
            "base",
            "within tolerance at all 3 shapes; 2 shapes fixed: the base fails there (compile "
            f"error: CompilationError at 12:22: {REASON}), the head runs",
        ),
    ):
        s = _reworded(_held_and(side))
        assert all("compile error" not in x.detail for x in s.shapes)
        assert sweep(_facts(s)).summary == summary


def test_the_converter_says_a_failures_kind_where_the_results_name_no_side() -> None:
    """A failed case whose side the results do not say still has its kind ("compile error",
    not the verdict's "error"), and its reason without the side."""
    recorded = load_results(SWEEP)
    cases = tuple(
        c.model_copy(update={"failed_side": None}) if c.status != "ok" else c
        for c in recorded.cases
    )
    s = to_evidence(recorded.model_copy(update={"cases": cases}))
    failed = [x for x in s.shapes if x.verdict == "ERROR"]
    assert [(x.failure_kind, x.failure_reason) for x in failed] == [
        ("compile error", f"CompilationError at 12:22: {REASON}")
    ] * 2
    held = s.model_copy(update={"shapes": tuple(x for x in s.shapes if x.verdict != "SLOWER")})
    assert sweep(_facts(held)).summary == "2 shapes failed (compile error)"


def test_a_shape_that_ran_has_no_failure_fields() -> None:
    ran = [x for x in to_evidence(load_results(SWEEP)).shapes if x.verdict not in ("ERROR",)]
    assert ran and all(x.failure_kind == "" == x.failure_reason for x in ran)


def test_an_older_results_file_reads_its_failures_from_the_detail_once_at_load() -> None:
    """The recorded results were written before the kind and reason were fields: their lines
    have neither key, and load with both read from the detail as the review read it then."""
    raw = json.loads(RESULTS.read_text(encoding="utf-8"))
    older = [x for x in raw["evidence"]["sweeps"][0]["shapes"] if x["verdict"] == "ERROR"]
    assert older and all("failure_kind" not in x and "failure_reason" not in x for x in older)
    failed = [x for x in _recorded().shapes if x.verdict == "ERROR"]
    assert [(x.failure_kind, x.failure_reason) for x in failed] == [
        ("compile error", f"CompilationError at 12:22: {REASON}")
    ] * 2
    # a line of such a file whose detail has more parts keeps them in the reason, as it was said
    line = ShapeLine.model_validate(
        {**older[0], "failed_side": "head", "detail": "timeout: head: 30 s; 2 throttled rounds"}
    )
    assert (line.failure_kind, line.failure_reason) == ("timeout", "30 s; 2 throttled rounds")
    # an older line that does not name a side, or did not fail, has no failure read into it
    for detail, verdict in (("compile error: bad", "ERROR"), ("stopped: base: x", "SAME")):
        line = ShapeLine.model_validate({**older[0], "detail": detail, "verdict": verdict})
        assert line.failure_kind == "" == line.failure_reason


def test_a_line_with_the_fields_is_never_read_from_its_detail() -> None:
    """Only a line without the key is an older one: a line written with the fields, even empty,
    is taken as it says, whatever its detail looks like."""
    line = ShapeLine.model_validate(
        {
            "kernel": "k",
            "shape": [8],
            "dtype": "float32",
            "verdict": "CRASHED",
            "detail": "compile error: head: looks like the old wording",
            "failure_kind": "",
            "failed_side": "head",
        }
    )
    assert line.failure_kind == ""
    s = SweepEvidence(vendor="nvidia", gpu="GPU", shapes=(line,))
    assert sweep(_facts(s)).summary == "1 shape failed (crash)"
    round_trip = ShapeLine.model_validate_json(_recorded().shapes[0].model_dump_json())
    assert "failure_kind" in _recorded().shapes[0].model_dump() and round_trip.failure_kind == ""


def test_the_converter_says_where_the_processes_disagreed_from_the_sweeps_decision() -> None:
    """The shapes the sweep decided over executions that disagreed, on #269's H200 sweep: those
    whose explanation says so (the recorded file's lines read them so), found from the decision."""
    recorded = load_results(SWEEP)
    said = {c.key for c in recorded.cases if "varied from one execution" in c.explanation}
    lines = to_evidence(recorded).shapes
    assert len(said) == 5
    assert {(x.kernel, x.shape, x.dtype) for x in lines if x.varied_between_processes} == said
    assert [x.varied_between_processes for x in lines] == [
        x.varied_between_processes for x in _recorded().shapes
    ]
    quiet = recorded.model_copy(
        update={"cases": tuple(c.model_copy(update={"executions": 1}) for c in recorded.cases)}
    )
    assert not any(x.varied_between_processes for x in to_evidence(quiet).shapes)
