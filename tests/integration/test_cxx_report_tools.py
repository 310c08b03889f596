"""The C++ compiler report with the machine's tools: nvcc compiling real sources, and recorded
compiler output whose kernel names the machine's ``cu++filt`` or ``c++filt`` demangles (each a
process, so not in tests/unit, where the parsers are tested on their own)."""

from __future__ import annotations

import shutil

import pytest

from checks.compiler.cxx_report import hip_records, nvcc_report, nvidia_records
from tests.paths import DATA as TEST_DATA
from tests.paths import ROOT

CUDA_SRC = TEST_DATA / "kernels" / "cuda" / "resources.cu"
DATA = TEST_DATA / "compiler"
FIXTURE_CSRC = ROOT / "kernels_fixture" / "toyops" / "csrc"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _by_name(records):
    return {r.function.split("(")[0].split("<")[0]: r for r in records}


def test_recorded_nvcc_output_gives_records():
    ptx = (DATA / "resources_sm90.ptx").read_text()
    log = (DATA / "resources_sm90.ptxas.txt").read_text()
    recs = _by_name(nvidia_records("toy", "sm_90", ptx, log, source="resources.cu"))
    assert set(recs) == {"add_kernel", "row_sum_kernel", "spill_kernel", "wmma_kernel"}
    spill = recs["spill_kernel"]
    assert (spill.spill_bytes, spill.spill_count, spill.threads_per_block) == (1132, 283, 1024)
    # 32 regs x 1024 threads: two blocks of 32 warps fill the SM
    assert (spill.occupancy_warps_per_sm, spill.occupancy_fraction) == (64, 1.0)
    assert recs["add_kernel"].global_load_bits_max == 128  # float4 loads
    assert recs["row_sum_kernel"].shared_bytes == 2048
    assert recs["wmma_kernel"].matrix_instr.startswith("wmma.mma")
    assert recs["add_kernel"].matrix_instr is None
    assert all(r.language == "cuda" and r.error is None for r in recs.values())


def test_amdgcn_metadata_gives_hip_records():
    recs = _by_name(hip_records("toy", "gfx942", (DATA / "hip_kernels_gfx942.s").read_text()))
    assert set(recs) == {"add_kernel", "row_sum_kernel", "mfma_kernel"}
    add = recs["add_kernel"]
    assert (add.regs_per_thread, add.sgprs_per_wave, add.threads_per_block) == (14, 15, 256)
    assert recs["row_sum_kernel"].shared_bytes == 1024  # static LDS
    mfma = recs["mfma_kernel"]
    assert mfma.regs_per_thread == 24  # 8 arch VGPRs (6, 4-aligned) + 16 AGPRs
    # recomputed occupancy agrees with what the compiler printed (no dynamic LDS here)
    for r in recs.values():
        assert r.occupancy_waves_per_simd == r.compiler_occupancy_waves_per_simd == 8
    assert mfma.matrix_instr == "v_mfma_f32_32x32x8_f16"
    assert add.global_load_bits_max == 128


def test_remarks_report_spills():
    text = "\n".join(
        f"k.hip:3:1: remark: {body} [-Rpass-analysis=kernel-resource-usage]"
        for body in (
            "Function Name: _Z1kv",
            "    SGPRs: 104",
            "    VGPRs: 256",
            "    AGPRs: 256",
            "    ScratchSize [bytes/lane]: 208",
            "    Occupancy [waves/SIMD]: 1",
            "    SGPRs Spill: 6",
            "    VGPRs Spill: 67",
            "    LDS Size [bytes/block]: 65536",
        )
    )
    [rec] = hip_records("k", "gfx90a", text)
    assert (rec.regs_per_thread, rec.spill_count, rec.spill_bytes) == (512, 73, 268)
    assert (rec.stack_bytes, rec.shared_bytes) == (208, 65536)
    assert rec.regs_per_thread == rec.max_regs_per_thread


@needs_nvcc
def test_nvcc_compiles_and_reads_back_the_spilling_kernel():
    recs = _by_name(nvcc_report("toy", CUDA_SRC, ["sm_90"]))
    assert recs["spill_kernel"].spill_bytes > 0
    assert recs["spill_kernel"].regs_per_thread <= 32
    assert recs["add_kernel"].spill_bytes == 0
    assert recs["row_sum_kernel"].shared_bytes == 2048
    assert recs["wmma_kernel"].matrix_instr is not None


@needs_nvcc
def test_nvcc_failure_is_a_record_not_an_exception(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x) { x[0] = undefined_name; }\n")
    [rec] = nvcc_report("bad", bad, ["sm_90"])
    assert rec.error is not None and "undefined_name" in rec.error
    assert rec.error_stage == "compile"


@needs_nvcc
@pytest.mark.skipif(not (FIXTURE_CSRC / "matmul.cu").is_file(), reason="fixture not present")
def test_fixture_cuda_matmul_compiles():
    recs = nvcc_report("matmul", FIXTURE_CSRC / "matmul.cu", ["sm_90"])
    assert recs and all(r.error is None for r in recs)
    assert all(r.regs_per_thread and r.threads_per_block for r in recs)
