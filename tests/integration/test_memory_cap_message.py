"""A helper process that runs out of memory under its cap reports the cap and how to raise it
(the compiler report and the first-call probe report errors through ``short_error``)."""

from __future__ import annotations

import subprocess
import sys

from checks.memory_cap import MEMORY_ENV
from checks.procs.launch import capped
from tests.paths import ROOT

CHILD = """\
from checks.job_child import short_error
try:
    block = bytearray(2 * 2**30)
except MemoryError as exc:
    print(short_error(exc))
"""


def test_running_into_the_cap_says_so_with_the_setting_to_raise_it() -> None:
    argv = capped([sys.executable, "-c", CHILD], 512 * 2**20)
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MemoryError:  (hit the worker memory cap of 0.5 GiB")
    assert "[limits] worker_memory_gib" in out.stdout and MEMORY_ENV in out.stdout
