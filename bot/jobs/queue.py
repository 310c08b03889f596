"""Waiting for the measure jobs, with a limit on how long one may sit in the queue.

A job for ``[self-hosted, amd]`` in a repository with no AMD runner waits in GitHub's queue for
a day before GitHub drops it, and the report that needs it waits as long. ``timeout-minutes``
does not help: it counts from the job's start. So the report job waits here first: until every
measure job (a job whose runs-on labels name a vendor) has finished, or is still queued after
``timeout_s``. The stuck ones go in the wait's report (``QueueReport``, a file of the report
job's own, outside the downloaded results); the review says which vendor had no runner, and the
report cancels the run once it has posted (the stuck jobs show as cancelled).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from bot.contracts.base import VENDORS, Vendor
from bot.contracts.queue import QueuedJob, QueueReport
from bot.forge.client import JobsClient
from bot.forge.types import JobInfo

DEFAULT_TIMEOUT_S = 30 * 60.0
POLL_S = 30.0
WAITING = frozenset({"queued", "waiting", "pending", "requested"})


def job_vendor(job: JobInfo) -> Vendor | None:
    """The vendor a job runs on (its runs-on labels name one), else None: not a measure job."""
    return next((v for v in VENDORS if v in job.labels), None)


def _since(stamp: str, now: float) -> float:
    try:
        at = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
    return max(0.0, now - at)


def stuck_jobs(
    jobs: Sequence[JobInfo],
    *,
    now: float,
    timeout_s: float,
    expected: Sequence[str] = (),
    waited_s: float = 0.0,
) -> tuple[QueuedJob, ...] | None:
    """The vendor jobs queued past ``timeout_s`` once no other vendor job is left to wait for;
    None while one still runs or may yet start, or while a vendor of ``expected`` has no job
    yet (GitHub makes a matrix's jobs when the job before it ends) and the wait, ``waited_s``
    so far, is not over."""
    seen = {job_vendor(j) for j in jobs}
    if any(v not in seen for v in expected) and waited_s < timeout_s:
        return None
    # a job queued behind another of its vendor (one runner, two shards) waits from the moment
    # that one finished, not from its own creation
    freed = {
        v: min((_since(j.completed_at, now) for j in jobs if job_vendor(j) == v and
                j.status == "completed" and j.completed_at), default=None)
        for v in seen
    }  # fmt: skip
    stuck: list[QueuedJob] = []
    for job in jobs:
        vendor = job_vendor(job)
        if vendor is None or job.status == "completed":
            continue
        waited = _since(job.created_at, now)
        freed_s = freed.get(vendor)
        if freed_s is not None:
            waited = min(waited, freed_s)
        if job.status not in WAITING or waited < timeout_s:
            return None
        stuck.append(QueuedJob(name=job.name, vendor=vendor, labels=job.labels, waited_s=waited))
    return tuple(stuck)


def wait_for_vendor_jobs(
    client: JobsClient,
    run_id: int,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    poll_s: float = POLL_S,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    expected: Sequence[str] = (),
    log: Callable[[str], None] = lambda _: None,
) -> QueueReport:
    """Poll the run's jobs until every vendor job has finished or waited ``timeout_s`` in the
    queue (and each vendor of ``expected`` has a job); the report of those that did."""
    start = clock()
    while True:
        now = clock()
        stuck = stuck_jobs(
            client.run_jobs(run_id),
            now=now,
            timeout_s=timeout_s,
            expected=expected,
            waited_s=now - start,
        )
        if stuck is not None:
            for job in stuck:
                log(
                    f"{job.name}: still queued after {job.waited_s / 60:.0f} minutes; no runner "
                    f"labelled {', '.join(job.labels)} took it"
                )
            return QueueReport(timeout_s=timeout_s, stuck=stuck)
        sleep(poll_s)
