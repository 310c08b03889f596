"""The first-call check's autotune picks: each fresh process's autotuning of a served shape is a
reading; where they disagree, the review says at which shapes. Checked on the fixture matmul's
recorded H200 runs (bench/results/h200/compiler_first_call_matmul/results.json, 2026-11-29:
three autotunings per shape, two shapes picked differently) and on its non-autotuned kernels."""

from __future__ import annotations

import json

from checks.first_call.measure import (
    FirstCallRun,
    ShapeFirstCall,
    autotune_picks,
    first_call_evidence,
    judge,
    unstable_picks,
)
from tests.paths import ROOT

RECORDED = ROOT / "bench" / "results" / "h200"


def _recorded(folder: str) -> dict[str, tuple[FirstCallRun, FirstCallRun]]:
    data = json.loads((RECORDED / folder / "results.json").read_text())
    return {
        fc["kernel"]: (
            FirstCallRun.model_validate(fc["cold"]),
            FirstCallRun.model_validate(fc["warm"]),
        )
        for fc in data["first_call"]
    }


def _judged(kernel: str, cold: FirstCallRun, warm: FirstCallRun):
    return judge(kernel, cold, warm, mode="gpu", deployment_kind="cli", budget_ms=3000.0)


def test_the_recorded_matmul_picks_differ_at_its_two_1000_cubed_shapes() -> None:
    cold, warm = _recorded("compiler_first_call_matmul")["matmul"]
    rep = _judged("matmul", cold, warm)
    assert len(rep.autotune_picks) == 10
    # the warm process was recorded with its distribution pass too: four autotunings a shape
    assert {len(p) for p in rep.autotune_picks.values()} == {4}
    unstable = unstable_picks(rep.autotune_picks)
    assert sorted(unstable) == ["1000x1000x1000:bfloat16", "1000x1000x1000:float16"]
    assert len(unstable["1000x1000x1000:bfloat16"]) == 3
    assert all("BLOCK_SIZE_M" in c for c in unstable["1000x1000x1000:bfloat16"])
    ev = first_call_evidence(rep, "nvidia")
    detail = ev.detail
    # and as data, for the review to set beside the config the sweep timed at those shapes
    assert [(p.shape, len(p.configs), p.autotunings) for p in ev.unstable_picks] == [
        ("1000x1000x1000:bfloat16", 3, 4),
        ("1000x1000x1000:float16", 3, 4),
    ]
    assert "picked differently between autotunings at 2 of 10 shapes" in detail
    assert "1000x1000x1000:bfloat16: 3 configs in 4" in detail
    assert "4096x4096x4096" not in detail.split("picked differently")[1]


def test_kernels_that_do_not_autotune_make_no_claim() -> None:
    for kernel, (cold, warm) in _recorded("compiler_first_call").items():
        rep = _judged(kernel, cold, warm)
        assert rep.autotune_picks == {}, kernel
        assert "picked differently" not in first_call_evidence(rep, "nvidia").detail


def _run(cache: str, *picks: tuple[str, str]) -> FirstCallRun:
    shapes = tuple(
        ShapeFirstCall(shape=shape, first_call_ms=5.0, configs_picked=(pick,) if pick else ())
        for shape, pick in picks
    )
    return FirstCallRun(cache=cache, mode="gpu", device="cuda", standalone=shapes)  # type: ignore[arg-type]


def test_one_autotuning_or_the_same_pick_everywhere_is_stable() -> None:
    once = autotune_picks([_run("cold", ("8:float32", "k: BLOCK: 64"))])
    assert once == {"8:float32": ("k: BLOCK: 64",)} and unstable_picks(once) == {}
    same = autotune_picks(
        [_run("cold", ("8:float32", "k: BLOCK: 64")), _run("warm", ("8:float32", "k: BLOCK: 64"))]
    )
    assert unstable_picks(same) == {}
    split = autotune_picks(
        [
            _run("cold", ("8:float32", "k: BLOCK: 64"), ("9:float32", "")),
            _run("warm", ("8:float32", "k: BLOCK: 128"), ("9:float32", "")),
            None,
        ]
    )
    assert split == {"8:float32": ("k: BLOCK: 64", "k: BLOCK: 128")}  # 9 never autotuned
    assert unstable_picks(split) == {"8:float32": ("k: BLOCK: 64", "k: BLOCK: 128")}
