"""The command line itself: errors as inert messages, and a clean exit on SIGTERM."""

from __future__ import annotations

import json
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


def test_every_command_is_named_once_with_the_module_that_adds_it() -> None:
    """``COMMANDS`` lists exactly what the modules register, in ``--help``'s order, and a
    command line that names one builds a parser of that command alone."""
    from bot.cli import COMMANDS, build_parser, named_command

    def commands(parser) -> list[str]:
        sub = next(a for a in parser._actions if a.dest == "command")
        return list(sub.choices)

    assert commands(build_parser()) == list(COMMANDS)
    for name in COMMANDS:
        assert name in commands(build_parser(name))
    assert commands(build_parser("bench")) == ["bench"]
    assert commands(build_parser("no-such")) == list(COMMANDS)  # argparse lists the choices
    assert named_command(["--version", "bench", "--repo", "."]) == "bench"
    assert named_command(["--version"]) is None


def _imported(code: str, names: set[str]) -> list[str]:
    """Which of ``names`` a fresh Python has imported after running ``code``."""
    code += f"\nimport json, sys\nprint(json.dumps(sorted(set({sorted(names)!r}) & set(sys.modules))))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_bench_starts_without_the_github_side() -> None:
    """`kernel-review bench` imports neither PyGithub nor requests (nor torch: its workers do)."""
    code = "from bot.cli import main\ntry:\n    main(['bench', '--help'])\nexcept SystemExit:\n    pass"
    assert _imported(code, {"github", "requests", "torch", "bot.app"}) == []


def test_the_zygote_is_started_before_pydantic_is_imported() -> None:
    """What `kernel-review bench` imports to start the workers' zygote (and the early warm-up)
    needs no pydantic: its 0.1-0.2 s import would delay the zygote's own, the run's longest."""
    code = (
        "import bot.cli, checks.sweep.cli\n"
        "from checks.sweep.zygote import start_zygote\n"
        "from checks.sweep.warmer import start_warmer"
    )
    assert _imported(code, {"pydantic", "torch", "triton"}) == []
