"""The launch record through a real worker on the CPU (Triton's interpreter): a check asked for
it names the Triton kernels its first call launched (through a heuristics wrapper too), each as
often as it ran, says that nothing but Triton's launches is seen on the CPU, and records nothing
when not asked; a sweep keeps each side's record on the case, head's too where base cannot run;
with crossover only the first worker pair of the first execution is asked for it, which checks
each bench entry's first case, and a base failure in a case the other pair checked is still
known to be base's alone; the fixture's review says in one line what the record confirms or
corrects, within its size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.contracts.review import ChangeLine
from bot.review.launched import launch_summary
from checks.bench_entries.launches import CPU_NOTE
from checks.sweep import pair_runner
from checks.sweep.evidence import launch_records, to_evidence
from checks.sweep.run import SweepOptions
from checks.sweep.shapes import Case
from checks.sweep.workers import WorkerClient
from checks.worker import contract
from tests.integration.conftest import Sent
from tests.integration.test_sweep_cpu import FAST, ONE_PASS, QUICK, _standin_sweep
from tests.paths import ROOT
from tests.repo_worker import repo_worker

OPS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 64 else 64})
@triton.jit
def _shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def twice(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device, generator=torch.Generator().manual_seed(seed))
    n = x.numel()

    def fn():
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)
        z = torch.empty_like(y)
        _scale_kernel[(triton.cdiv(n, 64),)](y, z, n, BLOCK=64)
        _shift_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](z, n)
        return z

    return {"fn": fn, "reference": lambda: 4 * x + 1, "inputs": [x]}


def torch_only(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device)
    return {"fn": lambda: x * 2, "reference": lambda: x + x, "inputs": [x]}
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    with repo_worker(tmp_path_factory.mktemp("launch-record"), {"ops.py": OPS}) as worker:
        yield worker


def _check(
    client: WorkerClient, entry: str, launches: contract.Recorder | None = "profiler"
) -> contract.CheckReply:
    return client.check([entry], (100,), "float32", seed=3, launches=launches)


def test_a_check_names_the_triton_kernels_one_call_launched_and_how_often(
    client: WorkerClient,
) -> None:
    got = _check(client, "ops:twice")
    assert got.correct
    assert got.launched is not None
    # the first call's launches (on the CPU: no call more, the interpreter's are slow)
    assert [(k.name, k.triton, k.count) for k in got.launched.kernels] == [
        ("_scale_kernel", True, 2),
        ("_shift_kernel", True, 1),
    ]
    assert not got.launched.profiler and got.launched.note == CPU_NOTE
    assert "launches" not in got.steps_s  # no call more: nothing to time
    # the record changes nothing of the check: one without it finds the same outputs
    assert _check(client, "ops:twice", launches=None).digest == got.digest


def test_a_call_without_triton_records_no_kernel_and_says_what_the_cpu_cannot_see(
    client: WorkerClient,
) -> None:
    got = _check(client, "ops:torch_only")
    assert got.launched == contract.Launched(kernels=(), profiler=False, note=CPU_NOTE)


def test_nothing_is_recorded_unless_asked(client: WorkerClient) -> None:
    got = _check(client, "ops:twice", launches=None)
    assert got.launched is None


# ------------------------------------------------------- the fixture's review with a record

RECORDED = ROOT / "bench" / "results" / "h200" / "fixture_review" / "results-nvidia.json"
# the fixture's own kernels on each side (kernels_fixture/toyops: the C++ kernels sit in an
# anonymous namespace, which the record leaves out of their names), with torch's fill kernel
# beside them: a record as the H200's measure job would write it, not one it wrote
FIXTURE_RAN = {
    ("vector_add", "base"): [("vector_add_kernel", "native")],
    ("vector_add", "head"): [("vector_add_kernel", "triton")],
    ("softmax", "base"): [("softmax_row_kernel", "native"), ("softmax_wide_row_kernel", "native")],
    ("softmax", "head"): [("softmax_kernel", "triton")],
    ("matmul", "base"): [("matmul_kernel", "triton"), ("at::native::vectorized_elementwise_kernel", "library")],
    ("matmul", "head"): [("matmul_kernel", "triton"), ("at::native::vectorized_elementwise_kernel", "library")],
}  # fmt: skip


def _with_record(tmp_path: Path, ran: dict[tuple[str, str], list[tuple[str, str]]]) -> Path:
    data = json.loads(RECORDED.read_text())
    data["evidence"]["sweeps"][0]["launches"] = [
        {
            "kernel": kernel,
            "side": side,
            "cases": 4,
            "kernels": [{"name": n, "origin": o, "cases": 4} for n, o in names],
            "profiler": True,
        }
        for (kernel, side), names in ran.items()
    ]
    path = tmp_path / "results-nvidia.json"
    path.write_text(json.dumps(data))
    return path


def test_the_fixtures_review_says_what_ran_in_one_line_and_keeps_to_its_size(
    tmp_path: Path, capsys
) -> None:
    results = str(_with_record(tmp_path, FIXTURE_RAN))
    assert main(["demo", "--no-compile", "--results", results, "--out", "-"]) == 0
    comment = capsys.readouterr().out
    said = [line for line in comment.splitlines() if line.startswith("**What ran**")]
    assert said == [
        "**What ran** (launch record) confirms vector\\_add, softmax, matmul: what changed "
        "rests on both."
    ]
    assert len(comment.encode()) <= 10 * 1024  # the comment's budget (tests/unit/test_chart.py)
    assert main(["demo", "--no-compile", "--results", results, "--full", "--out", "-"]) == 0
    summary = capsys.readouterr().out
    assert (
        "- **softmax** (nvidia, 4 cases recorded): base ran CUDA `softmax_row_kernel` and "
        "`softmax_wide_row_kernel`; head ran Triton `softmax_kernel`. Confirms the analysis's "
        "rewrite: base's CUDA `softmax_row_kernel` and `softmax_wide_row_kernel` replaced by "
        "head's Triton `softmax_kernel`."
    ) in summary


def test_the_fixtures_review_says_when_head_still_runs_the_kept_cuda_softmax(
    tmp_path: Path, capsys
) -> None:
    """TOYOPS_SOFTMAX_IMPL=cuda set on the runner: head's bench entry runs the kept kernel."""
    ran = {**FIXTURE_RAN, ("softmax", "head"): [("softmax_row_kernel", "native")]}
    results = str(_with_record(tmp_path, ran))
    assert main(["demo", "--no-compile", "--results", results, "--out", "-"]) == 0
    comment = capsys.readouterr().out
    [said] = [line for line in comment.splitlines() if line.startswith("**What ran**")]
    assert said.startswith(
        "**What ran** (launch record) corrects softmax: head never ran `softmax_kernel`, which "
        "it names; confirms vector\\_add, matmul: what changed rests on what ran."
    )


