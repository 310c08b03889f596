"""``triton.autotune`` added while the launch stops passing the constexpr it now tunes is a
tuning change, not a launch change.

Shortened from trident/kernel/cosine_similarity.py and trident/operation/cosine_similarity.py of
kakaobrain/trident at 02532dea44e8 and its parent (Apache-2.0; that pull request is in
tests/data/real_prs): the kernel gains ``@triton.autotune(cosine_similarity_configs(), [...])``,
its ``block_size`` moves after ``dtype``, and the launch no longer passes
``util.block_size(...)`` for it.
"""

from __future__ import annotations

from tests.diff_util import changes_between

KERNEL = "trident/kernel/cosine_similarity.py"
HOST = "trident/operation/cosine_similarity.py"
KERNEL_BEFORE = """\
import triton
import triton.language as tl


class CosineSimilarity:
    @staticmethod
    @triton.jit
    def forward(
        output_ptr,
        x1_ptr,
        x2_ptr,
        y_size,
        x_size,
        block_size: tl.constexpr,
        dtype: tl.constexpr,
    ):
        pid = tl.program_id(0)
        offsets = tl.arange(0, block_size)
        x1 = tl.load(x1_ptr + pid * x_size + offsets, offsets < x_size, 0)
        x2 = tl.load(x2_ptr + pid * x_size + offsets, offsets < x_size, 0)
        tl.store(output_ptr + pid, tl.sum(x1 * x2, 0).to(dtype))
"""
BUILDER = """

def cosine_similarity_configs():
    configs = []
    for block_size in [256, 512, 1024, 2048]:
        for num_stages in [4, 5]:
            config = triton.Config({"block_size": block_size}, 2 if block_size <= 512 else 4, num_stages)
            configs.append(config)
    return configs
"""
KERNEL_AFTER = (
    KERNEL_BEFORE.replace("\n\nclass", BUILDER + "\n\nclass")
    .replace(
        "    @triton.jit\n",
        '    @triton.autotune(cosine_similarity_configs(), ["y_size", "x_size"])\n    @triton.jit\n',
    )
    .replace(
        "        block_size: tl.constexpr,\n        dtype: tl.constexpr,\n",
        "        dtype: tl.constexpr,\n        block_size: tl.constexpr,\n",
    )
)
HOST_BEFORE = """\
import torch

from trident import kernel, util


def cosine_similarity(x1, x2):
    y_size, x_size = x1.shape
    output = torch.empty(y_size, device=x1.device, dtype=x1.dtype)
    kernel.CosineSimilarity.forward[(y_size,)](
        output, x1, x2, y_size, x_size, util.block_size(x_size, x1.element_size()), util.dtype(x1.dtype)
    )
    return output
"""
HOST_AFTER = HOST_BEFORE.replace(" util.block_size(x_size, x1.element_size()),", "")


def _changes(kernel_after: str, host_after: str) -> list[str]:
    old = {KERNEL: KERNEL_BEFORE, HOST: HOST_BEFORE}
    return changes_between(old, {KERNEL: kernel_after, HOST: host_after})


def test_autotune_added_and_the_tuned_argument_dropped_is_tuning():
    assert _changes(KERNEL_AFTER, HOST_AFTER) == ["tuning forward"]


def test_another_argument_changed_with_it_is_a_launch_change():
    other = HOST_AFTER.replace("output, x1, x2,", "output, x2, x1,")
    assert _changes(KERNEL_AFTER, other) == ["launch forward"]


def test_an_argument_dropped_that_the_autotuner_does_not_set_is_a_launch_change():
    untuned = KERNEL_AFTER.replace('{"block_size": block_size}', '{"BLOCK": block_size}')
    assert _changes(untuned, HOST_AFTER) == ["launch forward"]
