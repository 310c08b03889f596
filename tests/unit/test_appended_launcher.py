"""A kernel and its launcher appended to a file, bound by one more line of its extension's
``PYBIND11_MODULE``, change no other kernel of the file:

- a launcher's local tuning-named values (``dim3 blocks(...)``, ``dim3 threads(BLOCKWIDTH)``)
  are that launcher's (``blocks'vecquant2matmul_cuda``), so one more launcher declaring its own
  renumbers none of the others' (they read as tuning changes of every kernel);
- a registration block (``PYBIND11_MODULE``, ``TORCH_LIBRARY``) is a table: a line added to it
  changes the function it binds, and the block is no caller whose other callees changed.

Shortened from src/alpaca_lora_4bit/quant_cuda/quant_cuda.cpp and quant_cuda_kernel.cu of
johnsmith0031/alpaca_lora_4bit (MIT) at 6dbf1512746e (in tests/data/real_prs). Two earlier
commits of that repository append a kernel the same way (6dd9cd9, "switch to older version of
faster kernel as default"; 8d1d46c, "add 2bit support"): each used to read as 12 and 11 tuning
changes of the kernels beside the new one, and now reads as the new kernel alone.
"""

from __future__ import annotations

from tests.diff_util import changes_between

BINDINGS = "src/alpaca_lora_4bit/quant_cuda/quant_cuda.cpp"
KERNELS = "src/alpaca_lora_4bit/quant_cuda/quant_cuda_kernel.cu"

BINDINGS_OLD = """\
#include <torch/all.h>
#include <torch/python.h>

void vecquant2matmul_cuda(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul);
void vecquant2matmul(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(vec));
  vecquant2matmul_cuda(vec, mat, mul);
}

void vecquant4matmul_cuda(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul);
void vecquant4matmul(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(vec));
  vecquant4matmul_cuda(vec, mat, mul);
}
{added}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("vecquant2matmul", &vecquant2matmul, "Vector 2-bit Quantized Matrix Multiplication (CUDA)");
  m.def("vecquant4matmul", &vecquant4matmul, "Vector 4-bit Quantized Matrix Multiplication (CUDA)");{bound}
}
"""
BINDINGS_NEW = BINDINGS_OLD.replace(
    "{added}",
    """
void vecquant4matmul_g_cuda(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul);
void vecquant4matmul_g(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(vec));
  vecquant4matmul_g_cuda(vec, mat, mul);
}
""",
).replace(
    "{bound}",
    """
  m.def("vecquant4matmul_g", &vecquant4matmul_g, "Vector 4-bit Quantized Matrix Multiplication (CUDA) (act-order)");""",
)
BINDINGS_OLD = BINDINGS_OLD.replace("{added}", "").replace("{bound}", "")


def _kernel_and_launcher(bits: str, suffix: str = "") -> str:
    return f"""
template <typename scalar_t>
__global__ void VecQuant{bits}MatMulKernel{suffix}(const scalar_t* __restrict__ vec, const int* __restrict__ mat, scalar_t* __restrict__ mul, int height, int width) {{
  int h = BLOCKHEIGHT{bits} * blockIdx.x;
  int w = BLOCKWIDTH * blockIdx.y + threadIdx.x;
  mul[w] = vec[h] * scalar_t(mat[h * width + w]);
}}

void vecquant{bits}matmul{suffix.lower()}_cuda(torch::Tensor vec, torch::Tensor mat, torch::Tensor mul) {{
  int height = mat.size(0);
  int width = mat.size(1);
  dim3 blocks(
    (height + BLOCKHEIGHT{bits} - 1) / BLOCKHEIGHT{bits},
    (width + BLOCKWIDTH - 1) / BLOCKWIDTH
  );
  dim3 threads(BLOCKWIDTH);
  AT_DISPATCH_FLOATING_TYPES(vec.type(), "vecquant{bits}matmul{suffix.lower()}_cuda", ([&] {{
      VecQuant{bits}MatMulKernel{suffix}<<<blocks, threads>>>(
        vec.data_ptr<scalar_t>(), mat.data_ptr<int>(), mul.data_ptr<scalar_t>(), height, width
      );
    }})
  );
}}
"""


KERNELS_OLD = (
    "#include <torch/all.h>\n#include <cuda.h>\n\n"
    "const int BLOCKWIDTH  = 256;\nconst int BLOCKHEIGHT2 =  16;\nconst int BLOCKHEIGHT4 =  32;\n"
    + _kernel_and_launcher("2")
    + _kernel_and_launcher("4")
)
KERNELS_NEW = KERNELS_OLD + _kernel_and_launcher("4", "_G")


def test_an_appended_kernel_and_its_binding_change_no_other_kernel():
    old = {BINDINGS: BINDINGS_OLD, KERNELS: KERNELS_OLD}
    new = {BINDINGS: BINDINGS_NEW, KERNELS: KERNELS_NEW}
    assert changes_between(old, new) == ["new VecQuant4MatMulKernel_G"]


def test_a_launcher_s_own_block_size_changes_its_kernel_alone():
    # before, the other launcher's ``threads`` read as a tuning change of VecQuant2MatMulKernel
    old = {BINDINGS: BINDINGS_OLD, KERNELS: KERNELS_OLD}
    threads = KERNELS_OLD.replace(
        'dim3 threads(BLOCKWIDTH);\n  AT_DISPATCH_FLOATING_TYPES(vec.type(), "vecquant4',
        'dim3 threads(BLOCKWIDTH / 2);\n  AT_DISPATCH_FLOATING_TYPES(vec.type(), "vecquant4',
    )
    assert changes_between(old, {**old, KERNELS: threads}) == ["launch VecQuant4MatMulKernel"]
