"""Read and validate the maintainers' policy: ``.github/kernel-review.toml``, else the
``[tool.kernel-review]`` table of ``pyproject.toml``.

Every problem is reported as ``file:line:col: key.path: what is wrong; what is allowed``, all
of them at once (up to :data:`MAX_REPORTED`), so a typo can be fixed from the message alone.
Pure functions take text (:func:`parse_policy`, :func:`validate_policy`). The file edge reads
through a ``bot.revision.Revision``, so a folder, a git commit and the GitHub contents API find
the policy the same way: :func:`find_policy` (and :func:`locate_policy` for the text),
:func:`missing_policy` for the error when there is none; :func:`load_policy` for a folder on
disk and :func:`read_policy_file` for one file. The models live in
``bot.policy.model`` and are re-exported here.
"""

from __future__ import annotations

import difflib
import errno
import os
import sys
from pathlib import Path, PurePosixPath
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
from bot.revision import DirRevision, ReadRefused, Revision, read_text_file

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
    "locate_policy",
    "missing_policy",
    "normalize_path",
    "parse_policy",
    "problems_error",
    "read_policy_file",
    "tree_policy",
    "validate_policy",
]

POLICY_FILE = ".github/kernel-review.toml"
PYPROJECT_TABLE = ("tool", "kernel-review")
DEFAULT_PLACES = (POLICY_FILE, "pyproject.toml")
MAX_POLICY_BYTES = 64 * 1024
# a pyproject.toml carries the whole project's configuration besides the policy's table
MAX_PYPROJECT_BYTES = 1024 * 1024
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
    """Policy text as read: ``path`` as the revision names the file (on disk for a folder),
    ``table`` the key path of the policy inside the file."""

    model_config = ConfigDict(frozen=True)

    path: str
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
    if size > _cap(table):
        return None, [whole_file_problem(source, _size_message(size, _cap(table)))]
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


def _cap(table: tuple[str, ...]) -> int:
    return MAX_PYPROJECT_BYTES if table else MAX_POLICY_BYTES


def _size_message(size: int, cap: int = MAX_POLICY_BYTES) -> str:
    return (
        f"the policy file is {size:,} bytes, over the cap of {cap:,} bytes "
        f"({cap // 1024} KiB); a policy lists kernels and shapes, not data"
    )


# ----------------------------------------------------------------------------------- the files


def read_policy_file(path: Path, *, display: str | None = None) -> PolicySource:
    """Read a policy file: the whole file, or ``[tool.kernel-review]`` of a pyproject.toml."""
    name = display or str(path)
    try:
        text = read_text_file(path, name, max_bytes=_cap(_table_of(path.name)))
    except ReadRefused as exc:
        raise _refused(exc) from None
    if text is None:
        raise PolicyError(
            f"cannot read policy {name}: {os.strerror(errno.ENOENT)}", hint="check the path"
        )
    return PolicySource(path=str(path), display=name, table=_table_of(path.name), text=text)


def locate_policy(revision: Revision, path: str | None = None) -> PolicySource | None:
    """The policy's file in a revision: ``path`` when given, else ``.github/kernel-review.toml``,
    else ``pyproject.toml`` when it has a ``[tool.kernel-review]`` table. A pyproject.toml that
    is not valid TOML counts as holding one, so that validation reports the syntax error with
    its line instead of the policy silently going missing. None when there is no policy."""
    for candidate in [path] if path else DEFAULT_PLACES:
        text = _read(revision, candidate)
        if text is None:
            continue
        table = _table_of(candidate)
        if table and not _may_hold_policy(text):
            continue
        return PolicySource(
            path=candidate, display=revision.where(candidate), table=table, text=text
        )
    return None


def find_policy(revision: Revision, path: str | None = None) -> tuple[Policy, str] | None:
    """The validated policy of a revision and how messages name its file, or None when there is
    none (each caller decides what a missing policy means); PolicyError with file:line:col when
    the policy is there but wrong."""
    source = locate_policy(revision, path)
    if source is None:
        return None
    return parse_policy(source.text, source.display, table=source.table), source.display


