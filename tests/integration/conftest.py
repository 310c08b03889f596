"""Fixtures that more than one integration module uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interpreted import Interpreter


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interpreter]:
    """Code run under the Triton interpreter in fresh children of one process per module
    (``tests/interpreted.py``); module-scoped, so a module's tests that use it share a process."""
    server = Interpreter(tmp_path_factory.mktemp("interpreted"))
    yield server
    server.close()
