"""The rule that explains slow shapes: a class they share, joined with the compiler report.

Each case is a synthetic sweep built to have one pattern, or none: the rule must name the
pattern where it holds and claim nothing where it does not.
"""

from __future__ import annotations

import time

from bot.contracts.evidence import CompilerEvidence, CompilerRow, ShapeLine, SweepEvidence
from bot.review.explain import find_pattern, kernel_lines
from bot.words import slower_by, speed, speed_range
from checks.sweep.evidence import to_evidence
from checks.sweep.models import load_results
from tests.paths import DATA


def _line(shape: tuple[int, ...], dtype: str, ratio: float, **kw) -> ShapeLine:
    verdict = "SLOWER" if ratio > 1.03 else "FASTER" if ratio < 0.97 else "SAME"
    return ShapeLine(
        kernel=kw.pop("kernel", "add"), shape=shape, dtype=dtype, verdict=verdict, ratio=ratio, **kw
    )


def _sweep(*shapes: ShapeLine, vendor: str = "nvidia") -> SweepEvidence:
    return SweepEvidence(vendor=vendor, gpu="GPU", shapes=shapes)  # type: ignore[arg-type]


def _variant(spec: str, shapes: tuple[str, ...], bits: int, **kw) -> CompilerRow:
    fields = {
        "kernel": "add",
        "side": "new",
        "language": "triton",
        "vendor": "nvidia",
        "target": "sm_90",
        "config": "BLOCK=1024",
        "load_bits_max": bits,
        "specialization": spec,
        "shapes": shapes,
        **kw,
    }
    return CompilerRow(**fields)


# bf16 slower exactly at the lengths that do not divide by 16; fp32 unaffected
RAGGED_BF16 = (
    _line((4096,), "bfloat16", 1.0),
    _line((1 << 20,), "bfloat16", 0.99),
    _line((1 << 24,), "bfloat16", 1.01),
    _line((1000003,), "bfloat16", 1.6),
    _line((16777213,), "bfloat16", 2.2),
    _line((7,), "bfloat16", 1.15, small_or_ragged=True),
    _line((4096,), "float32", 1.0),
    _line((1000003,), "float32", 1.01),
    _line((16777213,), "float32", 0.99),
)
ADD_VARIANTS = CompilerEvidence(
    rows=(
        _variant("x:*bf16/16, n:i32/16", ("4096:bfloat16", "1048576:bfloat16"), 128),
        _variant("x:*bf16/16, n:i32", ("1000003:bfloat16",), 16),
        _variant("x:*fp32/16, n:i32", ("1000003:float32",), 32),
        # the other vendor's variants do not speak for an NVIDIA sweep
        _variant("x:*bf16/16, n:i32", ("1000003:bfloat16",), 128, vendor="amd", target="gfx942"),
    )
)


def test_ragged_sizes_in_one_dtype_are_joined_with_the_narrower_loads_of_their_specialization():
    (line,) = kernel_lines(_sweep(*RAGGED_BF16), ADD_VARIANTS)
    assert line == (
        "add: 3 of 9 shapes slower by 15.0% to 2.2x; bfloat16 is slower only at sizes not "
        "divisible by 16: head's specialization for n % 16 != 0 uses 16-bit loads "
        "(128-bit when n % 16 == 0)"
    )


def test_the_pattern_without_a_compiler_report_says_nothing_about_the_compiler():
    (line,) = kernel_lines(_sweep(*RAGGED_BF16))
    assert line.endswith("bfloat16 is slower only at sizes not divisible by 16")
    # nor does one whose variants load alike, or that only the other vendor compiled
    alike = CompilerEvidence(
        rows=(
            _variant("x:*bf16/16, n:i32/16", ("4096:bfloat16",), 128),
            _variant("x:*bf16/16, n:i32", ("1000003:bfloat16",), 128),
        )
    )
    assert kernel_lines(_sweep(*RAGGED_BF16), alike) == [line]
    amd_only = CompilerEvidence(rows=(ADD_VARIANTS.rows[0], ADD_VARIANTS.rows[3]))
    assert kernel_lines(_sweep(*RAGGED_BF16), amd_only) == [line]


