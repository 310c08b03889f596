"""The ``kernel-review`` command line: one subcommand per job, errors as messages, not tracebacks.

Each subcommand lives in the module that owns the work; that module exposes
``register(subparsers)`` which adds its parser and sets ``handler`` to a function
``(argparse.Namespace) -> int``. What a command needs from ``checks/`` is passed to its
``register`` from here (``bot/`` imports ``checks/`` only in the wiring). A new subcommand is
one line in ``COMMANDS``: a command line that names a command imports only its module. Imports
here must stay cheap: no torch, no triton.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bot import __version__
from bot.clock import process_started
from bot.errors import KernelReviewError
from bot.escape import log_safe

if TYPE_CHECKING:
    from bot.contracts.evidence import CompilerEvidence, NotRun
    from bot.contracts.plan import Plan
    from bot.policy.load import Policy


def _compiler_report(
    repo: Path,
    base_sha: str,
    head_sha: str,
    plan: Plan,
    policy: Policy,
    *,
    run_repo_code: bool,
) -> tuple[CompilerEvidence | None, list[NotRun]]:
    """``checks.compiler``'s report for a range, imported only when a review asks for it.
    Without ``run_repo_code`` nothing of the repository is imported: only its C++ kernels are
    compiled, and a not-run says which flag cross-compiles its Triton kernels."""
    from bot.contracts.evidence import NotRun

    try:
        from checks.compiler import evidence
    except ImportError as exc:  # triton is an optional extra
        return None, [NotRun(check="compiler", reason=f"triton is not installed here ({exc.name})")]
    if run_repo_code:
        from bot.progress import Progress

        # a bar (a line per side and target in a log): the first compile takes minutes
        sides = 2 * len(plan.compiler_targets or ())
        with Progress("compiler report", sides or None, unit="target") as bar:
            return evidence.compiler_evidence_for_range(
                repo, base_sha, head_sha, plan, policy, progress=bar.step
            )
    from bot.local_review import NOT_IMPORTED

    found, not_run = evidence.compiler_evidence_without_import(
        repo, base_sha, head_sha, plan, policy
    )
    if plan.kernels:
        not_run.insert(0, NotRun(check="compiler", reason=NOT_IMPORTED))
    return found, not_run


# Each command and the module whose ``register`` adds it, in the order ``--help`` lists them.
# A command line that names one imports that module alone: ``kernel-review bench`` needs neither
# PyGithub nor the review's modules (0.3 s of every start on a 2-core CPU).
COMMANDS: dict[str, str] = {
    "demo": "bot.demo",
    "init": "bot.onboard.cli",
    "policy": "bot.policy.cli",
    "analyze": "bot.analysis.cli",
    "review": "bot.app",
    "bench": "checks.sweep.cli",
    "compiler-report": "checks.compiler.cli",
    "first-call": "checks.compiler.cli",
    "doctor": "bot.github.doctor",
}
_WITH_COMPILER_REPORT = ("bot.demo", "bot.app")  # their register takes ``compiler_report``


def _runner_check() -> list[tuple[str, str, str]]:
    """``kernel-review doctor --runner``'s findings on this machine (``checks.procs``)."""
    from checks.procs.sandbox import declared_disposable, detect, runner_findings

    return runner_findings(detect(), declared_disposable(None))


def _registrations(
    command: str | None = None,
) -> list[Callable[[argparse._SubParsersAction], None]]:
    """The ``register`` of the module that adds ``command``; of every module when ``command``
    is None or no command this version has (argparse then lists the choices)."""
    names = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    out = []
    for name in names:
        register = importlib.import_module(name).register
        if name in _WITH_COMPILER_REPORT:
            register = functools.partial(register, compiler_report=_compiler_report)
        if name == COMMANDS["doctor"]:
            register = functools.partial(register, runner_check=_runner_check)
        out.append(register)
    return out


def named_command(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is not an option (the top-level
    options, ``--version`` and ``--debug``, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with ``command``, only that command's (see ``COMMANDS``)."""
    parser = argparse.ArgumentParser(
        prog="kernel-review",
        description=(
            "Review pull requests that rewrite GPU kernels: detect the kernel changes in a diff, "
            "measure old against new on the shapes you serve, and write the review."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show a traceback for unexpected errors"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in _registrations(command):
        register(sub)
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # A cancelled Actions job gets SIGTERM: unwind normally so that every worker process group
    # is killed and every temporary worktree removed by the code that started them.
    raise SystemExit(128 + signum)


def _interrupt(signum: int, frame: object) -> None:
    # Ctrl-C: the helper jobs still running are killed (``checks.job_process.STOPPING``), so the
    # threads waiting for them end and the command unwinds at once, not when they finish.
    jobs = sys.modules.get("checks.job_process")
    if jobs is not None:
        jobs.STOPPING.set()
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        signal.signal(signal.SIGINT, _interrupt)
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(named_command(words))
    args = parser.parse_args(words)
    # run as a program, a command's cost counts from Python's start; called in-process, from now
    args.started = process_started() if argv is None else time.monotonic()
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except KernelReviewError as exc:
        print(f"kernel-review: error: {log_safe(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kernel-review: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `kernel-review ... | head` closes stdout early; that is not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # an internal bug: say so plainly, keep the traceback one flag away
        if args.debug:
            traceback.print_exc()
        print(
            f"kernel-review: internal error: {type(exc).__name__}: {log_safe(str(exc))}\n"
            "  hint: rerun with --debug for the traceback and report it",
            file=sys.stderr,
        )
        return 1
