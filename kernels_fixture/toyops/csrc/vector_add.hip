// Vector addition for AMD GPUs (HIP): out[i] = x[i] + y[i], for float32, float16 and bfloat16.
//
// The twin of vector_add.cu: a grid-stride loop over 16-byte packs (4 floats or 8 halves per
// thread per step, one global_load_dwordx4 per input), every index checked against n, a scalar
// tail for the last n % pack elements, and a scalar path for pointers that are not 16-byte
// aligned. fp16 and bf16 are added in fp32 and rounded once, as torch does.
//
// vector_add_binding.cpp allocates the output and calls toyops_vector_add_launch below with the
// caller's stream (torch.cuda streams are HIP streams on ROCm).

#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <cstdint>

namespace {

// dtype codes shared with vector_add_binding.cpp
constexpr int kFloat32 = 0;
constexpr int kFloat16 = 1;
constexpr int kBFloat16 = 2;

constexpr int kThreads = 256;  // four 64-lane wavefronts

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__hip_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __hip_bfloat16 from_float<__hip_bfloat16>(float v) {
  return __float2bfloat16(v);
}

template <typename T, bool kVectorised>
__global__ void __launch_bounds__(kThreads)
    vector_add_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                      int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail_start = 0;
  if (kVectorised) {
    // One uint4 (16 bytes) per thread per step.
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

// Enough blocks to fill every compute unit once; the grid-stride loop covers the rest.
int max_resident_blocks() {
  static int cu_count[64] = {0};
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess || device < 0 || device >= 64) return 1024;
  if (cu_count[device] == 0) {
    int count = 0;
    const hipError_t err =
        hipDeviceGetAttribute(&count, hipDeviceAttributeMultiprocessorCount, device);
    if (err != hipSuccess) return 1024;
    cu_count[device] = count;
  }
  return cu_count[device] * (2048 / kThreads);
}

template <typename T>
hipError_t launch(const void* x, const void* y, void* out, int64_t n, hipStream_t stream) {
  if (n <= 0) return hipSuccess;
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
    hipLaunchKernelGGL((vector_add_kernel<T, true>), grid, dim3(kThreads), 0, stream, xt, yt, ot,
                       n);
  } else {
    hipLaunchKernelGGL((vector_add_kernel<T, false>), grid, dim3(kThreads), 0, stream, xt, yt, ot,
                       n);
  }
  return hipGetLastError();
}

}  // namespace

// Returns nullptr on success, else a message naming what failed.
extern "C" const char* toyops_vector_add_launch(const void* x, const void* y, void* out, int64_t n,
                                                int dtype, void* stream) {
  const hipStream_t s = static_cast<hipStream_t>(stream);
  hipError_t err;
  switch (dtype) {
    case kFloat32:
      err = launch<float>(x, y, out, n, s);
      break;
    case kFloat16:
      err = launch<__half>(x, y, out, n, s);
      break;
    case kBFloat16:
      err = launch<__hip_bfloat16>(x, y, out, n, s);
      break;
    default:
      return "vector_add: unsupported dtype (float32, float16 and bfloat16 are)";
  }
  return err == hipSuccess ? nullptr : hipGetErrorString(err);
}
