"""The real-kernel suite's summary, work list and catalogue (``bench/real_kernels``), on runs
written here: which A/A verdicts count as false, which shapes allow a slowdown to count, what
detection and cost come to, and how the work is cut into parts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "real_kernels"))

import rk_summary as S
import run as driver
from rk_catalogue import CatalogueError, load_catalogue, load_group, select


def case(
    kernel: str,
    shape: list[int],
    verdict: str | None = "SAME",
    ratio: float | None = 1.0,
    half: float = 0.01,
    *,
    status: str = "ok",
    notes: tuple[str, ...] = (),
    message: str = "",
) -> dict[str, Any]:
    return {
        "kernel": kernel,
        "shape": shape,
        "dtype": "float16",
        "category": "served",
        "status": status,
        "verdict": verdict if status == "ok" else None,
        "ratio": ratio,
        "ci_low": None if ratio is None else ratio - half,
        "ci_high": None if ratio is None else ratio + half,
        "rounds": 40,
        "notes": list(notes),
        "message": message,
        "stop_reason": "decided",
    }


def run(
    head: str,
    cases: list[dict[str, Any]],
    n: int = 1,
    *,
    group: str = "g1",
    wall: float = 10.0,
    dobench: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "group": group,
        "head": head,
        "run": n,
        "tolerance": 0.03,
        "wall_s": wall,
        "results": {"held_gpu_seconds": wall - 1.0},
        "cases": cases,
        "dobench": dobench,
    }


def db(means: dict[str, float], wall: float) -> dict[str, Any]:
    rows = []
    for text, mean in means.items():
        kernel, shape = text.split(":")
        rows.append(
            {
                "kernel": kernel,
                "shape": [int(x) for x in shape.split("x")],
                "dtype": "float16",
                "mean_ms": mean,
            }
        )
    return {"wall_s": wall, "rows": rows}


# --------------------------------------------------------------------------------- allows


def test_three_same_aa_verdicts_allow_any_effect_even_with_wide_intervals():
    aa = [case("k", [4], "SAME", 1.0, half=0.2) for _ in range(3)]
    ok, why = S.allows(aa, 0.05)
    assert ok and "all SAME" in why


def test_two_same_verdicts_with_wide_intervals_do_not_allow():
    aa = [case("k", [4], "SAME", 1.0, half=0.03) for _ in range(2)]
    ok, why = S.allows(aa, 0.05)
    assert not ok
    assert "0.0300" in why and "0.025" in why


def test_a_narrow_spread_allows_even_with_a_wrong_aa_verdict():
    aa = [case("k", [4], "SAME", half=0.004), case("k", [4], "SLOWER", 1.035, half=0.004)]
    assert S.allows(aa, 0.05)[0]
    assert S.allows(aa, 0.10)[0]
    assert not S.allows(aa, 0.005)[0]  # 0.004 is not under 0.0025


def test_no_aa_verdict_allows_nothing():
    failed = [case("k", [4], status="error", ratio=None)]
    assert S.allows([], 0.10) == (False, "no A/A verdict")
    assert S.allows(failed, 0.10) == (False, "no A/A verdict")


# ------------------------------------------------------------------------------ detection


def suite_runs() -> list[dict[str, Any]]:
    """Shape A: three SAME A/A runs. Shape B: A/A INCONCLUSIVE with a wide interval once.
    Shape C: narrow intervals, one FASTER. slow5: A SLOWER, B SLOWER, C SAME, D failed."""
    aa = [
        run(
            "aa",
            [
                case("a", [8]),
                case("b", [8], "INCONCLUSIVE" if i == 1 else "SAME", 1.02, half=0.08),
                case("c", [8], "FASTER" if i == 2 else "SAME", 0.97, half=0.005),
                case("d", [8]),
            ],
            i,
        )
        for i in (1, 2, 3)
    ]
    slow5 = run(
        "slow5",
        [
            case("a", [8], "SLOWER", 1.06),
            case("b", [8], "SLOWER", 1.07),
            case("c", [8], "SAME", 1.02),
            case("d", [8], status="timeout", ratio=None, message="the first call took too long"),
        ],
    )
    slow10 = run("slow10", [case(k, [8], "SLOWER", 1.11) for k in "abcd"])
    return [*aa, slow5, slow10]


def test_detection_counts_only_allowed_measured_shapes():
    det = S.detection(suite_runs(), "slow5")
    assert (det["slower"], det["of"]) == (1, 2)  # a SLOWER, c SAME; b not allowed; d failed
    assert det["fraction"] == pytest.approx(0.5)
    assert [x["shape"] for x in det["not_allowed"]] == ["b 8 float16"]
    assert det["unmeasured"][0]["status"] == "timeout"
    assert "first call" in det["unmeasured"][0]["reason"]


def test_ten_percent_detection_uses_its_own_effect():
    det = S.detection(suite_runs(), "slow10")
    # b's widest half-width 0.08 is not under 0.05 either; a, c, d are allowed and SLOWER
    assert (det["slower"], det["of"]) == (3, 3)


def test_aa_summary_lists_false_and_inconclusive_verdicts_with_reasons():
    runs = suite_runs()
    runs[0]["cases"][1]["notes"] = ["the two worker pairs read apart"]
    runs[0]["cases"][1]["explanation"] = "executions read 1.00 and 1.06"
    aa = S.aa_summary(runs)
    assert aa["verdicts"] == 12
    assert aa["by_verdict"] == {"SAME": 10, "SLOWER": 0, "FASTER": 1, "INCONCLUSIVE": 1}
    assert [(x["shape"], x["verdict"], x["run"]) for x in aa["false"]] == [
        ("c 8 float16", "FASTER", 2)
    ]
    assert aa["inconclusive"][0]["run"] == 1
    assert aa["inconclusive"][0]["reason"] == (
        "executions read 1.00 and 1.06; the two worker pairs read apart; stopped: decided"
    )


# ---------------------------------------------------------------------------- do_bench, cost


def test_dobench_rows_ratio_and_claims_against_the_runs_tolerance():
    r = run(
        "aa",
        [case("a", [8]), case("b", [8])],
        dobench={
            "base": db({"a:8": 1.0, "b:8": 1.0, "c:8": 1.0}, 5.0),
            "head": db({"a:8": 1.02, "b:8": 0.95}, 6.0),
        },
    )
    rows = {x["shape"]: x for x in S.dobench_rows(r)}
    assert set(rows) == {"a 8 float16", "b 8 float16"}  # c has no head reading
    assert rows["a 8 float16"]["claim"] == "SAME"
    assert rows["b 8 float16"]["claim"] == "FASTER"
    assert rows["b 8 float16"]["ratio"] == pytest.approx(0.95)


def test_costs_sum_walls_and_pair_only_runs_with_both():
    both = {"base": db({"a:8": 1.0}, 4.0), "head": db({"a:8": 1.0}, 6.0)}
    runs = [
        run("aa", [case("a", [8]), case("b", [8], status="error")], wall=20.0, dobench=both),
        run("aa", [case("a", [8])], 2, wall=30.0, dobench=None),
    ]
    c = S.costs(runs)
    assert c["gpu_s_all_in"] == pytest.approx(50.0)
    assert c["gpu_s_held_per_results"] == pytest.approx(48.0)
    assert c["verdicts"] == 2
    assert c["dobench_all_in_s"] == pytest.approx(10.0)
    assert (c["paired_runs"], c["paired_bot_s"], c["paired_bot_verdicts"]) == (1, 20.0, 1)
    assert c["paired_dobench_s_per_case"] == pytest.approx(10.0)


def test_dobench_summary_counts_false_claims_and_detection():
    runs = suite_runs()
    runs[0]["dobench"] = {"base": db({"a:8": 1.0}, 3), "head": db({"a:8": 1.05}, 3)}
    runs[3]["dobench"] = {
        "base": db({"a:8": 1.0, "b:8": 1.0}, 3),
        "head": db({"a:8": 1.1, "b:8": 1.1}, 3),
    }
    got = S.dobench_summary(runs)
    assert got["aa_cases"] == 1
    assert got["aa_false"][0]["claim"] == "SLOWER"
    assert got["detect_slow5"] == {"slower": 1, "of": 1, "fraction": 1.0}  # b not allowed


# -------------------------------------------------------------------------------- summary


def test_summarize_and_markdown():
    runs = suite_runs()
    groups = {
        "g1": {"repo": "owner/one", "kernels": {"a": {"kinds": ["atomics"]}}},
        "g2": {"repo": "owner/two", "kernels": {}},
    }
    s = S.summarize(runs, groups, {"device": "cpu", "files": ["part1.json"]}, ["x: did not fit"])
    assert s["repos"] == ["owner/one"]  # g2 has no run
    assert s["kernels"] == ["a", "b", "c", "d"]
    assert s["kinds"] == {"atomics": 1}
    assert s["aa_verdicts"] == 12 and len(s["aa_false"]) == 1
    assert s["detect_5pct"] == pytest.approx(0.5)
    assert s["detect_10pct"] == pytest.approx(1.0)
    assert s["realised"]["slow10"]["median"] == pytest.approx(1.11)
    text = S.markdown(s)
    assert "CPU timing: plumbing only" in text
    assert "### a (atomics)" in text
    assert "| kernels | 4 (atomics 1) |" in text
    assert "| 8 | float16 | served | SAME SAME SAME |" in text
    assert "| 1.5; 0.2 |" not in text  # no sizing recorded yet
    runs[-1]["dobench"] = {
        "base": db({"a:8": 1.0}, 3),
        "head": {
            "wall_s": 3,
            "rows": [
                {**db({"a:8": 1.1}, 3)["rows"][0], "extra": {"kernel_us": 1.5, "launch_us": 0.2}}
            ],
        },
    }
    again = S.summarize(runs, groups, {"device": "cpu"}, [])
    assert again["per_kernel"]["a"][0]["kernel_us"] == 1.5
    assert "| SLOWER 1.11 | -; -; 1.1 | 1.5; 0.2 |" in S.markdown(again)
    assert "x: did not fit" in text
    assert "1/2 (50%)" in text


# ------------------------------------------------------------------------------ work list


def test_slices_cover_every_unit_once_in_order():
    units = list(range(17))
    for parts in (1, 2, 5, 17, 20):
        got = [driver.slice_units(units, p, parts) for p in range(1, parts + 1)]
        assert [u for s in got for u in s] == units
        assert max(map(len, got)) - min(map(len, got)) <= 1
    with pytest.raises(ValueError, match=r"within 1\.\.3"):
        driver.slice_units(units, 4, 3)


def test_plan_units_group_by_group(tmp_path: Path):
    groups = load_catalogue(ROOT / "tests/data/real_kernels_standin/catalogue")
    units = driver.plan_units(groups, ["slow10", "aa"], 2)
    assert units == [
        ("standin", "aa", 1),
        ("standin", "aa", 2),
        ("standin", "slow10", 1),
        ("standin_atomic", "aa", 1),
        ("standin_atomic", "aa", 2),
        ("standin_atomic", "slow10", 1),
    ]
    assert driver.plan_units(groups, ["slow10", "aa"], 2, by_run=True) == [
        ("standin", "aa", 1),
        ("standin_atomic", "aa", 1),
        ("standin", "aa", 2),
        ("standin_atomic", "aa", 2),
        ("standin", "slow10", 1),
        ("standin_atomic", "slow10", 1),
    ]


def test_a_later_call_numbers_its_a_a_runs_on(tmp_path: Path):
    groups = load_catalogue(ROOT / "tests/data/real_kernels_standin/catalogue")
    assert driver.plan_units(groups[:1], ["aa", "slow5"], 2, first_run=2) == [
        ("standin", "aa", 2),
        ("standin", "aa", 3),
        ("standin", "slow5", 1),
    ]


def test_part_path_never_overwrites(tmp_path: Path):
    assert driver.part_path(tmp_path, 2).name == "part2.json"
    (tmp_path / "part2.json").write_text("{}")
    assert driver.part_path(tmp_path, 2).name == "part2.2.json"
    (tmp_path / "part2.2.json").write_text("{}")
    assert driver.part_path(tmp_path, 2).name == "part2.3.json"


def test_bad_arguments_say_what_to_fix(capsys: pytest.CaptureFixture[str]):
    for argv, said in (
        (["--part", "3", "--parts", "2"], "--part 3 must be within 1..--parts (2)"),
        (["--heads", "aa,slow7"], "--heads takes aa, slow5, slow10"),
        (["--tolerance", "0"], "--tolerance must be above 0"),
    ):
        with pytest.raises(SystemExit):
            driver.parse_args(["--out", "x", *argv])
        assert said in capsys.readouterr().err


# ------------------------------------------------------------------------------ catalogue

GOOD = """
[package]
import = "pkg"
requirement = "pkg-name==1.2.3"
repo = "owner/pkg"
ref = "v1.2.3"
licence = "MIT"

