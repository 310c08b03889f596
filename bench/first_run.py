"""A newcomer's first run, timed: ``scripts/demo`` in a fresh clone, first and cached, then
``scripts/setup --dev`` (what ``scripts/test`` adds), first and cached.

    python bench/first_run.py --out bench/results/cpu/first_run/times.json \\
        --transcript docs/first-run.md                      # a few minutes on 2 cores
    python bench/first_run.py --readme bench/results/cpu/first_run/times.json

The first form clones this repository's HEAD into a temporary folder, runs the scripts as a
newcomer would (``KERNEL_REVIEW_PROGRESS=lines``, so the transcript reads as a log), and records
each run's wall time, the time of each step the scripts name (``== setup: STEP: N s``), the
longest time it printed nothing, and the machine's load around it (the machine may be shared: a
number means little without it).
``--empty-compile-cache`` points ``KERNEL_REVIEW_CACHE`` at a new folder, as on a machine that
never compiled the fixture; without it the compile cache is the one this user already has.
``--transcript`` writes the first demo run's output, as it came, to a markdown file.

The second form rewrites the ``first_run`` blocks of README.md and tests/README.md from the
recorded file; ``tests/unit/test_first_run_numbers.py`` fails when they say otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from readme_numbers import fill_block

ROOT = Path(__file__).resolve().parents[1]
READMES = {"README.md": "demo", "tests/README.md": "test"}  # file -> which sentence
BLOCK = "first_run"
STEP_LINE = re.compile(r"^== (?P<who>[\w-]+): (?P<what>.+): (?P<s>\d+(?:\.\d+)?) s$")
# what pip says of the measuring machine's own package indexes (one warning per package, and
# where it looks): that machine's set-up, not the project's, and left out of the record
MACHINE_LINES = re.compile(
    r"^(WARNING: Location '.*' is ignored: it is neither a file nor|Looking in (indexes|links): )"
)

# What a newcomer's run must come within (issue 48's "done when"): the demo's first run and a
# cached one, and the longest wait with nothing printed, past which a slow step cannot be told
# from a hang; on the developers' machine (2 cores), the compile cache empty
BAR_S = {"demo_first": 120.0, "demo_cached": 15.0}
SILENCE_BAR_S = 20.0
CORES = 2

RUNS = (
    ("demo_first", ["scripts/demo"]),
    ("demo_cached", ["scripts/demo"]),
    ("setup_dev_first", ["scripts/setup", "--dev"]),
    ("setup_dev_cached", ["scripts/setup", "--dev"]),
)


def step_times(output: str) -> dict[str, float]:
    """Each step a script named and timed (``== setup: torch (...): 9.4 s``), in order."""
    steps: dict[str, float] = {}
    for line in output.splitlines():
        m = STEP_LINE.match(line.strip())
        if m and not m["what"].endswith("..."):
            steps[f"{m['who']}: {m['what']}"] = float(m["s"])
    return steps


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def without_machine_lines(output: str) -> tuple[str, int]:
    """``output`` without the lines about the machine's package indexes, and how many."""
    lines = output.splitlines()
    kept = [line for line in lines if not MACHINE_LINES.match(line)]
    return "\n".join(kept) + "\n", len(lines) - len(kept)


