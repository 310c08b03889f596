"""A kept folder's seal (``checks.worker_env.write_seal`` / ``seal_matches``): its files'
SHA-256 and a print of their metadata. An untouched folder is recognised from the metadata
alone; a file written again, even with its times put back, or a copy of the folder, is read
again; what differs in content never matches."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import checks.worker_env as worker_env
from checks.worker_env import seal_matches, stat_print, write_seal

CAP = 2**20


def _kept(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "kept"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "triton.py").write_text("VERSION = '3.5.1'\n")
    (folder / "bin").mkdir()
    (folder / "bin" / "python").symlink_to("/usr/bin/python3")
    seal = tmp_path / "kept.sha256"
    assert write_seal(folder, seal, max_bytes=CAP)
    return folder, seal


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> int:
        raise AssertionError("a file's contents were read")

    monkeypatch.setattr(worker_env, "_hash_entry", refuse)


def test_an_untouched_folder_matches_without_reading_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, seal = _kept(tmp_path)
    _no_reads(monkeypatch)
    assert seal_matches(folder, seal, max_bytes=CAP)


def test_a_file_written_again_with_its_times_put_back_is_read_and_refused(
    tmp_path: Path,
) -> None:
    folder, seal = _kept(tmp_path)
    target = folder / "lib" / "triton.py"
    before = target.stat()
    target.write_text("VERSION = '6.6.6'\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_size == before.st_size
    assert target.stat().st_mtime_ns == before.st_mtime_ns
    assert not seal_matches(folder, seal, max_bytes=CAP)


def test_the_same_contents_written_again_still_match_once_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, seal = _kept(tmp_path)
    (folder / "lib" / "triton.py").write_text("VERSION = '3.5.1'\n")
    assert seal_matches(folder, seal, max_bytes=CAP)
    _no_reads(monkeypatch)  # the print moved: a match now needs the contents
    with pytest.raises(AssertionError, match="contents were read"):
        seal_matches(folder, seal, max_bytes=CAP)


def test_a_copy_of_the_folder_and_its_seal_is_read_by_content(tmp_path: Path) -> None:
    folder, seal = _kept(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy / "kept", symlinks=True)
    shutil.copy2(seal, copy / "kept.sha256")
    assert stat_print(copy / "kept") != stat_print(folder)  # other inodes
    assert seal_matches(copy / "kept", copy / "kept.sha256", max_bytes=CAP)
    (copy / "kept" / "lib" / "extra.py").write_text("")
    assert not seal_matches(copy / "kept", copy / "kept.sha256", max_bytes=CAP)


def test_a_seal_of_the_digest_alone_is_read_by_content(tmp_path: Path) -> None:
    folder, seal = _kept(tmp_path)
    seal.write_text(seal.read_text().split("\n")[0] + "\n")  # as written before the print
    assert seal_matches(folder, seal, max_bytes=CAP)
    (folder / "lib" / "triton.py").write_text("VERSION = '6.6.6'\n")
    assert not seal_matches(folder, seal, max_bytes=CAP)


def test_a_missing_empty_or_misplaced_seal_matches_nothing(tmp_path: Path) -> None:
    folder, seal = _kept(tmp_path)
    assert not seal_matches(folder, tmp_path / "none.sha256", max_bytes=CAP)
    (tmp_path / "empty.sha256").write_text("")
    assert not seal_matches(folder, tmp_path / "empty.sha256", max_bytes=CAP)
    assert not seal_matches(tmp_path / "gone", seal, max_bytes=CAP)
    assert not write_seal(folder, tmp_path / "big.sha256", max_bytes=4)  # past the cap
    assert not (tmp_path / "big.sha256").exists()
