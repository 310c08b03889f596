"""``kernel-review policy check [PATH] [--json]``: validate a policy and show it with defaults.

PATH is a repository root (the policy is looked up as the bot would), a policy ``.toml`` file,
or a ``pyproject.toml`` (its ``[tool.kernel-review]`` table). Exit 0 when valid, 2 when not.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import Any

from bot.contracts.base import VENDORS
from bot.errors import PolicyError
from bot.policy.load import (
    POLICY_FILE,
    Policy,
    PolicySource,
    problems_error,
    read_policy_file,
    tree_policy,
    validate_policy,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policy", help="work with the kernel-review policy", description=__doc__
    )
    sub = parser.add_subparsers(dest="policy_command", metavar="SUBCOMMAND")
    check = sub.add_parser(
        "check",
        help="validate a policy and print it with the defaults filled in",
        description="Validate the policy and print the effective policy. PATH is a repository "
        f"root (reads {POLICY_FILE}, else [tool.kernel-review] in pyproject.toml), a policy "
        ".toml file, or a pyproject.toml. Exits 0 when valid, 2 when not.",
    )
    check.add_argument("path", nargs="?", default=".", help="repository root or file (default .)")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(handler=run_check)
    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _source(path: Path) -> PolicySource:
    if path.is_dir():
        return tree_policy(path)
    if not path.exists():
        raise PolicyError(
            f"{path} does not exist",
            hint="give a repository root, a policy .toml file or a pyproject.toml",
        )
    if path.suffix != ".toml":
        raise PolicyError(
            f"{path} is not a .toml file",
            hint="give a repository root, a policy .toml file or a pyproject.toml",
        )
    return read_policy_file(path)


def policy_warnings(policy: Policy, today: date) -> list[str]:
    """What is valid but worth a maintainer's look: ``[[accepted]]`` entries past their date."""
    return [
        f"accepted[{i}] ({entry.kernel}, owner {entry.owner}) expired on "
        f"{entry.expires.isoformat()}: it no longer accepts anything; renew its expires date "
        "or delete it"
        for i, entry in policy.expired_acceptances(today)
    ]


def run_check(args: argparse.Namespace) -> int:
    source = _source(Path(args.path))
    policy, problems = validate_policy(source.text, source.display, table=source.table)
    where = {"path": source.path, "table": ".".join(source.table) or None}
    warnings = policy_warnings(policy, date.today()) if policy is not None else []
    if args.json:
        doc: dict[str, Any]
        if policy is None:
            doc = {"valid": False, **where, "problems": [p.model_dump() for p in problems]}
        else:
            doc = {
                "valid": True,
                **where,
                "warnings": warnings,
                "policy": policy.model_dump(mode="json", by_alias=True),
            }
        print(json.dumps(doc, indent=2))
        return 0 if policy is not None else 2
    if policy is None:
        raise problems_error(problems, source.display)
    table = f" [{'.'.join(source.table)}]" if source.table else ""
    print(f"{source.display}{table}: valid\n")
    for warning in warnings:
        print(f"warning: {warning}")
    if warnings:
        print()
    print(render_policy(policy))
    return 0


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def render_policy(policy: Policy) -> str:
    """The effective policy (defaults filled in) as readable text."""
    d, lim, comp, gh = policy.deployment, policy.limits, policy.compiler, policy.github
    budget = (
        f", first-call budget {d.first_call_budget_ms:g} ms"
        if d.first_call_budget_ms is not None
        else ", no first-call budget"
    )
    lines = [
        f"tolerance    {_percent(policy.tolerance)} (head/base time up to "
        f"{1 + policy.tolerance:g} counts as the same)",
        f"rewrite      {_percent(policy.rewrite_price)} (a CUDA/HIP kernel rewritten in Triton "
        f"may be up to {1 + policy.rewrite_price:g}x the base time at each shape)",
        f"vendors      {', '.join(policy.vendors)}",
        f"owners       {', '.join(policy.owners) if policy.owners else '(none named)'}",
        f"deployment   {d.kind}{budget}",
        f"limits       {lim.max_shapes} shapes x dtypes per kernel, "
        f"{lim.max_elements_per_tensor:,} elements per tensor, "
        f"{lim.max_gpu_seconds} GPU-seconds per run",
        "compiler     " + "; ".join(f"{v} {', '.join(comp.for_vendors([v]))}" for v in VENDORS),
        f"github       /bench needs {gh.bench_permission} permission, /bench accept "
        f"{gh.accept_permission}; merge gate: {gh.merge_gate}",
        "",
        f"kernels ({len(policy.kernels)})",
    ]
    for kernel in policy.kernels:
        tolerance = (
            f"{_percent(kernel.tolerance)} (overrides the global {_percent(policy.tolerance)})"
            if kernel.tolerance is not None
            else f"{_percent(policy.tolerance)} (global)"
        )
        price = kernel.effective_rewrite_price(policy)
        rewrite = (
            f"{_percent(price)} (overrides the global {_percent(policy.rewrite_price)})"
            if kernel.rewrite_price is not None
            else f"{_percent(price)} (its tolerance; the global {_percent(policy.rewrite_price)} "
            "is below it)"
            if price != policy.rewrite_price
            else f"{_percent(price)} (global)"
        )
        cases = len(kernel.shapes) * len(kernel.dtypes)
        lines += [
            f"  {kernel.name}",
            f"    bench      {kernel.bench}",
            f"    baseline   {kernel.baseline or '(none)'}",
            f"    paths      {', '.join(kernel.paths)}",
            f"    dtypes     {', '.join(kernel.dtypes)}",
            f"    tolerance  {tolerance}",
            f"    rewrite    {rewrite}",
            f"    shapes     {len(kernel.shapes)} x {len(kernel.dtypes)} dtypes = {cases} "
            f"measurements (limit {lim.max_shapes})",
        ]
        for shape in kernel.shapes:
            dims = " x ".join(str(n) for n in shape.dims)
            lines.append(f"      {dims:<24} weight {shape.weight:g}")
    if policy.accepted:
        lines += ["", f"accepted ({len(policy.accepted)})"]
    for entry in policy.accepted:
        shapes = ", ".join("x".join(map(str, s)) for s in entry.shapes) or "every shape"
        lines.append(
            f"  {entry.kernel} at {shapes}: up to {entry.ratio:g}x the base time, owner "
            f"{entry.owner}, until {entry.expires.isoformat()}: {entry.reason}"
        )
    return "\n".join(lines)
