"""Kernel-change analysis of a git repository between two revisions (the I/O edge).

    analyze_repo(repo, base, head, policy=None) -> Analysis

Reads the diff with rename detection, then whole files at base and head for the files that can
hold kernels (one ``git grep`` per side picks them, so a diff of thousands of files costs a few
git calls, not thousands). The policy, unless given, is the one at ``base``: a pull request cannot
change the rules it is judged by.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

from bot.analysis.classify import analyze_diff, analyze_parsed
from bot.analysis.diff import parse_diff
from bot.analysis.model import Analysis
from bot.analysis.text import source_kind
from bot.gitutil import diff_text, git, list_files, rev_parse, show_file
from bot.policy.load import POLICY_FILE, PYPROJECT_TABLE, parse_policy
from bot.policy.model import Policy

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["analyze_diff", "analyze_repo", "policy_at"]

# Whatever a file needs to contain for a whole read to find more than its diff lines show.
_MARKERS = (
    r"triton|__global__|<<<|hipLaunchKernel|cudaLaunchKernel|PYBIND11_MODULE|TORCH_LIBRARY|\]\s*\("
)
_GREP_BATCH = 400
MAX_READ_CHARS = 16 * 1024 * 1024


def analyze_repo(
    repo: str | os.PathLike[str],
    base: str,
    head: str,
    *,
    policy: Policy | None = None,
    use_base_policy: bool = True,
) -> Analysis:
    base_sha = rev_parse(repo, base)
    head_sha = rev_parse(repo, head)
    parsed = parse_diff(diff_text(repo, base_sha, head_sha))
    if policy is None and use_base_policy:
        policy = policy_at(repo, base_sha)
    old_paths = [f.old_path for f in parsed.files if f.old_path and source_kind(f.old_path)]
    new_paths = [f.new_path for f in parsed.files if f.new_path and source_kind(f.new_path)]
    budget = _Budget(MAX_READ_CHARS)
    analysis = analyze_parsed(
        parsed,
        policy=policy,
        old_source=_reader(repo, base_sha, old_paths, _marked(repo, base_sha, old_paths), budget),
        new_source=_reader(repo, head_sha, new_paths, _marked(repo, head_sha, new_paths), budget),
        old_files=list_files(repo, base_sha),
        thrifty=False,  # git grep already chose the files worth reading
    )
    if budget.refused:
        note = (
            f"read {MAX_READ_CHARS >> 20} MiB of whole files, the most one analysis reads; "
            f"{len(set(budget.refused))} more were read from their diff lines only"
        )
        analysis = analysis.model_copy(
            update={"notes": [*analysis.notes, note], "from_context_only": True}
        )
    return analysis


def policy_at(repo: str | os.PathLike[str], rev: str) -> Policy | None:
    """The policy committed at ``rev`` (``.github/kernel-review.toml``, else
    ``[tool.kernel-review]`` in ``pyproject.toml``), or None when there is none."""
    sha = rev_parse(repo, rev)
    text = show_file(repo, sha, POLICY_FILE)
    if text is not None:
        return parse_policy(text, f"{POLICY_FILE} (at {sha[:12]})")
    pyproject = show_file(repo, sha, "pyproject.toml")
    if pyproject is None:
        return None
    try:
        tool = tomllib.loads(pyproject).get("tool", {})
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    if isinstance(tool, dict) and PYPROJECT_TABLE[1] in tool:
        return parse_policy(pyproject, f"pyproject.toml (at {sha[:12]})", table=PYPROJECT_TABLE)
    return None


def _marked(repo: str | os.PathLike[str], sha: str, paths: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(paths), _GREP_BATCH):
        batch = paths[i : i + _GREP_BATCH]
        out = git(
            repo,
            "--literal-pathspecs",
            "grep",
            "-l",
            "-I",
            "-E",
            _MARKERS,
            sha,
            "--",
            *batch,
            check=False,
        )
        prefix = f"{sha}:"
        found.update(line[len(prefix) :] for line in out.splitlines() if line.startswith(prefix))
    return found


class _Budget:
    """Whole files read for one analysis, in characters: past it, files are left to their diff
    lines, so a pull request touching a thousand huge files costs bounded time."""

    def __init__(self, chars: int) -> None:
        self.left = chars
        self.refused: list[str] = []


def _reader(
    repo: str | os.PathLike[str],
    sha: str,
    diff_paths: Iterable[str],
    marked: set[str],
    budget: _Budget,
) -> Callable[[str], str | None]:
    """path -> text at ``sha``. A file of the diff that ``git grep`` found no kernel marker in
    reads as empty: whatever else it holds, no kernel, launch or binding is made of it."""
    in_diff = set(diff_paths)
    cache: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path in in_diff and path not in marked:
            return ""
        if path not in cache:
            if budget.left <= 0:
                budget.refused.append(path)
                return None
            text = show_file(repo, sha, path)
            budget.left -= len(text or "")
            cache[path] = text
        return cache[path]

    return read
