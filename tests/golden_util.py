"""Golden files: compare text with tests/golden/NAME; UPDATE_GOLDEN=1 rewrites them."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if os.environ.get("UPDATE_GOLDEN") != "1":
            raise AssertionError(f"golden file {path} did not exist; written now, review and rerun")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {path}; rerun with UPDATE_GOLDEN=1 if intended"