# ------------------------------------------------------------ a sweep carries the record

BASE_OPS = """\
import torch


def twice(shape, dtype, *, device="cpu", seed=0):
    x = torch.rand(shape, device=device, generator=torch.Generator().manual_seed(seed))
    return {"fn": lambda: 4 * x + 1, "reference": lambda: 4 * x + 1, "inputs": [x]}
"""


def test_a_sweep_records_each_side_once_and_keeps_heads_record_where_base_failed(
    tmp_path: Path,
) -> None:
    """Base computes in torch, head in Triton (a rewrite as the CPU can run it): each side's
    record is in the case, the review reads head's Triton kernels as new; a case base cannot
    run (no such entry at base) keeps head's record."""
    for side, text in (("base", BASE_OPS), ("head", OPS)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "ops.py").write_text(text)
    cases = [
        Case(kernel="twice", bench="ops:twice", dims=(100,), dtype="float32", tolerance=0.5),
        Case(kernel="torch_only", bench="ops:torch_only", dims=(100,), dtype="float32",
             tolerance=0.5),
    ]  # fmt: skip
    options = SweepOptions(device="cpu", protocol=ONE_PASS, timeouts=FAST)
    result = _standin_sweep(cases, options, tmp_path / "work", checkouts=tmp_path)
    ok, missing = result.cases
    assert ok.status == "ok" and missing.status == "missing_entry"
    assert ok.base_launches is not None and ok.base_launches.kernels == ()
    assert ok.head_launches is not None
    assert [k.name for k in ok.head_launches.kernels] == ["_scale_kernel", "_shift_kernel"]
    assert missing.base_launches is None and missing.head_launches is not None
    evidence = to_evidence(result, vendor="nvidia")
    new = ChangeLine(kernel="twice", kind="new", new_language="Triton",
                     new_functions=("_scale_kernel", "_shift_kernel"))  # fmt: skip
    # torch_only: no change named, nothing differing that ran: nothing to say of it
    assert launch_summary([new], [evidence]) == (
        "**What ran** (launch record) confirms twice: what changed rests on both."
    )


