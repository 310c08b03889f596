"""The helper jobs' files (``checks/job_files.py``): every job and every answer through
its file and back, what a file that does not fit is refused with, and each helper program
reading the job class that names it (read from its source, not run)."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re
import sys
from typing import Any

import pytest

from checks import job_files as j
from checks.first_call.measure import ShapeFirstCall
from checks.worker.contract import ContractError
from tests.paths import ROOT

SPEC = j.KernelSpec("softmax", "kernels.softmax:bench", ((1823, 781), (4096, 1024)),
                    ("float16", "float32"), python_path=("src",))  # fmt: skip

# one of each job, every field set somewhere
JOBS: list[j.Job[Any]] = [
    j.CompileAhead(
        repo_root="/w/head",
        python_path=("src", "lib"),
        target="sm_90a",
        jobs=3,
        cases=(
            j.AheadCase(("bench.mm:bench", "mm:bench"), (4096, 4096, 512), "bfloat16"),
            j.AheadCase(("bench.mm:bench",), (7,), "float32"),
        ),
    ),
    j.CompileAhead("/w/base", (), "gfx942", 1, ()),
    j.CompilerReportJob("/w/head", "sm_80", "/c/kr", 4, (SPEC, j.KernelSpec("n", "m:f", (), ()))),
    j.FirstCallProbe(
        repo_root="/w/head",
        bench=SPEC.bench,
        shapes=SPEC.shapes,
        dtypes=SPEC.dtypes,
        mode="compile-only",
        target="sm_90",
        device="cpu",
        cache_root="/t/caches/softmax",
        python_path=("src",),
        prime=True,
        distribution=False,
        spawned_at=1_765_000_000.25,
    ),
    j.FirstCallProbe("/w", "m:f", ((1,),), ("float16",), "gpu", "sm_90", "cuda:0", "/t/c"),
    j.ProfileRun("/w/base", "m:f", (64, 64), "float16", "roctx", ("src",)),
    j.ProfileRun("/w/head", "m:f", (1,), "float32", "cuda"),
]

SHAPE = j.ProbeShape(
    shape="1823x781:float16",
    first_call_ms=812.5,
    second_call_ms=0.04,
    compiles=2,
    cache_hits=1,
    compile_ms=640.25,
    compiled=(("a1b2c3", 400.0), ("d4e5f6", 240.25)),
    modules=(("cuda_utils", 95.0),),
    stage_ms={"ttir": 12.5, "ptx": 300.0, "cubin": 210.0},
    autotune_ms=math.inf,  # not finite: travels as its name
    autotune_keys=("softmax_kernel(781,)",),
    configs_picked=("softmax_kernel: BLOCK=1024, num_warps=4",),
)

# one or more answers to each job, every field of each filled somewhere
ANSWERS: list[tuple[type[j.Job[Any]], Any]] = [
    (j.CompileAhead, j.AheadAnswer(
        variants=12, compiled=9, cache_hits=3, compile_errors=("mm_kernel: out of resources",),
        launcher_errors=("cuda_utils: no gcc",), case_errors=("7:float32: KeyError: 'fn'",),
        cases_failed=1, first_case_s=0.52, record_s=1.9, seconds=14.25)),
    (j.CompileAhead, j.AheadAnswer(0, 0, 0, (), (), (), 0, 0.0, 0.0, 0.0)),
    (j.CompilerReportJob, j.CompilerReportAnswer(
        triton_version="3.6.0", target="sm_80",
        records=({"kernel": "softmax", "function": "softmax_kernel", "n_regs": 32,
                  "config": {"BLOCK": 1024}, "shapes": ["1823x781:float16"], "cached": False},),
        autotune=({"kernel": "softmax", "targets": ["sm_80"], "configs": []},),
        compiled=1, cached=0, wall_s=3.5, record_s=1.25)),
    (j.FirstCallProbe, j.ProbeAnswer(
        python_start_ms=35.0, probe_overhead_ms=4.0, import_torch_ms=1200.0,
        import_triton_ms=150.0, import_entry_ms=20.0, context_ms=310.0, triton_setup_ms=80.0,
        device="NVIDIA H200", standalone=(SHAPE, j.ProbeShape("7:float16", error="ValueError: x")),
        distribution=(dataclasses.replace(SHAPE, autotune_ms=None),))),
    (j.FirstCallProbe, j.ProbeAnswer(35.0, 4.0, 1200.0, 150.0)),  # a priming job's
    (j.ProfileRun, j.Profiled()),
]  # fmt: skip


@pytest.mark.parametrize("job", JOBS, ids=lambda job: type(job).__name__)
def test_every_job_comes_back_from_its_file(job: j.Job[Any]) -> None:
    text = j.job_text(job, "/w/out.json")
    assert j.read_job(type(job), text) == job
    assert j.answer_path(text) == "/w/out.json"
    data = json.loads(text)
    assert (data["version"], data["job"]) == (j.VERSION, job.MODULE)


@pytest.mark.parametrize(("cls", "answer"), ANSWERS, ids=lambda x: getattr(x, "__name__", ""))
def test_every_answer_comes_back_from_its_file(cls: type[j.Job[Any]], answer: Any) -> None:
    text = j.answer_text(cls, answer)
    assert j.read_answer(cls, text) == answer
    assert json.loads(text)["version"] == j.VERSION


def test_a_failure_comes_back_from_its_file_for_any_job() -> None:
    for failure in (j.JobFailure("compiling for sm_90 took longer than 600 s"),
                    j.JobFailure("ValueError: x", "Traceback (most recent call last):\n...")):  # fmt: skip
        for cls in (j.CompileAhead, j.CompilerReportJob, j.FirstCallProbe, j.ProfileRun):
            assert j.read_answer(cls, j.answer_text(cls, failure)) == failure


def test_a_probe_shape_is_what_the_first_call_report_reads_it_into() -> None:
    """``ShapeFirstCall`` has the probe's fields and its own ``standalone_ms``, no other."""
    fields = {f.name for f in dataclasses.fields(j.ProbeShape)}
    assert set(ShapeFirstCall.model_fields) == fields | {"standalone_ms"}
    read = ShapeFirstCall.model_validate(dataclasses.asdict(SHAPE))
    assert read.compiled == SHAPE.compiled and read.stage_ms == SHAPE.stage_ms


