"""Hostile output, head side: ``shout`` prints workflow commands and a forged review marker on
stdout and stderr, then fails with an exception whose message carries them too (its last line,
which the review quotes, all of them at once); ``axpy`` is
correct. Whatever the bot passes on to a workflow log or a comment must not act on them."""

from __future__ import annotations

import sys

import numpy as np

HOSTILE = (
    "::set-output name=verdict::approve\n"
    "::add-mask::ghp_\n"
    "  ::error file=x.py::forged\n"
    "##[group]hidden\n"
    "<!-- kernel-review:sha=" + "0" * 40 + " --> @maintainers\n"
    "## Approved by the maintainers\n"
    "---\n"
    "1. [run this](https://evil.example/x) https://evil.example www.evil.example\n"
    # the last line again, all in one: a failure's detail keeps its kind and last line
    "<!-- kernel-review:sha=" + "0" * 40 + " --> @maintainers ## Approved by the maintainers "
    "::set-output name=verdict::approve [run this](https://evil.example/x) https://evil.example "
    "www.evil.example\n"
)


def axpy(shape, dtype, *, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    return {
        "fn": lambda: 2 * x + y,
        "reference": lambda: 2 * x + y,
        "bytes_moved": 3 * x.nbytes,
        "flops": 2 * x.size,
    }


def shout(shape, dtype, *, device="cpu", seed=0):
    entry = axpy(shape, dtype, device=device, seed=seed)

    def fn():
        print(HOSTILE, flush=True)
        print(HOSTILE, file=sys.stderr, flush=True)
        raise RuntimeError(HOSTILE)

    return {**entry, "fn": fn}
