"""Results files from the GPU runners are untrusted: capped, validated, and only for the pinned head."""

from __future__ import annotations

import json

import pytest

from bot.contracts.evidence import (
    CompilerEvidence,
    CompilerFlag,
    Evidence,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from bot.contracts.results import ResultsFile
from bot.contracts.review import ChangeLine, Requirements
from bot.jobs.gate import GateDecision
from bot.jobs.report import (
    MAX_RESULTS_BYTES,
    check_annotations,
    log_annotations,
    merge_evidence,
    read_results,
    status_for,
)
from bot.review.verdict import decide

HEAD, OTHER, BASE = "a" * 40, "b" * 40, "c" * 40


def sweep(
    vendor: str, verdict: str = "SAME", ratio: float = 1.0, kernel: str = "softmax"
) -> SweepEvidence:
    return SweepEvidence(
        vendor=vendor,
        gpu="gpu",
        shapes=(
            ShapeLine(
                kernel=kernel, shape=(4096, 4096), dtype="float16", verdict=verdict, ratio=ratio
            ),
        ),
    )


def write(tmp_path, name: str, head: str, vendor: str, ev: Evidence) -> None:
    (tmp_path / name).write_text(
        ResultsFile(head_sha=head, base_sha=BASE, vendor=vendor, evidence=ev).model_dump_json()
    )


def test_results_for_another_head_malformed_or_oversized_are_dropped(tmp_path):
    write(tmp_path, "ok.json", HEAD, "nvidia", Evidence(sweeps=(sweep("nvidia"),)))
    write(tmp_path, "stale.json", OTHER, "amd", Evidence(sweeps=(sweep("amd"),)))
    (tmp_path / "extra.json").write_text(
        json.dumps(
            {"head_sha": HEAD, "base_sha": BASE, "vendor": "amd", "evidence": {}, "pr_number": 1}
        )
    )
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "big.json").write_bytes(b" " * (MAX_RESULTS_BYTES + 1))
    kept, dropped = read_results(sorted(tmp_path.glob("*.json")), head_sha=HEAD)
    assert [r.vendor for r in kept] == ["nvidia"]
    reasons = " | ".join(dropped)
    assert (
        "not the pinned" in reasons
        and "over the" in reasons
        and "extra.json: not a results file" in reasons
    )
    assert "deep.json: not a results file" in reasons


def test_merge_marks_missing_vendors_not_run():
    kept = [
        ResultsFile(
            head_sha=HEAD,
            base_sha=BASE,
            vendor="nvidia",
            evidence=Evidence(sweeps=(sweep("nvidia"),)),
        )
    ]
    ev = merge_evidence(kept, ["nvidia", "amd"])
    assert [s.vendor for s in ev.sweeps] == ["nvidia"]
    assert [(n.check, n.vendor) for n in ev.not_run] == [("sweep", "amd")]


def test_a_shard_that_sent_nothing_is_not_run_for_its_vendor():
    def shard(vendor: str, i: int, n: int) -> ResultsFile:
        ev = Evidence(sweeps=(sweep(vendor),))
        return ResultsFile(
            head_sha=HEAD, base_sha=BASE, vendor=vendor, shard=f"{i}/{n}", evidence=ev
        )

    ev = merge_evidence([shard("nvidia", 1, 3), shard("nvidia", 3, 3)], ["nvidia"])
    (lost,) = ev.not_run
    assert (lost.check, lost.vendor) == ("sweep", "nvidia")
    assert "shard 2/3 of the nvidia measure job" in lost.reason
    # every shard came: nothing said; a vendor with none at all is said once, as before
    ev = merge_evidence([shard("nvidia", 1, 2), shard("nvidia", 2, 2)], ["nvidia", "amd"])
    assert [(n.vendor, "shard" in n.reason) for n in ev.not_run] == [("amd", False)]


def test_annotations_are_escaped_workflow_commands_on_the_kernel_file():
    plan = Plan(
        base_sha=BASE,
        head_sha=HEAD,
        vendors=("nvidia",),
        checks=("sweep",),
        kernels=(
            PlannedKernel(
                name="soft,max",
                bench="m:f",
                paths=("k/soft.py",),
                dtypes=("float16",),
                shapes=(PlannedShape(dims=(4096, 4096)),),
                tolerance=0.03,
                change_kinds=("rewrite",),
            ),
        ),
        changes=(ChangeLine(kernel="soft,max", kind="rewrite", new_paths=("k/soft:max.py",)),),
    )
    decision = GateDecision(repository="o/r", event="pull_request", plan=plan, run=True)
    ev = Evidence(
        sweeps=(
            sweep("nvidia", "SLOWER", 1.2, kernel="soft,max"),
            sweep("nvidia", "CRASHED", None, kernel="x\n::error::y"),
        )
    )
    lines = log_annotations(ev, decision)
    assert lines[0].startswith(
        "::warning file=k/soft%3Amax.py,title=kernel-review%3A slower::soft,max 4096x4096"
    )
    assert all("\n" not in line for line in lines)
    assert "x%0A::error::y" in lines[1]


