"""Adding ``triton.autotune`` to a kernel is tuning, even where the constexpr the configs now
set loses its default in the signature; a real change of the body still reads as one."""

from __future__ import annotations

import pytest

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""

TUNED = """\
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""


def _kind(before: str, after: str) -> str:
    path = "ops/add.py"
    diff = file_diff(path, before, after)
    analysis = analyze_diff(diff, old_source={path: before}.get, new_source={path: after}.get)
    [change] = analysis.changes
    return change.kind


@pytest.mark.parametrize(
    "after",
    [
        TUNED,
        # the signature over several lines: the parameter's own line loses its default
        TUNED.replace(
            "def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
            "def add_kernel(\n    x_ptr,\n    y_ptr,\n    n,\n    BLOCK: tl.constexpr,\n):",
        ),
    ],
)
def test_adding_an_autotuner_that_now_sets_a_constexpr_is_tuning(after: str) -> None:
    assert _kind(BEFORE, after) == "tuning"


def test_a_default_dropped_without_configs_setting_it_is_still_a_body_change() -> None:
    # the default goes, but no autotune config sets BLOCK: every caller must now pass it
    untuned = TUNED.replace('{"BLOCK": 1024}', '{"OTHER": 1}').replace(
        '{"BLOCK": 2048}', '{"OTHER": 2}'
    )
    assert _kind(BEFORE, untuned) == "body"


def test_an_autotuner_added_with_a_body_change_is_a_body_change() -> None:
    assert _kind(BEFORE, TUNED.replace("mask = offs < n", "mask = offs < n - 1")) == "body"
