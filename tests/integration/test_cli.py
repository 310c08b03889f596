"""The command line itself: errors as inert messages, and a clean exit on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot.cli import main
from tests.paths import ROOT


def test_an_error_cannot_issue_a_workflow_command(tmp_path: Path, capsys) -> None:
    # The path is user input and is echoed in the error: a newline then a workflow command.
    hostile = str(tmp_path / "missing\n::add-mask::secret\n::set-output name=x::y")
    assert main(["policy", "check", hostile]) == 2
    err = capsys.readouterr().err
    assert "add-mask" in err  # the text is shown...
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())  # ...but inert


def test_sigterm_unwinds_with_the_conventional_exit_code(tmp_path: Path) -> None:
    # `kernel-review policy check -` would wait on stdin: a stand-in for a long job.
    code = (
        "import sys, time\n"
        "from bot.cli import main, _exit_on_sigterm\n"
        "import signal\n"
        "signal.signal(signal.SIGTERM, _exit_on_sigterm)\n"
        "try:\n"
        "    print('ready', flush=True); time.sleep(30)\n"
        "finally:\n"
        "    print('cleaned up', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert "cleaned up" in out
    assert proc.returncode == 128 + signal.SIGTERM