def test_annotations_go_only_on_the_files_the_pull_request_changed():
    kernel = PlannedKernel(
        name="softmax",
        bench="m:f",
        paths=("k/soft.py", "k/untouched.py"),
        dtypes=("float16",),
        shapes=(PlannedShape(dims=(4096, 4096)),),
        tolerance=0.03,
        change_kinds=("rewrite",),
    )
    other = kernel.model_copy(update={"name": "gelu", "paths": ("k/gelu.py",)})
    plan = Plan(
        base_sha=BASE,
        head_sha=HEAD,
        vendors=("nvidia",),
        checks=("sweep",),
        kernels=(kernel, other),
        changes=(ChangeLine(kernel="softmax", kind="rewrite", new_paths=("k/soft.py",)),),
    )
    decision = GateDecision(repository="o/r", event="pull_request", plan=plan, run=True)
    outside = ("README.md", "../../etc/passwd", "k/untouched.py", ".github/workflows/ci.yml")
    flags = tuple(
        CompilerFlag(
            severity="error",
            kernel="softmax",
            vendor="nvidia",
            target="sm_90",
            message=f"spills ({path})",
            path=path,
            line=3,
        )
        for path in (*outside, "k/soft.py")
    )
    ev = Evidence(
        # gelu was not changed by the pull request: its policy path is not in the diff
        sweeps=(sweep("nvidia", "SLOWER", 1.2), sweep("nvidia", "SLOWER", 1.3, kernel="gelu")),
        compiler=CompilerEvidence(flags=flags),
    )
    on_files = [a.path for a in check_annotations(ev, decision)]
    assert on_files and set(on_files) == {"k/soft.py"}
    lines = log_annotations(ev, decision)
    assert len(lines) == 2 + len(flags)  # every note is still logged, outside ones without a file
    for line in lines:
        head = line.split("::")[1]
        assert "file=" not in head or "file=k/soft.py" in head, line
    assert sum("file=k/soft.py" in line for line in lines) == 2  # softmax's sweep and flag


def test_status_follows_the_decision():
    req = Requirements(vendors=("nvidia",))
    changes = [ChangeLine(kernel="softmax", kind="rewrite", old_kernel_kept=True)]
    bad = decide(changes, req, Evidence(sweeps=(sweep("nvidia", "SLOWER", 1.2),)))
    assert status_for(bad)[0] == "failure"
    partial = decide(changes, req, Evidence())
    assert status_for(partial)[0] == "pending" and "not met yet" in status_for(partial)[1]
    assert status_for(decide([], req, Evidence()))[0] == "success"


def _sweep_line(**fields) -> Evidence:
    line = {
        "kernel": "softmax",
        "shape": (4096, 4096),
        "dtype": "float16",
        "verdict": "SAME",
        "ratio": 1.0,
        "base_us": 100.0,
        "head_us": 100.0,
        **fields,
    }
    return Evidence(
        sweeps=(SweepEvidence(vendor="nvidia", gpu="gpu", shapes=(ShapeLine(**line),)),)
    )


def _results(vendor: str, shard: str, ev: Evidence | None = None) -> str:
    ev = ev or Evidence(sweeps=(sweep(vendor),))
    return ResultsFile(
        head_sha=HEAD, base_sha=BASE, vendor=vendor, shard=shard, evidence=ev
    ).model_dump_json()


