"""Accepted regressions: the /bench accept grammar, the policy's [[accepted]] entries, the one
rule that judges a slower shape against an acceptance, the hidden state that carries them, and
the verdict and review that come out."""

from __future__ import annotations

from datetime import date

import pytest

from bot.contracts.accept import Acceptance, AcceptRecord, MeasuredRatio, ReviewState
from bot.contracts.evidence import Evidence, ShapeLine, SweepEvidence
from bot.contracts.review import ChangeLine, ReviewContext
from bot.errors import CommandError
from bot.forge.hidden import bot_records, hidden, read_hidden
from bot.forge.slash import check_permission, is_accept, parse_accept
from bot.forge.types import CommentInfo
from bot.policy.cli import policy_warnings
from bot.policy.load import parse_policy, validate_policy
from bot.review.accept import accept_measured, judge, measured_ratios, policy_acceptances
from bot.review.conclude import conclude, review_context

BASE = """\
[deployment]
kind = "long-lived"

[[kernels]]
name = "softmax"
bench = "toyops.bench:softmax"
paths = ["toyops/softmax.py"]
dtypes = ["float16", "float32"]
shapes = [[1823, 781], [4096, 4096]]
"""
POLICY = parse_policy(BASE)
TODAY = date(2026, 6, 1)


def _entry(**fields: str) -> str:
    values = {
        "kernel": '"softmax"',
        "max_percent": "8",
        "owner": '"@gpu-team"',
        "reason": '"one kernel instead of two"',
        "expires": "2027-03-01",
        **fields,
    }
    return "\n[[accepted]]\n" + "".join(f"{k} = {v}\n" for k, v in values.items() if v)


def _slower(ratio: float, ci: float = 0.01, shape=(4096, 4096), dtype="float16") -> ShapeLine:
    return ShapeLine(
        kernel="softmax",
        shape=shape,
        dtype=dtype,
        verdict="SLOWER",
        ratio=ratio,
        ci_low=ratio - ci,
        ci_high=ratio + ci,
    )


def _sweep(*shapes: ShapeLine, vendor: str = "nvidia") -> SweepEvidence:
    return SweepEvidence(vendor=vendor, gpu="NVIDIA H200", shapes=shapes)


def _accept(max_ratio: float, **fields) -> Acceptance:
    return Acceptance(
        kernel="softmax",
        max_ratio=max_ratio,
        by="@boss",
        reason=fields.pop("reason", "worth it"),
        source=fields.pop("source", "comment"),
        **fields,
    )


# ------------------------------------------------------------------------ /bench accept grammar


def test_bench_accept_parses_kernel_shapes_and_a_free_text_reason() -> None:
    line = "/bench accept softmax 4096x4096 1823x781 -- it deletes 400 lines; worth 8% -- really"
    assert is_accept(line) and not is_accept("/bench softmax")
    cmd = parse_accept(line, POLICY)
    assert cmd.kernel == "softmax" and cmd.shapes == ((4096, 4096), (1823, 781))
    assert cmd.reason == "it deletes 400 lines; worth 8% -- really"
    assert cmd.canonical() == "/bench accept softmax 4096x4096 1823x781"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/bench accept softmax", "needs a reason after ` -- `"),
        ("/bench accept softmax --   ", "needs a reason"),
        ("/bench accept matmul -- r", "'matmul' is not a kernel in the policy"),
        ("/bench accept -- r", "no kernel named"),
        ("/bench accept softmax $(id) -- r", "command substitution"),
        ("/bench accept softmax 0x4 -- r", "every dimension must be at least 1"),
        ("/bench accept softmax -- " + "x" * 501, "at most 500"),
    ],
)
def test_bench_accept_refusals_say_what_is_wrong(line: str, says: str) -> None:
    with pytest.raises(CommandError) as err:
        parse_accept(line, POLICY)
    assert says in str(err.value) and err.value.hint  # what is wrong, and what to do


def test_bench_accept_needs_the_accept_permission_not_the_bench_one() -> None:
    check_permission("w", "write", POLICY)  # enough for /bench
    with pytest.raises(CommandError) as err:
        check_permission("w", "write", POLICY, accept=True)
    assert "/bench accept needs maintain (maintain or admin)" in str(err.value)
    assert "github.accept_permission" in (err.value.hint or "")
    check_permission("m", "maintain", POLICY, accept=True)
    lowered = parse_policy(
        BASE.replace("[[kernels]]", '[github]\naccept_permission = "write"\n\n[[kernels]]')
    )
    check_permission("w", "write", lowered, accept=True)


