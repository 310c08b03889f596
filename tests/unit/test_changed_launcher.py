"""A changed C++ launcher changes its own launches, each compared with its branch
(``cross_file.compare_launches``); the host call graph (``reach/host_cpp``) does not spread the
change to what the launcher's callers call beside it, nor to the other members named like it.

Shortened from train_gpt2.cu of karpathy/llm.c (MIT) at 4698164e3eba (parent 52b4dd02a1be):
``residual_forward``'s grid changes; ``gpt2_forward`` calls it and ``gelu_forward``. The second
excerpt is apps/nccl/src/allreduce.cu of microsoft/mscclpp (MIT) at 168a6c7037c6 (parent
fc221e234de5), kernels moved in from allreduce.hpp: ``AllpairAdapter::call`` picks a block size
for ``allreduce7`` in the branch of its launch; ``allreduceAllPairs`` is launched in other
branches, and ``NvlsAdapter::call`` launches ``allreduce8``.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

LLMC = """\
__global__ void residual_forward_kernel(floatX* out, floatX* inp1, floatX* inp2, int N) {
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (idx < N) {
        x128 packed_out;
        x128 packed_inp1 = load128cs(inp1 + idx);
        x128 packed_inp2 = load128cs(inp2 + idx);
        for (int k = 0; k < packed_inp1.size; ++k)
        {
            packed_out[k] = (floatX)((float)packed_inp1[k] + (float)packed_inp2[k]);
        }
        store128(out + idx, packed_out);
    }
}

__global__ void gelu_forward_kernel2(floatX* out, const floatX* inp, int N) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (i < N) {
        x128 packed_out;
        x128 packed_inp = load128cs(inp + i);
        for(int k = 0; k < packed_inp.size; ++k) {
            float xi = (float)packed_inp[k];
            packed_out[k] = (floatX)(0.5f * xi * (1.0f + tanhf(xi)));
        }
        store128(out + i, packed_out);
    }
}

void residual_forward(floatX* out, floatX* inp1, floatX* inp2, int N) {
    const int block_size = 256;
    const int grid_size = CEIL_DIV(N/x128::size, block_size);
    residual_forward_kernel<<<grid_size, block_size>>>(out, inp1, inp2, N);
    cudaCheck(cudaGetLastError());
}

void gelu_forward(floatX* out, const floatX* inp, int N) {
    const int block_size = 512;
    const int grid_size = CEIL_DIV(N, block_size * x128::size);
    gelu_forward_kernel2<<<grid_size, block_size>>>(out, inp, N);
    cudaCheck(cudaGetLastError());
}

void gpt2_forward(GPT2 *model, int* inputs, int* targets, size_t B, size_t T) {
    for (int l = 0; l < L; l++) {
        residual_forward(l_residual2, residual, l_attproj, B*T*C);
        gelu_forward(l_fch_gelu, l_fch, B*T*4*C);
        residual_forward(l_residual3, l_residual2, l_fcproj, B*T*C);
    }
}
"""
LLMC_HEAD = LLMC.replace(
    "CEIL_DIV(N/x128::size, block_size)", "CEIL_DIV(N, (int)(block_size * x128::size))"
)

MSCCLPP = """\
template <Op OpType, typename T>
__global__ void allreduceAllPairs(T* buff, T* scratch, T* resultBuff, size_t nelems) {
  resultBuff[threadIdx.x] = buff[threadIdx.x];
}

template <Op OpType, typename T>
__global__ void allreduce7(T* buff, T* scratch, T* resultBuff, size_t nelems) {
  resultBuff[threadIdx.x] = scratch[threadIdx.x];
}

template <Op OpType, typename T>
__global__ void allreduce8(T* buff, T* scratch, T* resultBuff, size_t nelems) {
  resultBuff[blockIdx.x] = scratch[threadIdx.x];
}

