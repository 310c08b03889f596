"""Run a command in cgroups of its own: ``python -I enter.py CONFIG -- COMMAND ...``.

Started in place of the command (``checks.procs.sandbox.sandboxed``), it makes one cgroup named
after its own pid under each folder CONFIG lists, writes the limits CONFIG gives (the memory
cap), moves itself in, and becomes COMMAND (``execvp``: same pid, same descriptors), with the
cgroups' name in ``NAME_ENV``. The bot finds the cgroups again from that pid to kill everything
in them. Nothing of COMMAND runs when a step fails: it exits 126 and says which file refused.

Standard library only, and run isolated (``-I``): nothing of the checkout is on its path.
"""

from __future__ import annotations

import json
import os
import sys

REFUSED = 126
# the name of the cgroups COMMAND runs in: the workers' zygote waits, in each process it forks,
# until the bot has moved that process out of them (``checks/worker/zygote.py``)
NAME_ENV = "KERNEL_REVIEW_CGROUP_NAME"


def enter(config: dict[str, object], pid: int) -> None:
    """Make and join the cgroups ``config`` lists, for process ``pid``; their name in
    ``NAME_ENV``."""
    prefix = str(config["prefix"])
    os.environ[NAME_ENV] = f"{prefix}{pid}"
    for entry in config["cgroups"]:  # type: ignore[attr-defined]
        folder = os.path.join(str(entry["root"]), f"{prefix}{pid}")
        os.makedirs(folder, exist_ok=True)
        for name, value in entry.get("limits", []):
            with open(os.path.join(folder, name), "w") as f:
                f.write(str(value))
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(pid))


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: enter.py CONFIG -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    try:
        enter(json.loads(argv[0]), os.getpid())
    except OSError as exc:
        print(f"kernel-review: could not confine the process, nothing ran: {exc}", file=sys.stderr)
        return REFUSED
    os.execvp(argv[2], argv[2:])
    return REFUSED  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
