"""The decision: Approve, Approve with conditions, or Request changes, and why.

Pure. Takes what changed, the policy's requirements and the evidence gathered so far, has each
condition (``bot.review.conditions``) say whether it is met, open, or not run, and writes the
decision and its reasons in the words a careful reviewer would use. Measured violations (a
shape slower than tolerance, a rewritten kernel's shape over its rewrite price, a wrong result,
a crash, a first call over budget, a config that does not compile for a required vendor)
request changes; missing evidence or housekeeping leaves the pull request approved with
conditions. A rewrite that pays a slowdown within its price has the trade said in one sentence,
and one over it what it gives up and what it deletes (``bot.review.trade``). A slowdown at a
shape the policy does not serve is an open condition unless it collapsed
(``bot.review.served``).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.contracts.accept import AcceptedLine
from bot.contracts.evidence import Evidence
from bot.contracts.review import ChangeLine, Decision, PartATable, Requirements, Verdict
from bot.outputs import plural
from bot.review.conditions import evaluate
from bot.review.served import decides
from bot.review.toolchain import toolchain_differs
from bot.review.trade import price_words, priced_kernels, trade_sentences
from bot.words import and_list, percent


def _tolerance_words(changes: Sequence[ChangeLine], req: Requirements, ev: Evidence) -> str:
    """The tolerance each changed kernel is judged at: the one its swept shapes carry (what
    decided their verdicts), else its own in the policy, else the policy's."""
    judged = {x.kernel: x.tolerance for s in ev.sweeps for x in s.shapes if x.tolerance is not None}
    each = {c.kernel: judged.get(c.kernel, req.tolerance_of(c.kernel)) for c in changes}
    if len(set(each.values())) == 1:
        return f"the {percent(next(iter(each.values())))} tolerance"
    return (
        "each kernel's tolerance (" + ", ".join(f"{k} {percent(t)}" for k, t in each.items()) + ")"
    )


_OTHER_KINDS = {  # what a change that is neither a rewrite, a retune nor a pin does, in words
    "body": "changes the body of {n}",
    "launch": "changes the launch of {n}",
    "new": "adds {n}",
    "deleted": "deletes {n}",
}


