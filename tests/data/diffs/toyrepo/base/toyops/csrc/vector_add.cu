// Element-wise addition of two float vectors.
#include <cuda_runtime.h>
#include <torch/extension.h>

// One thread per element; the bounds check covers the last, partial block.
__global__ void vector_add_kernel(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = x[i] + y[i];
  }
}

torch::Tensor vector_add_cuda(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "inputs must be CUDA tensors");
  TORCH_CHECK(x.numel() == y.numel(), "inputs must have the same size");
  auto out = torch::empty_like(x);
  int n = x.numel();
  int threads = 256;
  int blocks = (n + threads - 1) / threads;
  vector_add_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                         out.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("vector_add", &vector_add_cuda, "x + y");
}
