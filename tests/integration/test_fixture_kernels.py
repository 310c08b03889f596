"""The fixture's kernels: Triton ones run under the interpreter on the CPU, CUDA ones compile.

Triton runs in a subprocess with ``TRITON_INTERPRET=1`` so that this process keeps compiled
Triton for the other tests. The interpreter does not do bf16 arithmetic in ``tl.dot``
(triton-lang/triton#11584) and rounds fp32 to bf16 by truncation, so bf16 matmul is checked on
the GPU only (bench/fixture_gpu_check.py) and bf16 elsewhere gets one ulp. The Triton kernels
are also cross-compiled for sm_90 and gfx942, which needs no GPU.

There is no ROCm compiler here: the HIP sources are checked as text (HIP headers and launches,
64-lane wavefront shuffles, the same kernels and launcher as the CUDA twin) and type-checked by
nvcc against a small stand-in for the HIP headers that maps them onto CUDA. That catches typos
and type errors, not AMD code generation.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.interpreted import Interpreter
from tests.paths import ROOT

CSRC = ROOT / "kernels_fixture" / "toyops" / "csrc"
OPS = ("vector_add", "softmax", "matmul")

# What torch.utils.cpp_extension passes to nvcc: no implicit half/bfloat16 operators.
TORCH_NVCC_FLAGS = (
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


# --- Triton, interpreted -------------------------------------------------------------------------


def test_triton_vector_add_matches_torch_on_ragged_lengths(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        import torch
        from kernels_fixture.toyops.vector_add import BLOCK_SIZE, vector_add
        gen = torch.Generator().manual_seed(1)
        checked = 0
        for n in (1, 17, 4097, 3 * BLOCK_SIZE + 5):
            for dtype in (torch.float32, torch.float16, torch.bfloat16):
                x = torch.randn(n, generator=gen).to(dtype)
                y = torch.randn(n, generator=gen).to(dtype)
                tol = 2**-7 if dtype == torch.bfloat16 else 0.0
                torch.testing.assert_close(vector_add(x, y), x + y, atol=tol, rtol=tol)
                checked += 1
        # A strided view and a 2-D shape go through the same kernel.
        x = torch.randn(64, 34, generator=gen)
        torch.testing.assert_close(vector_add(x[:, ::2], x[:, 1::2]), x[:, ::2] + x[:, 1::2], atol=0, rtol=0)
        try:
            vector_add(torch.zeros(3), torch.zeros(4))
        except ValueError as exc:
            assert "one shape" in str(exc)
        else:
            raise AssertionError("mismatched shapes were accepted")
        print("checked", checked)
        """
    )
    assert "checked 12" in out


