"""A slowdown weighs by where the kernel is served (the seed's Part D): at a shape the policy
serves it requests changes; at one the planner added it is an open condition naming the shapes
and the time they add, unless the shape collapsed (twice the base's time or more)."""

from __future__ import annotations

from bot.contracts.review import Requirements
from bot.review.render import render_comment
from bot.review.verdict import decide
from tests.unit.test_render import CTX
from tests.unit.test_trade import PART_A, evidence
from tests.unit.test_verdict import REWRITE_KEPT, TUNING, shape

REQ = Requirements(
    vendors=("nvidia",), deployment="long-lived", tolerances={"matmul": 0.03, "softmax": 0.03}
)
MATMUL = {"kernel": "matmul", "dtype": "bfloat16", "tolerance": 0.03}
SERVED = shape("FASTER", 0.95, shape=(4096, 4096, 4096), **MATMUL)
# a tiny shape the planner added: the autotuned launch costs 0.48 µs more than the old one
TINY = shape("SLOWER", 1.51, shape=(7, 13), small_or_ragged=True, **MATMUL).model_copy(
    update={"base_us": 0.94, "head_us": 1.42}
)


def _sweep(v):
    (c,) = [c for c in v.conditions if c.key == "sweep"]
    return c


def test_a_tuning_slower_only_at_an_added_shape_is_a_condition_not_a_blocker() -> None:
    v = decide([TUNING], REQ, evidence(SERVED, TINY))
    assert v.decision == "approve_with_conditions"
    c = _sweep(v)
    assert c.state == "open" and not c.blocking
    assert c.summary == (
        "not blocking: 1 added shape the policy does not serve, slower than allowed (51.0% "
        "slower, +0.48 µs a call): confirm it is not served, or add it to the policy's `shapes`"
    )


def test_the_same_slowdown_at_a_served_shape_still_requests_changes() -> None:
    served = TINY.model_copy(update={"small_or_ragged": False})
    v = decide([TUNING], REQ, evidence(SERVED, served))
    assert v.decision == "request_changes" and _sweep(v).blocking
    assert "past matmul's 3% tolerance at 1 of its 2 shapes" in _sweep(v).summary
    assert "not blocking" not in _sweep(v).summary


def test_an_added_shape_that_collapses_requests_changes() -> None:
    cliff = shape("SLOWER", 2.4, shape=(67108859,), small_or_ragged=True, **MATMUL)
    v = decide([TUNING], REQ, evidence(SERVED, cliff))
    assert v.decision == "request_changes" and _sweep(v).blocking
    # ... but not one whose interval reaches below twice the base's time
    near = cliff.model_copy(update={"ratio": 2.0, "ci_low": 1.95, "ci_high": 2.05})
    assert decide([TUNING], REQ, evidence(SERVED, near)).decision == "approve_with_conditions"


def test_a_failure_at_an_added_shape_still_requests_changes() -> None:
    crash = shape("CRASHED", None, shape=(7, 13), small_or_ragged=True, **MATMUL)
    assert decide([TUNING], REQ, evidence(SERVED, crash)).decision == "request_changes"


def test_a_rewrite_over_its_price_only_at_an_added_shape_is_not_blocking() -> None:
    req = REQ.model_copy(update={"prices": {"softmax": 0.08}})
    added = shape("SLOWER", 1.2, shape=(1811, 773), small_or_ragged=True)
    v = decide([REWRITE_KEPT], req, evidence(shape("SAME", 1.0), added), part_a=PART_A)
    assert v.decision == "approve_with_conditions" and not _sweep(v).blocking
    assert "slower than allowed (20.0% slower, +2.0 µs a call)" in _sweep(v).summary
    assert (
        "softmax 1811x773 float16: 20.0% slower (19.0–21.0% at 95%); over its 8% "
        "rewrite price at a shape the policy does not serve" in _sweep(v).evidence
    )
    assert v.trade_over == ()  # nothing over the price where it decides


def test_the_clause_says_how_much_slower_and_names_the_shape_that_adds_most_time() -> None:
    big = shape("SLOWER", 1.114, shape=(8191, 1021, 8191), small_or_ragged=True, **MATMUL)
    big = big.model_copy(update={"base_us": 1192.7, "head_us": 1334.72})
    summary = _sweep(decide([TUNING], REQ, evidence(SERVED, TINY, big))).summary
    assert summary == (
        "not blocking: 2 added shapes the policy does not serve, slower than allowed (up to "
        "51.0% slower; up to +142 µs a call, at matmul 8191x1021x8191 bfloat16): confirm none "
        "is served, or add them to the policy's `shapes`"
    )


def _worst_lines(v, ev) -> list[str]:
    text = render_comment(v, CTX, ev)
    return [x for x in text.split("<details>")[0].splitlines() if x.startswith("- matmul")]


def test_the_worst_shapes_say_whether_an_added_shape_blocks() -> None:
    ev = evidence(SERVED, TINY)
    assert _worst_lines(decide([TUNING], REQ, ev), ev) == [
        "- matmul 7x13 bf16: 51.0% slower (50.0–52.0%); past its 3% tolerance; an added "
        "shape, not served: not blocking"
    ]
    cliff = shape("SLOWER", 2.4, shape=(67108859,), small_or_ragged=True, **MATMUL)
    ev = evidence(SERVED, cliff)
    assert _worst_lines(decide([TUNING], REQ, ev), ev) == [
        "- matmul 67108859 bf16: 2.4x slower; past its 3% tolerance; an added shape, but 2x "
        "slower or more blocks anywhere"
    ]


def test_the_why_says_what_was_measured_where_it_is_served() -> None:
    # before: "Nothing measured so far argues against it, but the evidence is not complete
    # (1 open of 5 conditions)", beside a 51% slower shape: all was measured, one shape argues
    why = decide([TUNING], REQ, evidence(SERVED, TINY)).why
    assert why == (
        "This pull request retunes 1 Triton kernel. Nothing measured at a shape the policy "
        "serves argues against it, but 1 of 5 conditions is open: before merge, please close it."
    )


def test_a_rewrite_within_its_price_where_served_still_states_its_trade() -> None:
    """Within the price at its served shapes, past it only at an added one: the trade is said,
    and it says the shape it leaves to the condition."""
    req = REQ.model_copy(update={"prices": {"softmax": 0.08}})
    served = shape("SLOWER", 1.05, shape=(1823, 781))
    added = shape("SLOWER", 1.2, shape=(1811, 773), small_or_ragged=True)
    v = decide([REWRITE_KEPT], req, evidence(shape("SAME", 1.0), served, added), part_a=PART_A)
    assert v.decision == "approve_with_conditions" and v.trade_over == ()
    assert v.trade[0].startswith(
        "softmax is slower by 5.0% at 1 of its 3 measured shapes, within "
        "its 8% rewrite price, and past it at 1 added shape nobody serves (condition 1); in "
        "return it replaces 2 files of CUDA + HIP"
    )
