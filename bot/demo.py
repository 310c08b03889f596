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
import functools
import sys
import tempfile
from pathlib import Path

from bot.contracts.evidence import Evidence
from bot.local_review import add_output_arguments, check_out, measured_evidence, show
from bot.review.local import RepoCompilerReport, ReviewInputs, static_review


def register(sub: argparse._SubParsersAction, *, compiler_report: RepoCompilerReport) -> None:
    """Add ``demo``; ``compiler_report`` compiles the fixture's changed kernels (the command
    line passes ``checks.compiler``'s, imported when it runs)."""
    p = sub.add_parser(
        "demo",
        help="review the bundled fixture's kernel rewrites and print the review",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_output_arguments(p)
    p.set_defaults(handler=run, compiler_report=compiler_report)


def run(args: argparse.Namespace) -> int:
    from kernels_fixture.build_repo import build_fixture_repo

    check_out(args)
    with tempfile.TemporaryDirectory(prefix="kernel-review-demo-") as tmp:
        print(
            "fixture repository: built in a temporary folder, removed at the end "
            "(python -m kernels_fixture.build_repo DIR builds one to keep)",
            file=sys.stderr,
        )
        return _review(build_fixture_repo(Path(tmp) / "toyops"), args)


def _review(fixture, args: argparse.Namespace) -> int:
    print(f"reviewing base {fixture.base_sha[:7]} -> head {fixture.head_sha[:7]}", file=sys.stderr)
    measured = measured_evidence(
        args.results,
        fixture.head_sha,
        how="run bench/fixture_review_gpu.py on a GPU machine",
    )
    note = "Demo on the bundled fixture. Measurements that need a GPU runner are marked not run."
    if measured is not None:
        names = ", ".join(p.name for p in args.results)
        note = (
            f"Demo on the bundled fixture, with the measurements of {names} (recorded on a GPU "
            "runner for this head). Vendors without a results file are marked not run."
        )
    measured = measured or Evidence()
    compiler_report = None
    if not args.no_compile:
        # the fixture is kernel-review's own code, so the demo runs it: its compiler report
        # imports the fixture's modules, as `review --repo` does only with --run-repo-code
        compiler_report = functools.partial(args.compiler_report, run_repo_code=True)
        print(
            "the fixture's code runs on this machine (bundled with kernel-review): the compiler "
            "report imports its modules, as `review --run-repo-code` would",
            file=sys.stderr,
        )
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
        compiler_report=compiler_report,
        progress=lambda msg: print(msg, file=sys.stderr),
    ).review
    show(review, args)
    return 0
