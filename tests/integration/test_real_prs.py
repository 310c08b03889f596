"""Detection on the corpus of real pull requests (``tests/data/real_prs``), as CI.

Every labelled check of every case must be right in repo mode, except the misses that
``bench/detection_score.py`` lists in ``KNOWN_MISSES`` with their reason (a listed miss that is now
right fails too, so the list stays true). In diff mode no kernel-bearing file may go unmentioned,
and no negative control may get an invented kernel in either mode, except those listed, with their
reason, in ``KNOWN_MISSES`` (repo mode) and ``KNOWN_DIFF_INVENTED`` (diff mode).
"""

from __future__ import annotations

import sys

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from detection_score import KNOWN_DIFF_INVENTED, KNOWN_MISSES, analyse, score_case, silent_files
from real_prs import load_cases

CASES = load_cases()


def test_the_corpus_is_there():
    assert len(CASES) >= 30
    assert {case for case, _ in KNOWN_MISSES} <= {c.name for c in CASES}
    assert len({c.meta["repo"] for c in CASES}) >= 6
    assert sum(c.negative for c in CASES) >= 6


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_repo_mode_labels(case):
    checks = score_case(case, analyse(case, "repo"), "repo")
    wrong = [
        f"{c.check}: expected {c.expected}, got {c.got}"
        for c in checks
        if not c.right and (case.name, c.check) not in KNOWN_MISSES
    ]
    assert not wrong, "\n".join(wrong)
    names = {c.check for c in checks}
    stale = [k for (name, k) in KNOWN_MISSES if name == case.name and k not in names]
    assert not stale, f"KNOWN_MISSES names checks this case does not have: {stale}"
    now_right = [c.check for c in checks if c.right and (case.name, c.check) in KNOWN_MISSES]
    assert not now_right, (
        f"listed as misses but right now (drop them from KNOWN_MISSES): {now_right}"
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_diff_mode_is_never_silent(case):
    analysis = analyse(case, "diff")
    assert not silent_files(case, analysis)
    if case.negative and case.name in KNOWN_DIFF_INVENTED:
        assert analysis.changes, f"{case.name} is clean now: drop it from KNOWN_DIFF_INVENTED"
    elif case.negative:
        assert not analysis.changes, [f"{c.kind} {c.name}" for c in analysis.changes]
