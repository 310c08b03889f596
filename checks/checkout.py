"""A side's checkout made ready for its workers: the import path, and the policy's build step.

``[setup] command`` (for example ``python setup.py build_ext --inplace``: the base side of a
rewrite is usually a compiled C++ extension) runs in each worktree before its workers start,
under ``/bin/sh``, in the scrubbed environment the workers get (``checks.worker_env``), with the
side's measuring interpreter's folder first on ``PATH`` so ``python`` and ``pip`` are the ones
that will import the result (each side's own toolchain when the change moves it, see
``checks.toolchain_env``), and killed with its process group after ``timeout_s``.

It is cached by the tree it built: after a build of a clean worktree, the files it left that git
does not track are copied to the cache under a key made of all that decides them (the tree's
hash, the command, the interpreter and the distributions installed beside it); the next checkout
of the same tree gets those files back instead of a rebuild. A worktree with local changes is
always built. The cache outlives the run, so only a trusted run writes it
(``checks.procs.sandbox.trusted_run``: not a pull request's measure job, whose build runs the
pull request's code), with the entry's seal beside it (``<key>.sha256``: the SHA-256 of its files and a print of their
metadata, ``checks.worker_env.write_seal``); an entry is restored only while it matches. An untrusted run restores what matches and keeps
nothing; a trusted run replaces an entry that does not match.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bot import gitutil
from bot.errors import GitError, KernelReviewError
from bot.outputs import cache_root
from checks.procs import launch
from checks.procs.sandbox import trusted_run
from checks.worker_env import scrubbed_env, seal_matches, write_seal

MAX_CACHED_BYTES = 4 * 2**30
LOG_TAIL = 2000


class Checkout(BaseModel):
    """What a checkout needs before its workers start (from the policy's python_path, [setup])."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    python_path: tuple[str, ...] = ()
    setup_command: str | None = None
    setup_timeout_s: float = 1800.0


class SetupError(KernelReviewError):
    """The build step failed or ran out of time; the message carries the end of its output."""


def checkout_for(policy: object) -> Checkout:
    """The checkout needs a ``bot.policy.model.Policy`` states."""
    setup = getattr(policy, "setup", None)
    return Checkout(
        python_path=tuple(getattr(policy, "python_path", ()) or ()),
        setup_command=setup.command if setup else None,
        setup_timeout_s=float(setup.timeout_s) if setup else 1800.0,
    )


def default_cache_dir() -> Path:
    return cache_root() / "setup"


def prepare(
    root: Path,
    checkout: Checkout,
    *,
    log_dir: Path,
    cache_dir: Path | None = None,
    python: str | None = None,
) -> str:
    """Run the build step in ``root`` (or restore its cached output); a line for the results'
    notes saying which, or ``""`` when there is no build step. SetupError when it fails.
    ``python``: the interpreter this side's workers run under (its own toolchain's, when the
    change moves it), first on the command's ``PATH``; the bot's own by default."""
    command = checkout.setup_command
    if not command:
        return ""
    python = python or sys.executable
    cache = cache_dir or default_cache_dir()
    key = _cache_key(root, command, python)
    mismatch = ""
    if key is not None:
        restored, mismatch = _restore(cache / key, root)
        if restored:
            return f"setup ({root.name}): restored the build of this tree from the cache"
    before = set(_untracked(root))
    log = log_dir / f"setup-{root.name}.log"
    seconds = _run(root, command, checkout.setup_timeout_s, log, python)
    trusted = trusted_run()
    if key is not None and trusted:
        _store(cache / key, root, sorted(set(_untracked(root)) - before))
    said = f"setup ({root.name}): `{command}` took {seconds:.0f} s"
    if mismatch:
        done = "stored again" if trusted else "not used (a trusted run replaces it)"
        said += f"; {mismatch} and was {done}"
    return said


def _cache_key(root: Path, command: str, python: str) -> str | None:
    try:
        tree = gitutil.git(root, "rev-parse", "--verify", "HEAD^{tree}").strip()
        dirty = gitutil.git(root, "status", "--porcelain", "--untracked-files=no").strip()
    except GitError:
        return None
    if dirty:
        return None
    text = "\n".join((tree, command, python, sys.version, *_installed(python)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _installed(python: str) -> list[str]:
    """The distributions (name and version) installed beside ``python``: a build against
    another torch is another build."""
    prefix = Path(python).parent.parent
    return sorted(p.name for p in prefix.glob("lib*/python*/site-packages/*.dist-info"))


# an entry's files and its manifest
_MAX_ENTRY_BYTES = MAX_CACHED_BYTES + 2**20


def _untracked(root: Path) -> list[str]:
    try:
        out = gitutil.git(root, "ls-files", "--others", "-z")
    except GitError:
        return []
    return [p for p in out.split("\0") if p]


def _run(root: Path, command: str, timeout_s: float, log: Path, python: str) -> float:
    env = scrubbed_env()
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    build = launch.Launch(
        ("/bin/sh", "-c", command),
        env,
        root,
        memory_bytes=0,  # a compiler's build may take more than a worker
        writable=(root, log.parent),  # it builds in its worktree
    )
    proc = launch.start(build, log)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        launch.stop(proc)
        raise SetupError(
            f"the setup command `{command}` ran past {timeout_s:g} s in {root.name}; killed it"
            + _tail(log),
            hint="raise [setup] timeout_s in the policy, or make the build faster",
        ) from None
    finally:
        launch.kill_session(proc.pid)  # what the build left running
    if code != 0:
        raise SetupError(
            f"the setup command `{command}` exited with code {code} in {root.name}" + _tail(log),
            hint="run the command in a fresh clone to see why; [setup] in docs/policy.md",
        )
    return time.monotonic() - started


def _tail(log: Path) -> str:
    try:
        text = log.read_bytes()[-LOG_TAIL:].decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    return f"; its output ends:\n{text}" if text else ""


def _store(entry: Path, root: Path, files: list[str]) -> None:
    """Copy the build's new files into the cache (nothing when they are over the cap)."""
    sizes = {f: (root / f).stat().st_size for f in files if (root / f).is_file()}
    if not sizes or sum(sizes.values()) > MAX_CACHED_BYTES:
        return
    partial = entry.with_name(entry.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    for name in sizes:
        target = partial / "files" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    (partial / "manifest.json").write_text(json.dumps(sorted(sizes)))
    digest_file = _digest_file(entry)
    if entry.exists() or digest_file.exists():  # one that did not match its digest
        shutil.rmtree(entry, ignore_errors=True)
        digest_file.unlink(missing_ok=True)
    try:
        partial.rename(entry)
    except OSError:  # another process stored the same tree first
        shutil.rmtree(partial, ignore_errors=True)
        return
    if not write_seal(entry, digest_file, max_bytes=_MAX_ENTRY_BYTES):
        shutil.rmtree(entry, ignore_errors=True)


def _digest_file(entry: Path) -> Path:
    return entry.with_name(entry.name + ".sha256")


def _restore(entry: Path, root: Path) -> tuple[bool, str]:
    """Copy a cached build back into ``root``: whether it was, and why not when the entry was
    there but did not match the digest a trusted run wrote beside it. SetupError, before
    anything is copied, when a manifest entry is not a path inside both the cache entry's
    ``files`` folder and ``root`` (``..``, an absolute path, a link out)."""
    if not entry.exists() and not _digest_file(entry).exists():
        return False, ""
    mismatch = f"the cached build {entry} did not match its digest"
    try:
        names = json.loads((entry / "manifest.json").read_text())
    except (OSError, ValueError):
        return False, mismatch
    if not isinstance(names, list):
        raise _bad_manifest(entry, f"its manifest is a {type(names).__name__}, not a list")
    files = entry / "files"
    pairs = [(_inside(files, name, entry), _inside(root, name, entry)) for name in names]
    if not seal_matches(entry, _digest_file(entry), max_bytes=_MAX_ENTRY_BYTES):
        return False, mismatch
    for source, target in pairs:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return True, ""


def _inside(folder: Path, name: object, entry: Path) -> Path:
    """``folder / name``, where that stays inside ``folder`` once links are followed."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise _bad_manifest(entry, f"the entry {name!r} is not a file name")
    path = folder / name
    base = folder.resolve()
    if Path(name).is_absolute() or not path.resolve().is_relative_to(base):
        raise _bad_manifest(entry, f"the entry {name!r} leaves {folder}")
    return path


def _bad_manifest(entry: Path, what: str) -> SetupError:
    return SetupError(
        f"the build cache entry {entry} was refused: {what}; nothing of it was restored",
        hint=f"delete {entry} (the next run builds again); a cache entry is written only by "
        "kernel-review, so find what else writes to the cache folder",
    )
