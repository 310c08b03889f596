"""The trade a rewrite makes: a slowdown within its rewrite price is paid for the code it
deletes; past it, or in a tuning change, the review requests changes."""

from __future__ import annotations

from bot.contracts.evidence import CompilerEvidence, Evidence, SideToolchain
from bot.contracts.review import ChangeLine, PartATable, Requirements
from bot.review.trade import price_state, priced_kernels, trade_sentences
from bot.review.verdict import decide
from tests.unit.test_verdict import (
    GOOD_REPO,
    REWRITE_DELETED,
    REWRITE_KEPT,
    TUNING,
    first_call,
    shape,
    sweep,
)

REQ = Requirements(vendors=("nvidia",), deployment="long-lived", prices={"softmax": 0.08})
PART_A = (
    PartATable(
        kernel="softmax",
        old_label="CUDA + HIP",
        new_label="Triton",
        rows=(),
        old_lines=240,
        new_lines=60,
        old_files=2,
        new_files=1,
        new_vendors=("nvidia", "amd"),
        old_lines_one_vendor=True,
    ),
)
BUMP = ChangeLine(kernel="triton", kind="toolchain", old_version="==3.5.1", new_version="==3.6.0")


def evidence(*shapes) -> Evidence:
    return Evidence(
        sweeps=(sweep("nvidia", *shapes),),
        first_calls=(first_call("nvidia"),),
        compiler=CompilerEvidence(),
        repo=GOOD_REPO,
    )


SLOW_WITHIN = (
    shape("SAME", 1.01),
    shape("SLOWER", 1.058, shape=(1823, 781)),
    shape("SLOWER", 1.04, shape=(32768, 1024)),
)


def test_a_rewrite_within_its_price_is_approved_with_the_trade_in_one_sentence() -> None:
    v = decide([REWRITE_KEPT], REQ, evidence(*SLOW_WITHIN), part_a=PART_A)
    assert v.decision == "approve"
    (sweep_c,) = [c for c in v.conditions if c.key == "sweep"]
    assert sweep_c.state == "met" and not sweep_c.blocking
    assert sweep_c.summary == (
        "within tolerance at 1 of 3 shapes; 2 softmax shapes within its 8% rewrite price, "
        "worst 5.8% slower"
    )
    assert (
        # the word said once (before: "(4.8–6.8% slower at 95%)")
        "softmax 1823x781 float16: 5.8% slower (4.8–6.8% at 95%); within its 8% rewrite price"
        in sweep_c.evidence
    )
    assert v.trade == (
        # the worst shapes name the shapes (before, "(the most at 1823x781 float16)" said one twice)
        "softmax is slower by 4.0–5.8% at 2 of its 3 measured shapes, within its 8% rewrite "
        "price; in return it replaces 2 files of CUDA + HIP "
        "(240 lines of kernel and launch code per vendor) with 1 file of Triton (60 lines), one "
        "source for NVIDIA and AMD, and needs no nvcc or hipcc build for it once the kept kernel goes.",
    )
    assert v.trade_over == ()


def test_without_part_a_the_trade_names_the_languages() -> None:
    v = decide([REWRITE_KEPT], REQ, evidence(*SLOW_WITHIN))
    assert v.trade[0].endswith(
        "in return it replaces hand-written CUDA + HIP with Triton, and needs no nvcc or hipcc build "
        "for it once the kept kernel goes."
    )


def test_a_deleted_kernel_takes_its_build_with_it() -> None:
    deleted = REWRITE_DELETED.model_copy(update={"kernel": "softmax"})
    v = decide([deleted], REQ, evidence(*SLOW_WITHIN))
    assert v.trade[0].endswith("with Triton, and needs no nvcc or hipcc build for it.")


def test_a_rewrite_over_its_price_requests_changes_and_says_what_it_trades() -> None:
    over = (
        shape("SAME", 1.01),
        shape("SLOWER", 1.12, shape=(1823, 781)),
        shape("SLOWER", 1.31, shape=(1, 781)),
    )
    v = decide([REWRITE_KEPT], REQ, evidence(*over), part_a=PART_A)
    assert v.decision == "request_changes" and v.trade == ()
    # what it gives up there and what it deletes, for the maintainer to weigh
    assert v.trade_over == (
        "softmax, slower by 12.0–31.0% at 2 of its 3 measured shapes, replaces 2 files of CUDA "
        "+ HIP (240 lines of kernel and launch code per vendor) with 1 file of Triton (60 lines), "
        "one source for NVIDIA and AMD, and needs no nvcc or hipcc build for it once the kept "
        "kernel goes.",
    )
    (sweep_c,) = [c for c in v.conditions if c.key == "sweep"]
    assert sweep_c.blocking
    # counted: the first screen's worst shapes name them, each once
    assert sweep_c.summary == (
        "over softmax's 8% rewrite price at 2 of its 3 shapes (up to 31.0% slower)"
    )


