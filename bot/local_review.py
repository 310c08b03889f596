"""``kernel-review review [--repo PATH] --base REV [--head REV]``: the review of a local range.

The same review a pull request from ``--base`` to ``--head`` would get as its comment: the
policy from the base commit, the kernel changes, the repository conditions at head, the compiler
report cross-compiled here, and the measurements of any results files given (``--results``: a
measure job's ``results-<vendor>.json``, or the file ``kernel-review bench --out`` wrote for that
base and head, converted by the reader the command line passes in). Measurements that need a GPU
and did not come in are marked not run, with the reason.

``--measure`` runs the shape sweep here first, as ``kernel-review bench`` does, of the kernels
the pull request's plan names (``--measure cpu``: under the CPU interpreter, labelled as CPU
timing), and reviews with its results; it runs the repository's code, as ``--run-repo-code``.

Nothing of the reviewed repository runs unless ``--run-repo-code`` or ``--measure`` says so: a
maintainer reviews branches nobody has read yet. Without it the compiler report holds what compiles without
importing the repository (its C++ kernels, where nvcc or hipcc is here) and says that its Triton
kernels need the flag (they are found and compiled through its bench entry points, which import
its modules); the command says which it did.

Shared with ``kernel-review demo``: reading the results files and showing the review (a plain
terminal rendering on stdout; the comment's markdown with ``--out FILE``, ``-`` for stdout).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from bot import gitutil
from bot.contracts.evidence import Evidence
from bot.contracts.plan import Plan
from bot.contracts.results import ResultsFile
from bot.errors import ResultsError, UsageError
from bot.forge.sticky import fit_body
from bot.outputs import JOURNAL_SUFFIX, journal_path, plural, prepare, write_text
from bot.review.local import RepoCompilerReport, ReviewInputs, static_review
from bot.review.terminal import terminal_text

RUN_REPO_CODE = "--run-repo-code"
# the compiler report's not-run line when the flag was not given (``bot/cli.py``)
NOT_IMPORTED = (
    "its Triton kernels were not cross-compiled: that imports the reviewed repository's modules "
    f"and runs its bench entry points on this machine; rerun with {RUN_REPO_CODE} for code you "
    "trust"
)
# (a file ``kernel-review bench --out`` wrote, the vendor to file a CPU-timed sweep under) ->
# the results file a measure job would have written for it; ``checks.sweep``'s, passed in
BenchReader = Callable[[Path, str], ResultsFile]
# (the repository, the plan, the device, the command's start) -> (the file the sweep wrote,
# bench's exit code); ``kernel-review bench``'s sweep, passed in
SweepRunner = Callable[[Path, Plan, str, float], tuple[Path, int]]
MEASURE = "--measure"
MAX_FILE_BYTES = 256 * 2**20  # a bench file keeps every round's raw blocks
EXPECTED = (
    "a measure job's results-<vendor>.json (the GitHub workflow's artifact) or the file "
    "`kernel-review bench --out FILE` writes"
)
WRITE_ONE = (
    "run `kernel-review bench --repo . --base REV --head REV --out FILE` (on a GPU machine; "
    "--device cpu checks the pipeline) and pass that FILE"
)


def add_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The options of a local review (``review --repo ...``); ``demo`` shares the last four."""
    p.add_argument("--repo", type=Path, default=Path("."), help="the git repository (default .)")
    p.add_argument("--base", metavar="REV", help="base revision: what the pull request targets")
    p.add_argument(
        "--head", metavar="REV", help="head revision: the pull request's commit (default HEAD)"
    )
    p.add_argument(
        RUN_REPO_CODE,
        action="store_true",
        help=(
            "run the reviewed repository's code here: the compiler report imports its modules "
            "and calls its bench entry points at base and head to cross-compile its Triton "
            "kernels. Without it nothing of the repository runs (static analysis, and a compiler "
            "report of its C++ kernels only). Give it only for code you trust"
        ),
    )
    p.add_argument(
        MEASURE,
        nargs="?",
        const="cuda",
        choices=("cuda", "cpu"),
        metavar="DEVICE",
        help=(
            "run the shape sweep here first, base against head, of the kernels the pull "
            "request's plan names (as `kernel-review bench` does; its table on stderr, its file "
            "under the cache folder), and review with its results: on this machine's GPU (cuda, "
            "the default) or under the CPU interpreter with CPU timing (cpu: checks the "
            "pipeline, measures nothing a GPU would). Runs the repository's code and implies "
            f"{RUN_REPO_CODE}: only for code you trust"
        ),
    )
    add_output_arguments(p)


