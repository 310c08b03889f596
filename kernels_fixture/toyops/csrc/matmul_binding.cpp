// Python binding for the hand-written matmul kernel (matmul.cu on NVIDIA, matmul.hip on AMD):
// checks the tensors, allocates c, and launches on the stream the caller passes
// (torch.cuda.current_stream().cuda_stream), so this file needs no CUDA or HIP headers.

#include <torch/extension.h>

#include <cstdint>

extern "C" const char* toyops_matmul_launch(const void* a, const void* b, void* c, int64_t M,
                                            int64_t N, int64_t K, int dtype, void* stream);

namespace {

// dtype codes shared with the kernel sources
int dtype_code(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return 0;
    case torch::kFloat16:
      return 1;
    case torch::kBFloat16:
      return 2;
    default:
      TORCH_CHECK(false, "matmul supports float32, float16 and bfloat16, not ", t.scalar_type());
  }
}

torch::Tensor matmul(const torch::Tensor& a, const torch::Tensor& b, int64_t stream) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "matmul: both tensors must be on the GPU");
  TORCH_CHECK(a.device() == b.device(), "matmul: tensors on different devices");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
              "matmul needs (M, K) @ (K, N) matrices, got ", a.sizes(), " @ ", b.sizes());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "matmul: dtypes differ");
  const torch::Tensor ac = a.contiguous();
  const torch::Tensor bc = b.contiguous();
  torch::Tensor c = torch::empty({ac.size(0), bc.size(1)}, ac.options());
  const char* error =
      toyops_matmul_launch(ac.data_ptr(), bc.data_ptr(), c.data_ptr(), ac.size(0), bc.size(1),
                           ac.size(1), dtype_code(ac), reinterpret_cast<void*>(stream));
  TORCH_CHECK(error == nullptr, "matmul kernel launch failed: ", error);
  return c;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("matmul", &matmul, "c = a @ b (hand-written tiled kernel)", pybind11::arg("a"),
        pybind11::arg("b"), pybind11::arg("stream"));
}
