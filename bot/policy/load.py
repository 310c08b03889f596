"""Read and validate the maintainers' policy: ``.github/kernel-review.toml``, else the
``[tool.kernel-review]`` table of ``pyproject.toml``.

Every problem is reported as ``file:line:col: key.path: what is wrong; what is allowed``, all
of them at once (up to :data:`MAX_REPORTED`), so a typo can be fixed from the message alone.
Pure functions take text (:func:`parse_policy`, :func:`validate_policy`); the file edge is
:func:`load_policy`, :func:`find_policy` and :func:`read_policy_file`. The models live in
``bot.policy.model`` and are re-exported here.
"""

from __future__ import annotations

import difflib
import stat
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.errors import PolicyError
from bot.policy.messages import (
    PolicyProblem,
    syntax_problem,
    validation_problems,
    whole_file_problem,
)
from bot.policy.model import (
    DEPLOYMENT_KINDS,
    DTYPES,
    VENDORS,
    CompilerTargets,
    Deployment,
    GitHubSettings,
    KernelPolicy,
    Limits,
    Policy,
    ServedShape,
    glob_match,
    normalize_path,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "DEPLOYMENT_KINDS",
    "DTYPES",
    "MAX_POLICY_BYTES",
    "POLICY_FILE",
    "PYPROJECT_TABLE",
    "VENDORS",
    "CompilerTargets",
    "Deployment",
    "GitHubSettings",
    "KernelPolicy",
    "Limits",
    "LoadedPolicy",
    "Policy",
    "PolicyProblem",
    "PolicySource",
    "ServedShape",
    "find_policy",
    "glob_match",
    "load_policy",
    "normalize_path",
    "parse_policy",
    "problems_error",
    "read_policy_file",
    "validate_policy",
]

POLICY_FILE = ".github/kernel-review.toml"
PYPROJECT_TABLE = ("tool", "kernel-review")
MAX_POLICY_BYTES = 64 * 1024
MAX_REPORTED = 10

MINIMAL_EXAMPLE = """\
# .github/kernel-review.toml
[deployment]
kind = "long-lived"            # or cli | serverless | latency-slo (then add first_call_budget_ms)

[[kernels]]
name = "softmax"
bench = "mypkg.bench:softmax"  # module:function, importable from the repository root
paths = ["mypkg/softmax.py", "mypkg/csrc/**"]
dtypes = ["float16"]
shapes = [[1823, 781], [4096, 4096]]
"""


class PolicySource(BaseModel):
    """Policy text as read from disk: ``table`` is the key path of the policy inside the file."""

    model_config = ConfigDict(frozen=True)

    path: Path
    display: str  # how messages name the file, e.g. ".github/kernel-review.toml"
    table: tuple[str, ...] = ()
    text: str


class LoadedPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    policy: Policy
    path: Path
    table: str | None = None  # "tool.kernel-review" when read from pyproject.toml


# ---------------------------------------------------------------------------------- validation


def parse_policy(text: str, source: str = "<string>", *, table: tuple[str, ...] = ()) -> Policy:
    """Validate policy TOML text; raise PolicyError listing every problem with file:line:col."""
    policy, problems = validate_policy(text, source, table=table)
    if policy is None:
        raise problems_error(problems, source)
    return policy


