"""``kernel-review bench``: measure a base revision against a head revision on this machine.

Base and head are checked out as git worktrees (head defaults to the working tree itself, base to
its merge base with the default branch); workers per side run on each GPU, started afresh for
each of two to four passes (a verdict rests on several processes, since identical code can run
faster in one than in the next: its spread is reported where it is too wide to decide); the
sweep's JSON goes to --out (default: a file under the kernel-review cache folder, never the repository) and a
table to stdout, with progress on stderr (a bar in a terminal, a line per case in a log).
--device cpu runs the whole pipeline with CPU timing, labelled as such everywhere.

A stop from outside (Ctrl-C; SIGINT or SIGTERM, as a CI job cancelled or at its time limit
sends) ends the sweep within a second or two, its workers killed, and writes the results of the
cases it finished, the others with the status "stopped"; a second signal ends it at once. While
it runs, each case is journaled to RESULTS.partial.jsonl beside the results file: where a run was
killed without a chance to write (SIGKILL), `kernel-review review --results RESULTS` reads the
journal instead.

exit codes (for a CI gate):
  0  every case measured, none slower than its tolerance
  4  at least one case is slower than its tolerance
  5  nothing could be measured (every case failed; the first error of each kind is printed)
  6  no case is slower, but some failed (crashed, wrong result, error, timeout)
  7  stopped (SIGINT, SIGTERM) before its end: the results hold the cases it finished
  2  a usage error (the message says what to fix); 1 an internal error
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot import gitutil
from bot.errors import (
    EXIT_NOTHING_MEASURED,
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_STOPPED,
    EXIT_WORSE,
    GitError,
    KernelReviewError,
    PolicyError,
    UsageError,
)
from bot.escape import log_safe
from bot.outputs import cache_root, journal_path, plural, prepare
from bot.progress import Progress
from bot.words import speed, speed_range
from checks.engine_options import Known, add_engine_option, folder, given, on_off

if TYPE_CHECKING:
    from bot.contracts.plan import PlannedKernel
    from bot.policy.model import Policy
    from checks.sweep.models import SweepResult
    from checks.sweep.warmer import Warmer
    from checks.sweep.zygote import Zygote

DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")
MIN_ROUNDS = 3  # the sequential test's first look needs three rounds (ProtocolConfig.max_rounds)
FIRST_LOOK = 8  # ProtocolConfig.min_rounds, lowered to max_rounds when that is smaller


def _positive_ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 ms (got {text})")
    return value


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of rounds") from None
    if value < MIN_ROUNDS:
        raise argparse.ArgumentTypeError(
            f"must be {MIN_ROUNDS} or more: the test needs {MIN_ROUNDS} rounds to decide (got {value})"
        )
    return value


def _gpu_ids(text: str) -> tuple[str, ...]:
    """``--engine-option gpus=``: comma-separated physical GPU ids, each a non-negative integer."""
    ids = tuple(part.strip() for part in text.split(","))
    if not ids or not all(i.isascii() and i.isdigit() for i in ids):
        raise argparse.ArgumentTypeError(
            f"GPU ids are non-negative integers, comma-separated, e.g. gpus=0,1 (got {text!r})"
        )
    return tuple(dict.fromkeys(str(int(i)) for i in ids))


# ``--engine-option KEY=VALUE``: what each key reads, and what it does (its line of --help).
# Settings a maintainer rarely changes, each with a measured reason to exist
# (bench/README.md): the everyday flags stay few.
ENGINE_OPTIONS: Known = {
    "gpus": (_gpu_ids, "comma-separated GPU ids, e.g. gpus=0,1 (default: every visible GPU)"),
    "block_ms": (
        _positive_ms,
        "timed work per block in ms, > 0 (default 1.0; 5 without crossover; cpu 2)",
    ),
    "crossover": (
        on_off,
        "on|off: time each side in both worker slots, cancelling a per-process bias (default: "
        "on for cuda, off for cpu)",
    ),
    "precompile": (
        on_off,
        "on|off: on a GPU, compile each side's Triton kernels ahead in helper processes beside "
        "the workers (default: on)",
    ),
    "zygote": (
        on_off,
        "on|off: fork the workers from one process that imported torch and Triton (default: on)",
    ),
    "work_dir": (
        folder,
        "where worktrees, worker logs and caches go, kept after the run (default: a temporary "
        "folder, removed)",
    ),
    "max_rounds": (
        _rounds,
        f"rounds per case at most, {MIN_ROUNDS} or more: a shorter run (default 200; cpu 40)",
    ),
    "added_shapes": (
        on_off,
        "on|off: time small and ragged shapes besides the policy's served ones (default: on)",
    ),
}


@dataclass(frozen=True)
class EngineOptions:
    """The ``--engine-option`` settings of one run; None: the engine's default."""

    gpus: tuple[str, ...] | None = None
    block_ms: float | None = None
    crossover: bool | None = None
    precompile: bool = True
    zygote: bool = True
    work_dir: Path | None = None
    max_rounds: int | None = None
    added_shapes: bool = True

    @classmethod
    def given(cls, pairs: Sequence[tuple[str, object]]) -> EngineOptions:
        """The options of a command line's ``--engine-option`` pairs (a key given twice is a
        UsageError)."""
        return cls(**given(pairs))  # type: ignore[arg-type]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench",
        help="measure base against head on this machine's GPU (shape sweep)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--repo", default=".", help="the git repository (default .)")
    p.add_argument(
        "--base", help="base revision (default: merge base of HEAD with the default branch)"
    )
    p.add_argument(
        "--head", help="head revision (default: the working tree, uncommitted changes included)"
    )
    p.add_argument("--kernels", help="comma-separated kernel names from the policy (default: all)")
    p.add_argument(
        "--out",
        help="results JSON (default: under the cache folder, ~/.cache/kernel-review/bench/REPO/)",
    )
    p.add_argument(
        "--device", choices=["cuda", "cpu"], default="cuda", help="cuda (GPU) or cpu timing"
    )
    add_engine_option(p, ENGINE_OPTIONS)
    # ``plan``: a plan JSON file whose kernels, base and head SHAs to measure, handed in by a
    # caller (``review --measure``), not a flag
    p.set_defaults(handler=run_bench, plan=None)


