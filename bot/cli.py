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
from types import ModuleType
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

        # a bar (a line per side and target in a log, and one each 10 s without): the first
        # compile takes minutes, and a side's targets compile at once
        sides = 2 * len(plan.compiler_targets or ())
        with Progress("compiler report", sides or None, unit="target", quiet_s=10.0) as bar:
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
    "job": "bot.app",
    "bench": "checks.sweep.cli",
    "compiler-report": "checks.compiler.cli",
    "first-call": "checks.compiler.cli",
    "doctor": "bot.github.doctor",
}
_WITH_COMPILER_REPORT = ("bot.demo", "bot.app")  # their register takes ``compiler_report``


# Flags the commands no longer have, and what to write instead (a flag of every command under
# ""): given one, the command line says so instead of argparse's "unrecognized arguments".
RETIRED: dict[str, dict[str, str]] = {
    "": {
        "--debug": "none is needed: an internal error keeps its traceback in a file under the "
        "cache folder and names it (and prints it where stderr is a log, not a terminal)",
    },
    "demo": {
        "--keep": "build the fixture repository to keep with `python -m "
        "kernels_fixture.build_repo DIR`, and review it with `kernel-review review --repo DIR "
        "--base main --head triton-rewrite --run-repo-code`",
    },
    "review": {
        "--device": "the device is --measure's value: --measure cpu, or --measure (cuda)",
        "--mode": "a job of the GitHub workflow is `kernel-review job MODE`",
    },
    "bench": {
        "--max-rounds": "--engine-option max_rounds=N",
        "--no-added-shapes": "--engine-option added_shapes=off",
        "--gpus": "--engine-option gpus=IDS",
        "--block-ms": "--engine-option block_ms=MS",
        "--no-crossover": "--engine-option crossover=off",
        "--no-precompile": "--engine-option precompile=off",
        "--no-zygote": "--engine-option zygote=off",
        "--work-dir": "--engine-option work_dir=DIR",
        "--keep-work-dir": "--engine-option work_dir=DIR (a folder given is kept)",
    },
    "compiler-report": {
        "--jobs": "--engine-option jobs=N",
        "--cache-dir": "the environment's KERNEL_REVIEW_CACHE",
    },
    "first-call": {"--time-distribution": "--engine-option time_distribution=on"},
    "init": {
        "--force": "--out PATH writes the policy to PATH, replacing a file there",
        "--max-kernels": "--only PATH (repeatable) writes the ops under PATH, as many as fit; "
        "without it, the 40 best ranked",
        "--rank": "nothing: ops are ranked by the call sites that launch them",
    },
}


def refuse_unknown(parser: argparse.ArgumentParser, command: str | None, extra: list[str]) -> None:
    """argparse's error for the words no parser took, naming what replaces a retired flag."""
    for word in extra:
        flag = word.partition("=")[0]
        instead = RETIRED.get(command or "", {}).get(flag) or RETIRED[""].get(flag)
        if instead:
            where = f"kernel-review {command}" if flag not in RETIRED[""] else "kernel-review"
            parser.error(f"{flag} is no longer a flag of {where}; instead: {instead}")
    parser.error(f"unrecognized arguments: {' '.join(extra)}")


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
    option, ``--version``, takes no value)."""
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in _registrations(command):
        register(sub)
    return parser


def _stopping() -> ModuleType | None:
    """The command's stop (``checks.procs.stopping``), where the command has loaded it: a command
    that starts no child never imports it."""
    return sys.modules.get("checks.procs.stopping")


def _stop_children(signum: int) -> None:
    # The helper jobs and sweep workers still running are killed (``checks.procs.stopping``),
    # so the threads waiting for them end and the command unwinds at once, not when they finish;
    # the signal is kept for what the command says of its stop (a sweep's results).
    if (stopping := _stopping()) is not None:
        stopping.stop(signum)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # A cancelled Actions job gets SIGTERM: unwind normally so that every worker process group
    # is killed and every temporary worktree removed by the code that started them.
    _stop_children(signum)
    raise SystemExit(128 + signum)


def _interrupt(signum: int, frame: object) -> None:
    _stop_children(signum)
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Its stop (SIGINT, SIGTERM) is its own: the handlers it installs are put
    back when it returns, and a stop an earlier command left set is cleared when the next starts
    (not when this one returns: the threads still waiting on its children end by that stop), so
    a caller in the same process (a test, a script running several commands) is not stopped by
    an earlier command's Ctrl-C."""
    if (stopping := _stopping()) is not None:
        stopping.clear()
    if threading.current_thread() is not threading.main_thread():
        return _command(argv)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        return _command(argv)
    finally:
        for signum, handler in zip((signal.SIGTERM, signal.SIGINT), before, strict=True):
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _command(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(named_command(words))
    args, extra = parser.parse_known_args(words)
    if extra:
        refuse_unknown(parser, args.command, extra)
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
    except Exception as exc:  # an internal bug: say so plainly, with its traceback at hand
        internal_error(exc)
        return 1


def internal_error(exc: Exception) -> Path | None:
    """Say that an internal bug stopped the command. Its traceback goes to a file under the
    cache folder, named in the message, and to stderr too where that is a log (a CI job's)
    rather than a terminal, or where the file cannot be written. The file's path, if any."""
    from bot.outputs import cache_root

    text = "".join(traceback.format_exception(exc))
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    path = cache_root() / "errors" / f"{stamp}.txt"
    kept: Path | None = path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        kept = None
    if kept is None or not sys.stderr.isatty():
        sys.stderr.write(log_safe(text))  # its messages may carry a checkout's text
    print(
        f"kernel-review: internal error: {type(exc).__name__}: {log_safe(str(exc))}\n"
        f"  hint: report it with its traceback ({kept or 'above'})",
        file=sys.stderr,
    )
    return kept
