"""First-call cost: the judgement on hand-made runs, and real fresh processes (compile-only
on the CPU here; on the GPU where there is one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checks.compiler.run import KernelSpec
from checks.first_call.measure import (
    FirstCallRun,
    ShapeFirstCall,
    derive_distribution,
    judge,
    measure_first_call,
)
from tests.cxx_standin import write_ext_repo
from tests.paths import DATA

KERNELS = DATA / "kernels"


def _run(cache: str, firsts: dict[str, float], keys: dict[str, tuple[str, ...]] | None = None):
    keys = keys or {}
    shapes = tuple(
        ShapeFirstCall(
            shape=s,
            first_call_ms=ms,
            standalone_ms=1000.0 + ms,
            compiles=2,
            autotune_keys=keys.get(s, ()),
            autotune_ms=100.0 if keys.get(s) else None,
        )
        for s, ms in firsts.items()
    )
    return FirstCallRun(
        cache=cache,
        mode="gpu",
        device="NVIDIA H200",
        import_torch_ms=900.0,
        import_triton_ms=60.0,
        import_entry_ms=20.0,
        context_ms=20.0,
        standalone=shapes,
        distribution=shapes,
    )


def test_long_lived_only_reports():
    cold = _run("cold", {"1x4096:float16": 5000.0})
    rep = judge("m", cold, None, mode="gpu", deployment_kind="long-lived", budget_ms=None)
    assert rep.verdict == "report-only"
    assert rep.over_budget_shapes == ()
    assert rep.cold_first_call_ms == 6000.0


def test_cli_budget_names_the_shapes_that_blow_it():
    keys = {"a": ("k(1,)",), "b": ("k(2,)",), "c": ("k(1,)",)}
    cold = _run("cold", {"a": 2500.0, "b": 1500.0, "c": 200.0}, keys)
    warm = _run("warm", {"a": 400.0, "b": 2300.0, "c": 10.0}, keys)
    rep = judge("m", cold, warm, mode="gpu", deployment_kind="cli", budget_ms=3000.0)
    assert rep.verdict == "over-budget"
    assert rep.over_budget_shapes == ("a",)  # 1000 fixed + 2500 > 3000
    assert rep.warm_over_budget_shapes == ("b",)  # autotuning is paid again in every process
    assert rep.distinct_autotune_keys == 2
    assert rep.distinct_compiles == 6
    assert rep.cold_total_ms == pytest.approx(1000.0 + 4200.0)
    assert rep.autotune_ms_total == 300.0


def test_within_budget():
    cold = _run("cold", {"a": 100.0})
    rep = judge("m", cold, cold, mode="gpu", deployment_kind="serverless", budget_ms=3000.0)
    assert rep.verdict == "within-budget"


def test_a_failed_probe_is_not_measured():
    cold = FirstCallRun(cache="cold", mode="gpu", device="x", error="CUDA error: no device")
    rep = judge("m", cold, None, mode="gpu", deployment_kind="cli", budget_ms=10.0)
    assert rep.verdict == "not-measured"
    assert "no device" in rep.notes[0]


def _compile_only_matmul(tmp_path: Path, **kw: Any):
    """The toy matmul's first call compiled for sm_90: two autotune configs; 200 is not a
    multiple of 16, so it is a specialization of its own, and the third shape repeats the first."""
    spec = KernelSpec(
        name="matmul",
        bench="toykern.bench:matmul",
        shapes=((256, 256, 256), (200, 200, 200), (256, 256, 256)),
        dtypes=("float16",),
    )
    return measure_first_call(
        KERNELS,
        spec,
        mode="compile-only",
        deployment_kind="cli",
        budget_ms=60_000.0,
        target="sm_90",
        workdir=tmp_path,
        **kw,
    )


@pytest.mark.slow
def test_compile_only_cold_then_warm(tmp_path: Path):
    rep = _compile_only_matmul(tmp_path)
    assert rep.verdict == "within-budget", rep.notes
    cold, warm = rep.cold, rep.warm
    assert cold.import_torch_ms > 0 and cold.import_entry_ms > 0 and cold.context_ms == 0
    # standalone: every shape compiles both autotune configs in an empty cache (the process that
    # read torch's files first used a cache of its own, and left this one empty)
    assert [s.compiles for s in cold.standalone] == [2, 2, 2]
    assert all(s.cache_hits == 0 and "cubin" in s.stage_ms for s in cold.standalone)
    # warm: the same directories answer, nothing is compiled
    assert [s.compiles for s in warm.standalone] == [0, 0, 0]
    assert all(s.cache_hits == 2 and "cache_lookup" in s.stage_ms for s in warm.standalone)
    assert warm.standalone[1].first_call_ms < cold.standalone[1].first_call_ms
    assert warm.distribution == ()  # serving the distribution once is the cold run's to tell
    # serving the distribution once: 200 is not a multiple of 16, so it is a new specialization
    # (and a new autotune key); the repeated shape reuses what the first one compiled
    assert [s.compiles for s in cold.distribution] == [2, 2, 0]
    assert rep.distinct_autotune_keys == 2 and rep.distinct_compiles == 4
    assert rep.cold_total_ms > cold.fixed_ms
    assert rep.mode == "compile-only" and rep.target == "sm_90"
    # the same runs against a budget no cold start can meet
    tight = judge(
        "matmul", cold, warm, mode="compile-only", deployment_kind="latency-slo", budget_ms=1.0
    )
    assert tight.verdict == "over-budget"
    assert tight.over_budget_shapes == tuple(s.shape for s in cold.standalone)


@pytest.mark.slow
def test_the_derived_distribution_compiles_what_a_measured_one_does(tmp_path: Path):
    """Serving every shape once, timed as a pass of its own, against the same derived from the
    shapes' own first calls: the same variants compiled at the same shapes, the same keys."""
    rep = _compile_only_matmul(tmp_path, distribution="measured")
    cold = rep.cold
    assert not cold.distribution_derived and not rep.cold_total_derived
    derived = derive_distribution(cold.standalone)
    assert [s.compiles for s in cold.distribution] == [s.compiles for s in derived] == [2, 2, 0]
    assert [{h for h, _ in s.compiled} for s in cold.distribution] == [
        {h for h, _ in s.compiled} for s in derived
    ]
    assert all(len(h) == 64 for s in derived for h, _ in s.compiled)  # Triton's sha256 hashes
    assert [s.autotune_keys for s in cold.distribution] == [s.autotune_keys for s in derived]
    # the repeated shape pays none of its compiles again
    assert derived[2].first_call_ms < cold.standalone[2].first_call_ms
    assert derived[2].compile_ms == 0.0


