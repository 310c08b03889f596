from __future__ import annotations

import pytest

from bot.contracts.plan import Plan
from bot.contracts.review import ChangeLine
from bot.errors import LimitError
from bot.plan import make_plan
from bot.policy.load import parse_policy

POLICY_TEXT = """
tolerance = 0.03
vendors = ["nvidia", "amd"]
[deployment]
kind = "long-lived"
[limits]
max_shapes = 6
max_elements_per_tensor = 100000000
[[kernels]]
name = "softmax"
bench = "ops.bench:softmax"
paths = ["ops/softmax.py"]
dtypes = ["float16", "float32"]
tolerance = 0.05
shapes = [[1823, 781], { shape = [4096, 4096], weight = 10 }, [1, 7]]
[[kernels]]
name = "matmul"
bench = "ops.bench:matmul"
paths = ["ops/matmul.py"]
dtypes = ["bfloat16"]
shapes = [[256, 256, 256]]
"""
POLICY = parse_policy(POLICY_TEXT, "kernel-review.toml")
SOFTMAX = ChangeLine(kernel="softmax", kind="rewrite")
UNMAPPED = ChangeLine(kernel="my_kernel", kind="body", mapped=False)


def plan(changes=(SOFTMAX, UNMAPPED), **kw) -> Plan:
    return make_plan(changes, POLICY, base_sha="a" * 40, head_sha="b" * 40, **kw)


def test_plan_measures_only_touched_kernels_with_their_tolerance():
    p = plan()
    assert [k.name for k in p.kernels] == ["softmax"]
    k = p.kernels[0]
    assert k.tolerance == 0.05 and k.cases == 6
    assert k.shapes[1].dims == (4096, 4096) and k.shapes[1].weight == 10
    assert p.unmapped == ("my_kernel",)
    assert p.checks == ("sweep", "first_call", "compiler", "repo")
    assert p.vendors == ("nvidia", "amd")
    assert Plan.model_validate_json(p.model_dump_json()) == p


def test_request_narrows_and_quick_keeps_heaviest_shapes():
    p = plan(vendors=["amd"], dtypes=["float32"])
    assert p.vendors == ("amd",) and p.kernels[0].dtypes == ("float32",)
    q = plan(quick=True)
    assert q.kernels[0].shapes[0].dims == (4096, 4096) and len(q.kernels[0].dtypes) == 1


def test_request_can_name_an_untouched_kernel():
    p = plan(changes=(), kernels=["matmul"])
    assert [k.name for k in p.kernels] == ["matmul"]
    assert p.kernels[0].change_kinds == ("requested",)


def test_refusals_carry_the_numbers():
    with pytest.raises(LimitError, match=r"unknown kernel.*nope") as e:
        plan(kernels=["nope"])
    assert "softmax, matmul" in e.value.hint
    with pytest.raises(LimitError, match=r"vendor.*intel"):
        plan(vendors=["intel"])
    with pytest.raises(
        LimitError, match=r"4 shapes x 2 dtypes = 8 cases, over the policy's limit of 6"
    ):
        plan(shapes=[[3, 3], [5, 5], [7, 7], [9, 9]])
    with pytest.raises(LimitError, match="100000000"):
        plan(shapes=[[100000, 100000]])


def test_only_unmapped_changes_plan_no_sweep():
    p = plan(changes=(UNMAPPED,))
    assert p.kernels == () and p.checks == ("compiler", "repo")


TRITON_BUMP = ChangeLine(
    kernel="triton",
    kind="toolchain",
    old_version="==3.5.1",
    new_version="==3.6.0",
    old_paths=("requirements.txt",),
    new_paths=("requirements.txt",),
)


def test_a_toolchain_change_plans_every_kernel_of_the_policy():
    p = plan(changes=(TRITON_BUMP,))
    assert [k.name for k in p.kernels] == ["softmax", "matmul"]
    assert all(k.change_kinds == ("toolchain",) for k in p.kernels)
    assert p.checks == ("sweep", "first_call", "compiler", "repo")
    assert p.toolchain == (TRITON_BUMP,) and p.unmapped == ()
    # the kernels a diff also touched keep their own kinds beside it
    both = plan(changes=(TRITON_BUMP, SOFTMAX))
    assert both.kernels[0].change_kinds == ("rewrite", "toolchain")


def test_a_toolchain_change_stays_within_the_limits():
    with pytest.raises(LimitError, match="over the policy's limit"):
        plan(changes=(TRITON_BUMP,), shapes=[[1, 2], [3, 4], [5, 6], [7, 8]])


def test_shared_memory_profiling_is_planned_only_when_the_policy_opts_in():
    assert "smem" not in plan().checks
    text = POLICY_TEXT.replace(
        "[[kernels]]", "[profile]\nshared_memory = true\nshapes = 1\n[[kernels]]", 1
    )
    opted = parse_policy(text, "kernel-review.toml")
    assert opted.profile.shared_memory and opted.profile.shapes == 1
    p = make_plan((SOFTMAX,), opted, base_sha="a" * 40, head_sha="b" * 40)
    assert "smem" in p.checks
    from bot.errors import PolicyError

    with pytest.raises(PolicyError) as err:
        parse_policy(text.replace("shapes = 1", "shapes = 0"), "kernel-review.toml")
    assert "profile.shapes: 0 is out of range: must be > 0" in str(err.value)


def test_the_plan_carries_what_the_measure_jobs_need_of_the_policy():
    """Limits, deployment and compile targets come from the policy the gate read, once: a
    measure job takes them from the plan instead of reading the base policy again."""
    targeted = parse_policy(
        POLICY_TEXT.replace(
            '[deployment]\nkind = "long-lived"',
            '[deployment]\nkind = "cli"\nfirst_call_budget_ms = 800\n'
            '[compiler]\nnvidia_targets = ["sm_90a", "sm_80"]\namd_targets = ["gfx90a"]',
        ).replace(
            "max_elements_per_tensor = 100000000",
            "max_elements_per_tensor = 100000000\nmax_gpu_seconds = 90\nworker_memory_gib = 6",
        ),
        "kernel-review.toml",
    )
    p = make_plan((SOFTMAX,), targeted, base_sha="a" * 40, head_sha="b" * 40)
    assert p.limits is not None and p.deployment is not None
    assert (p.limits.max_shapes, p.limits.max_elements_per_tensor) == (6, 100_000_000)
    assert (p.limits.max_gpu_seconds, p.limits.worker_memory_gib) == (90, 6)
    assert (p.deployment.kind, p.deployment.first_call_budget_ms) == ("cli", 800)
    assert p.compiler_targets == ("sm_90a", "sm_80", "gfx90a")
    # the targets follow the plan's vendors: an AMD-only request compiles for AMD only
    amd = make_plan((SOFTMAX,), targeted, base_sha="a" * 40, head_sha="b" * 40, vendors=["amd"])
    assert amd.compiler_targets == ("gfx90a",)
    assert Plan.model_validate_json(p.model_dump_json()) == p