GROWS = """

def grows(shape, dtype, *, device="cpu", seed=0):
    import torch

    if BASE and shape[0] > 150:
        raise ValueError(f"base cannot take {shape[0]} elements")
    x = torch.rand(shape, device=device, generator=torch.Generator().manual_seed(seed))
    return {"fn": lambda: x + 1, "reference": lambda: x + 1, "inputs": [x]}
"""


def test_with_crossover_only_the_first_pair_records_and_every_case_has_its_record(
    tmp_path: Path, calls: list[Sent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two passes, two worker pairs. The draw of which pair checks a case beside the last one's
    recheck is fixed to the second pair (the first may not record), yet in the first execution
    the first pair checks every case: each case has its record (what a call launched, its
    atomics and its allocations can differ by shape). The second pair's checks, in the second
    execution alone, record nothing, and base failing at ``grows`` 200 while head runs is
    still base's failure: the head fixes that shape."""
    for side, text in (("base", BASE_OPS), ("head", OPS)):
        (tmp_path / side).mkdir()
        flag = f"\nBASE = {side == 'base'}\n"
        (tmp_path / side / "ops.py").write_text(text + flag + GROWS)
    monkeypatch.setattr(pair_runner.secrets, "randbelow", lambda n: n - 1)
    cases = [
        Case(kernel=k, bench=f"ops:{k}", dims=(n,), dtype="float32", tolerance=10.0)
        for k, n in (("twice", 100), ("twice", 120), ("grows", 100), ("grows", 200))
    ]
    protocol = QUICK.model_copy(
        update={"crossover": True, "min_executions": 2, "max_executions": 2}
    )
    options = SweepOptions(device="cpu", protocol=protocol, timeouts=FAST)
    result = _standin_sweep(cases, options, tmp_path / "work", checkouts=tmp_path)
    assert [c.status for c in result.cases] == ["ok", "ok", "ok", "error"], [
        c.message for c in result.cases
    ]
    checks = [(name, bool(a.launches)) for name, op, a in calls if op is contract.Check]
    # asked: the first pair (base, head) in the first execution, never another worker
    assert {name for name, asked in checks if asked} == {"base", "head"}
    assert {name for name, asked in checks if not asked} == {
        "base-e1", "head-e1", "base-x-e1", "head-x-e1"
    }  # fmt: skip
    recorded = [(c.base_launches is not None, c.head_launches is not None) for c in result.cases]
    assert recorded == [(True, True), (True, True), (True, True), (False, True)]
    assert [c.checked for c in result.cases] == [("base", "head")] * 3 + [("head",)]
    records = {(r.kernel, r.side): r for r in launch_records(result)}
    assert {k: r.cases for k, r in records.items()} == {
        ("twice", "base"): 2, ("twice", "head"): 2, ("grows", "base"): 1, ("grows", "head"): 2
    }  # fmt: skip
    assert [k.name for k in records["twice", "head"].kernels] == ["_scale_kernel", "_shift_kernel"]
    failed = result.cases[3]
    assert failed.failed_side == "base" and failed.head_launches is not None
    assert "base cannot take 200 elements" in failed.message
    [*_, line] = to_evidence(result, vendor="nvidia").shapes
    assert line.failed_side == "base" and line.fixed