def missing_policy(
    revision: Revision, *, place: str, hint: str, path: str | None = None
) -> PolicyError:
    """The error for a revision without a policy (``place``: "in /repo", "on the base branch
    (commit ...)"): a pyproject table named almost ``[tool.kernel-review]`` gets a rename hint;
    otherwise the message says where it looked and names a file close to the policy's name."""
    for candidate in [path] if path else DEFAULT_PLACES:
        text = _read(revision, candidate) if _table_of(candidate) else None
        close = _near_table(text) if text is not None else None
        if close:
            return PolicyError(
                f"{candidate} has [tool.{close}] but the policy table is named "
                "[tool.kernel-review]",
                hint=f"rename [tool.{close}] to [tool.kernel-review]",
            )
    looked = path or f"{POLICY_FILE} and for a [tool.kernel-review] table in pyproject.toml"
    near = "" if path else _near_misses(revision)
    return PolicyError(f"no policy {place}: looked for {looked}{near}", hint=hint)


def tree_policy(repo_root: Path) -> PolicySource:
    """The policy of a folder on disk (``path`` is where it is on disk); a PolicyError saying
    where it looked, with a minimal policy to paste, when there is none."""
    revision = DirRevision(repo_root)
    source = locate_policy(revision)
    if source is None:
        raise missing_policy(
            revision,
            place=f"in {revision.label}",
            hint="create .github/kernel-review.toml; a minimal one to paste:\n\n" + MINIMAL_EXAMPLE,
        )
    return source.model_copy(update={"path": str(revision.root / source.path)})


def load_policy(repo_root: Path) -> LoadedPolicy:
    """Find, read and validate the repository's policy (PolicyError with file:line:col if bad)."""
    source = tree_policy(Path(repo_root))
    policy = parse_policy(source.text, source.display, table=source.table)
    return LoadedPolicy(
        policy=policy,
        path=Path(source.path),
        table=".".join(source.table) if source.table else None,
    )


def _table_of(path: str) -> tuple[str, ...]:
    return PYPROJECT_TABLE if PurePosixPath(path).name == "pyproject.toml" else ()


def _tool_table(text: str) -> dict[str, Any] | None:
    """The ``[tool]`` table of a pyproject.toml; None when the text is not valid TOML."""
    try:
        tool = tomllib.loads(text).get("tool", {})
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    return tool if isinstance(tool, dict) else {}


def _may_hold_policy(text: str) -> bool:
    tool = _tool_table(text)
    return tool is None or PYPROJECT_TABLE[1] in tool


def _near_table(text: str) -> str | None:
    tool = _tool_table(text) or {}
    near = [key for key in tool if key != PYPROJECT_TABLE[1]]
    close = difflib.get_close_matches(PYPROJECT_TABLE[1], near, n=1, cutoff=0.7)
    return close[0] if close else None


def _near_misses(revision: Revision) -> str:
    names = sorted(path.rsplit("/", 1)[-1] for path in revision.list_dir(".github"))
    close = difflib.get_close_matches("kernel-review.toml", names, n=1, cutoff=0.7)
    return (
        f" (found .github/{close[0]}; the file must be named exactly {POLICY_FILE})"
        if close
        else ""
    )


def _read(revision: Revision, path: str) -> str | None:
    try:
        return revision.read(path, max_bytes=_cap(_table_of(path)))
    except ReadRefused as exc:
        raise _refused(exc) from None


def _refused(exc: ReadRefused) -> PolicyError:
    """A file the reader refused, in the words a maintainer fixing a policy needs."""
    name = exc.where
    if exc.why == "not-regular":
        return PolicyError(
            f"policy {name} is not a regular file",
            hint="the policy must be a plain file in the repository, not a link or a device",
        )
    if exc.why == "too-large":
        cap = _cap(_table_of(name))
        return PolicyError(f"{name}: {_size_message(exc.size, cap)}", hint="shrink the file")
    if exc.why == "not-utf8":
        return PolicyError(exc.message, hint=exc.hint)
    return PolicyError(f"cannot read policy {name}: {exc.detail}", hint="check the path")
