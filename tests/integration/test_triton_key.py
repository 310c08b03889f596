"""Triton's key kept between runs (``checks/worker/triton_key.py``): the stamp sees every change
under a package, a fresh process takes the key from the file without hashing Triton's library,
and what it takes is the key Triton itself makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checks.worker import triton_key

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("triton")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 2\n")
    return root


def test_the_stamp_changes_with_any_file_but_python_s_own_caches(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    first = triton_key.stamp(str(root))
    assert first is not None and triton_key.stamp(str(root)) == first
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    with_pycache = triton_key.stamp(str(root))
    assert with_pycache != first  # the folder itself gained an entry, once
    (root / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\0")
    assert triton_key.stamp(str(root)) == with_pycache
    st = (root / "sub" / "b.py").stat()
    (root / "sub" / "b.py").write_text("y = 3\n")  # same size, new contents
    os.utime(root / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns))  # even the same time
    edited = triton_key.stamp(str(root))
    assert edited != with_pycache  # its change time moved
    (root / "sub" / "c.py").write_text("")
    added = triton_key.stamp(str(root))
    assert added not in (edited, None)
    (root / "sub" / "c.py").unlink()
    assert triton_key.stamp(str(root)) not in (added, None)


def test_a_package_with_a_link_or_that_cannot_be_read_is_not_stamped(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "sub" / "link.py").symlink_to(root / "a.py")
    assert triton_key.stamp(str(root)) is None
    assert triton_key.stamp(str(tmp_path / "missing")) is None
    (root / "sub" / "link.py").unlink()
    (root / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    assert triton_key.stamp(str(root)) is None


WARM = r"""
import builtins, json, sys
sys.path.insert(0, sys.argv[1])
folder = None if sys.argv[2] == "-" else sys.argv[2]
if sys.argv[3] == "no-hashing":  # reading Triton's library fails: only a kept key can work
    real_open = builtins.open
    def guarded(path, *a, **k):
        if "libtriton" in str(path):
            raise PermissionError("hashing Triton's library")
        return real_open(path, *a, **k)
    builtins.open = guarded
from checks.worker import triton_key
came = triton_key.warm(folder)
again = triton_key.warm(folder)
from triton.runtime import autotuner, cache
print(json.dumps({"came": came, "again": again, "key": cache.triton_key(),
                  "same_function": autotuner.triton_key is cache.triton_key}))
"""


def _warm(folder: Path | None, mode: str = "") -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WARM, str(ROOT), str(folder) if folder else "-", mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _tritons_own() -> str:
    code = "from triton.runtime.cache import triton_key; print(triton_key())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_key_is_made_once_then_taken_from_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    own = _tritons_own()
    made = _warm(folder)
    assert (made["came"], made["again"], made["key"]) == ("made", "had", own)
    files = list(folder.glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["key"] == own
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"
    kept = _warm(folder, "no-hashing")
    assert (kept["came"], kept["again"], kept["key"]) == ("kept", "had", own)
    assert kept["same_function"]  # the autotuner's name for it returns the kept key too


def test_a_damaged_or_foreign_file_is_made_again(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    own = _tritons_own()
    _warm(folder)
    (path,) = folder.glob("*.json")
    for damage in ("{not json", json.dumps({**json.loads(path.read_text()), "stamp": "0" * 64})):
        path.write_text(damage)
        again = _warm(folder)
        assert (again["came"], again["key"]) == ("made", own)
        assert json.loads(path.read_text())["key"] == own
    assert _warm(None)["came"] == "made, not kept"
