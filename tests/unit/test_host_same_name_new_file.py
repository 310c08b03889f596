"""A new C++ file whose host functions share their names with another file's is another
translation unit: the other file's kernels are not launched differently.

Shortened from JL-er/RWKV-PEFT 4a6ae20e86ec (Apache-2.0; in tests/data/real_prs): the new
cuda/wkv6infctx_cuda.cu, a copy of cuda/wkv6state_cuda.cu built as its own extension, defines
its own ``cuda_forward`` launching its own ``kernel_forward``.
"""

from __future__ import annotations

from tests.diff_util import changes_between

CU = """\
__global__ void kernel_forward(const int B, const float *r, float *y) { y[0] = r[0]; }

void cuda_forward(int B, float *r, float *y) {
    kernel_forward<<<dim3(B), dim3(64)>>>(B, r, y);
}
"""


def test_a_new_file_with_a_same_named_launcher_changes_no_other_file() -> None:
    base = {"cuda/wkv6state_cuda.cu": CU}
    new = {**base, "cuda/wkv6infctx_cuda.cu": CU.replace("y[0] = r[0]", "y[0] = 2 * r[0]")}
    assert changes_between(base, new) == ["new kernel_forward"]


def test_a_changed_launcher_still_changes_its_kernels_launch() -> None:
    """The control: the launcher changed in its own file is a launch change of its kernel."""
    base = {"cuda/wkv6state_cuda.cu": CU}
    new = {"cuda/wkv6state_cuda.cu": CU.replace("dim3(64)", "dim3(128)")}
    assert changes_between(base, new) == ["launch kernel_forward"]
