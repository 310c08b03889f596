"""What one command's round trip costs between the bot and its workers, beyond the work itself:
a JSON line over a pipe each way, as ``checks.sweep.workers.WorkerClient.call`` and the worker's
``serve`` loop send them, on this machine, waiting two ways.

    python3 bench/pipe_wakeup.py [--out DIR] [--calls 600] [--workers 4] [--work-ms 1.0]

The bot sends ``--calls`` commands in turn to ``--workers`` child processes (as a sweep's rounds
send timed blocks to four workers, each then idle while the other three time theirs); each
child busy-waits ``--work-ms`` (as a worker spins on the GPU's event) and answers. Ways:

- ``sleep``: the bot waits in ``select``, a child in a blocking ``read`` (as without polling);
- ``poll``: each polls its pipe for up to ``--poll-ms`` before sleeping in ``select`` (the bot
  for the answer, a child for its next command), as a sweep does with ``--poll``.

The overhead is each call's wall time (sent to answered, on the bot's clock) less the child's
own work. Prints and writes ``pipe_wakeup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import json, os, select, sys, time
r, w, poll_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
os.set_blocking(r, False)
buf = b""
while True:
    while b"\n" not in buf:
        deadline = time.monotonic() + poll_s
        chunk = None
        while chunk is None:
            try:
                chunk = os.read(r, 1 << 20)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    select.select([r], [], [])
        if not chunk:
            sys.exit(0)
        buf += chunk
    line, _, buf = buf.partition(b"\n")
    msg = json.loads(line)
    t = time.perf_counter()
    while time.perf_counter() - t < msg["work_s"]:
        pass
    answer = {"ok": True, "value_us": 1.0, "calls": 10, "wall_ms": 1.0, "gpu_ms": 1.0}
    os.write(w, (json.dumps(answer) + "\n").encode())
"""


def _read_answer(fd: int, poll_s: float) -> bytes:
    buf = b""
    while b"\n" not in buf:
        deadline = time.monotonic() + poll_s
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    select.select([fd], [], [], 10.0)
        if not chunk:
            raise RuntimeError("a child exited")
        buf += chunk
    return buf


def run(way: str, *, calls: int, workers: int, work_ms: float, poll_ms: float) -> dict[str, Any]:
    poll_s = poll_ms / 1000.0 if way == "poll" else 0.0
    kids = []
    for _ in range(workers):
        c_r, p_w = os.pipe()
        p_r, c_w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(c_r), str(c_w), str(poll_s)], pass_fds=(c_r, c_w)
        )
        os.close(c_r)
        os.close(c_w)
        os.set_blocking(p_r, False)
        kids.append((proc, p_w, p_r))
    time.sleep(0.5)
    over = []
    line = (json.dumps({"op": "block", "work_s": work_ms / 1000.0}) + "\n").encode()
    for i in range(calls):
        proc, p_w, p_r = kids[i % workers]
        t0 = time.perf_counter()
        os.write(p_w, line)
        json.loads(_read_answer(p_r, poll_s))
        over.append((time.perf_counter() - t0) * 1e6 - work_ms * 1000.0)
    for proc, p_w, p_r in kids:
        os.close(p_w)
        proc.wait()
        os.close(p_r)
    over.sort()
    return {
        "way": way,
        "workers": workers,
        "work_ms": work_ms,
        "poll_ms": poll_ms if way == "poll" else 0.0,
        "calls": calls,
        "median_us": round(statistics.median(over), 1),
        "p10_us": round(over[len(over) // 10], 1),
        "p90_us": round(over[(9 * len(over)) // 10], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--poll-ms", type=float, default=20.0)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    results = []
    for _ in range(args.reps):
        for way in ("sleep", "poll"):
            r = run(
                way,
                calls=args.calls,
                workers=args.workers,
                work_ms=args.work_ms,
                poll_ms=args.poll_ms,
            )
            print(json.dumps(r), flush=True)
            results.append(r)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = {"cpus": len(os.sched_getaffinity(0)), "python": sys.version.split()[0]}
        (args.out / "pipe_wakeup.json").write_text(
            json.dumps({"meta": meta, "results": results}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