# ------------------------------------------------------------------------ policy [[accepted]]


def test_policy_accepted_entries_become_acceptances_with_their_ratio() -> None:
    policy = parse_policy(
        BASE + _entry() + _entry(max_percent="", max_ratio="1.2", shapes="[[4096, 4096]]")
    )
    first, second = policy_acceptances(policy)
    assert first.max_ratio == pytest.approx(1.08) and first.shapes == ()
    assert first.by == "@gpu-team" and first.expires == date(2027, 3, 1)
    assert second.max_ratio == 1.2 and second.shapes == ((4096, 4096),)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"kernel": '"sofmax"'},
            "names kernel 'sofmax', which is not in [[kernels]]; did you mean 'softmax'?",
        ),
        ({"max_ratio": "1.1"}, "give exactly one of max_ratio"),
        ({"max_percent": ""}, "give exactly one of max_ratio"),
        ({"max_percent": "", "max_ratio": "0.9"}, "0.9 is out of range: must be > 1"),
        ({"expires": '"next year"'}, "accepted[0].expires"),
        ({"owner": '"nobody"'}, "accepted[0].owner"),
    ],
)
def test_policy_accepted_entry_errors_point_at_the_entry(fields: dict[str, str], says: str) -> None:
    policy, found = validate_policy(BASE + _entry(**fields), "p.toml")
    assert policy is None
    text = "\n".join(str(p) for p in found)
    assert says in text and "p.toml:1" in text  # at the entry's lines, after the kernels


def test_policy_check_warns_about_an_entry_past_its_date() -> None:
    policy = parse_policy(BASE + _entry(expires="2026-05-31") + _entry(expires="2026-06-01"))
    [warning] = policy_warnings(policy, TODAY)
    assert warning.startswith("accepted[0] (softmax, owner @gpu-team) expired on 2026-05-31")


# ------------------------------------------------------------------------------ the one rule


def test_a_shape_within_the_accepted_ratio_is_accepted_and_a_clearly_slower_one_is_not() -> None:
    acc = [_accept(1.09)]
    [same] = judge([_sweep(_slower(1.08))], acc, TODAY)
    assert same.state == "accepted"
    [noisy] = judge([_sweep(_slower(1.095, ci=0.02))], acc, TODAY)  # cannot tell it apart
    assert noisy.state == "accepted"
    [worse] = judge([_sweep(_slower(1.12))], acc, TODAY)
    assert worse.state == "exceeded" and worse.acceptance.max_ratio == 1.09


def test_an_acceptance_names_only_its_kernel_shapes_dtype_and_vendor() -> None:
    acc = [_accept(1.5, shapes=((4096, 4096),), dtype="float16", vendor="nvidia")]
    sweeps = [
        _sweep(_slower(1.1), _slower(1.1, shape=(1823, 781)), _slower(1.1, dtype="float32")),
        _sweep(_slower(1.1), vendor="amd"),
    ]
    [only] = judge(sweeps, acc, TODAY)
    assert (only.shape, only.dtype, only.vendor) == ((4096, 4096), "float16", "nvidia")


def test_a_policy_entry_accepts_through_its_last_day_then_says_it_expired() -> None:
    acc = [_accept(1.2, source="policy", expires=TODAY)]
    assert judge([_sweep(_slower(1.1))], acc, TODAY)[0].state == "accepted"
    [late] = judge([_sweep(_slower(1.1))], acc, date(2026, 6, 2))
    assert late.state == "expired" and late.acceptance.expires == TODAY


def test_cpu_timed_sweeps_are_never_judged() -> None:
    cpu = SweepEvidence(vendor="nvidia", gpu="cpu", shapes=(_slower(1.1),), timing_kind="cpu")
    assert judge([cpu], [_accept(1.2)], TODAY) == ()


def test_bench_accept_records_the_upper_end_of_what_was_measured() -> None:
    measured = measured_ratios([_sweep(_slower(1.08), _slower(1.3, shape=(1823, 781)))])
    assert [m.ratio for m in measured] == [1.3, 1.08]  # slowest first
    only = accept_measured(
        measured,
        kernel="softmax",
        shapes=[(4096, 4096)],
        by="@b",
        reason="r",
        head_sha="a" * 40,
        tolerance=0.03,
    )
    assert [(a.shapes, a.max_ratio) for a in only] == [(((4096, 4096),), pytest.approx(1.09))]
    assert only[0].measured == 1.08
    every = accept_measured(
        measured,
        kernel="softmax",
        shapes=[],
        by="@b",
        reason="r",
        head_sha="a" * 40,
        tolerance=0.03,
    )
    assert len(every) == 2 and {a.source for a in every} == {"comment"}


