"""The scheduled run on the default branch: the pinned toolchain against the newest release.

A ``schedule`` or ``workflow_dispatch`` event runs the policy's kernels at the default branch's
head twice over, as if a pull request bumped the pin: the base side under the pinned toolchain,
the head side under the newest release the pin allows or the policy names (``[toolchain]
upgrade``). The measure job on the GPU runner writes ``ScheduledResults``; the report job then

- appends one ``HistoryRecord`` per vendor to the history (a JSON-lines file on the data
  branch, docs/history.md), the pinned toolchain's median time of every kernel;
- opens one issue, or updates the one it opened before, when a kernel would regress under the
  newest release: the bump is reviewed before anyone makes the bump pull request.

A pull request's review reads the same history (``kernel_history``) and shows how each
kernel's time moved over the recorded runs. Pure but for ``upsert_issue``'s client calls.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import ValidationError

from bot.contracts.evidence import Evidence, KernelHistory
from bot.contracts.history import HistoryCase, HistoryRecord, ScheduledResults
from bot.contracts.plan import Plan
from bot.contracts.review import ChangeLine
from bot.forge.client import ForgeClient
from bot.forge.sticky import fit_body
from bot.plan import make_plan
from bot.policy.model import Policy

ISSUE_MARKER = "<!-- kernel-review:scheduled -->"
HISTORY_FILE = "history.jsonl"
CANDIDATE_DETAIL = "scheduled run: the newest release the pin allows or the policy names"


def candidate_changes(pins: dict[str, str], candidate: dict[str, str]) -> list[ChangeLine]:
    """One toolchain line per package tried at a newer release: the pin as the default branch
    states it (``>=3.6,<3.7``, None when unpinned) and the release tried."""
    return [
        ChangeLine(
            kernel=name,
            kind="toolchain",
            old_version=pins.get(name),
            new_version=f"=={version}",
            detail=CANDIDATE_DETAIL,
        )
        for name, version in candidate.items()
    ]


def scheduled_plan(policy: Policy, sha: str, changes: Sequence[ChangeLine]) -> Plan:
    """Every policy kernel at ``sha`` (both sides the same commit), within the policy's limits;
    with no candidate change, the sides differ in nothing and only the history is kept."""
    return make_plan(
        changes, policy, base_sha=sha, head_sha=sha, kernels=[k.name for k in policy.kernels]
    )


def _medians(ev: Evidence, side: str) -> dict[str, float]:
    """Each kernel's median time over its shapes on one ``side``; none for a kernel the run was
    stopped before all of whose shapes it timed (a job's time limit): a median over some of its
    shapes would read as a step in its trend (its timed cases are kept all the same)."""
    cut_short = {x.kernel for s in ev.sweeps for x in s.stopped}
    times: dict[str, list[float]] = {}
    for s in ev.sweeps:
        for x in s.shapes:
            us = x.base_us if side == "base" else x.head_us
            if us and x.kernel not in cut_short:
                times.setdefault(x.kernel, []).append(us)
    return {k: round(statistics.median(v), 3) for k, v in times.items()}


def regressed_kernels(ev: Evidence) -> list[str]:
    """Kernels the candidate makes slower, breaks, or that no longer compile under it."""
    out: list[str] = []
    for s in ev.sweeps:
        out += [x.kernel for x in (*s.slower, *s.failures)]
    if ev.compiler is not None:
        old = {(r.kernel, r.target, r.config): r for r in ev.compiler.rows if r.side == "old"}
        out += [
            r.kernel
            for r in ev.compiler.rows
            if r.side == "new"
            and r.error
            and (o := old.get((r.kernel, r.target, r.config)))
            and not o.error
        ]
    return list(dict.fromkeys(out))


def _cases(ev: Evidence, tried: bool) -> tuple[HistoryCase, ...]:
    """Every case timed under the pinned toolchain, with its time under the newest release."""
    return tuple(
        HistoryCase(
            kernel=x.kernel,
            shape=x.shape,
            dtype=x.dtype,
            us=round(x.base_us, 3),
            candidate_us=round(x.head_us, 3) if tried and x.head_us else None,
        )
        for s in ev.sweeps
        for x in s.shapes
        if x.base_us
    )


def history_record(results: ScheduledResults) -> HistoryRecord:
    ev = results.evidence
    sides = {t.side: dict(t.versions) for t in ev.toolchains}
    timing: Literal["gpu", "cpu"] = (
        "cpu" if any(s.timing_kind == "cpu" for s in ev.sweeps) else "gpu"
    )
    return HistoryRecord(
        date=results.date,
        sha=results.sha,
        vendor=results.vendor,
        timing=timing,
        pinned=sides.get("base") or dict(results.pinned),
        candidate=sides.get("head", {}) if results.changes else {},
        kernels=_medians(ev, "base"),
        candidate_kernels=_medians(ev, "head") if results.changes else {},
        regressed=tuple(regressed_kernels(ev)) if results.changes else (),
        cases=_cases(ev, bool(results.changes)),
    )


def read_history(text: str) -> list[HistoryRecord]:
    """The records of a history file; a line that is not a record is skipped."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(HistoryRecord.model_validate_json(line))
        except ValidationError:
            continue
    return out


def kernel_history(records: Iterable[HistoryRecord], vendor: str) -> tuple[KernelHistory, ...]:
    """Each kernel's recorded runs on one vendor, oldest first (GPU timings only)."""
    points: dict[str, list[tuple[str, str, float, str]]] = {}
    for r in sorted(records, key=lambda r: r.date):
        if r.vendor != vendor or r.timing != "gpu":
            continue
        under = ", ".join(
            f"{k} {v}" for k, v in sorted(r.pinned.items()) if k in ("triton", "torch")
        )
        for kernel, us in r.kernels.items():
            points.setdefault(kernel, []).append((r.date[:10], r.sha[:7], us, under or "?"))
    return tuple(KernelHistory(kernel=k, points=tuple(v)) for k, v in points.items())


def issue_title(changes: Sequence[ChangeLine], kernels: Sequence[str]) -> str:
    moved = ", ".join(f"{c.kernel} {(c.new_version or '').lstrip('=')}" for c in changes)
    return f"kernel-review: {moved} would regress {', '.join(kernels)}"


def upsert_issue(client: ForgeClient, title: str, body: str, *, bot_login: str) -> str:
    """Open the scheduled run's issue, or update the one it opened before (found by its
    marker); what was done and the issue's address. A body over GitHub's limit is cut like the
    review comment (``fit_body``)."""
    text, _ = fit_body(f"{ISSUE_MARKER}\n{body}")
    found = client.find_issue(ISSUE_MARKER, author=bot_login)
    if found is not None:
        client.edit_issue(found.number, title, text)
        return f"updated #{found.number} {found.html_url}"
    made = client.create_issue(title, text)
    return f"opened #{made.number} {made.html_url}"
