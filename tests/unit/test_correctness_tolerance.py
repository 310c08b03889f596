"""Each output of an entry point is held to its own dtype's tolerance (unless the entry point
gives one): a layer norm's bf16 result beside its fp32 mean and rstd, in either order."""

from __future__ import annotations

import math

import torch

from checks.worker.correctness import compare, compare_digests, digest, output_tolerance


def _outputs(order: str, *, bf16_err: float, fp32_err: float):
    g = torch.Generator().manual_seed(0)
    y = torch.randn(4096, generator=g).to(torch.bfloat16)
    mean = torch.randn(64, generator=g)
    ref = {"y": y, "mean": mean}
    # an error of about `err` relative to each element, on top of what the dtype can hold
    got = {
        "y": (y.float() * (1 + bf16_err)).to(torch.bfloat16),
        "mean": mean * (1 + fp32_err),
    }
    keys = ("y", "mean") if order == "bf16 first" else ("mean", "y")
    return tuple(got[k] for k in keys), tuple(ref[k] for k in keys)


def test_an_fp32_output_beside_a_bf16_one_is_held_to_fp32s_tolerance() -> None:
    for order in ("bf16 first", "fp32 first"):
        # bf16 within its 2% and fp32 within 1e-4: correct in either order
        out, ref = _outputs(order, bf16_err=0.008, fp32_err=2e-5)
        assert compare(out, ref)["ok"], order
        # the fp32 statistic 0.1% off: wrong, even when the bf16 result comes first
        out, ref = _outputs(order, bf16_err=0.0, fp32_err=1e-3)
        res = compare(out, ref)
        assert not res["ok"] and "rtol=0.0001" in res["message"], (order, res["message"])


def test_the_entry_points_own_tolerance_applies_to_every_output() -> None:
    out, ref = _outputs("fp32 first", bf16_err=0.0, fp32_err=1e-3)
    assert compare(out, ref, atol=1e-2, rtol=1e-2)["ok"]
    assert output_tolerance(("float32", "bfloat16"), None, None) == (2e-2, 2e-2)
    assert output_tolerance(("float32",), 0.5, None) == (0.5, 1e-4)


def test_base_against_head_digests_use_each_outputs_tolerance() -> None:
    base, _ = _outputs("fp32 first", bf16_err=0.0, fp32_err=0.0)
    head_ok, _ = _outputs("fp32 first", bf16_err=0.008, fp32_err=2e-5)
    head_bad, _ = _outputs("fp32 first", bf16_err=0.0, fp32_err=1e-3)
    assert compare_digests(digest(base), digest(head_ok)) == ""
    diff = compare_digests(digest(base), digest(head_bad))
    assert diff.startswith("output 0"), diff


def test_compare_and_digest_across_chunks_agree_for_torch_and_numpy(monkeypatch) -> None:
    """Outputs longer than a chunk: the first bad element, the worst error, NaN and Inf counts and
    the part sums come out the same whether the output is a torch tensor or a numpy array, and
    match what the elements say."""
    import math

    import numpy as np

    from checks.worker import correctness

    monkeypatch.setattr(correctness, "CHUNK", 1000)
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(4321, generator=g, dtype=torch.float64).float()
    out = ref.clone()
    out[2500] += 0.5  # the first bad element, in the third chunk
    out[4000] += 0.25
    out[10] = out[3000] = float("nan")
    ref[10] = ref[3000] = float("nan")  # NaN where the reference has NaN is not an error
    out[20] = ref[20] = float("inf")
    for make in (lambda t: t, lambda t: t.numpy()):
        got = compare(make(out), make(ref))
        assert not got["ok"] and got["bad_elements"] == 2
        assert "index 2500" in got["message"], got["message"]
        assert math.isclose(got["max_abs_err"], 0.5, rel_tol=1e-6)
        (d,) = digest(make(out))
        assert (d["nan"], d["inf"]) == (2, 1)
        flat = out.double().numpy()
        for lo, hi, s, sa in d["parts"]:
            part = flat[lo:hi][np.isfinite(flat[lo:hi])]
            assert math.isclose(s, part.sum(), rel_tol=1e-12, abs_tol=1e-9)
            assert math.isclose(sa, np.abs(part).sum(), rel_tol=1e-12)
        assert d["parts"][0][0] == 0 and d["parts"][-1][1] == 4321
    assert compare_digests(digest(out), digest(out.numpy())) == ""
    assert compare(ref, ref)["ok"] and compare(ref.numpy(), ref.numpy())["ok"]


