"""bench/protocol_proof.py end to end on the CPU (real worker processes, CPU timing), and the
replay of recordings made before B's slowdown was calibrated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import protocol_replay  # noqa: E402

H200 = BENCH / "results" / "h200" / "raw_streams.json"


def test_replay_of_an_uncalibrated_recording_names_the_missed_slowdown(tmp_path: Path) -> None:
    raw = json.loads(H200.read_text(encoding="utf-8"))
    assert not any("calibration" in s for s in raw["sizes"])  # recorded before the calibration
    summary = protocol_replay.replay(raw, n_boot=20)
    by_label = {s["label"]: s for s in summary["sizes"]}
    assert set(by_label) == {"5us", "15us", "130us", "1.5ms"}
    within = {k: s["slowdown"]["within"] for k, s in by_label.items()}
    assert within == {"5us": False, "15us": True, "130us": True, "1.5ms": False}
    assert by_label["1.5ms"]["slowdown"]["ratio"] == pytest.approx(1.1796, abs=1e-4)
    protocol_replay.write(summary, tmp_path)
    md = (tmp_path / "proof.md").read_text(encoding="utf-8")
    assert "B does about 3% more work" in md
    assert "- 1.5ms: B/A 1.1796 over the whole A/B stream: OUTSIDE the band" in md
    assert "no calibration recorded" in md
    assert "- 5us: met (but B/A was 1.0483, outside 3% +- 0.4%" in md


@pytest.mark.slow
def test_quick_cpu_run_calibrates_b_and_replays(tmp_path: Path) -> None:
    """The --quick CPU path: three workers, B's size found by probes through them, streams, do_bench
    imitation, replay. CPU timing is noise; what is checked is the plumbing and the bookkeeping."""
    import protocol_proof
    from proof_calibrate import UNIT

    out = tmp_path / "proof"
    assert protocol_proof.main(["--device", "cpu", "--quick", "--out", str(out)]) == 0
    raw = json.loads((out / "raw_streams.json").read_text(encoding="utf-8"))
    assert raw["meta"]["slowdown_band"] == protocol_proof.SLOWDOWN_BAND
    assert [s["label"] for s in raw["sizes"]] == ["5us", "15us"]
    for s in raw["sizes"]:
        cal = s["calibration"]
        assert s["n_a"] % UNIT == 0 and s["n_b"] % UNIT == 0
        assert s["n_b"] - s["n_a"] == cal["extra_elements"] == cal["knob"] * UNIT > 0
        assert 1 <= len(cal["probes"]) <= 4  # the quick run's probe budget
        assert all(p["n_b"] % UNIT == 0 and p["n_b"] > s["n_a"] for p in cal["probes"])
        assert cal["modes"] == ["cpu"]
        assert cal["seconds"] < protocol_proof.CALIBRATION_MAX_S + 10
        assert s["streams"]["AB"] and s["do_bench"]
    md = (out / "proof.md").read_text(encoding="utf-8")
    assert "calibrated on the device before recording" in md
    assert md.count("calibrated in ") == 2
    # replaying the new file offline gives the same table
    again = tmp_path / "again"
    assert (
        protocol_replay.main([str(out / "raw_streams.json"), "--out", str(again), "--n-boot", "20"])
        == 0
    )
    assert (again / "proof.md").read_text(encoding="utf-8") == md
