"""``kernel-review compiler-report`` and ``kernel-review first-call``.

``compiler-report`` cross-compiles the policy's Triton kernels, every config they can pick, for
every target the policy names (no GPU needed) and prints registers, spills, shared memory,
occupancy, matrix instructions, load widths and the layouts of the Triton GPU IR (how each load,
reduction and dot is spread over lanes and warps) per variant, then the flags. With ``--base REV``
it also compiles the kernels at REV (and their ``.cu`` files with nvcc) and prints old against
new.

``first-call`` measures what a fresh process pays before a kernel's first result, cold and warm:
on a GPU for real, or on a CPU by compiling for one target (``--device cpu``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.errors import PolicyError


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
    rep.add_argument("--jobs", type=int, help="compile processes per target (default: cores)")
    rep.add_argument(
        "--cache-dir", type=Path, help="default $KERNEL_REVIEW_CACHE or ~/.cache/kernel-review"
    )
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
        help="'cuda' (a GPU: real first calls) or 'cpu' (compile-only for --target)",
    )
    first.add_argument("--target", help="compile-only target (default: the policy's first)")
    first.set_defaults(handler=run_first_call)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", type=Path, default=Path("."), help="repository root (default .)")
    p.add_argument("--kernel", action="append", help="only this policy kernel (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE ('-': stdout)")


def _policy_and_specs(args: argparse.Namespace) -> tuple[Any, list]:
    from bot.policy.load import load_policy
    from checks.compiler.run import specs_from_policy

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


def _write_json(where: str | None, data: Any) -> None:
    if where is None:
        return
    text = json.dumps(data, indent=2)
    if where == "-":
        print(text)
    else:
        Path(where).write_text(text + "\n")


def run_compiler_report(args: argparse.Namespace) -> int:
    from checks.compiler.report import compare_reports
    from checks.compiler.run import build_compiler_report, targets_from_policy

    policy, specs = _policy_and_specs(args)
    targets = args.target or targets_from_policy(policy)
    report = build_compiler_report(
        args.repo, specs, targets, cache_dir=args.cache_dir, jobs=args.jobs
    )
    out = sys.stderr if args.json == "-" else sys.stdout
    data: dict[str, Any] = {"report": report.model_dump(mode="json")}
    if args.base:
        old = _base_report(args, policy, specs, targets)
        comparison = compare_reports(old, report)
        data["base_report"] = old.model_dump(mode="json")
        data["comparison"] = comparison.model_dump(mode="json")
        print(render_comparison(comparison), file=out)
    print(render_report(report), file=out)
    _write_json(args.json, data)
    return 0


def _base_report(args: argparse.Namespace, policy: Any, specs: list, targets: list[str]) -> Any:
    from checks.compiler.evidence import side_report

    paths = {k.name: tuple(k.paths) for k in policy.kernels if k.name in {s.name for s in specs}}
    return side_report(args.repo, args.base, specs, targets, cxx_paths=paths, not_run=[])


def _fmt(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def render_report(report: Any) -> str:
    lines = [
        f"compiler report: {len(report.records)} variants on {', '.join(report.targets)} "
        f"(Triton {report.triton_version}; {report.compiled} compiled, {report.cached} cached, "
        f"{report.wall_s:.1f} s)",
        "kernel      target  config                                    regs spill(B) smem(B)  "
        "occupancy  matrix instr                 load bits  shapes",
    ]
    for r in report.records:
        occ = (
            f"{r.occupancy_fraction:.0%}" if r.occupancy_fraction is not None else "-"
        ) + f" {r.occupancy_limiter or ''}".rstrip()
        if r.error:
            lines.append(
                f"{r.kernel:<11} {r.target:<7} {r.config_label[:41]:<41} ERROR {r.error[:90]}"
            )
            continue
        lines.append(
            f"{r.kernel:<11} {r.target:<7} {r.config_label[:41]:<41} {_fmt(r.regs_per_thread):>4} "
            f"{_fmt(r.spill_bytes):>8} {_fmt(r.shared_bytes):>7}  {occ:<10} "
            f"{(r.matrix_instr or '-')[:28]:<28} {_fmt(r.global_load_bits_max):>9}  "
            f"{', '.join(r.shapes[:3])}{' ...' if len(r.shapes) > 3 else ''}"
        )
        lines += [
            f"    {x.role} {'x'.join(map(str, x.shape))}"
            + (f" axis {x.axis}" if x.axis is not None else "")
            + f": {x.text()}"
            for x in r.layouts
        ]
    if report.flags:
        lines.append("flags:")
        lines += [f"  {f.severity}: {f.message}" for f in report.flags]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def render_comparison(comparison: Any) -> str:
    lines = ["old -> new (per kernel and target: the best and worst variant)"]
    for row in comparison.rows:
        if row.config_label is not None:
            continue

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{v:.0%}"

        lines.append(
            f"  {row.kernel} {row.target}: regs {_fmt(row.old_regs_per_thread)} -> "
            f"{_fmt(row.new_regs_per_thread)}, spill {_fmt(row.old_spill_bytes)} -> "
            f"{_fmt(row.new_spill_bytes)} B, occupancy {pct(row.old_occupancy_fraction)} -> "
            f"{pct(row.new_occupancy_fraction)}, matrix {row.old_matrix_instr or '-'} -> "
            f"{row.new_matrix_instr or '-'}"
        )
        if row.old_layouts and row.old_layouts != row.new_layouts:
            lines += [f"    layout gone: {x}" for x in row.old_layouts if x not in row.new_layouts]
            lines += [f"    layout new:  {x}" for x in row.new_layouts if x not in row.old_layouts]
    lines += [f"  {f.severity}: {f.message}" for f in comparison.flags]
    return "\n".join(lines)


def run_first_call(args: argparse.Namespace) -> int:
    from checks.compiler.targets import VENDOR_TARGETS, compile_targets
    from checks.first_call.measure import measure_first_call

    policy, specs = _policy_and_specs(args)
    mode = "compile-only" if args.device == "cpu" else "gpu"
    if mode == "gpu":
        import torch

        if not torch.cuda.is_available():
            from bot.errors import CompilerError

            raise CompilerError(
                "no GPU here, so the first call cannot run for real",
                hint="measure the compile-only cost instead: kernel-review first-call --device cpu",
            )
    target = args.target or compile_targets(policy.compiler, [t.vendor for t in VENDOR_TARGETS])[0]
    reports = [
        measure_first_call(
            args.repo,
            spec,
            mode=mode,
            deployment_kind=policy.deployment.kind,
            budget_ms=policy.deployment.first_call_budget_ms,
            target=target,
            device=args.device,
        )
        for spec in specs
    ]
    out = sys.stderr if args.json == "-" else sys.stdout
    print(render_first_call(reports), file=out)
    _write_json(args.json, [r.model_dump(mode="json") for r in reports])
    return 0


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
        )
        if r.over_budget_shapes:
            lines.append(f"  over budget cold: {', '.join(r.over_budget_shapes)}")
        if r.warm_over_budget_shapes:
            lines.append(f"  over budget warm: {', '.join(r.warm_over_budget_shapes)}")
        lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)
