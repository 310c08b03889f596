"""Requirements, version specifiers and versions, read with ``packaging`` (PEP 508, PEP 440):
the one place the bot parses them. The pins a file states (``pins.py``), the repository's pin
condition (``bot/repo_conditions.py``), each side's environment (``checks/toolchain_env.py``),
the scheduled run's candidate release (``bot/app.py``) and the Triton series the compiler report
supports all read through here.

A pin keeps the specifier as its file wrote it (``>=3.6,<3.7``, in the file's order), checked
clause by clause; what ``packaging`` cannot read (Poetry's ``^2.5``, conda's ``=2.4.0``, a bare
``2.5.1`` of a table or a lock file) is read here by the rule of the tool that wrote it.
"""

from __future__ import annotations

from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

SpecKind = Literal["exact", "range", "unbounded"]
ANY = "(any)"  # a pin with no version: the package named, any release


def parse(text: str) -> Requirement | None:
    """The PEP 508 requirement ``text`` states, or None when it is not one."""
    try:
        return Requirement(text.strip())
    except InvalidRequirement:
        return None


def written_spec(text: str, req: Requirement) -> str:
    """The specifier of ``req`` as ``text`` writes it (its clauses in the file's order, no
    spaces), ``@URL`` for a direct reference, ``""`` when it names no version."""
    if req.url:
        return "@" + req.url
    body = text.split(";", 1)[0]
    body = body[body.index(req.name) + len(req.name) :].lstrip()
    if body.startswith("["):
        body = body[body.index("]") + 1 :]
    clauses = [c.strip() for c in body.strip().strip("()").split(",") if c.strip()]
    return ",".join(str(Specifier(c)) for c in clauses)


def version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def specifier(spec: str) -> SpecifierSet | None:
    """A specifier as a pin writes it, read by the rule of the tool that wrote it: PEP 440
    (``>=3.6,<3.7``), a bare version (``2.5.1``: exactly it), conda's ``=2.4.0`` (that
    release's series), Poetry's ``^2.5`` and ``~2.5`` (the series it allows). None when it
    names no version (``(any)``, a URL) or cannot be read."""
    spec = spec.replace(" ", "").split("|")[0]
    try:
        if spec.startswith(("^", "~")) and not spec.startswith("~="):
            return _poetry(spec)
        if spec.startswith("=") and not spec.startswith("=="):
            return SpecifierSet(f"=={spec[1:]}" + ("" if "*" in spec else ".*"))
        if version(spec) is not None:
            return SpecifierSet(f"=={spec}")
        return SpecifierSet(spec) if spec and not spec.startswith("@") and spec != ANY else None
    except InvalidSpecifier:
        return None


def _poetry(spec: str) -> SpecifierSet | None:
    """Poetry's caret (``^2.5``: >=2.5,<3) and tilde (``~2.5``: >=2.5,<2.6)."""
    v = version(spec[1:])
    if v is None:
        return None
    release = list(v.release)
    if spec[0] == "^":
        first = next((i for i, part in enumerate(release) if part), len(release) - 1)
        upper = [*release[:first], release[first] + 1]
    else:
        upper = [*release[:1], release[1] + 1] if len(release) > 1 else [release[0] + 1]
    return SpecifierSet(f">={v},<{'.'.join(map(str, upper))}")


def spec_kind(spec: str) -> SpecKind:
    """``exact`` when the specifier allows one release (``==2.5.1``, ``===2.5.1``, a bare
    version, conda's ``=2.5.1``), ``range`` when it is bounded above (``<3.7``, ``~=3.6.0``,
    ``==3.6.*``, Poetry's ``^3.6``), else ``unbounded`` (``>=2.4``, no version)."""
    found = specifier(spec)
    if found is None:
        return "unbounded"
    clauses = list(found)
    if any(c.operator == "===" for c in clauses) or any(
        c.operator == "==" and not c.version.endswith(".*") for c in clauses
    ):
        return "exact"
    if spec.replace(" ", "").startswith("=") and not spec.startswith("=="):
        return "exact"  # conda's =2.5.1: that release and its builds
    if any(c.operator in ("<", "<=", "~=") or c.operator == "==" for c in clauses):
        return "range"
    return "unbounded"


def exact_version(requirement: str) -> str | None:
    """The one version an exact requirement pins (``triton==3.5.1``: ``3.5.1``), else None."""
    req = parse(requirement)
    if req is None:
        return None
    exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return exact[0] if len(exact) == 1 and not exact[0].endswith(".*") else None


def installable(package: str, spec: str) -> str | None:
    """A requirement pip and uv can install for one pin, or None when the pin names no
    installable version (``(any)``, a URL, Poetry's ``^2.4``)."""
    spec = spec.split(" | ")[0]
    if spec in (ANY, "") or (spec.startswith(("^", "@", "~")) and not spec.startswith("~=")):
        return None
    if spec[0].isdigit():
        spec = "==" + spec
    elif spec.startswith("=") and not spec.startswith("=="):
        spec = "=" + spec  # conda's =2.4.0
    return f"{package}{spec}" if parse(f"{package}{spec}") is not None else None


def satisfied(requirement: str, installed: str | None) -> bool:
    """Whether the installed version (None: not installed) satisfies ``requirement``; a
    requirement that cannot be read asks for nothing."""
    req = parse(requirement)
    if req is None:
        return True
    return installed is not None and req.specifier.contains(installed, prereleases=True)


def series(text: str) -> tuple[int, int] | None:
    """A version's major and minor release (``3.6.0+git1a2b``: ``(3, 6)``), None when it is
    not a PEP 440 version."""
    v = version(text)
    return None if v is None else (*v.release, 0)[:2]  # type: ignore[return-value]


def names(requirements: list[str]) -> dict[str, str]:
    """Requirement strings by the package each names (as written); unreadable ones left out."""
    return {req.name: text for text in requirements if (req := parse(text)) is not None}
