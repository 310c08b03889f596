"""``kernel-review init [--repo .] [--out PATH] [--only PATH]``: write a policy for a repository.

Scans the repository's source (no import, no build) and writes ``.github/kernel-review.toml``
(or ``--out``) with one ``[[kernels]]`` per op (a launching file: its kernels, its paths, named
after its public function or module). Where the repository has benchmarks, the ops they call
are written, ranked by how many call sites launch them, at most 40 of them and no more than fit
in half the policy's size cap; ``--only PATH`` writes the ops with a file under PATH instead, as
many as fit. Every op left out is printed on one
line with the reason; the ops no benchmark calls get a bench entry stub in
``kernel_review_bench.py`` at the root (never replaced). Where no op has a benchmark, they are
written with the values to fill in, which ``kernel-review policy check`` refuses at their lines.
It replaces no file but one ``--out`` names, and writes no ``.github/kernel-review.toml`` that
would shadow a ``[tool.kernel-review]`` table in ``pyproject.toml`` unless ``--out`` names it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bot.errors import KernelReviewError, PolicyError
from bot.onboard.choose import DEFAULT_MAX_KERNELS, Choice, choose, drop_last
from bot.onboard.scan import Op, read_repository
from bot.onboard.stubs import STUB_MODULE, render_stubs, stub_name
from bot.onboard.write import render_policy
from bot.outputs import prepare
from bot.policy.load import (
    MAX_POLICY_BYTES,
    POLICY_FILE,
    PYPROJECT_TABLE,
    tree_policy,
    validate_policy,
)

SIZE_BUDGET = MAX_POLICY_BYTES // 2  # well under the cap, with room for the maintainer's edits
HELP = "scan a repository and write a policy for its kernels and benchmarks"


def register(subparsers: argparse._SubParsersAction) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = subparsers.add_parser("init", help=HELP, description=__doc__, formatter_class=raw)
    parser.add_argument("--repo", default=".", help="the repository root (default .)")
    parser.add_argument(
        "--out",
        help=f"where to write the policy, replacing a file there (default REPO/{POLICY_FILE}, "
        "never replaced)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATH",
        help=f"write the ops with a file under PATH, relative to the root, as many as fit "
        f"(repeatable; default: the {DEFAULT_MAX_KERNELS} best ranked ops)",
    )
    parser.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace) -> int:
    repo = Path(args.repo)
    if not repo.is_dir():
        raise KernelReviewError(
            f"{repo} is not a folder", hint="pass --repo with the repository's root folder"
        )
    out = prepare(args.out, option="--out") if args.out else repo / POLICY_FILE
    if args.out is None and (out.exists() or out.is_symlink()):
        raise KernelReviewError(
            f"{out} already exists; init does not replace it",
            hint=f"check it with `kernel-review policy check`, or pass --out {out} to replace it",
        )
    if args.out is None and _has_pyproject_policy(repo):
        raise KernelReviewError(
            f"{repo / 'pyproject.toml'} already has the policy ([tool.kernel-review]); a new "
            f"{POLICY_FILE} would take its place",
            hint=f"check it with `kernel-review policy check`, or pass --out {out} to write it "
            "anyway",
        )
    scan = read_repository(repo.resolve())
    if not scan.ops:
        raise KernelReviewError(
            f"found no Triton, CUDA or HIP kernels launched from a function in {repo} "
            f"({scan.files_scanned} source files read)",
            hint="run init in the repository's root, or write the policy by hand (docs/policy.md)",
        )
    choice = choose(scan.ops, only=args.only)
    if not choice.kept:
        raise KernelReviewError(
            f"none of the {len(scan.ops)} ops found has a file under --only " + " ".join(args.only),
            hint="give --only a folder or file of the repository, relative to its root",
        )
    written = render_policy(scan, choice.kept)
    while len(written.text.encode()) > SIZE_BUDGET and len(choice.kept) > 1:
        choice = drop_last(choice, f"the policy is kept under {SIZE_BUDGET // 1024} KiB")
        written = render_policy(scan, choice.kept)
    stubs = _write_stubs(repo, _wanting(choice, DEFAULT_MAX_KERNELS))
    if set(stubs) & set(choice.kept):
        written = render_policy(scan, choice.kept, stubbed=frozenset(op.name for op in stubs))
    shown = os.path.relpath(out, repo) if not out.is_absolute() or args.out is None else str(out)
    policy, problems = validate_policy(written.text, shown)
    _write(out, written.text)
    print(
        f"wrote {out}: {len(choice.kept)} of {len(scan.ops)} ops from {scan.files_scanned} "
        "source files"
    )
    languages = {op.name: "+".join(op.languages) for op in choice.kept}
    for name, bench in written.benches:
        print(f"  {name:<24} {languages[name]:<16} {bench or 'no benchmark found'}")
    if choice.left_out:
        print(f"left out ({len(choice.left_out)}):")
        for left in choice.left_out:
            stub = f"; stub {STUB_MODULE}:{stub_name(left.op)}" if left.op in stubs else ""
            print(f"  {left.line()}{stub}")
    if scan.unmatched:
        named = ", ".join(b.spec() for b in scan.unmatched[:3])
        more = f" and {len(scan.unmatched) - 3} more" if len(scan.unmatched) > 3 else ""
        print(f"benchmarks that call none of the ops ({len(scan.unmatched)}): {named}{more}")
    for guess in written.guesses:
        print(f"check: {guess}")
    if policy is not None:
        print("the policy is valid; run `kernel-review policy check` to see it with its defaults")
        return 0
    print(f"to fill in ({len(problems)}): init could not infer these; policy check refuses them")
    for problem in problems:
        print(f"  {problem}")
    return 0


def _wanting(choice: Choice, most: int) -> tuple[Op, ...]:
    """The ops that get a bench entry stub: those written without a benchmark (none has one),
    else the best ranked of those left out for want of one, at most ``most``."""
    if not any(op.benchmark for op in choice.kept):
        return choice.kept
    return tuple(x.op for x in choice.left_out if x.unbenched)[:most]


def _write_stubs(repo: Path, wanting: tuple[Op, ...]) -> tuple[Op, ...]:
    """Write bench entry stubs for ``wanting`` into ``REPO/kernel_review_bench.py``, unless
    that file exists; the ops given a stub."""
    path = repo / f"{STUB_MODULE}.py"
    if not wanting or path.exists():
        if wanting:
            print(f"{path} exists: no bench entry stubs written")
        return ()
    _write(path, render_stubs(wanting))
    print(f"wrote {path}: bench entry stubs for {len(wanting)} ops no benchmark calls")
    return wanting


def _has_pyproject_policy(repo: Path) -> bool:
    try:
        return tree_policy(repo).table == PYPROJECT_TABLE
    except PolicyError:
        return False


def _write(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` whole or not at all (a temporary file renamed into place)."""
    suffix = out.suffix or ".tmp"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kernel-review-", suffix=suffix, dir=out.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        raise KernelReviewError(
            f"cannot write {out}: {exc.strerror}", hint="pass --out with a writable path"
        ) from None
