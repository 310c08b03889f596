"""Every test SECURITY.md cites as proof exists: a renamed test must not leave a row that
points at nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_CITED = re.compile(r"`(tests/[\w/.-]+\.py)::(\w+)(?:\[[^\]`]*\])?`")


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def missing_citations(doc: str, root: Path) -> list[str]:
    """The ``path::name`` citations in ``doc`` whose file or test does not exist under root."""
    missing: list[str] = []
    for path, name in sorted(set(_CITED.findall(doc))):
        file = root / path
        if not file.is_file() or name not in _defined(file):
            missing.append(f"{path}::{name}")
    return missing


def test_every_test_security_md_cites_exists():
    doc = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert len(_CITED.findall(doc)) > 50  # the citations are found at all
    assert missing_citations(doc, ROOT) == []


def test_a_renamed_or_missing_test_is_reported(tmp_path: Path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_kept():\n    pass\n")
    doc = (
        "| x | `tests/test_a.py::test_kept`, `tests/test_a.py::test_renamed` |\n"
        "| y | `tests/test_gone.py::test_kept` |\n"
    )
    assert missing_citations(doc, tmp_path) == [
        "tests/test_a.py::test_renamed",
        "tests/test_gone.py::test_kept",
    ]