def test_triton_softmax_matches_torch_on_ragged_shapes(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        import torch
        from kernels_fixture.toyops.softmax import softmax
        gen = torch.Generator().manual_seed(2)
        tols = {torch.float32: (1e-6, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (2**-7, 2**-7)}
        checked = 0
        for rows, cols in ((1, 1), (3, 17), (17, 33), (5, 1000), (2, 4097)):
            for dtype, (atol, rtol) in tols.items():
                x = (3 * torch.randn(rows, cols, generator=gen)).to(dtype)
                y = softmax(x)
                assert y.dtype == dtype and y.shape == x.shape
                expected = torch.softmax(x.float(), dim=1)
                torch.testing.assert_close(y.float(), expected, atol=atol, rtol=rtol)
                checked += 1
        # Rows that do not start at multiples of cols: a column slice of a wider matrix.
        wide = torch.randn(9, 50, generator=gen)
        torch.testing.assert_close(softmax(wide[:, :37]), torch.softmax(wide[:, :37], dim=1))
        # Very negative and very positive values stay finite (the row max is subtracted).
        x = torch.tensor([[-1e4, 0.0, 1e4], [80.0, 90.0, 100.0]])
        torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
        # A persistent grid: 3 programs loop over 10 rows (4, 3 and 3 rows each).
        from kernels_fixture.toyops.softmax import launch
        x = torch.randn(10, 300, generator=gen)
        y = torch.full_like(x, float("nan"))
        launch(y, x, programs=3, block_size=512, num_warps=4, num_stages=2)
        torch.testing.assert_close(y, torch.softmax(x, dim=1))
        print("checked", checked)
        """
    )
    assert "checked 15" in out


@pytest.mark.slow
def test_triton_softmax_tutorial_shape_1823x781(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        import importlib
        softmax_module = importlib.import_module("kernels_fixture.toyops.softmax")
        softmax_module._check("cpu")
        """
    )
    assert "matches torch on 1823x781" in out


def test_triton_matmul_every_autotune_config_on_ragged_shapes(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        import torch
        from kernels_fixture.toyops.matmul import autotune_configs, matmul
        gen = torch.Generator().manual_seed(3)
        def check(M, N, K, dtype, config=None):
            a = torch.randn(M, K, generator=gen).to(dtype)
            b = torch.randn(K, N, generator=gen).to(dtype)
            c = matmul(a, b, config=config)
            assert c.shape == (M, N) and c.dtype == dtype
            expected = (a.float() @ b.float()).to(dtype)
            torch.testing.assert_close(c, expected, atol=1e-2, rtol=1e-2)
        checked = 0
        for backend in ("cuda", "hip"):
            configs = autotune_configs(backend)
            # Every config on shapes ragged in M, N and K (masks and wrap-around rows/columns).
            for config in configs:
                check(17, 33, 65, torch.float16, config)
                checked += 1
            # One element; several tiles and K slices with ragged edges, for the largest and the
            # smallest tile.
            check(1, 1, 1, torch.float32, configs[0])
            check(70, 130, 100, torch.float16, configs[0])
            check(150, 140, 130, torch.float32, configs[-1])
            checked += 3
        # Without a GPU to autotune on, the first config of the list runs. K, N and the strides
        # multiples of 8 and of 2 (the kernel's DIVISOR), and a transposed a (DIVISOR 1).
        check(33, 29, 47, torch.float16)
        check(40, 24, 1000, torch.float16)
        check(20, 6, 130, torch.float32)
        a, b = torch.randn(48, 30, generator=gen).half(), torch.randn(48, 64, generator=gen).half()
        torch.testing.assert_close(matmul(a.t(), b), (a.float().t() @ b.float()).half(), atol=1e-2, rtol=1e-2)
        a = torch.randn(5, 0, generator=gen).half()
        assert torch.equal(matmul(a, torch.zeros(0, 3).half()), torch.zeros(5, 3).half())
        print("checked", checked, len(autotune_configs("cuda")), len(autotune_configs("hip")))
        """
    )
    n_cuda, n_hip = (int(v) for v in out.split()[-2:])
    assert n_cuda >= 6 and n_hip >= 4
    assert f"checked {n_cuda + n_hip + 6}" in out


def test_amd_configs_differ_from_nvidia_and_use_matrix_cores(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        from kernels_fixture.toyops.matmul import autotune_configs
        nv = autotune_configs("cuda")
        amd = autotune_configs("hip")
        key = lambda c: (tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages)
        assert {key(c) for c in nv}.isdisjoint({key(c) for c in amd})
        assert all(c.kwargs.get("matrix_instr_nonkdim") == 16 for c in amd)
        assert all("matrix_instr_nonkdim" not in c.kwargs for c in nv)
        assert any(c.kwargs["BLOCK_SIZE_M"] * c.kwargs["BLOCK_SIZE_N"] >= 128 * 256 for c in nv)
        print("ok")
        """
    )
    assert out.strip().endswith("ok")


def test_bench_entries_follow_the_contract_on_cpu(interpreter: Interpreter) -> None:
    out = interpreter.output(
        """
        import math
        import torch
        from kernels_fixture.toyops import bench
        cases = [
            (bench.vector_add, (1000,), "float32", 3 * 1000 * 4, 0),
            (bench.vector_add, (7, 9), "bfloat16", 3 * 63 * 2, 0),
            (bench.softmax, (7, 33), "float16", 2 * 7 * 33 * 2, 0),
            (bench.softmax, (4, 781), "float32", 2 * 4 * 781 * 4, 0),
            (bench.matmul, (17, 33, 65), "float16", (17 * 65 + 65 * 33 + 17 * 33) * 2, 2 * 17 * 33 * 65),
            (bench.vector_add_ref, (100,), "float16", 3 * 100 * 2, 0),
            (bench.softmax_ref, (3, 5), "float32", 2 * 3 * 5 * 4, 0),
            (bench.matmul_ref, (8, 8, 8), "float32", 3 * 64 * 4, 2 * 512),
        ]
        for entry, shape, dtype, bytes_moved, flops in cases:
            case = entry(shape, dtype, device="cpu", seed=5)
            assert case["bytes_moved"] == bytes_moved, (entry.__name__, case["bytes_moved"])
            assert case["flops"] == flops
            out = case["fn"]()
            assert out.dtype == getattr(torch, dtype)
            torch.testing.assert_close(out, case["reference"](), atol=case["atol"], rtol=case["rtol"])
            # Same seed, same inputs; another seed, other inputs.
            again = entry(shape, dtype, device="cpu", seed=5)["inputs"]
            other = entry(shape, dtype, device="cpu", seed=6)["inputs"]
            assert all(torch.equal(a, b) for a, b in zip(case["inputs"], again))
            assert not any(torch.equal(a, b) for a, b in zip(case["inputs"], other))
            # fn reads the listed inputs: poisoning them changes its output.
            for t in case["inputs"]:
                t.fill_(float("nan"))
            assert torch.isnan(case["fn"]().float()).all(), entry.__name__
        for bad in ((bench.softmax, (3,), "float32"), (bench.matmul, (4, 4), "float16"),
                    (bench.vector_add, (0,), "float32"), (bench.vector_add, (4,), "int3")):
            try:
                bad[0](bad[1], bad[2], device="cpu")
            except ValueError as exc:
                print("refused:", exc)
            else:
                raise AssertionError(f"{bad} was accepted")
        try:
            bench.matmul_cxx((4, 4, 4), "float32", device="cpu")["fn"]()
        except RuntimeError as exc:
            assert "GPU" in str(exc)
        else:
            raise AssertionError("the C++ matmul ran on the CPU")
        print("entries ok")
        """
    )
    assert "entries ok" in out
    assert "unsupported dtype 'int3'" in out
    assert out.count("refused:") == 4


# --- Triton, cross-compiled for the GPUs we ship on (no GPU needed) -------------------------------

_TARGETS = {"sm_90": ("cuda", 90, 32), "gfx942": ("hip", "gfx942", 64)}


def _cross_compile(fn, types: dict, constexprs: dict, target: str, options: dict) -> dict:
    """Compile ``fn`` for ``target`` with 16-byte-divisible pointers and sizes, as a real call
    on aligned tensors would specialise it; returns the assembly texts."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {name: types.get(name, "constexpr") for name in fn.arg_names}
    attrs = {
        (fn.arg_names.index(name),): [["tt.divisibility", 16]]
        for name, ty in types.items()
        if ty.startswith("*")
        or name in ("M", "N", "K", "n_cols", "n_elements", "in_row_stride", "out_row_stride")
    }
    source = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(source, target=GPUTarget(*_TARGETS[target]), options=options).asm


@pytest.mark.parametrize("target", sorted(_TARGETS))
def test_triton_kernels_cross_compile_to_matrix_and_vector_instructions(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    from kernels_fixture.toyops.matmul import autotune_configs, matmul_kernel
    from kernels_fixture.toyops.softmax import launch_plan, softmax_kernel
    from kernels_fixture.toyops.vector_add import BLOCK_SIZE, NUM_WARPS, vector_add_kernel

    text = "ptx" if target == "sm_90" else "amdgcn"
    configs = autotune_configs("cuda" if target == "sm_90" else "hip")
    config = configs[0] if target == "sm_90" else configs[2]  # gfx942: the 128x128 tile
    matmul_types = {name: "*bf16" for name in ("a_ptr", "b_ptr", "c_ptr")}
    matmul_types |= {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    meta = {k: v for k, v in config.kwargs.items() if k in matmul_kernel.fn.arg_names}
    backend_options = {k: v for k, v in config.kwargs.items() if k not in meta}
    asm = _cross_compile(
        matmul_kernel.fn,
        matmul_types,
        {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "DIVISOR": 16, **meta},
        target,
        {"num_warps": config.num_warps, "num_stages": config.num_stages, **backend_options},
    )
    # tl.dot reaches the matrix instructions: wgmma on Hopper, MFMA on CDNA3.
    assert ("wgmma.mma_async" if target == "sm_90" else "v_mfma") in asm[text]

    asm = _cross_compile(
        vector_add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
        {"BLOCK_SIZE": BLOCK_SIZE},
        target,
        {"num_warps": NUM_WARPS},
    )
    # 16-byte loads: ld.global.v4 on NVIDIA, global_load_dwordx4 (or buffer_load_dwordx4) on AMD.
    assert re.search(r"ld\.global(\.\w+)*\.v4|load_dwordx4", asm[text])

    softmax_types = {"out_ptr": "*fp32", "in_ptr": "*fp32"}
    softmax_types |= {
        name: "i32" for name in ("in_row_stride", "out_row_stride", "n_rows", "n_cols")
    }
    backend = "cuda" if target == "sm_90" else "hip"
    plan = launch_plan(4096, 4, backend, {"cuda": 232448, "hip": 65536}[backend])
    asm = _cross_compile(
        softmax_kernel,
        softmax_types,
        {"BLOCK_SIZE": 4096, "NUM_STAGES": plan.num_stages},
        target,
        {"num_warps": plan.num_warps},
    )
    if target == "sm_90":
        # One program per row, unpipelined: 16-byte loads straight into registers, no staging
        # through shared memory, and one division per row.
        assert re.search(r"ld\.global(\.\w+)*\.v4", asm[text]) and "cp.async" not in asm[text]
        assert len(re.findall(r"div\.\w+\.f32", asm[text])) == 1
    else:
        assert asm[text]


def test_softmax_launch_plan_per_vendor() -> None:
    from kernels_fixture.toyops.softmax import launch_plan

    # NVIDIA: one program per row, no pipelining; about 32 bytes of the row per lane.
    assert launch_plan(1024, 4, "cuda") == (4, 1, False)  # 1823x781, 32768x1024 fp32
    assert launch_plan(4096, 4, "cuda") == (4, 1, False)  # 16 KiB rows: 4 warps (measured)
    assert launch_plan(4096, 2, "cuda") == (4, 1, False)  # fp16 rows hold half the bytes
    assert launch_plan(8192, 4, "cuda").num_warps == 8
    assert launch_plan(16384, 4, "cuda").num_warps == 16
    assert launch_plan(4096, 4, "hip").num_warps == 16  # AMD keeps the tutorial's packing
    assert launch_plan(16, 2, "cuda").num_warps == 4
    # AMD: the persistent grid, pipelined as deep as shared memory allows.
    assert launch_plan(4096, 4, "hip", 65536) == (16, 2, True)
    assert launch_plan(4096, 4, "hip", 232448) == (16, 4, True)
    assert launch_plan(4096, 4, "hip", None).num_stages == 2


def test_matmul_divisor_gives_16_byte_copies_when_k_and_n_are_not_multiples_of_16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels_fixture.toyops.matmul import _divisor, matmul_kernel

    # K = N = 1000 and contiguous rows: every value is a multiple of 8, not of 16.
    assert _divisor(1000, 1000, 1000, 1000, 1000) == 8
    assert _divisor(4096, 4096, 4096, 4096, 4096) == 16
    assert _divisor(511, 4097, 511, 4097, 4097) == 1
    assert _divisor(1022, 96, 1022, 96, 96) == 2
    assert _divisor(0, 64, 64, 0, 64) == 16  # a zero stride (a broadcast row) divides anything

    # Integers that are not multiples of 16 get no divisibility from Triton's specialisation.
    matmul_types = {name: "*bf16" for name in ("a_ptr", "b_ptr", "c_ptr")}
    matmul_types |= {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    names = matmul_kernel.fn.arg_names
    signature = {name: matmul_types.get(name, "constexpr") for name in names}
    pointers = {(names.index(n),): [["tt.divisibility", 16]] for n in ("a_ptr", "b_ptr", "c_ptr")}
    tile = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
    ptx = {}
    for divisor in (1, 8):
        constexprs = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, **tile, "DIVISOR": divisor}
        source = ASTSource(matmul_kernel.fn, signature, constexprs, pointers)
        compiled = triton.compile(
            source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3}
        )
        ptx[divisor] = compiled.asm["ptx"]
    # Without the divisor: 2-byte loads and stores, no asynchronous copies to pipeline.
    assert re.search(r"ld\.global(\.\w+)*\.b16 ", ptx[1]) and "cp.async" not in ptx[1]
    # With it: 16-byte cp.async into shared memory (pipelined), 16-byte stores, still wgmma.
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 0x10", ptx[8])
    assert re.search(r"st\.global(\.\w+)*\.v4", ptx[8])
    assert "wgmma.mma_async" in ptx[8]


# --- CUDA, compiled with nvcc -------------------------------------------------------------------


def _nvcc(source: Path, out: Path, *extra: str) -> str:
    cmd = [
        "nvcc",
        "-x",
        "cu",
        "-arch=sm_90",
        "-O3",
        "-std=c++17",
        *TORCH_NVCC_FLAGS,
        "-Xptxas",
        "-v",
        *extra,
        str(source),
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _ptxas_usage(log: str) -> list[tuple[int, int]]:
    """(registers, spill store bytes) for every kernel in an ``-Xptxas -v`` log."""
    spills = [int(m) for m in re.findall(r"(\d+) bytes spill stores", log)]
    regs = [int(m) for m in re.findall(r"Used (\d+) registers", log)]
    assert spills and len(spills) == len(regs), log
    return list(zip(regs, spills, strict=True))


# What each kernel's PTX must show: wide loads, shuffles, shared memory behind barriers.
_PTX_MARKS = {
    # 16-byte loads and stores on the aligned path
    "vector_add": (r"ld\.global(\.nc)?\.v4\.u32", r"st\.global\.v4\.u32"),
    # warp shuffles for the reductions, one shared slot per warp, a barrier between warps
    "softmax": (r"shfl\.sync\.bfly", r"bar\.sync", r"\.shared"),
    # tiles staged in shared memory behind barriers, FMAs on registers
    "matmul": (r"bar\.sync", r"ld\.shared\.f32", r"fma\.rn\.f32"),
}


@needs_nvcc
@pytest.mark.parametrize("op", OPS)
def test_cuda_kernel_compiles_for_sm90_without_spills(op: str, tmp_path: Path) -> None:
    log = _nvcc(CSRC / f"{op}.cu", tmp_path / f"{op}.o", "-c", "--keep", f"--keep-dir={tmp_path}")
    usage = _ptxas_usage(log)
    # float32, float16 and bfloat16 instantiations of every kernel.
    assert len(usage) >= 3
    assert all(spill == 0 for _, spill in usage), log
    assert all(regs <= 255 for regs, _ in usage)
    ptx = "\n".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    for mark in _PTX_MARKS[op]:
        assert re.search(mark, ptx), mark
    nm = shutil.which("nm")
    if nm:
        symbols = subprocess.run([nm, str(tmp_path / f"{op}.o")], capture_output=True, text=True)
        assert re.search(rf"\bT toyops_{op}_launch\b", symbols.stdout), symbols.stdout


# --- HIP: text checks and a type check through CUDA-backed stand-in headers ----------------------

_LAUNCHER_RE = re.compile(r'extern "C" const char\* (toyops_\w+_launch)\(([^)]*)\)', re.S)
_KERNEL_RE = re.compile(r"__global__ void (?:__launch_bounds__\([^)]*\)\s*)?(\w+)\(")


def _launcher(text: str) -> tuple[str, str]:
    """The extern "C" launcher's name and parameter list, whitespace normalised."""
    m = _LAUNCHER_RE.search(text)
    assert m, 'no extern "C" launcher'
    return m.group(1), re.sub(r"\s+", " ", m.group(2)).strip()


@pytest.mark.parametrize("op", OPS)
def test_hip_twin_has_the_same_kernels_and_launcher(op: str) -> None:
    cuda = (CSRC / f"{op}.cu").read_text()
    hip = (CSRC / f"{op}.hip").read_text()
    binding = (CSRC / f"{op}_binding.cpp").read_text()
    assert "#include <hip/hip_runtime.h>" in hip
    assert "hipLaunchKernelGGL" in hip
    assert "<<<" not in hip
    assert not re.search(r"\bcuda[A-Z_]\w*|cuda_\w+\.h|__nv_", hip), "CUDA API in the HIP source"
    assert sorted(_KERNEL_RE.findall(hip)) == sorted(_KERNEL_RE.findall(cuda))
    assert _KERNEL_RE.findall(hip)
    assert _launcher(hip) == _launcher(cuda)
    # The binding declares the same launcher (a declaration, ended by ";") and needs no vendor
    # header: the stream comes from Python as an integer.
    name, params = _launcher(cuda)
    declared = re.search(rf'extern "C" const char\* {name}\(([^)]*)\);', binding)
    assert declared, binding
    assert re.sub(r"\s+", " ", declared.group(1)).strip() == params
    assert "void* stream" in params
    assert "cuda_runtime" not in binding and "hip_runtime" not in binding


def test_hip_softmax_reduces_over_64_lane_wavefronts() -> None:
    hip = (CSRC / "softmax.hip").read_text()
    assert re.search(r"constexpr int kWavefrontSize = 64;", hip)
    assert "__shfl_xor(v, offset, kWavefrontSize)" in hip
    assert "__syncthreads()" in hip
    # No block smaller than one wavefront.
    sizes = [int(n) for n in re.findall(r"run_rows<T, (\d+), \d+>", hip)]
    assert sizes and min(sizes) >= 64 and all(s % 64 == 0 for s in sizes)


_HIP_STANDIN = {
    "hip/hip_runtime.h": """\
#pragma once
#include <cuda_runtime.h>
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define hipGetLastError cudaGetLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetDevice cudaGetDevice
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \\
  kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
#define __shfl_xor(v, lane_mask, width) __shfl_xor_sync(0xffffffffu, v, lane_mask, width)
""",
    "hip/hip_fp16.h": "#pragma once\n#include <cuda_fp16.h>\n",
    "hip/hip_bf16.h": "#pragma once\n#include <cuda_bf16.h>\ntypedef __nv_bfloat16 __hip_bfloat16;\n",
}


@needs_nvcc
@pytest.mark.parametrize("op", OPS)
def test_hip_source_type_checks_against_standin_headers(op: str, tmp_path: Path) -> None:
    for rel, text in _HIP_STANDIN.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    # --ptx: the front end checks the whole file (host code included); no host object needed.
    _nvcc(CSRC / f"{op}.hip", tmp_path / f"{op}.ptx", "--ptx", f"-I{tmp_path}")


# --- the torch bindings --------------------------------------------------------------------------


def _bindings_unit(tmp_path: Path) -> Path:
    """One translation unit holding the three bindings, each in a namespace of its own under its
    own ``TORCH_EXTENSION_NAME``: torch's headers (most of the work) are parsed once, not three
    times. The headers the bindings include come first, at file scope, so each binding's own
    ``#include`` lines are kept (and are no-ops there)."""
    headers: list[str] = []
    body: list[str] = []
    for op in OPS:
        source = CSRC / f"{op}_binding.cpp"
        includes = re.findall(r"^#include (<[^>]+>)", source.read_text(), re.MULTILINE)
        # every binding names torch's extension header itself, so it compiles on its own
        assert "<torch/extension.h>" in includes, f"{source.name} does not include it"
        headers += [h for h in includes if h not in headers]
        body += [
            f"#define TORCH_EXTENSION_NAME toyops_{op}_check",
            f"namespace toyops_{op}_check_unit {{",
            f'#include "{source}"',
            "}",
            "#undef TORCH_EXTENSION_NAME",
        ]
    unit = tmp_path / "bindings.cpp"
    unit.write_text("\n".join([*(f"#include {h}" for h in headers), *body, ""]))
    return unit


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_bindings_compile_against_torch_headers(tmp_path: Path) -> None:
    from torch.utils.cpp_extension import include_paths

    includes = [*include_paths(), sysconfig.get_paths()["include"]]
    assert all(Path(p).is_dir() for p in includes)
    done = subprocess.run(
        ["g++", "-fsyntax-only", "-std=c++20", *(f"-I{p}" for p in includes),
         str(_bindings_unit(tmp_path))],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # g++ names the binding file and line of each error


def test_cext_picks_sources_per_vendor_and_caches_by_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from kernels_fixture.toyops import _cext

    monkeypatch.setenv("TOYOPS_BUILD_DIR", str(tmp_path))
    for op in OPS:
        names = [p.name for p in _cext.sources(op)]
        expected = f"{op}.hip" if torch.version.hip else f"{op}.cu"
        assert names == [f"{op}_binding.cpp", expected]
        assert all(p.is_file() for p in _cext.sources(op))
        directory = _cext.build_dir(op)
        assert directory.parent == tmp_path and directory.name.startswith(f"{op}-")
        assert _cext.build_dir(op) == directory  # stable for unchanged sources
    assert len({_cext.build_dir(op) for op in OPS}) == 3
    with pytest.raises(RuntimeError, match="CUDA or ROCm GPU"):
        _cext.call("softmax", torch.zeros(2, 2))


_BUILD_FROM = """
from pathlib import Path
from kernels_fixture.toyops import _cext
paths, directory = [Path({source!r})], Path({directory!r})
if {how!r} == "staged":
    _cext.build("toyops_stage_check", paths, directory, is_python_module=False)
else:  # as torch builds it from the checkout's own path
    from torch.utils.cpp_extension import load
    load("toyops_stage_check", [str(p) for p in paths], build_directory=str(directory),
         is_python_module=False, verbose=True)
"""


@pytest.mark.skipif(
    shutil.which("ninja") is None or shutil.which("c++") is None,
    reason="needs ninja and a C++ compiler",
)
def test_a_build_from_another_checkout_of_the_same_sources_compiles_nothing(
    tmp_path: Path, interpreter: Interpreter
) -> None:
    """Every review checks the base out in a new worktree: the C++ build cache (keyed by the
    sources' bytes) must serve it without compiling, which needs the paths in torch's ninja file to
    stay the same from one checkout to the next."""
    source = 'extern "C" int toyops_stage_check(int x) { return x + 1; }\n'
    checkouts = [tmp_path / "worktree-a", tmp_path / "worktree-b"]
    for checkout in checkouts:
        checkout.mkdir()
        (checkout / "stage_check.cpp").write_text(source)
    directory = tmp_path / "build"

    def build_from(checkout: Path, how: str) -> str:
        # each build in a fresh process (a child of the module's, with torch imported already)
        code = _BUILD_FROM.format(
            source=str(checkout / "stage_check.cpp"), directory=str(directory), how=how
        )
        done = interpreter.run(code, timeout=300, TOYOPS_BUILD_VERBOSE="1")
        assert done.returncode == 0, done.stderr
        return done.stdout

    compiles = "-MF stage_check.o.d"  # ninja's compile command for the source
    assert compiles in build_from(checkouts[0], "staged")
    staged = directory / "src" / "stage_check.cpp"
    first_mtime = staged.stat().st_mtime_ns
    again = build_from(checkouts[1], "staged")
    assert "ninja: no work to do" in again
    assert staged.stat().st_mtime_ns == first_mtime  # same bytes: the copy is left alone
    # what the cache did before: the other checkout's path is a new command, so ninja compiles
    assert compiles in build_from(checkouts[1], "unstaged")
    # a changed source is copied over and compiled
    (checkouts[1] / "stage_check.cpp").write_text(source.replace("x + 1", "x + 2"))
    assert compiles in build_from(checkouts[1], "staged")
    assert "x + 2" in staged.read_text()


# --- on a GPU ------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.slow
def test_every_entry_matches_its_reference_on_the_gpu() -> None:
    import torch

    from kernels_fixture.toyops import bench

    for entry, shape, dtype in (
        (bench.vector_add, (1_000_003,), "bfloat16"),
        (bench.softmax, (1823, 781), "float32"),
        (bench.softmax, (64, 20000), "float16"),
        (bench.matmul, (1000, 1000, 1000), "bfloat16"),
        (bench.matmul_cxx, (1000, 1000, 1000), "bfloat16"),
    ):
        case = entry(shape, dtype, device="cuda")
        torch.testing.assert_close(
            case["fn"](), case["reference"](), atol=case["atol"], rtol=case["rtol"]
        )
