"""A CUDA kernel whose source is string pieces joined with values (``r\"\"\"...\"\"\" + str(n) +
r\"\"\"...\"\"\"``, compiled by ``cupy.RawKernel``) is read as one source
(``bot/analysis/scan/triton._joined_source``).

Shortened from model/modules/feature_transformer/fused_ft_kernel.py of
official-stockfish/nnue-pytorch (GPL-3.0): at the parent of 2df33a3c the forward kernel reads
``us[block_idx]``, at 2df33a3c ``__ldg(&us[block_idx])``; 178821208403 (in tests/data/real_prs)
moves the PSQT accumulation inside a source built the same way.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.scan.triton import scan_python
from tests.diff_util import file_diff

PATH = "model/modules/feature_transformer/fused_ft_kernel.py"
BEFORE = '''\
import cupy as cp

_fused_double_ft_forward_kernel_cache = dict()


def make_fused_double_ft_forward_kernel(max_active_indices: int, l1_size: int):
    l1_half = l1_size // 2
    num_threads = _get_num_threads_for_forward(l1_half)
    output_thread_slice_size = l1_half // num_threads
    key = (max_active_indices, l1_size, num_threads)
    if key not in _fused_double_ft_forward_kernel_cache:
        kernel = cp.RawKernel(
            r"""
typedef unsigned int uint32_t;

extern "C" __global__
void fused_double_ft_forward(
    const float*   const us,
    const float*   const bias,
          float*   const l0_out
) {
    const uint32_t block_idx = blockIdx.x;
    const uint32_t slice_offset = threadIdx.x * """ + str(output_thread_slice_size) + r""";
    const float us_val = us[block_idx];
    const int32_t l1_half = """ + str(l1_half) + r""";
    for (uint32_t s = 0; s < """ + str(output_thread_slice_size) + r"""; ++s) {
        uint32_t i = slice_offset + s;
        l0_out[i] = us_val * bias[i];
    }
}
""",
            "fused_double_ft_forward",
        )
        _fused_double_ft_forward_kernel_cache[key] = kernel
    return _fused_double_ft_forward_kernel_cache[key]
'''


def _changes(after: str) -> list[str]:
    old, new = {PATH: BEFORE}, {PATH: after}
    analysis = analyze_diff(
        file_diff(PATH, BEFORE, after), old_source=old.get, new_source=new.get, old_files=[PATH]
    )
    return sorted(f"{c.kind} {c.name}" for c in analysis.changes)


def test_a_source_joined_from_pieces_and_values_holds_its_kernel():
    kernels = scan_python(PATH, BEFORE).kernels
    assert [(k.name, k.language, k.built_by) for k in kernels] == [
        ("fused_double_ft_forward", "cuda", "make_fused_double_ft_forward_kernel")
    ]


def test_a_line_of_the_joined_source_changed_is_a_body_change():
    after = BEFORE.replace("us[block_idx];", "__ldg(&us[block_idx]);")
    assert _changes(after) == ["body fused_double_ft_forward"]


def test_a_value_spliced_in_changed_is_a_body_change_and_layout_is_not():
    assert _changes(BEFORE.replace("str(l1_half)", "str(l1_size // 2)")) == [
        "body fused_double_ft_forward"
    ]
    assert _changes(BEFORE.replace("    const float us_val", "\n    const float us_val")) == []
