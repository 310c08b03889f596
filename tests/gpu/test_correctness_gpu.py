"""On a GPU (skipped without one), the checks' short way finds exactly what the element-by-element
way finds: torch.isclose's allowed error computed by the same operations on the device, elements
at the tolerance's edge, NaN and infinities, in every float type the checks read."""

from __future__ import annotations

import pytest
import torch

from checks.worker import correctness
from tests.unit.test_correctness_short_way import DTYPES, _long_way_only, _pair

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_short_and_long_way_agree_on_the_gpu(monkeypatch, dtype) -> None:
    monkeypatch.setattr(correctness, "CHUNK", 4096)
    for tol in ((None, None), (1e-3, 1e-3), (0.0, 5e-3)):
        atol, rtol = correctness.output_tolerance((str(dtype).replace("torch.", ""),), *tol)
        for seed in range(4):
            out, ref = (t.cuda() for t in _pair(dtype, seed, atol, rtol))
            short = correctness.compare(out, ref, atol=tol[0], rtol=tol[1])
            digest = correctness.digest(out)
            with monkeypatch.context() as m:
                _long_way_only(m)
                assert correctness.compare(out, ref, atol=tol[0], rtol=tol[1]) == short
                assert correctness.digest(out) == digest
            assert not short["ok"]


def test_a_large_output_at_the_edge_of_its_tolerance(monkeypatch) -> None:
    """2^26 float32 elements, each moved by 0.99-1.01 of its allowed error: both ways count the
    same elements bad."""
    g = torch.Generator(device="cuda").manual_seed(5)
    ref = torch.randn(2**26, generator=g, device="cuda")
    allowed = 1e-4 + (1e-4 * ref).abs()
    out = ref + allowed * (0.99 + 0.02 * torch.rand(2**26, generator=g, device="cuda"))
    short = correctness.compare(out, ref)
    with monkeypatch.context() as m:
        _long_way_only(m)
        assert correctness.compare(out, ref) == short
    assert 0 < short["bad_elements"] < 2**26
