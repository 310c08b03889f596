"""How many input copies a worker rotates through: twice L2 where the count allows it, well
inside L2 where it does not, never the half-in-L2 middle where identical code read apart from
one process to another (numbers from the H200: 60 MB of L2)."""

from __future__ import annotations

from checks.worker.timing import RESIDENT_COPIES, RESIDENT_SHARE, input_copies

L2 = 60 * 2**20
CAPS = {"max_copies": 256, "max_bytes": 4 * 2**30}


def test_copies_overflow_l2_twice_where_the_count_allows() -> None:
    for footprint in (2**16 * 8, 2**20 * 12, 2**24 * 8):  # 0.5 MB, 12 MB, 128 MB a call
        n = input_copies(footprint, L2, **CAPS)
        assert n * footprint >= 2 * L2 and (n - 1) * footprint < 2 * L2, footprint
    assert input_copies(2**16 * 8, L2, **CAPS) == 240


def test_inputs_too_small_to_overflow_stay_well_inside_l2() -> None:
    for footprint in (8, 4096, 65540, 2**15 * 8, 2 * L2 // 256 - 1):
        n = input_copies(footprint, L2, **CAPS)
        assert n <= RESIDENT_COPIES and n * footprint <= L2 // RESIDENT_SHARE, footprint
        assert n * footprint < L2 // 4  # never a quarter to a half of L2
    assert input_copies(8, L2, **CAPS) == RESIDENT_COPIES  # a few bytes: as many as allowed


def test_bytes_count_and_unknown_l2() -> None:
    assert input_copies(2**30, L2, **CAPS) == 1  # larger than L2: one is enough
    assert input_copies(2**16 * 8, L2, max_copies=256, max_bytes=2**20) == 2  # byte cap
    assert input_copies(2**16 * 8, L2, max_copies=8, max_bytes=2**31) == 7  # count cap: inside
    assert input_copies(4096, None, **CAPS) == 4  # the CPU: a few
    assert input_copies(4096, 0, **CAPS) == 1  # a GPU that does not say its L2
