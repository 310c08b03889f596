// Python binding for the hand-written vector_add kernel (vector_add.cu on NVIDIA, vector_add.hip
// on AMD): checks the tensors, allocates the output, and launches on the stream the caller
// passes (torch.cuda.current_stream().cuda_stream), so this file needs no CUDA or HIP headers.

#include <torch/extension.h>

#include <cstdint>

extern "C" const char* toyops_vector_add_launch(const void* x, const void* y, void* out, int64_t n,
                                                int dtype, void* stream);

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
      TORCH_CHECK(false, "vector_add supports float32, float16 and bfloat16, not ",
                  t.scalar_type());
  }
}

torch::Tensor vector_add(const torch::Tensor& x, const torch::Tensor& y, int64_t stream) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "vector_add: both tensors must be on the GPU");
  TORCH_CHECK(x.device() == y.device(), "vector_add: tensors on different devices");
  TORCH_CHECK(x.sizes() == y.sizes(), "vector_add: shapes differ: ", x.sizes(), " and ", y.sizes());
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "vector_add: dtypes differ");
  const torch::Tensor xc = x.contiguous();
  const torch::Tensor yc = y.contiguous();
  torch::Tensor out = torch::empty_like(xc);
  const char* error = toyops_vector_add_launch(xc.data_ptr(), yc.data_ptr(), out.data_ptr(),
                                               xc.numel(), dtype_code(xc),
                                               reinterpret_cast<void*>(stream));
  TORCH_CHECK(error == nullptr, "vector_add kernel launch failed: ", error);
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("vector_add", &vector_add, "out = x + y (hand-written kernel)", pybind11::arg("x"),
        pybind11::arg("y"), pybind11::arg("stream"));
}
