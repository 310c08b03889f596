// Row-wise softmax: one block per row, a shared-memory tree for max and sum.
#include <cuda_runtime.h>
#include <torch/extension.h>

constexpr int BLOCK_SIZE = 256;

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int n_cols) {
  __shared__ float red[BLOCK_SIZE];
  const float* row_in = x + blockIdx.x * n_cols;
  float* row_out = y + blockIdx.x * n_cols;

  float m = -INFINITY;
  for (int i = threadIdx.x; i < n_cols; i += BLOCK_SIZE) m = fmaxf(m, row_in[i]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float row_max = red[0];
  __syncthreads();

  float sum = 0.f;
  for (int i = threadIdx.x; i < n_cols; i += BLOCK_SIZE) sum += __expf(row_in[i] - row_max);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.f / red[0];
  for (int i = threadIdx.x; i < n_cols; i += BLOCK_SIZE) row_out[i] = __expf(row_in[i] - row_max) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2, "x must be a 2-D CUDA tensor");
  auto y = torch::empty_like(x);
  softmax_kernel<<<x.size(0), BLOCK_SIZE>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("softmax", &softmax_cuda, "row-wise softmax");
}