def test_an_interval_across_the_price_is_open_not_blocking() -> None:
    across = shape("SLOWER", 1.08, shape=(1823, 781))  # 1.07-1.09 around an 8% price
    v = decide([REWRITE_KEPT], REQ, evidence(shape(), across))
    assert v.decision == "approve_with_conditions" and v.trade == ()
    (sweep_c,) = [c for c in v.conditions if c.key == "sweep"]
    assert sweep_c.state == "open" and not sweep_c.blocking
    assert "1 softmax shape not told apart from its 8% rewrite price" in sweep_c.summary
    assert "rerun with `/bench full`" in sweep_c.summary


def test_a_tuning_change_keeps_the_tolerance() -> None:
    slow = shape("SLOWER", 1.04, kernel="matmul", tolerance=0.03)
    req = REQ.model_copy(update={"tolerances": {"matmul": 0.03}})
    v = decide([TUNING], req, evidence(shape(kernel="matmul"), slow))
    assert v.decision == "request_changes" and v.trade == ()
    assert v.conditions[0].summary.startswith("past matmul's 3% tolerance at 1 of its 2 shapes")


def test_a_toolchain_change_keeps_the_tolerance_even_for_a_rewrite() -> None:
    ev = evidence(*SLOW_WITHIN)
    assert priced_kernels([REWRITE_KEPT, BUMP], ev) == frozenset()
    v = decide([REWRITE_KEPT, BUMP], REQ, ev, part_a=PART_A)
    assert v.decision == "request_changes" and v.trade == ()
    # pins added at the versions both sides already ran move nothing: the price holds
    same = ev.model_copy(
        update={
            "toolchains": (
                SideToolchain(side="base", versions={"triton": "3.6.0"}),
                SideToolchain(side="head", versions={"triton": "3.6.0"}),
            )
        }
    )
    assert priced_kernels([REWRITE_KEPT, BUMP], same) == {"softmax"}
    # a rewrite to Triton that adds a triton pin, not known to differ between the sides
    added = BUMP.model_copy(update={"old_version": None, "new_version": ">=3.6,<3.7"})
    assert priced_kernels([REWRITE_KEPT, added], ev) == {"softmax"}


def test_only_a_rewrite_of_hand_written_code_is_priced() -> None:
    port = REWRITE_KEPT.model_copy(update={"old_language": "triton", "new_language": "gluon"})
    unmapped = REWRITE_KEPT.model_copy(update={"mapped": False})
    assert priced_kernels([port], Evidence()) == frozenset()
    assert priced_kernels([unmapped], Evidence()) == frozenset()
    # a kernel both rewritten and retuned in one pull request keeps the tolerance
    retuned = TUNING.model_copy(update={"kernel": "softmax"})
    assert priced_kernels([REWRITE_KEPT, retuned], Evidence()) == frozenset()
    labels = REWRITE_DELETED.model_copy(update={"old_language": "CUDA + HIP"})
    assert priced_kernels([labels], Evidence()) == {"vector_add"}


def test_an_inconclusive_shape_within_the_price_is_met_unless_its_processes_disagreed() -> None:
    unsure = shape("INCONCLUSIVE", 1.03, tolerance=0.03)  # 1.02-1.04 against a 3% tolerance
    v = decide([REWRITE_KEPT], REQ, evidence(unsure))
    assert v.decision == "approve" and v.trade == ()  # nothing shown slower: no price paid
    assert (
        "softmax 4096x4096 float16: inconclusive against its 3% tolerance (2.0–4.0% slower at "
        "95%); within its 8% rewrite price"
    ) in v.conditions[0].evidence
    # what the sweep found, not how its detail words it
    worded = unsure.model_copy(update={"detail": "head/base varied from one execution"})
    assert decide([REWRITE_KEPT], REQ, evidence(worded)).decision == "approve"
    varied = unsure.model_copy(
        update={"varied_between_processes": True, "detail": "fresh processes disagreed: 1.0-1.1"}
    )
    v = decide([REWRITE_KEPT], REQ, evidence(varied))
    assert v.decision == "approve_with_conditions"
    assert v.conditions[0].summary.startswith("1 shape inconclusive")


def test_price_states_and_no_trade_without_a_measured_cost() -> None:
    assert price_state(shape("SLOWER", 1.05), 0.06) == "within"
    assert price_state(shape("SLOWER", 1.05), 0.03) == "over"
    assert price_state(shape("SLOWER", 1.06), 0.06) == "undecided"
    assert price_state(shape("WRONG", None), 0.06) is None
    assert trade_sentences([REWRITE_KEPT], REQ, evidence(shape("SAME", 1.0))) == ((), ())


def test_the_price_defaults_to_the_policy_and_never_below_the_kernel_tolerance() -> None:
    req = Requirements(rewrite_price=0.06, tolerances={"softmax": 0.1, "matmul": 0.03})
    assert req.price_of("softmax") == 0.1 and req.price_of("matmul") == 0.06
    assert req.model_copy(update={"prices": {"matmul": 0.04}}).price_of("matmul") == 0.04
