"""Does autotuning base and head side by side on one GPU move the verdicts? (one device call,
about 4 minutes)

    PYTHONPATH=.:/tmp/site python3 bench/first_call_alone.py --out DIR [--repeats 2]

The fixture's autotuned matmul (``kernels_fixture``, served shapes, bf16 and fp16) through
``python -m bot bench``: A/A (the Triton head against itself) and the fixture's pull request (the
base against the Triton head), each ``--repeats`` times with ``--first-call-alone`` (a case's
first call, where the kernel autotunes, holds the GPU alone) and with ``--no-first-call-alone``
(base and head autotune side by side, the old behaviour), runs interleaved. What differs between
repeats of one setting is the autotuner's pick: the head/base ratio of each case, across
repeats, says how much the pick moved the verdict. Writes ``first_call_alone.json`` and
``first_call_alone.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SETTINGS = {"alone": "--first-call-alone", "side-by-side": "--no-first-call-alone"}
PAIRS = {"A/A": ("triton-rewrite", "triton-rewrite"), "PR": ("main", "triton-rewrite")}


def run(repo: Path, base: str, head: str, flag: str, out: Path) -> dict[str, Any]:
    import cli_decision as cd

    r = cd.run_cli(
        ["-m", "bot", "bench", "--repo", str(repo), "--base", base, "--head", head,
         "--kernels", "matmul", "--no-added-shapes", flag, "--out", str(out)],
        timeout_s=150,
    )  # fmt: skip
    got: dict[str, Any] = {"wall_s": round(r["wall_s"], 2), "rc": r["rc"], "cases": {}}
    if out.is_file():
        d = json.loads(out.read_text(encoding="utf-8"))
        got["held_gpu_s"] = d.get("held_gpu_seconds")
        for c in d["cases"]:
            key = f"{c['dtype']} {'x'.join(map(str, c['shape']))}"
            got["cases"][key] = {"verdict": c.get("verdict"), "ratio": c.get("ratio")}
    return got


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pair, setting and case: the verdicts and the spread of head/base over the repeats."""
    out: dict[str, Any] = {}
    for pair in PAIRS:
        for setting in SETTINGS:
            mine = [r for r in runs if r["pair"] == pair and r["setting"] == setting]
            cases: dict[str, Any] = {}
            for key in sorted({k for r in mine for k in r["cases"]}):
                ratios = [
                    r["cases"][key]["ratio"] for r in mine if r["cases"].get(key, {}).get("ratio")
                ]
                verdicts = [r["cases"][key]["verdict"] for r in mine if key in r["cases"]]
                cases[key] = {
                    "ratios": [round(x, 4) for x in ratios],
                    "spread": round(max(ratios) / min(ratios), 4) if ratios else None,
                    "verdicts": verdicts,
                }
            spreads = [c["spread"] for c in cases.values() if c["spread"]]
            aa_not_same = sum(v != "SAME" for c in cases.values() for v in c["verdicts"])
            out[f"{pair} {setting}"] = {
                "runs": len(mine),
                "wall_s": [r["wall_s"] for r in mine],
                "held_gpu_s": [r.get("held_gpu_s") for r in mine],
                "max_spread": max(spreads) if spreads else None,
                "geomean_spread": math.exp(sum(map(math.log, spreads)) / len(spreads))
                if spreads
                else None,
                "not_same": aa_not_same if pair == "A/A" else None,
                "cases": cases,
            }
    return out


def markdown(summary: dict[str, Any]) -> str:
    rows = [
        "# Autotuning alone or side by side: the fixture's matmul through `kernel-review bench`",
        "",
        "| pair, setting | runs | wall s | largest spread of head/base over repeats | geomean spread | A/A not SAME |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        rows.append(
            f"| {name} | {s['runs']} | {', '.join(f'{w:.0f}' for w in s['wall_s'])} | "
            f"{s['max_spread']} | {s['geomean_spread'] and round(s['geomean_spread'], 4)} | "
            f"{'-' if s['not_same'] is None else s['not_same']} |"
        )
    rows.append("")
    for name, s in summary.items():
        rows.append(f"## {name}")
        rows += [f"- {k}: {c['ratios']} {c['verdicts']}" for k, c in s["cases"].items()]
        rows.append("")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="first-call-alone-"))
    repo = work / "fixture"
    subprocess.run(
        [sys.executable, "-m", "kernels_fixture.build_repo", str(repo)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    runs = []
    for i in range(args.repeats):
        for pair, (base, head) in PAIRS.items():
            for setting, flag in SETTINGS.items():
                name = f"{pair.replace('/', '')}-{setting}-{i}.json"
                got = run(repo, base, head, flag, work / name)
                runs.append({"pair": pair, "setting": setting, "repeat": i, **got})
                print(f"{pair} {setting} {i}: {got['wall_s']} s", file=sys.stderr, flush=True)
                summary = summarize(runs)
                (out / "first_call_alone.json").write_text(
                    json.dumps({"runs": runs, "summary": summary}, indent=1), encoding="utf-8"
                )
                (out / "first_call_alone.md").write_text(markdown(summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
