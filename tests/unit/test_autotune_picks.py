"""A worker's record of its autotuners' picks, and the parent's reading of it: the worker runs the
checkout's code, so the parent reads only well-formed picks (the contract refuses the rest:
``tests/unit/test_worker_contract.py``), bounded in count and length."""

from __future__ import annotations

import triton
import triton.language as tl

from bot.contracts.evidence import MAX_LABEL
from checks.compiler.triton_compat import picked_label
from checks.sweep.models import MAX_PICKS
from checks.sweep.pair_runner import _offers, _picks
from checks.worker import autotune_picks, contract


class _Tuner:
    def __init__(self, fn: object) -> None:
        self.base_fn = fn


def matmul_kernel() -> None: ...


def test_a_config_is_described_by_its_values_and_the_launch_options_it_sets() -> None:
    config = triton.Config({"BLOCK_M": 64, "BLOCK_N": 128}, num_warps=8, num_stages=3)
    pick = autotune_picks.describe(_Tuner(matmul_kernel), config)
    assert pick == {
        "function": "matmul_kernel",
        "config": {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3},
    }  # num_ctas 1 and maxnreg None are Triton's defaults: left out
    assert picked_label(pick) == "matmul_kernel: BLOCK_M=64, BLOCK_N=128, num_warps=8, num_stages=3"
    clustered = triton.Config({"BLOCK_M": 64}, num_warps=4, num_stages=2, num_ctas=2, maxnreg=128)
    assert autotune_picks.describe(_Tuner(matmul_kernel), clustered)["config"] == {
        "BLOCK_M": 64, "num_warps": 4, "num_stages": 2, "num_ctas": 2, "maxnreg": 128,
    }  # fmt: skip


def test_the_configs_offered_are_named_by_a_digest_that_ignores_their_order() -> None:
    """Whether base and head chose from the same configs: the matched-picks rule of the verdict
    applies only then."""
    a = triton.Config({"BLOCK": 64}, num_warps=4)
    b = triton.Config({"BLOCK": 128}, num_warps=8)
    c = triton.Config({"BLOCK": 128}, num_warps=4)
    tuner, reordered, other = _Tuner(matmul_kernel), _Tuner(matmul_kernel), _Tuner(matmul_kernel)
    tuner.configs, reordered.configs, other.configs = [a, b], [b, a], [a, c]  # type: ignore[attr-defined]
    assert autotune_picks.offered(tuner) == autotune_picks.offered(reordered)
    assert autotune_picks.offered(tuner) != autotune_picks.offered(other)
    picks = [contract.Pick("k", {}, "ab12", ""), contract.Pick("a", {"B": 1}, "ff00", "s")]
    assert _offers(_checked(*picks)) == (("a", "ff00"), ("k", "ab12"))  # sorted: either order
    assert _offers(_checked(*picks[::-1])) == _offers(_checked(*picks))
    assert _offers(_checked()) == ()


def _checked(*picks: contract.Pick) -> contract.CheckReply:
    """A check's answer with these picks."""
    return contract.CheckReply(
        has_reference=True, atol=None, rtol=None, configs_picked=picks, correct=True,
        message="", digest=(), steps_s={},
    )  # fmt: skip


def test_what_a_worker_sends_is_kept_bounded_in_count_and_length() -> None:
    good = contract.Pick("k", {"BLOCK": 64, "num_warps": 4}, "", "")
    assert _picks(_checked(good)) == ("k: BLOCK=64, num_warps=4",)
    many = [contract.Pick(f"k{i}", {"B": i}, "", "") for i in range(50)]
    assert len(_picks(_checked(*many))) == MAX_PICKS
    huge = {"function": "k" * 10_000, "config": {f"K{i}" * 40: "v" * 500 for i in range(500)}}
    label = picked_label(huge)
    assert label is not None and len(label) <= MAX_LABEL
    # a value that is not JSON-plain is named, not passed through
    assert picked_label({"function": "k", "config": {"D": {"x": 1}}}) == "k: D={'x': 1}"


