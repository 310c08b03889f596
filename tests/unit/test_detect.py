"""Finding kernels in source text: Triton through ast and patterns, CUDA and HIP in C++."""

from __future__ import annotations

from bot.analysis.model import TritonConfig
from bot.analysis.scan import scan_lines, scan_source
from bot.analysis.text import is_tuning_line, is_tuning_name
from tests.paths import DATA

TOY = DATA / "diffs" / "toyrepo"

STACKED = '''\
import triton as tr
import triton.language as tl
from triton import Config, heuristics

SMALL = [Config({"BLOCK": 64}, num_warps=2)]
BIG = [tr.Config({"BLOCK": 1024}, num_warps=8, num_stages=3, maxnreg=128)]


def more():
    return [tr.Config(kwargs={"BLOCK": 256, "SPLIT": True}, num_warps=4, pre_hook=None)]


@tr.autotune(configs=SMALL + BIG + more(), key=["n"])
@heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@tr.jit
def fused_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False):
    """Doubles x."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


@tr.jit
def helper(x):
    return x + 1


def launch(x):
    n = x.numel()
    BLOCK = 512
    fused_kernel[(tr.cdiv(n, BLOCK),)](x, n, num_warps=4)
    return x
'''


def test_stacked_decorators_and_configs_resolved_through_names_and_helpers():
    scan = scan_source("ops/fused.py", STACKED)
    assert scan.language == "triton" and scan.complete
    k = scan.kernel("fused_kernel")
    assert k is not None
    assert k.decorators == ("tr.autotune", "heuristics", "tr.jit")
    assert (k.line_start, k.line_end) == (13, 20)
    assert k.body_start == 18  # after the signature and the docstring
    assert k.configs == (
        TritonConfig(kwargs={"BLOCK": 64}, num_warps=2),
        TritonConfig(kwargs={"BLOCK": 1024}, num_warps=8, num_stages=3, maxnreg=128),
        TritonConfig(kwargs={"BLOCK": 256, "SPLIT": True}, num_warps=4, extra={"pre_hook": "None"}),
    )
    assert k.autotune_key == ("n",)
    assert k.heuristics == {"EVEN": "lambda args: args['n'] % args['BLOCK'] == 0"}
    assert k.constexprs == {"BLOCK": None, "EVEN": "False"}
    assert scan.kernel("helper") is not None  # a jit helper is a kernel too
    assert scan.kernel("launch") is None


def test_launch_site_grid_tuning_and_wrapper():
    scan = scan_source("ops/fused.py", STACKED)
    (site,) = [s for s in scan.launches if s.kernel == "fused_kernel"]
    assert site.grid == "(tr.cdiv(n, BLOCK),)"
    # the arguments launches are compared by: ``n``, which only the autotune key and the
    # heuristic read, is the tuning's (a change to it reads as tuning), not the kernel's
    assert site.args == "x"
    assert site.tuning == {"num_warps": "4", "BLOCK (in launch)": "512"}
    assert (site.wrapper, site.wrapper_start, site.wrapper_end, site.line) == ("launch", 28, 32, 31)


def test_configs_that_are_not_literal_keep_their_source():
    text = STACKED.replace("SMALL + BIG + more()", "[c for c in SMALL if c]")
    k = scan_source("ops/fused.py", text).kernel("fused_kernel")
    assert k.configs is None
    assert k.configs_source == "[c for c in SMALL if c]"


def test_jit_that_is_not_triton_is_not_a_kernel():
    text = "from numba import jit\n\n@jit\ndef add(a, b):\n    return a + b\n"
    assert scan_source("cpu.py", text).kernels == ()


def test_invalid_python_falls_back_to_patterns_and_says_so():
    broken = STACKED.replace("def launch(x):", "def launch(x:")
    scan = scan_source("ops/fused.py", broken)
    assert {k.name for k in scan.kernels} >= {"fused_kernel", "helper"}
    assert any("not valid Python (line" in note for note in scan.notes)
    assert not scan.complete


def test_lines_only_give_real_line_numbers_and_configs():
    lines = STACKED.split("\n")
    shown = [(n, lines[n - 1]) for n in list(range(13, 23)) + list(range(28, 33))]
    scan = scan_lines("ops/fused.py", shown)
    k = scan.kernel("fused_kernel")
    assert (k.line_start, k.line_end) == (13, 20)
    assert k.from_context and not scan.complete
    assert k.autotune_key == ("n",)
    assert k.constexprs == {"BLOCK": None, "EVEN": "False"}
    (site,) = [s for s in scan.launches if s.kernel == "fused_kernel"]
    assert (site.line, site.grid, site.args) == (31, "(tr.cdiv(n, BLOCK),)", "x, n")
    assert site.tuning == {"num_warps": "4"}


