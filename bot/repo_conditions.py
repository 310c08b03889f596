"""Repository conditions a reviewer asks for, read from the files at the head revision.

Pure text reading: every function takes the file texts it needs (or a reader ``path -> text |
None``) and returns plain data; :func:`collect` reads them through a ``bot.revision.Revision``,
so a git commit and the GitHub contents API give the same conditions. Nothing here runs user
code.

- a named owner for each changed kernel path (CODEOWNERS, else the policy's ``owners``);
- a version pin for triton and torch (pyproject, requirements/constraints files, lock files);
- a perf gate in CI (a workflow that runs this action or ``kernel-review bench``);
- the old kernel kept for one release as rollback (from the diff analysis).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from bot.contracts.repo import OwnerFact, PerfGateFact, PinFact, RepoConditions

if TYPE_CHECKING:
    from bot.revision import Revision

Reader = Callable[[str], "str | None"]

WORKFLOWS_DIR = ".github/workflows"  # GitHub runs the workflows directly inside it, no deeper
CODEOWNERS_PATHS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
PIN_FILES = (
    "pyproject.toml",
    "requirements.txt",
    "requirements-gpu.txt",
    "requirements/gpu.txt",
    "requirements/base.txt",
    "constraints.txt",
    "setup.cfg",
    "environment.yml",
)
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "pixi.lock", "conda-lock.yml")
PINNED_PACKAGES = ("triton", "torch")


# --- CODEOWNERS -------------------------------------------------------------------------------


def _segment_regex(segment: str) -> str:
    """One path segment of a pattern: ``*`` and ``?`` stay within the segment; everything else,
    ``[`` and ``]`` included, is literal (GitHub does not take character ranges)."""
    return "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in segment)


def _codeowners_regex(pattern: str) -> re.Pattern[str]:
    """One CODEOWNERS pattern as a regex over repository-relative paths, by GitHub's rules
    (https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/about-code-owners):

    - a slash at the start or in the middle anchors the pattern at the root; otherwise it
      matches at any depth (``*.js``, ``apps/``);
    - a trailing slash names a directory: everything below it (``/build/logs/``);
    - a last segment that is ``*`` matches the files directly inside only: ``docs/*`` owns
      ``docs/getting-started.md`` but not ``docs/build-app/troubleshooting.md``;
    - any other last segment matches the path itself and everything below it (``/apps/github``);
    - ``**`` matches any number of directories (``**/logs``, ``docs/**/*.md``).
    """
    directory = pattern.endswith("/")
    anchored = pattern.startswith("/") or "/" in pattern.strip("/")
    segments = pattern.strip("/").split("/")
    out = "" if anchored else "(?:.*/)?"
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out += ".+" if last else "(?:[^/]+/)*"
            continue
        out += _segment_regex(segment)
        if not last:
            out += "/"
        elif directory:
            out += "/.+"
        elif segment != "*":
            out += "(?:/.+)?"
    return re.compile(f"^{out}$")


def parse_codeowners(text: str) -> list[tuple[int, re.Pattern[str], tuple[str, ...]]]:
    rules = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        rules.append((lineno, _codeowners_regex(parts[0]), tuple(parts[1:])))
    return rules


def find_owners(
    paths: Iterable[str], read: Reader, policy_owners: Sequence[str] = ()
) -> tuple[OwnerFact, ...]:
    """Owners per path: the last matching CODEOWNERS rule wins (GitHub's rule); else the policy."""
    source_file, rules = None, []
    for candidate in CODEOWNERS_PATHS:
        text = read(candidate)
        if text is not None:
            source_file, rules = candidate, parse_codeowners(text)
            break
    facts = []
    for path in sorted(set(paths)):
        match = None
        for lineno, regex, owners in rules:
            if regex.match(path):
                match = (lineno, owners)
        if match and match[1]:
            facts.append(OwnerFact(path=path, owners=match[1], source=f"{source_file}:{match[0]}"))
        elif policy_owners:
            facts.append(OwnerFact(path=path, owners=tuple(policy_owners), source="policy"))
        else:
            facts.append(OwnerFact(path=path, owners=(), source=""))
    return tuple(facts)


# --- version pins ------------------------------------------------------------------------------

_REQ_RE = re.compile(
    r"""^\s*["']?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#"']*)""",
)


def classify_spec(spec: str) -> Literal["exact", "range", "unbounded"]:
    spec = spec.replace(" ", "")
    if spec.startswith("===") or (spec.startswith("==") and "*" not in spec):
        return "exact"
    if "==" in spec and "*" in spec:  # ==3.6.* is a range
        return "range"
    if "~=" in spec or "<" in spec:
        return "range"
    return "unbounded"


def _scan_requirement_lines(text: str, package: str) -> tuple[str, int] | None:
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip().lstrip("-").strip()
        for candidate in re.findall(r"""["']([^"']+)["']""", line) or [stripped]:
            m = _REQ_RE.match(candidate)
            if m and m.group("name").lower().replace("_", "-") == package:
                spec = m.group("spec").strip().rstrip(",")
                return spec, lineno
        # poetry style:  triton = "^3.6"  /  triton = { version = "3.6.0" }
        m = re.match(rf"""^\s*{package}\s*=\s*(?:\{{[^}}]*version\s*=\s*)?["']([^"']+)["']""", line)
        if m:
            spec = m.group(1)
            if spec.startswith("^") or spec.startswith("~"):
                spec = f"~={spec[1:]}"
            elif spec[0].isdigit():
                spec = f"=={spec}"
            return spec, lineno
    return None


def _locked_version(text: str, package: str) -> str | None:
    m = re.search(
        rf"""(?:name\s*=\s*"{package}"\s*\n\s*version\s*=\s*"([^"]+)")|(?:"{package}":\s*\{{[^}}]*"version":\s*"==([^"]+)")""",
        text,
    )
    if m:
        return m.group(1) or m.group(2)
    return None


def find_pins(read: Reader, packages: Sequence[str] = PINNED_PACKAGES) -> tuple[PinFact, ...]:
    facts = []
    for package in packages:
        best: PinFact | None = None
        for path in PIN_FILES:
            text = read(path)
            if text is None:
                continue
            found = _scan_requirement_lines(text, package)
            if found is None:
                continue
            spec, lineno = found
            kind = classify_spec(spec) if spec else "unbounded"
            fact = PinFact(package=package, spec=spec or None, source=f"{path}:{lineno}", kind=kind)
            if best is None or (not best.pinned and fact.pinned):
                best = fact
        if best is None or not best.pinned:
            for path in LOCK_FILES:
                text = read(path)
                version = _locked_version(text, package) if text else None
                if version:
                    best = PinFact(
                        package=package, spec=f"locked {version}", source=path, kind="lock"
                    )
                    break
        facts.append(best or PinFact(package=package, spec=None, source=None, kind="absent"))
    return tuple(facts)


# --- perf gate in CI ---------------------------------------------------------------------------

_GATE_RE = re.compile(r"kernel-review(?:@|\s+bench|\s+review|/)|uses:\s*\S*kernel-review", re.I)


def find_perf_gate(workflow_texts: dict[str, str]) -> PerfGateFact:
    """A workflow that runs this action (or ``kernel-review bench``) is a perf gate in CI."""
    for path in sorted(workflow_texts):
        text = workflow_texts[path]
        for lineno, line in enumerate(text.splitlines(), start=1):
            if _GATE_RE.search(line):
                return PerfGateFact(workflow=path, detail=f"{path}:{lineno}: {line.strip()[:120]}")
    looked = ", ".join(sorted(workflow_texts)) or "no workflow files"
    return PerfGateFact(workflow=None, detail=f"no workflow runs kernel-review ({looked})")


def collect(
    revision: Revision, kernel_paths: Iterable[str], policy_owners: Sequence[str] = ()
) -> RepoConditions:
    """Owners, version pins and a perf gate, read from the files of ``revision`` (the head)."""
    workflows = {
        path: text
        for path in revision.list_dir(WORKFLOWS_DIR)
        if path.endswith((".yml", ".yaml")) and (text := revision.read(path)) is not None
    }
    return RepoConditions(
        owners=find_owners(kernel_paths, revision.read, policy_owners),
        pins=find_pins(revision.read),
        perf_gate=find_perf_gate(workflows),
    )
