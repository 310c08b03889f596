// Small CUDA kernels whose compiled resources the C++ report tests read back:
// a plain add, a block reduction with static shared memory, a kernel forced to spill
// (__launch_bounds__(1024, 2) caps it at 32 registers), and a tensor-core (wmma) tile.
#include <cuda_fp16.h>
#include <mma.h>

__global__ void __launch_bounds__(256) add_kernel(const float4* __restrict__ x,
                                                  const float4* __restrict__ y, float4* out,
                                                  int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 a = x[i], b = y[i];
    out[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
}

__global__ void __launch_bounds__(512) row_sum_kernel(const float* x, float* y, int cols) {
  __shared__ float partial[512];
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = partial[0];
}

// 64 accumulators live across the loop, but at most 32 registers per thread: ptxas spills.
__global__ void __launch_bounds__(1024, 2) spill_kernel(const float* x, float* y, int n) {
  float acc[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) acc[j] = x[(threadIdx.x + j * 131) % n];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = acc[j] * acc[(j + 7) % 64] + x[(it * 64 + j) % n];
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 64; ++j) s += acc[j];
  y[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

using namespace nvcuda;

__global__ void __launch_bounds__(32) wmma_kernel(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
