"""Which cases a sweep measures, and the limits that bound it."""

from __future__ import annotations

import math

import pytest

from bot.contracts.plan import PlannedKernel, PlannedShape
from bot.errors import LimitError
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.shapes import (
    added_shapes,
    fit_budget,
    is_prime,
    launch_recorder,
    plan_cases,
    prime_below,
)


def _kernel(shapes, dtypes=("float32",), name="softmax") -> PlannedKernel:
    return PlannedKernel(
        name=name,
        bench="toyops.bench:softmax",
        baseline="toyops.bench:softmax_ref",
        paths=("toyops/*",),
        dtypes=tuple(dtypes),
        shapes=tuple(PlannedShape(dims=d, weight=w) for d, w in shapes),
        tolerance=0.05,
        change_kinds=("rewrite",),
    )


def test_primes() -> None:
    assert [n for n in range(30) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    assert prime_below(4096) == 4093 and prime_below(781) == 773 and prime_below(3) == 3
    assert is_prime(prime_below(2**30))


def test_added_shapes_are_small_or_ragged_and_never_served() -> None:
    served = [(1823, 781), (4096, 4096)]
    added = added_shapes(served)
    assert added[0] == ((1, 4096), "small")
    assert ((4093, 4093), "ragged") in added
    assert ((7, 13), "small") in added
    for dims, cat in added:
        assert dims not in served
        if cat == "ragged":
            # odd and prime: not a multiple of any power-of-two block size
            assert all(is_prime(d) and d % 2 for d in dims)
    assert len({d for d, _ in added}) == len(added)


def test_plan_puts_served_first_then_added_within_max_shapes() -> None:
    k = _kernel([((1823, 781), 1.0), ((4096, 4096), 10.0)], dtypes=("float32", "float16"))
    plan = plan_cases([k], max_shapes=8, max_elements_per_tensor=2**30)
    served = [c for c in plan.cases if c.category == "served"]
    assert [(c.dims, c.dtype, c.weight) for c in served] == [
        ((1823, 781), "float32", 1.0),
        ((1823, 781), "float16", 1.0),
        ((4096, 4096), "float32", 10.0),
        ((4096, 4096), "float16", 10.0),
    ]
    extra = [c for c in plan.cases if c.category != "served"]
    assert len(extra) == 4 and all(c.weight == 0.0 for c in extra)  # room for 2 shapes x 2 dtypes
    assert len(plan.cases) == 8
    assert plan.notes and "left out" in plan.notes[0]
    assert plan.cases[0].base_entries == ["toyops.bench:softmax", "toyops.bench:softmax_ref"]
    assert plan.cases[0].head_entries == ["toyops.bench:softmax"]
    everything = plan_cases([k], max_shapes=64, max_elements_per_tensor=2**30)
    assert not everything.notes and len(everything.cases) == 4 + 2 * len(
        added_shapes([(1823, 781), (4096, 4096)])
    )
    only_served = plan_cases(
        [k], max_shapes=64, max_elements_per_tensor=2**30, add_small_and_ragged=False
    )
    assert len(only_served.cases) == 4


def test_served_shapes_over_the_limits_are_refused_with_numbers() -> None:
    k = _kernel([((4096, 4096), 1.0), ((1, 1), 1.0)], dtypes=("float32", "float16"))
    with pytest.raises(
        LimitError, match=r"2 shapes x 2 dtypes = 4 cases, over limits.max_shapes = 3"
    ):
        plan_cases([k], max_shapes=3, max_elements_per_tensor=2**30)
    with pytest.raises(
        LimitError, match=r"16,777,216 elements, over limits.max_elements_per_tensor = 1,000,000"
    ):
        plan_cases([k], max_shapes=64, max_elements_per_tensor=1_000_000)


def test_budget_lowers_the_case_cap_or_refuses() -> None:
    cfg = ProtocolConfig(block_ms=15.0, min_rounds=8, warmup_rounds=2, max_case_seconds=30.0)
    assert fit_budget(cfg, 10, 900.0) == cfg  # 90 s each: the 30 s cap stands
    tight = fit_budget(cfg, 100, 900.0)
    assert math.isclose(tight.max_case_seconds, 9.0 - 2.0)
    with pytest.raises(LimitError, match=r"1000 cases need at least 2300 GPU-seconds"):
        fit_budget(cfg, 1000, 900.0)


def test_operand_dimensions_bound_the_largest_tensor_not_the_problem_size():
    from bot.contracts.plan import PlannedKernel, PlannedShape

    matmul = PlannedKernel(
        name="matmul",
        bench="ops.bench:matmul",
        paths=("ops/matmul.py",),
        dtypes=("bfloat16",),
        shapes=(PlannedShape(dims=(4096, 4096, 4096)),),
        tolerance=0.03,
        change_kinds=("tuning",),
        tensors=((0, 2), (2, 1), (0, 1)),
    )
    plan = plan_cases([matmul], max_shapes=8, max_elements_per_tensor=2**24)
    assert plan.cases[0].dims == (4096, 4096, 4096)
    assert all(
        max(c.dims[0] * c.dims[2], c.dims[2] * c.dims[1], c.dims[0] * c.dims[1]) <= 2**24
        for c in plan.cases
    )
    with pytest.raises(LimitError, match="16,777,216 elements"):
        plan_cases([matmul], max_shapes=8, max_elements_per_tensor=2**24 - 1)


def test_a_kernel_whose_files_are_all_python_is_recorded_by_tritons_launches_alone() -> None:
    files = ["ops/softmax.py", "ops/csrc/softmax.cu", "ops/matmul.py", "cdk/a.py", "cdk/b/c.py"]
    assert launch_recorder(["ops/matmul.py"], files) == "triton"
    assert launch_recorder(["cdk/**"], files) == "triton"  # a pattern: the files it covers
    # any CUDA/C++ file among them, or none covered at all: the profiler (it sees those kernels)
    assert launch_recorder(["ops/softmax.py", "ops/csrc/*.cu"], files) == "profiler"
    assert launch_recorder(["ops"], files) == "profiler"  # a folder holding a .cu
    assert launch_recorder(["gone/*.py"], files) == "profiler"
    # each case carries its kernel's recorder, from both sides' files; none given: the profiler
    k = _kernel([((64, 64), 1.0)])  # paths toyops/*
    python_only = plan_cases(
        [k], max_shapes=4, max_elements_per_tensor=2**20, files=["toyops/a.py"]
    )
    assert {c.launches for c in python_only.cases} == {"triton"}
    with_cuda = plan_cases(
        [k], max_shapes=4, max_elements_per_tensor=2**20, files=["toyops/a.py", "toyops/a.cu"]
    )
    assert {c.launches for c in with_cuda.cases} == {"profiler"}
    assert {
        c.launches for c in plan_cases([k], max_shapes=4, max_elements_per_tensor=2**20).cases
    } == {"profiler"}