[[kernels]]
id = "pkg_op"
entry = "pkg:op"
source = "src/op.py"
kinds = ["autotuned", "atomics"]
configs = 8
dtype = "float16"
shapes = [[64, 1000], [4096, 8192]]
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def test_a_good_group_reads(tmp_path: Path):
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "pkg.py").write_text("")
    g = load_group(write(tmp_path, "pkg", GOOD), tmp_path / "entries")
    assert (g.distribution, g.version) == ("pkg-name", "1.2.3")
    assert g.kernels[0].shapes == ((64, 1000), (4096, 8192))
    assert g.describe()["kernels"]["pkg_op"]["configs"] == 8


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('"pkg-name==1.2.3"', '"pkg-name>=1.2"', "must be an exact pin"),
        ('["autotuned", "atomics"]', '["fast"]', "each must be one of atomics"),
        ("configs = 8", "configs = 0", "autotuned but configs is 0"),
        ('"float16"', '"half"', "dtype 'half' must be one of"),
        ("[[64, 1000], [4096, 8192]]", "[[64, 1000], [4096]]", "all of one rank"),
        ('entry = "pkg:op"', 'entry = "pkg.op"', "must be `module:function`"),
        ('entry = "pkg:op"', 'entry = "other:op"', "entries/other.py, which is not in"),
        ('source = "src/op.py"\n', "", "`source` is missing"),
        ('licence = "MIT"', 'licence = "MIT"\nalso = ["dep>=1"]', "must be a list of exact pins"),
        ('licence = "MIT"', 'licence = "MIT"\nalso = "dep==1"', "must be a list of exact pins"),
        ('licence = "MIT"', 'licence = "MIT"\nalso = ["pkg-name==1.2.3"]', "repeats a pin"),
    ],
)
def test_catalogue_mistakes_are_named(tmp_path: Path, old: str, new: str, said: str):
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "pkg.py").write_text("")
    assert old in GOOD
    path = write(tmp_path, "pkg", GOOD.replace(old, new))
    with pytest.raises(CatalogueError, match=r"pkg\.toml") as err:
        load_group(path, tmp_path / "entries")
    assert said in str(err.value)


