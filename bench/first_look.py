"""The first-look score: detection on a batch of labelled pull requests it has never seen.

    python bench/first_look.py batch1            # scores the cases whose case.toml says
                                                 # first_look = "batch1", adds the batch to
                                                 # bench/results/detection/first_look.json
    python bench/first_look.py batch1 --print    # the same numbers, nothing written

A batch is scored once, when its cases enter the corpus and before any rule is changed for them:
that number says how well the rules generalise. The record is kept as it was (a batch already in
the file is not replaced unless ``--replace`` is given), so later fixes show in the corpus table
(``bench/detection_score.py``), never by rewriting a first look. Scoring is the corpus scorer's,
per check, in repo mode (the mode the corpus table's targets are set on) and in diff mode; a wrong
check's ``why`` is its reason in ``detection_score.KNOWN_MISSES``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_score import KNOWN_MISSES, MODES, RESULTS, Check, run
from real_prs import Case, load_cases

RECORD = RESULTS / "first_look.json"


def batch_cases(batch: str, cases: list[Case]) -> list[Case]:
    """The cases whose ``case.toml`` names ``batch`` as their first look."""
    return [c for c in cases if c.meta.get("first_look") == batch]


ISSUE_CLASSES = {
    "1": "extension modules built anywhere",
    "2": "C++ device helpers",
    "3": "what a Triton kernel reads besides its body",
    "4": "conditions around launches across files",
    "5": "toolchain pins wherever they live",
    "6": "host-side classes of kernel DSLs",
}
_ISSUE_CLASS = re.compile(r"class (\d)\b")


def issue_classes(wrong: list[Check]) -> dict[str, int]:
    """Wrong checks per failure class of issue 42, read from the start of each check's reason
    in ``KNOWN_MISSES`` ("class 3: ...", "class 1 (and 5): ..."); any other reason, or none, is
    "anything else"."""
    out = {f"{n}. {name}": 0 for n, name in ISSUE_CLASSES.items()} | {"anything else": 0}
    for c in wrong:
        found = _ISSUE_CLASS.match(KNOWN_MISSES.get((c.case, c.check), ""))
        n = found.group(1) if found else None
        out[f"{n}. {ISSUE_CLASSES[n]}" if n in ISSUE_CLASSES else "anything else"] += 1
    return out


def _recognised(case: Case, checks: list[Check]) -> bool:
    """Every kernel labelled a rewrite is reported, as a rewrite."""
    mine = {c.check: c for c in checks if c.case == case.name}
    rows = [r["kernel"] for r in case.expect if r["kind"] == "rewrite"]
    return all(
        mine.get(f"{k}: reported") is not None
        and mine[f"{k}: reported"].right
        and mine.get(f"{k}: kind") is not None
        and mine[f"{k}: kind"].right
        for k in rows
    )


def score(batch: str, cases: list[Case], checks: list[Check], mode: str) -> dict[str, Any]:
    """One mode's numbers for a batch."""
    mine = [c for c in checks if c.mode == mode]
    by_class: dict[str, dict[str, int]] = {}
    for c in mine:
        for cls in c.classes or ("(none)",):
            tally = by_class.setdefault(cls, {"right": 0, "checks": 0})
            tally["right"] += c.right
            tally["checks"] += 1
    rewrites = [c for c in cases if any(r["kind"] == "rewrite" for r in c.expect)]
    wrong = [c for c in mine if not c.right]
    out: dict[str, Any] = {
        "checks": len(mine),
        "right": sum(c.right for c in mine),
        "share": round(sum(c.right for c in mine) / len(mine), 4) if mine else None,
        "rewrites": len(rewrites),
        "rewrites_recognised": sum(_recognised(c, mine) for c in rewrites),
        "negatives_with_invented_kernels": sorted(
            c.case for c in mine if c.check == "invented kernels" and not c.right
        ),
        "by_class": dict(sorted(by_class.items())),
        **({"wrong_by_issue_class": issue_classes(wrong)} if mode == "repo" else {}),
        "wrong": [
            {
                "case": c.case,
                "check": c.check,
                "expected": c.expected,
                "got": c.got,
                **({"why": KNOWN_MISSES.get((c.case, c.check), "")} if mode == "repo" else {}),
            }
            for c in wrong
        ],
    }
    return out


def record(batch: str, cases: list[Case], checks: list[Check], date: str) -> dict[str, Any]:
    """A batch's entry: repo mode at the top level (as the corpus table is scored), diff mode
    beside it."""
    repo = score(batch, cases, checks, "repo")
    return {
        "name": batch,
        "date": date,
        "cases": len(cases),
        "case_names": [c.name for c in cases],
        "repos": sorted({str(c.meta["repo"]) for c in cases}),
        "mode": "repo",
        **repo,
        "diff": {k: v for k, v in score(batch, cases, checks, "diff").items() if k != "by_class"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("batch", help='the batch name the cases carry (first_look = "...")')
    parser.add_argument("--out", type=Path, default=RECORD, help="the record to add the batch to")
    parser.add_argument("--print", action="store_true", help="print the numbers, write nothing")
    parser.add_argument(
        "--replace", action="store_true", help="replace the batch if the record has it already"
    )
    args = parser.parse_args(argv)
    cases = batch_cases(args.batch, load_cases())
    if not cases:
        parser.error(
            f"no case names the batch {args.batch!r}: add first_look = {args.batch!r} to the "
            "case.toml of each new case (tests/data/real_prs/<case>/case.toml)"
        )
    existing: dict[str, Any] = {"batches": []}
    if args.out.is_file():
        existing = json.loads(args.out.read_text(encoding="utf-8"))
    names = [b["name"] for b in existing["batches"]]
    if args.batch in names and not (args.replace or args.print):
        parser.error(
            f"{args.out} already holds the first look of {args.batch!r}; a first look is "
            "recorded once (pass --replace only to correct a record made in error)"
        )
    checks = run(cases)["checks"]
    entry = record(args.batch, cases, checks, datetime.date.today().isoformat())
    for mode in MODES:
        m = entry if mode == "repo" else entry["diff"]
        print(
            f"{args.batch} {mode}: {m['right']}/{m['checks']} ({m['share']:.1%}); rewrites "
            f"recognised {m['rewrites_recognised']}/{m['rewrites']}; negatives with invented "
            f"kernels {len(m['negatives_with_invented_kernels'])}"
        )
    if args.print:
        for w in entry["wrong"]:
            print(f"  {w['case']}: {w['check']}: expected {w['expected']}, got {w['got']}")
        return 0
    batches = [b for b in existing["batches"] if b["name"] != args.batch] + [entry]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"batches": batches}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
