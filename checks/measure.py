"""The measure job: run a Plan's checks on this GPU runner and reduce them to Evidence.

``measure_plan(plan, vendor=..., shard=(i, n), repo_root=..., policy=...)`` is what
``kernel-review job measure`` calls, with the base policy the gate read. It makes one
``MeasureContext`` for the job (that policy, read from the base commit only where none is given;
the worktrees of base and head made once) and runs every check of ``checks.registry.CHECKS``
that applies to this vendor and shard, merging each one's part of the evidence, and the
toolchain each side ran under when the change moves one. Every check
that fails to run becomes a NotRun with its reason; nothing measured is dropped. The detailed
sweep results (raw blocks, for offline recomputation) are written to ``details_dir`` when given.

The checks that need no GPU (``machine = "cpu"``: the compiler report) start first, each in a
thread of its own whose priority, and that of every process it starts, is lowered below the
sweep's workers and its compiling ahead (``SPARE_NICE``: the cores they leave); the others
run in ``CHECKS`` order meanwhile, and one that reads wall-clock time (``"quiet"``: the first
call) waits for them to finish first. With ``alongside=False`` every check runs in turn, in
``CHECKS`` order. Either way the evidence is merged in ``CHECKS`` order, so it reads the same,
and each check's end is a progress line with its time ("compiler: done in 21.8 s").

Stopped from outside (``bot.cli``'s SIGINT or SIGTERM: a CI job cancelled or at its
``timeout-minutes``, whose runner sends the step SIGINT, SIGTERM 7.5 s later, then kills it), the
job still hands on what it measured, within a second or two: the sweep keeps the cases it
finished (the others ``STOPPED``: ``keeps_on_stop``), every other check the stop cut off or came
before is a NotRun saying which signal stopped the job, and a check running alongside is waited
for ``GRACE_S`` at most (its thread holds nothing up: it is not run where it has not ended by
then). ``kernel-review job measure`` writes that evidence as usual and exits 7.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from bot.contracts.evidence import Evidence, NotRun
from bot.contracts.plan import Plan
from checks import registry
from checks.context import MeasureContext
from checks.job_process import SPARE_NICE, lower_this_thread
from checks.procs.stopping import POLL_S, STOPPING, stop_words, stopped_by
from checks.registry import Check

# how long a check running alongside may take to end once the command is stopping (its waits on
# its helpers look at the stop every POLL_S, kill them and give up) before it is not waited for
GRACE_S = 2 * POLL_S
_STOPS = (KeyboardInterrupt, SystemExit)  # what bot.cli's SIGINT and SIGTERM raise


def measure_plan(plan: Plan, *, alongside: bool = True, **job: Any) -> Evidence:
    """The evidence of every check that applies. ``job``: ``vendor`` and ``repo_root``, and
    optionally ``policy`` (the gate's), ``shard`` (i, n), ``details_dir``, ``progress`` (a
    callable taking one line) and ``sweep_options`` (a checks.sweep.run.SweepOptions overriding the sweep's defaults), as
    ``MeasureContext`` takes them. ``alongside``: run the checks that need no GPU while the
    others run (the default), or every check in turn. An unknown ``vendor`` is a PolicyError.
    Stopped (``checks.procs.stopping``), it returns what was measured, the rest not run."""
    evidence: Evidence | None = None
    try:
        with MeasureContext.open(plan, **job) as ctx:
            checks = [check for check in registry.CHECKS if check.applies(ctx)]
            parts: dict[int, Evidence | _Alongside] = {
                i: _Alongside(check, ctx)
                for i, check in enumerate(checks)
                if alongside and check.machine == "cpu"
            }
            try:
                for i, check in enumerate(checks):
                    if i in parts:
                        continue
                    if check.machine == "quiet":
                        _wait_alongside(parts)  # an error is raised where it is merged
                    parts[i] = _timed(check, ctx)
            except BaseException:  # none is left running on the worktrees as they are removed
                _wait_alongside(parts)
                raise
            evidence = Evidence()
            for i in range(len(checks)):
                part = parts[i]
                evidence = evidence.merge(part.result() if isinstance(part, _Alongside) else part)
            evidence = evidence.merge(ctx.toolchain_evidence())
    except _STOPS:
        # stopped while the worktrees were being removed: the evidence stands as it is
        if evidence is None or not STOPPING.is_set():
            raise
    return evidence


def _wait_alongside(parts: dict[int, Evidence | _Alongside]) -> None:
    for part in parts.values():
        if isinstance(part, _Alongside):
            part.wait()


def _timed(check: Check, ctx: MeasureContext) -> Evidence:
    """``check.run(ctx)``, and a progress line saying how long it took. Once the command is
    stopping, a check is not started, and one the stop cut off is not run (but the sweep, which
    keeps the cases it finished): each a NotRun saying so."""
    if STOPPING.is_set():
        return _stopped_not_run(check, ctx, cut_off=False)
    t0 = time.perf_counter()
    part: Evidence | None = None
    try:
        part = check.run(ctx)
    except _STOPS:
        if not STOPPING.is_set():
            raise
    finally:
        took = time.perf_counter() - t0
        ended = "stopped after" if STOPPING.is_set() else "done in"
        ctx.progress(f"{check.name}: {ended} {took:.1f} s")
    if part is None or (STOPPING.is_set() and not check.keeps_on_stop):
        return _stopped_not_run(check, ctx, cut_off=True)
    return part


def _stopped_not_run(check: Check, ctx: MeasureContext, *, cut_off: bool) -> Evidence:
    """``check`` as not run, the job having been stopped while it ran (``cut_off``) or before it
    started: "the measure job was stopped by SIGINT (Ctrl-C, or a CI job's cancel or time
    limit) before it finished"."""
    by = stopped_by()
    how = f"by {stop_words(by)}" if by else "from outside"
    when = "before it finished" if cut_off else "before it started"
    reason = f"the measure job was stopped {how} {when}"
    return Evidence(not_run=(NotRun(check=check.name, vendor=ctx.vendor, reason=reason),))


