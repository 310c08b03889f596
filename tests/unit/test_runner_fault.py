"""A fault of the engine's own in a sweep's runner thread: the cases it did not get to are
recorded, never left out of the results unsaid (``checks.sweep.run._run_pair``)."""

from __future__ import annotations

from typing import Any

import pytest

from checks.sweep.models import ShapeResult
from checks.sweep.run import _Recorder, _run_pair
from checks.sweep.shapes import Case


class _Runner:
    """A stand-in for the pair runner: starts, measures ``good`` cases, then raises what an
    engine bug would (a TypeError of its own code, no worker's failure)."""

    gpu_index = 0
    env = None
    ceilings = None

    def __init__(self, good: int, fail_start: bool = False) -> None:
        self.good, self.fail_start, self.closed = good, fail_start, False
        self.notes: list[str] = []
        self.startup_s: dict[str, float] = {}
        self.start_marks_s: dict[str, float] = {}

    def start(self) -> None:
        if self.fail_start:
            raise TypeError("start() got an unexpected keyword argument 'x'")

    def measure(self, case: Case, following: Case | None = None) -> ShapeResult:
        if self.good <= 0:
            raise TypeError("unsupported operand type(s) for +: 'NoneType' and 'float'")
        self.good -= 1
        return ShapeResult(
            kernel=case.kernel, shape=case.dims, dtype=case.dtype, status="ok", tolerance=0.03
        )

    def measure_ceilings(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


CASES = [
    Case(kernel="k", bench="m:k", dims=(n,), dtype="float32", tolerance=0.03) for n in (8, 16, 32)
]


@pytest.mark.parametrize("good, fail_start", [(1, False), (0, True)])
def test_an_engine_fault_records_every_case_it_did_not_get_to(
    good: int, fail_start: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = _Recorder(len(CASES), None, None)
    runner: Any = _Runner(good, fail_start)
    _run_pair(runner, CASES, recorder, 1e9, {})
    results = recorder.final()
    assert list(results) == [c.key for c in CASES]  # none missing
    statuses = [results[c.key].status for c in CASES]
    assert statuses == ["ok"] * good + ["skipped"] * (len(CASES) - good)
    said = results[CASES[-1].key].message
    assert "the sweep's runner on this GPU failed (TypeError:" in said and "report it" in said
    assert "Traceback" in capsys.readouterr().err
    assert runner.closed or fail_start