def decide(
    changes: Sequence[ChangeLine],
    req: Requirements,
    ev: Evidence,
    accepted: Sequence[AcceptedLine] = (),
    part_a: Sequence[PartATable] = (),
) -> Verdict:
    """The verdict on ``changes`` given the policy's requirements and the evidence so far;
    ``accepted``: the slower shapes an acceptance names, judged (``bot.review.accept.judge``);
    ``part_a``: the rewrites' code counts, for the sentence that states a rewrite's trade."""
    changes = tuple(changes)
    if not changes:
        return Verdict(
            decision="approve",
            why="No kernel changes found in this diff; nothing to measure.",
            conditions=(),
            not_asking_for=(),
            changes=(),
            no_kernel_changes=True,
        )
    conditions = evaluate(changes, req, ev, accepted)
    blocking = [c for c in conditions if c.blocking]
    unfinished = [c for c in conditions if c.state != "met"]
    rewrites = [c for c in changes if c.kind == "rewrite"]
    tunings = [c for c in changes if c.kind == "tuning"]
    bumps = [c for c in changes if c.kind == "toolchain"]

    what = []
    if bumps:
        moved = ", ".join(dict.fromkeys(c.kernel for c in bumps))
        differs = toolchain_differs(bumps, ev)
        if differs is False:
            what.append(f"pins {moved} at the version both sides already ran")
        elif differs is None:
            what.append(
                f"changes the toolchain pins ({moved})"
                + (
                    f", which may affect every policy kernel ({and_list(req.kernels)})"
                    if req.kernels
                    else ""
                )
            )
        elif req.kernels:
            what.append(
                f"moves the kernels' toolchain ({moved}), which affects every policy kernel "
                f"({and_list(req.kernels)})"
            )
        else:
            what.append(f"moves the kernels' toolchain ({moved}), which affects every kernel")
    if rewrites:
        what.append(f"replaces {plural(len(rewrites), 'hand-written kernel')} with Triton")
    if tunings:
        what.append(f"retunes {plural(len(tunings), 'Triton kernel')}")
    for kind, words in _OTHER_KINDS.items():
        n = sum(1 for c in changes if c.kind == kind)
        if n:
            what.append(words.format(n=plural(n, "kernel")))
    subject = "This pull request " + and_list(what) if what else "This pull request changes kernels"

    if blocking:
        decision: Decision = "request_changes"
        named = [str(c.number) for c in blocking]
        why = (
            f"{subject}, and the evidence shows a cost beyond what the policy allows at "
            f"{'condition' if len(named) == 1 else 'conditions'} {and_list(named)} below."
        )
    elif unfinished:
        decision = "approve_with_conditions"
        n_open = sum(1 for c in unfinished if c.state == "open")
        n_not_run = sum(1 for c in unfinished if c.state == "not_run")
        of = f"{n_open + n_not_run} of {len(conditions)} conditions"
        counts = (
            f"{of}: {n_open} open, {n_not_run} not run"
            if n_open and n_not_run
            else f"{of} {'open' if n_open else 'not run'}"
        )
        timed = any(
            x.ratio is not None for s in ev.sweeps if s.timing_kind == "gpu" for x in s.shapes
        ) or any(f.cold_ms is not None and not f.compile_only for f in ev.first_calls)
        aside = any(  # slower only where nobody is served: it argues, but does not decide
            x.verdict == "SLOWER" and not decides(x)
            for s in ev.sweeps
            if s.timing_kind == "gpu"
            for x in s.shapes
        )
        so_far = (
            "Nothing has been timed on a GPU yet, so no measurement argues for or against it"
            if not timed
            else "Nothing measured at a shape the policy serves argues against it"
            if aside
            else "Nothing measured so far argues against it"
        )
        are = "is" if n_open == 1 else "are"
        gap = f"the evidence is not complete ({counts})" if n_not_run else f"{of} {are} open"
        them = "them" if n_open + n_not_run > 1 else "it"
        why = f"{subject}. {so_far}, but {gap}: before merge, please close {them}."
    elif any(c.mapped for c in changes):
        decision = "approve"
        why = f"{subject}, and every condition is met with evidence."
    else:  # met because nothing is covered: the sentence on unmapped kernels says what to do
        decision = "approve"
        why = f"{subject}."

    not_asking: list[str] = []
    priced = [
        k for k in dict.fromkeys(c.kernel for c in rewrites) if k in priced_kernels(changes, ev)
    ]
    if priced:
        not_asking.append(
            f"Parity with the old kernel: a slowdown within {price_words(priced, req)} at each "
            "shape is worth paying for the code the rewrite deletes."
        )
    elif rewrites:
        not_asking.append(
            f"Parity with the old kernel: a slowdown within {_tolerance_words(rewrites, req, ev)} "
            "is a price worth paying for the code this deletes."
        )
    if rewrites or tunings:
        not_asking.append(
            "A micro-optimised Triton kernel: get the autotune config list right first; that is "
            "usually most of the gap."
        )
    unmapped = [c for c in changes if not c.mapped]
    if unmapped:
        why += (
            f" {plural(len(unmapped), 'changed kernel')} "
            + (
                "is not covered by the policy and was not measured: add it"
                if len(unmapped) == 1
                else "are not covered by the policy and were not measured: add them"
            )
            + " to `kernels` with a bench entry point."
        )
    trade, trade_over = trade_sentences(changes, req, ev, accepted, part_a)
    return Verdict(
        decision=decision,
        why=why,
        conditions=conditions,
        not_asking_for=tuple(not_asking),
        changes=changes,
        accepted=tuple(accepted),
        trade=trade,
        trade_over=trade_over,
        prices={k: req.price_of(k) for k in sorted(priced_kernels(changes, ev))},
    )
