"""Run one of the bot's own helper programs on a job file, in a fresh process.

The compile workers and the first-call probes import the pull request's code, so they get the
same treatment as the sweep's workers: a scrubbed environment (no token, nothing that writes to
GitHub), a memory cap, a Triton cache of their own, their own session killed whole on a timeout
and when they end, and a result read back from a file rather than from output the user's code
could write to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checks.worker_env import (
    capped,
    default_memory_bytes,
    kill_session,
    make_undumpable,
    scrubbed_env,
)

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def run_job(
    module: str,
    job: dict[str, Any],
    *,
    workdir: Path,
    triton_cache: Path,
    timeout_s: float,
    what: str,
    python: str | None = None,
    prefix: Sequence[str] = (),
) -> dict[str, Any]:
    """Run ``python -m module JOB`` with ``job`` (plus ``out``) and return what it wrote to ``out``,
    or ``{"fatal": message}`` when it timed out or died without writing it. ``python``: the
    interpreter (a side's own toolchain, ``checks.toolchain_env``); the bot's by default.
    ``prefix``: a program that runs the process (a profiler), put before the interpreter.
    C++ extensions that ``torch.utils.cpp_extension.load`` builds go beside ``triton_cache``
    (``torch-extensions``), not in the machine's shared folder: an empty cache folder is then a
    cold start for them too, and no other job's build of the same name is picked up."""
    job = {**job, "out": str(workdir / "out.json")}
    job_path = workdir / "job.json"
    job_path.write_text(json.dumps(job))
    env = scrubbed_env()
    env.pop("TRITON_INTERPRET", None)
    if "PYTHONPATH" in os.environ:  # where the bot's own dependencies were installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env["TRITON_CACHE_DIR"] = str(triton_cache)
    env["TORCH_EXTENSIONS_DIR"] = str(triton_cache.parent / "torch-extensions")
    make_undumpable()
    proc = subprocess.Popen(
        capped(
            [*prefix, python or sys.executable, "-m", module, str(job_path)],
            default_memory_bytes(),
        ),
        cwd=str(PACKAGE_ROOT),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        proc.communicate()
        return {"fatal": f"{what} took longer than {timeout_s:.0f} s"}
    finally:
        kill_session(proc.pid)  # what the job left running goes with it
    out = Path(job["out"])
    if not out.is_file():
        tail = (stderr or stdout)[-800:]
        return {"fatal": f"{what} exited with {proc.returncode}: {tail}"}
    return json.loads(out.read_text())
