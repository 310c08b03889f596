"""Triton's key, made once per installation and kept between runs.

Every compile and cache lookup of Triton needs ``triton.runtime.cache.triton_key()``, a hash of
Triton's own sources and of its 400 MB library, which each process makes on its first use: 0.35 s
on one H200 host and 0.64-1.18 s on another, where making it beside torch's import also made that
import 0.3-0.6 s longer (``bench/results/h200/start_diag``). ``warm`` keeps the key in a file of a
folder the bot owns, with a stamp of every file and folder under Triton's package (path, kind,
size, modification and change times, inode). A process whose stamp matches the file's takes the
key from it, and every Triton module that had imported Triton's function gets one that returns
that key; any change under the package (a reinstall, an edited, added or removed file) changes
the stamp, and the key is made again as Triton makes it. A package with a symbolic link in it is
not stamped (what the link leads to could change unseen): the key is made each time.

The file holds data only. A key someone else wrote there can give a process no more than a key
other than Triton's, and every run's Triton caches are its own.

Standard library only at import (the worker program and the zygote load it as a sibling).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from typing import Any

FORMAT = 1
SKIPPED = frozenset({"__pycache__"})  # what Python writes on import; Triton's key reads none


def stamp(root: str) -> str | None:
    """A hash of every file's and folder's path, kind, size, times and inode under ``root``
    (``__pycache__`` left out); None when a symbolic link is among them or one cannot be read."""
    h = hashlib.sha256()
    try:
        for folder, folders, files in os.walk(root, onerror=_raise):
            if any(os.path.islink(os.path.join(folder, name)) for name in [*folders, *files]):
                return None
            folders[:] = sorted(d for d in folders if d not in SKIPPED)
            for path in [folder, *(os.path.join(folder, name) for name in sorted(files))]:
                st = os.lstat(path)
                rel = os.path.relpath(path, root)
                h.update(
                    f"{rel}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                    f"{st.st_ino}\n".encode()
                )
    except OSError:
        return None
    return h.hexdigest()


def _raise(exc: OSError) -> None:
    raise exc


def file_for(folder: str, root: str) -> str:
    """The file that keeps the key of the Triton installed at ``root``."""
    return os.path.join(folder, hashlib.sha256(root.encode()).hexdigest()[:24] + ".json")


def warm(folder: str | None) -> str:
    """Make Triton's key, or take it from ``folder``: "kept" (taken from its file), "made" (and
    written there when the package did not change meanwhile), "made, not kept" (no folder, or a
    package that cannot be stamped), or "had" (this process had it already). Imports Triton."""
    from triton.runtime import cache

    if cache.triton_key.cache_info().currsize:  # this process has it (a zygote's fork)
        return "had"
    root = os.path.dirname(os.path.dirname(os.path.abspath(cache.__file__)))
    before = stamp(root) if folder else None
    if folder is None or before is None:
        cache.triton_key()
        return "made, not kept"
    path = file_for(folder, root)
    kept = _read(path)
    if kept.get("root") == root and kept.get("stamp") == before and kept.get("format") == FORMAT:
        key = kept.get("key")
        if isinstance(key, str) and key:
            install(key)
            return "kept"
    key = cache.triton_key()
    if stamp(root) == before:
        _write(path, {"format": FORMAT, "root": root, "stamp": before, "key": key})
    return "made"


def install(key: str) -> None:
    """Every Triton module's ``triton_key`` (Triton's own function, imported there by name)
    replaced by one that returns ``key``, with the same ``cache_clear`` and ``cache_info``."""
    from triton.runtime import cache

    original = cache.triton_key

    @functools.lru_cache
    def triton_key() -> str:
        return key

    triton_key()  # in its cache, as Triton's is once made (``warm`` reads that)

    for name, module in list(sys.modules.items()):
        ours = name == "triton" or name.startswith("triton.")
        if ours and getattr(module, "triton_key", None) is original:
            module.triton_key = triton_key  # type: ignore[attr-defined]


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: str, data: dict[str, Any]) -> None:
    """Written whole or not at all (several processes may write it at once); a folder that
    cannot be written only means the key is made again next time."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
