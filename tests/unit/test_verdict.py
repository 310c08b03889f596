from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.contracts.evidence import (
    Clause,
    CompilerEvidence,
    CompilerFlag,
    Evidence,
    FirstCallEvidence,
    NotRun,
    PickSpread,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.repo import OwnerFact, PerfGateFact, PinFact, RepoConditions
from bot.contracts.review import ChangeLine, Requirements
from bot.review.conditions import CONDITIONS
from bot.review.verdict import decide

REWRITE_KEPT = ChangeLine(
    kernel="softmax",
    kind="rewrite",
    old_language="cuda+hip",
    new_language="triton",
    old_paths=("csrc/softmax.cu", "csrc/softmax.hip"),
    new_paths=("ops/softmax.py",),
    old_kernel_kept=True,
    kept_how="behind OPS_SOFTMAX_IMPL=cuda",
)
REWRITE_DELETED = REWRITE_KEPT.model_copy(
    update={"kernel": "vector_add", "old_kernel_kept": False, "kept_how": ""}
)
TUNING = ChangeLine(kernel="matmul", kind="tuning", old_language="triton", new_language="triton")

GOOD_REPO = RepoConditions(
    owners=(OwnerFact(path="ops/softmax.py", owners=("@gpu",), source="CODEOWNERS:1"),),
    pins=(
        PinFact(package="triton", spec=">=3.6,<3.7", source="pyproject.toml:5", kind="range"),
        PinFact(package="torch", spec="==2.11.0", source="pyproject.toml:6", kind="exact"),
    ),
    perf_gate=PerfGateFact(workflow=".github/workflows/perf.yml", detail="perf.yml:9"),
)


def shape(verdict="SAME", ratio=1.01, **kw) -> ShapeLine:
    base = dict(kernel="softmax", shape=(4096, 4096), dtype="float16", verdict=verdict, ratio=ratio)
    if ratio is not None:
        base.update(ci_low=ratio - 0.01, ci_high=ratio + 0.01, base_us=10.0, head_us=10.0 * ratio)
    base.update(kw)
    return ShapeLine(**base)


def sweep(vendor="nvidia", *shapes: ShapeLine) -> SweepEvidence:
    return SweepEvidence(
        vendor=vendor,
        gpu="GPU",
        shapes=shapes or (shape(),),
        geomean_ratio=1.01,
        geomean_ci=(1.0, 1.02),
    )


def first_call(vendor="nvidia", cold=800.0) -> FirstCallEvidence:
    return FirstCallEvidence(
        vendor=vendor, kernel="softmax", cold_ms=cold, warm_ms=50.0, distinct_keys=3
    )


FULL = Evidence(
    sweeps=(sweep("nvidia"), sweep("amd")),
    first_calls=(first_call("nvidia"), first_call("amd")),
    compiler=CompilerEvidence(configs_differ_per_vendor={"matmul": True}),
    repo=GOOD_REPO,
)
CLI = Requirements(
    vendors=("nvidia", "amd"), deployment="cli", first_call_budget_ms=2000, tolerance=0.03
)


def states(v):
    return {c.key: c.state for c in v.conditions}


def test_no_changes_is_a_plain_approve():
    v = decide([], CLI, Evidence())
    assert v.decision == "approve" and v.no_kernel_changes and v.conditions == ()


def test_everything_met_approves():
    v = decide([REWRITE_KEPT, TUNING], CLI, FULL)
    assert set(states(v).values()) == {"met"}
    assert v.decision == "approve"
    assert len(v.not_asking_for) == 2


def test_no_gpu_leaves_conditions_not_run_and_approves_with_conditions():
    ev = Evidence(repo=GOOD_REPO, not_run=(NotRun(check="sweep", reason="needs a GPU runner"),))
    v = decide([REWRITE_KEPT], CLI, ev)
    assert v.decision == "approve_with_conditions"
    assert states(v) == {
        "sweep": "not_run",
        "first_call": "not_run",
        "vendors": "not_run",
        "ownership": "met",
        "rollback": "met",
    }
    assert "needs a GPU runner" in v.conditions[0].summary
    # before: "(3 not run of 5 conditions)"
    assert "the evidence is not complete (3 of 5 conditions not run)" in v.why
    mixed = decide([REWRITE_DELETED], CLI, ev)
    assert "(4 of 5 conditions: 1 open, 3 not run)" in mixed.why
    # nothing was timed, so the review does not say that what was measured is fine
    assert "Nothing measured so far argues against it" not in v.why
    assert "Nothing has been timed on a GPU yet" in v.why
    inconclusive = decide(
        [REWRITE_KEPT], CLI, Evidence(sweeps=(sweep("nvidia", shape("INCONCLUSIVE")),))
    )
    assert "Nothing measured so far argues against it" in inconclusive.why


def test_cpu_sweep_is_not_evidence():
    cpu = SweepEvidence(vendor="nvidia", gpu="cpu", shapes=(shape(),), timing_kind="cpu")
    v = decide([REWRITE_KEPT], CLI, Evidence(sweeps=(cpu,), repo=GOOD_REPO))
    assert states(v)["sweep"] == "not_run"
    assert any("not evidence" in e for e in v.conditions[0].evidence)


def test_slower_shape_requests_changes_and_names_it():
    # a tuning change at a served shape: the tolerance decides (a rewrite has its price,
    # test_trade.py; a shape nobody serves weighs less, test_served.py)
    slow = sweep("nvidia", shape(), shape("SLOWER", 1.09, shape=(1, 781)))
    ev = FULL.model_copy(update={"sweeps": (slow, sweep("amd"))})
    v = decide([TUNING], CLI, ev)
    assert v.decision == "request_changes"
    sweep_c = v.conditions[0]
    assert sweep_c.state == "open" and sweep_c.blocking
    # counted per kernel (both vendors' cases): the worst shapes name it
    assert sweep_c.summary == "past softmax's 3% tolerance at 1 of its 3 shapes (9.0% slower)"
    # the kernel's line names its one slower shape, and claims no pattern over one shape
    assert "nvidia, softmax: 1 of 2 shapes slower, 1x781 float16 by 9.0%" in sweep_c.evidence
    assert not any("pattern" in x for x in sweep_c.evidence)


def test_wrong_result_requests_changes():
    bad = sweep("nvidia", shape("WRONG", None, detail="max abs err 3.2"))
    v = decide([REWRITE_KEPT], CLI, FULL.model_copy(update={"sweeps": (bad, sweep("amd"))}))
    assert v.decision == "request_changes"
    assert any("WRONG" in e and "max abs err" in e for e in v.conditions[0].evidence)


def test_inconclusive_is_open_but_not_blocking():
    inc = sweep("nvidia", shape("INCONCLUSIVE", 1.02))
    v = decide([TUNING], CLI, FULL.model_copy(update={"sweeps": (inc, sweep("amd"))}))
    assert v.decision == "approve_with_conditions"
    assert states(v)["sweep"] == "open" and not v.conditions[0].blocking


def test_first_call_over_budget_for_cli_requests_changes_but_long_lived_reports_only():
    ev = FULL.model_copy(update={"first_calls": (first_call("nvidia", cold=9000.0),)})
    v = decide([REWRITE_KEPT], CLI, ev)
    assert states(v)["first_call"] == "open" and v.decision == "request_changes"
    long_lived = CLI.model_copy(update={"deployment": "long-lived", "first_call_budget_ms": None})
    v2 = decide([REWRITE_KEPT], long_lived, ev)
    assert states(v2)["first_call"] == "met" and v2.decision == "approve"


def test_compile_only_first_call_does_not_count():
    ev = FULL.model_copy(
        update={"first_calls": (first_call().model_copy(update={"compile_only": True}),)}
    )
    assert states(decide([REWRITE_KEPT], CLI, ev))["first_call"] == "not_run"


def test_one_vendor_measured_is_open():
    ev = FULL.model_copy(
        update={
            "sweeps": (sweep("nvidia"),),
            "not_run": (NotRun(check="sweep", vendor="amd", reason="no amd runner"),),
        }
    )
    v = decide([REWRITE_KEPT], CLI, ev)
    c = v.conditions[2]
    assert c.state == "open" and "amd" in c.summary
    assert "amd: not run (no amd runner)" in c.evidence


def test_shared_config_list_and_compile_failure():
    shared = FULL.model_copy(
        update={"compiler": CompilerEvidence(configs_differ_per_vendor={"matmul": False})}
    )
    v = decide([TUNING], CLI, shared)
    assert states(v)["vendors"] == "open" and v.decision == "approve_with_conditions"
    failing = CompilerEvidence(
        flags=(
            CompilerFlag(
                severity="error",
                kernel="matmul",
                vendor="amd",
                target="gfx942",
                message="out of LDS",
            ),
        )
    )
    v = decide([TUNING], CLI, FULL.model_copy(update={"compiler": failing}))
    assert v.decision == "request_changes" and v.conditions[2].blocking


def test_ownership_lists_what_is_missing():
    repo = RepoConditions(
        owners=(OwnerFact(path="ops/softmax.py", owners=(), source=""),),
        pins=(
            PinFact(package="triton", spec=">=3.0", source="pyproject.toml:3", kind="unbounded"),
            PinFact(package="torch", spec=None, source=None, kind="absent"),
        ),
        perf_gate=PerfGateFact(workflow=None, detail="no workflow runs kernel-review"),
    )
    v = decide([REWRITE_KEPT], CLI, FULL.model_copy(update={"repo": repo}))
    c = v.conditions[3]
    assert c.state == "open"
    assert c.summary == "missing an owner, a triton pin, a torch pin, a perf gate in CI"
    assert any("no upper bound" in e for e in c.evidence)


def test_ownership_lists_gaps_first_by_what_it_found_not_by_its_words():
    """What is missing comes first, decided by the facts: a perf gate found whose workflow line
    happens to say "not pinned" is no gap."""
    unowned = (OwnerFact(path="ops/softmax.py", owners=(), source=""),)
    gate = PerfGateFact(
        workflow=".github/workflows/perf.yml",
        detail="perf.yml:9: run: kernel-review bench  # torch not pinned on this runner",
    )
    repo = GOOD_REPO.model_copy(update={"owners": unowned, "perf_gate": gate})
    c = decide([REWRITE_KEPT], CLI, FULL.model_copy(update={"repo": repo})).conditions[3]
    assert c.summary == "missing an owner"
    assert [e.split(":")[0] for e in c.evidence] == ["owner", "pin", "pin", "perf gate"]


def test_ownership_puts_a_missing_perf_gate_first_however_its_detail_is_worded():
    none = PerfGateFact(workflow=None, detail="none of the 3 workflows runs kernel-review")
    repo = GOOD_REPO.model_copy(update={"perf_gate": none})
    c = decide([REWRITE_KEPT], CLI, FULL.model_copy(update={"repo": repo})).conditions[3]
    assert c.summary == "missing a perf gate in CI"
    assert c.evidence[0] == "perf gate: none of the 3 workflows runs kernel-review"
    assert [e.split(":")[0] for e in c.evidence] == ["perf gate", "owner", "pin", "pin"]


def test_deleted_kernel_leaves_rollback_open():
    v = decide([REWRITE_KEPT, REWRITE_DELETED], CLI, FULL)
    c = v.conditions[4]
    assert c.state == "open" and "vector_add" in c.summary and "softmax" not in c.summary
    assert v.decision == "approve_with_conditions"


def test_unmapped_change_is_named_in_why():
    unmapped = TUNING.model_copy(update={"kernel": "foo_kernel", "mapped": False})
    v = decide([REWRITE_KEPT, unmapped], CLI, FULL)
    assert "not covered by the policy" in v.why


def test_a_failed_first_call_is_not_run_never_met():
    failed = FirstCallEvidence(
        vendor="nvidia",
        kernel="softmax",
        cold_ms=None,
        warm_ms=None,
        detail="cold run failed: CUDA error",
    )
    v = decide([REWRITE_KEPT], CLI, FULL.model_copy(update={"first_calls": (failed,)}))
    c = v.conditions[1]
    assert c.state == "not_run" and "failed" in c.summary
    assert any("CUDA error" in e for e in c.evidence)


def test_conditions_are_numbered_by_their_place_in_the_list():
    v = decide([REWRITE_KEPT, TUNING], CLI, FULL)
    assert [(c.number, c.key, c.title) for c in v.conditions] == [
        (number, key, title) for number, (key, title, _) in enumerate(CONDITIONS, start=1)
    ]
    assert [c.key for c in v.conditions] == [
        "sweep",
        "first_call",
        "vendors",
        "ownership",
        "rollback",
    ]


def test_where_fresh_autotunings_disagree_the_review_says_which_config_the_sweep_timed():
    """The verdict at an autotuned shape was timed with the config the sweep's head worker kept;
    where fresh processes keep different configs there, the first-call condition says so."""
    small, big = (
        "softmax_kernel: BLOCK=64, num_warps=4, num_stages=2",
        "softmax_kernel: BLOCK=128, num_warps=8, num_stages=2",
    )
    spread = PickSpread(shape="4096x4096:float16", configs=(small, big), autotunings=3)
    fc = first_call().model_copy(update={"unstable_picks": (spread,)})
    timed = sweep(
        "nvidia", shape(head_configs=(big,)), shape(dtype="float32", head_configs=(small,))
    )
    ev = FULL.model_copy(update={"sweeps": (timed, sweep("amd")), "first_calls": (fc,)})
    c = decide([REWRITE_KEPT], CLI, ev).conditions[1]
    (line,) = [e for e in c.evidence if "autotunings in fresh processes" in e]
    assert line.startswith("softmax 4096x4096 float16 on nvidia: 3 autotunings")
    assert "kept 2 configs; the sweep's head kept one of them, " + big in line
    assert "so its SAME there (head/base 1.010) is for that config" in line
    # a sweep pick none of the fresh processes kept is said so
    other = timed.model_copy(
        update={"shapes": (shape(head_configs=("softmax_kernel: BLOCK=32",)),)}
    )
    c = decide([REWRITE_KEPT], CLI, ev.model_copy(update={"sweeps": (other,)})).conditions[1]
    assert any(
        "the sweep's head kept a config none of them kept, softmax_kernel: BLOCK=32" in e
        for e in c.evidence
    )
    # no autotuning recorded in the sweep at that shape, or no disagreement: nothing said
    for quiet in (
        ev.model_copy(update={"sweeps": (sweep("nvidia"),)}),
        ev.model_copy(update={"first_calls": (first_call(),)}),
    ):
        c = decide([REWRITE_KEPT], CLI, quiet).conditions[1]
        assert not any("autotunings in fresh processes" in e for e in c.evidence)


def test_the_price_quoted_is_the_one_that_decided_each_rewrite():
    # the policy's price is 6%; softmax's tolerance of 7% lifts its price to 7%
    req = CLI.model_copy(update={"tolerances": {"softmax": 0.07, "vector_add": 0.025}})
    judged = Evidence(sweeps=(sweep("nvidia", shape(tolerance=0.07)),), repo=GOOD_REPO)
    (parity, _) = decide([REWRITE_KEPT], req, judged).not_asking_for
    assert "within softmax's 7% rewrite price" in parity and "6%" not in parity
    # each kernel's own price from the policy, each named where they differ
    (parity, _) = decide([REWRITE_KEPT, REWRITE_DELETED], req, Evidence()).not_asking_for
    assert "within each rewrite's price (softmax 7%, vector_add 6%)" in parity


def test_the_tolerance_quoted_is_the_one_that_decided_each_kernel():
    # a pull request that moves the toolchain judges its rewrites at their tolerance too
    bump = ChangeLine(
        kernel="triton", kind="toolchain", old_version="==3.5.1", new_version="==3.6.0"
    )
    req = CLI.model_copy(update={"tolerances": {"softmax": 0.05, "vector_add": 0.025}})
    judged = Evidence(sweeps=(sweep("nvidia", shape(tolerance=0.05)),), repo=GOOD_REPO)
    (parity, _) = decide([REWRITE_KEPT, bump], req, judged).not_asking_for
    assert "within the 5% tolerance" in parity and "3%" not in parity
    # not measured yet: the kernels' own tolerances from the policy, each named where they differ
    (parity, _) = decide([REWRITE_KEPT, REWRITE_DELETED, bump], req, Evidence()).not_asking_for
    assert "within each kernel's tolerance (softmax 5%, vector_add 2.5%)" in parity


AUTOTUNER_DETAIL = (
    "stopped: max executions after 36 rounds; the autotuner picks differently from one process "
    "to the next: head picked BLOCK_M=64 in 2 of 3, BLOCK_M=128 in 1 of 3 (BLOCK_M=128 ran 7.9% "
    "slower than BLOCK_M=64 in the executions that picked them); head/base varied from one "
    "execution (fresh processes) to the next: 0.981 to 1.062 over 3 executions, 3.4% spread "
    "(one SD) beyond the rounds' noise; likely cause: the autotuner's picks; too much to decide "
    "at a 3.0% tolerance"
)


def test_an_inconclusive_shape_says_why_once_in_words():
    x = shape("INCONCLUSIVE", 1.02, detail=AUTOTUNER_DETAIL)
    v = decide([REWRITE_KEPT], CLI, Evidence(sweeps=(sweep("nvidia", x),)))
    sweep_condition = v.conditions[0]
    (line,) = [r for r in sweep_condition.evidence if "inconclusive" in r]
    assert line.startswith("softmax 4096x4096 float16: inconclusive (1.0–3.0% slower at 95%): ")
    assert "the autotuner picks differently from one process to the next" in line
    assert "0.981 to 1.062 over 3 executions" in line
    assert "likely cause" not in line  # the autotuner was named already
    assert "stopped: max executions" not in line  # the executions' spread says it
    assert line.count("autotuner") == 1
    # the summary does not send the reader to rerun what more rounds cannot settle
    assert "rerun" not in sweep_condition.summary
    assert "varied from one process to the next" in sweep_condition.summary
    # noise alone: the stop in words, and a rerun is what helps
    noisy = shape("INCONCLUSIVE", 1.02, detail="stopped: time budget after 40 rounds")
    v = decide([TUNING], CLI, Evidence(sweeps=(sweep("nvidia", noisy),)))
    (line,) = [r for r in v.conditions[0].evidence if "inconclusive" in r]
    assert line.endswith(
        ": its time budget ran out after 40 rounds, before the interval was narrow enough"
    )
    assert "rerun with `/bench full`" in v.conditions[0].summary


def test_an_inconclusive_shape_reads_whether_its_processes_disagreed_from_the_field():
    """Whether the executions disagreed is the sweep's fact, not its wording: a detail that
    says it otherwise changes nothing, and the words alone on a line written with the field
    (an older file's line has no such key) say nothing."""
    said = "stopped: max executions after 36 rounds; 3 fresh processes read 0.98 to 1.06"
    x = shape("INCONCLUSIVE", 1.02, detail=said, varied_between_processes=True)
    v = decide([TUNING], CLI, Evidence(sweeps=(sweep("nvidia", x),)))
    (line,) = [r for r in v.conditions[0].evidence if "inconclusive" in r]
    assert line.endswith("at 95%): 3 fresh processes read 0.98 to 1.06")  # no stop: it says
    assert "varied from one process to the next" in v.conditions[0].summary
    assert "rerun" not in v.conditions[0].summary
    words = shape("INCONCLUSIVE", 1.02, detail=AUTOTUNER_DETAIL, varied_between_processes=False)
    v = decide([TUNING], CLI, Evidence(sweeps=(sweep("nvidia", words),)))
    assert "varied from one process to the next" not in v.conditions[0].summary
    (line,) = [r for r in v.conditions[0].evidence if "inconclusive" in r]
    assert "it ran all its executions (fresh processes, 36 rounds)" in line
    older = shape("INCONCLUSIVE", 1.02, detail=AUTOTUNER_DETAIL)  # the key absent
    assert older.varied_between_processes


def _inconclusive(x: ShapeLine) -> str:
    v = decide([TUNING], CLI, Evidence(sweeps=(sweep("nvidia", x),)))
    (line,) = [r for r in v.conditions[0].evidence if "inconclusive" in r]
    return line.split(" at 95%): ", 1)[1]


def test_an_inconclusive_shape_reads_its_stop_and_likely_cause_from_its_clauses():
    """Why the sweep stopped and what the spread's likely cause is are the sweep's facts, not
    its wording: clauses said otherwise read the same, and the sweep's old words in a note are
    only words."""
    reworded = shape(
        "INCONCLUSIVE",
        1.02,
        clauses=(
            Clause(kind="stop", text="halted at the executions' limit, 36 rounds in"),
            Clause(kind="picks_vary", text="head's autotuning chose BLOCK_M=64 in 2 processes"),
            Clause(kind="cause_picks", text="blame the autotuning"),
        ),
        stop_reason="max_executions",
        rounds=36,
    )
    assert _inconclusive(reworded) == (
        "it ran all its executions (fresh processes, 36 rounds) without them agreeing; "
        "head's autotuning chose BLOCK_M=64 in 2 processes"
    )
    # a stop the review has no words for is said as the sweep said it
    decided = reworded.model_copy(update={"stop_reason": "decided"})
    assert _inconclusive(decided).startswith("halted at the executions' limit, 36 rounds in; ")
    notes = [
        "stopped: time budget after 40 rounds",
        "the autotuner picks differently from one process to the next: head picked X in 2 of 3",
        "likely cause: the autotuner's picks",
    ]
    as_notes = shape(
        "INCONCLUSIVE", 1.02, clauses=tuple(Clause(kind="note", text=n) for n in notes)
    )
    assert _inconclusive(as_notes) == "; ".join(notes)


def test_every_way_the_sweep_stops_short_is_said_in_words_with_its_rounds():
    """The review's words for a stop are keyed by the sweep's own terms for it: each reason the
    sweep may stop a shape undecided (all but a decision and a failure) has words."""
    from typing import get_args

    from checks.sweep.protocol import StopReason

    for reason in set(get_args(StopReason)) - {"decided", "failed"}:
        stop = Clause(kind="stop", text=f"stopped: {reason}")
        x = shape("INCONCLUSIVE", 1.02, clauses=(stop,), stop_reason=reason, rounds=17)
        said = _inconclusive(x)
        assert said != stop.text and "17 rounds" in said, (reason, said)


def test_an_older_line_has_its_clauses_and_stop_read_from_its_detail_once_at_load():
    """A line of a results file written before the clauses were kept (the keys absent) has them
    read from its detail as the review read it then, and says the same; a line written with
    them is never read from its detail, and one whose detail is not its clauses is refused."""
    older = {
        "kernel": "softmax",
        "shape": [4096, 4096],
        "dtype": "float16",
        "verdict": "INCONCLUSIVE",
        "ratio": 1.02,
        "ci_low": 1.01,
        "ci_high": 1.03,
        "detail": AUTOTUNER_DETAIL,
    }
    x = ShapeLine.model_validate(older)
    assert (x.stop_reason, x.rounds) == ("max_executions", 36)
    assert [c.kind for c in x.clauses] == ["stop", "picks_vary", "note", "cause_picks", "note"]
    assert x.varied_between_processes
    assert _inconclusive(x) == (
        "the autotuner picks differently from one process to the next: head picked BLOCK_M=64 "
        "in 2 of 3, BLOCK_M=128 in 1 of 3 (BLOCK_M=128 ran 7.9% slower than BLOCK_M=64 in the "
        "executions that picked them); head/base varied from one execution (fresh processes) "
        "to the next: 0.981 to 1.062 over 3 executions, 3.4% spread (one SD) beyond the "
        "rounds' noise; too much to decide at a 3.0% tolerance"
    )
    quiet = ShapeLine.model_validate(
        {**older, "detail": "stopped: time budget after 40 rounds; 2 throttled rounds dropped"}
    )
    assert [c.kind for c in quiet.clauses] == ["stop", "dropped"]
    assert _inconclusive(quiet) == (
        "its time budget ran out after 40 rounds, before the interval was narrow enough; "
        "2 throttled rounds dropped"
    )
    said_so = [{"kind": "note", "text": "stopped: time budget after 40 rounds"}]
    written = ShapeLine.model_validate({**older, "detail": said_so[0]["text"], "clauses": said_so})
    assert written.stop_reason == "" and _inconclusive(written) == said_so[0]["text"]
    with pytest.raises(ValidationError, match="its detail is not its clauses joined"):
        ShapeLine.model_validate({**older, "clauses": said_so})
    # the clauses alone give the detail
    alone = {k: v for k, v in older.items() if k != "detail"}
    assert ShapeLine.model_validate({**alone, "clauses": said_so}).detail == said_so[0]["text"]


def test_the_served_shapes_speed_says_its_word_once():
    """ "10.1% faster (10.1–10.2%; weighted ...)", not "10.1% faster (10.1–10.2% faster; ...)";
    an interval across 1 is said in full."""
    faster = sweep("nvidia").model_copy(
        update={"geomean_ratio": 0.899, "geomean_ci": (0.898, 0.8995), "weighted": True}
    )
    across = faster.model_copy(update={"geomean_ratio": 1.01, "geomean_ci": (0.99, 1.02)})
    lines = [
        decide([TUNING], CLI, FULL.model_copy(update={"sweeps": (s, sweep("amd"))}))
        .conditions[0]
        .evidence[0]
        for s in (faster, across)
    ]
    assert "the served shapes together 10.1% faster (10.1–10.2%; weighted by how" in lines[0]
    assert "together 1.0% slower (1.0% faster to 2.0% slower; weighted by how" in lines[1]