def test_spills_are_named_when_the_loads_do_not_differ():
    rows = CompilerEvidence(
        rows=(
            _variant("x:*bf16/16, n:i32/16", ("4096:bfloat16",), 128, spill_bytes=0),
            _variant("x:*bf16/16, n:i32", ("1000003:bfloat16",), 128, spill_bytes=96),
        )
    )
    (line,) = kernel_lines(_sweep(*RAGGED_BF16), rows)
    assert line.endswith("n % 16 != 0 spills 96 bytes (0 when n % 16 == 0)")


def test_scattered_slow_shapes_have_no_pattern():
    scattered = (
        _line((4096,), "float32", 1.06),
        _line((1000003,), "float32", 1.04),
        _line((16777216,), "float32", 0.98),
        _line((67108864,), "float32", 0.95),
        _line((7,), "float32", 0.9, small_or_ragged=True),
        _line((16777213,), "float32", 1.04, small_or_ragged=True),
        _line((67108859,), "float32", 1.0, small_or_ragged=True),
    )
    assert find_pattern(scattered) is None
    assert kernel_lines(_sweep(*scattered), ADD_VARIANTS) == [
        "add: 3 of 7 shapes slower by 4.0–6.0%, with no pattern over size, alignment or dtype"
    ]


def test_one_slow_shape_or_every_shape_slow_is_no_pattern():
    one = (_line((1000003,), "float32", 1.2), *(_line((n,), "float32", 1.0) for n in (16, 32)))
    assert find_pattern(one) is None
    everywhere = tuple(_line((n,), "float32", 1.2) for n in (16, 17, 32, 33))
    assert find_pattern(everywhere) is None  # nothing to contrast with
    assert kernel_lines(_sweep(*everywhere)) == [
        "add: 4 of 4 shapes slower by 20.0%, with no pattern over size, alignment or dtype"
    ]


def test_nothing_slower_says_nothing():
    assert (
        kernel_lines(_sweep(*(_line((n,), "float32", 0.99) for n in (16, 17))), ADD_VARIANTS) == []
    )


def test_slower_only_at_the_smallest_sizes():
    shapes = tuple(
        _line((n, 1024), dtype, 1.2 if n <= 8 else 1.0, kernel="softmax")
        for n in (1, 8, 4096, 32768)
        for dtype in ("float16", "float32")
    )
    (line,) = kernel_lines(_sweep(*shapes))
    assert line == (
        "softmax: 4 of 8 shapes slower by 20.0%; slower only at the smallest 2 sizes, "
        "alike in float16 and float32"
    )


def test_slow_added_shapes_in_every_dtype_alike_never_a_served_one():
    shapes = tuple(
        _line(shape, dtype, ratio, kernel="matmul", small_or_ragged=added)
        for shape, ratio, added in (
            ((4096, 4096, 4096), 0.9, False),
            ((1000, 1000, 1000), 0.88, False),
            ((8191, 1021, 8191), 1.12, True),
            ((7, 13, 31), 1.19, True),
            ((997, 997, 997), 0.93, True),
        )
        for dtype in ("float16", "bfloat16")
    )
    (line,) = kernel_lines(_sweep(*shapes))
    assert line == (
        "matmul: 4 of 10 shapes slower by 12.0–19.0%; slower at 4 of the 6 added small and "
        "ragged shapes and at no served shape, alike in bfloat16 and float16"
    )


def test_failed_shapes_are_not_counted_as_timed():
    shapes = (*RAGGED_BF16, ShapeLine(kernel="add", shape=(33,), dtype="bfloat16", verdict="WRONG"))
    (line,) = kernel_lines(_sweep(*shapes))
    assert line.startswith("add: 3 of 9 shapes slower")


def test_speed_in_words():
    assert speed(0.91) == "9.0% faster"
    assert speed(1.057) == "5.7% slower"
    assert speed(2.4145) == "2.4x slower"
    assert speed(1.0002) == "as fast"
    assert speed_range(0.9, 0.92) == "8.0–10.0% faster"
    assert speed_range(1.031, 1.052) == "3.1–5.2% slower"
    assert speed_range(0.98, 1.01) == "2.0% faster to 1.0% slower"
    assert slower_by(1.044, 2.41) == "by 4.4% to 2.4x"
    assert slower_by(2.2, 2.41) == "by 2.2–2.4x"
    assert slower_by(1.05, 1.05) == "by 5.0%"
    assert speed_range(2.41, 2.42) == "2.4x slower"
    assert speed_range(1.044, 2.41) == "4.4% to 2.4x slower"