class _Alongside:
    """A check run in a thread of its own at the lowest priority (``SPARE_NICE``). The thread is
    a daemon: one that a stop does not end within ``GRACE_S`` keeps neither the job's evidence
    nor the command's exit waiting."""

    def __init__(self, check: Check, ctx: MeasureContext) -> None:
        self.check, self.ctx = check, ctx
        self._done = threading.Event()
        self._part: Evidence | BaseException | None = None
        self._deadline: float | None = None  # once the command is stopping: the wait's end
        name = f"check-{check.name}"
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        lower_this_thread(SPARE_NICE)
        try:
            self._part = _timed(self.check, self.ctx)
        except BaseException as exc:  # raised where it is merged, in the job's thread
            self._part = exc
        finally:
            self._done.set()

    def wait(self) -> bool:
        """Whether the check has ended: waited for until it does, or, once the command is
        stopping, ``GRACE_S`` more at most."""
        while not self._done.is_set():
            try:
                self._done.wait(POLL_S)
            except _STOPS:  # the stop came to this thread while it waited
                if not STOPPING.is_set():
                    raise
            if STOPPING.is_set() and not self._done.is_set():
                self._deadline = self._deadline or time.monotonic() + GRACE_S
                if time.monotonic() >= self._deadline:
                    return False
        return True

    def result(self) -> Evidence:
        """The check's evidence (its error raised), or, where the stop left it running, its
        NotRun."""
        if not self.wait():
            self.ctx.progress(f"{self.check.name}: not waited for, the job is stopping")
            return _stopped_not_run(self.check, self.ctx, cut_off=True)
        if isinstance(self._part, BaseException):
            raise self._part
        assert self._part is not None  # set before the thread said it was done
        return self._part
