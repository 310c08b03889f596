"""Thin, safe wrappers around the ``git`` command line (argument lists, never a shell)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bot.errors import GitError

# A fixed identity and dates so that commits made by the bot (fixture repositories, tests)
# are reproducible and never depend on the user's global git configuration.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "kernel-review",
    "GIT_AUTHOR_EMAIL": "kernel-review@localhost",
    "GIT_COMMITTER_NAME": "kernel-review",
    "GIT_COMMITTER_EMAIL": "kernel-review@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def _run(
    repo: str | os.PathLike[str],
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C repo args...``, its output as bytes; a GitError naming the command and git's
    own message when it fails (``check``), cannot start or runs past ``timeout``."""
    cmd = ["git", "-C", str(repo), *args]
    try:
        proc = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            env={**os.environ, **_GIT_ENV, **(env or {})},
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed", hint="install git and retry") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"`{' '.join(cmd[3:])}` took longer than {timeout:.0f}s") from exc
    if check and proc.returncode != 0:
        said = _text(proc.stderr).strip() or _text(proc.stdout).strip()
        raise GitError(
            f"`git {' '.join(args)}` failed in {repo}: {said}",
            hint="check that the path is a git repository and the revisions exist",
        )
    return proc


def _text(data: bytes) -> str:
    """git's output as text: UTF-8, bad bytes replaced, newlines made ``\\n``."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def git(
    repo: str | os.PathLike[str],
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    check: bool = True,
) -> str:
    """Run ``git -C repo args...`` and return stdout as text.

    Raises GitError naming the command and git's own message when it fails.
    """
    return _text(_run(repo, args, env=env, timeout=timeout, check=check).stdout)


def cat_blobs(repo: str | os.PathLike[str], blobs: Sequence[str]) -> dict[str, str]:
    """The text of each blob of ``blobs`` (object names), from one ``git cat-file --batch``:
    decoded as :func:`git` decodes its output. A name git does not find as a blob is left
    out."""
    if not blobs:
        return {}
    stdin = "".join(f"{b}\n" for b in blobs).encode()
    out, at, texts = _run(repo, ("cat-file", "--batch"), stdin=stdin).stdout, 0, {}
    while at < len(out):
        end = out.index(b"\n", at)
        fields = out[at:end].split()
        at = end + 1
        if len(fields) != 3 or not fields[2].isdigit():  # "<name> missing"
            continue
        size = int(fields[2])
        if fields[1] == b"blob":
            texts[fields[0].decode()] = _text(out[at : at + size])
        at += size + 1  # the content and its closing newline
    return texts


def init_repo(path: Path, *, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "core.autocrlf", "false")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(repo: Path, message: str, *, date: str = "2026-01-01T00:00:00+00:00") -> str:
    """Stage everything and commit with a fixed date; returns the new commit SHA.

    The index is emptied first so every file is hashed again: a file replaced by one of the
    same size and modification time (``shutil.copy2`` keeps the source's) would otherwise be
    taken as unchanged from git's stat cache.
    """
    git(repo, "rm", "-r", "-q", "--cached", "--ignore-unmatch", ".")
    git(repo, "add", "-A")
    git(
        repo,
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        message,
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
    )
    return rev_parse(repo, "HEAD")


def require_repo(path: str | os.PathLike[str], *, option: str = "--repo") -> Path:
    """``path`` resolved, when it is a git checkout; else an error saying which it is not."""
    where = Path(path).expanduser()
    if not where.is_dir():
        raise GitError(
            f"{option} {path}: no such folder",
            hint=f"pass {option} with the path of a git checkout",
        )
    inside = git(where, "rev-parse", "--is-inside-work-tree", check=False).strip()
    if inside != "true":
        raise GitError(
            f"{option} {path} is not a git repository",
            hint=f"pass {option} with the path of a git checkout (where `git status` works)",
        )
    return where.resolve()


def rev_parse(repo: str | os.PathLike[str], rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except GitError as exc:
        raise GitError(
            f"revision {rev!r} does not exist in {repo}",
            hint="pass a branch, tag or commit SHA that `git log` shows",
        ) from exc


def diff_text(
    repo: str | os.PathLike[str],
    base: str,
    head: str,
    *,
    paths: Sequence[str] = (),
    resolved: bool = False,
) -> str:
    """The unified diff from base to head, with renames detected, as text; ``resolved``: base
    and head are commits' SHAs already (``rev_parse``'s), not resolved again."""
    base_sha = base if resolved else rev_parse(repo, base)
    head_sha = head if resolved else rev_parse(repo, head)
    return git(
        repo,
        "diff",
        "--no-color",
        "--no-ext-diff",
        "-M",
        "--full-index",
        base_sha,
        head_sha,
        "--",
        *paths,
        timeout=300,
    )


def merge_base(repo: str | os.PathLike[str], a: str, b: str) -> str:
    return git(repo, "merge-base", rev_parse(repo, a), rev_parse(repo, b)).strip()


def show_file(repo: str | os.PathLike[str], rev: str, path: str) -> str | None:
    """The text of ``path`` at ``rev``, or None when it does not exist there."""
    try:
        git(repo, "cat-file", "-e", f"{rev}:{path}")
    except GitError:
        return None
    return git(repo, "show", f"{rev}:{path}")


def list_files(repo: str | os.PathLike[str], rev: str) -> list[str]:
    return [p for p in git(repo, "ls-tree", "-r", "--name-only", rev).splitlines() if p]


def tree_files(root: str | os.PathLike[str]) -> list[str]:
    """The files of a working tree: tracked, and untracked ones git does not ignore."""
    listed = git(root, "ls-files", "--cached", "--others", "--exclude-standard")
    return [p for p in listed.splitlines() if p]


def add_worktree(repo: str | os.PathLike[str], path: Path, rev: str) -> Path:
    """Check out ``rev`` (detached) into a new worktree at ``path``."""
    git(repo, "worktree", "add", "--detach", "-f", str(path), rev_parse(repo, rev))
    return path


def remove_worktree(repo: str | os.PathLike[str], path: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(path), check=False)
    git(repo, "worktree", "prune", check=False)