def validate_policy(
    text: str, source: str = "<string>", *, table: tuple[str, ...] = ()
) -> tuple[Policy | None, list[PolicyProblem]]:
    """``(policy, [])`` when valid, else ``(None, problems)`` sorted by line. Never raises for
    bad input. ``table`` selects the policy inside a larger document, e.g. pyproject.toml."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_POLICY_BYTES:
        return None, [whole_file_problem(source, _size_message(size))]
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [syntax_problem(exc, text, source)]
    except RecursionError:
        return None, [whole_file_problem(source, "the TOML is nested too deeply to read")]
    data: Any = document
    for key in table:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, dict):
        name = ".".join(table)
        return None, [whole_file_problem(source, f"[{name}] must be a table, like: [{name}]")]
    try:
        return Policy.model_validate(data), []
    except ValidationError as exc:
        return None, validation_problems(exc, data, text, table, source)


def problems_error(problems: list[PolicyProblem], source: str) -> PolicyError:
    """One PolicyError whose message lists the problems, one per line."""
    shown = [str(problem) for problem in problems[:MAX_REPORTED]]
    if len(problems) > MAX_REPORTED:
        shown.append(f"... and {len(problems) - MAX_REPORTED} more")
    noun = "problem" if len(problems) == 1 else "problems"
    return PolicyError(
        f"policy {source} has {len(problems)} {noun}:\n" + "\n".join(shown),
        hint="fix each line above, then run `kernel-review policy check` again; "
        "docs/policy.md describes every key",
    )


def _size_message(size: int) -> str:
    return (
        f"the policy file is {size:,} bytes, over the cap of {MAX_POLICY_BYTES:,} bytes "
        f"({MAX_POLICY_BYTES // 1024} KiB); a policy lists kernels and shapes, not data"
    )


# ----------------------------------------------------------------------------------- the files


def read_policy_file(path: Path, *, display: str | None = None) -> PolicySource:
    """Read a policy file: the whole file, or ``[tool.kernel-review]`` of a pyproject.toml."""
    table = PYPROJECT_TABLE if path.name == "pyproject.toml" else ()
    return PolicySource(
        path=path, display=display or str(path), table=table, text=_read_capped(path, display)
    )


def find_policy(repo_root: Path) -> PolicySource:
    """The repository's policy: ``.github/kernel-review.toml``, else ``[tool.kernel-review]`` in
    ``pyproject.toml``; a PolicyError saying where it looked when there is neither."""
    repo_root = Path(repo_root)
    dedicated = repo_root / POLICY_FILE
    if dedicated.exists() or dedicated.is_symlink():
        return read_policy_file(dedicated, display=POLICY_FILE)
    pyproject = repo_root / "pyproject.toml"
    if pyproject.exists() or pyproject.is_symlink():
        source = read_policy_file(pyproject, display="pyproject.toml")
        try:
            tool = tomllib.loads(source.text).get("tool", {})
        except (tomllib.TOMLDecodeError, RecursionError):
            return source  # validation reports the syntax error with its line
        if isinstance(tool, dict) and PYPROJECT_TABLE[1] in tool:
            return source
        near = [key for key in tool if isinstance(tool, dict) and key != PYPROJECT_TABLE[1]]
        close = difflib.get_close_matches(PYPROJECT_TABLE[1], near, n=1, cutoff=0.7)
        if close:
            raise PolicyError(
                f"pyproject.toml has [tool.{close[0]}] but the policy table is named "
                "[tool.kernel-review]",
                hint=f"rename [tool.{close[0]}] to [tool.kernel-review]",
            )
    raise PolicyError(
        f"no policy in {repo_root}: looked for {POLICY_FILE} and for a [tool.kernel-review] "
        "table in pyproject.toml" + _near_misses(repo_root),
        hint="create .github/kernel-review.toml; a minimal one to paste:\n\n" + MINIMAL_EXAMPLE,
    )


def load_policy(repo_root: Path) -> LoadedPolicy:
    """Find, read and validate the repository's policy (PolicyError with file:line:col if bad)."""
    source = find_policy(repo_root)
    policy = parse_policy(source.text, source.display, table=source.table)
    return LoadedPolicy(
        policy=policy, path=source.path, table=".".join(source.table) if source.table else None
    )


def _near_misses(repo_root: Path) -> str:
    github = repo_root / ".github"
    if not github.is_dir():
        return ""
    names = sorted(entry.name for entry in github.iterdir() if entry.is_file())
    close = difflib.get_close_matches("kernel-review.toml", names, n=1, cutoff=0.7)
    return (
        f" (found .github/{close[0]}; the file must be named exactly {POLICY_FILE})"
        if close
        else ""
    )


def _read_capped(path: Path, display: str | None) -> str:
    name = display or str(path)
    try:
        info = path.lstat()
    except OSError as exc:
        raise PolicyError(
            f"cannot read policy {name}: {exc.strerror}", hint="check the path"
        ) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise PolicyError(
            f"policy {name} is not a regular file",
            hint="the policy must be a plain file in the repository, not a link or a device",
        )
    if info.st_size > MAX_POLICY_BYTES:
        raise PolicyError(f"{name}: {_size_message(info.st_size)}", hint="shrink the file")
    with path.open("rb") as handle:
        raw = handle.read(MAX_POLICY_BYTES + 1)
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(f"{name}: {_size_message(len(raw))}", hint="shrink the file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PolicyError(
            f"{name}:{line}: not UTF-8 (byte {exc.start})", hint="save the file as UTF-8"
        ) from None
