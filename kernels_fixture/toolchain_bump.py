"""The fixture's toolchain history: Triton pinned to 3.5.1, then a commit that bumps it to 3.6.0.

On top of the fixture's head (``triton-rewrite``), ``add_toolchain_bump(repo)`` commits

pin, branch ``triton-3.5``
    ``pyproject.toml`` pins ``triton==3.5.1`` (the release before the one the kernels were
    tuned on);
bump, branch ``triton-bump``
    ``pyproject.toml`` pins ``triton==3.6.0``, and nothing else changes: no kernel source moves,
    so only the toolchain can make a kernel slower.

A pull request from ``triton-bump`` into ``triton-3.5`` is the review of a bump: every kernel of
the policy is measured, each side under its own Triton.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.errors import FixtureError
from bot.gitutil import commit_all, git
from kernels_fixture.build_repo import FixtureRepo

PIN_BRANCH = "triton-3.5"
BUMP_BRANCH = "triton-bump"
OLD_TRITON = "3.5.1"
NEW_TRITON = "3.6.0"
_HEAD_PIN = '"triton>=3.6,<3.7",'
PIN_DATE = "2026-02-02T09:00:00+00:00"
BUMP_DATE = "2026-02-09T09:00:00+00:00"


@dataclass(frozen=True)
class ToolchainBump:
    path: Path
    base_sha: str  # triton==3.5.1
    head_sha: str  # triton==3.6.0


def _pin(repo: Path, version: str) -> None:
    path = repo / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    current = next((ln for ln in text.splitlines() if '"triton' in ln), None)
    if current is None or (_HEAD_PIN not in current and '"triton==' not in current):
        raise FixtureError(
            "pyproject.toml of the fixture's head has no triton requirement line to pin",
            hint='keep `"triton>=3.6,<3.7",` in kernels_fixture/repo_files/pyproject.head.toml',
        )
    pinned = (
        current.split('"triton', 1)[0] + f'"triton=={version}",  # the release the kernels run on'
    )
    path.write_text(text.replace(current, pinned), encoding="utf-8")


def add_toolchain_bump(fixture: FixtureRepo) -> ToolchainBump:
    """Commit the pin and the bump on top of the fixture's head; returns the two SHAs."""
    repo = fixture.path
    git(repo, "checkout", "-q", "-B", PIN_BRANCH, fixture.head_sha)
    _pin(repo, OLD_TRITON)
    base = commit_all(repo, f"Pin triton to {OLD_TRITON}\n", date=PIN_DATE)
    git(repo, "checkout", "-q", "-B", BUMP_BRANCH)
    _pin(repo, NEW_TRITON)
    head = commit_all(
        repo,
        f"Bump triton to {NEW_TRITON}\n\nNo kernel changes: the new compiler alone.\n",
        date=BUMP_DATE,
    )
    return ToolchainBump(path=repo, base_sha=base, head_sha=head)
