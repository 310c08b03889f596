"""A worker whose bot was killed (SIGKILL: nothing of the bot can stop it) ends by itself, even
in the middle of a long call, instead of running on on the GPU the next job measures with
(``checks.worker.exiting.end_with_parent``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from checks.worker import exiting

ROOT = Path(__file__).resolve().parents[2]

# One process plays the machine: it takes orphans as a subreaper (as init would), starts a "bot"
# that starts a "worker" busy in a 60 s call, kills the bot with SIGKILL, then waits for the
# worker and prints how it ended and after how long.
HARNESS = textwrap.dedent(
    """
    import ctypes, json, os, signal, subprocess, sys, time
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    worker = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); "
        "from checks.worker import exiting; "
        "exiting.end_with_parent(int(sys.argv[2]) if len(sys.argv) > 2 else None, 0.05); "
        "print('busy', flush=True); time.sleep(60)"
    )
    # with "bot" the worker is told the bot's pid, as checks.sweep.workers tells it
    bot = (
        "import os, subprocess, sys; "
        "told = [str(os.getpid())] if sys.argv[3:] else []; "
        "w = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], *told]); "
        "print(w.pid, flush=True); w.wait()"
    )
    proc = subprocess.Popen([sys.executable, "-c", bot, worker, *sys.argv[1:]],
                            stdout=subprocess.PIPE, text=True)
    worker_pid = int(proc.stdout.readline())
    time.sleep(0.5)  # the worker is in its long call
    killed_at = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = killed_at + 10
    while True:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == worker_pid:
            print(json.dumps({"code": os.waitstatus_to_exitcode(status),
                              "after_s": time.monotonic() - killed_at}))
            break
        if time.monotonic() > deadline:
            os.kill(worker_pid, signal.SIGKILL)
            print(json.dumps({"code": None, "after_s": None}))
            break
        time.sleep(0.02)
    """
)


def _run(*extra: str) -> dict[str, float | int | None]:
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(ROOT), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_worker_in_a_long_call_ends_once_its_bot_is_killed() -> None:
    ended = _run()
    assert ended["code"] == exiting.ORPHANED, ended
    assert ended["after_s"] is not None and ended["after_s"] < 5


def test_a_worker_told_its_bots_pid_ends_once_that_bot_is_killed() -> None:
    ended = _run("bot")
    assert ended["code"] == exiting.ORPHANED, ended
