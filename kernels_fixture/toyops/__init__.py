"""toyops: small GPU operators (vector add, fused softmax, matmul) for NVIDIA and AMD."""

from .matmul import matmul
from .softmax import softmax
from .vector_add import vector_add

__all__ = ["matmul", "softmax", "vector_add"]
