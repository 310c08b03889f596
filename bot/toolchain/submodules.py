"""A git submodule that holds the toolchain: ``submodule_pin(path, lines, gitmodules)``.

A repository that builds its kernels with its own Triton (``3rdparty/triton``, a fork) pins it
by the submodule's commit, the gitlink. A diff shows a moved gitlink as one line a side,
``Subproject commit <sha>`` (``git diff`` in a checkout, a pull request's diff alike). The
submodule is the toolchain when its path's last part, or the repository its ``.gitmodules`` URL
names, is a toolchain package (``packages.py``: ``triton``, ``pytorch``); the pin's spec is the
commit, where ``submodule <path>``. Pure.
"""

from __future__ import annotations

import re

from bot.toolchain.pins import Pin, canonical, is_toolchain

__all__ = ["gitlink", "submodule_pin", "submodule_urls"]

_GITLINK = re.compile(r"\s*Subproject commit (?P<sha>[0-9a-f]{7,64})(?:-dirty)?\s*")
_SECTION = re.compile(r"^\s*\[submodule\s+\"[^\"]*\"\s*\]\s*$")
_KEY = re.compile(r"^\s*(?P<key>path|url)\s*=\s*(?P<value>\S.*?)\s*$")


def gitlink(lines: str) -> str | None:
    """The commit a side of a submodule's diff names (its one ``Subproject commit`` line)."""
    found = _GITLINK.fullmatch(lines)
    return found["sha"] if found else None


def submodule_urls(gitmodules: str | None) -> dict[str, str]:
    """Each submodule's URL by its path, from a ``.gitmodules`` text (None: none known)."""
    out: dict[str, str] = {}
    entry: dict[str, str] = {}
    for line in [*(gitmodules or "").splitlines(), '[submodule ""]']:
        if _SECTION.match(line):
            if "path" in entry and "url" in entry:
                out[entry["path"].strip("/")] = entry["url"]
            entry = {}
        elif m := _KEY.match(line):
            entry[m["key"]] = m["value"]
    return out


def _names(path: str, url: str | None) -> list[str]:
    names = [path.rstrip("/").rsplit("/", 1)[-1]]
    if url:
        names.append(re.sub(r"\.git$", "", url.rstrip("/")).rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    return names


def submodule_pin(path: str, lines: str, gitmodules: str | None = None) -> Pin | None:
    """The toolchain pin of the submodule at ``path`` whose diff side is ``lines``, or None when
    ``lines`` is not a gitlink or the submodule is not a toolchain package."""
    sha = gitlink(lines)
    if sha is None:
        return None
    url = submodule_urls(gitmodules).get(path.strip("/"))
    package = next((canonical(n) for n in _names(path, url) if is_toolchain(n)), None)
    if package is None:
        return None
    return Pin(package, sha, f"submodule {path}", 1)
