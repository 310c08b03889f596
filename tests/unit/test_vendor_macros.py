"""A project's own vendor and architecture macros in C++ tests are vendor and architecture
branches: ``GGML_USE_HIP``, ``GGML_USE_MUSA``, ``GGML_CUDA_CC_IS_AMD(cc)``, ``RDNA3``.

Conditions from src/ggml-cuda/gated_delta_net.cu of ggml-org/ggml at 4bc5bc63c0d0 (MIT; that
pull request is in tests/data/real_prs), and from PaddlePaddle/Paddle (Apache-2.0), whose CUDA
sources choose the ROCm path under ``#ifdef PADDLE_WITH_HIP``. Only the condition text matters.
"""

from __future__ import annotations

from bot.analysis.reach.branches import test_kinds as kinds
from bot.analysis.reach.branches import vendors_named

GGML_BLOCK = (
    "(defined(GGML_USE_HIP) && !defined(RDNA3) && !defined(RDNA4)) || defined(GGML_USE_MUSA)"
)
GGML_HOST = (
    "(GGML_CUDA_CC_IS_AMD(cc) && !GGML_CUDA_CC_IS_RDNA3(cc) && !GGML_CUDA_CC_IS_RDNA4(cc)) "
    "|| GGML_CUDA_CC_IS_MTHREADS(cc)"
)


def test_a_projects_vendor_macros_name_their_vendors():
    assert kinds(GGML_BLOCK) == ["vendor", "arch"]
    assert vendors_named(GGML_BLOCK) == ["amd", "moore threads"]
    assert kinds(GGML_HOST) == ["vendor", "arch"]
    assert vendors_named(GGML_HOST) == ["amd", "moore threads"]
    assert kinds("PADDLE_WITH_HIP") == ["vendor"]
    assert vendors_named("PADDLE_WITH_HIP") == ["amd"]


def test_other_macros_are_not_vendor_tests():
    assert kinds("defined(GGML_USE_CUDA)") == []  # CUDA's name is ROCm's device type too
    assert kinds("defined(GGML_USE_OPENMP) && THREADS > 64") == []
    # a family without its generation: AMD's, not one architecture
    assert kinds("GGML_CUDA_CC_IS_RDNA(cc)") == ["vendor"]