def test_deriving_the_distribution_pays_each_compile_launcher_and_key_once():
    def shape(name, first, second, compiled, modules, keys, tune):
        return ShapeFirstCall(
            shape=name,
            first_call_ms=first,
            second_call_ms=second,
            compiled=compiled,
            compiles=len(compiled),
            modules=modules,
            autotune_keys=keys,
            autotune_ms=tune,
            configs_picked=("k: BLOCK=64",) if keys else (),
        )

    a = shape("a", 900.0, 1.0, (("h1", 300.0), ("h2", 300.0)), (("l1", 200.0),), ("k(1)",), 850.0)
    # a new key, one variant shared with a, the same launcher
    b = shape("b", 950.0, 1.0, (("h1", 300.0), ("h3", 300.0)), (("l1", 200.0),), ("k(2)",), 900.0)
    # a's key again: a process that served a runs the kept config at once
    c = shape("c", 880.0, 2.0, (("h1", 300.0), ("h2", 300.0)), (("l1", 200.0),), ("k(1)",), 840.0)
    plain = shape("d", 50.0, 0.5, (("h9", 40.0),), (), (), None)  # no autotuner
    failed = ShapeFirstCall(shape="e", error="RuntimeError: boom")
    da, db, dc, dd, de = derive_distribution((a, b, c, plain, failed))
    assert (da.first_call_ms, da.autotune_ms, da.compiles) == (900.0, 850.0, 2)
    assert (db.first_call_ms, db.autotune_ms, db.compiles) == (450.0, 400.0, 1)
    assert db.compiled == (("h3", 300.0),) and db.compile_ms == 300.0
    assert (dc.first_call_ms, dc.autotune_ms, dc.compiles, dc.autotune_keys) == (
        2.0,
        None,
        0,
        ("k(1)",),
    )
    assert (dd.first_call_ms, dd.compiles) == (50.0, 1)
    assert de.error and de.first_call_ms is None
    assert all(s.configs_picked == () and s.standalone_ms is None for s in (da, db, dc, dd))


