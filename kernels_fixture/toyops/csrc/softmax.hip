// Row-wise softmax for AMD GPUs (HIP): y[r, :] = exp(x[r, :] - max(x[r, :])) / sum(...).
//
// The twin of softmax.cu, for CDNA GPUs (MI200, MI300) whose wavefronts are 64 lanes wide: the
// shuffles span 64 lanes and the smallest block is one wavefront.
//
// One thread block per row. For rows up to 16384 columns the row is loaded once into registers
// (kItems values per thread, column c held by thread c % kThreads), reduced twice (max, then sum
// of exponentials) with wavefront shuffles plus one LDS slot per wavefront, and written once:
// one DRAM read and one write per element. Wider rows use a two-pass kernel that keeps a
// running (max, sum) per thread and reads the row a second time to write it.
// fp16 and bf16 rows are computed in fp32 and rounded on the store.
//
// softmax_binding.cpp allocates the output and calls toyops_softmax_launch below with the
// caller's stream (torch.cuda streams are HIP streams on ROCm).

#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace {

// dtype codes shared with softmax_binding.cpp
constexpr int kFloat32 = 0;
constexpr int kFloat16 = 1;
constexpr int kBFloat16 = 2;

constexpr int kWavefrontSize = 64;  // one CDNA wavefront

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

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Butterfly reduction inside one wavefront: after it every lane holds the wavefront's result.
template <typename Op>
__device__ __forceinline__ float wavefront_reduce(float v, Op op) {
#pragma unroll
  for (int offset = kWavefrontSize / 2; offset > 0; offset /= 2) {
    v = op(v, __shfl_xor(v, offset, kWavefrontSize));
  }
  return v;
}

// Reduction over the whole block. `scratch` holds one slot per wavefront and must not be reused
// by another reduction before every thread has read it, so each reduction gets its own array.
template <int kThreads, typename Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float* scratch) {
  constexpr int kWavefronts = kThreads / kWavefrontSize;
  v = wavefront_reduce(v, op);
  if (kWavefronts == 1) return v;
  const int lane = threadIdx.x % kWavefrontSize;
  const int wavefront = threadIdx.x / kWavefrontSize;
  if (lane == 0) scratch[wavefront] = v;
  __syncthreads();  // every wavefront's partial is in LDS
  float result = scratch[0];
#pragma unroll
  for (int w = 1; w < kWavefronts; ++w) result = op(result, scratch[w]);
  return result;
}

// The row lives in registers: column threadIdx.x + i * kThreads is v[i].
template <typename T, int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    softmax_row_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n_cols) {
  __shared__ float max_scratch[kThreads / kWavefrontSize];
  __shared__ float sum_scratch[kThreads / kWavefrontSize];
  const T* row_in = x + static_cast<int64_t>(blockIdx.x) * n_cols;
  T* row_out = y + static_cast<int64_t>(blockIdx.x) * n_cols;

  float v[kItems];
  float thread_max = -INFINITY;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t col = threadIdx.x + static_cast<int64_t>(i) * kThreads;
    // Columns past the end of the row read -inf: no effect on the max, exp(-inf) = 0 in the sum.
    v[i] = col < n_cols ? to_float(row_in[col]) : -INFINITY;
    thread_max = fmaxf(thread_max, v[i]);
  }
  const float row_max = block_reduce<kThreads>(thread_max, MaxOp(), max_scratch);

  float thread_sum = 0.f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    v[i] = __expf(v[i] - row_max);
    thread_sum += v[i];
  }
  const float inv_sum = 1.f / block_reduce<kThreads>(thread_sum, SumOp(), sum_scratch);

#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t col = threadIdx.x + static_cast<int64_t>(i) * kThreads;
    if (col < n_cols) row_out[col] = from_float<T>(v[i] * inv_sum);
  }
}

