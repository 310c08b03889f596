"""Fixtures shared by the unit tests of the worker's benchmark capture."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.paths import ROOT

WORKER = ROOT / "checks" / "bench_entries" / "bench_capture.py"


@pytest.fixture(scope="module")
def capture() -> Iterator[ModuleType]:
    """``checks/bench_entries/bench_capture.py`` loaded by its path, as the worker loads it."""
    spec = importlib.util.spec_from_file_location("_test_bench_capture", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]
