"""The review of a real public pull request, from the measure job's results recorded for it:
meta-pytorch/tritonbench #269 (the sum operator's Triton kernel accumulating over several blocks
with ``tl.atomic_add``), cloned from ``bench/device_src/tritonbench.bundle`` and reviewed with
``kernel-review review --results`` as ``bench/device_pr_review.py`` renders it. The results are
``tests/data/device_pr/tritonbench-269/`` (its README says which run made them)."""

from __future__ import annotations

import sys
from pathlib import Path

from bot.cli import main
from bot.contracts.results import ResultsFile
from tests.golden_util import check_golden
from tests.paths import DATA, ROOT

sys.path.insert(0, str(ROOT / "bench"))

import device_pr_review

RESULTS = DATA / "device_pr" / "tritonbench-269"


def test_the_review_of_tritonbench_269_from_its_recorded_results_is_golden(
    tmp_path: Path, capsys
) -> None:
    (results,) = sorted(RESULTS.glob("results-*.json"))
    repo = device_pr_review.clone(device_pr_review.BUNDLE, tmp_path / "tritonbench")
    argv = ["review", "--repo", str(repo), "--base", device_pr_review.BASE]
    argv += ["--head", device_pr_review.HEAD, "--results", str(results), "--no-compile"]
    assert main([*argv, "--out", "-"]) == 0
    comment = capsys.readouterr().out.removesuffix("\n")
    check_golden("review_tritonbench_269.md", comment)
    # the results are for the bundle's commits, and what the review says rests on them
    recorded = ResultsFile.model_validate_json(results.read_text(encoding="utf-8"))
    errors = [x for s in recorded.evidence.sweeps for x in s.shapes if x.verdict == "ERROR"]
    assert errors, "base fails past Triton's block limit (the pull request's own reason)"
    assert "body" in comment.split("What changed")[1].split("</details>")[0]
