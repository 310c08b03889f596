"""``kernel-review compiler-report`` and ``kernel-review first-call``.

``compiler-report`` cross-compiles the policy's Triton kernels, every config they can pick, for
every target the policy names (no GPU needed) and prints registers, spills, shared memory,
occupancy, matrix instructions, load widths and the layouts of the Triton GPU IR (how each load,
reduction and dot is spread over lanes and warps) per variant, then the flags. With ``--base REV``
it also compiles the kernels at REV (and their ``.cu`` files with nvcc) and prints old against
new.

``first-call`` measures what a fresh process pays before a kernel's first result, cold and warm:
on a GPU for real, or on a CPU by compiling for one target (``--device cpu``). Serving every
shape once from cold is derived from each shape's own first call (``--engine-option
time_distribution=on`` times it instead, autotuning every key once more). It exits 0 when
every kernel is within the deployment's budget (or the deployment has none), 4 when one is over
it, 5 when nothing could be measured and 6 when some kernels could not be.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

from bot import gitutil
from bot.contracts.base import VENDORS
from bot.errors import (
    EXIT_NOTHING_MEASURED,
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_WORSE,
    CompilerError,
    PolicyError,
    UsageError,
)
from bot.outputs import columns, plural, prepare, write_text
from bot.progress import Progress
from checks.compiler.targets import (
    VENDOR_TARGETS,
    compile_targets,
    known_target,
    known_target_names,
)
from checks.engine_options import Known, add_engine_option, given, on_off


def _jobs(text: str) -> int:
    """``--engine-option jobs=``: a whole number of processes, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of processes") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (got {value})")
    return value


