"""The corpus of real kernel pull requests in ``tests/data/real_prs/``: read a case, materialise it.

Each case folder holds ``case.toml`` (source and hand-written labels), ``diff.patch`` and
``sides.tar.gz`` (``base/<path>`` and ``head/<path>``: the files at the parent and at the commit;
a submodule of the diff is made a gitlink on each side from its ``Subproject commit`` lines).
A folder may hold raw ``base/`` and ``head/`` folders instead of the archive (how cases are written
before they are packed); both read the same.

    for case in load_cases():
        with materialise(case) as repo:          # a git repository: base commit, head commit
            analyze_repo(repo.path, repo.base, repo.head)
        analyze_diff(case.diff)                  # diff mode, no sources

Used by ``bench/detection_score.py`` and ``tests/integration/test_real_prs.py``. ``pack`` writes the archive.
"""

from __future__ import annotations

import contextlib
import functools
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
        """``{"base": {path: bytes}, "head": {path: bytes}}`` (read once)."""
        return _files(self.folder)


@functools.cache
def _files(folder: Path) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {side: {} for side in SIDES}
    archive = folder / "sides.tar.gz"
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
        root = folder / side
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


def gitlinks(diff: str) -> dict[str, dict[str, str]]:
    """``{"base": {path: commit}, "head": {...}}``: the submodules of a case's diff (the sides
    hold files only; a submodule is a gitlink, which its ``Subproject commit`` lines name)."""
    from bot.analysis.diff import parse_diff
    from bot.toolchain.submodules import gitlink

    out: dict[str, dict[str, str]] = {side: {} for side in SIDES}
    for patch in parse_diff(diff).files:
        if "160000" not in (patch.old_mode, patch.new_mode):
            continue
        for side, path, lines in (
            ("base", patch.old_path, [t for h in patch.hunks for _, t in h.old_lines()]),
            ("head", patch.new_path, [t for h in patch.hunks for _, t in h.new_lines()]),
        ):
            sha = gitlink("\n".join(lines))
            if path and sha:
                out[side][path] = sha
    return out


def _stream(files: dict[str, dict[str, bytes]], links: dict[str, dict[str, str]]) -> bytes:
    """A ``git fast-import`` stream: branch ``base`` with the base files and gitlinks, ``head``
    with the head ones (one commit each, fixed author and date)."""
    out = io.BytesIO()
    for side in SIDES:
        message = side.encode()
        out.write(f"commit refs/heads/{side}\n".encode())
        out.write(b"committer corpus <corpus@example.invalid> 946684800 +0000\n")
        out.write(b"data %d\n%s\n" % (len(message), message))
        if side == "head":
            out.write(b"from refs/heads/base\ndeleteall\n")
        for path, data in sorted(files[side].items()):
            out.write(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(data)))
            out.write(data + b"\n")
        for path, sha in sorted(links[side].items()):
            out.write(b"M 160000 %s %s\n" % (sha.encode(), path.encode()))
    return out.getvalue()


@contextlib.contextmanager
def materialise(case: Case) -> Iterator[CaseRepo]:
    """A temporary git repository: branch ``base`` (one commit with the base files) and ``head``
    (a child commit with the head files), so repo mode runs on real git; a submodule of the diff
    is a gitlink on each side, as in the source repository."""
    with tempfile.TemporaryDirectory(prefix=f"real-pr-{case.name[:40]}-") as tmp:
        repo = Path(tmp)
        env = {**os.environ, **_GIT_ENV}
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
        subprocess.run(
            ["git", "-C", str(repo), "fast-import", "--quiet"],
            input=_stream(case.files(), gitlinks(case.diff)),
            env=env,
            check=True,
            capture_output=True,
        )
        yield CaseRepo(path=repo, base="base", head="head")


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


def pack_corpus(source: Path, dest: Path) -> list[str]:
    """Copy every case of ``source`` (raw ``base/`` and ``head/`` folders) into ``dest`` as
    ``case.toml``, ``diff.patch`` and ``sides.tar.gz``; returns the case names."""
    names = []
    for folder in sorted(p for p in source.iterdir() if (p / "case.toml").is_file()):
        out = dest / folder.name
        out.mkdir(parents=True, exist_ok=True)
        for name in ("case.toml", "diff.patch"):
            (out / name).write_bytes((folder / name).read_bytes())
        pack(folder, out / "sides.tar.gz")
        names.append(folder.name)
    return names


def readme(cases: list[Case]) -> str:
    """``tests/data/real_prs/README.md``: one row per case, from its ``case.toml``."""
    lines = [
        "# Real kernel pull requests, labelled",
        "",
        "Each folder is one commit of a public repository that ships GPU kernels, with the labels",
        "written by hand before any tool ran (`case.toml`: `[[expect]]` rows, `[[not_kernel]]`",
        "rows, `negative = true` for controls, `classes`, `toolchain` for the packages whose pin",
        "the diff moves, `first_look` for the batch whose first-look score the case counts in",
        "(`bench/first_look.py`), and notes on every judgement call). The",
        "folder holds `diff.patch` (the commit against its parent) and `sides.tar.gz`: `base/` and",
        "`head/`, the full files the analysis reads at the parent and at the commit (the files of",
        "the diff that can hold kernels, and the `context_files` the labels rely on). Files a case",
        "drops (data, unrelated scripts) are listed in its `dropped`. The archive is deterministic",
        "(sorted names, mtime 0, owner 0); `bench/real_prs.py` reads it, and",
        "`bench/detection_score.py` scores the analysis against the labels",
        "(`bench/results/detection/`). The code in each folder keeps its repository's licence.",
        "",
        "| case | repository | commit | licence | holds |",
        "|---|---|---|---|---|",
    ]
    for case in cases:
        files = case.files()
        meta = case.meta
        kinds = sorted({e["kind"] for e in case.expect})
        what = "negative control" if case.negative else ", ".join(kinds) or "-"
        holds = (
            f"{len(files['base'])} base / {len(files['head'])} head files; {what}; "
            f"classes: {', '.join(case.classes) or '-'}"
        )
        commit = str(meta.get("commit", ""))
        url = f"https://github.com/{meta.get('repo')}/commit/{commit}"
        lines.append(
            f"| `{case.name}` | {meta.get('repo')} | [{commit[:12]}]({url}) | "
            f"{meta.get('license', '?')} | {holds} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="pack the corpus, or write its README")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="copy raw cases from SOURCE into the corpus, archived")
    p.add_argument("source", type=Path)
    sub.add_parser("readme", help="write tests/data/real_prs/README.md")
    args = parser.parse_args(argv)
    if args.command == "pack":
        names = pack_corpus(args.source, CORPUS)
        print(f"{len(names)} cases packed into {CORPUS}")
    cases = load_cases(CORPUS)
    (CORPUS / "README.md").write_text(readme(cases), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
