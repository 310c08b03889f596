"""Vector addition: ``out = x + y`` for two tensors of the same shape and dtype.

Backed by the hand-written kernel: csrc/vector_add.cu on NVIDIA, csrc/vector_add.hip on AMD,
compiled on first use (see _cext.py).

Run ``python -m toyops.vector_add`` for a correctness check on ragged lengths.
"""

from __future__ import annotations

import torch

from . import _cext


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` computed by the hand-written kernel; both tensors on the same GPU, same shape."""
    return _cext.call("vector_add", x, y)


def _check(device: str) -> None:
    """Compare against torch on lengths that are not a multiple of the 16-byte pack."""
    gen = torch.Generator(device=device).manual_seed(0)
    for n in (1, 17, 98432, 1_000_003):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(n, generator=gen, device=device, dtype=dtype)
            y = torch.randn(n, generator=gen, device=device, dtype=dtype)
            torch.testing.assert_close(vector_add(x, y), x + y, atol=0, rtol=0)
    print("vector_add: matches torch on lengths 1, 17, 98432 and 1000003")


if __name__ == "__main__":
    _check("cuda")
