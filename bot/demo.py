"""``kernel-review demo``: review the bundled fixture's kernel rewrites, as far as this machine allows.

Builds the fixture repository (a base commit calling hand-written CUDA/HIP kernels, a head commit
with the Triton rewrite) in a temporary folder and runs the same pipeline as a pull request:
policy from the base commit, kernel changes in the diff, the repository conditions at head, the
compiler report where Triton can cross-compile, and the verdict. Measurements that need a GPU
are reported as not run, with the reason, never invented.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bot.review import ReviewInputs, static_review


def register(sub: argparse._SubParsersAction) -> None:
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
    p.set_defaults(handler=run)


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


def _review(fixture, args: argparse.Namespace) -> int:
    print(
        f"fixture repository: {fixture.path} (base {fixture.base_sha[:7]}, head {fixture.head_sha[:7]})",
        file=sys.stderr,
    )
    out = static_review(
        ReviewInputs(
            repo=Path(fixture.path),
            base_sha=fixture.base_sha,
            head_sha=fixture.head_sha,
            compile_report=not args.no_compile,
            note="Demo on the bundled fixture. Measurements that need a GPU runner are marked not run.",
        ),
        progress=lambda msg: print(msg, file=sys.stderr),
    )
    if args.json:
        print(out.verdict.model_dump_json(indent=2))
    else:
        print(out.markdown)
    if args.out:
        args.out.write_text(out.markdown, encoding="utf-8")
    return 0