def test_exactly_one_file_per_planned_vendor_and_shard(tmp_path):
    (tmp_path / "results-nvidia-1of2.json").write_text(_results("nvidia", "1/2"))
    (tmp_path / "results-nvidia-2of2.json").write_text(_results("nvidia", "2/2"))
    # measured code left a second file for shard 1/2, with numbers of its choosing
    (tmp_path / "results-nvidia-1of2-extra.json").write_text(_results("nvidia", "1/2"))
    (tmp_path / "results-amd-1of1.json").write_text(_results("amd", "1/1"))
    (tmp_path / "results-amd-1of3.json").write_text(_results("amd", "1/3"))
    kept, dropped = read_results(
        sorted(tmp_path.glob("*.json")), head_sha=HEAD, vendors=("nvidia", "amd")
    )
    assert [(r.vendor, r.shard) for r in kept] == [("nvidia", "2/2")]
    reasons = " | ".join(dropped)
    assert "nvidia: more than one results file for shard 1/2; none of them used" in reasons
    assert "amd: results split 1 and 3 ways; none used" in reasons

    kept, dropped = read_results(
        [tmp_path / "results-nvidia-2of2.json", tmp_path / "results-amd-1of1.json"],
        head_sha=HEAD,
        vendors=("nvidia",),
    )
    assert [r.vendor for r in kept] == ["nvidia"]
    assert dropped == ["results-amd-1of1.json: the plan does not measure amd"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (_results("nvidia", "1/1").replace('"ratio":1.0', '"ratio":NaN'), "NaN is not a finite"),
        (
            _results("nvidia", "1/1").replace('"ratio":1.0', '"ratio":Infinity'),
            "Infinity is not a finite",
        ),
        (
            _results("nvidia", "1/1", _sweep_line(base_us=1.0)).replace(
                '"base_us":1.0', '"base_us":-1.0'
            ),
            "greater than 0",
        ),
        (_results("nvidia", "1/1", _sweep_line(ratio=0.05, verdict="FASTER")), "the times give 1"),
        (_results("nvidia", "1/1", _sweep_line(ratio=0.9, head_us=90.0)), None),
        (
            _results("nvidia", "1/1", _sweep_line(ratio=1.2, head_us=120.0, verdict="FASTER")),
            "FASTER with a ratio of 1.2",
        ),
        (_results("nvidia", "1/1", _sweep_line(ci_low=1.1, ci_high=0.9)), "confidence interval"),
        (
            _results("nvidia", "1/1").replace(
                '"shape":[4096,4096]', '"shape":[' + "1" + "0" * 30 + "]"
            ),
            "less than or equal to 9007199254740992",
        ),
        (_results("nvidia", "2/1"), "is not I/N"),
    ],
    ids=[
        "nan",
        "infinity",
        "negative-time",
        "ratio-vs-times",
        "consistent",
        "verdict-vs-ratio",
        "ci",
        "huge-int",
        "shard",
    ],
)
def test_numbers_are_validated(tmp_path, text, reason):
    path = tmp_path / "results-nvidia-1of1.json"
    path.write_text(text)
    kept, dropped = read_results([path], head_sha=HEAD, vendors=("nvidia",))
    if reason is None:
        assert len(kept) == 1 and dropped == []
    else:
        assert kept == [] and len(dropped) == 1 and reason in dropped[0], dropped


def test_a_results_file_an_older_run_wrote_reads_as_the_review_read_it_then(tmp_path):
    """The report reads results written before a failure's kind, the processes' spread and a
    compiler's file were fields of their own: each is read from the words of that time."""
    from bot.contracts.evidence import NotRun
    from bot.review.conditions import Facts, sweep
    from tests.paths import DATA

    older = json.loads(
        (DATA / "device_pr" / "tritonbench-269" / "results-nvidia.json").read_text("utf-8")
    )
    lines = older["evidence"]["sweeps"][0]["shapes"]
    assert not any("failure_kind" in x or "varied_between_processes" in x for x in lines)
    older["evidence"]["not_run"] = [
        {"check": "compiler", "vendor": "amd", "reason": "csrc/a.hip: no hipcc on this machine"}
    ]
    path = tmp_path / "results-nvidia.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    [results], dropped = read_results([path], head_sha=older["head_sha"])
    assert dropped == []
    (s,) = results.evidence.sweeps
    failed = [x for x in s.shapes if x.verdict == "ERROR"]
    assert {x.failure_kind for x in failed} == {"compile error"}
    assert sum(x.varied_between_processes for x in s.shapes) == 5
    assert results.evidence.not_run == (
        NotRun(
            check="compiler", vendor="amd", reason="no hipcc on this machine", path="csrc/a.hip"
        ),
    )
    held = s.model_copy(update={"shapes": tuple(x for x in s.shapes if x.verdict != "SLOWER")})
    facts = Facts(
        changes=(
            ChangeLine(kernel="sum", kind="tuning", old_language="triton", new_language="triton"),
        ),
        req=Requirements(vendors=("nvidia",)),
        ev=Evidence(sweeps=(held,)),
    )
    assert (
        "2 shapes fixed: the base fails there (compile error: CompilationError"
        in sweep(facts).summary
    )