def default_branch(repo: Path) -> str:
    ref = gitutil.git(
        repo, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", check=False
    ).strip()
    if ref:
        return ref
    for name in DEFAULT_BRANCHES:
        if gitutil.git(
            repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False
        ).strip():
            return name
    raise GitError(
        f"cannot tell the default branch of {repo} (no origin/HEAD, no {', '.join(DEFAULT_BRANCHES)})",
        hint="pass --base REV",
    )


def _load_policy(repo: Path, base_sha: str, head_sha: str | None, notes: list[str]) -> Policy:
    """The base commit's policy; head's (with a note) when base has none. Messages name the
    commit and the file, never the temporary worktree."""
    from bot.policy.load import find_policy, missing_policy
    from bot.revision import DirRevision, GitRevision

    base = GitRevision(repo, base_sha)
    found = find_policy(base)
    if found is None:
        found = find_policy(GitRevision(repo, head_sha) if head_sha else DirRevision(repo))
        if found is None:
            raise missing_policy(
                base,
                place=f"at the base commit {base_sha[:12]} or the head",
                hint=f"write one with `kernel-review init --repo {repo}` and commit it "
                "(docs/policy.md describes every key)",
            )
        notes.append(
            "base has no policy; used head's (a pull request must not set its own rules in CI)"
        )
    return found[0]


def planned_kernels(
    policy: Policy, names: list[str] | None, plan_path: str | None, *, base_sha: str, head_sha: str
) -> list[PlannedKernel]:
    """The kernels to measure: those of the gate's plan file, else every kernel of the policy
    (planned by ``make_plan`` as requested), narrowed to ``names`` when given."""
    from bot.contracts.plan import Plan
    from bot.plan import make_plan

    if plan_path:
        plan = Plan.model_validate_json(Path(plan_path).read_text(encoding="utf-8"))
    else:
        every = [k.name for k in policy.kernels]
        plan = make_plan((), policy, base_sha=base_sha, head_sha=head_sha, kernels=every)
    kernels = list(plan.kernels)
    if names:
        known = {k.name for k in kernels}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise PolicyError(
                f"no kernel named {', '.join(unknown)} to measure",
                hint="known kernels: " + ", ".join(sorted(known)),
            )
        kernels = [k for k in kernels if k.name in names]
    return kernels


