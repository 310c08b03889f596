// Matrix multiplication for NVIDIA GPUs: c = a @ b for row-major a (M, K), b (K, N), c (M, N),
// in float32, float16 or bfloat16, accumulating in fp32 on the CUDA cores.
//
// Classic shared-memory tiling with register micro-tiles: a block of 256 threads computes a
// 128x128 tile of c, walking K in slices of 16. Each slice of a and b is staged in shared
// memory (a stored K-major, padded so that the transposing store does not pile onto one bank),
// and each thread accumulates an 8x8 micro-tile of c in registers: rows ty + 16 * i and columns
// tx + 16 * j, a layout in which a warp's shared-memory reads hit 16 consecutive words (no bank
// conflicts) and its stores to c are contiguous. The next slice is fetched from global memory
// into registers while the current one is multiplied. Loads past M, N or K read zero; stores
// past M or N are skipped.
//
// The AMD twin is matmul.hip; matmul_binding.cpp allocates c and calls toyops_matmul_launch
// below with the caller's stream.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// dtype codes shared with matmul_binding.cpp
constexpr int kFloat32 = 0;
constexpr int kFloat16 = 1;
constexpr int kBFloat16 = 2;

constexpr int kBlockM = 128;  // rows of c per block
constexpr int kBlockN = 128;  // columns of c per block
constexpr int kBlockK = 16;   // K slice staged in shared memory
constexpr int kThreadM = 8;   // rows of c per thread
constexpr int kThreadN = 8;   // columns of c per thread
constexpr int kThreadsM = kBlockM / kThreadM;  // 16
constexpr int kThreadsN = kBlockN / kThreadN;  // 16
constexpr int kThreads = kThreadsM * kThreadsN;  // 256
constexpr int kALoads = kBlockM * kBlockK / kThreads;  // a elements each thread stages: 8
constexpr int kBLoads = kBlockK * kBlockN / kThreads;  // b elements each thread stages: 8
constexpr int kAPad = 4;  // keeps a_tile rows 16-byte aligned and spreads the transposing store

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Fetch this thread's share of the K slice starting at k0 into registers (zero outside a and b).
// Consecutive threads read consecutive k of a row of a and consecutive columns of b: coalesced.
template <typename T>
__device__ __forceinline__ void fetch_slice(const T* __restrict__ a, const T* __restrict__ b, int M,
                                            int N, int K, int row0, int col0, int k0,
                                            float (&a_regs)[kALoads], float (&b_regs)[kBLoads]) {
#pragma unroll
  for (int r = 0; r < kALoads; ++r) {
    const int e = threadIdx.x + r * kThreads;
    const int row = row0 + e / kBlockK;
    const int k = k0 + e % kBlockK;
    a_regs[r] = (row < M && k < K) ? to_float(a[static_cast<int64_t>(row) * K + k]) : 0.f;
  }
#pragma unroll
  for (int r = 0; r < kBLoads; ++r) {
    const int e = threadIdx.x + r * kThreads;
    const int k = k0 + e / kBlockN;
    const int col = col0 + e % kBlockN;
    b_regs[r] = (k < K && col < N) ? to_float(b[static_cast<int64_t>(k) * N + col]) : 0.f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    matmul_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                        int N, int K) {
  __shared__ float a_tile[kBlockK][kBlockM + kAPad];  // a slice, transposed: a_tile[k][row]
  __shared__ float b_tile[kBlockK][kBlockN];          // b slice: b_tile[k][col]

  const int tx = threadIdx.x % kThreadsN;
  const int ty = threadIdx.x / kThreadsN;
  const int row0 = blockIdx.y * kBlockM;
  const int col0 = blockIdx.x * kBlockN;

  float acc[kThreadM][kThreadN] = {};
  float a_regs[kALoads];
  float b_regs[kBLoads];

  fetch_slice(a, b, M, N, K, row0, col0, 0, a_regs, b_regs);
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    // Move the fetched slice into shared memory.
#pragma unroll
    for (int r = 0; r < kALoads; ++r) {
      const int e = threadIdx.x + r * kThreads;
      a_tile[e % kBlockK][e / kBlockK] = a_regs[r];
    }
#pragma unroll
    for (int r = 0; r < kBLoads; ++r) {
      const int e = threadIdx.x + r * kThreads;
      b_tile[e / kBlockN][e % kBlockN] = b_regs[r];
    }
    __syncthreads();  // the slice is complete before anyone multiplies it

    // Start fetching the next slice; the loads are in flight during the FMAs below.
    if (k0 + kBlockK < K) fetch_slice(a, b, M, N, K, row0, col0, k0 + kBlockK, a_regs, b_regs);

#pragma unroll
    for (int k = 0; k < kBlockK; ++k) {
      float a_frag[kThreadM];
      float b_frag[kThreadN];
#pragma unroll
      for (int i = 0; i < kThreadM; ++i) a_frag[i] = a_tile[k][ty + i * kThreadsM];
#pragma unroll
      for (int j = 0; j < kThreadN; ++j) b_frag[j] = b_tile[k][tx + j * kThreadsN];
#pragma unroll
      for (int i = 0; i < kThreadM; ++i) {
#pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
      }
    }
    __syncthreads();  // everyone is done reading the slice before it is overwritten
  }

#pragma unroll
  for (int i = 0; i < kThreadM; ++i) {
    const int row = row0 + ty + i * kThreadsM;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < kThreadN; ++j) {
      const int col = col0 + tx + j * kThreadsN;
      if (col < N) c[static_cast<int64_t>(row) * N + col] = from_float<T>(acc[i][j]);
    }
  }
}

template <typename T>
cudaError_t launch(const void* a, const void* b, void* c, int64_t M, int64_t N, int64_t K,
                   cudaStream_t stream) {
  if (M == 0 || N == 0) return cudaSuccess;
  // int indices inside the kernel; the grid's y dimension is limited to 65535 blocks.
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + kBlockM - 1) / kBlockM > 65535) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>((N + kBlockN - 1) / kBlockN),
                  static_cast<unsigned>((M + kBlockM - 1) / kBlockM));
  matmul_tiled_kernel<T><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), static_cast<int>(M),
      static_cast<int>(N), static_cast<int>(K));
  return cudaGetLastError();
}

}  // namespace

// Returns nullptr on success, else a message naming what failed.
extern "C" const char* toyops_matmul_launch(const void* a, const void* b, void* c, int64_t M,
                                            int64_t N, int64_t K, int dtype, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t err;
  switch (dtype) {
    case kFloat32:
      err = launch<float>(a, b, c, M, N, K, s);
      break;
    case kFloat16:
      err = launch<__half>(a, b, c, M, N, K, s);
      break;
    case kBFloat16:
      err = launch<__nv_bfloat16>(a, b, c, M, N, K, s);
      break;
    default:
      return "matmul: unsupported dtype (float32, float16 and bfloat16 are)";
  }
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