def test_an_autotuner_subclass_with_its_own_run_is_recorded_too() -> None:
    """FlagGems' LibTuner subclasses Triton's Autotuner and picks in its own ``run`` (timings
    kept in a database), never calling Triton's: its picks were missing from the sweep, and its
    cases' spread from process to process was blamed on buffer placement."""
    from triton.runtime.autotuner import Autotuner

    class OwnRun(Autotuner):
        def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.best_config = self.configs[1]
            return "ran"

    tuner = object.__new__(OwnRun)
    tuner.base_fn = matmul_kernel  # type: ignore[attr-defined]
    tuner.configs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=8)]
    with autotune_picks.recording() as picks:
        assert tuner.run() == "ran"
    assert [picked_label(p) for p in picks] == [
        "matmul_kernel: BLOCK=128, num_warps=8, num_stages=3"
    ]
    assert OwnRun.run.__name__ == "run" and "wrap" not in OwnRun.run.__qualname__  # put back


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128, 256) for w in (4, 8)]


def _tuner(kernel: object, fastest: int, configs: list | None = None) -> tuple[object, list]:
    """Triton's own autotuner over ``kernel``, its benchmark replaced by a fixed timing per
    config (``fastest`` wins: a process whose timings favour that config) and its launch by a
    record of the config run; ``benched`` lists the configs it timed."""
    tuner = triton.autotune(configs=list(configs or CONFIGS), key=["n"])(kernel)
    benched: list = []

    def bench(*args: object, config: object, **kwargs: object) -> list[float]:
        benched.append(config)
        return [1.0 if config is tuner.configs[fastest] else 2.0]

    tuner._bench = bench  # type: ignore[attr-defined]
    tuner.fn.run = lambda *a, **kw: kw  # type: ignore[attr-defined]  # no GPU: the config it ran
    return tuner, benched


def test_a_pin_fixes_an_identical_autotuner_to_the_config_another_process_picked() -> None:
    """Base's and head's processes each autotune among near-tied configs and pick differently
    (torchao's fp8 casts, FlagGems' bmm on the H200), so identical code read as a mixture of
    configs. Where head's kernel and configs are base's own, head runs base's pick untimed."""
    base, _ = _tuner(scale_kernel, fastest=1)
    with autotune_picks.recording(case="c1") as picks:
        base.run(None, 1000)
    (pick,) = picks
    assert pick["config"] == {"BLOCK": 64, "num_warps": 8, "num_stages": 3}
    assert pick["source"] and pick["offered"] and "pinned" not in pick

    head, benched = _tuner(scale_kernel, fastest=4)  # its own timings would pick another config
    with autotune_picks.recording([pick], case="c1") as head_picks:
        ran = head.run(None, 1000)
    assert ran["BLOCK"] == 64 and ran["num_warps"] == 8
    assert benched == []  # nothing timed: the pick was given
    assert head_picks == [{**pick, "pinned": True}]
    # the same case's next calls (the prepare after the check) keep it; another case puts the
    # autotuner's configs back and it chooses again
    with autotune_picks.recording(case="c1") as again:
        head.run(None, 1000)
    assert again == [{**pick, "pinned": True}] and len(head.configs) == 1
    with autotune_picks.recording(case="c2") as other:
        ran = head.run(None, 1000)
    assert len(head.configs) == len(CONFIGS) and len(benched) == len(CONFIGS)
    assert ran["BLOCK"] == 256 and "pinned" not in other[0]


def test_a_pin_from_other_code_or_other_configs_is_not_applied() -> None:
    """A pick is only given where the kernel's source (Triton's key of the function and what it
    calls) and the configs offered are the same: a rewrite or a tuning change chooses anew."""
    base, _ = _tuner(scale_kernel, fastest=1)
    with autotune_picks.recording(case="d1") as picks:
        base.run(None, 1000)
    (pick,) = picks
    for other in ({**pick, "source": "0" * 16}, {**pick, "offered": "0" * 16}):
        head, benched = _tuner(scale_kernel, fastest=4)
        with autotune_picks.recording([other], case=("d", other["source"])) as got:
            ran = head.run(None, 1000)
        assert ran["BLOCK"] == 256 and "pinned" not in got[0]
        assert len(benched) == len(CONFIGS)  # it chose again, timing every config
    fewer, _ = _tuner(scale_kernel, fastest=0, configs=CONFIGS[:4])
    with autotune_picks.recording([pick], case="d2") as got:
        fewer.run(None, 1000)
    assert got[0]["offered"] != pick["offered"] and "pinned" not in got[0]
    # different kernels have different sources; one kernel read twice, the same
    assert autotune_picks.source(base) == autotune_picks.source(_tuner(scale_kernel, 0)[0])
    assert autotune_picks.source(base) != autotune_picks.source(_tuner(shift_kernel, 0)[0])
