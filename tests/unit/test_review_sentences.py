"""Sentences of the review a maintainer found false or unclear on the golden comments, each
held to what is true: a condition without evidence lines, code counts of a kernel the pull
request does not rewrite, a pattern claimed over one shape, noise blamed for an interval that
merely crosses the tolerance's edge, one vendor's reason standing for both, a failed shape
called the worst, "met with evidence" where nothing was covered, a body change called "other",
launch branches in the order a hash gave them; and the comment's long lines and lists cut
without losing what they say."""

from __future__ import annotations

from bot.contracts.evidence import (
    Evidence,
    FirstCallEvidence,
    NotRun,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.repo import OwnerFact, PerfGateFact, PinFact, RepoConditions
from bot.contracts.review import ChangeLine, Condition, PartATable, Requirements, ReviewContext
from bot.review.conditions import Facts, first_call, sweep, vendors
from bot.review.render import _brief, _clip, _not_run, render_comment
from bot.review.verdict import decide
from tests.unit.test_shapes import _kernel
from tests.unit.test_verdict import REWRITE_KEPT as REWRITE
from tests.unit.test_verdict import TUNING

CTX = ReviewContext(base_sha="a" * 40, head_sha="b" * 40)
SOFTMAX_COUNTS = PartATable(
    kernel="softmax",
    old_label="CUDA + HIP",
    new_label="Triton",
    rows=(("Lines in the kernel body", "38", "12"), ("Explicit barriers", "4", "0")),
)


def _shape(verdict: str, ratio: float, ci: tuple[float, float], **kw) -> ShapeLine:
    kw.setdefault("kernel", "matmul")
    kw.setdefault("shape", (4096, 4096))
    return ShapeLine(
        dtype="float16", verdict=verdict, ratio=ratio, ci_low=ci[0], ci_high=ci[1], **kw
    )


def _facts(*shapes: ShapeLine, changes=(TUNING,), **ev) -> Facts:
    sweeps = (SweepEvidence(vendor="nvidia", gpu="H200", shapes=shapes),) if shapes else ()
    return Facts(
        changes=tuple(changes),
        req=Requirements(vendors=("nvidia", "amd")),
        ev=Evidence(sweeps=sweeps, **ev),
    )


def test_the_code_counts_are_shown_only_for_a_kernel_this_pull_request_rewrites() -> None:
    # before: a retune of matmul showed softmax's Part A table, as if softmax were rewritten
    tuning = render_comment(
        decide([TUNING], Requirements(), Evidence()), CTX, None, [SOFTMAX_COUNTS]
    )
    assert "Part A" not in tuning and "Lines in the kernel body" not in tuning
    rewrite = render_comment(
        decide([REWRITE], Requirements(), Evidence()), CTX, None, [SOFTMAX_COUNTS]
    )
    assert "| measure | softmax: CUDA + HIP → Triton |" in rewrite
    assert "| Lines in the kernel body | 38 → 12 |" in rewrite


def test_a_condition_without_evidence_lines_says_its_summary_on_its_title_line() -> None:
    # before: "5. ... — ✅ met" with nothing under it in the folded section; the comment and the
    # job summary say it the same way
    for full in (False, True):
        text = render_comment(decide([TUNING], Requirements(), Evidence()), CTX, full=full)
        why = text.split("Why, and the five conditions")[1]
        assert (
            "5. **The old kernel kept for one release as rollback** — ✅ met: no hand-written "
            "kernel is replaced; the previous version is in history\n"
        ) in why


def test_one_slower_shape_is_named_and_no_pattern_is_claimed_over_it() -> None:
    found = sweep(
        _facts(
            _shape("SLOWER", 1.09, (1.08, 1.10), shape=(7, 13, 31)),
            _shape("SAME", 1.0, (0.99, 1.01)),
            _shape("FASTER", 0.9, (0.89, 0.91), shape=(1024, 1024)),
        )
    )
    assert "matmul: 1 of 3 shapes slower, 7x13x31 float16 by 9.0%" in found.rows
    assert not any("pattern" in row for row in found.rows)


def test_an_interval_across_the_tolerance_edge_is_not_called_noise() -> None:
    # 3.0-5.0% slower against a 3% tolerance: narrower than the band, it straddles its edge
    edge = _shape("INCONCLUSIVE", 1.04, (1.03, 1.05), tolerance=0.03)
    found = sweep(_facts(edge))
    assert "noise" not in found.summary
    assert "the interval crosses the tolerance's edge" in found.summary
    # an interval wider than the whole band is noise
    wide = _shape("INCONCLUSIVE", 1.0, (0.9, 1.1), tolerance=0.03)
    assert "the noise was larger than the tolerance" in sweep(_facts(wide)).summary


def test_a_sweep_not_run_on_two_vendors_gives_each_vendor_its_reason() -> None:
    # before: the summary said NVIDIA's reason alone, as if it were AMD's too
    not_run = (
        NotRun(check="sweep", vendor="nvidia", reason="needs an NVIDIA GPU runner"),
        NotRun(check="sweep", vendor="amd", reason="needs an AMD GPU runner"),
    )
    found = sweep(_facts(not_run=not_run))
    assert found.state == "not_run"
    assert found.summary == "nvidia: needs an NVIDIA GPU runner; amd: needs an AMD GPU runner"
    # what this machine has, where it is why for both, is said once
    shared = tuple(n.model_copy(update={"here": "this machine has no GPU"}) for n in not_run)
    assert sweep(_facts(not_run=shared)).summary == (
        "nvidia: needs an NVIDIA GPU runner, amd: needs an AMD GPU runner; this machine has no GPU"
    )
    # two reasons that end alike in their own words are each said whole: the ending is not
    # taken for what this machine has
    failed = (
        NotRun(check="sweep", vendor="nvidia", reason="the worker crashed; see the job's log"),
        NotRun(check="sweep", vendor="amd", reason="no runner was online; see the job's log"),
    )
    assert sweep(_facts(not_run=failed)).summary == (
        "nvidia: the worker crashed; see the job's log; amd: no runner was online; see the "
        "job's log"
    )


def test_the_first_call_on_an_nvidia_machine_gives_nvidias_reason_and_amds_as_amds() -> None:
    """The onboarding's local review on an H200 swept nvidia, measured no first call, and its
    first-call line said "needs an AMD GPU runner; this machine has an NVIDIA GPU", the one
    reason it had, as if it were the whole. The local review now says why nvidia's first call
    was not run, and each reason is said under its vendor's name."""
    from bot.contracts.plan import Plan
    from bot.review.local import _not_measured_here

    same = _shape("SAME", 1.0, (0.99, 1.01))
    swept = SweepEvidence(vendor="nvidia", gpu="H200", shapes=(same,))
    amd = "needs an AMD GPU runner; this machine has an NVIDIA GPU"
    before = (
        NotRun(check="sweep", vendor="amd", reason=amd),
        NotRun(check="first_call", vendor="amd", reason=amd),
    )
    alone = first_call(_facts(same, not_run=before)).summary
    assert alone == f"amd: {amd}; the deployment is `long-lived`"
    kernels = (_kernel((((4096,), 1.0),), name="matmul"),)
    plan = Plan(
        base_sha="a" * 40,
        head_sha="b" * 40,
        vendors=("nvidia", "amd"),
        kernels=kernels,
        checks=("sweep", "first_call"),
    )
    rows = _not_measured_here(plan, (swept,), (), here="nvidia", swept_here=frozenset({"nvidia"}))
    assert [(n.check, n.vendor) for n in rows] == [
        ("first_call", "nvidia"),
        ("sweep", "amd"),
        ("first_call", "amd"),
    ]
    assert rows[2].said == amd and rows[2].here == "this machine has an NVIDIA GPU"
    summary = first_call(_facts(same, not_run=tuple(rows))).summary
    assert summary == (
        "nvidia: `review --measure` timed only the sweep on this NVIDIA GPU: `kernel-review "
        f"first-call` measures the first call; amd: {amd}; the deployment is `long-lived`"
    )
    # a reason the measurements that came in give is theirs to say
    given = (NotRun(check="first_call", vendor="nvidia", reason="the budget ran out"),)
    kept = _not_measured_here(plan, (swept,), (), given, here="nvidia", swept_here=frozenset())
    assert ("first_call", "nvidia") not in [(n.check, n.vendor) for n in kept]


def test_no_timed_shape_is_slower_where_no_shape_is_said_slower() -> None:
    """The sweep's line says "no timed shape slower" exactly where no timed shape's ratio is
    said slower: 0.05% is the first step past "as fast"."""
    from bot.words import said_slower, speed

    for ratio in (0.9, 0.9995, 1.0, 1.0004, 1.00049, 1.0005, 1.0006, 1.2, 3.0):
        assert said_slower(ratio) == speed(ratio).endswith(" slower"), ratio
    for ratio, said in ((1.0004, True), (1.0006, False)):
        timed = _shape("SAME", ratio, (ratio - 0.01, ratio + 0.01))
        line = sweep(_facts(timed)).rows[0]
        assert line.endswith("; no timed shape slower") is said, line


def test_a_compile_only_first_call_reads_as_one_clause() -> None:
    compiled = FirstCallEvidence(
        vendor="nvidia", kernel="matmul", cold_ms=2100.0, warm_ms=700.0, compile_only=True
    )
    found = first_call(_facts(first_calls=(compiled,)))
    assert found.rows == ("matmul on nvidia, cold 2100 ms, warm 700 ms (compile only, on a CPU)",)


def test_the_worst_shape_of_a_vendor_is_a_timed_one_and_slower() -> None:
    # before: "worst matmul 4096x4096x4096 bfloat16, as fast" for a shape whose result was wrong
    wrong = _shape("WRONG", 1.0, (0.99, 1.01), shape=(4096, 4096, 4096))
    faster = _shape("FASTER", 0.91, (0.9, 0.92))
    line = sweep(_facts(wrong, faster)).rows[0]
    assert "worst" not in line and line.endswith("; no timed shape slower")
    # a slower shape is named by the worst shapes and its kernel's line, not again here
    slower = _shape("SLOWER", 1.2, (1.19, 1.21), shape=(1, 781))
    rows = sweep(_facts(wrong, slower)).rows
    assert rows[0] == "nvidia (H200): 2 shapes"
    # ... where the kernel has one timed shape, said so ("1 of 1 shapes" before)
    assert "matmul: its one timed shape slower, 1x781 float16 by 20.0%" in rows


def test_approval_with_nothing_covered_does_not_say_met_with_evidence() -> None:
    layernorm = ChangeLine(kernel="layernorm", kind="tuning", mapped=False)
    repo = RepoConditions(
        owners=(OwnerFact(path="ops/layernorm.py", owners=("@gpu",), source="CODEOWNERS:1"),),
        pins=(PinFact(package="triton", spec="==3.6.0", source="pyproject.toml:5", kind="exact"),),
        perf_gate=PerfGateFact(workflow=".github/workflows/perf.yml", detail="perf.yml:9"),
    )
    verdict = decide([layernorm], Requirements(), Evidence(repo=repo))
    assert verdict.decision == "approve"
    why = verdict.why
    assert "met with evidence" not in why
    assert why == (
        "This pull request retunes 1 Triton kernel. 1 changed kernel is not covered by the "
        "policy and was not measured: add it to `kernels` with a bench entry point."
    )


def test_a_body_change_is_named_as_one() -> None:
    body = ChangeLine(kernel="rmsnorm", kind="body")
    assert "changes the body of 1 kernel" in decide([TUNING, body], Requirements(), Evidence()).why


def test_launch_branches_are_listed_in_file_order_whatever_order_they_came_in() -> None:
    branches = ("ops/mm.py:267 (matmul): b", "ops/mm.py:99 (configs): a", "ops/mm.py:201 (x): c")
    change = TUNING.model_copy(update={"branches": branches})
    rows = vendors(_facts(_shape("SAME", 1.0, (0.99, 1.01)), changes=(change,))).rows
    assert [r for r in rows if r.startswith("matmul: ops/")] == [
        "matmul: ops/mm.py:99 (configs): a",
        "matmul: ops/mm.py:201 (x): c",
        "matmul: ops/mm.py:267 (matmul): b",
    ]


def test_a_long_evidence_line_is_cut_at_a_clause_its_brackets_closed() -> None:
    line = "k on nvidia, cold 1 ms (imports 2 ms; " + "x" * 300 + ")"
    assert _clip(line) == "k on nvidia, cold 1 ms (imports 2 ms …)"
    short = "a; b"
    assert _clip(short) == short
    # a ";" inside code is not a clause boundary; a line with none is kept whole
    code = "a `" + "y; " * 100 + "`"
    assert _clip(code) == code


def test_a_long_list_of_shapes_is_cut_to_its_first_and_a_count() -> None:
    """The comment cuts the list of shapes the condition says a line names, not whatever in
    the line looks like one."""
    shapes = ("1x781:float32", "1823x781:float32", "4096x4096:float16")
    line = f"over the 3000 ms budget at {', '.join(shapes)}"
    assert _brief(line, shapes) == "over the 3000 ms budget at 1x781:float32 and 2 more"
    assert _brief(line, ()) == line  # shapes in words of a line that names no list
    assert _brief("at 1x781:float32, 2x2:float16", shapes[:2]) == "at 1x781:float32, 2x2:float16"
    # the first call's condition names the shapes over the budget, however a shape is written
    over = ("2048 float16", "4096 float16", "8192 bfloat16")
    slow = FirstCallEvidence(
        vendor="nvidia", kernel="softmax", cold_ms=4100.0, warm_ms=1.0, over_budget_shapes=over
    )
    req = Requirements(deployment="cli", first_call_budget_ms=3000)
    found = first_call(Facts(changes=(TUNING,), req=req, ev=Evidence(first_calls=(slow,))))
    said = "softmax on nvidia: over the 3000 ms budget at " + ", ".join(over)
    assert found.rows[0] == said and found.shape_lists == ((said, over),)
    v = decide([TUNING], req, Evidence(first_calls=(slow,)))
    comment = render_comment(v, CTX, Evidence(first_calls=(slow,)))
    assert "over the 3000 ms budget at 2048 float16 and 2 more" in comment


def test_what_did_not_run_is_one_line_per_vendor_and_reason() -> None:
    ev = Evidence(
        not_run=(
            NotRun(check="compiler", vendor="amd", reason="no hipcc on this machine", path="a.hip"),
            NotRun(check="compiler", vendor="amd", reason="no hipcc on this machine", path="b.hip"),
            NotRun(check="sweep", vendor="amd", reason="needs an AMD GPU runner"),
            NotRun(check="first_call", vendor="amd", reason="needs an AMD GPU runner"),
        )
    )
    assert _not_run(ev) == [
        "- compiler (a.hip, b.hip) on amd: no hipcc on this machine",
        "- sweep and first call on amd: needs an AMD GPU runner",
    ]


def test_a_compiler_reason_with_a_colon_names_no_file() -> None:
    """The file a compiler's line holds for is its own field: a reason that says "x: y" is said
    whole, not taken for a file and a reason."""
    worker = "the compile worker stopped: Triton 3.6 is not installed in this environment"
    ev = Evidence(not_run=(NotRun.model_validate({"check": "compiler", "reason": worker}),))
    assert _not_run(ev) == [f"- compiler: {worker}"]
    # a file named on the line: in brackets after the check
    ev = Evidence(not_run=(NotRun(check="compiler", reason="no nvcc here", path="k/add.cu"),))
    assert _not_run(ev) == ["- compiler (k/add.cu): no nvcc here"]


def test_an_older_compilers_line_has_its_file_read_from_its_reason_at_load() -> None:
    older = NotRun.model_validate(
        {"check": "compiler", "vendor": "amd", "reason": "csrc/a.hip: no hipcc on this machine"}
    )
    assert (older.path, older.reason) == ("csrc/a.hip", "no hipcc on this machine")
    written = {"check": "compiler", "reason": "csrc/a.hip: no hipcc", "path": ""}
    assert NotRun.model_validate(written).reason == "csrc/a.hip: no hipcc"


def test_a_condition_with_no_lines_lists_nothing_in_the_job_summary() -> None:
    met = Condition(number=5, key="rollback", title="T", state="met", summary="all kept")
    verdict = decide([TUNING], Requirements(), Evidence()).model_copy(update={"conditions": (met,)})
    summary = render_comment(verdict, CTX, full=True)
    assert "5. **T** — ✅ met: all kept\n" in summary  # the summary sits on the title's line


def test_languages_are_written_as_their_names_and_a_wrong_result_is_not_compared() -> None:
    from bot.review.render import _language, _vs_base

    assert _language("cuda+hip") == "CUDA + HIP" and _language("triton") == "Triton"
    assert _language("mojo") == "mojo" and _language(None) == "?"
    # a wrong result's time says nothing: the table does not say "as fast"
    wrong = _shape("WRONG", 1.0, (0.99, 1.01))
    assert _vs_base(wrong) == "—"
    assert _vs_base(_shape("SLOWER", 1.2, (1.19, 1.21))) == "20.0% slower (19.0–21.0%)"


def test_a_failed_shape_reads_as_its_verdict_and_why() -> None:
    # before: "matmul 4096x4096x4096 float16: WRONG max abs err 0.5 > 0.01", two clauses run on
    wrong = _shape("WRONG", 1.0, (0.99, 1.01), shape=(4096, 4096, 4096))
    wrong = wrong.model_copy(update={"detail": "max abs err 0.5 > 0.01"})
    rows = sweep(_facts(wrong)).rows
    assert "matmul 4096x4096x4096 float16: WRONG (max abs err 0.5 > 0.01)" in rows


def test_an_inconclusive_shape_across_the_edge_reads_without_a_colon_run() -> None:
    # before: "1 shape inconclusive: the interval crosses the tolerance's edge: the difference..."
    edge = _shape("INCONCLUSIVE", 1.03, (1.02, 1.04)).model_copy(update={"tolerance": 0.03})
    summary = sweep(_facts(edge)).summary
    assert summary == (
        "1 shape inconclusive: the interval crosses the tolerance's edge, so the difference is "
        "about the tolerance itself; rerun with `/bench full` to narrow it"
    )


def test_the_sweep_counts_slower_shapes_per_kernel_and_the_rest_in_one() -> None:
    slow = [_shape("SLOWER", 1.2, (1.19, 1.21), kernel=f"k{i}", tolerance=0.03) for i in range(5)]
    summary = sweep(_facts(*slow, _shape("SAME", 1.0, (0.99, 1.01), kernel="k0"))).summary
    assert summary == (
        "past the 3% tolerance at 1 of k0's 2 shapes (20.0% slower), 1 of k1's 1 (20.0% "
        "slower), 1 of k2's 1 (20.0% slower) and 2 shapes of 2 more kernels"
    )
