"""The review of a rewrite of NVIDIA's reduction sample (real ``__shfl_down_sync``, ballot and
cooperative-groups code) into Triton, in a real git repository: the lane-level primitives it
gave up (B-6) and the head's benchmark timing the launch with the wall clock (Part A)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.gitutil import commit_all, init_repo
from bot.review.local import ReviewInputs, static_review
from tests.paths import DATA

POLICY = """\
vendors = ["nvidia", "amd"]
owners = ["@gpu-team"]
[deployment]
kind = "long-lived"
[[kernels]]
name = "reduce"
bench = "redops.bench:reduce"
paths = ["redops/reduce.py", "redops/csrc/reduction_kernel.cu"]
dtypes = ["float32"]
shapes = [[1048576]]
"""

BASE_WRAPPER = '''\
"""Sum of a float32 vector: the C++ kernel (reduce7 of csrc/reduction_kernel.cu)."""

from . import _C


def reduce_sum(x):
    return _C.reduce(x)
'''

HEAD_WRAPPER = '''\
"""Sum of a float32 vector in Triton: one partial sum per program, then torch adds them."""

import torch
import triton
import triton.language as tl


@triton.jit
def reduce_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x, axis=0))


def reduce_sum(x):
    n = x.numel()
    partial = torch.empty(triton.cdiv(n, 1024), device=x.device, dtype=torch.float32)
    reduce_kernel[(partial.numel(),)](x, partial, n, BLOCK=1024)
    return partial.sum()
'''

BENCH = '''\
"""How fast is the new reduction? (python -m bench.bench_reduce)"""

import time

import torch

from redops.reduce import reduce_sum


def main():
    x = torch.randn(1 << 24, device="cuda")
    reduce_sum(x)
    start = time.perf_counter()
    for _ in range(100):
        reduce_sum(x)
    print(f"{(time.perf_counter() - start) * 1e4:.1f} us per call")


if __name__ == "__main__":
    main()
'''


def test_a_rewrite_of_the_reduction_sample_names_what_it_gave_up(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    (repo / "redops" / "csrc").mkdir(parents=True)
    shutil.copy(
        DATA / "controls" / "cuda_samples" / "reduction_kernel.cu",
        repo / "redops" / "csrc" / "reduction_kernel.cu",
    )
    (repo / "redops" / "__init__.py").write_text("")
    (repo / "redops" / "reduce.py").write_text(BASE_WRAPPER)
    base = commit_all(repo, "base: the C++ reduction")
    (repo / "redops" / "reduce.py").write_text(HEAD_WRAPPER)
    (repo / "bench").mkdir()
    (repo / "bench" / "bench_reduce.py").write_text(BENCH)
    head = commit_all(repo, "head: the reduction in Triton")

    review = static_review(ReviewInputs(repo=repo, base_sha=base, head_sha=head)).review
    [change] = [c for c in review.verdict.changes if c.kind == "rewrite"]
    kinds = {f.kind: f for f in change.findings}
    lanes = kinds["lane_primitives"]
    assert (lanes.path, lanes.line) == ("redops/csrc/reduction_kernel.cu", 78)
    assert "__shfl_down_sync() (redops/csrc/reduction_kernel.cu:78)" in lanes.message
    assert (
        "__ballot_sync()" in lanes.message and "a lane vote has no block spelling" in lanes.message
    )
    timing = kinds["async_timing"]
    assert (timing.path, timing.line) == ("bench/bench_reduce.py", 13)
    assert "times reduce_sum(...) with time.perf_counter()" in timing.message
    comment = review.comment
    assert "### In the changed code" in comment
    assert "- **reduce** (`bench/bench_reduce.py:13`): times reduce\\_sum(...)" in comment
    # the finding's place is in its sentence already, not repeated before it
    assert "- **reduce**: the replaced C++ (reduce0" in comment
    assert "\\_\\_shfl\\_down\\_sync() (redops/csrc/reduction\\_kernel.cu:78)" in comment
