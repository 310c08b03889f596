"""The real-kernel suite's catalogue (bench/real_kernels/catalogue/*.toml) and its entry modules.

Only what holds without the pinned packages installed: every catalogue file parses and is well
formed, ids are unique over the suite, every ``entry`` names a function of the bench entry
contract in its module (read with ``ast``, never imported), the modules import nothing but torch,
their package and the standard library, and every pin (``requirement`` and ``also``) is in
wheels.txt. Each check returns the problems it finds, so the tests can also show that it finds
the mistakes it is there for.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from tests.paths import ROOT

SUITE = ROOT / "bench" / "real_kernels"
CATALOGUE = SUITE / "catalogue"
ENTRIES = SUITE / "entries"
WHEELS = SUITE / "wheels.txt"

KINDS = {"atomics", "split_reduction", "autotuned", "cuda_ext", "tiny", "plain"}
DTYPES = {"float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "int8"}
DTYPES |= {"int32", "int64"}
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)$")
REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
PACKAGE_KEYS = ("import", "requirement", "repo", "ref", "licence")
KERNEL_KEYS = ("id", "entry", "source", "kinds", "configs", "dtype", "shapes")
KEPT_OUT = ("linkedin/liger-kernel", "openvinotoolkit/nncf", "dao-ailab/flash-attention")

CATALOGUE_FILES = sorted(CATALOGUE.glob("*.toml"))


def _load(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def package_problems(group: str, pkg: Any) -> list[str]:
    if not isinstance(pkg, dict):
        return [f"{group}: no [package] table"]
    out = [
        f"{group}: [package] {k} missing or empty" for k in PACKAGE_KEYS if not _text(pkg.get(k))
    ]
    if out:
        return out
    if not PIN.match(pkg["requirement"]):
        out.append(f"{group}: requirement {pkg['requirement']!r} is not name==version")
    also = pkg.get("also", [])
    if not isinstance(also, list) or not all(isinstance(p, str) and PIN.match(p) for p in also):
        out.append(f"{group}: also {also!r} is not a list of name==version pins")
    if not REPO.match(pkg["repo"]) or pkg["repo"].lower() in KEPT_OUT:
        out.append(f"{group}: repo {pkg['repo']!r} is not owner/name or is kept out of the suite")
    setup = pkg.get("setup", "")
    try:
        compile(setup if isinstance(setup, str) else 0, f"<setup of {group}>", "exec")  # type: ignore[call-overload]
    except (SyntaxError, TypeError) as exc:
        out.append(f"{group}: setup is not Python source: {exc}")
    return out


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def kernel_problems(group: str, k: Any) -> list[str]:
    if not isinstance(k, dict):
        return [f"{group}: a [[kernels]] entry is not a table"]
    kid = k.get("id", "?")
    missing = [f"{group} {kid}: {key} missing" for key in KERNEL_KEYS if key not in k]
    if missing:
        return missing
    out = []
    if not (isinstance(kid, str) and kid.startswith(f"{group}_")):
        out.append(f"{group} {kid}: id should be {group}_<op>")
    if not ENTRY.match(str(k["entry"])):
        out.append(f"{group} {kid}: entry {k['entry']!r} is not module:function")
    kinds = k["kinds"]
    if not (isinstance(kinds, list) and kinds and set(kinds) <= KINDS):
        out.append(f"{group} {kid}: kinds {kinds!r} must be some of {sorted(KINDS)}")
    configs = k["configs"]
    if not (_int(configs) and configs >= 0):
        out.append(f"{group} {kid}: configs {configs!r} must be an integer >= 0")
    elif isinstance(kinds, list) and ("autotuned" in kinds) != (configs > 0):
        out.append(f"{group} {kid}: autotuned needs configs > 0, and configs > 0 needs autotuned")
    if k["dtype"] not in DTYPES:
        out.append(f"{group} {kid}: dtype {k['dtype']!r} must be one of {sorted(DTYPES)}")
    shapes = k["shapes"]
    good = (
        isinstance(shapes, list)
        and len(shapes) >= 2
        and all(isinstance(s, list) and s and all(_int(d) and d > 0 for d in s) for s in shapes)
    )
    if (
        not good
        or len({len(s) for s in shapes}) != 1
        or len({tuple(s) for s in shapes}) != len(shapes)
    ):
        out.append(
            f"{group} {kid}: shapes {shapes!r}: a small and a larger shape, one rank, positive"
        )
    if not _text(k["source"]):
        out.append(f"{group} {kid}: source must name the kernel's file in the repository")
    return out


def entry_problems(kid: str, entry: str, entries: Path) -> list[str]:
    m = ENTRY.match(entry)
    if not m:
        return [f"{kid}: entry {entry!r} is not module:function"]
    module = entries / f"{m.group(1)}.py"
    if not module.is_file():
        return [f"{kid}: {module.name} is not in {entries}"]
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    fn = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == m.group(2)), None
    )
    if fn is None:
        return [f"{kid}: {module.name} has no top-level def {m.group(2)}"]
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    defaults = dict(zip([a.arg for a in fn.args.kwonlyargs], fn.args.kw_defaults, strict=True))
    out = []
    if positional != ["shape", "dtype"]:
        out.append(f"{kid}: {m.group(2)} takes {positional} positionally, not (shape, dtype)")
    for name in ("device", "seed"):
        if defaults.get(name) is None:
            out.append(f"{kid}: {m.group(2)} needs keyword-only {name} with a default")
    return out


def import_problems(module: Path, package: str) -> list[str]:
    allowed = set(sys.stdlib_module_names) | {"__future__", "torch", "triton", package}
    out = []
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append(f"{module.name}: relative import (entries run as a copied folder)")
            continue
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        out += [f"{module.name}: imports {n}" for n in names if n.split(".")[0] not in allowed]
    return out


def test_the_suite_has_catalogue_files() -> None:
    assert CATALOGUE_FILES, f"no *.toml in {CATALOGUE}"


@pytest.mark.parametrize("path", CATALOGUE_FILES, ids=lambda p: p.name)
def test_a_catalogue_file_is_well_formed(path: Path) -> None:
    doc = _load(path)
    assert package_problems(path.stem, doc.get("package")) == []
    kernels = doc.get("kernels")
    assert isinstance(kernels, list) and kernels, f"{path.name}: no [[kernels]]"
    assert [p for k in kernels for p in kernel_problems(path.stem, k)] == []


@pytest.mark.parametrize("path", CATALOGUE_FILES, ids=lambda p: p.name)
def test_every_entry_is_a_bench_entry_function_of_an_allowed_module(path: Path) -> None:
    doc = _load(path)
    assert [p for k in doc["kernels"] for p in entry_problems(k["id"], k["entry"], ENTRIES)] == []
    package = doc["package"]["import"].split(".")[0]
    modules = sorted({k["entry"].split(":")[0] for k in doc["kernels"]})
    assert [p for m in modules for p in import_problems(ENTRIES / f"{m}.py", package)] == []


def test_kernel_ids_are_unique_over_the_suite() -> None:
    ids = [k["id"] for p in CATALOGUE_FILES for k in _load(p)["kernels"]]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def test_every_pin_is_in_wheels_txt_as_an_exact_pin() -> None:
    lines = [ln.split("#", 1)[0].strip() for ln in WHEELS.read_text(encoding="utf-8").splitlines()]
    pins = {ln for ln in lines if ln}
    assert sorted(p for p in pins if not PIN.match(p)) == []
    packages = [_load(p)["package"] for p in CATALOGUE_FILES]
    wanted = {pin for pkg in packages for pin in (pkg["requirement"], *pkg.get("also", []))}
    assert sorted(wanted - pins) == []


def test_the_checks_find_the_mistakes_they_are_for(tmp_path: Path) -> None:
    pkg = {"import": "x", "requirement": "x>=1", "repo": "linkedin/Liger-Kernel", "ref": "v1"}
    found = package_problems(
        "x", {**pkg, "licence": "MIT", "setup": "import (", "also": ["y==1", "z"]}
    )
    # a loose pin, a loose pin of what it also needs, a kept-out repository, a setup that does
    # not parse
    assert len(found) == 4, found
    assert package_problems("x", pkg) == ["x: [package] licence missing or empty"]

    good = {
        "id": "x_op",
        "entry": "x:op",
        "source": "x/op.py",
        "kinds": ["autotuned"],
        "configs": 8,
        "dtype": "float16",
        "shapes": [[4, 8], [64, 128]],
    }
    assert kernel_problems("x", good) == []
    for change in (
        {"id": "op"},
        {"kinds": ["autotuned", "atomic"]},
        {"configs": 0},
        {"kinds": ["plain"]},
        {"dtype": "half"},
        {"shapes": [[4, 8]]},
        {"shapes": [[4, 8], [4, 8, 2]]},
        {"shapes": [[4, 0], [64, 128]]},
    ):
        assert len(kernel_problems("x", {**good, **change})) == 1, change

    (tmp_path / "x.py").write_text(
        "import numpy\nfrom . import y\nimport torch\nimport os.path\n"
        "def op(shape, dtype, *, device='cuda', seed=0):\n    return {}\n"
        "def bad(shape, *, device='cuda'):\n    return {}\n",
        encoding="utf-8",
    )
    assert entry_problems("x_op", "x:op", tmp_path) == []
    assert len(entry_problems("x_bad", "x:bad", tmp_path)) == 2  # positional, and no seed
    assert entry_problems("x_gone", "x:gone", tmp_path) == [
        "x_gone: x.py has no top-level def gone"
    ]
    assert len(entry_problems("x_y", "y:op", tmp_path)) == 1
    assert import_problems(tmp_path / "x.py", "x") == [
        "x.py: imports numpy",
        "x.py: relative import (entries run as a copied folder)",
    ]
