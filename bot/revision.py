"""A revision of a repository, seen as a reader: the one way the bot reads files at a commit.

    Revision            read(path) -> text | None, list_dir(path) -> [paths], sha, label, where(path)
    GitRevision         a commit of a local git repository (through ``bot.gitutil``)
    ApiRevision         a ref read through a forge's API (a ``FileReader``: GitHub's contents API)
    DirRevision         a folder on disk: a working tree, uncommitted changes included

The policy, the analysis of a range and the repository conditions take a Revision, so the gate
on GitHub and the local commands read the same files the same way and differ only in where the
bytes come from. Paths are repository-relative with ``/``. ``read`` returns None for a file that
is not there; with ``max_bytes`` a larger file raises :class:`ReadRefused` instead of being read.
A DirRevision also refuses links and devices (a working tree must not make the bot read outside
it) and text that is not UTF-8. Messages name a file with ``where(path)``: the path alone for a
folder, ``path (at sha)`` for a commit, ``path@sha`` for the API.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from bot import gitutil
from bot.errors import KernelReviewError

if TYPE_CHECKING:
    from bot.forge.client import FileReader

__all__ = ["ApiRevision", "DirRevision", "GitRevision", "ReadRefused", "Revision"]

Refusal = Literal["not-regular", "too-large", "not-utf8", "unreadable"]


class ReadRefused(KernelReviewError):
    """A file that is there but is not read. ``why`` names the case, for callers (such as the
    policy) that word it their own way; ``size`` is the byte count of a file too large,
    ``detail`` the system's reason a file could not be read."""

    def __init__(
        self, message: str, *, hint: str, where: str, why: Refusal, size: int = 0, detail: str = ""
    ) -> None:
        super().__init__(message, hint=hint)
        self.where, self.why = where, why
        self.size, self.detail = size, detail


def _too_large(where: str, size: int, limit: int) -> ReadRefused:
    return ReadRefused(
        f"{where} is {size:,} bytes, over the cap of {limit:,}",
        hint="shrink the file",
        where=where,
        why="too-large",
        size=size,
    )


def _unreadable(where: str, exc: OSError) -> ReadRefused:
    detail = exc.strerror or str(exc)
    return ReadRefused(
        f"cannot read {where}: {detail}",
        hint="check the path",
        where=where,
        why="unreadable",
        detail=detail,
    )


class Revision(Protocol):
    """What every reader offers. ``sha`` is None for a working tree (it may hold uncommitted
    changes); ``label`` names the revision in messages ("commit 1a2b3c4d5e6f", a folder)."""

    @property
    def sha(self) -> str | None: ...

    @property
    def label(self) -> str: ...

    def where(self, path: str) -> str: ...

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None: ...

    def list_dir(self, path: str) -> list[str]: ...


def _check_size(where: str, text: str, max_bytes: int | None) -> str:
    if max_bytes is not None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large(where, size, max_bytes)
    return text


class _Commit:
    """The ``sha`` and ``label`` of a revision that is one commit."""

    _sha: str

    @property
    def sha(self) -> str:
        return self._sha

    @property
    def label(self) -> str:
        return f"commit {self._sha[:12]}"