# compiler-report's ``--engine-option`` keys (the compile cache is $KERNEL_REVIEW_CACHE's)
REPORT_OPTIONS: Known = {
    "jobs": (_jobs, "compile processes per target, 1 or more (default: cores)"),
}
# first-call's
FIRST_CALL_OPTIONS: Known = {
    "time_distribution": (
        on_off,
        "on|off: time serving every shape once as a pass of its own in the cold process (every "
        "key autotuned once more) instead of deriving it from each shape's own first call "
        "(default: off)",
    ),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    rep = subparsers.add_parser(
        "compiler-report",
        help="cross-compile the policy's Triton kernels for every target and report the result",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(rep)
    rep.add_argument(
        "--target", action="append", help="compile for this target (repeatable; default: policy)"
    )
    rep.add_argument(
        "--base", metavar="REV", help="also compile REV (and its .cu files): old vs new"
    )
    add_engine_option(rep, REPORT_OPTIONS)
    rep.set_defaults(handler=run_compiler_report)

    first = subparsers.add_parser(
        "first-call",
        help="measure the first-call cost (imports, compile, autotune) in fresh processes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(first)
    first.add_argument(
        "--device",
        default="cuda",
        choices=["cuda", "cpu"],
        help="'cuda' (a GPU: real first calls) or 'cpu' (compile-only for --target)",
    )
    first.add_argument("--target", help="compile-only target (default: the policy's first)")
    add_engine_option(first, FIRST_CALL_OPTIONS)
    first.set_defaults(handler=run_first_call)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", type=Path, default=Path("."), help="repository root (default .)")
    p.add_argument("--kernel", action="append", help="only this policy kernel (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE ('-': stdout)")


def _policy_and_specs(args: argparse.Namespace) -> tuple[Any, list]:
    from bot.policy.load import load_policy
    from checks.compiler.run import specs_from_policy

    if not args.repo.is_dir():
        raise UsageError(
            f"--repo {args.repo}: no such folder",
            hint="pass --repo with the repository's root (where its policy is)",
        )
    policy = load_policy(args.repo).policy
    specs = specs_from_policy(policy)
    if args.kernel:
        unknown = sorted(set(args.kernel) - {s.name for s in specs})
        if unknown:
            raise PolicyError(
                f"no kernel named {', '.join(unknown)} in the policy",
                hint="the policy's kernels are: " + ", ".join(s.name for s in specs),
            )
        specs = [s for s in specs if s.name in args.kernel]
    return policy, specs


def check_targets(targets: list[str], *, policy_targets: list[str]) -> None:
    """Refuse a ``--target`` this version has no table for (occupancy, register cap) unless the
    policy's ``[compiler]`` table names it, before anything compiles."""
    known = known_target_names()
    for target in targets:
        if target in policy_targets:
            continue
        try:
            if known_target(target):
                continue
        except PolicyError:  # not a name any vendor claims
            pass
        raise UsageError(
            f"--target {target}: not a target this version knows",
            hint=f"name one of {', '.join(known)}; to compile for another, add it to the "
            "policy's [compiler] " + " or ".join(f"{v}_targets" for v in VENDORS),
        )


def _policy_targets(policy: Any) -> list[str]:
    return compile_targets(policy.compiler, [t.vendor for t in VENDOR_TARGETS])


def _check_json(where: str | None) -> None:
    """Check ``--json``'s path before the long work, so a bad one fails at once."""
    if where is not None and where != "-":
        prepare(where, option="--json")


def _write_json(where: str | None, data: Any) -> None:
    if where is None:
        return
    text = json.dumps(data, indent=2)
    if where == "-":
        print(text)
    else:
        write_text(where, text + "\n", option="--json")


def run_compiler_report(args: argparse.Namespace) -> int:
    from checks.compiler.report import compare_reports
    from checks.compiler.run import build_compiler_report, targets_from_policy

    policy, specs = _policy_and_specs(args)
    if args.base:
        gitutil.rev_parse(gitutil.require_repo(args.repo), args.base)
    _check_json(args.json)
    if args.target:
        check_targets(args.target, policy_targets=_policy_targets(policy))
    targets = args.target or targets_from_policy(policy)
    sides = 2 if args.base else 1
    jobs = given(args.engine_option).get("jobs")
    with Progress("compiler report", sides * len(targets), unit="target") as bar:
        report = build_compiler_report(
            args.repo,
            specs,
            targets,
            jobs=jobs if isinstance(jobs, int) else None,
            progress=bar.step,
        )
        old = _base_report(args, policy, specs, targets, bar.step) if args.base else None
    out = sys.stderr if args.json == "-" else sys.stdout
    data: dict[str, Any] = {"report": report.model_dump(mode="json")}
    if old is not None:
        comparison = compare_reports(old, report)
        data["base_report"] = old.model_dump(mode="json")
        data["comparison"] = comparison.model_dump(mode="json")
        print(render_comparison(comparison), file=out)
    print(render_report(report), file=out)
    _write_json(args.json, data)
    return 0


def _base_report(
    args: argparse.Namespace, policy: Any, specs: list, targets: list[str], progress: Any
) -> Any:
    from checks.compiler.evidence import side_report

    paths = {k.name: tuple(k.paths) for k in policy.kernels if k.name in {s.name for s in specs}}
    return side_report(  # specs carry the policy's python_path
        args.repo, args.base, specs, targets, cxx_paths=paths, not_run=[], progress=progress
    )


def _fmt(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def render_report(report: Any) -> str:
    """Every variant, one row each: the policy's kernel, the Triton function, the whole config
    (never cut, so rows of one kernel can be told apart) and what the compiler made of it."""
    lines = [
        f"compiler report: {plural(len(report.records), 'variant')} on "
        f"{', '.join(report.targets)} (Triton {report.triton_version}; {report.compiled} "
        f"compiled, {report.cached} cached, {report.wall_s:.1f} s)"
    ]
    header = "kernel function target config regs spill(B) smem(B) occupancy"
    rows = [[*header.split(), "matrix instr", "load bits", "shapes"]]
    errors = []
    for r in report.records:
        if r.error:
            errors.append(f"{r.kernel} ({r.function}) {r.target} [{r.config_label}]: {r.error}")
            continue
        occ = (
            f"{r.occupancy_fraction:.0%}" if r.occupancy_fraction is not None else "-"
        ) + f" {r.occupancy_limiter or ''}".rstrip()
        shapes = ", ".join(r.shapes[:3]) + (" ..." if len(r.shapes) > 3 else "")
        rows.append(
            [
                *(r.kernel, r.function, r.target, r.config_label, _fmt(r.regs_per_thread)),
                *(_fmt(r.spill_bytes), _fmt(r.shared_bytes), occ, r.matrix_instr or "-"),
                *(_fmt(r.global_load_bits_max), shapes),
            ]
        )
    if len(rows) > 1:
        lines += columns(rows, right=frozenset({4, 5, 6, 9}))
    with_layouts = [r for r in report.records if not r.error and r.layouts]
    if with_layouts:
        lines.append("layouts (Triton GPU IR):")
        for r in with_layouts:
            lines.append(f"  {r.kernel} ({r.function}) {r.target} [{r.config_label}]")
            lines += [
                f"    {x.role} {'x'.join(map(str, x.shape))}"
                + (f" axis {x.axis}" if x.axis is not None else "")
                + f": {x.text()}"
                for x in r.layouts
            ]
    if errors:
        lines.append("errors:")
        lines += [f"  {e}" for e in errors]
    if report.flags:
        lines.append("flags:")
        lines += [f"  {f.severity}: {f.message}" for f in report.flags]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def _change(name: str, old: Any, new: Any, unit: str = "") -> str:
    if old == new:
        return f"{name} {_fmt(old, unit)}"
    return f"{name} {_fmt(old, unit)} -> {_fmt(new, unit)}"


def _pct_range(low: float | None, high: float | None) -> str:
    if high is None:
        return "-"
    if low is None or round(low, 2) == round(high, 2):
        return f"{high:.0%}"
    return f"{low:.0%}-{high:.0%}"


def render_comparison(comparison: Any) -> str:
    """Per kernel and target: the range over its variants, old -> new, and how many of the
    configs both sides compile changed; then each config that did."""
    lines = ["old -> new (per kernel and target, over every variant: most registers, spills "
             "and shared memory, occupancy worst-best)"]  # fmt: skip
    fields = ("regs_per_thread", "spill_bytes", "shared_bytes", "occupancy_fraction")
    for row in comparison.rows:
        if row.config_label is not None:
            continue
        same = [
            r
            for r in comparison.rows
            if r.config_label is not None and (r.kernel, r.target) == (row.kernel, row.target)
        ]
        changed = [
            r for r in same if any(getattr(r, f"old_{f}") != getattr(r, f"new_{f}") for f in fields)
        ]
        old_occ = _pct_range(row.old_occupancy_fraction_min, row.old_occupancy_fraction)
        new_occ = _pct_range(row.new_occupancy_fraction_min, row.new_occupancy_fraction)
        parts = [
            _change("regs", row.old_regs_per_thread, row.new_regs_per_thread),
            _change("spill", row.old_spill_bytes, row.new_spill_bytes, " B"),
            _change("smem", row.old_shared_bytes, row.new_shared_bytes, " B"),
            _change("occupancy", old_occ, new_occ),
            _change("matrix", row.old_matrix_instr or "-", row.new_matrix_instr or "-"),
        ]
        both = (
            f"{len(changed)} of the {plural(len(same), 'variant')} compiled on both sides changed"
            if same
            else "no variant is compiled on both sides (the config lists differ)"
        )
        lines.append(f"  {row.kernel} {row.target}: {', '.join(parts)}; {both}")
        for r in changed:
            diffs = [
                _change("regs", r.old_regs_per_thread, r.new_regs_per_thread),
                _change("spill", r.old_spill_bytes, r.new_spill_bytes, " B"),
                _change("smem", r.old_shared_bytes, r.new_shared_bytes, " B"),
                _change(
                    "occupancy",
                    _pct_range(None, r.old_occupancy_fraction),
                    _pct_range(None, r.new_occupancy_fraction),
                ),
            ]
            lines.append(f"    [{r.config_label}]: {', '.join(d for d in diffs if '->' in d)}")
        if row.old_layouts and row.old_layouts != row.new_layouts:
            lines += [f"    layout gone: {x}" for x in row.old_layouts if x not in row.new_layouts]
            lines += [f"    layout new:  {x}" for x in row.new_layouts if x not in row.old_layouts]
    lines += [f"  {f.severity}: {f.message}" for f in comparison.flags]
    return "\n".join(lines)


def run_first_call(args: argparse.Namespace) -> int:
    from checks.first_call.measure import measure_first_call
    from checks.sweep.gpus import require_torch

    timed = given(args.engine_option).get("time_distribution") is True
    require_torch("first-call")  # its probes import it, on a GPU and compile-only alike
    policy, specs = _policy_and_specs(args)
    mode: Literal["gpu", "compile-only"] = "compile-only" if args.device == "cpu" else "gpu"
    if mode == "gpu":
        _require_gpu()
    if args.target:  # an unknown target is refused before any process starts
        check_targets([args.target], policy_targets=_policy_targets(policy))
    target = args.target or _policy_targets(policy)[0]
    _check_json(args.json)
    reports = []
    # one priming process, then a cold and a warm one per kernel
    with Progress("first call", 2 * len(specs) + 1, unit="process") as bar:
        for i, spec in enumerate(specs):
            reports.append(
                measure_first_call(
                    args.repo,
                    spec,
                    mode=mode,
                    deployment_kind=policy.deployment.kind,
                    budget_ms=policy.deployment.first_call_budget_ms,
                    target=target,
                    device=args.device,
                    progress=bar.step,
                    prime=i == 0,
                    distribution="measured" if timed else "derived",
                )
            )
    out = sys.stderr if args.json == "-" else sys.stdout
    print(render_first_call(reports), file=out)
    _write_json(args.json, [r.model_dump(mode="json") for r in reports])
    return first_call_exit(reports)


def _require_gpu() -> None:
    import torch  # installed: run_first_call checked

    if not torch.cuda.is_available():
        raise CompilerError(
            "no GPU here, so the first call cannot run for real",
            hint="measure the compile-only cost instead: kernel-review first-call --device cpu",
        )


def first_call_exit(reports: list) -> int:
    """4 over budget, 5 nothing measured, 6 some kernels not measured, else 0; the first reason
    a kernel was not measured goes to stderr."""
    missing = [r for r in reports if r.verdict == "not-measured"]
    for r in missing[:1]:
        why = r.notes[0] if r.notes else "no result"
        print(f"kernel-review: {r.kernel} was not measured: {why}", file=sys.stderr)
    if reports and len(missing) == len(reports):
        return EXIT_NOTHING_MEASURED
    if any(r.verdict == "over-budget" for r in reports):
        return EXIT_WORSE
    return EXIT_SOME_FAILED if missing else EXIT_OK


def render_first_call(reports: list) -> str:
    lines = []
    for r in reports:
        where = r.target if r.mode == "compile-only" else (r.cold.device if r.cold else "-")
        budget = f"budget {r.budget_ms:.0f} ms" if r.budget_ms else "no budget"
        lines.append(f"{r.kernel} ({r.mode}, {where}; {r.deployment_kind}, {budget}): {r.verdict}")
        for run in (r.cold, r.warm):
            if run is None:
                continue
            lines.append(
                f"  {run.cache}: fixed {run.fixed_ms:.0f} ms (torch {run.import_torch_ms:.0f}, "
                f"triton {run.import_triton_ms:.0f}, entry {run.import_entry_ms:.0f}, "
                f"context {run.context_ms:.0f}, Triton set-up {run.triton_setup_ms:.0f})"
            )
            for s in run.standalone:
                tune = f", autotune {s.autotune_ms:.0f} ms" if s.autotune_ms else ""
                lines.append(
                    f"    {s.shape:<22} first call {_fmt(s.first_call_ms)} ms "
                    f"(compiled {s.compiles}, cache hits {s.cache_hits}, compile "
                    f"{s.compile_ms:.0f} ms{tune}) -> standalone {_fmt(s.standalone_ms)} ms"
                    + (f" ERROR {s.error}" if s.error else "")
                )
        lines.append(
            f"  distinct autotune keys {r.distinct_autotune_keys}, compiles {r.distinct_compiles}, "
            f"serving every shape once from cold: {_fmt(r.cold_total_ms)} ms"
            + (" (derived from each shape's own first call)" if r.cold_total_derived else "")
        )
        if r.over_budget_shapes:
            lines.append(f"  over budget cold: {', '.join(r.over_budget_shapes)}")
        if r.warm_over_budget_shapes:
            lines.append(f"  over budget warm: {', '.join(r.warm_over_budget_shapes)}")
        lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)