def add_output_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument(
        "--results",
        metavar="FILE",
        type=Path,
        action="append",
        default=[],
        help="measurements for the head: the file `kernel-review bench --out` wrote, or a "
        "measure job's results-<vendor>.json (repeat for more vendors)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        type=Path,
        help="write the comment's markdown to FILE ('-': to stdout, instead of the terminal text)",
    )
    p.add_argument(
        "--no-compile",
        action="store_true",
        help="skip the compiler report (cross-compiling every config takes a while on a cold cache)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="the review as the job summary has it, instead of the comment: every evidence "
        "line, shape, autotuner pick and compiler variant, nothing folded (also with --out)",
    )


def results_form(path: Path) -> Literal["results", "bench"]:
    """Which of the two files ``path`` is: a measure job's results file or what ``kernel-review
    bench --out`` wrote (its journal too, ``results.partial.jsonl``, which its reader checks);
    anything else is a ResultsError saying what is expected."""
    if path.name.endswith(JOURNAL_SUFFIX):
        return "bench"
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ResultsError(
            f"{path}: {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte cap of a results file",
            hint=f"pass {EXPECTED}",
        )
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        raise ResultsError(
            f"{path} is not a results file: it is not JSON ({str(exc)[:120]}); expected {EXPECTED}",
            hint=WRITE_ONE,
        ) from None
    keys = set(data) if isinstance(data, dict) else set()
    if {"head_sha", "evidence"} <= keys:
        return "results"
    if {"cases", "protocol", "base_rev", "head_rev"} <= keys:
        return "bench"
    raise ResultsError(
        f"{path} is not a results file: expected {EXPECTED}",
        hint=WRITE_ONE,
    )


def measured_evidence(
    paths: list[Path],
    head_sha: str,
    *,
    how: str,
    base_sha: str | None = None,
    read_bench: BenchReader | None = None,
    cpu_vendor: str = "nvidia",
) -> Evidence | None:
    """The evidence in the results files, all of which must be for ``head_sha``; ``how`` says
    how to measure that head, for the hint. A file ``kernel-review bench --out`` wrote is read by
    ``read_bench`` (a command without one refuses it) and must be for ``base_sha`` too, since
    its ratios are against that base; a CPU-timed one is filed under ``cpu_vendor``, marked as
    CPU timing."""
    if not paths:
        return None
    from bot.jobs.report import merge_evidence, read_results

    given = {p: p for p in paths}  # the file read -> the one named
    if read_bench is not None:  # a bench run that never wrote its file: its journal, if any
        given = {_journal_instead(p): p for p in paths}
        paths = list(given)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ResultsError(
            f"no such results file: {', '.join(missing)}",
            hint=f"pass {EXPECTED}",
        )
    runner_files: list[Path] = []
    benches: list[ResultsFile] = []
    for path in paths:
        if results_form(path) == "results":
            runner_files.append(path)
        elif read_bench is None:
            raise ResultsError(
                f"{path} is a `kernel-review bench` file; this command reads a measure job's "
                "results-<vendor>.json",
                hint="review it with `kernel-review review --repo . --base REV --results FILE`",
            )
        else:
            got = _bench_for(path, read_bench(path, cpu_vendor), head_sha, base_sha)
            if path.name.endswith(JOURNAL_SUFFIX):
                _say_journal(path, given[path], got)
            benches.append(got)
    kept, dropped = read_results(runner_files, head_sha=head_sha) if runner_files else ([], [])
    if dropped:
        raise ResultsError(
            "cannot use " + "; ".join(dropped),
            hint=f"the review needs results measured for the head {head_sha[:12]}: {how}",
        )
    return merge_evidence([*kept, *benches], vendors=())


