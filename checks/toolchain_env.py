"""Each side's own toolchain: the interpreter a side's workers run under.

A pull request that moves the triton or torch pin is measured with each side under its own
pins. ``side_requirements(tree)`` reads them from the side's files (a lock file's exact version
first, then requirements and constraints files, then ``pyproject.toml`` and conda files, through
``bot.toolchain.pins``). Where the runner's installed packages already satisfy a side's pins,
that side runs under the runner's interpreter. Otherwise ``side_environment`` makes one with
``uv``: the pins the runner does not satisfy are resolved (``uv pip compile``), and the
environment is made once per resolved set, in ``<cache>/envs/<key>``, keyed by the resolved
requirements, the package indexes, the interpreter and the platform. The new environment sees
the runner's own packages after its own (a ``.pth`` line), so a side that pins only triton gets
that triton and the runner's torch, numpy and the bot's own dependencies.

The kept environments outlive a run, so a run that measures a pull request's code must not be
able to leave one for a later run to use (``cached_environment``): only a trusted run (the
default branch's scheduled run, or a local command) writes the cache; every use checks the
environment against the SHA-256 digest of its files written beside it when it was made; a pull
request's run uses a kept environment that matches its digest, and makes any other it needs in
a throw-away folder of its own.

A Docker image or a CI install line is reported as a toolchain change but cannot be installed
here: a policy ``[setup]`` command runs in each checkout with that side's interpreter first on
``PATH`` (``checks.checkout``), which is where a project installs what its pins do not say.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bot.contracts.evidence import SideToolchain
from bot.errors import ToolchainError
from bot.outputs import cache_root
from bot.toolchain.pins import Pin, canonical, file_kind, pins, read_pin_file
from bot.toolchain.requirements import installable, satisfied
from bot.toolchain.requirements import parse as parse_requirement
from checks.procs.sandbox import trusted_run
from checks.worker_env import SECRET_RE, scrubbed_env, seal_matches, write_seal

# What a side's environment installs when its pins ask for another version.
INSTALLED = ("triton", "torch", "pytorch-triton", "pytorch-triton-rocm")
REPORTED = ("triton", "torch", "pytorch-triton", "pytorch-triton-rocm", "numpy")
_PRIORITY = {"lock": 0, "requirements": 1, "toml": 2, "conda": 3}
_SKIP_DIRS = {".git", "node_modules", "venv", ".venv", "site-packages", "build", "dist"}
_MAX_DEPTH = 3
UV_TIMEOUT_S = 1800.0
MAX_ENV_BYTES = 16 * 2**30  # an environment larger than this is never taken from the cache
ENV_VERSION = "1"
# what reaching the package index may need: certificates and proxies
_NETWORK_VARS = frozenset(
    {"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}
    | {"http_proxy", "https_proxy", "no_proxy", "all_proxy"}
)


class SideEnv(BaseModel):
    """The interpreter one side's workers run under, and what it has installed."""

    model_config = ConfigDict(frozen=True)
    python: str
    versions: dict[str, str]
    environment: str  # what the review says: "the runner's own", "uv environment ..."
    requirements: tuple[str, ...] = ()  # the pins it was made for

    def evidence(self, side: str) -> SideToolchain:
        return SideToolchain(side=side, versions=self.versions, environment=self.environment)  # type: ignore[arg-type]


def default_cache_dir() -> Path:
    return cache_root() / "envs"