def test_a_group_installs_its_requirement_with_the_pins_it_names_also(tmp_path: Path):
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "pkg.py").write_text("")
    plain = load_group(write(tmp_path, "pkg", GOOD), tmp_path / "entries")
    assert plain.also == () and plain.pins == ("pkg-name==1.2.3",)
    with_also = GOOD.replace('licence = "MIT"', 'licence = "MIT"\nalso = ["dep==2.0", "aux==1"]')
    g = load_group(
        write(tmp_path, "pkgx", with_also.replace("pkg_op", "pkgx_op")), tmp_path / "entries"
    )
    assert g.pins == ("pkg-name==1.2.3", "dep==2.0", "aux==1")
    assert g.describe()["also"] == ["dep==2.0", "aux==1"]
    command = driver.install_command(tmp_path / "wheels", [plain, g])
    assert command[:3] == [sys.executable, "-m", "pip"] and "--no-deps" in command
    assert command[command.index("--find-links") + 1] == str(tmp_path / "wheels")
    assert command[-3:] == ["aux==1", "dep==2.0", "pkg-name==1.2.3"]  # each pin once
    # the suite's FlagGems group: flag_gems imports sqlalchemy, which the H200 image lacks
    suite = ROOT / "bench" / "real_kernels"
    flaggems = select(load_catalogue(suite / "catalogue", suite / "entries"), None, ["flaggems"])
    assert driver.install_pins(flaggems) == ["flag-gems==5.0.2", "sqlalchemy==2.0.48"]


