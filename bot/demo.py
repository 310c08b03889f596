"""``kernel-review demo``: review the bundled fixture's kernel rewrites, as far as this machine allows.

Builds the fixture repository (a base commit calling hand-written CUDA/HIP kernels, a head commit
with the Triton rewrite) in a temporary folder and runs the same pipeline as a pull request:
policy from the base commit, kernel changes in the diff, the repository conditions at head, the
compiler report where Triton can cross-compile, and the verdict. Measurements that need a GPU
are reported as not run, with the reason, never invented.

``--results FILE`` adds what a GPU runner measured on the same fixture (the results file of the
measure job; ``bench/fixture_review_gpu.py`` writes one, and one recorded on an NVIDIA H200 is in
``bench/results/h200/fixture_review/``). The fixture's commits have fixed SHAs, so a file
measured for its head on any machine applies; one for another head is refused.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bot.contracts.evidence import Evidence
from bot.errors import ResultsError
from bot.github.sticky import fit_body
from bot.review.local import CompilerReport, ReviewInputs, static_review


def register(sub: argparse._SubParsersAction, *, compiler_report: CompilerReport) -> None:
    """Add ``demo``; ``compiler_report`` compiles the fixture's changed kernels (the command
    line passes ``checks.compiler``'s, imported when it runs)."""
    p = sub.add_parser(
        "demo",
        help="review the bundled fixture's kernel rewrites and print the review",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--keep", metavar="DIR", type=Path, help="build the fixture repository in DIR and keep it"
    )
    p.add_argument(
        "--out", metavar="FILE", type=Path, help="also write the review markdown to FILE"
    )
    p.add_argument(
        "--no-compile",
        action="store_true",
        help="skip the compiler report (cross-compiling every config takes a while on a cold cache)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the verdict as JSON instead of markdown"
    )
    p.add_argument(
        "--results",
        metavar="FILE",
        type=Path,
        action="append",
        default=[],
        help="a GPU runner's results file for the fixture's head (repeat for more vendors)",
    )
    p.set_defaults(handler=run, compiler_report=compiler_report)


def run(args: argparse.Namespace) -> int:
    from kernels_fixture.build_repo import build_fixture_repo

    if args.keep:
        if args.keep.exists() and any(args.keep.iterdir()):
            from bot.errors import FixtureError

            raise FixtureError(
                f"{args.keep} exists and is not empty", hint="name a new or empty folder for --keep"
            )
        return _review(build_fixture_repo(args.keep), args)
    with tempfile.TemporaryDirectory(prefix="kernel-review-demo-") as tmp:
        return _review(build_fixture_repo(Path(tmp) / "toyops"), args)


def _measured(paths: list[Path], head_sha: str) -> Evidence | None:
    """The evidence in the results files, all of which must be for the fixture's head."""
    if not paths:
        return None
    from bot.jobs.report import merge_evidence, read_results

    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ResultsError(
            f"no such results file: {', '.join(missing)}",
            hint="give the path of a results-<vendor>.json written by a measure job "
            "(bench/fixture_review_gpu.py writes one)",
        )
    kept, dropped = read_results(paths, head_sha=head_sha)
    if dropped:
        raise ResultsError(
            "cannot use " + "; ".join(dropped),
            hint=f"the demo needs results measured for the fixture's head {head_sha[:12]}: "
            "run bench/fixture_review_gpu.py on a GPU machine",
        )
    return merge_evidence(kept, vendors=())


def _review(fixture, args: argparse.Namespace) -> int:
    print(
        f"fixture repository: {fixture.path} (base {fixture.base_sha[:7]}, head {fixture.head_sha[:7]})",
        file=sys.stderr,
    )
    measured = _measured(args.results, fixture.head_sha)
    note = "Demo on the bundled fixture. Measurements that need a GPU runner are marked not run."
    if measured is not None:
        names = ", ".join(p.name for p in args.results)
        note = (
            f"Demo on the bundled fixture, with the measurements of {names} (recorded on a GPU "
            "runner for this head). Vendors without a results file are marked not run."
        )
    measured = measured or Evidence()
    review = static_review(
        ReviewInputs(
            repo=Path(fixture.path),
            base_sha=fixture.base_sha,
            head_sha=fixture.head_sha,
            note=note,
            sweeps=measured.sweeps,
            first_calls=measured.first_calls,
            compiler=measured.compiler,
            not_run=measured.not_run,
        ),
        compiler_report=None if args.no_compile else args.compiler_report,
        progress=lambda msg: print(msg, file=sys.stderr),
    ).review
    comment, _ = fit_body(review.comment)  # as it would be posted
    if args.json:
        print(review.verdict.model_dump_json(indent=2))
    else:
        print(comment)
    if args.out:
        args.out.write_text(comment, encoding="utf-8")
    return 0
