"""bench/cli_decision.py's summary: parts recorded over several device calls are joined (A/A runs
added up, a finished fixture job kept over one a limit cut short), each check's time is read from
the job's timed log, and the recorded H200 folder summarizes to the results committed beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from cli_decision import markdown, read_parts, summarize

RECORDED = ROOT / "bench" / "results" / "h200" / "cli_decision"


def _aa_run(verdicts: list[str], tolerance: float) -> dict:
    cases = [
        {"kernel": "k", "shape": [i], "category": "served", "verdict": v, "ratio": 1.0,
         "tolerance": tolerance}
        for i, v in enumerate(verdicts)
    ]  # fmt: skip
    return {"cases": cases, "gpu_s_per_verdict_all_in": 0.5, "case_gpu_s": [0.2] * len(cases)}


def _job(seconds: float | None, limit: float, log: str) -> dict:
    return {"measure_job_s": seconds, "limit_s": limit, "rc": 0 if seconds else -9,
            "run_md": log}  # fmt: skip


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


def test_two_calls_of_a_part_are_joined_and_the_finished_job_is_kept(tmp_path: Path) -> None:
    _write(tmp_path, "part1.json", {"aa": [_aa_run(["SAME"] * 3, 0.01)], "dobench": [],
                                    "dobench_all_in": [], "skipped": ["A/A run 2: no time"]})  # fmt: skip
    _write(tmp_path, "part1.call1.json", {"aa": [_aa_run(["SAME", "SLOWER"], 0.03)],
                                          "dobench": [], "dobench_all_in": [], "skipped": []})  # fmt: skip
    finished = "    [ 38.3 s] compiler: done in 37.8 s\n    [130.2 s] sweep: done in 129.6 s\n"
    finished += "    [309.0 s] first_call: done in 178.8 s\n"
    _write(tmp_path, "part3.json", {"fixture_jobs": {"alongside": _job(318.1, 370, finished)},
                                    "skipped": []})  # fmt: skip
    cut = "    [135.1 s] sweep: done in 134.4 s\n    [135.1 s] first call: vector_add ...\n"
    _write(tmp_path, "part3.call2.json", {
        "fixture_jobs": {"alongside": _job(None, 282, "    [141.7 s] sweep: done in 141.1 s\n"),
                         "in_turn": _job(None, 282, cut)},
        "skipped": []})  # fmt: skip

    parts, files = read_parts(tmp_path)
    assert files == ["part1.json", "part1.call1.json", "part3.json", "part3.call2.json"]
    s = summarize(parts, {"date": "d", "device": "cuda", "machine": "m", "python": "3"})

    assert s["aa_runs"] == 2 and s["aa_verdicts"] == 5
    assert s["aa_false_alarms"]["0.01"] == {"slower": 0, "not_same": 0, "verdicts": 3}
    assert s["aa_false_alarms"]["0.03"] == {"slower": 1, "not_same": 1, "verdicts": 2}
    assert s["skipped"] == ["A/A run 2: no time"]
    # the job part3.json finished is kept; the other call's cut-short one only fills the gap
    assert s["fixture_measure_job_s"] == 318.1
    assert s["fixture_measure_job_checks_s"] == {"compiler": 37.8, "sweep": 129.6,
                                                 "first_call": 178.8}  # fmt: skip
    assert s["fixture_measure_job_in_turn_s"] is None
    assert s["fixture_measure_job_in_turn_limit_s"] == 282
    assert s["fixture_measure_job_in_turn_checks_s"] == {"sweep": 134.4}
    text = markdown({**s, "files": files})
    assert "318 s (compiler 38 s, sweep 130 s, first_call 179 s)" in text
    assert "did not finish within 282 s (sweep 134 s)" in text
    assert "part1.call1.json" in text
    # the A/A verdict that was not SAME is listed as read, with the case's notes
    assert [(c["shape"], c["verdict"]) for c in s["aa_not_same"]] == [([1], "SLOWER")]
    assert "A/A verdicts not SAME:\n\n- k 1 at tolerance 0.03: SLOWER 1 [-, -] after" in text


def test_one_file_per_part_reads_as_before(tmp_path: Path) -> None:
    _write(tmp_path, "part1.json", {"aa": [_aa_run(["SAME"], 0.01)], "skipped": []})
    parts, files = read_parts(tmp_path)
    assert files == ["part1.json"] and parts["1"]["aa"][0]["cases"][0]["verdict"] == "SAME"


def test_the_recorded_h200_folder_gives_the_committed_results() -> None:
    parts, files = read_parts(RECORDED)
    committed = json.loads((RECORDED / "summary.json").read_text())
    s = {**summarize(parts, committed["meta"]), "files": files}
    assert s == committed
    assert markdown(s) == (RECORDED / "results.md").read_text()


def test_the_sweep_cases_that_built_the_fixtures_extensions_are_counted_from_the_log() -> None:
    """A case over 10 s in the job's log is the fixture's C++ build inside the sweep; a job whose
    runner had them built says so, and a job without a log says nothing."""
    from cli_decision import _builds, _slow_cases_s

    log = (
        "    [   45.9 s] [ 1/52] vector_add float32 4096: SLOWER head/base 1.057 (8 rounds, graph, 38.9 s)\n"
        "    [   46.2 s] [ 2/52] vector_add bfloat16 4096: SAME head/base 1.013 (8 rounds, graph, 0.3 s)\n"
        "    [   82.4 s] [17/52] softmax float32 1x781: SAME head/base 1.047 (18 rounds, graph, 28.7 s)\n"
        "    [  123.2 s] [47/52] matmul bfloat16 8191x1021x8191: SLOWER head/base 1.109 (8 rounds, eager, 2.9 s)\n"
    )
    assert _slow_cases_s(log) == 67.6
    assert _slow_cases_s(log.replace("38.9 s", "2.2 s").replace("28.7 s", "0.3 s")) == 0
    assert _slow_cases_s(None) is None
    assert "68 s of it sweep cases that built" in _builds(67.6)
    assert _builds(0) == "; the fixture's C++ extensions built before the job"
    assert _builds(None) == ""


def test_do_bench_all_in_is_split_by_how_its_process_started(tmp_path: Path) -> None:
    """The runs as the machine's Python runs them, with torch's bytecode kept (not the run that
    wrote it), and with the bytecode kept and an empty Triton cache: three medians."""

    def run(per_pair: float, kept: bool, written: bool = False, empty: bool = False) -> dict:
        row = {"pairs": 8, "per_pair_s": per_pair, "bytecode_kept": kept}
        if kept:
            row["bytecode_written"] = written
        if empty:
            row["triton_cache_empty"] = True
        return row

    rows = [run(1.1, False), run(0.9, False), run(1.0, True, written=True), run(0.6, True),
            run(0.62, True), run(0.8, True, empty=True), run(0.84, True, empty=True)]  # fmt: skip
    _write(tmp_path, "part1.json", {"aa": [_aa_run(["SAME"], 0.01)], "dobench": [],
                                    "dobench_all_in": rows, "skipped": []})  # fmt: skip
    parts, files = read_parts(tmp_path)
    s = summarize(parts, {"date": "d", "device": "cuda", "machine": "m", "python": "3"})
    assert s["dobench_all_in_gpu_s_per_pair"] == 1.0
    assert s["dobench_all_in_bytecode_kept_gpu_s_per_pair"] == 0.61
    assert round(s["dobench_all_in_empty_cache_gpu_s_per_pair"], 6) == 0.82
    text = markdown({**s, "files": files})
    assert (
        "bytecode kept and an empty Triton cache (as the sweep starts each side) | 0.82 |" in text
    )


def test_the_aa_executions_are_counted_by_pass_and_spread_by_shape(tmp_path: Path) -> None:
    """Runs that kept each execution's head/base give the verdicts decided in one pass and each
    shape's spread around 1 (RMS of the logs, in %), shapes in the order of their base time;
    records without them summarize as before."""

    def case(shape: int, ratios: list[float], us: float) -> dict:
        return {"kernel": "k", "shape": [shape], "category": "small", "verdict": "SAME",
                "ratio": 1.0, "tolerance": 0.01, "mode": "graph", "execution_ratios": ratios,
                "base_median_us": us}  # fmt: skip

    tiny, big = 1.01, 1.001
    runs = [
        {**_aa_run([], 0.01), "cases": [case(1, [tiny, 1 / tiny], 0.9), case(9, [big, big], 40.0)],
         "case_passes": [1, 1]},
        {**_aa_run([], 0.01), "cases": [case(9, [1 / big, 1 / big], 42.0),
                                        case(1, [tiny, tiny, 1 / tiny, 1 / tiny], 1.1)],
         "case_passes": [1, 2]},
    ]  # fmt: skip
    _write(tmp_path, "part1.json", {"aa": runs, "dobench": [], "skipped": []})
    parts, files = read_parts(tmp_path)
    s = summarize(parts, {"date": "d", "device": "cuda", "machine": "m", "python": "3"})
    ex = s["aa_executions"]
    assert ex["one_pass"] == "3/4"
    assert list(ex["spread"]) == ["k:1 (graph)", "k:9 (graph)"]
    assert ex["spread"]["k:1 (graph)"] == {"executions": 6, "sd_pct": 0.995, "base_us": 1.0}
    assert ex["spread"]["k:9 (graph)"] == {"executions": 4, "sd_pct": 0.1, "base_us": 41.0}
    text = markdown({**s, "files": files})
    assert "| A/A verdicts decided in one pass | 3/4 |" in text
    assert "- k:1 (graph): 0.99% over 6 executions, base 1 us" in text

    _write(tmp_path, "part1.json", {"aa": [_aa_run(["SAME"], 0.01)], "skipped": []})
    parts, files = read_parts(tmp_path)
    s = summarize(parts, {"date": "d", "device": "cuda", "machine": "m", "python": "3"})
    assert "aa_executions" not in s and "decided in one pass" not in markdown({**s, "files": files})
