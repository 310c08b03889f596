"""The real-kernel suite's driver (``bench/real_kernels/run.py``) on the stand-in catalogue
(``tests/data/real_kernels_standin``: two Triton kernels written for the tests, in Triton's
interpreter), without the bench step: the group repositories it builds, the heads' code, the
policy as the bot reads it, the suite's entries in base and the slow head, the import check,
do_bench's processes, and the summary of runs made from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot import gitutil
from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "real_kernels"))

import rk_summary
import run as driver
from rk_catalogue import Group, load_catalogue
from rk_repo import add_slow_head, build_group_repo

STANDIN = ROOT / "tests" / "data" / "real_kernels_standin"

PROBE = r"""
import json, os, sys
got = []
for checkout in sys.argv[1:]:  # each checkout's suite in turn, in one process
    for name in [m for m in sys.modules if m in ("suite", "rk_extra") or m.startswith("entries")]:
        del sys.modules[name]
    sys.path.insert(0, checkout)
    import suite, rk_extra
    item = suite.standin_scaled_add((4096,), "float32", device="cpu", seed=3)
    out = item["fn"]()
    ref = item["reference"]()
    got.append({
        "setup": os.environ.pop("RK_STANDIN_SETUP", None),
        "fraction": suite.EXTRA_FRACTION,
        "wrapped": item["fn"].__name__,
        "max_err": float((out - ref).abs().max()),
        "sized": [vars(x) for x in rk_extra.SIZED.values()],
    })
    sys.path.remove(checkout)
print(json.dumps(got))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    groups = {g.name: g for g in load_catalogue(STANDIN / "catalogue", STANDIN / "entries")}
    root = tmp_path_factory.mktemp("rk") / "standin"
    shas = build_group_repo(root, groups["standin"], STANDIN / "entries", 0.03)
    assert set(shas) == {"base", "aa"}  # the slow heads wait for the kernels' times
    # slow5 without a measured time (each process sizes its own), slow10 with one
    shas["slow5"] = add_slow_head(root, groups["standin"], "slow5", {})
    sized = {("standin_scaled_add", (4096,), "float32"): 50.0}
    shas["slow10"] = add_slow_head(root, groups["standin"], "slow10", sized)
    return {"root": root, "shas": shas, "group": groups["standin"], "groups": groups}


