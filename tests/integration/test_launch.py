"""The one launcher (``checks/procs/launch.py``) on real processes: what a process it starts
sees (the environment given, its folder, its memory cap, its log), that ending it ends what it
left running, that ``run`` hands the output back and kills the whole tree at its timeout, and
that a confined compiler writes only its scratch folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from checks.compiler.cxx_report import _compiler
from checks.procs import launch
from tests.integration.test_sandbox import confined, needs_isolation  # noqa: F401 (a fixture)
from tests.integration.test_worker_isolation import _alive

CAP = 3 * 2**30

# a child that reports what it sees, leaves a grandchild sleeping in its session, and waits
CHILD = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys, time
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "sleeper": sleeper.pid,
                      "cap": resource.getrlimit(resource.RLIMIT_DATA)[0]}), flush=True)
    print("on stderr", file=sys.stderr, flush=True)
    time.sleep(float(sys.argv[1]))
    """
)


def _wait_for_line(log: Path) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if "\n" in text:
            got: dict[str, object] = json.loads(text.splitlines()[0])
            return got
        time.sleep(0.02)
    raise AssertionError(f"the child said nothing: {log.read_text()!r}")


def _gone(pid: int) -> bool:
    """Whether ``pid`` ended within a few seconds (a SIGKILL takes effect a moment later)."""
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


def test_a_started_process_sees_its_environment_folder_cap_and_log_and_ends_whole(
    tmp_path: Path,
) -> None:
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "1"}
    one = launch.Launch((sys.executable, "-c", CHILD, "60"), env, tmp_path, memory_bytes=CAP)
    proc = launch.start(one, tmp_path / "out.log")
    try:
        seen = _wait_for_line(tmp_path / "out.log")
        assert {k: v for k, v in dict(seen["env"]).items() if k != "LC_CTYPE"} == env  # type: ignore[call-overload]
        assert seen["cwd"] == str(tmp_path) and seen["cap"] == CAP
        assert os.getsid(proc.pid) == proc.pid  # a session of its own
        sleeper = int(seen["sleeper"])  # type: ignore[call-overload]
        assert _alive(sleeper)
    finally:
        launch.stop(proc)
    assert proc.returncode is not None and _gone(sleeper)  # the grandchild went with it
    assert "on stderr" in (tmp_path / "out.log").read_text()


def test_a_process_that_caps_itself_is_not_wrapped_in_the_cap(tmp_path: Path) -> None:
    argv = (sys.executable, "-c", "pass")
    assert launch.command(launch.Launch(argv, {}, tmp_path, CAP, caps_itself=True)) == list(argv)
    wrapped = launch.command(launch.Launch(argv, {}, tmp_path, CAP))
    assert wrapped[-3:] == list(argv) and str(CAP) in wrapped
    assert launch.command(launch.Launch(argv, {}, tmp_path)) == list(argv)  # no cap: as given


def test_run_hands_back_the_output_and_exit_code(tmp_path: Path) -> None:
    code = (
        "import sys; print(sys.stdin.read().upper()); print('warn', file=sys.stderr); sys.exit(3)"
    )
    one = launch.Launch((sys.executable, "-c", code), {}, tmp_path)
    ran = launch.run(one, timeout_s=30, stdin=b"ptxas info")
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, b"PTXAS INFO\n", b"warn\n")
    assert not ran.timed_out


def test_run_kills_the_whole_tree_at_its_timeout(tmp_path: Path) -> None:
    log = tmp_path / "seen"
    code = f"import sys; sys.stdout = open({str(log)!r}, 'w'); exec({CHILD!r})"
    one = launch.Launch((sys.executable, "-c", code, "60"), {"PATH": os.environ["PATH"]}, tmp_path)
    t0 = time.monotonic()
    ran = launch.run(one, timeout_s=3.0)
    assert ran.timed_out and time.monotonic() - t0 < 20
    sleeper = int(_wait_for_line(log)["sleeper"])  # type: ignore[call-overload]
    assert _gone(sleeper)


def test_a_compiler_that_runs_past_its_timeout_is_reported_as_before(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        _compiler([sys.executable, "-c", "import time; time.sleep(30)"], str(tmp_path), 1.0)


@needs_isolation
def test_a_confined_compiler_writes_its_scratch_folder_and_nothing_else(
    tmp_path: Path,
    confined: None,  # noqa: F811
) -> None:
    scratch, outside = tmp_path / "scratch-out", tmp_path / "elsewhere"
    scratch.mkdir()
    outside.mkdir()
    write = "import pathlib, sys; pathlib.Path(sys.argv[1], 'x').write_text('x')"
    assert _compiler([sys.executable, "-c", write, str(scratch)], str(scratch), 30).returncode == 0
    assert (scratch / "x").read_text() == "x"
    denied = _compiler([sys.executable, "-c", write, str(outside)], str(scratch), 30)
    assert denied.returncode != 0 and b"Read-only file system" in denied.stderr
    assert not (outside / "x").exists()