// Rows too wide for registers: pass 1 keeps a running (max, sum) per thread, rescaling the sum
// whenever the max grows; pass 2 reads the row again and writes it.
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    softmax_wide_row_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n_cols) {
  __shared__ float max_scratch[kThreads / kWavefrontSize];
  __shared__ float sum_scratch[kThreads / kWavefrontSize];
  const T* row_in = x + static_cast<int64_t>(blockIdx.x) * n_cols;
  T* row_out = y + static_cast<int64_t>(blockIdx.x) * n_cols;

  float thread_max = -INFINITY;
  float thread_sum = 0.f;
  for (int64_t col = threadIdx.x; col < n_cols; col += kThreads) {
    const float value = to_float(row_in[col]);
    if (value > thread_max) {
      thread_sum = thread_sum * __expf(thread_max - value) + 1.f;
      thread_max = value;
    } else if (value != -INFINITY) {  // -inf adds nothing (and -inf - -inf would be NaN)
      thread_sum += __expf(value - thread_max);
    }
  }
  const float row_max = block_reduce<kThreads>(thread_max, MaxOp(), max_scratch);
  // Bring every thread's sum to the row's max before adding them up.
  const float rescaled = thread_max == -INFINITY ? 0.f : thread_sum * __expf(thread_max - row_max);
  const float inv_sum = 1.f / block_reduce<kThreads>(rescaled, SumOp(), sum_scratch);

  for (int64_t col = threadIdx.x; col < n_cols; col += kThreads) {
    row_out[col] = from_float<T>(__expf(to_float(row_in[col]) - row_max) * inv_sum);
  }
}

template <typename T, int kThreads, int kItems>
hipError_t run_rows(const T* x, T* y, int64_t n_rows, int64_t n_cols, hipStream_t stream) {
  hipLaunchKernelGGL((softmax_row_kernel<T, kThreads, kItems>), dim3(static_cast<unsigned>(n_rows)),
                     dim3(kThreads), 0, stream, x, y, n_cols);
  return hipGetLastError();
}

// Threads per block (a multiple of 64) and values per thread from the row width: enough threads
// to keep the row at <= 8 values per thread up to 8192 columns, then more values per thread.
template <typename T>
hipError_t launch(const void* xv, void* yv, int64_t n_rows, int64_t n_cols, hipStream_t s) {
  if (n_rows == 0 || n_cols == 0) return hipSuccess;
  if (n_rows > INT_MAX) return hipErrorInvalidConfiguration;
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  if (n_cols <= 256) return run_rows<T, 64, 4>(x, y, n_rows, n_cols, s);
  if (n_cols <= 512) return run_rows<T, 128, 4>(x, y, n_rows, n_cols, s);
  if (n_cols <= 1024) return run_rows<T, 128, 8>(x, y, n_rows, n_cols, s);
  if (n_cols <= 2048) return run_rows<T, 256, 8>(x, y, n_rows, n_cols, s);
  if (n_cols <= 4096) return run_rows<T, 512, 8>(x, y, n_rows, n_cols, s);
  if (n_cols <= 8192) return run_rows<T, 1024, 8>(x, y, n_rows, n_cols, s);
  if (n_cols <= 16384) return run_rows<T, 1024, 16>(x, y, n_rows, n_cols, s);
  hipLaunchKernelGGL((softmax_wide_row_kernel<T, 1024>), dim3(static_cast<unsigned>(n_rows)),
                     dim3(1024), 0, s, x, y, n_cols);
  return hipGetLastError();
}

}  // namespace

// Returns nullptr on success, else a message naming what failed.
extern "C" const char* toyops_softmax_launch(const void* x, void* y, int64_t n_rows,
                                             int64_t n_cols, int dtype, void* stream) {
  const hipStream_t s = static_cast<hipStream_t>(stream);
  hipError_t err;
  switch (dtype) {
    case kFloat32:
      err = launch<float>(x, y, n_rows, n_cols, s);
      break;
    case kFloat16:
      err = launch<__half>(x, y, n_rows, n_cols, s);
      break;
    case kBFloat16:
      err = launch<__hip_bfloat16>(x, y, n_rows, n_cols, s);
      break;
    default:
      return "softmax: unsupported dtype (float32, float16 and bfloat16 are)";
  }
  return err == hipSuccess ? nullptr : hipGetErrorString(err);
}
