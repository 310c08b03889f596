"""The measure job of the fixture pull request, run on this machine's GPU, as a results file.

    python bench/fixture_review_gpu.py --out bench/results/h200/fixture_review
    python bench/fixture_review_gpu.py --out /tmp/fixture-in-turn --in-turn
    python bench/fixture_review_gpu.py --out bench/results/h200/fixture_review --checks first_call --update
    python bench/fixture_review_gpu.py --out bench/results/h200/fixture_review --checks compiler \
        --update --vendor nvidia --resweep
    kernel-review demo --results bench/results/h200/fixture_review/results-nvidia.json

It builds the fixture repository (``kernels_fixture.build_repo``, whose commits have fixed SHAs),
plans the review as the gate job would (the policy from the base commit), and runs that plan
through ``checks.measure.measure_plan``, the code behind ``kernel-review job measure``:
the shape sweep of base against head, the first call in fresh processes, and the compiler report.
By default the plan runs whole in one measure job, as a GPU runner's job runs it (the compiler
report alongside the GPU checks), and ``run.md`` keeps the job's log with the time of each line
as it goes. ``--checks`` runs the checks named one at a time instead, each in a measure job of
its own, and rewrites the results file after each, so a time limit keeps what finished. The
results file is what a GPU runner hands the report job; ``kernel-review demo --results``
renders the review with it. The sweep's raw rounds go beside it (``sweep-*.json``),
and ``run.md`` says when, where and how long. ``--update`` re-runs some checks and keeps the
others' evidence from the results file already there (same head), appending to ``run.md``.
The compiler report cross-compiles and needs no GPU: ``--vendor`` names the runner's vendor on a
machine without one (only ``compiler`` can run there). ``--resweep`` rebuilds the sweep's
evidence from the raw rounds beside the results (``sweep-<vendor>-*.json``) with the current
reduction, measuring nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.contracts.evidence import Evidence  # noqa: E402
from bot.contracts.results import ResultsFile  # noqa: E402
from bot.review.local import ReviewInputs, gpu_vendor, static_review  # noqa: E402
from checks.measure import measure_plan  # noqa: E402
from checks.sweep.evidence import to_evidence  # noqa: E402
from checks.sweep.models import SweepResult  # noqa: E402
from kernels_fixture.build_repo import build_fixture_repo  # noqa: E402

STAGES = (("sweep",), ("first_call",), ("compiler",))


def _without(evidence: Evidence, checks: list[str]) -> Evidence:
    """``evidence`` less what the given checks produced (their results and their not-runs)."""
    return Evidence(
        sweeps=() if "sweep" in checks else evidence.sweeps,
        first_calls=() if "first_call" in checks else evidence.first_calls,
        compiler=None if "compiler" in checks else evidence.compiler,
        not_run=tuple(n for n in evidence.not_run if n.check not in checks),
    )


def _environment() -> str:
    import torch
    import triton

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{name}; torch {torch.__version__}, Triton {triton.__version__}, Python {sys.version.split()[0]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the results file")
    ap.add_argument(
        "--checks",
        help="run these of the plan's checks one at a time, in order, each in a measure job of "
        "its own (default: the whole plan in one measure job, as a GPU runner runs it)",
    )
    ap.add_argument(
        "--in-turn",
        action="store_true",
        help="run every check in its turn, the compiler report too (default: the compiler "
        "report alongside the GPU checks, as a runner's job runs it)",
    )
    ap.add_argument(
        "--update",
        action="store_true",
        help="keep the evidence of the checks not run now from the results file in --out",
    )
    ap.add_argument(
        "--vendor",
        choices=("nvidia", "amd"),
        help="the results file's vendor where this machine has no GPU (compiler check only)",
    )
    ap.add_argument(
        "--resweep",
        action="store_true",
        help="with --update: rebuild the sweep evidence from the raw sweep-<vendor>-*.json in --out",
    )
    args = ap.parse_args(argv)
    whole = args.checks is None
    if whole and args.update:
        print(
            "fixture_review_gpu: --update needs --checks (which checks to re-run)", file=sys.stderr
        )
        return 2
    wanted = [c.strip() for c in (args.checks or ",".join(s[0] for s in STAGES)).split(",")]
    wanted = [c for c in wanted if c]
    here = gpu_vendor()
    vendor = here or args.vendor
    if vendor is None or (here is None and set(wanted) - {"compiler"}):
        print(
            "fixture_review_gpu: no usable GPU here; run it on a GPU runner "
            "(or only --checks compiler with --vendor, which cross-compiles)",
            file=sys.stderr,
        )
        return 2
    unknown = sorted(set(wanted) - {s[0] for s in STAGES})
    if unknown:
        print(
            f"fixture_review_gpu: unknown checks {unknown}; choose from sweep, first_call, compiler",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / f"results-{vendor}.json"
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    run_md = args.out / "run.md"
    if args.update and run_md.is_file():
        log = [*run_md.read_text(encoding="utf-8").rstrip().splitlines(), ""]
        log += [f"Updated {started} on {_environment()}: {', '.join(wanted)} re-run.", ""]
    else:
        log = [f"# The fixture pull request's measure job on {_environment()}", ""]
        log += [f"Started {started}.", ""]

    t_start = time.perf_counter()

    def progress(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:7.1f} s] {msg}"
        print(line, file=sys.stderr, flush=True)
        if whole:  # the job's log, kept as it goes: a time limit keeps what was reached
            log.append(f"    {line}")
            run_md.write_text("\n".join(log) + "\n", encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="fixture-review-") as tmp:
        fixture = build_fixture_repo(Path(tmp) / "toyops")
        static = static_review(
            ReviewInputs(
                repo=Path(fixture.path),
                base_sha=fixture.base_sha,
                head_sha=fixture.head_sha,
            )
        )
        plan = static.plan
        evidence = Evidence()
        if args.update and results_path.is_file():
            before = ResultsFile.model_validate_json(results_path.read_text(encoding="utf-8"))
            if before.head_sha != plan.head_sha:
                print(
                    f"fixture_review_gpu: {results_path} is for head {before.head_sha[:12]}, "
                    f"not the fixture's {plan.head_sha[:12]}; run without --update",
                    file=sys.stderr,
                )
                return 2
            evidence = _without(before.evidence, wanted)
            raw = sorted(args.out.glob(f"sweep-{vendor}-*.json"))
            if args.resweep and raw:
                sweeps = tuple(
                    to_evidence(SweepResult.model_validate_json(f.read_text()), vendor=vendor)
                    for f in raw
                )
                evidence = evidence.model_copy(update={"sweeps": sweeps})
                log.append(f"- sweep evidence rebuilt from {', '.join(f.name for f in raw)}")
        else:
            log.append(
                f"Plan: base {plan.base_sha[:12]}, head {plan.head_sha[:12]}, kernels "
                f"{', '.join(k.name for k in plan.kernels)}, checks {', '.join(plan.checks)}."
            )
            log.append("")
        if whole:
            how = "every check in its turn" if args.in_turn else "as a GPU runner's job runs them"
            log += [f"The plan's checks in one measure job, {how}:", ""]
        # the whole plan in one job, or the checks named, one job each
        stages = [plan.checks] if whole else [(c,) for c in wanted]
        for checks in stages:
            skipped = [c for c in checks if c not in plan.checks]
            log += [f"- {c}: not in the plan, skipped" for c in skipped]
            if skipped:
                continue
            t0 = time.perf_counter()
            got = measure_plan(
                plan.model_copy(update={"checks": tuple(checks)}),
                vendor=vendor,
                repo_root=Path(fixture.path),
                details_dir=args.out,
                progress=progress,
                alongside=not args.in_turn,
            )
            evidence = evidence.merge(got)
            results = ResultsFile(
                head_sha=plan.head_sha, base_sha=plan.base_sha, vendor=vendor, evidence=evidence
            )
            results_path.write_text(results.model_dump_json(indent=1), encoding="utf-8")
            missed = [n.reason for n in got.not_run]
            what = "measure job" if whole else checks[0]
            if whole:
                log.append("")  # after the job's log
            log.append(
                f"- {what}: {time.perf_counter() - t0:.1f} s"
                + (f"; not run: {'; '.join(missed)}" if missed else "")
            )
            run_md.write_text("\n".join(log) + "\n", encoding="utf-8")
    print(f"results: {results_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
