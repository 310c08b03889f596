"""The tritonbench onboarding of docs/onboarding/meta-pytorch-tritonbench.md, replayed on this
machine's GPU, each step timed, the review it printed kept.

    python bench/device_onboard.py --out OUT                 # on the GPU (the H200)
    python bench/device_onboard.py --out OUT --device cpu    # plumbing: the CPU interpreter

The repository is the ``onboard`` branch of ``bench/device_src/tritonbench.bundle`` (the
onboarded commit, db2155c, trimmed to the files the steps read and import; README.md beside the
bundle). The steps are the transcript's from the clone on: ``kernel-review init --only`` the five
operators, ``kernel-review policy check``, the commit, the change to review on a branch
(vector_add's ``BLOCK_SIZE`` 1024 -> 2048), and ``kernel-review review --repo . --base main
--measure --no-compile``, which sweeps vector_add at base and head here and prints the review.
On the GPU the policy keeps the shapes ``init`` wrote; ``--device cpu`` first narrows them to the
two the CPU transcript used (its hand edit 1), since the interpreter runs a 134M-element add in
minutes. ``OUT/transcript.md`` has each command, its exit code, wall time and output;
``OUT/review.txt`` the review as printed, ``OUT/results.json`` the sweep's results file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "bench" / "device_src" / "tritonbench.bundle"
OPS = ("vector_add", "vector_exp", "softmax", "low_mem_dropout", "layer_norm")
POLICY = ".github/kernel-review.toml"
KERNEL_FILE = "tritonbench/operators/vector_add/operator.py"
CPU_SHAPES = "shapes = [[4096], [65536]]"


def kernel_review(*args: str) -> list[str]:
    """The command as the transcript writes it, run from this tree."""
    return [sys.executable, "-m", "bot", *args]


def _shapes_line(policy: Path, kernel: str) -> str:
    """The ``shapes = ...`` line of ``kernel``'s entry in the policy as ``init`` wrote it."""
    if not policy.is_file():
        return ""
    entry = re.search(
        rf'^name = "{kernel}"\n(?:(?!\[\[kernels\]\]).*\n)*?(shapes = .*)$',
        policy.read_text(encoding="utf-8"),
        re.M,
    )
    return entry.group(1) if entry else ""


class Transcript:
    """Each step's command, exit code, wall time and output, as markdown in ``path``."""

    def __init__(self, path: Path, title: str) -> None:
        self.path, self.lines, self.rows = path, [f"# {title}", ""], []
        self.failed = False

    def run(self, shown: str, argv: list[str], cwd: Path, *, timeout: float) -> str:
        """Run one step; what it printed on stdout (its output, stderr too, is in the log)."""
        t0 = time.monotonic()
        try:
            done = subprocess.run(
                argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=os.environ
            )
            rc, printed, out = done.returncode, done.stdout, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            got = [
                x.decode(errors="replace") if isinstance(x, bytes) else x or ""
                for x in (exc.stdout, exc.stderr)
            ]
            rc, printed, out = 124, got[0], f"{got[0]}{got[1]}\n(stopped after {timeout:.0f} s)"
        wall = time.monotonic() - t0
        self.rows.append(f"| `{shown}` | {rc} | {wall:.1f} s |")
        self.lines += [f"## `{shown}`", "", f"exit code {rc}, {wall:.1f} s", "", "```text"]
        self.lines += [out.rstrip(), "```", ""]
        self.failed |= rc not in (0, 4) if shown.startswith("kernel-review review") else rc != 0
        self.write()
        return printed

    def edit(self, what: str, path: Path, old: str, new: str) -> None:
        text = path.read_text(encoding="utf-8")
        if not old or old not in text:
            self.lines += [f"## hand edit: {what}", "", f"not made: `{old}` not found", ""]
            self.failed = True
        else:
            path.write_text(text.replace(old, new, 1), encoding="utf-8")
            self.lines += [f"## hand edit: {what}", "", "```diff", f"-{old}", f"+{new}", "```", ""]
        self.write()

    def write(self) -> None:
        table = ["| step | exit code | wall time |", "|---|---|---|", *self.rows, ""]
        self.path.write_text("\n".join([*self.lines[:2], *table, *self.lines[2:]]) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--review-s", type=float, default=240.0, help="limit of the review step")
    args = ap.parse_args(argv)
    cpu = args.device == "cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    log = Transcript(
        args.out / "transcript.md",
        f"tritonbench onboarded, replayed {'with CPU timing' if cpu else 'on the GPU'} ({when})",
    )
    work = Path(tempfile.mkdtemp(prefix="device-onboard-"))
    os.environ["KERNEL_REVIEW_CACHE"] = str(work / "cache")  # the sweep's file lands here
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)
    if cpu:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        repo = work / "tb"
        log.run(
            "git clone … tb", ["git", "clone", "-q", str(args.bundle), str(repo)], work, timeout=60
        )
        log.run(
            "git checkout -b main origin/onboard",
            ["git", "checkout", "-q", "-b", "main", "origin/onboard"],
            repo,
            timeout=30,
        )
        only = [a for op in OPS for a in ("--only", f"tritonbench/operators/{op}")]
        log.run(
            f"kernel-review init {shlex.join(only)}",
            kernel_review("init", *only),
            repo,
            timeout=120,
        )
        log.run("kernel-review policy check", kernel_review("policy", "check"), repo, timeout=60)
        if cpu:
            log.edit(
                "the shapes vector_add serves, two of the sweep's (the CPU interpreter's)",
                repo / POLICY,
                _shapes_line(repo / POLICY, "vector_add"),
                CPU_SHAPES,
            )
        git = ["git", "-c", "user.name=kernel-review", "-c", "user.email=kernel-review@localhost"]
        log.run(
            "git add -A && git commit -m 'kernel-review policy'",
            ["sh", "-c", f"git add -A && {shlex.join(git)} commit -q -m 'kernel-review policy'"],
            repo,
            timeout=30,
        )
        log.run("git checkout -b block", ["git", "checkout", "-q", "-b", "block"], repo, timeout=30)
        log.edit(
            "the change to review",
            repo / KERNEL_FILE,
            "triton_add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)",
            "triton_add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=2048)",
        )
        log.run(
            "git commit -am 'vector_add: 2048-element blocks'",
            [*git, "commit", "-q", "-am", "vector_add: 2048-element blocks"],
            repo,
            timeout=30,
        )
        measure = ["--measure", "cpu"] if cpu else ["--measure"]
        review = ["review", "--repo", ".", "--base", "main", *measure, "--no-compile"]
        printed = log.run(
            f"kernel-review {shlex.join(review)}",
            kernel_review(*review),
            repo,
            timeout=args.review_s,
        )
        (args.out / "review.txt").write_text(printed, encoding="utf-8")
        for found in sorted((work / "cache").rglob("results-*.json"))[-1:]:
            shutil.copy(found, args.out / "results.json")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if log.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
