"""The C++ compiler report's parsers on recorded compiler output (the report run with the
machine's tools: tests/integration/test_cxx_report_tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import CompilerError
from checks.compiler import isa_parse
from checks.compiler.cxx_report import hipcc_report, nvcc_report
from tests.paths import DATA as TEST_DATA

CUDA_SRC = TEST_DATA / "kernels" / "cuda" / "resources.cu"
DATA = TEST_DATA / "compiler"


def test_ptxas_log_parsed_per_kernel():
    usage = {
        u.function: u
        for u in isa_parse.parse_ptxas_log((DATA / "resources_sm90.ptxas.txt").read_text())
    }
    spill = usage["_Z12spill_kernelPKfPfi"]
    assert (spill.regs_per_thread, spill.stack_bytes) == (32, 496)
    assert (spill.spill_store_bytes, spill.spill_load_bytes) == (1132, 1184)
    row_sum = usage["_Z14row_sum_kernelPKfPfi"]
    assert (row_sum.static_shared_bytes, row_sum.barriers) == (2048, 1)
    assert usage["_Z10add_kernelPK6float4S1_PS_i"].arch == "sm_90"


def test_cuobjdump_resource_usage_parsed():
    usage = {
        u.function: u
        for u in isa_parse.parse_cuobjdump_resource_usage(
            (DATA / "resources_sm90.cuobjdump.txt").read_text()
        )
    }
    assert len(usage) == 4
    assert (
        usage["_Z12spill_kernelPKfPfi"].regs_per_thread,
        usage["_Z12spill_kernelPKfPfi"].stack_bytes,
    ) == (32, 496)
    # the driver's reserved kilobyte is in cuobjdump's number, not in ptxas'
    assert usage["_Z14row_sum_kernelPKfPfi"].static_shared_bytes == 3072


def test_resource_remarks_match_the_metadata():
    from_asm = {
        u.function: u for u in isa_parse.parse_amdgcn((DATA / "hip_kernels_gfx942.s").read_text())
    }
    remarks = isa_parse.parse_amdgpu_remarks((DATA / "hipcc_remarks_gfx942.txt").read_text())
    assert [u.function for u in remarks] == list(from_asm)
    for u in remarks:
        meta = from_asm[u.function]
        assert (u.vgprs, u.sgprs, u.static_lds_bytes) == (
            meta.vgprs,
            meta.sgprs,
            meta.static_lds_bytes,
        )
        assert u.reported_occupancy_waves_per_simd == 8
    assert remarks[2].agprs == 16


def test_missing_hipcc_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(CompilerError, match="hipcc is not on PATH"):
        hipcc_report("k", Path("k.hip"), ["gfx942"])
    with pytest.raises(CompilerError, match="nvcc is not on PATH"):
        nvcc_report("k", CUDA_SRC, ["sm_90"])


@pytest.mark.parametrize(
    "demangled",
    [
        # GNU c++filt
        "void (anonymous namespace)::softmax_kernel<float, 256>(float const*, float*, int, int)",
        # the EDG style of cu++filt, preferred where a CUDA toolkit is installed
        "void <unnamed>::softmax_kernel<float, 256>(const float *, float *, int, int)",
        "void toyops::detail::softmax_kernel<float, 256>(const float *, float *, int, int)",
    ],
)
def test_kernel_names_lose_return_type_namespaces_and_parameters(demangled: str) -> None:
    from checks.compiler.cxx_report import _short

    assert _short(demangled) == "softmax_kernel<float, 256>"


def test_names_keep_nested_template_arguments() -> None:
    from checks.compiler.cxx_report import _short

    assert _short("void k<std::pair<int, int> >(int)") == "k<std::pair<int, int> >"
    assert _short("vector_add_kernel(float const*, int)") == "vector_add_kernel"