def _journal_instead(path: Path) -> Path:
    """``path``, or the journal ``kernel-review bench`` left beside it where that run never
    wrote it (killed without a chance to: SIGKILL, a machine that went away)."""
    journal = journal_path(path)
    return journal if not path.is_file() and journal.is_file() else path


def _say_journal(journal: Path, named: Path, got: ResultsFile) -> None:
    """What reading a journal means for the review, and what to do for a complete one."""
    shapes = [x for s in got.evidence.sweeps for x in s.shapes]
    left = sum(1 for x in shapes if x.verdict == "STOPPED")
    what = (
        f"no results file {named}, but the journal {journal} of the `kernel-review bench` run "
        "that was to write it"
        if named != journal
        else f"{journal} is the journal of a `kernel-review bench` run"
    )
    print(
        f"kernel-review: {what}: that run ended before it wrote its results (killed: SIGKILL, a "
        "second stop, or its machine went away; one still running writes them at its end). "
        f"Reviewing the {len(shapes) - left} of {plural(len(shapes), 'case')} it measured, the "
        f"other {left} as not run; for a complete review, run the sweep again",
        file=sys.stderr,
    )


def _bench_for(path: Path, got: ResultsFile, head_sha: str, base_sha: str | None) -> ResultsFile:
    """``got`` (read from ``path``) when it measured this review's base and head."""
    rerun = (
        f"`kernel-review bench --base {(base_sha or got.base_sha)[:12]} --head {head_sha[:12]} "
        "--out FILE`"
    )
    if got.head_sha != head_sha:
        raise ResultsError(
            f"{path.name} measured the head {got.head_sha[:12]}, not this review's {head_sha[:12]}",
            hint=f"run {rerun} for this head, or review the head it measured (--head)",
        )
    if base_sha is not None and got.base_sha != base_sha:
        raise ResultsError(
            f"{path.name} measured against the base {got.base_sha[:12]}, not this review's "
            f"{base_sha[:12]}: its ratios are against another base",
            hint=f"run {rerun}, or review against the base it measured (--base)",
        )
    return got


def check_out(args: argparse.Namespace) -> None:
    """Refuse an ``--out`` that cannot be written before the review is made (see ``prepare``)."""
    if args.out is not None and str(args.out) != "-":
        prepare(args.out, option="--out")


def show(review, args: argparse.Namespace) -> None:
    """Print the review: the markdown (``--out -``) or the terminal rendering; and write the
    markdown to ``--out FILE``."""
    # as it would be posted, or the job summary whole (``--full``)
    comment = review.summary if args.full else fit_body(review.comment)[0]
    to_stdout = args.out is not None and str(args.out) == "-"
    if args.out is not None and not to_stdout:
        write_text(args.out, comment, option="--out")
    if to_stdout:
        print(comment)
    else:
        print(terminal_text(comment), end="")
        if not args.full:
            print(
                "what the job summary has besides (every line, shape and variant): --full",
                file=sys.stderr,
            )
        if args.out is not None:
            print(f"markdown of the comment: {args.out}", file=sys.stderr)


def repo_code_line(run_repo_code: bool, *, compiled: bool, measured: bool = False) -> str:
    """What a local review says of the reviewed repository's code: run (the flags), or not."""
    if measured:
        also = " and the compiler report imports its modules" if compiled else ""
        return (
            f"the reviewed repository's code runs on this machine: the shape sweep ({MEASURE}) "
            f"calls its bench entry points at base and head{also}"
        )
    if run_repo_code and compiled:
        return (
            f"the reviewed repository's code runs on this machine ({RUN_REPO_CODE}): the "
            "compiler report imports its modules and calls its bench entry points"
        )
    if not compiled:
        return (
            "the reviewed repository's code was not run: static analysis only (--no-compile: "
            "no compiler report)"
        )
    return (
        "the reviewed repository's code was not run: static analysis, and a compiler report of "
        f"what compiles without importing it; {RUN_REPO_CODE} cross-compiles its Triton kernels "
        "(it imports the repository's modules: only for code you trust)"
    )


