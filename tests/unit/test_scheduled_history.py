"""The scheduled run's pure parts: the candidate change, what regressed, the history."""

from __future__ import annotations

from bot.contracts.evidence import CompilerEvidence, CompilerRow, Evidence, ShapeLine, SweepEvidence
from bot.contracts.history import HistoryRecord
from bot.jobs.scheduled import candidate_changes, kernel_history, read_history, regressed_kernels


def test_the_candidate_is_a_toolchain_change_from_the_pin_as_written() -> None:
    (line,) = candidate_changes({"triton": ">=3.6,<3.7"}, {"triton": "3.6.1"})
    assert (line.kernel, line.kind, line.old_version, line.new_version) == (
        "triton", "toolchain", ">=3.6,<3.7", "==3.6.1",
    )  # fmt: skip
    assert candidate_changes({}, {"torch": "2.12.0"})[0].old_version is None


def _row(side: str, error: str | None) -> CompilerRow:
    return CompilerRow(kernel="matmul", side=side, language="triton", vendor="nvidia",
                       target="sm_90", config="c0", error=error)  # fmt: skip


def test_slower_failed_and_no_longer_compiling_kernels_regress() -> None:
    shapes = (
        ShapeLine(kernel="softmax", shape=(8,), dtype="float16", verdict="SLOWER", ratio=1.2),
        ShapeLine(kernel="vector_add", shape=(8,), dtype="float32", verdict="CRASHED"),
        ShapeLine(kernel="layernorm", shape=(8,), dtype="float32", verdict="SAME", ratio=1.0),
    )
    ev = Evidence(
        sweeps=(SweepEvidence(vendor="nvidia", gpu="H200", shapes=shapes),),
        compiler=CompilerEvidence(rows=(_row("old", None), _row("new", "out of resources"))),
    )
    assert regressed_kernels(ev) == ["softmax", "vector_add", "matmul"]


def _record(date: str, timing: str, us: float) -> HistoryRecord:
    return HistoryRecord(date=date, sha="abcdef0123", vendor="nvidia", timing=timing,
                         pinned={"triton": "3.6.0", "numpy": "2"}, kernels={"matmul": us})  # fmt: skip


def test_history_keeps_gpu_runs_of_one_vendor_oldest_first_and_skips_bad_lines() -> None:
    text = "\n".join(
        [
            _record("2026-02-02T03:00:00+00:00", "gpu", 110.0).model_dump_json(),
            "not json",
            _record("2026-02-01T03:00:00+00:00", "gpu", 100.0).model_dump_json(),
            _record("2026-02-03T03:00:00+00:00", "cpu", 9000.0).model_dump_json(),
        ]
    )
    records = read_history(text)
    assert len(records) == 3
    (h,) = kernel_history(records, "nvidia")
    assert h.points == (
        ("2026-02-01", "abcdef0", 100.0, "triton 3.6.0"),
        ("2026-02-02", "abcdef0", 110.0, "triton 3.6.0"),
    )
    assert kernel_history(records, "amd") == ()