def timed_run(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """One script run: its wall time, its steps, its output, the load before and after."""
    before = _load()
    cpu_before = _children_cpu_s()
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = [(time.monotonic() - start, line) for line in proc.stdout]
    rc = proc.wait()
    wall = time.monotonic() - start
    stdout = "".join(line for _, line in lines)
    return {
        "argv": argv,
        "rc": rc,
        "wall_s": round(wall, 1),
        # user + system of the run and every process it waited for: what the load cannot
        # inflate; on an idle 2-core machine the run takes at least half of it
        "cpu_s": round(_children_cpu_s() - cpu_before, 1),
        "load_before": before,
        "load_after": _load(),
        "steps": step_times(stdout),
        "longest_silence": longest_silence(lines, wall),
        **_output(stdout),
    }


def longest_silence(lines: list[tuple[float, str]], wall_s: float) -> dict[str, Any]:
    """The longest time the run printed nothing (``lines``: each line with the seconds since
    the start at which it came), and the line it followed (empty: the start), so a newcomer's
    wait with no sign of progress is on the record. Output reaches the pipe as the processes
    flush it: a terminal shows it no later, and pip's bars move there besides."""
    longest, after, last, prev = 0.0, "", 0.0, ""
    for at, line in [*lines, (wall_s, "")]:
        if at - last > longest:
            longest, after = at - last, prev
        last, prev = at, line.rstrip("\n")
    return {"s": round(longest, 1), "after": after}


def _output(raw: str) -> dict[str, Any]:
    output, dropped = without_machine_lines(raw)
    return {"output": output, "machine_lines_left_out": dropped}


def record(empty_compile_cache: bool) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="kr-first-run-") as tmp:
        clone = Path(tmp) / "kernel-review"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = dict(os.environ, KERNEL_REVIEW_PROGRESS="lines")
        env.pop("VIRTUAL_ENV", None)
        if empty_compile_cache:
            env["KERNEL_REVIEW_CACHE"] = str(Path(tmp) / "cache")
        runs = {}
        for name, argv in RUNS:
            runs[name] = timed_run(argv, clone, env)
            print(f"{name}: {runs[name]['wall_s']} s (rc {runs[name]['rc']})", file=sys.stderr)
            if runs[name]["rc"] != 0:
                print(runs[name]["output"][-4000:], file=sys.stderr)
                raise SystemExit(f"{' '.join(argv)} failed in the clone: see its output above")
    return {
        "meta": {
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit,
            "cores": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
            "machine": platform.platform(),
            "python": platform.python_version(),
            "compile_cache": "empty" if empty_compile_cache else "as found",
        },
        "runs": runs,
    }


def short_of_the_bar(rec: dict[str, Any]) -> list[str]:
    """What keeps ``rec`` from showing a newcomer's run within the bar's times, on its machine:
    each a sentence, none when it does."""
    meta, runs = rec["meta"], rec["runs"]
    short = []
    if meta["cores"] != CORES or meta["compile_cache"] != "empty":
        short.append(
            f"measured on {meta['cores']} cores with the compile cache {meta['compile_cache']}: "
            f"the bar is for {CORES} cores and an empty compile cache (--empty-compile-cache)"
        )
    for name, bar in BAR_S.items():
        if runs[name]["wall_s"] > bar:
            short.append(f"{name} took {runs[name]['wall_s']} s, over its {bar:.0f} s")
    return short


def silent_past_the_bar(rec: dict[str, Any]) -> list[str]:
    """Each demo run that printed nothing for longer than the bar allows, as a sentence. The
    recorder reads a pipe, as a log would: in a terminal the compiler report's bar redraws its
    clock every second besides."""
    silent = []
    for name in BAR_S:
        quiet = rec["runs"][name].get("longest_silence")
        if quiet is None:
            silent.append(f"{name}: no longest silence recorded (a record older than it)")
        elif quiet["s"] > SILENCE_BAR_S:
            silent.append(
                f"{name} printed nothing for {quiet['s']} s (after {quiet['after']!r}), over "
                f"{SILENCE_BAR_S:.0f} s"
            )
    return silent


def transcript(rec: dict[str, Any]) -> str:
    """The first demo run's output as markdown, with what the numbers were measured on."""
    run = rec["runs"]["demo_first"]
    meta = rec["meta"]
    dropped = run["machine_lines_left_out"]
    note = (
        f" {dropped} lines in which pip named that machine's package indexes are left out."
        if dropped
        else ""
    )
    return (
        "# A first run of `scripts/demo`\n\n"
        f"A fresh clone (commit {meta['commit'][:7]}), on a {meta['cores']}-core machine with "
        f"{meta['memory_gib']} GiB, {meta['date']}; load average {_fmt_load(run['load_before'])} "
        f"before and {_fmt_load(run['load_after'])} after (the machine was shared), the compile "
        f"cache {meta['compile_cache']}. It took {run['wall_s']:.0f} s ({run['cpu_s']:.0f} CPU-s); "
        f"the run after it, with .venv and the caches kept, "
        f"{rec['runs']['demo_cached']['wall_s']:.0f} s. Made by `python bench/first_run.py"
        f"{' --empty-compile-cache' if meta['compile_cache'] == 'empty' else ''} "
        "--out bench/results/cpu/first_run/times.json --transcript docs/first-run.md`.\n\n"
        "stdout (the review) and stderr (each step, pip's own lines, the compiler report's "
        f"progress) as they came, interleaved.{note}\n\n"
        "```text\n$ scripts/demo\n" + run["output"] + "```\n"
    )


