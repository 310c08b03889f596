"""Where the wall time of one ``kernel-review bench`` run goes, command by command: every call
the bot makes to a worker (which worker, which command, when it was sent and answered) and every
step of every case, on one clock, and the gaps in which no worker had a command at all.

    PYTHONPATH=.:/tmp/site python3 bench/timeline.py --out DIR [--runs 2] [--tolerance t1]
        [--device cpu] [-- BENCH OPTIONS]

Each run is a fresh Python process that runs the bot's command line in-process, with
``WorkerClient.call`` and ``pair_runner.timed`` wrapped to record: nothing else changes. The
repository is ``bench/cli_decision.py``'s, with its identical head. The run's clock starts
before the tracing imports the sweep's modules (pydantic among them), which ``kernel-review
bench`` itself imports only after it started the zygote: the zygote's marks here are that much
later than in an untraced run. Writes ``timeline-<i>.json``
(the events) and ``timeline.md`` (per run: the time until the first command, the busiest
commands, the time in which no worker had a command, and per case each step's wall time).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


import cli_decision as cd  # noqa: E402

DRIVER = r"""
import json, sys, time
t_start = time.monotonic()
from checks.sweep import pair_runner, workers
events = []
call = workers.WorkerClient.call
def traced(self, request, *, timeout):
    from checks.worker import contract
    op, t0 = request.OP, time.monotonic()
    out = None
    try:
        out = call(self, request, timeout=timeout)
        return out
    finally:
        steps = getattr(out, "steps_s", None)
        marks = getattr(out, "marks", None)
        marks = contract.as_json(marks) if marks is not None else None
        timed = {k: getattr(out, k, None) for k in ("wall_ms", "gpu_ms")} if out else {}
        events.append({"w": self.spec.name, "op": op, "t0": t0, "t1": time.monotonic(),
                       "ok": out is not None, "steps": steps, "marks": marks, **timed})
workers.WorkerClient.call = traced
timed = pair_runner.timed
import contextlib
@contextlib.contextmanager
def step(into, name):
    t0 = time.monotonic()
    try:
        with timed(into, name):
            yield
    finally:
        events.append({"step": name, "t0": t0, "t1": time.monotonic()})
pair_runner.timed = step
from checks.sweep import precompile
run_helper = precompile.Precompile._run
def traced_helper(self, job):
    t0 = time.monotonic()
    try:
        return run_helper(self, job)
    finally:
        answer = self.answers.get(job.label, {})
        events.append({"helper": job.label, "t0": t0, "t1": time.monotonic(),
                       "first_case_s": answer.get("first_case_s"), "record_s": answer.get("record_s"),
                       "seconds": answer.get("seconds")})
precompile.Precompile._run = traced_helper
from checks.sweep import zygote
fork, fork_job = zygote.Zygote.fork, zygote.Zygote.fork_job
def traced_fork(self, *a, **k):
    t0 = time.monotonic()
    try:
        return fork(self, *a, **k)
    finally:
        events.append({"zygote": dict(self.marks), "bytecode": self.bytecode, "fork": "worker", "t0": t0, "t1": time.monotonic()})
def traced_fork_job(self, *a, **k):
    t0 = time.monotonic()
    try:
        return fork_job(self, *a, **k)
    finally:
        events.append({"fork": "helper", "t0": t0, "t1": time.monotonic()})
zygote.Zygote.fork, zygote.Zygote.fork_job = traced_fork, traced_fork_job
from bot.cli import main
rc = main(sys.argv[2:])
t_end = time.monotonic()
with open(sys.argv[1], "w") as f:
    json.dump({"rc": rc, "start": t_start, "end": t_end, "events": events}, f)
