"""A launch's values read on its own path (``launch_values``): a keyword set on the dict a launch
spreads (``kwargs["num_warps"] = w``) is the keyword, wherever it is set, and a value that
differs only on another path (a cap chosen by a test the launch's own tests decide) is the value
it had.

Shortened from fast_llm/functional/triton/entropy_loss.py in ServiceNow/Fast-LLM (Apache-2.0) at
46ffbdd12696 and its parent 27f4747ed2bd (in tests/data/real_prs): the from-labels kernel's
``num_warps`` formula moves into the labels branch, and the block-size cap becomes 16384 on the
distribution path only; the kernels are cut down to a copy.
"""

from __future__ import annotations

from tests.diff_util import changes_between

LOSS = "fast_llm/functional/triton/entropy_loss.py"
KERNELS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def from_labels_kernel(logits_ptr, losses_ptr, n_cols: tl.constexpr, block_size: tl.constexpr):
    offs = tl.arange(0, block_size)
    tl.store(losses_ptr + offs, tl.load(logits_ptr + offs, mask=offs < n_cols), mask=offs < n_cols)


@triton.jit
def from_distribution_kernel(logits_ptr, losses_ptr, n_cols: tl.constexpr, block_size: tl.constexpr):
    offs = tl.arange(0, block_size)
    tl.store(losses_ptr + offs, tl.load(logits_ptr + offs, mask=offs < n_cols), mask=offs < n_cols)

"""
BASE = (
    KERNELS
    + """
def entropy_loss(logits, target_format, block_size=None, num_warps=None):
    n_rows, n_cols = logits.shape
    if block_size is None:
        block_size = min(triton.next_power_of_2(n_cols), 32768)
    if num_warps is None:
        num_warps = 4 if block_size < 2048 else (8 if block_size < 8192 else 16)
    kwargs = {
        "n_cols": n_cols,
        "block_size": block_size,
        "num_warps": num_warps,
    }
    losses = torch.empty(n_rows, dtype=torch.float, device=logits.device)
    if target_format == "labels":
        from_labels_kernel[(n_rows,)](logits, losses, **kwargs)
    else:
        from_distribution_kernel[(n_rows,)](logits, losses, **kwargs)
    return losses
"""
)
WARPS = (
    "    if num_warps is None:\n"
    "        num_warps = 4 if block_size < 2048 else (8 if block_size < 8192 else 16)\n"
)
SPREAD = '        "num_warps": num_warps,\n'
LABELS = '    if target_format == "labels":\n'
# 46ffbdd12696: the formula and its keyword set in the labels branch only
MOVED = (
    BASE.replace(WARPS, "")
    .replace(SPREAD, "")
    .replace(
        LABELS,
        LABELS
        + "    "
        + WARPS.replace("\n    ", "\n        ")
        + '        kwargs["num_warps"] = num_warps\n',
    )
)
CAP = "min(triton.next_power_of_2(n_cols), 32768)"
DISTRIBUTION = '    is_distribution = target_format != "labels"\n'


def _changes(head: str) -> list[str]:
    return changes_between({LOSS: BASE}, {LOSS: head})


def test_a_launch_keyword_set_on_its_dict_in_a_branch_is_the_same_keyword() -> None:
    assert "from_labels_kernel" not in " ".join(_changes(MOVED))


def _capped(cap: str) -> str:
    head = BASE.replace(
        "    if block_size is None:\n", DISTRIBUTION + "    if block_size is None:\n"
    )
    return head.replace(CAP, f"min(triton.next_power_of_2(n_cols), {cap})")


def test_a_cap_that_differs_only_on_another_path_changes_no_launch_on_this_one() -> None:
    head = _capped("16384 if is_distribution else 32768")
    assert _changes(head) == ["tuning from_distribution_kernel"]


def test_a_cap_that_differs_on_the_launch_s_own_path_changes_it() -> None:
    assert _changes(_capped("32768 if is_distribution else 16384")) == ["tuning from_labels_kernel"]


def test_a_keyword_set_in_a_branch_to_another_value_changes_the_launch() -> None:
    assert "from_labels_kernel" in " ".join(
        _changes(MOVED.replace("4 if block_size", "2 if block_size", 1))
    )
