"""An entry point's ``checked`` through a real worker on the CPU: an operator whose output comes
in no fixed order (pairs appended with atomics, here a permutation that differs call by call) is
checked in the form ``checked`` gives, against its reference before timing and after it, while
the timed calls run ``fn`` alone; without it the same operator reads wrong; a ``checked`` that is
not callable is refused with what it must be."""

from __future__ import annotations

import pytest

from checks.sweep.workers import WorkerClient, WorkerFailure
from tests.repo_worker import repo_worker

OPS = """\
import torch

CALLS = [0]


def _pairs(shape, dtype, device, seed, checked):
    x = torch.arange(shape[0], dtype=getattr(torch, dtype))

    def fn():  # the same values in another order each call, as atomics append them
        CALLS[0] += 1
        order = torch.randperm(shape[0], generator=torch.Generator().manual_seed(CALLS[0]))
        return x[order] * 2

    item = {"fn": fn, "reference": lambda: x * 2, "inputs": [x]}
    if checked is not None:
        item["checked"] = checked
    return item


def sorted_pairs(shape, dtype, *, device="cpu", seed=0):
    return _pairs(shape, dtype, device, seed, lambda out: out.sort().values)


def unordered_pairs(shape, dtype, *, device="cpu", seed=0):
    return _pairs(shape, dtype, device, seed, None)


def not_callable(shape, dtype, *, device="cpu", seed=0):
    return _pairs(shape, dtype, device, seed, "sort")
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    with repo_worker(tmp_path_factory.mktemp("checked"), {"ops.py": OPS}) as worker:
        yield worker


def test_an_output_in_no_fixed_order_is_checked_in_the_form_checked_gives(
    client: WorkerClient,
) -> None:
    got = client.check(["ops:sorted_pairs"], (1000,), "float32", seed=1)
    assert got.correct and got.has_reference
    client.prepare(["ops:sorted_pairs"], (1000,), "float32", seed=1)
    client.configure("cpu", 1.0)
    client.block()
    rechecked = client.finish(recheck=True)  # the timed copy's output, after the timing
    assert rechecked.rechecked and rechecked.correct


def test_without_checked_the_same_operator_reads_wrong(client: WorkerClient) -> None:
    got = client.check(["ops:unordered_pairs"], (1000,), "float32", seed=1)
    assert not got.correct and "element" in got.message
    client.finish(recheck=False)


def test_a_checked_that_is_not_callable_is_refused_with_what_it_must_be(
    client: WorkerClient,
) -> None:
    with pytest.raises(
        WorkerFailure, match="'checked' must be a callable taking what 'fn' returned"
    ):
        client.check(["ops:not_callable"], (1000,), "float32", seed=1)