class GitRevision(_Commit):
    """A commit of the git repository at ``repo``; ``rev`` is resolved to its SHA once."""

    def __init__(self, repo: str | os.PathLike[str], rev: str) -> None:
        self.repo = repo
        self._sha = gitutil.rev_parse(repo, rev)
        self._blobs: dict[str, tuple[str, int]] | None = None
        self._fetched: dict[str, str] = {}  # by object name: read ahead, not yet read

    def where(self, path: str) -> str:
        return f"{path} (at {self._sha[:12]})"

    def _listing(self) -> dict[str, tuple[str, int]]:
        """Every file of the commit (a link as its target's name), by path: its object and
        size, from one ``git ls-tree``: an analysis asks for many paths that do not exist (a
        module's possible files, each package's ``__init__.py``), and each was a git process."""
        if self._blobs is None:
            out = gitutil.git(self.repo, "ls-tree", "-r", "-l", "-z", "--full-tree", self._sha)
            self._blobs = {}
            for entry in out.split("\0"):
                meta, _, name = entry.partition("\t")
                fields = meta.split()
                if len(fields) == 4 and fields[1] == "blob" and fields[3].isdigit():
                    self._blobs[name] = (fields[2], int(fields[3]))
        return self._blobs

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None:
        found = self._listing().get(posixpath.normpath(path).lstrip("/"))
        if found is None:  # not there, a folder, a submodule
            return None
        blob, size = found
        if max_bytes is not None and size > max_bytes:
            raise _too_large(self.where(path), size, max_bytes)
        text = self._fetched.pop(blob, None)
        if text is None:
            text = gitutil.git(self.repo, "cat-file", "blob", blob)
        return _check_size(self.where(path), text, max_bytes)

    def read_ahead(self, paths: Sequence[str], max_chars: int) -> None:
        """Fetch the files of ``paths`` that are there (in order, those that fit in ``max_chars``
        bytes in all) from one git process, for the ``read`` of each that follows: each read was
        a git process, and an analysis reads every file of a diff that may hold a kernel."""
        listing = self._listing()
        want: list[str] = []
        for path in paths:
            found = listing.get(posixpath.normpath(path).lstrip("/"))
            if found is None or found[0] in self._fetched:
                continue
            if found[1] > max_chars:
                continue
            max_chars -= found[1]
            want.append(found[0])
        self._fetched.update(gitutil.cat_blobs(self.repo, want))

    def list_dir(self, path: str) -> list[str]:
        """The files directly inside ``path`` (links and subfolders left out), sorted."""
        folder = _folder(path)
        out = gitutil.git(self.repo, "ls-tree", self._sha, "--", *([folder] if folder else []))
        files = []
        for line in out.splitlines():
            meta, _, name = line.partition("\t")
            mode, kind = [*meta.split(), "", ""][:2]
            if kind == "blob" and mode != "120000":
                files.append(name)
        return sorted(files)


class ApiRevision(_Commit):
    """A ref (branch or SHA) read through a forge's API (GitHub's contents API). ``max_reads``
    bounds the files fetched (a read past it is None: that file is left to what the diff shows),
    so a pull request touching thousands of files costs a bounded number of API calls."""

    def __init__(self, client: FileReader, ref: str, *, max_reads: int | None = None) -> None:
        self.client = client
        self._sha = ref
        self.max_reads = max_reads
        self.reads = 0
        self._cache: dict[str, str | None] = {}

    def where(self, path: str) -> str:
        return f"{path}@{self._sha[:12]}"

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None:
        if path not in self._cache:
            if self.max_reads is not None and self.reads >= self.max_reads:
                return None
            self.reads += 1
            self._cache[path] = self.client.read_file(path, self._sha)
        text = self._cache[path]
        return None if text is None else _check_size(self.where(path), text, max_bytes)

    def list_dir(self, path: str) -> list[str]:
        return self.client.list_dir(path, self._sha)


class DirRevision:
    """The files under ``root`` as they are on disk."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @property
    def sha(self) -> None:
        return None

    @property
    def label(self) -> str:
        return str(self.root)

    def where(self, path: str) -> str:
        return path

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None:
        return read_text_file(self.root / path, self.where(path), max_bytes=max_bytes)

    def list_dir(self, path: str) -> list[str]:
        folder = self.root / path
        if not folder.is_dir():
            return []
        return sorted(
            _folder(path) + entry.name
            for entry in folder.iterdir()
            if entry.is_file() and not entry.is_symlink()
        )


def _folder(path: str) -> str:
    """``path`` as a prefix of the paths inside it: "" for the root, else ending in "/"."""
    path = path.strip("/")
    return "" if path in ("", ".") else path + "/"


def read_text_file(path: Path, where: str, *, max_bytes: int | None = None) -> str | None:
    """A plain UTF-8 file on disk, or None when there is none; ReadRefused for a link, a
    device, a file over ``max_bytes`` (checked before reading) or text that is not UTF-8."""
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _unreadable(where, exc) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise ReadRefused(
            f"{where} is not a regular file",
            hint="read a plain file, not a link or a device",
            where=where,
            why="not-regular",
        )
    if max_bytes is not None and info.st_size > max_bytes:
        raise _too_large(where, info.st_size, max_bytes)
    try:
        with path.open("rb") as handle:
            raw = handle.read(-1 if max_bytes is None else max_bytes + 1)
    except OSError as exc:
        raise _unreadable(where, exc) from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise _too_large(where, len(raw), max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ReadRefused(
            f"{where}:{line}: not UTF-8 (byte {exc.start})",
            hint="save the file as UTF-8",
            where=where,
            why="not-utf8",
        ) from None
