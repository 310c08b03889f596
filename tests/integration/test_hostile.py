"""Hostile input and faults the other suites do not stage: measured code that prints workflow
commands and a forged review marker, a policy on the base branch that does not parse, and a
cancelled older run whose report comes in after the newer review."""

# ruff: noqa: F811  (the end-to-end fixtures gh and fixture_repo are imported by name)

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bot import gitutil
from bot.app import log
from bot.cli import main
from bot.contracts.evidence import Evidence
from bot.contracts.review import ChangeLine, Requirements, ReviewContext
from bot.forge.sticky import marker_sha
from bot.review.render import render_comment
from bot.review.verdict import decide
from checks.sweep.evidence import to_evidence
from checks.sweep.models import load_results
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts
from tests.integration.test_app_e2e import (  # noqa: F401  (fixtures)
    PR,
    Run,
    bot_comments,
    fixture_repo,
    gh,
    pr_event,
    results_for,
)
from tests.paths import DATA

HOSTILE = DATA / "hostile"
QUICK = ProtocolConfig(block_ms=2.0, min_rounds=4, max_rounds=8, warmup_rounds=1)
FAST = Timeouts(start_s=20, prepare_s=5.0, check_s=5, configure_s=5, block_s=5, finish_s=5)
# A line the runner would execute: ``::command`` after any indentation, or ``##[``.
WORKFLOW_COMMAND = re.compile(r"^\s*::|##\[", re.MULTILINE)


def _assert_log_is_inert(text: str) -> None:
    assert not WORKFLOW_COMMAND.search(text), text
    assert "<!--" not in text


@pytest.fixture(scope="module")
def hostile_sweep(tmp_path_factory: pytest.TempPathFactory):
    cases = [
        Case(kernel=n, bench=f"hostile_kernels:{n}", dims=(4096,), dtype="float32", tolerance=0.5)
        for n in ("shout", "axpy")
    ]
    lines: list[str] = []
    result = run_sweep(
        cases,
        base_root=HOSTILE / "base",
        head_root=HOSTILE / "head",
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=SweepOptions(device="cpu", protocol=QUICK, timeouts=FAST, max_gpu_seconds=60),
        work_dir=tmp_path_factory.mktemp("hostile"),
        progress=lines.append,
    )
    return result, lines


def test_measured_code_output_cannot_issue_workflow_commands(hostile_sweep, capsys) -> None:
    result, lines = hostile_sweep
    by = {c.kernel: c for c in result.cases}
    assert by["shout"].status == "error" and by["shout"].failed_side == "head"
    assert by["axpy"].status == "ok"  # the sweep went on
    # the message is kept as data (the results file holds it verbatim) ...
    assert "::set-output name=verdict::approve" in by["shout"].message
    # ... and the measure job's log, which prints every progress line through ``log``, is inert
    for line in lines:
        log(line)
    out = capsys.readouterr().out
    assert "set-output name=verdict" in out  # still readable
    _assert_log_is_inert(out)


HOSTILE_CHANGES = [
    ChangeLine(kernel=name, kind="body", old_language="triton", new_language="triton",
               old_paths=("hostile_kernels.py",), new_paths=("hostile_kernels.py",))
    for name in ("shout", "axpy")
]  # fmt: skip


def test_measured_code_output_cannot_forge_the_review(hostile_sweep) -> None:
    result, _ = hostile_sweep
    # as GPU timing, since the review quotes a CPU sweep's failures only as "not evidence"
    ev = to_evidence(result, vendor="nvidia").model_copy(update={"timing_kind": "gpu"})
    evidence = Evidence(sweeps=(ev,))
    verdict = decide(HOSTILE_CHANGES, Requirements(vendors=("nvidia",)), evidence)
    comment = render_comment(
        verdict, ReviewContext(head_sha="a" * 40, base_sha="b" * 40), evidence, full=True
    )
    # the evidence is rendered, the hostile message with it ...
    assert verdict.decision == "request_changes" and "shout 4096 float32: ERROR" in comment
    assert "set-output name=verdict" in comment
    assert "Approved by the maintainers" in comment
    # ... as text: no marker, mention, heading, rule, list, link or autolink of its own
    assert "<!--" not in comment and "@maintainers" not in comment
    assert marker_sha(comment) is None
    assert not re.search(r"^\s*(?:[-*] )?#+ Approved", comment, re.M)
    # (the charts' own front matter is fenced: what is outside the fences may not rule a line)
    text = re.sub(r"^```mermaid\n.*?^```$", "", comment, flags=re.M | re.S)
    assert "xychart-beta" in comment and "xychart-beta" not in text
    assert not re.search(r"^\s*(?:[-*] )?---\s*$", text, re.M)
    assert not re.search(r"(?<!\\)\]\(https", comment) and "https://evil" not in comment
    assert "www.evil" not in comment


