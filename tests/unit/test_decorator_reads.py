"""A change to what a kernel's autotune decorator reads (its pruner, its config builders, the
module-level choice between them) is a tuning change of the kernel, with the changed names as
its cause; a change the decorators do not reach, or a comment, is not.

The module is a shortened excerpt of gemlite/triton_kernels/gemm_kernels.py in mobiusml/gemlite
at b02407a2 (Apache-2.0; the pull requests 41c7d8e608fa and 413f06fbfc76 of tests/data/real_prs
change its pruner and its AMD config builders); kernel bodies cut to one line.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

PATH = "gemlite/triton_kernels/gemm_kernels.py"

AUTOTUNED = """\
@triton.autotune(
    configs = get_autotune_config(),
    key = ['M', 'N', 'K'],
    prune_configs_by = {'early_config_prune': kernel_config_pruner},
)
@triton.jit
"""

BASE = """\
import triton
import triton.language as tl

IS_HIP = triton.runtime.driver.active.get_current_target().backend == "hip"


def kernel_config_pruner(configs, nargs, **kwargs):
    k = nargs['K']
    g = nargs['group_size']
    load_scales_as_block = kwargs['load_scales_as_block']
    for config in configs:
        block_size_k = min(k, config.kwargs['BLOCK_SIZE_K'])
        num_stages = config.num_stages
        if(not load_scales_as_block):
            block_size_k = min(block_size_k, g)
        yield triton.Config({'BLOCK_SIZE_K': block_size_k}, num_stages=num_stages)


def get_closest_m(m):
    return 2 ** (m - 1).bit_length()


def get_fast_autotune_config_nvidia():
    configs = [] #BLOCK_SIZE_M is automatically adapted in the config pruning.
    configs.append(triton.Config({'BLOCK_SIZE_K':32}, num_warps=4, num_stages=4))
    return configs


def get_fast_autotune_config_amd():
    configs = [] #BLOCK_SIZE_M is automatically adapted in the config pruning.
    configs.append(triton.Config({'BLOCK_SIZE_K':32, 'waves_per_eu':2}, num_warps=4, num_stages=2))
    return configs


if IS_HIP:
    get_autotune_config = get_fast_autotune_config_amd
else:
    get_autotune_config = get_fast_autotune_config_nvidia


{autotuned}def gemm_INT_kernel(a_ptr, c_ptr, M, N, K, group_size, BLOCK_SIZE_K: tl.constexpr):
    tl.store(c_ptr + tl.arange(0, BLOCK_SIZE_K), tl.load(a_ptr + tl.arange(0, BLOCK_SIZE_K)))


{autotuned}def gemm_MX_kernel(a_ptr, c_ptr, M, N, K, group_size, BLOCK_SIZE_K: tl.constexpr):
    tl.store(c_ptr + tl.arange(0, BLOCK_SIZE_K), tl.load(a_ptr + tl.arange(0, BLOCK_SIZE_K)) * 2)


def gemm_INT_forward(a, c, group_size):
    M, K = a.shape
    gemm_INT_kernel[(M,)](a, c, M, c.shape[1], K, group_size)


def gemm_MX_forward(a, c, group_size):
    M, K = a.shape
    gemm_MX_kernel[(get_closest_m(M),)](a, c, M, c.shape[1], K, group_size)
""".replace("{autotuned}", AUTOTUNED)

# 41c7d8e608fa: the pruner keeps num_stages >= 2 for the dot_scaled path.
PRUNER = BASE.replace(
    """        if(not load_scales_as_block):
            block_size_k = min(block_size_k, g)
""",
    """        if(load_scales_as_block):
            num_stages = max(num_stages, 2) #for dot_scaled kernels with pipelined loads
        else:
            block_size_k = min(block_size_k, g)
""",
)
# 413f06fbfc76: the AMD builder's search space changes; the NVIDIA one gains a comment only.
AMD = BASE.replace("'waves_per_eu':2}, num_warps=4", "'waves_per_eu':4}, num_warps=8").replace(
    "def get_fast_autotune_config_nvidia():\n", "#Nvidia\ndef get_fast_autotune_config_nvidia():\n"
)


def _analyse(before: str, after: str) -> Analysis:
    diff = file_diff(PATH, before, after)
    return analyze_diff(diff, old_source={PATH: before}.get, new_source={PATH: after}.get)


def test_a_changed_pruner_tunes_every_kernel_it_prunes():
    analysis = _analyse(BASE, PRUNER)
    got = {c.name: (c.kind, c.via_helpers) for c in analysis.changes}
    assert got == {
        "gemm_INT_kernel": ("tuning", ["kernel_config_pruner"]),
        "gemm_MX_kernel": ("tuning", ["kernel_config_pruner"]),
    }


def test_a_config_builder_picked_under_a_vendor_test_is_tuning_on_that_vendor():
    analysis = _analyse(BASE, AMD)
    assert {c.name for c in analysis.changes} == {"gemm_INT_kernel", "gemm_MX_kernel"}
    for c in analysis.changes:
        assert c.kind == "tuning"
        assert c.via_helpers == ["get_fast_autotune_config_amd"]  # not the NVIDIA one
        assert c.configs_old_computed and c.configs_new_computed
        assert any(b.kind == "vendor" and "IS_HIP" in b.condition for b in c.branches)


def test_what_the_decorators_do_not_reach_is_not_tuning():
    # get_closest_m is read by a launcher only: a launch-path change, not this rule's
    launcher_helper = BASE.replace(
        "2 ** (m - 1).bit_length()", "max(16, 2 ** (m - 1).bit_length())"
    )
    analysis = _analyse(BASE, launcher_helper)
    assert all(c.kind != "tuning" for c in analysis.changes)
    assert not any("get_closest_m" in c.via_helpers for c in analysis.changes)
    # a comment in a builder changes nothing the autotuner tries
    comment = BASE.replace("    return configs\n", "    return configs  # all of them\n")
    assert not _analyse(BASE, comment).changes