def test_a_noisy_accepted_run_records_a_bound_capped_at_the_tolerance_beyond_its_estimate() -> None:
    # 8% slower, but the interval reached 200% slower: the bound is 8% and the tolerance, 11.2%
    wide = _slower(1.08).model_copy(update={"ci_high": 3.0})
    noisy = measured_ratios([_sweep(wide)])
    [acc] = accept_measured(
        noisy, kernel="softmax", shapes=[], by="@b", reason="r", head_sha="a" * 40, tolerance=0.03
    )
    assert acc.max_ratio == pytest.approx(1.08 * 1.03) and acc.measured == 1.08
    [again] = judge([_sweep(_slower(1.09))], [acc], TODAY)
    assert again.state == "accepted"
    [twice] = judge([_sweep(_slower(2.0))], [acc], TODAY)
    assert twice.state == "exceeded"


# --------------------------------------------------------------------------- the hidden state


def test_hidden_state_cannot_be_closed_by_what_users_wrote_and_only_the_bot_counts() -> None:
    record = AcceptRecord(actor="boss", acceptances=(_accept(1.1, reason="x --> <b>y</b>"),))
    line = hidden("accept", record)
    assert "-->" not in line[: -len("-->")] and "<b>" not in line
    body = f"{line}\nRecorded"
    assert read_hidden(body, "accept", AcceptRecord) == record
    assert read_hidden(body, "state", ReviewState) is None
    assert (
        read_hidden("<!-- kernel-review:accept v1 bm90IGpzb24= -->", "accept", AcceptRecord) is None
    )
    mine = CommentInfo(id=1, author="bot", body=body)
    theirs = CommentInfo(id=2, author="alice", body=body)
    assert [c.id for c, _ in bot_records([theirs, mine], "bot", "accept", AcceptRecord)] == [1]


# ----------------------------------------------------------------------- verdict and review


def _review(acceptances, policy=POLICY, today=TODAY):
    ev = Evidence(sweeps=(_sweep(_slower(1.08)), _sweep(_slower(1.08), vendor="amd")))
    changes = [ChangeLine(kernel="softmax", kind="tuning", new_paths=("toyops/softmax.py",))]
    ctx: ReviewContext = review_context(
        policy, base_sha="b" * 40, head_sha="a" * 40, repository="o/r", policy_source="p"
    )
    return conclude(changes, policy, ev, ctx, acceptances=acceptances, today=today)


def test_accepted_shapes_stop_requesting_changes_and_the_review_names_who_and_why() -> None:
    assert _review(()).verdict.decision == "request_changes"
    out = _review([_accept(1.09)])
    assert out.verdict.decision != "request_changes"
    [sweep] = [c for c in out.verdict.conditions if c.key == "sweep"]
    assert sweep.state == "met" and "2 accepted slower shapes" in sweep.summary
    assert "### Accepted regressions" in out.comment
    assert "8.0% slower, accepted by @\u200bboss: worth it (up to 9.0% slower)" in out.comment
    measured = _review([_accept(1.09, measured=1.07)]).comment
    assert "worth it (up to 9.0% slower; 7.0% slower when accepted)" in measured


def test_an_expired_policy_entry_requests_changes_and_says_so() -> None:
    policy = parse_policy(BASE + _entry(expires="2026-01-31"))
    out = _review((), policy)
    assert out.verdict.decision == "request_changes"
    assert (
        "in the policy by @\u200bgpu-team (one kernel instead of two) expired on 2026-01-31"
        in out.comment
    )
    assert "its acceptance expired" in out.comment  # the sweep's row too


def test_a_review_without_acceptances_has_no_accepted_section() -> None:
    assert "Accepted regressions" not in _review(()).comment
    state = ReviewState(
        head_sha="a" * 40,
        slower=(MeasuredRatio(kernel="k", vendor="amd", dtype="f", shape=(1,), ratio=1.1),),
    )
    assert read_hidden(hidden("state", state), "state", ReviewState) == state
