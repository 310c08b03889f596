"""``kernel-review bench`` from two trees of the bot, side by side in one call: what a change
to the bot did to a run's whole cost, with do_bench's whole cost beside it.

    python3 bench/cost_side_by_side.py --old DIR --out DIR [--repeats 4] [--tolerances t1,t3]
        [--also "LABEL=--some-option"]

``--old`` is another copy of this repository's ``bot/`` and ``checks/`` (for example
``git archive <commit> bot checks | tar -x -C DIR``); the new tree is this one. ``--also`` adds
an arm: this tree with more ``bench`` options (for example ``"no zygote=--no-zygote"``), to
tell one change's share of the difference. Both run the
identical-head repository of ``bench/cli_decision.py`` (its own kernels, served shapes near 5 us,
30 us, 300 us and 2 ms plus the added small and ragged ones) as a fresh ``python -m bot bench``
each time, in alternating order, ``--repeats`` times per tolerance. The cost is the command's
wall time from its launch to its exit over its verdicts (all in: Python's start, the workers,
every check, the timing, the wrap-up); the run's own results file says where it went.
``do_bench`` at its defaults runs in a fresh process twice (import, inputs, check, both calls
per served shape) for the comparison. Writes ``side_by_side.json`` and ``results.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cli_decision as cd  # noqa: E402
from side_by_side import alternate  # noqa: E402

PHASES = ("check", "prepare", "estimate", "configure", "rewarm", "rounds", "finish")


def one_run(
    tree: Path,
    repo: Path,
    tol: str,
    head: str,
    out: Path,
    device: str = "cuda",
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One ``bench`` command from ``tree`` (with ``extra`` options): its wall time, verdicts
    and where the time went."""
    got = cd.run_cli(
        ["-m", "bot", *cd.bench_args(repo, f"base-{tol}", head, out, device), *extra],
        timeout_s=180,
        cwd=tree,
    )
    row: dict[str, Any] = {"wall_s": round(got["wall_s"], 3), "rc": got["rc"]}
    row["first_verdict_s"] = got["first_verdict_s"]
    if not out.exists():
        row["error"] = " | ".join(got["stderr_tail"][-3:])
        return row
    data = json.loads(out.read_text(encoding="utf-8"))
    ok = [c for c in data["cases"] if c["status"] == "ok"]
    row["verdicts"] = len(ok)
    row["counts"] = dict(cd._count(c.get("verdict") for c in ok))
    row["all_in_per_verdict_s"] = round(got["wall_s"] / len(ok), 4) if ok else None
    row["held_s"] = data.get("held_gpu_seconds")
    row["startup_s"] = data.get("startup_s")
    row["wrapup_s"] = data.get("wrapup_s", {})
    row["start_marks_s"] = data.get("start_marks_s") or {}  # trees before 99bb258 have none
    row["phases_s"] = {
        p: round(sum((c.get("phase_s") or {}).get(p, 0.0) for c in data["cases"]), 4)
        for p in PHASES
    }
    row["case_s_median"] = statistics.median(c["gpu_seconds"] for c in ok) if ok else None
    row["not_same"] = [
        {k: c.get(k) for k in ("kernel", "shape", "verdict", "ratio", "ci_low", "ci_high")}
        for c in ok
        if c.get("verdict") != "SAME"
    ]
    return row


# each run's seconds per step, by part of the run (the results file's keys)
STEP_PARTS = ("startup_s", "start_marks_s", "wrapup_s")
PART_LABELS = {
    "startup_s": "startup",
    "start_marks_s": "inside the start (slowest worker, from its launch)",
    "phases_s": "phases",
    "wrapup_s": "wrapup",
}


def _medians(rows: list[dict[str, Any]], part: str) -> dict[str, float]:
    """The median of each step of ``part`` over ``rows`` (0 where a run lacks the step)."""
    steps = sorted({k for r in rows for k in r.get(part, {})})
    return {k: statistics.median(r.get(part, {}).get(k, 0.0) for r in rows) for k in steps}


