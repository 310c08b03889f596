// Row-wise softmax for AMD GPUs: one block per row, an LDS tree for max and sum.
#include <hip/hip_runtime.h>

#define HIP_CHECK(call)                                              \
  do {                                                               \
    hipError_t err_ = (call);                                        \
    if (err_ != hipSuccess) {                                        \
      fprintf(stderr, "HIP error: %s\n", hipGetErrorString(err_));   \
      exit(1);                                                       \
    }                                                                \
  } while (0)

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

void softmax_hip(const float* x, float* y, int n_rows, int n_cols) {
  float *dx, *dy;
  size_t bytes = sizeof(float) * n_rows * n_cols;
  HIP_CHECK(hipMalloc(&dx, bytes));
  HIP_CHECK(hipMalloc(&dy, bytes));
  HIP_CHECK(hipMemcpy(dx, x, bytes, hipMemcpyHostToDevice));
  hipLaunchKernelGGL(softmax_kernel, dim3(n_rows), dim3(BLOCK_SIZE), 0, 0, dx, dy, n_cols);
  HIP_CHECK(hipGetLastError());
  HIP_CHECK(hipMemcpy(y, dy, bytes, hipMemcpyDeviceToHost));
  HIP_CHECK(hipFree(dx));
  HIP_CHECK(hipFree(dy));
}
