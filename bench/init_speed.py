"""``kernel-review init`` from two trees of the bot, side by side in one call, on one repository:
its wall and CPU time each, and whether both wrote the same policy, stubs and output.

    python3 bench/init_speed.py --old DIR --repo CLONE [--repeats 1] [--out FILE]

``--old`` is another copy of this repository's ``bot/`` and ``checks/`` (``git archive <commit>
bot checks | tar -x -C DIR``); the new tree is this one. ``--repo`` is a git clone of the
repository to onboard (FlagGems at ed2508bcb5a0 for the recorded run): each run is a fresh
``git clone --shared`` of it, so both trees rank by the same history. Runs alternate old and
new, ``--repeats`` times each; CPU time is the command's and its children's (user + system).
The outputs are compared byte for byte (the policy, ``kernel_review_bench.py``, what ``init``
printed with the clone's path taken out); a difference fails the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = (".github/kernel-review.toml", "kernel_review_bench.py")


def run_init(tree: Path, repo: Path, work: Path) -> tuple[float, float, dict[str, str]]:
    """One ``init`` by ``tree``'s bot in a fresh clone of ``repo``: wall s, CPU s, its outputs."""
    clone = Path(tempfile.mkdtemp(dir=work))
    subprocess.run(["git", "clone", "-q", "--shared", str(repo), str(clone)], check=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = "import sys; from bot.cli import main; sys.exit(main())"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, "init"],
        cwd=clone,  # not this tree: ``-c`` puts the working folder first on the path
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    outputs = {name: (clone / name).read_text() for name in OUTPUTS if (clone / name).exists()}
    outputs["stdout"] = done.stdout.replace(str(clone), "CLONE")
    return wall, cpu, outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the other tree's bot/ and checks/")
    parser.add_argument("--repo", type=Path, required=True, help="a git clone to onboard")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write the record here too")
    args = parser.parse_args()
    trees = {"old": args.old.resolve(), "new": ROOT}
    runs: dict[str, list[tuple[float, float, dict[str, str]]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as work:
        for i in range(args.repeats):  # old, new, then new, old: the order turned each repeat
            for name in list(trees) if i % 2 == 0 else list(trees)[::-1]:
                runs[name].append(run_init(trees[name], args.repo.resolve(), Path(work)))
    same = all(r[2] == runs["old"][0][2] for rs in runs.values() for r in rs)
    head = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    stdout = runs["new"][0][2]["stdout"].splitlines()
    rows = [
        f"# {Path(__file__).name}: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
        f"# {platform.node()} {platform.machine()}, {len(os.sched_getaffinity(0))} cores; "
        f"repository {args.repo.name} at {head[:12]}; {stdout[1] if len(stdout) > 1 else ''}",
        "# kernel-review init, wall seconds, alternating order",
    ]
    for name, rs in runs.items():
        rows.append(
            f"{name} median {statistics.median(r[0] for r in rs):.3f} s  "
            + " ".join(f"{r[0]:.3f}" for r in rs)
        )
    for name, rs in runs.items():
        rows.append(
            f"{name} CPU median {statistics.median(r[1] for r in rs):.1f} s  "
            + " ".join(f"{r[1]:.1f}" for r in rs)
        )
    rows.append(f"the same policy, stubs and output from both: {'yes' if same else 'NO'}")
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
