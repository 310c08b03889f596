"""``kernel-review bench``: measure a base revision against a head revision on this machine.

Base and head are checked out as git worktrees (head defaults to the working tree itself, base to
its merge base with the default branch); one worker per side runs on each GPU; the sweep's JSON
goes to ``--out`` and a table to stdout, with a progress line per case on stderr.
``--device cpu`` runs the whole pipeline with CPU timing, labelled as such everywhere.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bot import gitutil
from bot.errors import GitError, KernelReviewError, PolicyError
from bot.escape import log_safe
from bot.review.words import speed, speed_range

if TYPE_CHECKING:
    from bot.contracts.plan import PlannedKernel
    from bot.policy.model import Policy
    from checks.sweep.models import SweepResult

DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")


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
    p.add_argument("--plan", help="a plan JSON from the gate job: its kernels, base and head SHAs")
    p.add_argument("--out", help="results JSON (default kernel-review-results-<vendor>.json)")
    p.add_argument(
        "--device", choices=["cuda", "cpu"], default="cuda", help="cuda (GPU) or cpu timing"
    )
    p.add_argument("--gpus", help="comma-separated GPU ids to use (default: every visible GPU)")
    p.add_argument(
        "--block-ms",
        type=float,
        help="GPU time per block in ms (default 2.5; 5 without crossover; cpu 2)",
    )
    p.add_argument("--max-rounds", type=int, help="rounds per case at most (default 200; cpu 40)")
    p.add_argument(
        "--crossover",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time each side in both worker slots, cancelling a per-process bias (default: on "
        "for cuda, off for cpu)",
    )
    p.add_argument("--no-added-shapes", action="store_true", help="only the policy's served shapes")
    p.add_argument("--work-dir", help="where worktrees, logs and caches go (default: a temp dir)")
    p.add_argument("--keep-work-dir", action="store_true", help="keep worktrees and worker logs")
    p.set_defaults(handler=run_bench)


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


def _load_policy(base_root: Path, head_root: Path, notes: list[str]) -> Policy:
    from bot.policy.load import load_policy

    try:
        return load_policy(base_root).policy
    except PolicyError as base_exc:
        try:
            policy = load_policy(head_root).policy
        except PolicyError:
            raise base_exc from None
        notes.append(
            "base has no policy; used head's (a pull request must not set its own rules in CI)"
        )
        return policy


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
    started = time.monotonic()
    from checks.checkout import checkout_for
    from checks.sweep.models import dump_results
    from checks.sweep.protocol import default_protocol
    from checks.sweep.run import SweepOptions, run_sweep, visible_gpus
    from checks.sweep.shapes import plan_cases

    repo = Path(args.repo).resolve()
    gitutil.rev_parse(repo, "HEAD")
    plan_revs = _plan_revs(args.plan)
    base_rev = args.base or plan_revs[0] or gitutil.merge_base(repo, "HEAD", default_branch(repo))
    head_arg = args.head or plan_revs[1]
    gpus = None
    if args.device == "cuda":
        gpus = (
            tuple(g.strip() for g in args.gpus.split(",") if g.strip())
            if args.gpus
            else tuple(visible_gpus())
        )
        if not gpus:
            raise KernelReviewError(
                "no GPU is visible to this process",
                hint="run on a GPU machine, or pass --device cpu",
            )
    work = (
        Path(args.work_dir).resolve()
        if args.work_dir
        else Path(tempfile.mkdtemp(prefix="kernel-review-bench-"))
    )
    work.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    trees: list[Path] = []
    try:
        base_root = gitutil.add_worktree(repo, work / "base", base_rev)
        trees.append(base_root)
        base_sha = gitutil.rev_parse(repo, base_rev)
        if head_arg:
            head_root = gitutil.add_worktree(repo, work / "head", head_arg)
            trees.append(head_root)
            head_label = gitutil.rev_parse(repo, head_arg)
        else:
            head_root = repo
            dirty = bool(gitutil.git(repo, "status", "--porcelain", "--untracked-files=no").strip())
            head_label = gitutil.rev_parse(repo, "HEAD") + ("+working-tree" if dirty else "")
        policy = _load_policy(base_root, head_root, notes)
        names = [n.strip() for n in args.kernels.split(",") if n.strip()] if args.kernels else None
        kernels = planned_kernels(policy, names, args.plan, base_sha=base_sha, head_sha=head_label)
        plan = plan_cases(
            kernels,
            max_shapes=policy.limits.max_shapes,
            max_elements_per_tensor=policy.limits.max_elements_per_tensor,
            add_small_and_ragged=not args.no_added_shapes,
        )
        cpu = args.device == "cpu"
        protocol = default_protocol(
            args.device,
            crossover=args.crossover,
            block_ms=args.block_ms,
            max_rounds=args.max_rounds,
        )
        options = SweepOptions(
            device=args.device,
            protocol=protocol,
            gpus=gpus,
            max_gpu_seconds=float(policy.limits.max_gpu_seconds),
            checkout=checkout_for(policy),
        )
        label = "CPU timing (not GPU numbers)" if cpu else f"GPU timing on {len(gpus or ())} GPU(s)"
        print(
            f"kernel-review bench: {len(plan.cases)} cases, base {base_sha[:12]} vs head {head_label[:20]}; {label}",
            file=sys.stderr,
        )
        out = Path(args.out) if args.out else None
        partial = (out or Path("kernel-review-results")).with_suffix(".partial.jsonl")
        result = run_sweep(
            plan.cases,
            base_root=base_root,
            head_root=head_root,
            base_rev=base_sha,
            head_rev=head_label,
            options=options,
            work_dir=work,
            progress=lambda line: print(log_safe(line), file=sys.stderr, flush=True),
            partial_path=partial,
            notes=[*notes, *plan.notes],
            started=started,
        )
        out = out or Path(f"kernel-review-results-{result.vendor}.json")
        dump_results(result, out)
        print(log_safe(format_table(result)))
        print(f"results: {out}", file=sys.stderr)
        if args.keep_work_dir:
            print(f"worker logs: {work / 'logs'}", file=sys.stderr)
        return 0
    finally:
        for tree in trees:
            gitutil.remove_worktree(repo, tree)
        if not args.keep_work_dir and not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


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
    lines = [
        f"# {result.timing_label}; vendor {result.vendor}; {result.gpu_seconds:.1f} GPU-seconds"
    ]
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
                f"geomean {name}: {speed(g.ratio)} ({speed_range(g.ci_low, g.ci_high)}) over {g.cases} cases"
            )
    if s.worst is not None:
        w = s.worst
        lines.append(
            f"worst: {w.kernel} {w.dtype} {'x'.join(map(str, w.shape))} {speed(w.ratio)} ({_interval(w.ci_low, w.ci_high)})"
        )
    lines.append(cost_line(result))
    for note in result.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def cost_line(result: SweepResult) -> str:
    """What the sweep cost all in: the GPU held from the command's start, per verdict."""
    verdicts = sum(1 for c in result.cases if c.status == "ok")
    held, per = result.held_gpu_seconds, result.gpu_s_per_verdict_all_in
    if held is None:
        return f"cost: {result.gpu_seconds:.1f} GPU-s in cases, {verdicts} verdicts"
    first = f"; first verdict at {result.first_verdict_s:.1f} s" if result.first_verdict_s else ""
    each = f" = {per:.3f} GPU-s per verdict all in" if per is not None else ""
    return (
        f"cost: {held:.1f} GPU-s held from the start for {verdicts} verdicts{each} "
        f"({result.gpu_seconds:.1f} s in the cases themselves){first}"
    )