def summarize(
    runs: dict[str, list[dict[str, Any]]], dobench: list[dict[str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, rows in runs.items():
        good = [r for r in rows if r.get("verdicts")]

        def med(key: str, good: list[dict[str, Any]] = good) -> Any:
            return statistics.median(r[key] for r in good) if good else None

        out[name] = {
            "runs": len(rows),
            "failed": len(rows) - len(good),
            "all_in_per_verdict_s_median": med("all_in_per_verdict_s"),
            "wall_s_median": med("wall_s"),
            "case_s_median": med("case_s_median"),
            "first_verdict_s_median": statistics.median(
                r["first_verdict_s"] for r in good if r.get("first_verdict_s")
            )
            if good
            else None,
            "verdicts": sum(r["verdicts"] for r in good),
            "not_same": sum(len(r["not_same"]) for r in good),
            "phases_s_median": {
                p: statistics.median(r["phases_s"][p] for r in good) for p in PHASES
            }
            if good
            else {},
            **{f"{part}_median": _medians(good, part) for part in STEP_PARTS},
        }
    per_pair, kept, empty = cd.all_in_per_pair(dobench)
    out["dobench_all_in_per_pair_s_median"] = statistics.median(per_pair) if per_pair else None
    out["dobench_all_in_per_pair_s"] = per_pair
    out["dobench_all_in_bytecode_kept_per_pair_s_median"] = (
        statistics.median(kept) if kept else None
    )
    out["dobench_all_in_bytecode_kept_per_pair_s"] = kept
    out["dobench_all_in_empty_cache_per_pair_s_median"] = (
        statistics.median(empty) if empty else None
    )
    out["dobench_all_in_empty_cache_per_pair_s"] = empty
    return out


def markdown(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    arms = list(meta["arms"])
    rows = [
        "# `kernel-review bench` from two trees of the bot, side by side (identical head)",
        "",
        f"Recorded {meta['date']} on {meta['machine']}; {meta['versions']}. "
        + "; ".join(f"{arm}: {label}" for arm, label in meta["arms"].items())
        + f". Made by `bench/cost_side_by_side.py`, {meta['repeats']} runs per arm and "
        "tolerance, in alternating order." + cd.bytecode_said(meta),
        "",
        "| | " + " | ".join(arms) + " |",
        "|---|" + "---|" * len(arms),
    ]

    def num(x: Any, digits: int = 3) -> str:
        return "-" if x is None else f"{x:.{digits}g}" if isinstance(x, float) else str(x)

    def row(label: str, cells: list[str]) -> None:
        rows.append(f"| {label} | " + " | ".join(cells) + " |")

    for label, key in (
        (
            "all-in GPU-s per verdict (command wall / verdicts), median",
            "all_in_per_verdict_s_median",
        ),
        ("command wall, median s", "wall_s_median"),
        ("first verdict after the command's launch, median s", "first_verdict_s_median"),
        ("per case, median s", "case_s_median"),
    ):
        row(label, [num(summary[a][key]) for a in arms])
    row(
        "verdicts (not SAME)",
        [f"{summary[a]['verdicts']} ({summary[a]['not_same']})" for a in arms],
    )
    for part in ("startup_s", "start_marks_s", "phases_s", "wrapup_s"):
        medians = [summary[a].get(f"{part}_median", {}) for a in arms]
        for k in sorted({k for m in medians for k in m}):
            row(f"{PART_LABELS[part]}: {k}, median s", [num(m.get(k)) for m in medians])
    rows += [
        "",
        f"do_bench at its defaults, all in (a fresh process: import, inputs, check, both calls), "
        f"per served shape: median {num(summary['dobench_all_in_per_pair_s_median'])} s "
        f"({', '.join(num(x) for x in summary['dobench_all_in_per_pair_s'])}); its Python keeping "
        f"torch's bytecode (the runs after the one that wrote it): median "
        f"{num(summary.get('dobench_all_in_bytecode_kept_per_pair_s_median'))} s "
        f"({', '.join(num(x) for x in summary.get('dobench_all_in_bytecode_kept_per_pair_s') or [])}); "
        f"bytecode kept and an empty Triton cache (as the sweep starts each side): median "
        f"{num(summary.get('dobench_all_in_empty_cache_per_pair_s_median'))} s "
        f"({', '.join(num(x) for x in summary.get('dobench_all_in_empty_cache_per_pair_s') or [])}).",
        "",
    ]
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--old", required=True, help="a folder with the old tree's bot/ and checks/")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--tolerances", default="t1,t3")
    ap.add_argument("--old-label", default="old tree")
    ap.add_argument("--new-label", default="this tree")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: plumbing only")
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="LABEL=OPTIONS",
        help="an arm running this tree with more bench options (space-separated)",
    )
    cd.add_bot_bytecode_option(ap)
    args = ap.parse_args()
    shapes = cd.SHAPES_CPU if args.device == "cpu" else cd.SHAPES_GPU
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    installed = cd.bot_bytecode(args.bot_bytecode, (ROOT, Path(args.old).resolve()))
    cd.log(f"the bot's bytecode: {installed}")
    work = Path(tempfile.mkdtemp(prefix="cost-sbs-"))
    repo = cd.build_repo(work / "repo", shapes)
    arms: dict[str, tuple[Path, tuple[str, ...]]] = {
        "old": (Path(args.old).resolve(), ()),
        "new": (ROOT, ()),
    }
    labels = {"old": args.old_label, "new": args.new_label}
    for also in args.also:
        label, sep, options = also.partition("=")
        if not sep or not label.strip():
            ap.error(f"--also {also!r}: give LABEL=OPTIONS, like 'no zygote=--no-zygote'")
        arms[label.strip()] = (ROOT, tuple(options.split()))
        labels[label.strip()] = f"{args.new_label} with {options.strip() or 'no more options'}"
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    for tol in args.tolerances.split(","):
        head = cd.make_head(repo, f"base-{tol}", f"aa-{tol}", {}, "comment-only change")

        seen = {name: 0 for name in runs}  # runs so far of each tree at this tolerance

        def run(name: str, tol: str = tol, head: str = head, seen: dict[str, int] = seen) -> Any:
            i = seen[name]
            seen[name] += 1
            got = work / f"{name}-{tol}-{i}.json"
            tree, extra = arms[name]
            row = one_run(tree, repo, tol, head, got, args.device, extra)
            row.update(tolerance=tol, order=i)
            cd.log(
                f"{name} {tol} #{i}: {row.get('verdicts')} verdicts {row.get('counts')}, "
                f"wall {row['wall_s']:.1f} s, all-in {row.get('all_in_per_verdict_s')}"
            )
            return row

        got = alternate({name: functools.partial(run, name) for name in runs}, args.repeats)
        for name, rows in got.items():
            runs[name] += rows
    dobench: list[dict[str, Any]] = []
    if args.device == "cuda":
        dobench = [cd.dobench_all_in(repo, shapes) for _ in range(2)]
        # and once its Python kept torch's bytecode: the first of these writes it
        dobench += cd.dobench_all_in_kept(
            repo, shapes, cd.KEPT_RUNS, lambda: True, empty_cache_runs=cd.EMPTY_CACHE_RUNS
        )
    summary = summarize(runs, dobench)
    import torch
    import triton

    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU",
        "versions": f"torch {torch.__version__}, Triton {triton.__version__}, Python {sys.version.split()[0]}",
        "arms": labels,
        "repeats": args.repeats,
        **installed,
    }
    (out / "side_by_side.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "runs": runs, "dobench": dobench}, indent=1),
        encoding="utf-8",
    )
    text = markdown(summary, meta)
    (out / "results.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