def _job_file(**changes: Any) -> str:
    data = json.loads(j.job_text(JOBS[2], "/w/out.json"))
    return json.dumps({**data, **changes})


def _fields(**changes: Any) -> str:
    fields = {**json.loads(_job_file())["fields"], **changes}
    return _job_file(fields=fields)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "the job file that is not JSON: Expecting property name"),
        ("[1, 2]", "the job file must be a JSON object, got list"),
        (_job_file(version=0), "the job file is version 0 of the helper jobs' files, this side "
                               "reads 1: it was written by another kernel-review install"),
        (json.dumps({"job": "checks.compiler.worker"}), "the job file is version None"),
        (_job_file(job="checks.first_call.probe"),
         "the job file is for 'checks.first_call.probe', not for checks.compiler.worker"),
        (_job_file(extra=1), "the job file: no field extra in the contract"),
        (_fields(jobs="4"), "the job of checks.compiler.worker.jobs: expected int, got '4'"),
        (_fields(jobs=True), "the job of checks.compiler.worker.jobs: expected int, got True"),
        (_fields(cache_dir=None), "checks.compiler.worker.cache_dir: expected str, got None"),
        (_fields(kernels=[{"name": "a", "bench": "m:f", "shapes": [[4, "x"]], "dtypes": []}]),
         "kernels[0].shapes[0][1]: expected int, got 'x'"),
        (_fields(kernels=[{"name": "a", "bench": "m:f", "dtypes": []}]),
         "the job of checks.compiler.worker.kernels[0]: shapes is missing"),
        (_fields(target=None, triton="3.6"), "the job of checks.compiler.worker: no field triton"),
    ],
)  # fmt: skip
def test_a_job_file_that_does_not_fit_is_refused_with_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ContractError, match=re.escape(says)):
        j.read_job(j.CompilerReportJob, text)