def test_ids_unique_over_the_suite_and_selection_names_what_exists(tmp_path: Path):
    write(tmp_path / "cat", "one", GOOD)
    write(tmp_path / "cat", "two", GOOD)
    with pytest.raises(CatalogueError, match=r"'pkg_op' is in both one\.toml and two\.toml"):
        load_catalogue(tmp_path / "cat")
    groups = load_catalogue(ROOT / "tests/data/real_kernels_standin/catalogue")
    with pytest.raises(CatalogueError, match="groups: standin, standin_atomic"):
        select(groups, None, ["nope"])
    with pytest.raises(CatalogueError, match="no kernel nope"):
        select(groups, ["nope"], None)
    picked = select(groups, ["standin_row_sum"], None)
    assert [(g.name, [k.id for k in g.kernels]) for g in picked] == [
        ("standin_atomic", ["standin_row_sum"])
    ]
    with pytest.raises(CatalogueError, match="no catalogue files"):
        load_catalogue(tmp_path / "empty")


def test_results_keep_every_case_field_but_the_raw_rounds(tmp_path: Path):
    path = tmp_path / "r.json"
    path.write_text(
        '{"held_gpu_seconds": 3.5, "cases": [{"kernel": "k", "new_field": 1, "raw": {"r": [1]}}]}'
    )
    top, cases = driver.read_results(path)
    assert top == {"held_gpu_seconds": 3.5}
    assert cases == [{"kernel": "k", "new_field": 1}]