def test_the_recorded_h200_fixture_review_explains_vector_add_and_matmul():
    """The fixture's measure job on an H200 (bench/results/h200/fixture_review)."""
    from bot.contracts.results import ResultsFile
    from tests.paths import ROOT

    path = ROOT / "bench/results/h200/fixture_review/results-nvidia.json"
    ev = ResultsFile.model_validate_json(path.read_text(encoding="utf-8")).evidence
    lines = {line.split(":")[0]: line for line in kernel_lines(ev.sweeps[0], ev.compiler)}
    assert lines["vector_add"] == (
        "vector_add: 7 of 16 shapes slower by 3.5% to 2.4x; bfloat16 is slower only at sizes "
        "not divisible by 16 (5 shapes, by 3.5% to 2.4x): head's specialization for "
        "n_elements % 16 != 0 uses 16-bit loads (128-bit when n_elements % 16 == 0); "
        "2 other shapes slower by 3.9–5.6%, with no common pattern"
    )
    assert lines["matmul"] == (
        "matmul: 4 of 18 shapes slower by 11.4–18.8%; slower at 4 of the 8 added small and "
        "ragged shapes and at no served shape, alike in bfloat16 and float16"
    )


def test_the_recorded_h200_fixture_reviews_undecided_shapes_say_their_stop_as_then():
    """The fixture's results were written before a line kept its clauses: each has them and its
    stop read from its detail at load, and says why it is undecided as the review said it."""
    import json

    from bot.contracts.results import ResultsFile
    from bot.review.explain import inconclusive_reason
    from tests.paths import ROOT

    text = (ROOT / "bench/results/h200/fixture_review/results-nvidia.json").read_text("utf-8")
    raw = json.loads(text)["evidence"]["sweeps"][0]["shapes"]
    assert not any("clauses" in x or "stop_reason" in x for x in raw)
    (s,) = ResultsFile.model_validate_json(text).evidence.sweeps
    undecided = [x for x in s.shapes if x.verdict == "INCONCLUSIVE"]
    assert [(x.stop_reason, x.rounds) for x in undecided] == [("max_rounds", 200)]
    assert [inconclusive_reason(x) for x in undecided] == [
        "it ran all 200 rounds without the interval getting narrow enough"
    ]


def _conclude_sweeps(*sweeps: SweepEvidence) -> str:
    from bot.contracts.evidence import Evidence
    from bot.contracts.review import ChangeLine
    from bot.policy.load import parse_policy
    from bot.review.conclude import conclude, review_context

    policy = parse_policy(
        '[deployment]\nkind = "long-lived"\n\n[[kernels]]\nname = "softmax"\n'
        'bench = "toyops.bench:softmax"\npaths = ["toyops/softmax.py"]\n'
        'dtypes = ["float16", "float32"]\nshapes = [[4096, 4096]]\n'
    )
    changes = [ChangeLine(kernel="softmax", kind="tuning", new_paths=("toyops/softmax.py",))]
    ctx = review_context(
        policy, base_sha="b" * 40, head_sha="a" * 40, repository="o/r", policy_source="p"
    )
    return conclude(changes, policy, Evidence(sweeps=sweeps), ctx).comment