def test_lines_inline_autotune_configs_parsed():
    text = (TOY / "head/toyops/matmul.py").read_text().split("\n")
    scan = scan_lines("m.py", [(n, t) for n, t in enumerate(text, 1)])
    k = scan.kernel("matmul_kernel")
    assert k is not None and k.line_start == 25


def test_hunk_header_names_the_kernel_when_its_def_is_not_shown():
    lines = STACKED.split("\n")
    shown = [(n, lines[n - 1]) for n in range(19, 25)]
    header = "def fused_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False):"
    scan = scan_lines("ops/fused.py", shown, [(19, header)])
    k = scan.kernel("fused_kernel")
    assert (k.line_start, k.line_end) == (19, 20)  # stops before the next top-level line


# whisper/triton_ops.py of openai/whisper, the parent of 86899243e9fd (MIT; that pull request, a
# negative control, is in tests/data/real_prs): the factory median_kernel defines a @triton.jit
# kernel and fills its source in by string replacement. Two hunks sit in it, its def not shown.
FACTORY_HEADER = "def median_kernel(filter_width: int):"
FACTORY = [
    (60, "        tl.store(y_ptr + offsets, MIDDLE_ROW_HERE, mask=mask)  # noqa: F821"),
    (61, ""),
    (62, "    kernel = triton.JITFunction(kernel.fn)"),
    (63, "    kernel.src = kernel.src.replace("),
    (64, '        "    LOAD_ALL_ROWS_HERE",'),
    (69, "    kernel.src = kernel.src.replace("),
    (70, '        "    BUBBLESORT_HERE",'),
    (71, '        "\\n\\n".join('),
]


def test_a_function_named_like_a_kernel_that_makes_or_launches_one_is_host_code():
    sections = [(60, FACTORY_HEADER), (69, FACTORY_HEADER)]
    assert scan_lines("whisper/triton_ops.py", FACTORY, sections).kernels == ()
    device = [(n, t.replace("triton.JITFunction(kernel.fn)", "tl.load(x)")) for n, t in FACTORY]
    scan = scan_lines("whisper/triton_ops.py", device, sections)
    assert [k.name for k in scan.kernels] == ["median_kernel"]
    # a launcher named for its kernel (ModelTC/LightX2V 963d4ab75e65, Apache-2.0), its def shown
    launcher = [
        (1, "import triton"),
        (2, "def rms_norm_kernel(x, w, eps=1e-6):"),
        (3, "    grid = (triton.cdiv(S, BLOCK_SIZE_SEQ),)"),
        (4, "    torch.library.wrap_triton(_rms_norm_tiled_onepass)[grid]("),
        (5, "        y_view, x_view, w, eps)"),
    ]
    assert scan_lines("norm/triton_ops.py", launcher).kernels == ()
    shown = [(n, t) for n, t in launcher if n != 4]
    assert [k.name for k in scan_lines("norm/triton_ops.py", shown).kernels] == ["rms_norm_kernel"]


CUDA = r"""
// __global__ void commented_out(int* x) {}
#include <torch/extension.h>
#define THREADS 256
static const char* kBraces = "{ not a block }";

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale_kernel(T* x, T a, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) { x[i] *= a; }
}

__global__ void declared_only(float* x);

extern "C" __global__ void plain_kernel(float* x) { x[threadIdx.x] = 0.f; }

torch::Tensor scale(torch::Tensor x, float a) {
  dim3 block(THREADS);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale", [&] {
    scale_kernel<scalar_t, THREADS><<<(x.numel() + THREADS - 1) / THREADS, block>>>(
        x.data_ptr<scalar_t>(), static_cast<scalar_t>(a), x.numel());
  });
  return x;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "x * a"); }
"""


def test_cuda_kernels_launches_wrappers_bindings():
    scan = scan_source("csrc/scale.cu", CUDA)
    assert scan.language == "cuda"
    assert [k.name for k in scan.kernels] == ["scale_kernel", "plain_kernel"]
    k = scan.kernel("scale_kernel")
    assert (k.line_start, k.line_end, k.body_start, k.body_end) == (7, 11, 9, 10)
    (site,) = scan.launches
    assert site.kernel == "scale_kernel"
    assert site.grid == "(x.numel() + THREADS - 1) / THREADS, block"
    assert site.args == "x.data_ptr<scalar_t>(), static_cast<scalar_t>(a), x.numel()"
    assert (site.wrapper, site.wrapper_start, site.wrapper_end) == ("scale", 17, 24)
    assert scan.bindings == (("scale", "scale"),)
    assert scan.tuning_constants == {
        "THREADS": "256",
        "block'scale": "THREADS",
    }  # block: scale's own


