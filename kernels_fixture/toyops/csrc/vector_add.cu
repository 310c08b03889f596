// Vector addition for NVIDIA GPUs: out[i] = x[i] + y[i], for float32, float16 and bfloat16.
//
// A grid-stride loop over 16-byte packs (4 floats or 8 halves per thread per step): a
// memory-bound kernel needs wide loads to reach DRAM bandwidth. Every index is checked against
// n, and the last n % pack elements go through a scalar tail. When a pointer is not 16-byte
// aligned (a tensor that is a view at an odd offset) the whole range takes the scalar path.
// fp16 and bf16 are added in fp32 and rounded once, as torch does.
//
// The AMD twin is vector_add.hip; vector_add_binding.cpp allocates the output and calls
// toyops_vector_add_launch below with the caller's stream.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// dtype codes shared with vector_add_binding.cpp
constexpr int kFloat32 = 0;
constexpr int kFloat16 = 1;
constexpr int kBFloat16 = 2;

constexpr int kThreads = 256;

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

template <typename T, bool kVectorised>
__global__ void __launch_bounds__(kThreads)
    vector_add_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                      int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail_start = 0;
  if (kVectorised) {
    // One uint4 (16 bytes) per thread per step: a single 128-bit load from each input.
    constexpr int kPack = sizeof(uint4) / sizeof(T);
    const int64_t n_packs = n / kPack;
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
    const uint4* y4 = reinterpret_cast<const uint4*>(y);
    uint4* out4 = reinterpret_cast<uint4*>(out);
    for (int64_t i = first; i < n_packs; i += stride) {
      const uint4 a = x4[i];
      const uint4 b = y4[i];
      uint4 c;
      const T* av = reinterpret_cast<const T*>(&a);
      const T* bv = reinterpret_cast<const T*>(&b);
      T* cv = reinterpret_cast<T*>(&c);
#pragma unroll
      for (int j = 0; j < kPack; ++j) cv[j] = from_float<T>(to_float(av[j]) + to_float(bv[j]));
      out4[i] = c;
    }
    tail_start = n_packs * kPack;
  }
  // Scalar tail: the last n % kPack elements, or everything when not vectorised.
  for (int64_t i = tail_start + first; i < n; i += stride) {
    out[i] = from_float<T>(to_float(x[i]) + to_float(y[i]));
  }
}

// Enough blocks to fill every SM once (8 blocks of 256 threads = 2048 threads per SM); the
// grid-stride loop covers the rest.
int max_resident_blocks() {
  static int sm_count[64] = {0};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 1024;
  if (sm_count[device] == 0) {
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      return 1024;
    }
    sm_count[device] = count;
  }
  return sm_count[device] * (2048 / kThreads);
}

template <typename T>
cudaError_t launch(const void* x, const void* y, void* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const uintptr_t addresses = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y) |
                              reinterpret_cast<uintptr_t>(out);
  const bool aligned = addresses % sizeof(uint4) == 0;
  constexpr int64_t kPack = sizeof(uint4) / sizeof(T);
  const int64_t work = aligned ? (n + kPack - 1) / kPack : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > max_resident_blocks()) blocks = max_resident_blocks();
  const T* xt = static_cast<const T*>(x);
  const T* yt = static_cast<const T*>(y);
  T* ot = static_cast<T*>(out);
  const dim3 grid(static_cast<unsigned>(blocks));
  if (aligned) {
    vector_add_kernel<T, true><<<grid, kThreads, 0, stream>>>(xt, yt, ot, n);
  } else {
    vector_add_kernel<T, false><<<grid, kThreads, 0, stream>>>(xt, yt, ot, n);
  }
  return cudaGetLastError();
}

}  // namespace

// Returns nullptr on success, else a message naming what failed.
extern "C" const char* toyops_vector_add_launch(const void* x, const void* y, void* out, int64_t n,
                                                int dtype, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t err;
  switch (dtype) {
    case kFloat32:
      err = launch<float>(x, y, out, n, s);
      break;
    case kFloat16:
      err = launch<__half>(x, y, out, n, s);
      break;
    case kBFloat16:
      err = launch<__nv_bfloat16>(x, y, out, n, s);
      break;
    default:
      return "vector_add: unsupported dtype (float32, float16 and bfloat16 are)";
  }
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