def run_bench(args: argparse.Namespace) -> int:
    started = args.started  # the command's start (bot.cli.main): the all-in cost counts from it
    from checks.sweep.gpus import require_torch
    from checks.sweep.warmer import start_warmer
    from checks.sweep.zygote import start_zygote

    engine = EngineOptions.given(args.engine_option or [])
    require_torch("bench")  # every worker imports it: say so once, before any starts
    if engine.gpus and args.device != "cpu":
        _check_gpus(engine.gpus)  # before any process starts
    # The workers' zygote first: its imports (seconds) run while this reads the repository,
    # the policy and the plan and makes the worktrees.
    work = engine.work_dir or Path(tempfile.mkdtemp(prefix="kernel-review-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    zygote = start_zygote(args.device, work) if engine.zygote else None
    # and each GPU's early warm-up: its clock comes up while the workers start
    gpus = _gpus(args.device, engine)
    warmer = start_warmer(args.device, gpus, work) if gpus else None
    try:
        return _bench(args, engine, started, work, gpus, zygote, warmer)
    finally:
        if zygote is not None:
            zygote.close()
        if warmer is not None:
            warmer.close()
        if engine.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


def _gpus(device: str, engine: EngineOptions) -> tuple[str, ...]:
    """The GPUs the ``gpus`` engine option names, else every visible one; none for ``--device
    cpu``."""
    from checks.sweep.gpus import visible_gpus

    if device == "cpu":
        return ()
    if engine.gpus:
        return tuple(engine.gpus)
    return tuple(visible_gpus())


def _check_gpus(wanted: tuple[str, ...]) -> None:
    """Refuse GPU ids this machine does not have, naming the ones it has."""
    from checks.sweep import gpus

    have = gpus.visible_gpus()
    missing = [g for g in wanted if g not in have]
    if not missing:
        return
    if not have:
        raise UsageError(
            f"no GPU {', '.join(missing)} here: no GPU is visible to this process",
            hint="run on a GPU machine, or pass --device cpu",
        )
    raise UsageError(
        f"no GPU {', '.join(missing)} here: this machine's GPUs are {', '.join(have)}"
        " (CUDA_VISIBLE_DEVICES, where set, limits them)",
        hint=f"pass --engine-option gpus= with some of {', '.join(have)}, or leave it out to "
        "use them all",
    )


def _bench(
    args: argparse.Namespace,
    engine: EngineOptions,
    started: float,
    work: Path,
    visible: tuple[str, ...],
    zygote: Zygote | None,
    warmer: Warmer | None,
) -> int:
    from checks.checkout import checkout_for
    from checks.sweep.models import dump_results
    from checks.sweep.protocol import default_protocol
    from checks.sweep.run import SweepOptions, run_sweep
    from checks.sweep.shapes import plan_cases

    repo = gitutil.require_repo(args.repo)
    gitutil.rev_parse(repo, "HEAD")
    plan_revs = _plan_revs(args.plan)
    base_rev = args.base or plan_revs[0] or gitutil.merge_base(repo, "HEAD", default_branch(repo))
    head_arg = args.head or plan_revs[1]
    out = prepare(args.out, option="--out") if args.out else None
    base_sha = gitutil.rev_parse(repo, base_rev)
    head_sha = gitutil.rev_parse(repo, head_arg) if head_arg else None
    notes: list[str] = []
    policy = _load_policy(repo, base_sha, head_sha, notes)
    if head_sha:
        head_label = head_sha
    else:
        dirty = bool(gitutil.git(repo, "status", "--porcelain", "--untracked-files=no").strip())
        head_label = gitutil.rev_parse(repo, "HEAD") + ("+working-tree" if dirty else "")
    names = [n.strip() for n in args.kernels.split(",") if n.strip()] if args.kernels else None
    kernels = planned_kernels(policy, names, args.plan, base_sha=base_sha, head_sha=head_label)
    plan = plan_cases(
        kernels,
        max_shapes=policy.limits.max_shapes,
        max_elements_per_tensor=policy.limits.max_elements_per_tensor,
        add_small_and_ragged=engine.added_shapes,
        files=_side_files(repo, base_sha, head_sha),
    )
    cpu = args.device == "cpu"
    gpus = None
    if not cpu:
        gpus = visible
        if not gpus:
            raise KernelReviewError(
                "no GPU is visible to this process",
                hint="run on a GPU machine, or pass --device cpu",
            )
    protocol = default_protocol(
        args.device,
        crossover=engine.crossover,
        block_ms=engine.block_ms,
        max_rounds=engine.max_rounds,
    )
    if protocol.max_rounds < FIRST_LOOK:  # the first look cannot need more rounds than allowed
        protocol = protocol.model_copy(update={"min_rounds": protocol.max_rounds})
    options = SweepOptions(
        device=args.device,
        protocol=protocol,
        gpus=gpus,
        max_gpu_seconds=float(policy.limits.max_gpu_seconds),
        checkout=checkout_for(policy),
        precompile=engine.precompile,
        zygote=engine.zygote,
    )
    if options.checkout.setup_command:
        # the build step may install into the interpreter the zygote imported from, and takes
        # longer than a warm-up: the sweep starts its own of each after it
        for started_early in (zygote, warmer):
            if started_early is not None:
                started_early.close()
        zygote = warmer = None
    label = (
        "CPU timing (not GPU numbers)" if cpu else f"GPU timing on {plural(len(gpus or ()), 'GPU')}"
    )
    print(
        f"kernel-review bench: {plural(len(plan.cases), 'case')}, base {base_sha[:12]} vs head "
        f"{head_label[:20]}; {label}",
        file=sys.stderr,
    )
    if cpu:
        from bot.plan import compiled_only_bases  # pydantic: after the zygote has started

        for line in compiled_only_bases(repo, base_sha, kernels):
            print(f"note: {line}", file=sys.stderr)
    out = out or default_results_path(repo, args.device, base_sha, head_label)
    partial = journal_path(out)
    trees: list[Path] = []
    try:
        base_root = gitutil.add_worktree(repo, work / "base", base_sha)
        trees.append(base_root)
        head_root = repo
        if head_sha:
            head_root = gitutil.add_worktree(repo, work / "head", head_sha)
            trees.append(head_root)
        with Progress("bench", len(plan.cases), unit="case", counted=False) as bar:
            result = run_sweep(
                plan.cases,
                base_root=base_root,
                head_root=head_root,
                base_rev=base_sha,
                head_rev=head_label,
                options=options,
                work_dir=work,
                progress=bar.step,
                partial_path=partial,
                notes=[*notes, *plan.notes],
                started=started,
                zygote=zygote,
                warmer=warmer,
            )
        dump_results(result, out)
        partial.unlink(missing_ok=True)  # the whole file is written: its journal is not needed
        print(log_safe(format_table(result)))
        for line in failure_lines(result):
            print(log_safe(line), file=sys.stderr)
        if result.stopped:
            from checks.procs.stopping import stop_words

            print(
                f"kernel-review bench: stopped by {stop_words(result.stopped)}; the results "
                "hold the cases it finished, the rest with the status `stopped`",
                file=sys.stderr,
            )
        print(f"results: {out}", file=sys.stderr)
        if engine.work_dir is not None:
            print(f"worker logs: {work / 'logs'}", file=sys.stderr)
        return exit_code(result)
    finally:
        for tree in trees:
            gitutil.remove_worktree(repo, tree)


def default_results_path(repo: Path, device: str, base_sha: str, head_label: str) -> Path:
    """Where results go when --out is not given: the cache folder, never the repository."""
    name = f"results-{device}-{base_sha[:12]}-{head_label[:12]}.json"
    where = cache_root() / "bench" / repo.name / name
    return prepare(where, option="the results file", make_folder=True)


def failure_lines(result: SweepResult) -> list[str]:
    """How many cases failed, and the first message of each kind (status and side)."""
    failed = [c for c in result.cases if c.status != "ok"]
    if not failed:
        return []
    lines = [f"{len(failed)} of {plural(len(result.cases), 'case')} not measured:"]
    seen: dict[tuple[str, str | None], int] = {}
    for c in failed:
        seen[(c.status, c.failed_side)] = seen.get((c.status, c.failed_side), 0) + 1
    for (status, side), count in seen.items():
        first = next(c for c in failed if (c.status, c.failed_side) == (status, side))
        where = " (both sides)" if side == "both" else f" ({side} side)" if side else ""
        shape = "x".join(map(str, first.shape))
        lines.append(
            f"  {status}{where}: {plural(count, 'case')}; first, {first.kernel} {first.dtype} "
            f"{shape}: {' '.join((first.message or first.log_tail[-300:]).split())[:300]}"
        )
    return lines


def exit_code(result: SweepResult) -> int:
    """The exit code a CI gate reads (see the module's docstring)."""
    if result.stopped:
        return EXIT_STOPPED
    measured = [c for c in result.cases if c.status == "ok"]
    if not measured:
        return EXIT_NOTHING_MEASURED
    if any(c.verdict == "SLOWER" for c in measured):
        return EXIT_WORSE
    return EXIT_SOME_FAILED if len(measured) < len(result.cases) else EXIT_OK


def _side_files(repo: Path, base_sha: str, head_sha: str | None) -> set[str]:
    """The files of both sides: base's commit and head's, or the working tree's where head is
    the working tree."""
    head = gitutil.list_files(repo, head_sha) if head_sha else gitutil.tree_files(repo)
    return {*gitutil.list_files(repo, base_sha), *head}


def _plan_revs(plan_path: str | None) -> tuple[str | None, str | None]:
    if not plan_path:
        return None, None
    from bot.contracts.plan import Plan

    try:
        plan = Plan.model_validate_json(Path(plan_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise KernelReviewError(
            f"cannot read plan {plan_path}: {exc}", hint="pass the plan JSON the gate job wrote"
        ) from exc
    return plan.base_sha, plan.head_sha


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else speed_range(low, high)


def format_table(result: SweepResult) -> str:
    """A plain-text table of the sweep, labelled with how it was timed; head against base is
    said in words ("5.7% slower"), as in the review."""
    spent = (
        f"{result.gpu_seconds:.1f} s of CPU timing"
        if result.timing == "cpu"
        else f"{result.gpu_seconds:.1f} GPU-seconds"
    )
    lines = [f"# {result.timing_label}; vendor {result.vendor}; {spent}"]
    header = f"{'kernel':<16} {'dtype':<9} {'shape':<18} {'cat':<7} {'verdict':<13} {'head vs base':>12} {'interval':>26} {'base us':>10} {'head us':>10} {'GB/s':>8} {'of ceil':>7} rounds"
    lines.append(header)
    for c in result.cases:
        shape = "x".join(map(str, c.shape))
        verdict = c.verdict if c.status == "ok" else c.status.upper()
        vs = speed(c.ratio) if c.ratio is not None else "-"
        frac = f"{c.fraction_of_ceiling:.0%}" if c.fraction_of_ceiling is not None else "-"
        gbps = f"{c.gbps:.0f}" if c.gbps is not None else "-"
        bus = f"{c.base_median_us:.2f}" if c.base_median_us else "-"
        hus = f"{c.head_median_us:.2f}" if c.head_median_us else "-"
        lines.append(
            f"{c.kernel[:16]:<16} {c.dtype:<9} {shape[:18]:<18} {c.category:<7} {verdict or '-':<13} "
            f"{vs:>12} {_interval(c.ci_low, c.ci_high):>26} {bus:>10} {hus:>10} {gbps:>8} {frac:>7} {c.rounds}"
            + (f" ({c.dropped_rounds} dropped)" if c.dropped_rounds else "")
        )
    s = result.summary
    for name, g in (("served (weighted)", s.served), ("small", s.small), ("ragged", s.ragged)):
        if g is not None:
            lines.append(
                f"geomean {name}: {speed(g.ratio)} ({speed_range(g.ci_low, g.ci_high)}) over "
                + plural(g.cases, "case")
            )
    if s.worst is not None:
        w = s.worst
        lines.append(
            f"worst: {w.kernel} {w.dtype} {'x'.join(map(str, w.shape))} {speed(w.ratio)} ({_interval(w.ci_low, w.ci_high)})"
        )
    for c in result.cases:  # why a case has no verdict, where the table cannot say it
        if c.status not in ("ok", "stopped") and c.message:  # a stop is the notes' to say
            shape = "x".join(map(str, c.shape))
            lines.append(f"{c.status}: {c.kernel} {c.dtype} {shape}: {c.message[:300]}")
    lines.append(cost_line(result))
    from checks.sweep.summary import time_line

    where = time_line(result)
    if where:
        lines.append(where)
    for note in result.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def cost_line(result: SweepResult) -> str:
    """What the sweep cost all in: the GPU (the CPU, for CPU timing) held from the command's
    start, per verdict."""
    verdicts = sum(1 for c in result.cases if c.status == "ok")
    held, per = result.held_gpu_seconds, result.gpu_s_per_verdict_all_in
    unit = "CPU-s" if result.timing == "cpu" else "GPU-s"
    if held is None:
        return f"cost: {result.gpu_seconds:.1f} {unit} in cases, {verdicts} verdicts"
    first = f"; first verdict at {result.first_verdict_s:.1f} s" if result.first_verdict_s else ""
    each = f" = {per:.3f} {unit} per verdict all in" if per is not None else ""
    return (
        f"cost: {held:.1f} {unit} held from the start for {verdicts} verdicts{each} "
        f"({result.gpu_seconds:.1f} s in the cases themselves){first}"
    )
