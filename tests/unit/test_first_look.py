"""bench/first_look.py: a batch's cases are the ones that name it, a rewrite counts as recognised
only when every kernel labelled a rewrite is reported as one, a recorded first look is not
overwritten, and the committed record matches the corpus's batch1 cases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from detection_score import Check
from first_look import RECORD, batch_cases, issue_classes, main, score
from real_prs import Case, load_cases


def _case(name: str, expect: list[dict], batch: str | None = "b") -> Case:
    meta = {"repo": f"o/{name}", "classes": ["rewrite"], **({"first_look": batch} if batch else {})}
    return Case(name=name, folder=Path("/nonexistent"), meta=meta, diff="", expect=expect)


def _check(case: str, check: str, right: bool, mode: str = "repo") -> Check:
    return Check(case, mode, check, "x", "x" if right else "y", right, ("rewrite",))


def test_batch_cases_are_those_naming_the_batch():
    cases = [_case("a", []), _case("b", [], batch="other"), _case("c", [], batch=None)]
    assert [c.name for c in batch_cases("b", cases)] == ["a"]


def test_a_rewrite_is_recognised_only_when_every_rewrite_row_is_reported_as_one():
    rows = [
        {"kernel": "k1", "kind": "rewrite"},
        {"kernel": "k2", "kind": "rewrite"},
        {"kernel": "old", "kind": "deleted"},
    ]
    whole, half = _case("whole", rows), _case("half", rows)
    checks = [
        _check("whole", "k1: reported", True),
        _check("whole", "k1: kind", True),
        _check("whole", "k2: reported", True),
        _check("whole", "k2: kind", True),
        _check("whole", "old: reported", False),  # not a rewrite row: does not count
        _check("half", "k1: reported", True),
        _check("half", "k1: kind", True),
        _check("half", "k2: reported", True),
        _check("half", "k2: kind", False),
        _check("half", "k2: kind", False, mode="diff"),
    ]
    repo = score("b", [whole, half], checks, "repo")
    assert (repo["rewrites"], repo["rewrites_recognised"]) == (2, 1)
    assert (repo["checks"], repo["right"]) == (9, 7)
    assert {(w["case"], w["check"]) for w in repo["wrong"]} == {
        ("whole", "old: reported"),
        ("half", "k2: kind"),
    }
    assert score("b", [whole, half], checks, "diff")["checks"] == 1


def test_a_recorded_batch_is_not_overwritten(tmp_path, capsys):
    out = tmp_path / "first_look.json"
    out.write_text(json.dumps({"batches": [{"name": "batch1"}]}), encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["batch1", "--out", str(out)])
    assert exc.value.code == 2
    assert "already holds the first look of 'batch1'" in capsys.readouterr().err
    assert json.loads(out.read_text(encoding="utf-8")) == {"batches": [{"name": "batch1"}]}


def test_an_unknown_batch_says_how_to_name_one(capsys):
    with pytest.raises(SystemExit):
        main(["no-such-batch", "--print"])
    assert 'first_look = "no-such-batch"' in capsys.readouterr().err.replace("'", '"')


def test_the_record_matches_the_corpus():
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    entry = next(b for b in record["batches"] if b["name"] == "batch1")
    cases = batch_cases("batch1", load_cases())
    assert sorted(entry["case_names"]) == sorted(c.name for c in cases)
    assert entry["cases"] == len(cases) >= 25
    assert entry["repos"] == sorted({c.meta["repo"] for c in cases})
    assert entry["rewrites"] == sum(any(r["kind"] == "rewrite" for r in c.expect) for c in cases)
    assert entry["rewrites"] >= 6
    assert sum(c.negative for c in cases) >= 3
    assert entry["right"] + len(entry["wrong"]) == entry["checks"]
    assert sum(entry["wrong_by_issue_class"].values()) == len(entry["wrong"])


def test_failures_are_counted_by_the_issue_class_their_reason_names(monkeypatch):
    import first_look

    monkeypatch.setattr(
        first_look,
        "KNOWN_MISSES",
        {
            ("a", "k: kind"): "class 1 (and 5): a module built from a submodule",
            ("a", "k: old_kept"): "class 3: a pruner",
            ("b", "invented kernels"): "a host-wrapper assertion",
        },
    )
    wrong = [
        _check("a", "k: kind", False),
        _check("a", "k: old_kept", False),
        _check("b", "invented kernels", False),
        _check("c", "not listed", False),
    ]
    counts = issue_classes(wrong)
    assert counts["1. extension modules built anywhere"] == 1
    assert counts["3. what a Triton kernel reads besides its body"] == 1
    assert counts["anything else"] == 2
    assert counts["5. toolchain pins wherever they live"] == 0