template <Op OpType, typename T>
struct AllpairAdapter {
  static cudaError_t call(const void* buff, void* scratch, void* resultBuff, int worldSize,
                          size_t nelems, cudaStream_t stream) {
    if (sizeof(T) * nelems < worldSize * sizeof(int)) {
      int nBlocks = worldSize - 1;
      int nThreadsPerBlock = 32;
      allreduceAllPairs<OpType><<<nBlocks, nThreadsPerBlock, 0, stream>>>(
          (T*)buff, (T*)scratch, (T*)resultBuff, nelems);
    } else if (sizeof(T) * nelems <= (1 << 20)) {
      int nBlocks = (worldSize - 1) * 4;
      int nThreadsPerBlock = 1024;
      if (nelems >= 8192) {
        nBlocks = (worldSize - 1) * 8;
        nThreadsPerBlock = (nelems <= 76800) ? 512 : 1024;
      }
      allreduce7<OpType><<<nBlocks, nThreadsPerBlock, 0, stream>>>(
          (T*)buff, (T*)scratch, (T*)resultBuff, nelems);
    }
    return cudaGetLastError();
  }
};

template <Op OpType, typename T>
struct NvlsAdapter {
  static cudaError_t call(const void* buff, void* scratch, void* resultBuff, int worldSize,
                          size_t nelems, cudaStream_t stream) {
    int nBlocks = (worldSize - 1) * 5;
    int nThreadsPerBlock = 512;
    allreduce8<OpType><<<nBlocks, nThreadsPerBlock, 0, stream>>>(
        (T*)buff, (T*)scratch, (T*)resultBuff, nelems);
    return cudaGetLastError();
  }
};

template <template <Op, typename> class Adapter>
AllreduceFunc dispatch(ncclRedOp_t op, mscclpp::DataType dtype) {
  return Adapter<SUM, half>::call;
}

ncclResult_t allreduce(ncclRedOp_t op, mscclpp::DataType dtype, bool nvls) {
  AllreduceFunc f = nvls ? dispatch<NvlsAdapter>(op, dtype) : dispatch<AllpairAdapter>(op, dtype);
  return f == nullptr ? ncclInternalError : ncclSuccess;
}
"""
MSCCLPP_HEAD = MSCCLPP.replace(
    "        nThreadsPerBlock = (nelems <= 76800) ? 512 : 1024;\n",
    "        nThreadsPerBlock = (nelems <= 76800) ? 512 : 1024;\n"
    "        if (sizeof(T) * nelems == (32 << 10)) {\n"
    "          nThreadsPerBlock = 64;\n"
    "        }\n",
)


def _changes(path: str, before: str, after: str) -> list[tuple[str, str]]:
    return sorted((c.kind, c.name) for c in analysis_between({path: before}, {path: after}).changes)


def test_a_launcher_s_change_is_not_spread_to_what_its_callers_call_beside_it() -> None:
    assert _changes("train_gpt2.cu", LLMC, LLMC_HEAD) == [("launch", "residual_forward_kernel")]


def test_a_member_launcher_s_change_stays_with_its_own_launch() -> None:
    assert _changes("apps/nccl/src/allreduce.cu", MSCCLPP, MSCCLPP_HEAD) == [
        ("launch", "allreduce7")
    ]


def test_a_vendor_block_at_a_launch_of_a_kernel_defined_elsewhere_is_its_branch() -> None:
    # the real layout: the kernels are in allreduce.hpp, which the pull request does not touch
    path = "apps/nccl/src/allreduce.cu"
    before = MSCCLPP[MSCCLPP.index("template <Op OpType, typename T>\nstruct AllpairAdapter") :]
    after = before.replace(
        "        nThreadsPerBlock = (nelems <= 76800) ? 512 : 1024;\n",
        "        nThreadsPerBlock = (nelems <= 76800) ? 512 : 1024;\n"
        "#if defined(__HIP_PLATFORM_AMD__)\n"
        "        if (sizeof(T) * nelems == (32 << 10)) {\n"
        "          nThreadsPerBlock = 64;\n"
        "        }\n"
        "#endif\n",
    )
    analysis = analysis_between({path: before}, {path: after})
    assert [
        (c.kind, c.name, [(b.kind, b.condition) for b in c.branches]) for c in analysis.changes
    ] == [("launch", "allreduce7", [("vendor", "#if defined(__HIP_PLATFORM_AMD__)")])]


# Shortened from gsplat/cuda/csrc/RasterizeToPixelsFromWorld3DGSParallelBatchFwd.cu of
# nerfstudio-project/gsplat (Apache-2.0) at 22a01a288acb (parent 68c1c7aa2d10): one launcher
# launches the partials kernel in an ``if``, the batch-scan kernel in a lambda, and the
# batch-replay kernel under ``if constexpr``; the pull request drops a template argument of the
# batch-scan launch only.
GSPLAT = """\
template <uint32_t CDIM, bool UseHitDistance, bool ForBackward>
__global__ void fwd_partials_kernel(const float* means, float* partials) {
    partials[threadIdx.x] = means[threadIdx.x];
}