"""


def run_once(repo: Path, tol: str, head: str, out: Path, device: str, extra: list[str]) -> Path:
    """One traced run; the path of its events."""
    path = out.with_suffix(".json")
    results = out.with_name(out.stem + "-results.json")
    args = [*cd.bench_args(repo, f"base-{tol}", head, results, device), *extra]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    p = subprocess.run(
        [sys.executable, "-c", DRIVER, str(path), *args],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if p.returncode not in (0, 1) or not path.exists():
        raise SystemExit(f"the traced run failed ({p.returncode}): {p.stderr[-2000:]}")
    return path


def union(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of ``spans``."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def analyse(data: dict[str, Any]) -> dict[str, Any]:
    start, end = data["start"], data["end"]
    calls = [e for e in data["events"] if "op" in e]
    steps = [e for e in data["events"] if "step" in e]
    first = min((e["t0"] for e in calls), default=end)
    last = max((e["t1"] for e in calls), default=end)
    busy = union([(e["t0"], e["t1"]) for e in calls])
    by_op: dict[str, list[tuple[float, float]]] = {}
    for e in calls:
        by_op.setdefault(e["op"], []).append((e["t0"], e["t1"]))
    ops = {
        op: {
            "calls": len(s),
            "covered_s": round(union(s), 3),
            "summed_s": round(sum(b - a for a, b in s), 3),
        }
        for op, s in sorted(by_op.items(), key=lambda kv: -union(kv[1]))
    }
    # the gaps inside the sweep when no worker had a command: the bot's own time
    idle = (last - first) - busy
    blocks = sorted((e["t0"], e["t1"]) for e in calls if e["op"] == "block")
    between_blocks = [b0 - a1 for (_, a1), (b0, _) in itertools.pairwise(blocks) if b0 - a1 < 0.05]
    # each block as the bot saw it (sent to answered), as the worker did (``wall_ms``: its
    # replays or calls and the wait for them) and on the GPU (``gpu_ms``: first event to last)
    timed = [e for e in calls if e["op"] == "block" and e.get("wall_ms") is not None]
    block_ms = {
        "bot": [(e["t1"] - e["t0"]) * 1000 for e in timed],
        "worker": [float(e["wall_ms"]) for e in timed],
        "gpu": [float(e["gpu_ms"]) for e in timed if e.get("gpu_ms") is not None],
    }
    cases: list[dict[str, float]] = []
    current: dict[str, float] = {}
    for e in sorted(steps, key=lambda s: s["t0"]):
        if e["step"] == "check" and current:
            cases.append(current)
            current = {}
        if e["step"] in ("start", "env", "ceilings", "warmup"):
            continue
        current[e["step"]] = round(current.get(e["step"], 0.0) + e["t1"] - e["t0"], 4)
    if current:
        cases.append(current)
    # inside the workers: each step of a check or a recheck, summed over the run, and the
    # first check of each worker on its own (the first case's check is the longest)
    inside: dict[str, dict[str, float]] = {}
    first_checks: dict[str, dict[str, float]] = {}
    for e in sorted(calls, key=lambda c: c["t0"]):
        if not e.get("steps"):
            continue
        into = inside.setdefault(e["op"], {})
        for k, v in e["steps"].items():
            into[k] = round(into.get(k, 0.0) + v, 4)
        if e["op"] == "check":
            first_checks.setdefault(e["w"], e["steps"])
    # each worker's start, from the first check's marks (seconds after the run's start), and
    # each side's compiling ahead
    starts = {
        e["w"]: {
            k.removesuffix("_at"): round(v - start, 3)
            for k, v in sorted(e["marks"].items(), key=lambda kv: kv[1])
        }
        for e in calls
        if e.get("marks")
    }
    first_check_at = {
        e["w"]: round(e["t0"] - start, 3)
        for e in sorted(calls, key=lambda c: -c["t0"])
        if e["op"] == "check"
    }
    helpers = {
        e["helper"]: {
            "started": round(e["t0"] - start, 3),
            "ended": round(e["t1"] - start, 3),
            "first_case_s": e.get("first_case_s"),
            "record_s": e.get("record_s"),
            "seconds": e.get("seconds"),
        }
        for e in data["events"]
        if "helper" in e
    }
    zygote_marks = [e["zygote"] for e in data["events"] if "zygote" in e]
    zygote = (
        {
            k.removesuffix("_at"): round(v - start, 3)
            for k, v in sorted(zygote_marks[-1].items(), key=lambda kv: kv[1])
        }
        if zygote_marks
        else {}
    )
    bytecode = next((e["bytecode"] for e in data["events"] if e.get("bytecode")), "")
    forks = [
        (e["fork"], round(e["t0"] - start, 3), round(e["t1"] - start, 3))
        for e in sorted(data["events"], key=lambda e: e.get("t0", 0.0))
        if "fork" in e
    ]
    return {
        "rc": data["rc"],
        "zygote": zygote,
        "bytecode": bytecode,
        "forks": forks,
        "starts": starts,
        "first_check_at": first_check_at,
        "helpers": helpers,
        "wall_s": round(end - start, 3),
        "to_first_command_s": round(first - start, 3),
        "after_last_command_s": round(end - last, 3),
        "sweep_s": round(last - first, 3),
        "no_command_s": round(idle, 3),
        "between_blocks_ms_median": round(statistics.median(between_blocks) * 1000, 3)
        if between_blocks
        else None,
        "between_blocks_s": round(sum(between_blocks), 3),
        "block_ms": {
            k: {"median": round(statistics.median(v), 3), "sum_s": round(sum(v) / 1000, 3)}
            for k, v in block_ms.items()
            if v
        },
        "ops": ops,
        "cases": cases,
        "inside": inside,
        "first_checks": first_checks,
    }


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# Timeline of `kernel-review bench` ({meta['device']})", "", meta["note"], ""]
    for i, r in enumerate(rows):
        lines += [
            f"## Run {i + 1}: {r['wall_s']} s, rc {r['rc']}",
            "",
            f"- until the first worker command: {r['to_first_command_s']} s (Python's start to the "
            f"first `hello`; the zygote's and the workers' imports overlap it)",
            f"- first command to last answer: {r['sweep_s']} s, of which no worker had a command "
            f"for {r['no_command_s']} s (the bot's own time between commands); between timed blocks "
            f"{r['between_blocks_s']} s in all, median {r['between_blocks_ms_median']} ms",
            f"- after the last answer: {r['after_last_command_s']} s",
            "- each timed block, median ms (summed s): "
            + ", ".join(
                f"{who} {v['median']} ({v['sum_s']})" for who, v in r.get("block_ms", {}).items()
            )
            + " (the bot: sent to answered; the worker: its calls and the wait for them; the "
            "GPU: first event to last)",
            "",
            "| command | calls | wall covered s | summed over workers s |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {op} | {v['calls']} | {v['covered_s']} | {v['summed_s']} |"
            for op, v in r["ops"].items()
        ]
        for op, steps in r.get("inside", {}).items():
            lines += ["", f"Inside the workers, `{op}` summed over the run (s):", ""]
            lines += ["| " + " | ".join(steps) + " |", "|---" * len(steps) + "|"]
            lines += ["| " + " | ".join(str(v) for v in steps.values()) + " |"]
        if r.get("first_checks"):
            names = sorted({k for s in r["first_checks"].values() for k in s})
            lines += ["", "Each worker's first check (s):", ""]
            lines += ["| worker | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
            lines += [
                f"| {w} | " + " | ".join(str(s.get(k, "")) for k in names) + " |"
                for w, s in r["first_checks"].items()
            ]
        if r.get("zygote"):
            lines += [
                "",
                "The zygote, seconds after the run's start: "
                + ", ".join(f"{k} {v}" for k, v in r["zygote"].items())
                + (f" (torch's bytecode: {r['bytecode']})" if r.get("bytecode") else ""),
            ]
        if r.get("forks"):
            lines += [
                "",
                "Each fork the bot asked the zygote for, seconds after the run's start (asked, "
                "answered): " + ", ".join(f"{kind} {a}-{b}" for kind, a, b in r["forks"]),
            ]
        if r.get("starts"):
            lines += [
                "",
                "Each worker's start, seconds after the run's (from its first check's marks; "
                "`check`: when the bot sent that check):",
                "",
            ]
            lines += [
                f"- {w}: "
                + ", ".join(f"{k} {v}" for k, v in m.items())
                + f", check {r['first_check_at'].get(w, '')}"
                for w, m in r["starts"].items()
            ]
        if r.get("helpers"):
            lines += ["", "Compiling ahead, seconds after the run's start:", ""]
            lines += [
                f"- {h}: started {v['started']}, ended {v['ended']} (its own count: the first "
                f"case compiled {v['first_case_s']} s, all recorded {v['record_s']} s, in all "
                f"{v['seconds']} s)"
                for h, v in r["helpers"].items()
            ]
        keys = sorted({k for c in r["cases"] for k in c})
        lines += ["", "| case | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        lines += [
            f"| {j + 1} | " + " | ".join(str(c.get(k, "")) for k in keys) + " |"
            for j, c in enumerate(r["cases"])
        ]
        lines.append("")
    return "\n".join(lines)


def _machine() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--tolerance", default="t1", choices=sorted(cd.TOLERANCES))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    cd.add_bot_bytecode_option(parser)
    parser.add_argument("extra", nargs="*", help="more `bench` options, after --")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    installed = cd.bot_bytecode(args.bot_bytecode)
    shapes = cd.SHAPES_GPU if args.device == "cuda" else cd.SHAPES_CPU
    with tempfile.TemporaryDirectory(prefix="timeline-") as tmp:
        repo = cd.build_repo(Path(tmp) / "repo", shapes)
        head = cd.make_head(repo, f"base-{args.tolerance}", "aa", {}, "comment-only change")
        rows = []
        for i in range(args.runs):
            path = run_once(
                repo, args.tolerance, head, args.out / f"timeline-{i + 1}", args.device, args.extra
            )
            rows.append(analyse(json.loads(path.read_text(encoding="utf-8"))))
            print(
                f"run {i + 1}: {rows[-1]['wall_s']} s, no command {rows[-1]['no_command_s']} s",
                flush=True,
            )
    meta = {
        "device": _machine() if args.device == "cuda" else "CPU timing (plumbing only)",
        "note": f"Made by `bench/timeline.py`, tolerance {args.tolerance}, options {args.extra or 'none'}."
        + cd.bytecode_said(installed),
        **installed,
    }
    (args.out / "timeline.md").write_text(markdown(rows, meta), encoding="utf-8")
    (args.out / "timeline.json").write_text(
        json.dumps({"meta": meta, "runs": rows}, indent=1), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
