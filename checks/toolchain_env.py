"""Each side's own toolchain: the interpreter a side's workers run under.

A pull request that moves the triton or torch pin is measured with each side under its own
pins. ``side_requirements(tree)`` reads them from the side's files (a lock file's exact version
first, then requirements and constraints files, then ``pyproject.toml`` and conda files, through
``bot.toolchain.pins``). Where the runner's installed packages already satisfy a side's pins,
that side runs under the runner's interpreter. Otherwise ``side_environment`` makes one with
``uv``: the pins the runner does not satisfy are resolved (``uv pip compile``), and the
environment is made once per resolved set, in ``<cache>/envs/<key>``, keyed by the resolved
requirements, the interpreter and the platform. The new environment sees the runner's own
packages after its own (a ``.pth`` line), so a side that pins only triton gets that triton and
the runner's torch, numpy and the bot's own dependencies.

A Docker image or a CI install line is reported as a toolchain change but cannot be installed
here: a policy ``[setup]`` command runs in each checkout with that side's interpreter first on
``PATH`` (``checks.checkout``), which is where a project installs what its pins do not say.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bot.contracts.evidence import SideToolchain
from bot.errors import ToolchainError
from bot.outputs import cache_root
from bot.toolchain.pins import Pin, canonical, file_kind, pins, read_pin_file
from bot.toolchain.requirements import installable, satisfied
from bot.toolchain.requirements import parse as parse_requirement
from checks.worker_env import SECRET_RE, scrubbed_env

# What a side's environment installs when its pins ask for another version.
INSTALLED = ("triton", "torch", "pytorch-triton", "pytorch-triton-rocm")
REPORTED = ("triton", "torch", "pytorch-triton", "pytorch-triton-rocm", "numpy")
_PRIORITY = {"lock": 0, "requirements": 1, "toml": 2, "conda": 3}
_SKIP_DIRS = {".git", "node_modules", "venv", ".venv", "site-packages", "build", "dist"}
_MAX_DEPTH = 3
UV_TIMEOUT_S = 1800.0
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


def env_key(resolved: Iterable[str]) -> str:
    text = "\n".join(
        [ENV_VERSION, sys.version, platform.machine(), sys.platform, *sorted(resolved)]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _env_python(env: Path) -> Path:
    return env / "bin" / "python"


def _query_versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [str(python), "-c", code, *REPORTED],
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


def make_environment(resolved: list[str], cache_dir: Path, index_urls: Iterable[str] = ()) -> Path:
    """The environment of ``resolved`` (made once; the cache keeps it): its folder."""
    env = cache_dir / env_key(resolved)
    if (env / "kernel-review-env.json").is_file():
        return env
    partial = env.with_name(env.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
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
    (site / "_kernel_review_runner.pth").write_text(
        f"import site; site.addsitedir({runner_site!r})\n"
    )
    _uv(
        [
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--python",
            str(_env_python(partial)),
            *_index_args(index_urls),
            *resolved,
        ],
        what=f"installing {', '.join(resolved)}",
    )
    (partial / "kernel-review-env.json").write_text(json.dumps({"resolved": resolved}))
    try:
        partial.rename(env)
    except OSError:  # another job made the same environment first
        shutil.rmtree(partial, ignore_errors=True)
    return env


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
    folder = make_environment(resolved, cache_dir or default_cache_dir(), index_urls)
    python = _env_python(folder)
    return SideEnv(
        python=str(python),
        versions=_query_versions(python),
        environment=f"uv environment {folder.name} ({', '.join(missing)})",
        requirements=tuple(requirements),
    )
