"""What starting a command costs before it does anything: one command's module against all.

    python bench/cli_start.py --out bench/results/cpu/cli_start.txt [--repeats 7]

``kernel-review bench --help`` as the command line runs it now (``bot.cli.COMMANDS``: the module
that adds ``bench`` alone) against the same parser built with every command's module, as before
(``build_parser()`` without a command), each a fresh Python process from its start to its exit,
in alternating order, in this one call. The time is part of every ``kernel-review bench`` run's
wall, before the GPU's first use.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from side_by_side import alternate, record  # noqa: E402

WAYS = {
    "one module": [sys.executable, "-m", "bot", "bench", "--help"],
    "every module": [
        sys.executable,
        "-c",
        "from bot.cli import build_parser; build_parser().parse_args(['bench', '--help'])",
    ],
}


def one(argv: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - t0
    if done.returncode != 0 or "usage: kernel-review bench" not in done.stdout:
        raise SystemExit(f"{argv[-1]} did not print bench's help: {done.stderr[-300:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the record here (default: print it)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    times = alternate({way: lambda w=way: one(WAYS[w]) for way in WAYS}, args.repeats)
    what = "seconds from a fresh process's start to its exit, `bench --help`"
    record(__file__, f"Python {platform.python_version()}", what, times, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
