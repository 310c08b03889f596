"""Toy ops: vector_add and softmax run Triton kernels; the CUDA softmax stays behind a flag."""

import os

from toyops import _ext
from toyops.matmul import matmul
from toyops.scale import scale
from toyops.softmax import softmax as softmax_triton
from toyops.vector_add import vector_add

__all__ = ["matmul", "scale", "softmax", "vector_add"]

# Rollback for one release: TOYOPS_CUDA_SOFTMAX=1 runs the previous CUDA kernel.
USE_CUDA_SOFTMAX = os.environ.get("TOYOPS_CUDA_SOFTMAX") == "1"


def softmax(x):
    if USE_CUDA_SOFTMAX:
        return _ext.softmax(x)
    return softmax_triton(x)