def test_a_job_whose_field_does_not_fit_is_not_written() -> None:
    bad = dataclasses.replace(JOBS[3], mode="interpret")  # type: ignore[arg-type]
    with pytest.raises(ContractError, match=r"checks.first_call.probe.mode: expected one of "
                                            r"\['gpu', 'compile-only'\], got 'interpret'"):  # fmt: skip
        j.job_text(bad, "/w/out.json")
    with pytest.raises(ContractError, match="no field out in the contract"):
        j.read_job(j.CompilerReportJob, _fields(out="/w/out.json"))  # the old form's key
    with pytest.raises(ContractError, match="the job file: out is missing"):
        j.answer_path(json.dumps({"version": j.VERSION, "job": "x", "fields": {}}))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"version": 1}, "must hold either an answer or a failure"),
        ({"version": 1, "answer": {}, "failure": {"fatal": "x"}}, "either an answer or a failure"),
        ({"version": 2, "answer": {}}, "the answer of checks.sweep.precompile_job is version 2"),
        ({"fatal": "x"}, "the answer of checks.sweep.precompile_job is version None"),
        ({"version": 1, "failure": {"traceback": "..."}}, "failure: fatal is missing"),
        ({"version": 1, "answer": {"variants": 1}}, "precompile_job: compiled is missing"),
        ({"version": 1, "answer": {**json.loads(j.answer_text(*ANSWERS[1]))["answer"],
                                   "compile_errors": "x"}},
         "precompile_job.compile_errors: expected a list, got 'x'"),
        ({"version": 1, "answer": {**json.loads(j.answer_text(*ANSWERS[1]))["answer"],
                                   "wall_s": 1.0}},
         "precompile_job: no field wall_s in the contract"),
    ],
)  # fmt: skip
def test_an_answer_file_that_does_not_fit_is_refused_with_what_is_wrong(
    data: dict[str, Any], says: str
) -> None:
    with pytest.raises(ContractError, match=re.escape(says)):
        j.read_answer(j.CompileAhead, json.dumps(data))


def test_an_answer_of_another_class_is_not_written() -> None:
    wrong = "the answer of checks.first_call.probe: expected a ProbeAnswer, got AheadAnswer"
    with pytest.raises(ContractError, match=re.escape(wrong)):
        j.answer_text(j.FirstCallProbe, ANSWERS[0][1])
    with pytest.raises(ContractError, match=r"import_torch_ms: expected a number, got '1\.2 s'"):
        j.answer_text(j.FirstCallProbe, j.ProbeAnswer(1.0, 1.0, "1.2 s", 1.0))  # type: ignore[arg-type]


# ------------------------------------------------------- the helper programs against their jobs


HELPERS = {
    cls.MODULE: cls for cls in (j.CompileAhead, j.CompilerReportJob, j.FirstCallProbe, j.ProfileRun)
}


@pytest.mark.parametrize("module", sorted(HELPERS))
def test_each_helper_program_reads_the_job_that_names_it(module: str) -> None:
    """Its ``__main__`` hands ``job_child`` the job class whose MODULE is this program, and its
    run function takes that job and returns that job's answer (read from the source)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    handed = [
        node.args[1].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("main", "run_and_exit") and len(node.args) == 3
        and isinstance(node.args[1], ast.Name)
    ]  # fmt: skip
    cls = HELPERS[module]
    assert handed == [cls.__name__], (path, handed)
    run_name = next(
        node.args[2].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("main", "run_and_exit") and len(node.args) == 3
    )  # fmt: skip
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == run_name)
    assert ast.unparse(run.args.args[0].annotation) == cls.__name__
    assert run.returns is not None and ast.unparse(run.returns) == cls.ANSWER.__name__


def test_the_files_module_imports_only_the_standard_library_and_the_contract() -> None:
    tree = ast.parse((ROOT / "checks/job_files.py").read_text())
    imported = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    others = {m for m in imported if m and m.split(".")[0] not in sys.stdlib_module_names}
    assert others - {"__future__"} == {"checks.worker.contract"}, others