template <uint32_t CDIM, bool UseHitDistance, bool SAFE_MASKED_OUTPUTS>
__global__ void fwd_batch_scan_kernel(const float* partials, float* renders) {
    renders[threadIdx.x] = partials[threadIdx.x];
}

template <uint32_t CDIM, bool UseHitDistance>
__global__ void fwd_batch_replay_kernel(const float* partials, float* renders) {
    renders[blockIdx.x] = partials[threadIdx.x];
}

void launch_parallel_batch_fwd_kernel(const at::Tensor means, at::Tensor renders) {
    auto launch_kernel = [&]<typename ChannelsT, typename UseHitDistanceT, typename FwdOnlyT>()
    {
        constexpr uint32_t CDIM = ChannelsT::value;
        constexpr bool UseHitDistance = UseHitDistanceT::value;
        constexpr bool ForBackward = !FwdOnlyT::value;
        if(total_batches > 0)
        {
            const dim3 grid_partials = {static_cast<uint32_t>(total_batches), 1, 1};
            fwd_partials_kernel<
                CDIM,
                UseHitDistance,
                ForBackward
            ><<<grid_partials, threads, shmem_size, stream>>>(
                means.const_data_ptr<float>(),
                partials.data_ptr<float>()
            );
        }
        const dim3 grid_batch_scan = {I, tile_height, tile_width};
        auto launch_batch_scan     = [&]<bool SAFE_MASKED_OUTPUTS>()
        {
            fwd_batch_scan_kernel<
                CDIM,
                UseHitDistance,
                SAFE_MASKED_OUTPUTS
            ><<<grid_batch_scan, threads, 0, stream>>>(
                partials.const_data_ptr<float>(),
                renders.data_ptr<float>()
            );
        };
        launch_batch_scan.template operator()<true>();
        if constexpr(ForBackward)
        {
            if(total_batches > 0)
            {
                const dim3 grid_batch_replay = {static_cast<uint32_t>(total_batches), 1, 1};
                fwd_batch_replay_kernel<
                    CDIM,
                    UseHitDistance
                ><<<grid_batch_replay, threads, shmem_size, stream>>>(
                    data_ptr_or_null<const float>(backgrounds),
                    partials.const_data_ptr<float>(),
                    renders.data_ptr<float>()
                );
            }
        }
    };
    dispatch::dispatch(SupportedChannels{channels}, std::move(launch_kernel));
}
"""
GSPLAT_HEAD = GSPLAT.replace(
    "                UseHitDistance,\n                SAFE_MASKED_OUTPUTS\n",
    "                SAFE_MASKED_OUTPUTS\n",
)


def test_a_launch_changed_in_its_own_block_changes_no_other_launch_of_the_function() -> None:
    # the batch-scan launch itself is still read as changed (a listed miss of the corpus)
    path = "gsplat/cuda/csrc/RasterizeToPixelsFromWorld3DGSParallelBatchFwd.cu"
    assert GSPLAT_HEAD != GSPLAT
    assert _changes(path, GSPLAT, GSPLAT_HEAD) == [("launch", "fwd_batch_scan_kernel")]