BENCH_POLICY = """\
tolerance = 0.5
vendors = ["nvidia"]
[deployment]
kind = "long-lived"
[[kernels]]
name = "shout"
bench = "hostile_kernels:shout"
paths = ["hostile_kernels.py"]
dtypes = ["float32"]
shapes = [[4096]]
"""


def test_bench_command_log_is_inert(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    gitutil.init_repo(repo)
    shutil.copy(HOSTILE / "base" / "hostile_kernels.py", repo / "hostile_kernels.py")
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(BENCH_POLICY)
    gitutil.commit_all(repo, "base")
    gitutil.git(repo, "checkout", "-q", "-b", "feature")
    shutil.copy(HOSTILE / "head" / "hostile_kernels.py", repo / "hostile_kernels.py")
    gitutil.commit_all(repo, "head")
    out = tmp_path / "r.json"
    argv = ["bench", "--repo", str(repo), "--device", "cpu", "--out", str(out)]
    code = main([*argv, "--engine-option", "max_rounds=8", "--engine-option", "added_shapes=off"])
    captured = capsys.readouterr()
    assert code == 5, captured.err  # the one case failed: nothing measured
    [case] = load_results(out).cases
    assert case.status == "error" and "::add-mask::" in case.message
    assert "ERROR (head)" in captured.err
    _assert_log_is_inert(captured.out + captured.err)


def test_malformed_policy_on_base_fails_the_check_and_nothing_runs(
    gh, fixture_repo, tmp_path, monkeypatch, capsys
):
    _, base, head = fixture_repo
    gh.blobs[base][".github/kernel-review.toml"] += "\n[limitz]\nmax_shapes = 4\n"
    run = Run(gh, tmp_path, monkeypatch, "pull_request", pr_event("opened", base, head))
    assert run("plan") == 2
    err = capsys.readouterr().err
    assert "limitz" in err and "Traceback" not in err
    assert re.search(r"kernel-review\.toml@[0-9a-f]{12}:\d+:\d+", err), err
    assert run.outputs().get("run") != "true"
    assert bot_comments(gh) == []


def test_a_cancelled_older_run_never_overwrites_the_newer_review(
    gh, fixture_repo, tmp_path, monkeypatch
):
    """Run A (old head) is cancelled by a push; its report job still runs (``always()``), after
    run B (new head) posted. The newer review and its status stay as they are."""
    _, base, head = fixture_repo
    new_head = "f" * 40
    old = Run(gh, tmp_path / "a", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert old("plan") == 0
    gh.push(PR, new_head)
    gh.blobs[new_head] = dict(gh.blobs[head])
    new = Run(
        gh, tmp_path / "b", monkeypatch, "pull_request", pr_event("synchronize", base, new_head)
    )
    assert new("plan") == 0 and new.outputs()["head-sha"] == new_head
    results_for(new.results, base, new_head, "nvidia", 1.0)
    assert new("report") == 0
    [review] = [c for c in bot_comments(gh) if marker_sha(c["body"])]
    assert marker_sha(review["body"]) == new_head
    statuses = list(gh.statuses.get(new_head, []))

    # the cancelled run's report: its measure jobs left nothing behind
    old = Run(gh, tmp_path / "a", monkeypatch, "pull_request", pr_event("opened", base, head))
    assert old("report") == 0
    [still] = [c for c in bot_comments(gh) if marker_sha(c["body"])]
    assert still["id"] == review["id"] and still["body"] == review["body"]
    assert list(gh.statuses.get(new_head, [])) == statuses
    assert not gh.statuses.get(head)
