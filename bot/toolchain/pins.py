"""The toolchain pins one file states: ``file_kind(path)`` and ``pins(path, text)``.

A pin is a package of the kernels' toolchain (``packages.py``: triton, torch, their vendor
builds and the compilers of the other kernel languages) with the version text the file gives
it, and where in the file (the TOML table or the extra it belongs to, so two extras pinning
different torch builds stay apart). The files read, and how:

- requirement files (``requirements*.txt``, ``constraints*.txt``, ``*.in``, under a
  ``requirements/`` folder too, ``setup.cfg``), and ``setup.py``'s quoted requirement strings
  (each read as PEP 508 by ``requirements.py``);
- ``pyproject.toml`` and ``pixi.toml``: every requirement string in a list, and every
  ``name = "spec"`` / ``name = {version = "spec"}`` table entry (Poetry, pixi);
- ``uv.lock``, ``poetry.lock`` and ``pdm.lock``: each ``[[package]]``'s ``name`` and
  ``version``; ``Pipfile.lock``: each package's ``version``;
- ``pixi.lock`` and conda ``environment*.yml``: the package files it names (``triton-3.5.1-``
  in a URL) and ``- name=version`` lines;
- Dockerfiles (``Dockerfile.rocm``, ``Dockerfile_amd``, ``gpu.Dockerfile``): the base image
  when it is a CUDA, ROCm or PyTorch image, ``ARG``/``ENV`` ``*_VERSION`` of the toolchain (or
  ``*_BRANCH`` / ``*_COMMIT``, the source it builds), and install lines;
- CI workflows (``.github/workflows/*.yml``): install lines (pip, uv, conda) and job images;
- commit pin files: a text file that is one toolchain package's commit or version and nothing
  else, named for the package (``triton-hash.txt``, ``triton_xpu_version.txt``, or
  ``triton.txt`` in a folder of pins such as ``.ci/docker/ci_commit_pins/``).

An install line's ``--index-url .../whl/cu128`` is a pin too ("torch wheel index"): moving from
cu126 to cu128 wheels changes the toolchain as much as a version does. Pure, but for
``read_pin_file``, which reads one of a checkout's files as untrusted: a regular file inside the
checkout (a link is followed only to one), at most ``MAX_PIN_FILE_BYTES``.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from bot.errors import ToolchainError
from bot.toolchain import requirements
from bot.toolchain.packages import toolchain_package

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FileKind = Literal[
    "requirements", "toml", "lock", "conda", "docker", "workflow", "setup", "commit_pin"
]

# conda's "pytorch" is torch
_CONDA_NAMES = {"pytorch": "torch"}
# Docker ARG/ENV names and the package they set
# (a branch or commit where the Dockerfile builds it from source: ARG TRITON_BRANCH="e5be006")
_VERSION_VARS = re.compile(
    r"^(?P<var>(?:PY)?TORCH|TRITON|CUDA|ROCM|HIP)_(?:VERSION|BRANCH|COMMIT|REF|SHA)$", re.IGNORECASE
)
_VAR_PACKAGE = {"torch": "torch", "pytorch": "torch", "triton": "triton", "hip": "rocm"}
_IMAGE = re.compile(r"(pytorch|cuda|rocm|triton)", re.IGNORECASE)
INDEX_PIN = "torch wheel index"
MAX_PIN_FILE_BYTES = 8 * 2**20  # a lock file of a large project is under 2 MiB

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_OP = r"(?:===|==|~=|!=|<=|>=|<|>)"
_FILE_VERSION = re.compile(
    r"(?:^|/)(?P<name>[A-Za-z0-9_.+-]+?)-(?P<version>\d[A-Za-z0-9_.+!]*)"
    r"(?:-[^/]*)?\.(?:whl|conda|tar\.bz2|tar\.gz)\b"
)
_CONDA_LINE = re.compile(
    rf"^\s*-\s*(?:[\w.-]+::)?(?P<name>{_NAME})\s*(?P<spec>(?:{_OP}|=)\s*[^\s#]+)\s*(?:#.*)?$"
)
_INSTALL = re.compile(r"\b(?:pip3?|uv|conda|mamba|micromamba)\b(?:\s+pip)?\s+(?:install|add)\b")
_INDEX = re.compile(r"--(?:extra-)?index-url[= ]\s*['\"]?(?P<url>\S+?)['\"]?(?:\s|$)")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)", re.IGNORECASE)
_ARG = re.compile(r"^\s*(?:ARG|ENV)\s+(?P<var>\w+)[= ](?P<value>\S+)", re.IGNORECASE)
# a commit pin file: <package>[-_](hash|commit|pin|version).txt, or <package>.txt among pins
_PIN_FILE = re.compile(r"(?P<name>[\w.-]+?)(?:[-_](?:hash|commit|pin|version))?(?:\.txt)?")
_PIN_FOLDER = re.compile(r"(?:^|/)[\w.-]*pins/[^/]+$")
_PIN_VALUE = re.compile(r"[0-9a-f]{7,64}|v?\d+(?:\.\d+)+[\w.+-]*")
_YAML_IMAGE = re.compile(r"^\s*(?:-\s*)?(?:image|container):\s*['\"]?(?P<image>[^\s'\"{}]+)")


@dataclass(frozen=True)
class Pin:
    package: str  # canonical name: "triton", "torch", "image nvcr.io/nvidia/pytorch", ...
    spec: str  # as the file says it: "==3.5.1", ">=3.6,<3.7", "3.5.1", "24.05-py3"
    where: str = ""  # the table or extra it belongs to, "" for the whole file
    line: int = 0  # 1-based; 0 when unknown


def canonical(name: str) -> str:
    """PEP 503 normalisation (``pytorch_triton_xpu`` is ``pytorch-triton-xpu``), with conda's
    ``pytorch`` read as ``torch``."""
    norm = re.sub(r"[-_.]+", "-", name).lower()
    return _CONDA_NAMES.get(norm, norm)


def is_toolchain(name: str) -> bool:
    return toolchain_package(canonical(name)) is not None


def file_kind(path: str) -> FileKind | None:
    """What kind of toolchain file ``path`` is, or None when it states no toolchain."""
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    if name in ("uv.lock", "poetry.lock", "pdm.lock", "pipfile.lock"):
        return "lock"
    if name in ("pyproject.toml", "pixi.toml"):
        return "toml"
    if name == "pixi.lock" or (
        re.fullmatch(r"(environment|conda|env)[\w.-]*\.ya?ml", name) is not None
    ):
        return "conda"
    if name == "setup.py":
        return "setup"
    if name == "setup.cfg":  # install_requires: one requirement a line
        return "requirements"
    if re.fullmatch(r"[\w.-]*(requirements|constraints)[\w.-]*\.(txt|in)", name) or (
        "requirements/" in lower and name.endswith((".txt", ".in"))
    ):
        return "requirements"
    if re.fullmatch(  # Dockerfile_amd and Dockerfile-cuda too, not dockerfile_utils.py
        r"(?:(?:docker|container)file(?:[._-][\w.-]*)?|[\w.-]+\.dockerfile)", name
    ) and not re.search(r"\.(?:py|sh|md|rst|txt|json|ya?ml|toml|cfg|ini)$", name):
        return "docker"
    if re.search(r"(^|/)\.github/workflows/[^/]+\.ya?ml$", lower):
        return "workflow"
    if _pin_file_package(lower) is not None:
        return "commit_pin"
    return None


def _pin_file_package(lower: str) -> str | None:
    """The toolchain package a commit pin file at ``lower`` (a lowercase path) pins, or None."""
    name = lower.rsplit("/", 1)[-1]
    in_pins = _PIN_FOLDER.search(lower) is not None
    if not (name.endswith(".txt") or "." not in name) or (
        not in_pins and not re.search(r"[-_](?:hash|commit|pin|version)(?:\.txt)?$", name)
    ):
        return None
    found = _PIN_FILE.fullmatch(name)
    return canonical(found["name"]) if found and is_toolchain(found["name"]) else None


def read_pin_file(tree: Path, rel: str) -> str | None:
    """The text of the checkout's file ``rel`` (UTF-8, errors replaced); None when there is no
    such file (a link to nothing). ToolchainError when it is not a regular file inside ``tree``
    (a link out of it, a device such as ``/dev/zero``, a pipe) or is over
    ``MAX_PIN_FILE_BYTES``; it never blocks on a pipe nor reads past the cap."""
    try:
        target = (tree / rel).resolve(strict=True)
        inside = target.is_relative_to(tree.resolve(strict=True))
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolchainError(
            f"cannot read the pin file {rel}: {exc.strerror or exc}",
            hint=f"make {rel} a readable regular file of the repository, or remove it",
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not inside or not stat.S_ISREG(info.st_mode):
            raise ToolchainError(
                f"the pin file {rel} is not a regular file of the checkout ("
                + ("a link out of it" if not inside else "a device, a pipe or a socket")
                + "); pins are read only from regular files",
                hint=f"make {rel} a regular file (or a link to one inside the repository)",
            )
        data = handle.read(MAX_PIN_FILE_BYTES + 1)
    if len(data) > MAX_PIN_FILE_BYTES:
        raise ToolchainError(
            f"the pin file {rel} is {max(info.st_size, len(data)):,} bytes, over the "
            f"{MAX_PIN_FILE_BYTES:,}-byte cap for a file the toolchain pins are read from",
            hint=f"pin the toolchain in a smaller file than {rel}",
        )
    return data.decode("utf-8", errors="replace")


def pins(path: str, text: str) -> list[Pin]:
    """The toolchain pins ``text`` (the file at ``path``) states, in file order."""
    kind = file_kind(path)
    if kind is None or not text:
        return []
    reader = {
        "requirements": _requirements,
        "toml": _toml,
        "lock": _pipfile_lock if path.lower().endswith("pipfile.lock") else _lock,
        "conda": _conda,
        "docker": _docker,
        "workflow": _workflow,
        "setup": _quoted,
        "commit_pin": lambda text: _commit_pin(path, text),
    }[kind]
    return list(reader(text))


def _commit_pin(path: str, text: str) -> Iterator[Pin]:
    """The one commit or version a commit pin file holds (its first line that is not a
    comment); none when that line is anything else."""
    package = _pin_file_package(path.lower())
    for number, line in _lines(text):
        if line.strip():
            if package and _PIN_VALUE.fullmatch(line.strip()):
                yield Pin(package, line.strip(), "", number)
            return


def requirement_pin(text: str, *, where: str = "", line: int = 0) -> Pin | None:
    """A pin from one requirement string (``triton==3.5.1``, ``torch @ URL``), or None when it
    is not a toolchain package."""
    req = requirements.parse(text)
    if req is None or not is_toolchain(req.name):
        return None
    name = canonical(req.name)
    spec = requirements.written_spec(text, req)
    if spec.startswith("@"):
        spec = _url_version(spec[1:], name) or spec
    return Pin(name, spec or requirements.ANY, where, line)


def _url_version(url: str, name: str) -> str | None:
    found = _FILE_VERSION.search(unquote(url).split("#")[0])
    if found and canonical(found["name"]) == name:
        return "==" + found["version"]
    return None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines with backslash continuations joined, numbered by their first line; comment lines
    (``#`` first) left out."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending and raw.lstrip().startswith("#"):
            continue
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        yield start, pending + raw
        pending = ""
    if pending:
        yield start, pending


def _requirements(text: str) -> Iterator[Pin]:
    for number, line in _lines(text):
        body = line.split(" #", 1)[0].strip()
        if body.startswith("#") or not body:
            continue
        if body.startswith("-"):
            yield from _index_pin(body, number)
            continue
        pin = requirement_pin(body, line=number)
        if pin is not None:
            yield pin


def _index_pin(line: str, number: int) -> Iterator[Pin]:
    for m in _INDEX.finditer(line):
        url = m["url"].rstrip("/")
        if "download.pytorch.org" in url or "/whl/" in url:
            yield Pin(INDEX_PIN, url.rsplit("/whl/", 1)[-1], "", number)


def _line_of(text: str, *needles: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if all(n in line for n in needles):
            return number
    return 0


def _toml(text: str) -> Iterator[Pin]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        yield from _quoted(text)  # a broken file still says what it pins
        return
    for where, value in _walk(data, ()):
        if isinstance(value, str):
            pin = requirement_pin(value, where=where)
        else:  # a table entry: name = "spec" or name = {version = "spec"}
            name, spec = value
            pin = Pin(canonical(name), spec.replace(" ", "") or requirements.ANY, where)
        if pin is not None:
            yield Pin(pin.package, pin.spec, pin.where, _line_of(text, pin.package.split("-")[0]))


def _walk(node: Any, keys: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    where = ".".join(keys)
    if isinstance(node, dict):
        for key, value in node.items():
            if is_toolchain(key) and isinstance(value, str):
                yield where, (key, value)
            elif is_toolchain(key) and isinstance(value, dict) and "version" in value:
                yield where, (key, str(value["version"]))
            else:
                yield from _walk(value, (*keys, str(key)))
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, str):
                yield where, item
            else:
                yield from _walk(item, keys)


def _lock(text: str) -> Iterator[Pin]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    for package in data.get("package", ()):
        name, version = package.get("name"), package.get("version")
        if isinstance(name, str) and isinstance(version, str) and is_toolchain(name):
            yield Pin(canonical(name), version, "", _line_of(text, f'name = "{name}"'))


def _pipfile_lock(text: str) -> Iterator[Pin]:
    """Pipenv's lock (JSON): ``{"default": {"torch": {"version": "==2.5.1"}}}``."""
    try:
        data = json.loads(text)
    except ValueError:
        return
    for section in ("default", "develop"):
        packages = data.get(section) if isinstance(data, dict) else None
        for name, entry in (packages if isinstance(packages, dict) else {}).items():
            version = entry.get("version") if isinstance(entry, dict) else None
            if isinstance(version, str) and is_toolchain(name):
                yield Pin(canonical(name), version.lstrip("="), "", _line_of(text, f'"{name}"'))


