"""Fixtures that more than one integration module uses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from checks.sweep import workers
from checks.worker import contract
from tests.interpreted import Interpreter


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interpreter]:
    """Code run under the Triton interpreter in fresh children of one process per module
    (``tests/interpreted.py``); module-scoped, so a module's tests that use it share a process."""
    server = Interpreter(tmp_path_factory.mktemp("interpreted"))
    yield server
    server.close()


Sent = tuple[str, type, Any]  # the worker's name, the command's class, the command


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Sent]:
    """Every command the bot sends a worker, in the order sent (each still sent)."""
    seen: list[Sent] = []
    lock = threading.Lock()
    real = workers.WorkerClient.call

    def recorded(
        self: workers.WorkerClient, request: contract.Request[Any], *, timeout: float
    ) -> Any:
        with lock:
            seen.append((self.spec.name, type(request), request))
        return real(self, request, timeout=timeout)

    monkeypatch.setattr(workers.WorkerClient, "call", recorded)
    return seen