def test_cuda_digest_ignores_comments_and_whitespace_only():
    k1 = scan_source("a.cu", CUDA).kernel("scale_kernel")
    spaced = CUDA.replace("if (i < n) { x[i] *= a; }", "if (i < n) {   x[i] *= a; }  // scale")
    assert scan_source("a.cu", spaced).kernel("scale_kernel").digest == k1.digest
    changed = CUDA.replace("x[i] *= a;", "x[i] += a;")
    assert scan_source("a.cu", changed).kernel("scale_kernel").digest != k1.digest


def test_hip_file_and_hip_headers_and_launch_macro():
    hip = (TOY / "base/toyops/csrc/softmax.hip").read_text()
    scan = scan_source("toyops/csrc/softmax.hip", hip)
    assert scan.language == "hip"
    (site,) = scan.launches
    assert (site.kernel, site.language, site.wrapper) == ("softmax_kernel", "hip", "softmax_hip")
    assert site.grid == "dim3(n_rows), dim3(BLOCK_SIZE), 0, 0"
    assert site.args == "dx, dy, n_cols"
    cpp = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    assert scan_source("k.cpp", cpp).kernels[0].language == "hip"
    assert scan_source("k.cu", cpp.split("\n", 1)[1]).kernels[0].language == "cuda"
    ggl = "void f() { hipLaunchKernelGGL(HIP_KERNEL_NAME(k<float, 4>), g, b, 0, s, x); }\n"
    (site,) = scan_source("f.cpp", ggl).launches
    assert (site.kernel, site.args) == ("k", "x")


def test_cpp_hunk_header_names_the_kernel():
    hip = (TOY / "base/toyops/csrc/softmax.hip").read_text().split("\n")
    shown = [(n, hip[n - 1]) for n in range(36, 43)]
    header = "__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__"
    scan = scan_lines("toyops/csrc/softmax.hip", shown, [(36, header)])
    k = scan.kernel("softmax_kernel")
    assert (k.language, k.line_start, k.line_end) == ("hip", 36, 41)


def test_tuning_names_and_lines():
    for name in ("BLOCK_SIZE", "BLOCK_M", "XBLOCK", "num_warps", "GROUP_SIZE_M", "kBlockSize"):
        assert is_tuning_name(name), name
    for name in ("block_start", "block_id", "n_cols", "EVEN_K", "blocks"):
        assert not is_tuning_name(name), name
    assert is_tuning_line('        triton.Config({"BLOCK": 128}, num_warps=4),')
    assert is_tuning_line("#define BLOCK_SIZE 256")
    assert is_tuning_line("    BLOCK: tl.constexpr = 128,")
    assert is_tuning_line("    ],")
    assert not is_tuning_line("    block_start = pid * BLOCK_SIZE")
    assert not is_tuning_line("    x = tl.load(p)")


# Sources built to make a careless pattern backtrack for hours (bench/analysis_scale.py times them).
HOSTILE_SOURCES = {
    "a.cu": "k<<<a>>>(" * 20_000,
    "b.cu": "__global__ void k(" * 20_000,
    "c.cu": "#define BLOCK_SIZE 1\n" * 50_000,
    "d.cu": "__global__ void k(float* x) { x[0] = 1; }\n" * 5_000,
    "e.py": "import triton\n" + "@triton.jit\ndef k(x):\n    pass\n" * 5_000,
    "f.py": "import triton\n@triton.jit\ndef k(x):\n    y = 1" + "+1" * 5_000 + "\n",
}


def test_hostile_sources_stay_bounded():
    from concurrent.futures import ThreadPoolExecutor

    from bot.analysis.model import MAX_PER_FILE

    cases = HOSTILE_SOURCES
    # A liveness guard, not a timing: catastrophic backtracking would run for hours, and the scan
    # of each hostile file must end at all (its speed is bench/analysis_scale.py's to record).
    with ThreadPoolExecutor(1) as pool:
        for path, text in cases.items():
            scan = pool.submit(scan_source, path, text).result(timeout=120)
            assert len(scan.kernels) <= MAX_PER_FILE and len(scan.launches) <= MAX_PER_FILE
    assert any("only the first" in n for n in scan_source("d.cu", cases["d.cu"]).notes)
    assert any("nested too deeply" in n for n in scan_source("f.py", cases["f.py"]).notes)