def test_compare_and_digest_read_nothing_back_per_chunk(monkeypatch) -> None:
    """Per chunk everything stays on the tensors' device (on a GPU, a read back is a wait for
    it): only the one copy per output at the end reads values, not an item per chunk."""
    from torch.profiler import ProfilerActivity, profile

    from checks.worker import correctness

    monkeypatch.setattr(correctness, "CHUNK", 1000)
    ref = torch.randn(4321, generator=torch.Generator().manual_seed(2))
    out = ref.clone()
    out[2500] += 0.5
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        rows = [
            correctness._chunk_errors(out, ref, start, (1e-5, 1e-5))
            for start in range(0, 4321, 1000)
        ]
        short = [
            correctness._chunk_close(out, ref, start, (1e-5, 1e-5))
            for start in range(0, 4321, 1000)
        ]
        sums = [correctness._sums(out, lo, lo + 700) for lo in range(0, 4200, 700)]
        sums += [correctness._sums_short(out, lo, lo + 700) for lo in range(0, 4200, 700)]
    reads = [e.name for e in prof.events() if e.name in ("aten::item", "aten::_local_scalar_dense")]
    assert reads == []
    assert [r.tolist()[0] for r in rows] == [0, 0, 1, 0, 0] and len(sums) == 12
    assert [s.tolist()[1] >= 0 for s in short] == [True, True, False, True, True]
    assert compare(out, ref)["message"].startswith(
        "1 elements differ from the reference; first at output 0 index 2500"
    )


def test_narrow_floats_are_compared_without_a_float64_copy_and_agree_with_float64(
    monkeypatch,
) -> None:
    """fp32, fp16 and bf16 outputs are checked in float32: no float64 copy of a chunk is made
    (on a GPU that copy is most of a large output's check), and the verdict, the first bad
    element and the worst error are what float64 says."""
    import numpy as np
    from torch.utils._python_dispatch import TorchDispatchMode

    from checks.worker import correctness

    class Wide(TorchDispatchMode):
        """Records every chunk-sized float64 tensor an op makes."""

        def __init__(self) -> None:
            super().__init__()
            self.made: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor) and out.dtype == torch.float64 and out.numel() >= 500:
                self.made.append(str(func))
            return out

    monkeypatch.setattr(correctness, "CHUNK", 1000)
    g = torch.Generator().manual_seed(3)
    for dtype, (atol, rtol) in ((torch.float32, (1e-4, 1e-4)), (torch.bfloat16, (2e-2, 2e-2))):
        ref = torch.randn(3500, generator=g).to(dtype)
        bound = atol + rtol * ref.float().abs()
        # every element off by half its bound (fine), four by twice it (wrong)
        out = (ref.float() + 0.5 * bound).to(dtype)
        for i in (5, 1200, 1201, 3499):
            out[i] = (ref[i].float() + 2 * bound[i]).to(dtype)
        with Wide() as wide:
            got = compare(out, ref)
            correctness._part_sums(out, [(0, 3500)])
        assert wide.made == [], (dtype, wide.made)
        a, b = out.double().numpy(), ref.double().numpy()
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol)
        assert got["bad_elements"] == int(bad.sum()) == 4, dtype
        assert "index 5" in got["message"]
        assert math.isclose(got["max_abs_err"], float(np.abs(a - b).max()), rel_tol=1e-6)
    # an fp32 output against a float64 reference is still compared in float64
    ref64 = torch.randn(1500, generator=g, dtype=torch.float64)
    with Wide() as wide:
        assert not compare(ref64.float(), ref64, atol=0.0, rtol=1e-12)["ok"]
    assert wide.made


def test_exercise_runs_the_checks_functions_for_every_narrow_float_type() -> None:
    """What a worker runs ahead (``correctness.exercise``): the comparison and the digest, for
    float32, float16 and bfloat16 outputs, so each type's functions are loaded before a case."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from checks.worker import correctness

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: set[tuple[str, torch.dtype]] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if first is not None:
                self.ops.add((func.__name__.split(".")[0], first.dtype))
            return func(*args, **(kwargs or {}))

    with Seen() as seen:
        correctness.exercise(torch, "cpu")
    for dtype in (torch.float16, torch.bfloat16):  # each read as float32 by the checks
        assert ("_to_copy", dtype) in seen.ops, dtype
    assert ("le", torch.float32) in seen.ops  # the element-by-element comparison
    assert ("min", torch.float32) in seen.ops  # the short way's smallest slack
    assert ("isnan", torch.float32) in seen.ops  # the digest's long way
    assert ("sum", torch.float32) in seen.ops  # the digest's part sums
