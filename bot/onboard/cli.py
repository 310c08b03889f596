"""``kernel-review init [--repo .] [--force] [--out PATH]``: write a policy for a repository.

Scans the repository's source (no import, no build), writes ``.github/kernel-review.toml`` (or
``--out``) with one ``[[kernels]]`` per op found, then validates what it wrote: every value it
could not infer is listed with its line, and ``kernel-review policy check`` refuses those lines
until they are filled. Without ``--force`` it replaces no file and does not shadow a
``[tool.kernel-review]`` table in ``pyproject.toml``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bot.errors import KernelReviewError, PolicyError
from bot.onboard.scan import read_repository
from bot.onboard.write import render_policy
from bot.outputs import prepare
from bot.policy.load import POLICY_FILE, PYPROJECT_TABLE, tree_policy, validate_policy

HELP = "scan a repository and write a policy for its kernels and benchmarks"


def register(subparsers: argparse._SubParsersAction) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = subparsers.add_parser("init", help=HELP, description=__doc__, formatter_class=raw)
    parser.add_argument("--repo", default=".", help="the repository root (default .)")
    parser.add_argument("--out", help=f"where to write the policy (default REPO/{POLICY_FILE})")
    parser.add_argument("--force", action="store_true", help="replace an existing file")
    parser.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    repo = Path(args.repo)
    if not repo.is_dir():
        raise KernelReviewError(
            f"{repo} is not a folder", hint="pass --repo with the repository's root folder"
        )
    out = prepare(args.out, option="--out") if args.out else repo / POLICY_FILE
    if (out.exists() or out.is_symlink()) and not args.force:
        raise KernelReviewError(
            f"{out} already exists; init does not replace it",
            hint="check it with `kernel-review policy check`, or pass --force to replace it",
        )
    if args.out is None and not args.force and _has_pyproject_policy(repo):
        raise KernelReviewError(
            f"{repo / 'pyproject.toml'} already has the policy ([tool.kernel-review]); a new "
            f"{POLICY_FILE} would take its place",
            hint="check it with `kernel-review policy check`, or pass --force to write "
            f"{POLICY_FILE} anyway",
        )
    scan = read_repository(repo.resolve())
    if not scan.ops:
        raise KernelReviewError(
            f"found no Triton, CUDA or HIP kernels launched from a function in {repo} "
            f"({scan.files_scanned} source files read)",
            hint="run init in the repository's root, or write the policy by hand (docs/policy.md)",
        )
    written = render_policy(scan)
    shown = os.path.relpath(out, repo) if not out.is_absolute() or args.out is None else str(out)
    policy, problems = validate_policy(written.text, shown)
    _write(out, written.text)
    print(f"wrote {out}: {len(scan.ops)} ops from {scan.files_scanned} source files")
    languages = {op.name: "+".join(op.languages) for op in scan.ops}
    for name, bench in written.benches:
        print(f"  {name:<24} {languages[name]:<16} {bench or 'no benchmark found'}")
    for guess in written.guesses:
        print(f"check: {guess}")
    if policy is not None:
        print("the policy is valid; run `kernel-review policy check` to see it with its defaults")
        return 0
    print(f"to fill in ({len(problems)}): init could not infer these; policy check refuses them")
    for problem in problems:
        print(f"  {problem}")
    return 0


def _has_pyproject_policy(repo: Path) -> bool:
    try:
        return tree_policy(repo).table == PYPROJECT_TABLE
    except PolicyError:
        return False


def _write(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` whole or not at all (a temporary file renamed into place)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kernel-review-", suffix=".toml", dir=out.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        raise KernelReviewError(
            f"cannot write {out}: {exc.strerror}", hint="pass --out with a writable path"
        ) from None
