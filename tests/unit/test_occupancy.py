from __future__ import annotations

import pytest

from bot.errors import PolicyError
from checks.compiler.occupancy import amd_occupancy, nvidia_occupancy
from checks.compiler.targets import parse_target


def test_register_limited_on_hopper():
    # 255 registers x 32 lanes = 8160, allocated as 8192 per warp: 65536 / 8192 = 8 warps
    occ = nvidia_occupancy(90, regs_per_thread=255, shared_bytes=0, warps_per_block=4)
    assert (occ.warps_per_sm, occ.blocks_per_unit, occ.limiter) == (8, 2, "registers")
    assert occ.fraction == pytest.approx(8 / 64)


def test_small_kernel_fills_the_sm():
    occ = nvidia_occupancy(90, regs_per_thread=26, shared_bytes=0, warps_per_block=4)
    assert (occ.warps_per_sm, occ.fraction, occ.limiter) == (64, 1.0, "none")


def test_register_allocation_rounds_up_per_warp():
    # 34 x 32 = 1088 -> 1280 per warp: 51 warps fit, i.e. 6 blocks of 8 warps
    occ = nvidia_occupancy(90, regs_per_thread=34, shared_bytes=0, warps_per_block=8)
    assert occ.warps_per_sm == 48
    assert occ.limiter == "registers"


def test_shared_memory_includes_the_reserved_kilobyte():
    # 100 KiB + 1 KiB reserved per block: two blocks fit in 228 KiB, not more
    occ = nvidia_occupancy(90, regs_per_thread=32, shared_bytes=100 * 1024, warps_per_block=4)
    assert (occ.blocks_per_unit, occ.limiter) == (2, "shared")
    # 113 KiB + 1 KiB per block: exactly two blocks of 114 KiB fill the 228 KiB
    assert (
        nvidia_occupancy(
            90, regs_per_thread=32, shared_bytes=113 * 1024, warps_per_block=4
        ).blocks_per_unit
        == 2
    )
    assert (
        nvidia_occupancy(
            90, regs_per_thread=32, shared_bytes=114 * 1024, warps_per_block=4
        ).blocks_per_unit
        == 1
    )


def test_more_shared_memory_than_a_block_may_have_runs_nothing():
    occ = nvidia_occupancy(80, regs_per_thread=32, shared_bytes=200 * 1024, warps_per_block=4)
    assert occ.blocks_per_unit == 0
    assert occ.fraction == 0.0


def test_one_warp_blocks_hit_the_block_limit():
    occ = nvidia_occupancy(90, regs_per_thread=16, shared_bytes=0, warps_per_block=1)
    assert (occ.warps_per_sm, occ.limiter) == (32, "blocks")


def test_ampere_consumer_parts_have_fewer_warps():
    a100 = nvidia_occupancy(80, regs_per_thread=16, shared_bytes=0, warps_per_block=8)
    a10 = nvidia_occupancy(86, regs_per_thread=16, shared_bytes=0, warps_per_block=8)
    assert (a100.warps_per_sm, a10.warps_per_sm) == (64, 48)
    assert a10.fraction == 1.0


def test_amd_vgprs_decide_the_waves_per_simd():
    def waves(vgprs: int) -> int | None:
        return amd_occupancy(
            "gfx942", vgprs=vgprs, sgprs=None, lds_bytes=0, waves_per_block=4
        ).waves_per_simd

    # 512 VGPRs per SIMD lane, granules of 8, at most 8 waves
    assert [waves(v) for v in (10, 64, 65, 128, 168, 296, 512)] == [8, 8, 7, 4, 3, 1, 1]


def test_amd_lds_limits_workgroups_per_cu():
    # 64 KiB of LDS per CU: a 32 KiB workgroup of 4 waves fits twice -> 2 waves per SIMD
    occ = amd_occupancy("gfx942", vgprs=64, sgprs=None, lds_bytes=32768, waves_per_block=4)
    assert (occ.blocks_per_unit, occ.waves_per_simd, occ.limiter) == (2, 2, "shared")
    # gfx950 has 160 KiB
    occ = amd_occupancy("gfx950", vgprs=64, sgprs=None, lds_bytes=32768, waves_per_block=4)
    assert occ.blocks_per_unit == 5


def test_amd_sgprs_can_limit_on_gfx9():
    # 800 SGPRs per SIMD in granules of 16: 104 -> 112 each, 7 waves
    occ = amd_occupancy("gfx90a", vgprs=32, sgprs=104, lds_bytes=0, waves_per_block=1)
    assert (occ.waves_per_simd, occ.limiter) == (7, "sgprs")


def test_amd_workgroup_spreads_over_four_simds():
    # 8 waves per workgroup occupy two waves on each SIMD: a 4-wave VGPR limit allows 2 groups
    occ = amd_occupancy("gfx942", vgprs=128, sgprs=None, lds_bytes=0, waves_per_block=8)
    assert (occ.blocks_per_unit, occ.waves_per_simd) == (2, 4)


def _vendor_and_arch(name: str) -> tuple[str, int | str]:
    vendor, arch = parse_target(name)
    return vendor.vendor, arch


def test_targets_are_parsed_and_unknown_ones_refused():
    assert _vendor_and_arch("sm_90") == ("nvidia", 90)
    assert _vendor_and_arch("sm_90a") == ("nvidia", 90)
    assert _vendor_and_arch("gfx942") == ("amd", "gfx942")
    with pytest.raises(PolicyError, match="unknown compile target"):
        parse_target("hopper")
    with pytest.raises(PolicyError, match="no occupancy table for sm_75"):
        nvidia_occupancy(75, regs_per_thread=32, shared_bytes=0, warps_per_block=4)
    with pytest.raises(PolicyError, match="no occupancy table for gfx1100"):
        amd_occupancy("gfx1100", vgprs=32, sgprs=None, lds_bytes=0, waves_per_block=4)
