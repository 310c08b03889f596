"""Compiling ahead (checks.sweep.precompile): real helper processes, real Triton cross-compiles
for sm_90 into a side's Triton cache, without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.sweep.precompile import Precompile, SideJob, compile_jobs
from checks.sweep.shapes import Case
from tests.paths import DATA

KERNELS = DATA / "kernels"


def _case(kernel: str, dims: tuple[int, ...], dtype: str, entry: str | None = None) -> Case:
    bench = entry or f"toykern.bench:{kernel}"
    return Case(kernel=kernel, bench=bench, dims=dims, dtype=dtype, tolerance=0.03)


def _job(side: str, cache: Path, cases: list[Case]) -> SideJob:
    return SideJob(
        side=side,
        label=side,
        root=KERNELS,
        python_path=(),
        python=__import__("sys").executable,
        cache_dir=cache,
        target="sm_90",
        cases=tuple(cases),
    )


def _cubins(cache: Path) -> set[str]:
    return {str(p.relative_to(cache)) for p in cache.rglob("*.cubin")}


@pytest.mark.slow
def test_each_sides_variants_land_in_its_own_cache_and_a_second_pass_finds_them(
    tmp_path: Path,
) -> None:
    """matmul autotunes over two configs: 256^3 and 200^3 are two specializations (200 is not a
    multiple of 16), so four variants; the vector add one more. Each side's cubins go to its own
    cache only; run again, every variant is a cache hit and nothing compiles."""
    cases = [
        _case("matmul", (256, 256, 256), "float16"),
        _case("matmul", (200, 200, 200), "float16"),
        _case("matmul", (256, 256, 256), "float16"),  # the same variants again: counted once
        _case("vector_add", (1000,), "float32"),
        _case("vector_add", (8,), "float32", entry="toykern.bench:no_such_entry"),
    ]
    caches = {side: tmp_path / f"triton-cache-{side}" for side in ("base", "head")}
    jobs = [_job(side, caches[side], cases) for side in ("base", "head")]
    first = Precompile(jobs, processes=2, timeout_s=600).start().finish(wait=True)
    for line, side in zip(first, ("base", "head"), strict=True):
        assert line.startswith(f"compiled ahead ({side}): 5 Triton variants in "), line
        assert "(5 compiled, 0 already in the cache)" in line, line
        assert "1 case could not be recorded off the GPU" in line and "no_such_entry" in line
    assert len(_cubins(caches["base"])) == 5
    assert _cubins(caches["base"]) == _cubins(caches["head"])  # same code, same variants
    again = Precompile(jobs[:1], processes=2, timeout_s=600).start().finish(wait=True)
    assert "(0 compiled, 5 already in the cache)" in again[0], again


def test_helpers_whose_answer_is_no_longer_wanted_are_not_started(tmp_path: Path) -> None:
    """finish() before the helpers got going: nothing is compiled, and the note says why."""
    job = _job("base", tmp_path / "cache", [_case("matmul", (256, 256, 256), "float16")])
    pre = Precompile([job], processes=1, timeout_s=600)
    pre.cancel.set()
    notes = pre.start().finish(wait=False)
    assert notes == [
        "compiling ahead (base): not done: "
        "compiling ahead (base) was stopped: its answer is no longer needed"
    ]
    assert not _cubins(tmp_path / "cache")


def test_compile_jobs_leave_the_workers_their_cores() -> None:
    assert compile_jobs(1, cpus=16) == 4  # 16 cores: 4 workers, 1 for the bot, 4 per side
    assert compile_jobs(1, cpus=8) == 1
    assert compile_jobs(8, cpus=128) == 4
    assert compile_jobs(2, cpus=2) == 1  # never fewer than one


@pytest.mark.slow
@pytest.mark.parametrize("forked", [False, True], ids=["started", "forked from the zygote"])
def test_the_first_cases_variants_are_compiled_before_the_others_are_recorded(
    tmp_path: Path, forked: bool
) -> None:
    """The first case's check comes first, as soon as the workers have the GPU: its variants
    (matmul's two autotuned configs) are in the cache by the time the next case is recorded,
    and the next case's own variant is compiled after. The same from a helper forked from the
    sweep's zygote."""
    from checks.sweep.zygote import start_zygote

    cache = tmp_path / "triton-cache"
    cases = [
        _case("matmul", (256, 256, 256), "float16"),
        _case("vector_add", (1000,), "float32", entry="toykern.bench:vector_add_counting_cubins"),
    ]
    zygote = start_zygote("cuda", tmp_path / "zygote") if forked else None  # no GPU used
    try:
        line = Precompile([_job("base", cache, cases)], processes=2, timeout_s=600, forker=zygote)
        notes = line.start().finish(wait=True)
    finally:
        if zygote is not None:
            zygote.close()
    assert "3 Triton variants" in notes[0] and "(3 compiled, 0 already" in notes[0], notes
    assert (cache / "cubins_seen").read_text(encoding="utf-8") == "2"
    assert len(_cubins(cache)) == 3
