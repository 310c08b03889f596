"""The real-kernel suite's catalogue: ``catalogue/<group>.toml``, one file per pinned package.

Read and checked here; every mistake is reported with its file, its kernel and what to write
instead. The format is described in ``bench/README.md`` (the real-kernel suite).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

KINDS = ("atomics", "split_reduction", "autotuned", "cuda_ext", "tiny", "plain")
DTYPES = (
    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
    "int8", "int32", "int64",
)  # fmt: skip
ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
GROUP = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CatalogueError(ValueError):
    """A catalogue file that cannot be used; the message says where and what to fix."""


@dataclass(frozen=True)
class Kernel:
    id: str
    module: str  # in entries/
    function: str
    source: str
    kinds: tuple[str, ...]
    configs: int
    dtype: str
    shapes: tuple[tuple[int, ...], ...]
    note: str

    @property
    def entry(self) -> str:
        return f"{self.module}:{self.function}"


@dataclass(frozen=True)
class Group:
    name: str  # the file's stem
    path: Path
    import_name: str
    requirement: str
    repo: str
    ref: str
    licence: str
    setup: str
    kernels: tuple[Kernel, ...]
    # exact pins of the packages ``import`` needs that the GPU machine lacks, installed with
    # ``requirement`` (FlagGems imports sqlalchemy for its autotune database)
    also: tuple[str, ...] = ()

    @property
    def pins(self) -> tuple[str, ...]:
        """Every pin the group installs: ``requirement``, then ``also``."""
        return (self.requirement, *self.also)

    @property
    def distribution(self) -> str:
        return PIN.match(self.requirement).group(1)  # type: ignore[union-attr]

    @property
    def version(self) -> str:
        return PIN.match(self.requirement).group(2)  # type: ignore[union-attr]

    def without(self, ids: set[str]) -> Group:
        """The group less the kernels whose ids are in ``ids``."""
        return Group(
            **{**self.__dict__, "kernels": tuple(k for k in self.kernels if k.id not in ids)}
        )

    def describe(self) -> dict[str, Any]:
        """What a record keeps of the group."""
        return {
            "import": self.import_name,
            "requirement": self.requirement,
            "also": list(self.also),
            "repo": self.repo,
            "ref": self.ref,
            "licence": self.licence,
            "setup": self.setup,
            "kernels": {
                k.id: {
                    "entry": k.entry,
                    "source": k.source,
                    "kinds": list(k.kinds),
                    "configs": k.configs,
                    "dtype": k.dtype,
                    "shapes": [list(s) for s in k.shapes],
                    "note": k.note,
                }
                for k in self.kernels
            },
        }


def _need(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise CatalogueError(
            f"{where}: `{key}` is missing; add it (bench/README.md, the real-kernel suite, lists the keys)"
        )
    value = table[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CatalogueError(
            f"{where}: `{key}` must be a {kind.__name__}, got {type(value).__name__} {value!r}"
        )
    return value


def _kernel(raw: Any, where: str, entries: Path | None) -> Kernel:
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: each [[kernels]] entry must be a table")
    kid = _need(raw, "id", str, where)
    if not ID.match(kid):
        raise CatalogueError(
            f"{where}: id {kid!r} must be letters, digits and _, starting with a letter or _, "
            "at most 64 characters (<group>_<op>)"
        )
    where = f"{where} {kid}"
    entry = _need(raw, "entry", str, where)
    m = ENTRY.match(entry)
    if not m:
        raise CatalogueError(
            f"{where}: entry {entry!r} must be `module:function`, the module a file in "
            "bench/real_kernels/entries/ (without .py)"
        )
    if entries is not None and not (entries / f"{m.group(1)}.py").is_file():
        raise CatalogueError(
            f"{where}: entry {entry!r} names entries/{m.group(1)}.py, which is not in {entries}; "
            "add the module or correct the name"
        )
    kinds = _need(raw, "kinds", list, where)
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise CatalogueError(
            f"{where}: kinds {kinds!r}: each must be one of {', '.join(KINDS)} (at least one)"
        )
    configs = _need(raw, "configs", int, where)
    if configs < 0:
        raise CatalogueError(f"{where}: configs must be 0 or more, got {configs}")
    if "autotuned" in kinds and configs == 0:
        raise CatalogueError(f"{where}: kinds has autotuned but configs is 0; give the count")
    dtype = _need(raw, "dtype", str, where)
    if dtype not in DTYPES:
        raise CatalogueError(f"{where}: dtype {dtype!r} must be one of {', '.join(DTYPES)}")
    shapes = _need(raw, "shapes", list, where)
    good = (
        bool(shapes)
        and all(isinstance(s, list) and s for s in shapes)
        and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for s in shapes for d in s)
        and len({len(s) for s in shapes}) == 1
        and len({tuple(s) for s in shapes}) == len(shapes)
    )
    if not good:
        raise CatalogueError(
            f"{where}: shapes {shapes!r} must be a non-empty list of distinct lists of positive "
            "integers, all of one rank (one small shape and one larger)"
        )
    return Kernel(
        id=kid,
        module=m.group(1),
        function=m.group(2),
        source=_need(raw, "source", str, where),
        kinds=tuple(kinds),
        configs=configs,
        dtype=dtype,
        shapes=tuple(tuple(s) for s in shapes),
        note=str(raw.get("note", "")),
    )


def load_group(path: Path, entries: Path | None = None) -> Group:
    """One catalogue file, checked; ``entries``: the folder its entry modules must be in."""
    where = str(path)
    if not GROUP.match(path.stem):
        raise CatalogueError(f"{where}: the file name must be <group>.toml, letters, digits, _")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{where}: cannot read it as TOML: {exc}") from exc
    pkg = doc.get("package")
    if not isinstance(pkg, dict):
        raise CatalogueError(f"{where}: a [package] table is missing")
    pwhere = f"{where} [package]"
    requirement = _need(pkg, "requirement", str, pwhere)
    if not PIN.match(requirement):
        raise CatalogueError(
            f"{pwhere}: requirement {requirement!r} must be an exact pin, `name==version`"
        )
    also = pkg.get("also", [])
    if not isinstance(also, list) or not all(isinstance(p, str) and PIN.match(p) for p in also):
        raise CatalogueError(
            f"{pwhere}: also {also!r} must be a list of exact pins, `name==version`: the "
            f"packages {pkg.get('import', 'the package')} imports that the GPU machine lacks"
        )
    if requirement in also or len(set(also)) < len(also):
        raise CatalogueError(f"{pwhere}: also {also!r} repeats a pin; name each package once")
    raw_kernels = doc.get("kernels")
    if not isinstance(raw_kernels, list) or not raw_kernels:
        raise CatalogueError(f"{where}: no [[kernels]] entries; add at least one")
    kernels = tuple(_kernel(k, f"{where} [[kernels]]", entries) for k in raw_kernels)
    seen: set[str] = set()
    for k in kernels:
        if k.id in seen:
            raise CatalogueError(f"{where}: kernel id {k.id!r} appears twice; ids must be unique")
        seen.add(k.id)
    return Group(
        name=path.stem,
        path=path,
        import_name=_need(pkg, "import", str, pwhere),
        requirement=requirement,
        repo=_need(pkg, "repo", str, pwhere),
        ref=_need(pkg, "ref", str, pwhere),
        licence=_need(pkg, "licence", str, pwhere),
        setup=str(pkg.get("setup", "")),
        kernels=kernels,
        also=tuple(also),
    )


def load_catalogue(folder: Path, entries: Path | None = None) -> list[Group]:
    """Every ``*.toml`` in ``folder``, by name; kernel ids unique over all of them."""
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise CatalogueError(
            f"no catalogue files (*.toml) in {folder}; pass --catalogue with the right folder"
        )
    groups = [load_group(f, entries) for f in files]
    owner: dict[str, str] = {}
    for g in groups:
        for k in g.kernels:
            if k.id in owner:
                raise CatalogueError(
                    f"kernel id {k.id!r} is in both {owner[k.id]} and {g.path.name}; ids must be "
                    "unique over the whole suite (<group>_<op>)"
                )
            owner[k.id] = g.path.name
    return groups


def first_shapes(groups: list[Group], n: int | None) -> list[Group]:
    """Each kernel with its first ``n`` served shapes only (None: all of them)."""
    if n is None:
        return groups
    if n < 1:
        raise CatalogueError(f"--shapes {n}: keep at least one served shape per kernel")
    return [
        Group(
            **{
                **g.__dict__,
                "kernels": tuple(
                    Kernel(**{**k.__dict__, "shapes": k.shapes[:n]}) for k in g.kernels
                ),
            }
        )
        for g in groups
    ]


def select(groups: list[Group], only: list[str] | None, names: list[str] | None) -> list[Group]:
    """The groups named in ``names`` (file stems), narrowed to the kernel ids of ``only``; a name
    that matches nothing is an error that lists what there is."""
    if names:
        known = {g.name for g in groups}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise CatalogueError(
                f"--groups: no group {', '.join(unknown)}; groups: {', '.join(sorted(known))}"
            )
        groups = [g for g in groups if g.name in names]
    if only:
        ids = {k.id for g in groups for k in g.kernels}
        unknown = [i for i in only if i not in ids]
        if unknown:
            raise CatalogueError(
                f"--only: no kernel {', '.join(unknown)} in the groups chosen; kernels: "
                + ", ".join(sorted(ids))
            )
        groups = [
            Group(**{**g.__dict__, "kernels": tuple(k for k in g.kernels if k.id in only)})
            for g in groups
        ]
        groups = [g for g in groups if g.kernels]
    return groups