def _toolchain_files(tree: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(tree):
        depth = len(Path(dirpath).relative_to(tree).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and depth < _MAX_DEPTH)
        for name in sorted(filenames):
            yield Path(dirpath) / name


def side_pins(tree: Path) -> list[Pin]:
    """The installable toolchain pins of a checkout, the most exact file first. ToolchainError
    when a pin file is not a regular file of the checkout or is over its cap."""
    found: list[tuple[int, str, Pin]] = []
    for path in _toolchain_files(tree):
        rel = path.relative_to(tree).as_posix()
        kind = file_kind(rel)
        if kind not in _PRIORITY:
            continue
        text = read_pin_file(tree, rel)  # regular files of the checkout only, bounded
        if text is None:
            continue
        found += [(_PRIORITY[kind], rel, p) for p in pins(rel, text) if p.package in INSTALLED]
    return [p for _, _, p in sorted(found, key=lambda x: (x[0], x[1]))]


def requirement_text(pin: Pin) -> str | None:
    """A PEP 508 requirement for one pin, or None when it names no installable version
    (``(any)``, Poetry's ``^2.4``)."""
    return installable(pin.package, pin.spec)


def side_requirements(tree: Path) -> list[str]:
    """One requirement per installable package of the side, from its most exact file."""
    chosen: dict[str, str] = {}
    for pin in side_pins(tree):
        text = requirement_text(pin)
        if text is not None and pin.package not in chosen:
            chosen[pin.package] = text
    return list(chosen.values())


def installed_versions(names: Iterable[str] = REPORTED) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def unsatisfied(wanted: Iterable[str], installed: dict[str, str]) -> list[str]:
    """The requirements the runner's installed versions do not satisfy."""
    out = []
    for text in wanted:
        req = parse_requirement(text)
        if req is not None and not satisfied(text, installed.get(req.name)):
            out.append(text)
    return out


def runner_env() -> SideEnv:
    return SideEnv(
        python=sys.executable, versions=installed_versions(), environment="the runner's own"
    )


def uv_binary() -> str:
    """The uv program: beside this interpreter, else on PATH; ToolchainError when absent."""
    beside = Path(sys.executable).parent / "uv"
    if beside.is_file():
        return str(beside)
    found = shutil.which("uv")
    if found is None:
        raise ToolchainError(
            "uv is not installed, so no environment can be made for a side's own toolchain",
            hint="pip install 'kernel-review[gpu]' (it brings uv), or set [toolchain] "
            "environments = 'runner' in the policy",
        )
    return found


def _uv(args: list[str], *, what: str, stdin: str | None = None) -> str:
    env = scrubbed_env()  # uv runs no pull-request code, but it needs no token either
    for name, value in os.environ.items():
        if name in _NETWORK_VARS or (name.startswith("UV_") and not SECRET_RE.search(name)):
            env[name] = value
    try:
        proc = subprocess.run(
            [uv_binary(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=UV_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ToolchainError(
            f"{what} ran past {UV_TIMEOUT_S:.0f} s", hint="check the runner's network and cache"
        ) from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise ToolchainError(
            f"{what} failed: {tail}",
            hint="check that the pins exist on the package index the runner can reach "
            "([toolchain] index_urls in the policy adds one)",
        )
    return proc.stdout


def _index_args(index_urls: Iterable[str]) -> list[str]:
    return [arg for url in index_urls for arg in ("--extra-index-url", url)]


def resolve(requirements: list[str], index_urls: Iterable[str] = ()) -> list[str]:
    """The exact versions ``requirements`` resolve to for this interpreter (with their
    dependencies), one ``name==version`` line each."""
    out = _uv(
        [
            "pip",
            "compile",
            "-",
            "--quiet",
            "--no-header",
            "--no-annotate",
            "--only-binary",
            ":all:",
            "--python",
            sys.executable,
            *_index_args(index_urls),
        ],
        what=f"resolving {', '.join(requirements)}",
        stdin="\n".join(requirements) + "\n",
    )
    return [ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]


def env_key(resolved: Iterable[str], index_urls: Iterable[str] = ()) -> str:
    """The cache key of an environment: all that defines its content."""
    text = "\n".join(
        [ENV_VERSION, sys.executable, sys.version, platform.machine(), sys.platform]
        + sorted(resolved)
        + [f"index {url}" for url in index_urls]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_environment(
    cache_dir: Path, key: str, build: Callable[[Path], None], *, trusted: bool | None = None
) -> tuple[Path, str]:
    """The folder ``build`` makes for ``key``, kept in ``cache_dir`` between runs, and a note
    ('' when the kept one was used or written). A kept folder is used only when its files match
    the seal written beside it (``<key>.sha256``, ``checks.worker_env.seal_matches``) when it
    was made. A trusted run replaces a
    folder that does not match and keeps what it builds; any other run leaves the cache as it
    is and builds into a throw-away folder, removed when this process ends."""
    trusted = trusted_run() if trusted is None else trusted
    kept, digest_file = cache_dir / key, cache_dir / f"{key}.sha256"
    note = ""
    if kept.exists() or digest_file.exists():
        if seal_matches(kept, digest_file, max_bytes=MAX_ENV_BYTES):
            return kept, ""
        note = f"the kept environment {kept} did not match its digest"
        if not trusted:
            note += " and was not used (a trusted run replaces it)"
    if not trusted:
        scratch = Path(tempfile.mkdtemp(prefix="kernel-review-env-"))
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        _build_or_remove(build, scratch / key)
        return scratch / key, note
    if note:
        shutil.rmtree(kept, ignore_errors=True)
        digest_file.unlink(missing_ok=True)
        note += " and was made again"
    partial = kept.with_name(kept.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    _build_or_remove(build, partial)
    try:
        partial.rename(kept)
    except OSError:  # another job made the same environment first: its digest says
        shutil.rmtree(partial, ignore_errors=True)
        return cached_environment(cache_dir, key, build, trusted=False)
    write_seal(kept, digest_file, max_bytes=MAX_ENV_BYTES)
    return kept, note


def _env_python(env: Path) -> Path:
    return env / "bin" / "python"


RUNNER_PTH = (
    "_kernel_review_runner.pth"  # in a made environment: the runner's packages after its own
)
_ADDSITEDIR = re.compile(r"site\.addsitedir\((.+)\)\s*$")


def _site_dirs(env: Path) -> list[str]:
    """The folders an environment's interpreter finds packages in: its own site-packages, then
    the runner's that its ``RUNNER_PTH`` line adds (read as text, never run)."""
    own = sorted({str(p.resolve()) for p in env.glob("lib*/python*/site-packages")})
    runner = []
    for site in own:
        pth = Path(site) / RUNNER_PTH
        found = _ADDSITEDIR.search(pth.read_text()) if pth.is_file() else None
        if found:
            with contextlib.suppress(ValueError, SyntaxError):
                runner.append(str(ast.literal_eval(found.group(1))))
    return [*own, *runner]


def _query_versions(python: Path) -> dict[str, str]:
    """The installed versions of ``REPORTED`` in the environment of ``python``, read from the
    packages' metadata alone: the interpreter starts without ``site`` (``-I -S``), its package
    folders given (``_site_dirs``), so no ``.pth`` file of the checkout's dependencies runs
    here, outside the sandbox."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "sys.path[:0] = json.loads(sys.argv[1])\n"
        "out = {}\n"
        "for n in sys.argv[2:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [
            str(python),
            "-I",
            "-S",
            "-c",
            code,
            json.dumps(_site_dirs(python.parent.parent)),
            *REPORTED,
        ],
        capture_output=True,
        text=True,
        env=scrubbed_env(),
        timeout=120,
    )
    if proc.returncode != 0:
        raise ToolchainError(
            f"the environment at {python.parent.parent} does not start: {proc.stderr[-600:]}",
            hint="remove that folder; the next run makes it again",
        )
    return json.loads(proc.stdout)


def _build_or_remove(build: Callable[[Path], None], into: Path) -> None:
    try:
        build(into)
    except BaseException:
        shutil.rmtree(into, ignore_errors=True)
        raise


def make_environment(
    resolved: list[str], cache_dir: Path, index_urls: Iterable[str] = ()
) -> tuple[Path, str]:
    """The environment of ``resolved`` (made once; a trusted run keeps it, see
    ``cached_environment``): its folder, and a note on a kept one that was refused."""
    index_urls = list(index_urls)
    return cached_environment(
        cache_dir, env_key(resolved, index_urls), lambda into: _build(resolved, into, index_urls)
    )


def _build(resolved: list[str], partial: Path, index_urls: list[str]) -> None:
    _uv(
        ["venv", "--quiet", "--python", sys.executable, str(partial)],
        what="making a virtual environment",
    )
    # The runner's packages after the environment's own: the bot's dependencies, and whatever
    # toolchain package the side does not pin differently.
    site = Path(
        subprocess.run(
            [
                str(_env_python(partial)),
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    runner_site = sysconfig.get_path("purelib")
    (site / RUNNER_PTH).write_text(f"import site; site.addsitedir({runner_site!r})\n")
    _uv(
        [
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            # every module's bytecode now, so a later import writes none (it would change the
            # digest) and none written by other code is taken for it
            "--compile-bytecode",
            "--python",
            str(_env_python(partial)),
            *_index_args(index_urls),
            *resolved,
        ],
        what=f"installing {', '.join(resolved)}",
    )
    (partial / "kernel-review-env.json").write_text(json.dumps({"resolved": resolved}))


def _package(requirement: str) -> str:
    req = parse_requirement(requirement)
    if req is None:
        raise ToolchainError(
            f"{requirement!r} is not a requirement (PEP 508)",
            hint="write it as a package name and versions, like 'triton>=3.6,<3.7'",
        )
    return canonical(req.name)


def side_environment(
    tree: Path,
    *,
    cache_dir: Path | None = None,
    index_urls: Iterable[str] = (),
    override: Iterable[str] = (),
) -> SideEnv:
    """The interpreter for the checkout at ``tree``: the runner's where it satisfies the side's
    pins, else an environment made for them. ``override``: requirements that replace the
    side's own pins of the same packages (a scheduled run's candidate release). ToolchainError
    when one cannot be made."""
    extra = list(override)
    replaced = {_package(r) for r in extra}
    requirements = [r for r in side_requirements(tree) if _package(r) not in replaced] + extra
    installed = installed_versions()
    missing = unsatisfied(requirements, installed)
    if not missing:
        env = runner_env()
        return env.model_copy(update={"requirements": tuple(requirements)})
    index_urls = list(index_urls)
    resolved = resolve(missing, index_urls)
    folder, note = make_environment(resolved, cache_dir or default_cache_dir(), index_urls)
    python = _env_python(folder)
    return SideEnv(
        python=str(python),
        versions=_query_versions(python),
        environment=f"uv environment {folder.name} ({', '.join(missing)})"
        + (f"; {note}" if note else ""),
        requirements=tuple(requirements),
    )