@pytest.mark.slow
def test_a_priming_job_only_imports(tmp_path: Path):
    from checks.first_call.probe import run_job
    from checks.job_files import FirstCallProbe

    job = FirstCallProbe(
        repo_root=str(KERNELS),
        bench="toykern.bench:no_such_entry",  # never imported: priming stops before it
        shapes=((1,),),
        dtypes=("float16",),
        mode="compile-only",
        target="sm_90",
        device="cpu",
        cache_root=str(tmp_path / "prime"),
        prime=True,
    )
    out = run_job(job)
    assert out.import_torch_ms > 0 and out.import_triton_ms >= 0
    assert out.standalone == () and out.distribution is None and out.import_entry_ms is None
    assert not (tmp_path / "prime").exists()


def test_broken_entry_point_is_reported(tmp_path: Path):
    spec = KernelSpec(name="x", bench="toykern.bench:missing", shapes=((8,),), dtypes=("float32",))
    steps: list[str] = []
    rep = measure_first_call(
        KERNELS,
        spec,
        mode="compile-only",
        deployment_kind="cli",
        budget_ms=10.0,
        workdir=tmp_path,
        progress=steps.append,
        prime=False,  # a caller that primed this interpreter already: no third process
    )
    assert rep.verdict == "not-measured"
    assert any("missing" in n for n in rep.notes)
    assert [s.split(" run")[0] for s in steps] == ["x: cold", "x: warm"]


@pytest.mark.gpu
def test_gpu_first_call_autotunes_once_per_key(tmp_path: Path):
    spec = KernelSpec(
        name="matmul",
        bench="toykern.bench:matmul",
        shapes=((512, 512, 512), (1024, 1024, 1024), (512, 512, 512)),
        dtypes=("float16",),
    )
    rep = measure_first_call(
        KERNELS, spec, mode="gpu", deployment_kind="cli", budget_ms=3000.0, workdir=tmp_path
    )
    cold = rep.cold
    assert cold.context_ms > 0
    assert all(s.autotune_ms and s.autotune_ms > 0 for s in cold.standalone)
    assert [bool(s.autotune_ms) for s in cold.distribution] == [True, True, False]
    assert rep.distinct_autotune_keys == 2
    assert all(s.cache_hits > 0 and s.compiles == 0 for s in rep.warm.standalone)


def test_evidence_for_the_review():
    from checks.first_call.measure import first_call_evidence

    keys = {"a": ("k(1,)",)}
    cold = _run("cold", {"a": 2500.0, "b": 100.0}, keys)
    rep = judge("m", cold, cold, mode="gpu", deployment_kind="cli", budget_ms=3000.0)
    ev = first_call_evidence(rep, "nvidia")
    assert (ev.kernel, ev.vendor, ev.compile_only) == ("m", "nvidia", False)
    assert (ev.cold_ms, ev.distinct_keys, ev.over_budget_shapes) == (3500.0, 1, ("a",))
    assert "over budget even warm: a" in ev.detail


@pytest.mark.slow
def test_a_cold_first_call_builds_cxx_extensions_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point whose kernel is a C++ extension built on first use: the cold run builds it
    in the probe's own folder (emptied for cold), not in the runner's shared one, which may hold
    a build from long ago; the warm run finds that build and does not redo it."""
    repo = write_ext_repo(tmp_path / "repo", 3)
    runner_wide = tmp_path / "runner-wide"
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(runner_wide))
    spec = KernelSpec(name="ext", bench="extbench:entry", shapes=((1,),), dtypes=("float32",))
    work = tmp_path / "work"
    rep = measure_first_call(
        repo, spec, mode="compile-only", deployment_kind="cli", budget_ms=None, workdir=work
    )
    assert rep.cold.error is None and rep.warm.error is None, (rep.cold.error, rep.warm.error)
    built = list((work / "ext" / "torch-extensions").glob("same_name_ext/*.so"))
    assert len(built) == 1 and not runner_wide.exists()
    log = (work / "ext" / "torch-extensions" / "same_name_ext" / ".ninja_log").read_text()
    # one build, by the cold run: the warm run found everything up to date
    assert log.count("ext.o") == 1, log
