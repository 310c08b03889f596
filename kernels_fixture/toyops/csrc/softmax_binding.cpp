// Python binding for the hand-written softmax kernel (softmax.cu on NVIDIA, softmax.hip on AMD):
// checks the tensor, allocates the output, and launches on the stream the caller passes
// (torch.cuda.current_stream().cuda_stream), so this file needs no CUDA or HIP headers.

#include <torch/extension.h>

#include <cstdint>

extern "C" const char* toyops_softmax_launch(const void* x, void* y, int64_t n_rows,
                                             int64_t n_cols, int dtype, void* stream);

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
      TORCH_CHECK(false, "softmax supports float32, float16 and bfloat16, not ", t.scalar_type());
  }
}

torch::Tensor softmax(const torch::Tensor& x, int64_t stream) {
  TORCH_CHECK(x.is_cuda(), "softmax: the tensor must be on the GPU");
  TORCH_CHECK(x.dim() == 2, "softmax expects a 2-D tensor, got ", x.dim(), " dimensions");
  const torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty_like(xc);
  const char* error = toyops_softmax_launch(xc.data_ptr(), y.data_ptr(), xc.size(0), xc.size(1),
                                            dtype_code(xc), reinterpret_cast<void*>(stream));
  TORCH_CHECK(error == nullptr, "softmax kernel launch failed: ", error);
  return y;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("softmax", &softmax, "row-wise softmax of a 2-D tensor (hand-written kernel)",
        pybind11::arg("x"), pybind11::arg("stream"));
}