def diff(root: Path, a: str, b: str) -> list[str]:
    text = gitutil.git(root, "diff", "--unified=0", a, b)
    return [
        line
        for line in text.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_heads_change_only_what_they_say(built: dict[str, object]):
    root = built["root"]
    assert isinstance(root, Path)
    files = set(gitutil.list_files(root, "base"))
    assert {"suite.py", "rk_extra.py", ".github/kernel-review.toml", "entries/standin.py"} <= files
    assert diff(root, "base", "aa") == ["+", "+# the same code as base"]
    assert diff(root, "base", "slow5") == [
        "-EXTRA_FRACTION = 0.0",
        "+EXTRA_FRACTION = 0.05  # 5% extra work after every kernel",
    ]
    slow10 = diff(root, "base", "slow10")
    assert slow10[2].startswith("+EXTRA_FRACTION = 0.1  #")
    assert slow10[3] == "+KERNEL_US: dict = {('standin_scaled_add', (4096,), 'float32'): 50.0}"
    assert set(built["shas"]) == {"base", "aa", "slow5", "slow10"}  # type: ignore[arg-type]


def test_the_bot_reads_the_policy(built: dict[str, object]):
    root = built["root"]
    assert isinstance(root, Path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "policy",
            "check",
            str(root / ".github/kernel-review.toml"),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["valid"] and got["warnings"] == []
    policy = got["policy"]
    assert policy["tolerance"] == 0.03 and policy["deployment"]["kind"] == "long-lived"
    (kernel,) = policy["kernels"]
    assert kernel["name"] == "standin_scaled_add"
    assert kernel["bench"] == "suite:standin_scaled_add"
    assert kernel["dtypes"] == ["float32"]
    assert [s["shape"] if isinstance(s, dict) else s for s in kernel["shapes"]] == [[4096], [20000]]


def test_base_runs_the_entry_as_is_and_slow10_adds_a_tenth(
    built: dict[str, object], tmp_path: Path
):
    root = built["root"]
    assert isinstance(root, Path)
    trees = [gitutil.add_worktree(root, tmp_path / f"wt-{rev}", rev) for rev in ("base", "slow10")]
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *map(str, trees)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TRITON_INTERPRET": "1"},
        )
    finally:
        for tree in trees:
            gitutil.remove_worktree(root, tree)
    assert done.returncode == 0, done.stderr[-2000:]
    base, slow = json.loads(done.stdout.strip().splitlines()[-1])
    assert base["setup"] == "1"  # the catalogue's setup ran before the entry was imported
    assert base["fraction"] == 0.0 and base["sized"] == []
    assert base["wrapped"] == "fn"  # the entry's own fn
    assert base["max_err"] < 1e-5
    assert slow["setup"] == "1"
    assert slow["wrapped"] == "with_extra" and slow["max_err"] < 1e-5
    (sized,) = slow["sized"]  # from the time slow10 was given, not this process's own
    assert sized["device"] == "cpu" and sized["kernel_us"] == 50.0
    assert sized["spin_us"] == pytest.approx(5.0)


def test_import_check_names_what_to_do(built: dict[str, object]):
    group = built["group"]
    assert isinstance(group, Group)
    assert driver.preflight(group, allow_mismatch=False) is None
    pinned = Group(**{**group.__dict__, "requirement": "triton==0.0.1"})
    why = driver.preflight(pinned, allow_mismatch=False)
    assert why and "pins 0.0.1" in why and "--allow-version-mismatch" in why
    assert driver.preflight(pinned, allow_mismatch=True) is None
    missing = Group(**{**group.__dict__, "import_name": "no_such_package_rk"})
    why = driver.preflight(missing, allow_mismatch=False)
    assert why and "does not import" in why and "--install-wheels" in why


def test_dobench_processes_and_the_summary_of_their_runs(built: dict[str, object], tmp_path: Path):
    """do_bench's two processes (the CPU's timed loop) on the base and slow10 checkouts, joined
    with bench cases written here into runs, summarised as the driver does."""
    root = built["root"]
    assert isinstance(root, Path)
    cases = [
        {"kernel": "standin_scaled_add", "shape": [4096], "dtype": "float32"},
        {"kernel": "standin_scaled_add", "shape": [2048], "dtype": "float32"},
    ]
    sides = {}
    for rev in ("base", "slow10"):
        checkout = gitutil.add_worktree(root, tmp_path / f"db-{rev}", rev)
        try:
            sides[rev] = driver.dobench_side(checkout, cases, "cpu", 120)
        finally:
            gitutil.remove_worktree(root, checkout)
    for got in sides.values():
        assert got["wall_s"] and got["wall_s"] > 0, got.get("error")
        assert [r["shape"] for r in got["rows"]] == [[4096], [2048]]
        assert all(r["mean_ms"] > 0 for r in got["rows"])
        assert got["timer"] == "CPU timed loop (plumbing only)"
    assert not any("extra" in r for r in sides["base"]["rows"])
    for r in sides["slow10"]["rows"]:  # the head's extra work, as its process sized it
        assert r["extra"]["spin_us"] == pytest.approx(0.1 * r["extra"]["kernel_us"])

    def case(shape: list[int], verdict: str, ratio: float) -> dict:
        return {**cases[0], "shape": shape, "status": "ok", "verdict": verdict,
                "ratio": ratio, "ci_low": ratio - 0.01, "ci_high": ratio + 0.01,
                "category": "served", "notes": []}  # fmt: skip

    runs = [
        {"group": "standin", "head": "aa", "run": i, "tolerance": 0.03, "wall_s": 9.0,
         "results": {"held_gpu_seconds": 8.0}, "dobench": None,
         "cases": [case([4096], "SAME", 1.0), case([2048], "SAME", 1.0)]}
        for i in (1, 2, 3)
    ]  # fmt: skip
    runs.append(
        {"group": "standin", "head": "slow10", "run": 1, "tolerance": 0.03, "wall_s": 9.0,
         "results": {}, "dobench": {"base": sides["base"], "head": sides["slow10"]},
         "cases": [case([4096], "SLOWER", 1.1), case([2048], "SAME", 1.02)]}
    )  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    record = {"meta": {"device": "cpu"}, "groups": {"standin": built["group"].describe()}}  # type: ignore[union-attr]
    (out / "part1.json").write_text(json.dumps({**record, "runs": runs[:3], "skipped": []}))
    (out / "part2.json").write_text(json.dumps({**record, "runs": runs[3:], "skipped": ["x"]}))
    summary = driver.write_summary(out)
    assert summary["repos"] == ["triton-lang/triton"]
    assert summary["detect_10pct"] == pytest.approx(0.5)
    assert summary["aa_verdicts"] == 6 and summary["aa_false"] == []
    assert summary["paired_runs"] == 1
    assert summary["dobench_all_in_s"] == pytest.approx(
        sides["base"]["wall_s"] + sides["slow10"]["wall_s"]
    )
    assert summary["dobench"]["detect_slow10"]["of"] == 2
    assert summary["meta"]["files"] == ["part1.json", "part2.json"]
    md = (out / "results.md").read_text()
    assert "CPU timing: plumbing only" in md and "### standin_scaled_add" in md
    assert rk_summary.ALLOW_AA_RUNS == 3
    assert "machines" not in summary["meta"]

    # a record completed on another card: its A/A parts read from their folder, each card named
    later = tmp_path / "later"
    later.mkdir()
    (out / "part1.json").write_text(
        json.dumps({**record, "meta": {"machine": "card A"}, "runs": runs[:3], "skipped": []})
    )
    (later / "part1.2.json").write_text(
        json.dumps({**record, "meta": {"machine": "card B"}, "runs": runs[3:], "skipped": []})
    )
    (out / "part2.json").unlink()
    assert driver.main(["--summarize-only", "--out", str(later), "--parts-from", str(out)]) == 0
    again = json.loads((later / "summary.json").read_text())
    assert again["detect_10pct"] == pytest.approx(0.5)  # the A/A runs of `out` allow the shapes
    assert again["meta"]["machines"] == {
        "card A": [str(out / "part1.json")],
        "card B": ["part1.2.json"],
    }
    assert (
        f"card A ({out / 'part1.json'}); card B (part1.2.json)"
        in (later / "results.md").read_text()
    )
    with pytest.raises(SystemExit):  # only a summary reads another record's parts
        driver.main(["--out", str(later), "--parts-from", str(out)])
