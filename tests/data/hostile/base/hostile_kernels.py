"""Hostile output, base side: a correct ``2 x + y`` under every name the head side uses."""

from __future__ import annotations

import numpy as np


def axpy(shape, dtype, *, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    return {
        "fn": lambda: 2 * x + y,
        "reference": lambda: 2 * x + y,
        "bytes_moved": 3 * x.nbytes,
        "flops": 2 * x.size,
    }


shout = axpy
