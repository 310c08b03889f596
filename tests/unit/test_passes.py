"""The sweep's passes: a later pass's Triton cache, joining a case's passes, and when to stop."""

from __future__ import annotations

import math
import random
from pathlib import Path

from checks.sweep.models import ShapeResult
from checks.sweep.protocol import Block, CaseRun, ProtocolConfig, Round
from checks.sweep.summary import combine, needs_another
from checks.sweep.workers import seed_cache

PROTOCOL = ProtocolConfig(crossover=True)


def test_a_later_pass_gets_the_compiled_kernels_but_not_the_autotuner_picks(
    tmp_path: Path,
) -> None:
    first = tmp_path / "first"
    (first / "ab12").mkdir(parents=True)
    (first / "ab12" / "kernel.cubin").write_bytes(b"\x7fELF")
    (first / "ab12" / "kernel.json").write_text("{}")
    (first / "cd34").mkdir()
    (first / "cd34" / "kernel.autotune.json").write_text('{"configs_timings": []}')
    later = tmp_path / "later"
    assert seed_cache(first, later) == 2
    assert (later / "ab12" / "kernel.cubin").read_bytes() == b"\x7fELF"
    assert (later / "ab12" / "kernel.cubin").stat().st_ino == (
        first / "ab12" / "kernel.cubin"
    ).stat().st_ino  # a link, not a copy
    assert not (later / "cd34" / "kernel.autotune.json").exists()
    assert seed_cache(tmp_path / "missing", tmp_path / "empty") == 0
    assert (tmp_path / "empty").is_dir()


def _result(execution: int, offset: float, rng: random.Random, **kw) -> ShapeResult:
    rounds = []
    for i in range(8):
        for arm in (0, 1):
            b = 10.0 * math.exp(rng.gauss(0, 0.002))
            h = 10.0 * math.exp(offset + rng.gauss(0, 0.002))
            rounds.append(
                Round(
                    index=i * 2 + arm,
                    head_first=bool(i % 2),
                    base=Block(value_us=b, calls=1, wall_ms=1.0),
                    head=Block(value_us=h, calls=1, wall_ms=1.0),
                    arm=arm,
                    execution=execution,
                )
            )
    run = CaseRun(rounds=tuple(rounds), arms=2, pass_stops=("decided",))
    fields = {"kernel": "k", "shape": (4096,), "dtype": "float16", "tolerance": 0.01}
    return ShapeResult(**{**fields, "status": "ok", "raw": run, "gpu_seconds": 0.5, **kw})


def test_passes_are_joined_and_a_skipped_or_failed_pass_says_which() -> None:
    rng = random.Random(1)
    one = _result(0, 0.0, rng, notes=("a",))
    two = combine(one, _result(1, 0.0, rng, notes=("a", "b")), 1)
    assert two.raw is not None and len(two.raw.rounds) == 32 and two.gpu_seconds == 1.0
    assert {e.execution for e in two.raw.executions()} == {0, 1} and two.notes == ("a", "b")
    skipped = one.model_copy(update={"status": "skipped", "message": "budget spent", "raw": None})
    kept = combine(two, skipped, 2)
    assert kept.raw == two.raw and kept.notes[-1] == "execution 3 not measured: budget spent"
    crashed = one.model_copy(update={"status": "crashed", "message": "SIGSEGV", "raw": None})
    failed = combine(two, crashed, 2)
    assert failed.status == "crashed" and failed.message.startswith("in execution 3 (fresh")


def test_quiet_executions_stop_after_two_passes_and_disagreeing_ones_go_on() -> None:
    rng = random.Random(2)
    quiet = combine(_result(0, 0.0, rng), _result(1, 0.0, rng), 1)
    assert not needs_another(quiet, PROTOCOL, 8)
    one_pass = _result(0, 0.0, rng)
    assert needs_another(one_pass, PROTOCOL, 8)
    # each pass 1.5% apart from the last: at a 3% tolerance more executions may settle it;
    # 3% apart at a 1% tolerance, even four passes so spread could not
    loose = {"tolerance": 0.03}
    apart = combine(_result(0, 0.0, rng, **loose), _result(1, 0.015, rng, **loose), 1)
    assert needs_another(apart, PROTOCOL, 8)
    assert not needs_another(combine(_result(0, 0.0, rng), _result(1, 0.03, rng), 1), PROTOCOL, 8)


def test_executions_twenty_percent_apart_are_futile_to_pass_again() -> None:
    rng = random.Random(3)
    wild = combine(_result(0, -0.2, rng), _result(1, 0.2, rng), 1)
    assert not needs_another(wild, PROTOCOL, 8)