def run_local(
    args: argparse.Namespace,
    compiler_report: RepoCompilerReport,
    read_bench: BenchReader | None = None,
    run_sweep: SweepRunner | None = None,
) -> int:
    """The review of the range; with ``--measure``, after ``run_sweep`` measured it here, exiting
    as ``kernel-review bench`` does (0 none slower, 4 slower, 5 nothing measured, 6 some failed, 7
    stopped)."""
    check_out(args)
    if args.base is None:
        raise UsageError(
            "a local review needs --base: the revision the pull request targets",
            hint="for example: kernel-review review --repo . --base origin/main --head HEAD "
            "(a job of the GitHub workflow is `kernel-review job MODE`)",
        )
    if args.measure and (run_sweep is None or read_bench is None):
        raise UsageError(
            f"{MEASURE} needs the measurement engine, which this command was not given",
            hint="run `kernel-review review --repo . --base REV --measure`",
        )
    repo = gitutil.require_repo(args.repo)
    base_sha = gitutil.rev_parse(repo, args.base)
    head_sha = gitutil.rev_parse(repo, args.head or "HEAD")
    how = (
        f"run `kernel-review bench --base {base_sha[:12]} --head {head_sha[:12]} --out FILE`, "
        "or use the results-<vendor>.json of the workflow's measure job for that commit"
    )
    measured = (
        measured_evidence(
            args.results,
            head_sha,
            how=how,
            base_sha=base_sha,
            read_bench=read_bench,
            cpu_vendor=_first_vendor(repo, base_sha) if args.results else "nvidia",
        )
        or Evidence()
    )
    names = ", ".join(p.name for p in args.results)
    # the sweep runs the repository's code: the compiler report of the same code may import it
    run_code, compiled = bool(args.run_repo_code or args.measure), not args.no_compile
    said = repo_code_line(run_code, compiled=compiled, measured=args.measure is not None)
    if args.measure:
        given = f" and the measurements of {names}" if names else ""
        ran = "The sweep and the compiler report" if compiled else "The sweep"
        note = (
            f"Local review with a shape sweep measured on this machine ({MEASURE}){given}; "
            f"vendors without one are not run. {ran} ran the repository's code."
        )
    elif names:
        note = f"Local review with the measurements of {names}; vendors without one are not run."
    else:
        note = "Local review: measurements that need a GPU runner are marked not run."
    if run_code and compiled and not args.measure:
        note += f" The compiler report ran the repository's code ({RUN_REPO_CODE})."
    elif not args.measure:
        note += " None of the repository's code was run."
    if args.measure or (run_code and compiled):
        print(said, file=sys.stderr, flush=True)  # before anything of it runs, too
    swept: list[int] = []  # bench's exit code, once the sweep ran

    def measure(plan: Plan) -> Evidence:
        assert run_sweep is not None and read_bench is not None  # checked above
        path, code = run_sweep(repo, plan, args.measure, args.started)
        swept.append(code)
        got = _bench_for(path, read_bench(path, plan.vendors[0]), head_sha, base_sha)
        return got.evidence

    review = static_review(
        ReviewInputs(
            repo=repo,
            base_sha=base_sha,
            head_sha=head_sha,
            note=note,
            sweeps=measured.sweeps,
            first_calls=measured.first_calls,
            compiler=measured.compiler,
            not_run=measured.not_run,
        ),
        compiler_report=(
            functools.partial(compiler_report, run_repo_code=run_code) if compiled else None
        ),
        measure=measure if args.measure else None,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    show(review.review, args)
    if args.measure and not swept:
        print(
            f"{MEASURE}: nothing to measure: the range changes no kernel the policy names",
            file=sys.stderr,
        )
    print(said, file=sys.stderr, flush=True)  # the last line: what ran, whatever scrolled by
    return swept[0] if swept else 0


def _first_vendor(repo: Path, base_sha: str) -> str:
    """The vendor a CPU-timed sweep is filed under: the base policy's first (the review marks
    it as CPU timing, not evidence for that vendor)."""
    from bot.policy.load import find_policy
    from bot.revision import GitRevision

    found = find_policy(GitRevision(repo, base_sha))
    return found[0].vendors[0] if found and found[0].vendors else "nvidia"