def _fmt_load(load: list[float]) -> str:
    return f"{load[0]:.1f}"


def _step(run: dict[str, Any], prefix: str) -> float:
    """The time of the step whose name starts with ``prefix``."""
    for name, s in run["steps"].items():
        if name.startswith(prefix):
            return s
    raise KeyError(f"no step named {prefix!r}... in {sorted(run['steps'])}")


def _where(rec: dict[str, Any], run: dict[str, Any]) -> str:
    meta = rec["meta"]
    return (
        f"measured in a fresh clone on a {meta['cores']}-core machine (compile cache "
        f"{meta['compile_cache']}, {meta['date'][:10]}, load average "
        f"{_fmt_load(run['load_before'])} before and {_fmt_load(run['load_after'])} after: the "
        "machine was shared, and an idle one needs at least half the CPU time; "
        "`bench/results/cpu/first_run/times.json`)"
    )


def _silence(run: dict[str, Any]) -> str:
    quiet = run.get("longest_silence")
    if quiet is None:  # a record older than the measure
        return ""
    after = f"after `{quiet['after']}`" if quiet["after"] else "at the start"
    return (
        f" Read through a pipe, as a log is, it printed nothing for {quiet['s']:.0f} s at "
        f"most, {after}."
    )


def sentence(rec: dict[str, Any], which: str) -> str:
    """What README.md (``demo``) or tests/README.md (``test``) says of the recorded times."""
    runs = rec["runs"]
    first, cached = runs["demo_first"], runs["demo_cached"]
    if which == "demo":
        setup = _step(first, "setup: kernel-review installed")
        review = _step(first, "demo: kernel-review demo")
        return (
            f"`scripts/demo` took {first['wall_s']:.0f} s the first time, {first['cpu_s']:.0f} "
            f"CPU-s ({setup:.0f} s setting up .venv, {review:.0f} s the review, most of it the "
            f"compiler report's first compile), and {cached['wall_s']:.1f} s the next time, "
            f"{cached['cpu_s']:.1f} CPU-s, {_where(rec, first)}.{_silence(first)} The "
            "transcript of that first run is [docs/first-run.md](docs/first-run.md)."
        )
    dev, dev_cached = runs["setup_dev_first"], runs["setup_dev_cached"]
    return (
        f"After the demo's set-up, `scripts/setup --dev` (pytest, pytest-xdist, ruff, and the "
        f"bytecode of every installed package) took {dev['wall_s']:.0f} s, {dev['cpu_s']:.0f} "
        f"CPU-s, and {dev_cached['wall_s']:.1f} s once done, {_where(rec, dev)}."
    )


def fill_readmes(rec: dict[str, Any], root: Path = ROOT) -> list[Path]:
    written = []
    for rel, which in READMES.items():
        path = root / rel
        path.write_text(fill_block(path.read_text(encoding="utf-8"), BLOCK, sentence(rec, which)))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, help="write the recorded times (JSON) here")
    ap.add_argument("--transcript", type=Path, help="write the first demo run's output here")
    ap.add_argument("--empty-compile-cache", action="store_true")
    ap.add_argument(
        "--readme", type=Path, metavar="TIMES_JSON", help="fill the READMEs from this record"
    )
    args = ap.parse_args(argv)
    if args.readme:
        rec = json.loads(args.readme.read_text(encoding="utf-8"))
        for path in fill_readmes(rec):
            print(f"{path.relative_to(ROOT)}: numbers from {args.readme}")
        return 0
    if not args.out:
        ap.error("give --out FILE to record a run, or --readme FILE to fill the READMEs")
    rec = record(args.empty_compile_cache)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    if args.transcript:
        args.transcript.write_text(transcript(rec), encoding="utf-8")
    print(f"{args.out}: recorded", file=sys.stderr)
    for what in short_of_the_bar(rec) + silent_past_the_bar(rec):
        print(f"short of a newcomer's bar: {what}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
