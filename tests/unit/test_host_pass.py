"""A C++ line compiled by the host pass alone (``#else`` of ``#if defined(__CUDA_ARCH__)``) is
not device code: a macro it defines changes no kernel body (``reach/host_cpp.host_pass_only``).

Shortened from csrc/qattn/qk_int_sv_f8_cuda_sm90.cuh of thu-ml/SpargeAttn (Apache-2.0): at
34225d37d9d2 the host pass's ``RUNTIME_ASSERT(x)`` became ``((void)0)`` (its parent asserted);
device code keeps ``__brkpt()`` (the corpus holds the whole pull request). The second excerpt is
csrc/mma.cuh of thu-ml/SageAttention (Apache-2.0) at d1a57a546c3d: the same host-pass block
beside compound architecture tests that both passes compile.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.reach.host_cpp import host_pass_only
from tests.diff_util import file_diff

PATH = "csrc/qattn/qk_int_sv_f8_cuda_sm90.cuh"
BEFORE = """\
#if (!defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 900))
#define SM90_ENABLED
#endif

#if defined(__CUDA_ARCH__)
#define RUNTIME_ASSERT(x) __brkpt()
#else
#include <assert.h>
#define RUNTIME_ASSERT(x) assert(0 && x)
#endif

#ifdef SM90_ENABLED
__device__ __forceinline__ void wait(uint64_t* bar, int kPhaseBit)
{
  uint32_t mbar_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
}
#else
__device__ __forceinline__ void wait(uint64_t* bar, int kPhaseBit){
  RUNTIME_ASSERT("Unsupported CUDA architecture for wait instruction");
}
#endif

__global__ void qk_int8_sv_f8_attn_kernel(float* O, uint64_t* barrier_Q)
{
  wait(barrier_Q, 0);
  O[threadIdx.x] = 0.f;
}
"""
HOST_PASS = BEFORE.replace(
    "#include <assert.h>\n#define RUNTIME_ASSERT(x) assert(0 && x)",
    "//#include <assert.h>\n//#define RUNTIME_ASSERT(x) assert(0 && x)\n"
    "#define RUNTIME_ASSERT(x) ((void)0)",
)
DEVICE_PASS = BEFORE.replace("__brkpt()", "__trap()")

SAGE_MMA = """\
namespace mma{

#if (__CUDACC_VER_MAJOR__ >= 11)
#if (!defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 800))
#define MMA_F16F16F32_M16N8K16_ENABLED
#if (!defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 890))
#define MMA_F8F8F16_M16N8K16_ENABLED
#endif
#endif

#if defined(__CUDA_ARCH__)
#define RUNTIME_ASSERT(x) __brkpt()
#else
#include <assert.h>
#define RUNTIME_ASSERT(x) assert(0 && x)
#endif
"""


def _changes(after: str) -> list[tuple[str, str, list[str]]]:
    old, new = {PATH: BEFORE}, {PATH: after}
    analysis = analyze_diff(
        file_diff(PATH, BEFORE, after),
        old_source=old.get,
        new_source=new.get,
        old_files=[PATH],
        thrifty=False,
    )
    return [(c.kind, c.name, c.via_helpers) for c in analysis.changes]


def test_a_host_pass_macro_changes_no_kernel() -> None:
    assert _changes(HOST_PASS) == []


def test_the_device_pass_macro_still_changes_the_kernel_through_its_helper() -> None:
    assert _changes(DEVICE_PASS) == [("body", "qk_int8_sv_f8_attn_kernel", ["RUNTIME_ASSERT"])]


def test_host_pass_lines_of_a_real_header() -> None:
    lines = SAGE_MMA.split("\n")

    def at(text: str) -> int:
        return lines.index(text) + 1

    assert host_pass_only(lines, at("#define RUNTIME_ASSERT(x) assert(0 && x)"))
    assert not host_pass_only(lines, at("#define RUNTIME_ASSERT(x) __brkpt()"))
    # ``!defined(__CUDA_ARCH__) || ...``: both passes compile it
    assert not host_pass_only(lines, at("#define MMA_F8F8F16_M16N8K16_ENABLED"))
    negated = ["#ifndef __CUDA_ARCH__", "#define X 1", "#else", "#define X 2", "#endif"]
    assert host_pass_only(negated, 2) and not host_pass_only(negated, 4)


def test_a_changed_macro_definition_is_not_text_only_from_the_hunks_alone() -> None:
    # the diff's lines hold the definition, not its uses: they cannot show the same program
    analysis = analyze_diff(file_diff(PATH, BEFORE, DEVICE_PASS))
    assert [u.path for u in analysis.unclassified] == [PATH]
    assert "not the program" not in analysis.unclassified[0].why