def test_ten_thousand_shapes_are_explained_and_reported_in_seconds():
    # every shape its own size: the classes "the smallest k sizes" were 2 x 10,000 classes, each
    # tested against every shape (4,000 shapes took 83 s); a results file may carry this many
    n = 10_000
    one_kernel = _sweep(
        *(
            _line((i + 1, 781), dtype, 1.2 if i < n // 3 else 1.0, kernel="softmax")
            for i in range(n // 2)
            for dtype in ("float16", "float32")
        )
    )
    many_kernels = _sweep(
        *(_line((i + 1,), "float32", 1.2, kernel=f"k{i}") for i in range(n)), vendor="amd"
    )
    start = time.process_time()  # this process's CPU time: the machine's other load aside
    (line,) = kernel_lines(one_kernel)
    comment = _conclude_sweeps(one_kernel, many_kernels)
    elapsed = time.process_time() - start
    assert line == (
        f"softmax: {2 * (n // 3)} of {n} shapes slower by 20.0%; slower only at the smallest "
        f"{n // 3} sizes, alike in float16 and float32"
    )
    assert "slower only at the smallest" in comment
    assert elapsed < 10, f"{n} shapes took {elapsed:.1f} s of CPU time to explain and report"


def test_twenty_thousand_kernels_past_the_tolerance_are_counted_in_seconds():
    # one shape each: the sweep's summary counted the kernels past the first three by testing
    # each shape against a set of them made again for every shape (25 s of CPU time here)
    n = 20_000
    many_kernels = _sweep(
        *(_line((i + 1,), "float32", 1.2, kernel=f"k{i}") for i in range(n)), vendor="amd"
    )
    one_kernel = _sweep(_line((1, 781), "float32", 1.0, kernel="softmax"))
    start = time.process_time()  # this process's CPU time: the machine's other load aside
    comment = _conclude_sweeps(one_kernel, many_kernels)
    elapsed = time.process_time() - start
    rest = n - 3  # the first three kernels are counted by name
    assert f"and {rest} shapes of {rest} more kernels" in comment
    assert elapsed < 8, f"{n} kernels took {elapsed:.1f} s of CPU time to explain and report"


ONBOARDING = DATA / "device_onboarding" / "tritonbench" / "results-sweep.json"


def test_the_onboardings_run_of_slow_sizes_is_said_with_its_one_exception():
    """The H200's sweep of vector_add with 2048-element blocks: slower at every size from 7 to
    1048576, within tolerance at size 1 and at every size from 4194304 up. One shape inside the
    run is not slower: the line names it instead of calling the slow shapes patternless."""
    sweep = to_evidence(load_results(ONBOARDING))
    (line,) = kernel_lines(sweep)
    assert line == (
        "vector_add: 9 of 16 shapes slower by 4.0–28.7%; slower at every size up to 1048576 "
        "except size 1 (2.3% slower, within tolerance); none slower from 4194304 up"
    )


def test_a_run_of_slow_sizes_tolerates_one_exception_at_either_end():
    sizes = [2**k for k in range(4, 16)]  # 12 sizes
    small = tuple(
        _line((n,), "float32", 1.0 if n == 64 else 1.2 if n <= 1024 else 1.0) for n in sizes
    )
    p = find_pattern(small)
    assert p is not None and [x.shape for x in p.exceptions] == [(64,)]
    assert p.words() == (
        "at every size up to 1024 except size 64 (as fast, within tolerance); none slower from 2048 up"
    )
    large = tuple(_line((n,), "float32", 1.2 if n >= 2048 and n != 8192 else 1.01) for n in sizes)
    p = find_pattern(large)
    assert p is not None and p.words() == (
        "at every size from 2048 up except size 8192 (1.0% slower, within tolerance); "
        "none slower up to 1024"
    )


def test_scattered_slow_sizes_stay_without_a_pattern_however_many():
    """Every other size slower: no run of sizes holds them with one exception, so the line
    claims nothing; two exceptions in a run are not tolerated either."""
    sizes = [2**k for k in range(4, 16)]
    alternate = tuple(_line((n,), "float32", 1.2 if i % 2 else 1.0) for i, n in enumerate(sizes))
    assert find_pattern(alternate) is None
    (line,) = kernel_lines(_sweep(*alternate))
    assert line.endswith("with no pattern over size, alignment or dtype")
    two_holes = tuple(
        _line((n,), "float32", 1.0 if n in (64, 256) else 1.2 if n <= 2048 else 1.0) for n in sizes
    )
    assert find_pattern(two_holes) is None
    short = tuple(  # three slow sizes and a hole: too short a run to excuse it
        _line((n,), "float32", 1.0 if n == 32 else 1.2 if n <= 128 else 1.0) for n in sizes
    )
    assert find_pattern(short) is None


def test_a_lower_occupancy_is_read_from_its_numbers_not_its_words():
    """Loads and spills alike: the slow class's variant is named by its occupancy, in whole
    percent, whatever words the row says it in."""

    def occupied(spec: str, shapes: tuple[str, ...], fraction: float) -> CompilerRow:
        return _variant(
            spec,
            shapes,
            128,
            occupancy=f"{fraction:.2f} of the SM",
            occupancy_resident=round(fraction * 64),
            occupancy_unit="warps/SM",
            occupancy_fraction=fraction,
        )

    rows = CompilerEvidence(
        rows=(
            occupied("x:*bf16/16, n:i32/16", ("4096:bfloat16",), 0.25),
            occupied("x:*bf16/16, n:i32", ("1000003:bfloat16",), 0.125),
        )
    )
    (line,) = kernel_lines(_sweep(*RAGGED_BF16), rows)
    assert line.endswith("n % 16 != 0 runs at 12% occupancy (25% when n % 16 == 0)")
