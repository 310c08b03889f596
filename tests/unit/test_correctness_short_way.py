"""The checks' short way (a few passes over a chunk, then element by element only where it cannot
pass) finds exactly what the element-by-element way finds: the same bad count, worst error and
first bad element from ``compare``, the same NaN and Inf counts and sums from ``digest``, on
outputs where most chunks pass and some hold NaN, infinities or elements at the tolerance's edge."""

from __future__ import annotations

import pytest
import torch

from checks.worker import correctness

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _long_way_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every chunk fail the short way, so each is looked at element by element."""

    def never(o, r, start, tol):
        return torch.tensor([0.0, float("nan")], dtype=torch.float64)

    monkeypatch.setattr(correctness, "_chunk_close", never)
    monkeypatch.setattr(
        correctness,
        "_sums_short",
        lambda x, a, b: torch.tensor([float("nan"), 0.0], dtype=torch.float64),
    )


def _pair(dtype: torch.dtype, seed: int, atol: float, rtol: float) -> tuple[torch.Tensor, ...]:
    """A reference and an output of 10 chunks: chunk 0 exact, 1 within tolerance, 2 with
    elements on either side of the tolerance's edge, 3 with one far-off element, 4 with NaN on
    both sides at one place (a match) and on one side at another, 5 with equal infinities, 6
    with an infinity against a finite value, 7-9 within tolerance."""
    g = torch.Generator().manual_seed(seed)
    n = correctness.CHUNK
    ref = torch.randn(10 * n, generator=g, dtype=torch.float64).to(dtype)
    out = ref.clone()
    wide = ref.double()
    allowed = atol + (rtol * wide).abs()
    for c in (1, 7, 8, 9):
        s = slice(c * n, (c + 1) * n)
        out[s] = (wide[s] + allowed[s] * 0.4 * torch.rand(n, generator=g, dtype=torch.float64)).to(
            dtype
        )
    s = slice(2 * n, 3 * n)
    edge = torch.rand(n, generator=g, dtype=torch.float64) * 0.02 + 0.99
    out[s] = (wide[s] + allowed[s] * edge).to(dtype)
    out[3 * n + 5] = ref[3 * n + 5] + 1000
    out[4 * n + 1] = ref[4 * n + 1] = float("nan")
    out[4 * n + 2] = float("nan")
    out[5 * n + 3] = ref[5 * n + 3] = float("inf")
    out[6 * n + 4] = float("-inf")
    return out, ref


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("tol", [(None, None), (1e-3, 1e-3), (0.0, 0.0), (0.0, 5e-3)], ids=str)
def test_compare_short_way_finds_what_the_long_way_finds(monkeypatch, dtype, tol) -> None:
    monkeypatch.setattr(correctness, "CHUNK", 512)
    atol, rtol = correctness.output_tolerance((str(dtype).replace("torch.", ""),), *tol)
    for seed in range(3):
        out, ref = _pair(dtype, seed, atol, rtol)
        short = correctness.compare(out, ref, atol=tol[0], rtol=tol[1])
        with monkeypatch.context() as m:
            _long_way_only(m)
            long = correctness.compare(out, ref, atol=tol[0], rtol=tol[1])
        assert short == long
        assert not short["ok"] and short["bad_elements"] >= 3  # the far one, NaN, -inf
    # all within tolerance: the short way alone answers, and says the same
    out, ref = _pair(dtype, 7, atol, rtol)
    good = torch.cat([out[: correctness.CHUNK * 2], out[7 * correctness.CHUNK :]])
    want = torch.cat([ref[: correctness.CHUNK * 2], ref[7 * correctness.CHUNK :]])
    short = correctness.compare(good, want, atol=tol[0], rtol=tol[1])
    with monkeypatch.context() as m:
        _long_way_only(m)
        assert correctness.compare(good, want, atol=tol[0], rtol=tol[1]) == short
    assert short["ok"] and short["bad_elements"] == 0


def test_compare_short_way_is_used_where_it_can_answer(monkeypatch) -> None:
    """Only the chunks the short way cannot pass are looked at element by element."""
    monkeypatch.setattr(correctness, "CHUNK", 512)
    out, ref = _pair(torch.float32, 0, 1e-4, 1e-4)
    looked: list[int] = []
    errors = correctness._chunk_errors

    def spy(o, r, start, tol):
        looked.append(start // correctness.CHUNK)
        return errors(o, r, start, tol)

    monkeypatch.setattr(correctness, "_chunk_errors", spy)
    correctness.compare(out, ref)
    assert 0 not in looked and 1 not in looked and 7 not in looked
    assert {3, 4, 5, 6} <= set(looked)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_digest_short_way_counts_and_sums_what_the_long_way_does(monkeypatch, dtype) -> None:
    monkeypatch.setattr(correctness, "CHUNK", 300)
    out, _ = _pair(dtype, 1, 1e-3, 1e-3)
    short = correctness.digest(out)
    with monkeypatch.context() as m:
        _long_way_only(m)
        long = correctness.digest(out)
    assert short == long
    assert short[0]["nan"] == 2 and short[0]["inf"] == 2
    assert correctness.compare_digests(short, long) == ""


def test_negative_or_non_finite_tolerance_is_refused() -> None:
    x = torch.ones(4)
    for atol, rtol in ((-1e-3, None), (None, -0.1), (float("nan"), None), (None, float("inf"))):
        with pytest.raises(ValueError, match="a number of 0 or more"):
            correctness.compare(x, x, atol=atol, rtol=rtol)
