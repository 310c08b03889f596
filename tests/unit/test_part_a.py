"""Part A: counting the old C++ kernel's code against the new Triton kernel's."""

from __future__ import annotations

from bot.analysis.code_counts import code_lines, part_a, part_a_side
from tests.paths import DATA

TOY = DATA / "diffs" / "toyrepo"
VA_CU = "toyops/csrc/vector_add.cu"
VA_PY = "toyops/vector_add.py"
HIP = "toyops/csrc/softmax.hip"


def src(side: str, path: str) -> str:
    return (TOY / side / path).read_text()


def test_vector_add_pair_counted_like_the_seed():
    table = part_a(
        {VA_CU: src("base", VA_CU)},
        [(VA_CU, "vector_add_kernel")],
        {VA_PY: src("head", VA_PY)},
        [(VA_PY, "vector_add_kernel")],
    )
    old, new = table.old, table.new
    # CUDA body: `int i = ...`, `if (i < n) {`, `out[i] = ...` (the lone `}` is not code)
    assert old.kernel_body_lines == 3
    # Triton body: pid, offsets, mask, x, y, store (the comment line does not count)
    assert new.kernel_body_lines == 6
    # CUDA wrapper: 2 TORCH_CHECK, empty_like, n, threads, blocks, 2-line launch, check, return
    assert (old.host_wrapper_lines, new.host_wrapper_lines) == (10, 5)
    assert (old.memory_lines, new.memory_lines) == (1, 1)  # torch::empty_like / torch.empty_like
    assert (old.error_check_lines, new.error_check_lines) == (3, 0)
    assert (old.barriers, new.barriers) == (0, 0)
    assert (old.shared_memory_declarations, new.shared_memory_declarations) == (0, 0)
    assert (old.source_files, new.source_files) == (1, 1)
    assert (old.vendors_covered, new.vendors_covered) == (["nvidia"], ["nvidia", "amd"])
    assert (old.wrappers, new.wrappers) == (["vector_add_cuda"], ["vector_add"])
    assert table.notes == []


def test_hip_host_code_memory_checks_barriers_and_shared_memory():
    side = part_a_side({HIP: src("base", HIP)}, [(HIP, "softmax_kernel")])
    assert side.language == "hip" and side.vendors_covered == ["amd"]
    assert side.host_wrapper_lines == 10
    assert side.memory_lines == 6  # 2 hipMalloc, 2 hipMemcpy, 2 hipFree
    assert side.error_check_lines == 1  # HIP_CHECK(hipGetLastError())
    assert side.error_checked_calls == 7  # HIP_CHECK(...) around 7 calls
    assert side.error_check_helper_lines == 8  # the HIP_CHECK macro itself
    assert side.barriers == 5
    assert side.shared_memory_declarations == 1


def test_blank_and_comment_lines_never_count():
    text = src("base", HIP)
    noisy = text.replace(
        "  red[threadIdx.x] = m;\n",
        "  // keep the running max\n\n  /* one\n     two */\n  red[threadIdx.x] = m;  // store\n",
    )
    before = part_a_side({HIP: text}, [(HIP, "softmax_kernel")])
    after = part_a_side({HIP: noisy}, [(HIP, "softmax_kernel")])
    assert after.kernel_body_lines == before.kernel_body_lines
    assert after.barriers == before.barriers


def test_twin_sources_count_as_files_not_lines():
    cu = "toyops/csrc/softmax.cu"
    py = "toyops/softmax.py"
    table = part_a(
        {cu: src("base", cu)},
        [(cu, "softmax_kernel")],
        {py: src("head", py)},
        [(py, "softmax_kernel")],
        old_twins=[(HIP, "hip")],
    )
    assert table.old.language == "cuda+hip"
    assert table.old.source_files == 2 and table.old.files == [cu, HIP]
    assert table.old.vendors_covered == ["nvidia", "amd"]
    assert table.old.kernel_body_lines == 21
    assert table.old.barriers == 5 and table.new.barriers == 0
    assert table.old.shared_memory_declarations == 1
    assert any(HIP in note for note in table.notes)
    rows = table.rows()
    assert [r[0] for r in rows] == [
        "Lines in the kernel body",
        "Lines in the launch/host wrapper",
        "Lines that exist only to manage memory",
        "Lines that exist only to check errors",
        "Explicit barriers",
        "Explicit shared-memory declarations",
        "Source files to cover AMD and NVIDIA",
    ]
    assert rows[-1][1:] == ("2 (nvidia+amd)", "1 (nvidia+amd)")


def test_code_lines_for_python_skip_docstrings_and_comments():
    text = 'def f(x):\n    """Doc\n    string."""\n    # note\n\n    return x  # why\n'
    assert code_lines(text, "python") == [True, False, False, False, False, True, False]


def test_code_lines_for_cpp_skip_block_and_line_comments():
    text = "int a; /* x\n y */\n// z\nint b;\n"
    assert code_lines(text, "cpp") == [True, False, False, True, False]


def test_missing_launch_is_said_not_guessed():
    table = part_a(
        {VA_CU: src("base", VA_CU).split("torch::Tensor vector_add_cuda")[0]},
        [(VA_CU, "vector_add_kernel")],
        {VA_PY: src("head", VA_PY)},
        [(VA_PY, "vector_add_kernel")],
    )
    assert table.old.host_wrapper_lines == 0
    assert any("no launch of the old kernel" in n for n in table.notes)


HELPERS_CU = """\
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  return scratch[0];
}

__device__ float unused(float v) { __syncthreads(); return v; }

__global__ void total_kernel(const float* x, float* out) {
  __shared__ float scratch[32];
  float s = block_sum(x[threadIdx.x], scratch);
  if (threadIdx.x == 0) *out = s;
}
"""


def test_device_helpers_the_kernel_calls_count_as_its_body():
    side = part_a_side({"t.cu": HELPERS_CU}, [("t.cu", "total_kernel")])
    assert side.helpers == ["warp_sum", "block_sum"]
    assert side.kernel_body_lines == 3 + 4 + 2  # kernel, block_sum, warp_sum bodies
    assert side.barriers == 1  # the one in block_sum; `unused` is not called
    assert side.shared_memory_declarations == 1