def _conda(text: str) -> Iterator[Pin]:
    for number, line in enumerate(text.splitlines(), 1):
        for m in _FILE_VERSION.finditer(line):
            if is_toolchain(m["name"]):
                yield Pin(canonical(m["name"]), m["version"], "", number)
        conda = _CONDA_LINE.match(line)
        if conda and is_toolchain(conda["name"]):
            yield Pin(canonical(conda["name"]), conda["spec"].replace(" ", ""), "", number)


def _quoted(text: str) -> Iterator[Pin]:
    for number, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"[\"']([^\"'\n]+)[\"']", line):
            pin = requirement_pin(m[1], line=number)
            if pin is not None:
                yield pin


def _install_line(line: str, number: int) -> Iterator[Pin]:
    """The toolchain requirements an install command names, and its PyTorch wheel index."""
    found = False
    for m in _INSTALL.finditer(line):
        rest = re.split(r"&&|;|\|\|", line[m.end() :])[0]
        for token in rest.split():
            pin = requirement_pin(token.strip("'\""), line=number)
            if pin is not None:
                found = True
                yield pin
    if found:
        yield from _index_pin(line, number)


def _image_pin(image: str, number: int) -> Iterator[Pin]:
    """A CUDA, ROCm or PyTorch base image and its tag (a digest is cut off)."""
    if "$" in image:
        return
    ref = image.split("@", 1)[0]
    repo, tag = ref.rsplit(":", 1) if ":" in ref.rsplit("/", 1)[-1] else (ref, "latest")
    if _IMAGE.search(repo):
        yield Pin(f"image {repo}", tag, "", number)


def _docker(text: str) -> Iterator[Pin]:
    for number, line in _lines(text):
        if m := _FROM.match(line):
            yield from _image_pin(m["image"], number)
        elif (m := _ARG.match(line)) and (v := _VERSION_VARS.match(m["var"])):
            var = v["var"].lower()
            yield Pin(_VAR_PACKAGE.get(var, var), m["value"].strip("'\""), "", number)
        elif re.match(r"^\s*RUN\b", line, re.IGNORECASE):
            yield from _install_line(line, number)


def _workflow(text: str) -> Iterator[Pin]:
    for number, line in _lines(text):
        if m := _YAML_IMAGE.match(line):
            yield from _image_pin(m["image"], number)
        else:
            yield from _install_line(line, number)
