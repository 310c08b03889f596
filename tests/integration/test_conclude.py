"""The review tail: one set of requirements and one context from the policy, one verdict,
the whole comment and the job summary; and the local review's compiler report, injected."""

from __future__ import annotations

from pathlib import Path

from bot.contracts.evidence import Evidence, NotRun
from bot.contracts.review import ChangeLine
from bot.policy.load import parse_policy
from bot.review.conclude import conclude, requirements, review_context
from bot.review.local import ReviewInputs, static_review
from bot.review.render import render_comment
from bot.review.verdict import decide
from tests.unit.test_render import CHANGES, PART_A, REPO

POLICY = parse_policy(
    """\
tolerance = 0.05
vendors = ["nvidia"]
kernels = [
  { name = "softmax", bench = "b:f", paths = ["k.py"], dtypes = ["float16"], shapes = [[8]] },
]
[deployment]
kind = "serverless"
first_call_budget_ms = 1500
"""
)


def test_requirements_and_context_come_from_the_policy() -> None:
    req = requirements(POLICY)
    assert (req.vendors, req.deployment, req.first_call_budget_ms, req.tolerance) == (
        ("nvidia",),
        "serverless",
        1500,
        0.05,
    )
    ctx = review_context(
        POLICY, base_sha="a" * 40, head_sha="b" * 40, repository="o/r", policy_source="", note="n"
    )
    assert (ctx.deployment, ctx.first_call_budget_ms, ctx.vendors, ctx.note) == (
        "serverless",
        1500,
        ("nvidia",),
        "n",
    )


def test_conclude_renders_the_whole_comment_and_the_summary() -> None:
    ev = Evidence(repo=REPO)
    ctx = review_context(
        POLICY, base_sha="a" * 40, head_sha="b" * 40, repository="o/r", policy_source="p.toml"
    )
    out = conclude(CHANGES, POLICY, ev, ctx, PART_A)
    verdict = decide(CHANGES, requirements(POLICY), ev)
    assert out.verdict == verdict
    assert out.comment == render_comment(verdict, ctx, ev, PART_A)
    assert out.summary == render_comment(verdict, ctx, ev, PART_A, full=True)
    assert out.part_a == PART_A and out.context == ctx


def test_the_local_review_compiles_through_the_function_it_is_given(tmp_path: Path) -> None:
    from kernels_fixture.build_repo import build_fixture_repo

    fixture = build_fixture_repo(tmp_path / "toyops")
    calls = []

    def compiler_report(repo, base_sha, head_sha, plan, policy):
        calls.append((Path(repo), base_sha, head_sha, plan.kernels != ()))
        return None, [NotRun(check="compiler", reason="compiled by the test's stand-in")]

    inputs = ReviewInputs(
        repo=Path(fixture.path), base_sha=fixture.base_sha, head_sha=fixture.head_sha
    )
    local = static_review(inputs, compiler_report=compiler_report)
    assert calls == [(Path(fixture.path), fixture.base_sha, fixture.head_sha, True)]
    assert "compiler: compiled by the test's stand-in" in local.review.comment
    assert local.plan.head_sha == fixture.head_sha
    # without one, nothing is compiled and nothing about the compiler is said
    bare = static_review(inputs)
    assert "stand-in" not in bare.review.comment and len(calls) == 1


def test_the_same_commit_on_both_sides_says_there_is_nothing_to_review() -> None:
    ctx = review_context(
        POLICY, base_sha="c" * 40, head_sha="c" * 40, repository="o/r", policy_source="p.toml"
    )
    for changes in ((), CHANGES):  # whatever a caller passes, one commit has no difference
        out = conclude(changes, POLICY, Evidence(repo=REPO), ctx)
        assert out.verdict.no_kernel_changes and out.verdict.conditions == ()
        assert out.verdict.why == (
            "Base and head are the same commit (ccccccc): there is no difference to review."
        )
        assert "no difference to review" in out.comment.splitlines()[1]
    # the scheduled run tries a new toolchain on one commit: that is a difference to review
    bump = ChangeLine(
        kernel="triton", kind="toolchain", old_version="==3.5.1", new_version="==3.6.0"
    )
    out = conclude((bump,), POLICY, Evidence(repo=REPO), ctx)
    assert not out.verdict.no_kernel_changes and out.verdict.conditions
    # and the requirements carry each kernel's own tolerance, which decides its shapes
    assert requirements(POLICY).tolerances == {"softmax": 0.05}