def test_a_stopped_sweeps_journal_is_read_up_to_its_cut_line(tmp_path: Path):
    path = tmp_path / "r.partial.jsonl"
    assert driver.read_partial(path) == []
    path.write_text('{"kernel": "a", "raw": {}}\n{"kernel": "b"}\n{"kernel": "c", "ra')
    assert driver.read_partial(path) == [{"kernel": "a"}, {"kernel": "b"}]


def test_slow_heads_are_sized_from_the_aa_runs_base_medians():
    case = {"kernel": "k", "shape": [4096], "dtype": "float16", "status": "ok"}
    runs = [
        {"group": "g", "head": "aa", "cases": [{**case, "base_median_us": 10.0}]},
        {"group": "g", "head": "aa", "cases": [{**case, "base_median_us": 12.0}]},
        {"group": "g", "head": "aa", "cases": [{**case, "base_median_us": 30.0}]},
        {"group": "g", "head": "slow5", "cases": [{**case, "base_median_us": 99.0}]},
        {"group": "other", "head": "aa", "cases": [{**case, "base_median_us": 99.0}]},
        {"group": "g", "head": "aa", "cases": [{**case, "status": "crashed"}]},
    ]
    assert driver.kernel_times("g", runs) == {("k", (4096,), "float16"): 12.0}
    assert driver.kernel_times("none", runs) == {}


def test_the_engine_digest_follows_the_sources_not_git(tmp_path: Path):
    for d in ("bot", "checks"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "a.py").write_text("x = 1\n")
    first = driver.engine_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("not a source")
    assert driver.engine_digest(tmp_path) == first
    (tmp_path / "checks" / "a.py").write_text("x = 2\n")
    assert driver.engine_digest(tmp_path) != first
