"""The command-line flags the GPU session's scripts pass to ``kernel-review``, checked against the
command line as it is now, before a device call spends its minutes on a flag that is gone.

    python bench/device_flags.py       # exit 0 when every flag is there, 2 naming each that is not

``bench/device_session.sh`` runs it first in every call. ``USED`` lists, per command, each flag
and which script passes it (the session's own, and the scripts it runs: ``cli_decision.py``,
``real_kernels/run.py``, ``device_pr_review.py``, ``device_onboard.py``). A flag of ``USED`` that
a command no longer has fails ``tests/unit/test_device_flags.py`` in CI, so whoever cuts it sees
which script to change. ``--engine-option`` keys are listed as ``--engine-option KEY``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.cli import build_parser  # noqa: E402

# command -> flag -> the scripts that pass it
USED: dict[str, dict[str, str]] = {
    "bench": {
        "--repo": "cli_decision.py, real_kernels/run.py, onboard_gpu.sh",
        "--base": "cli_decision.py, real_kernels/run.py, onboard_gpu.sh",
        "--head": "cli_decision.py, real_kernels/run.py, onboard_gpu.sh",
        "--device": "cli_decision.py, real_kernels/run.py",
        "--out": "cli_decision.py, real_kernels/run.py",
        "--kernels": "cli_decision.py (part 2, the fixture), onboard_gpu.sh",
        "--engine-option max_rounds": "cli_decision.py, real_kernels/run.py (--device cpu only), "
        "onboard_gpu.sh",
        "--engine-option work_dir": "onboard_gpu.sh",
        "--engine-option added_shapes": "device_session.sh (real_kernels/run.py --bench-arg, as "
        "the record ran it), cli_decision.py and real_kernels/run.py (--device cpu), onboard_gpu.sh",
    },
    "review": {
        "--repo": "device_pr_review.py, device_onboard.py",
        "--base": "device_pr_review.py, device_onboard.py",
        "--head": "device_pr_review.py",
        "--results": "device_pr_review.py, device_session.sh (onboard-tmd)",
        "--no-compile": "device_pr_review.py, device_onboard.py, device_session.sh (onboard-tmd)",
        "--out": "device_pr_review.py, device_session.sh (onboard-tmd)",
        "--full": "device_session.sh (onboard-tmd)",
        "--measure": "device_onboard.py (--measure cpu on a CPU)",
    },
    "init": {"--only": "device_onboard.py"},
    "policy": {},
}
SUBCOMMANDS = {"policy": ("check",)}  # device_onboard.py: `kernel-review policy check`


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by its name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _engine_keys(command: argparse.ArgumentParser) -> set[str]:
    """The keys ``--engine-option`` takes, from its help (``engine_options.add_engine_option``
    writes each key before its colon)."""
    for action in command._actions:
        if "--engine-option" in action.option_strings and action.help:
            return set(re.findall(r"(?:\(repeatable\): |; )([a-z_]+): ", action.help))
    return set()


def missing(used: dict[str, dict[str, str]] = USED) -> list[str]:
    """One line per flag of ``used`` that its command does not take, saying who passes it."""
    out: list[str] = []
    for name, flags in used.items():
        commands = _options(build_parser(name))
        command = commands.get(name)
        if command is None:
            out.append(f"kernel-review {name}: no such command")
            continue
        known = set(command._option_string_actions)
        keys = _engine_keys(command)
        for flag, who in flags.items():
            option, _, key = flag.partition(" ")
            if option not in known or (key and key not in keys):
                out.append(f"kernel-review {name} {flag}: gone; passed by {who}")
        for sub in SUBCOMMANDS.get(name, ()):
            if sub not in _options(command):
                out.append(f"kernel-review {name} {sub}: gone; run by device_onboard.py")
    return out


def main() -> int:
    gone = missing()
    for line in gone:
        print(f"device_flags: {line}", file=sys.stderr)
    if gone:
        print(
            "device_flags: change the scripts named to the command line as it is now "
            "(`kernel-review COMMAND --help`; an advanced setting is --engine-option KEY=VALUE)",
            file=sys.stderr,
        )
        return 2
    print(f"device_flags: the {sum(map(len, USED.values()))} flags the session passes are there")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
