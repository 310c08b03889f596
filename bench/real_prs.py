"""The corpus of real kernel pull requests in ``tests/data/real_prs/``: read a case, materialise it.

Each case folder holds ``case.toml`` (source and hand-written labels), ``diff.patch`` and
``sides.tar.gz`` (``base/<path>`` and ``head/<path>``: the files at the parent and at the commit).
A folder may hold raw ``base/`` and ``head/`` folders instead of the archive (how cases are written
before they are packed); both read the same.

    for case in load_cases():
        with materialise(case) as repo:          # a git repository: base commit, head commit
            analyze_repo(repo.path, repo.base, repo.head)
        analyze_diff(case.diff)                  # diff mode, no sources

Used by ``bench/detection_score.py`` and ``tests/test_real_prs.py``. ``pack`` writes the archive.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "real_prs"
SIDES = ("base", "head")
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "corpus",
    "GIT_AUTHOR_EMAIL": "corpus@example.invalid",
    "GIT_COMMITTER_NAME": "corpus",
    "GIT_COMMITTER_EMAIL": "corpus@example.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass(frozen=True)
class Case:
    """One labelled pull request."""

    name: str
    folder: Path
    meta: dict[str, Any]
    diff: str
    expect: list[dict[str, Any]] = field(default_factory=list)
    not_kernel: list[dict[str, Any]] = field(default_factory=list)

    @property
    def negative(self) -> bool:
        return bool(self.meta.get("negative"))

    @property
    def classes(self) -> list[str]:
        return list(self.meta.get("classes") or [])

    def files(self) -> dict[str, dict[str, bytes]]:
        """``{"base": {path: bytes}, "head": {path: bytes}}``."""
        out: dict[str, dict[str, bytes]] = {side: {} for side in SIDES}
        archive = self.folder / "sides.tar.gz"
        if archive.is_file():
            with tarfile.open(archive, "r:gz") as tar:
                for member in tar.getmembers():
                    side, _, path = member.name.partition("/")
                    if member.isfile() and side in out and path:
                        handle = tar.extractfile(member)
                        if handle is not None:
                            out[side][path] = handle.read()
            return out
        for side in SIDES:
            root = self.folder / side
            for p in sorted(root.rglob("*")) if root.is_dir() else ():
                if p.is_file():
                    out[side][p.relative_to(root).as_posix()] = p.read_bytes()
        return out


def corpus_root() -> Path:
    """The corpus folder: ``$REAL_PRS`` when set (raw cases elsewhere), else the packed one."""
    return Path(os.environ.get("REAL_PRS") or CORPUS)


def load_cases(root: Path | None = None) -> list[Case]:
    """Every case under ``root`` (default :func:`corpus_root`), sorted by folder name."""
    root = root or corpus_root()
    out = []
    for folder in sorted(p for p in root.iterdir() if (p / "case.toml").is_file()):
        meta = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8"))
        out.append(
            Case(
                name=folder.name,
                folder=folder,
                meta=meta,
                diff=(folder / "diff.patch").read_text(encoding="utf-8", errors="replace"),
                expect=list(meta.get("expect") or []),
                not_kernel=list(meta.get("not_kernel") or []),
            )
        )
    return out


@dataclass(frozen=True)
class CaseRepo:
    path: Path
    base: str
    head: str


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _write_tree(repo: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


@contextlib.contextmanager
def materialise(case: Case) -> Iterator[CaseRepo]:
    """A temporary git repository: one commit with the base files, then one with the head files."""
    files = case.files()
    with tempfile.TemporaryDirectory(prefix=f"real-pr-{case.name[:40]}-") as tmp:
        repo = Path(tmp)
        _git(repo, "init", "-q", "-b", "main")
        _write_tree(repo, files["base"])
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
        base = _git(repo, "rev-parse", "HEAD")
        _git(repo, "rm", "-r", "-q", "--cached", "--ignore-unmatch", ".")
        for path in files["base"]:
            (repo / path).unlink()
        _write_tree(repo, files["head"])
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "head")
        head = _git(repo, "rev-parse", "HEAD")
        yield CaseRepo(path=repo, base=base, head=head)


def pack(folder: Path, out: Path) -> None:
    """Write ``folder``'s ``base/`` and ``head/`` as a deterministic ``out`` (sorted names,
    mtime 0, owner 0, gzip mtime 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for side in SIDES:
            root = folder / side
            for p in sorted(root.rglob("*")) if root.is_dir() else ():
                if not p.is_file():
                    continue
                data = p.read_bytes()
                info = tarfile.TarInfo(f"{side}/{p.relative_to(root).as_posix()}")
                info.size = len(data)
                info.mtime = 0
                info.mode = 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
    with (
        out.open("wb") as handle,
        gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(raw.getvalue())
