"""The tritonbench onboarding's review, from the sweep the H200 recorded for it.

``bench/device_onboard.py`` replays docs/onboarding/meta-pytorch-tritonbench.md on a GPU: the
bundle's ``onboard`` commit, ``kernel-review init --only`` five operators, the policy committed,
vector_add's ``BLOCK_SIZE`` 1024 made 2048, and ``kernel-review review --measure``. Here the same
range is made from the bundle and reviewed as ``review --measure`` reviews it, the sweep being
the one the H200 measured (``tests/data/device_onboarding/tritonbench/``): two sentences of the
review it printed were wrong, its first-call line (AMD's reason on an NVIDIA machine) and its
"no pattern over size" where vector_add was slower at every size up to 1048576 but one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.contracts.evidence import Evidence
from bot.review.local import ReviewInputs, static_review
from checks.sweep.evidence import to_evidence
from checks.sweep.models import load_results
from tests.golden_util import check_golden
from tests.paths import DATA, ROOT

sys.path.insert(0, str(ROOT / "bench"))

import device_onboard

SWEEP = DATA / "device_onboarding" / "tritonbench" / "results-sweep.json"
WHEN = "2026-12-05T04:20:33+00:00"  # the commits' date: the same shas on every run


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": WHEN, "GIT_COMMITTER_DATE": WHEN}
    who = ["-c", "user.name=kernel-review", "-c", "user.email=kernel-review@localhost"]
    done = subprocess.run(
        ["git", *who, *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The transcript's range: the policy ``init`` wrote, committed, and the change on it."""
    repo = tmp_path_factory.mktemp("onboarding") / "tb"
    subprocess.run(["git", "clone", "-q", str(device_onboard.BUNDLE), str(repo)], check=True)
    _git(repo, "checkout", "-q", "-b", "main", "origin/onboard")
    only = [a for op in device_onboard.OPS for a in ("--only", f"tritonbench/operators/{op}")]
    assert main(["init", "--repo", str(repo), *only]) == 0
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "kernel-review policy")
    base = _git(repo, "rev-parse", "HEAD")
    kernel = repo / device_onboard.KERNEL_FILE
    text = kernel.read_text(encoding="utf-8")
    old = "triton_add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)"
    assert old in text
    kernel.write_text(text.replace(old, old.replace("1024", "2048")), encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "vector_add: 2048-element blocks")
    return repo, base, _git(repo, "rev-parse", "HEAD")


def test_the_onboardings_review_from_the_h200s_sweep_says_what_is_true(
    onboarded, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base, head = onboarded
    # reviewed as on the H200 it was measured on, whatever GPU this machine has
    monkeypatch.setattr("bot.review.local.gpu_vendor", lambda: "nvidia")
    swept = Evidence(sweeps=(to_evidence(load_results(SWEEP)),))
    review = static_review(
        ReviewInputs(repo=repo, base_sha=base, head_sha=head), measure=lambda _plan: swept
    ).review
    comment = review.comment
    check_golden("review_tritonbench_onboarding.md", comment)
    first = comment.split("<details>")[0]
    (first_call,) = [x for x in first.splitlines() if "**First call**" in x]
    # nvidia's own reason, and amd's under amd's name (whatever GPU this machine has)
    assert "nvidia: `review --measure` timed only the sweep on this NVIDIA GPU" in first_call
    assert "; amd: needs an AMD GPU runner; this machine has an NVIDIA GPU;" in first_call
    assert (
        "vector\\_add: 9 of 16 shapes slower by 4.0–28.7%; slower at every size up to 1048576 "
        in comment
    )
    assert "no pattern" not in comment
