"""Diff mode is not silent on a file named for kernels whose changed lines show none: a Python
module like ``fused_swiglu.py`` or ``attention.py`` whose hunk is host code around its Triton
kernels is listed as unclassified; a file named otherwise with the same lines is not, nor is a
file in a package named for attention.

The hunk is from pytorch/torchtitan 95e42269f9c6 (BSD-3-Clause): ``FusedGroupedExperts.forward``
calls an overridable ``_grouped_mm`` instead of ``torch._grouped_mm``, in the module that holds
the silu-and-mul Triton kernels (tests/data/real_prs/pytorch-torchtitan-95e42269f9c6)."""

from __future__ import annotations

import pytest

from bot.analysis.classify import analyze_diff


def _hunk(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n"
        "index 395fadb3b..656674288 100644\n"
        f"--- a/{path}\n"
        f"+++ b/{path}\n"
        "@@ -555,4 +555,6 @@ class FusedGroupedExperts(GroupedExperts):\n"
        "         offsets_E = torch.cumsum(num_tokens_per_expert_E, dim=0, dtype=torch.int32)\n"
        " \n"
        "-        gate_up_R2F = torch._grouped_mm(x_RD.bfloat16(), w13_E_D_2F, offs=offsets_E)\n"
        "+        gate_up_R2F = self._grouped_mm(\n"
        "+            A=x_RD.bfloat16(), B_t=w13_E_D_2F, offs=offsets_E\n"
        "+        )\n"
        "         gate_RF, up_RF = gate_up_R2F.reshape(-1, F, 2).unbind(-1)\n"
    )


@pytest.mark.parametrize(
    "path",
    [
        "torchtitan/overrides/fused_swiglu.py",
        "csrc/kernels/moe.py",
        "src/pkg/ops/triton/experts.py",
    ],
)
def test_a_file_named_for_kernels_is_named_when_its_lines_show_none(path: str) -> None:
    said = {u.path: u.why for u in analyze_diff(_hunk(path)).unclassified}
    assert "named like a file of GPU kernels" in said[path]


@pytest.mark.parametrize("path", ["torchtitan/models/common/moe.py", "src/refused_ops.py"])
def test_a_file_named_otherwise_with_the_same_lines_is_not(path: str) -> None:
    assert not analyze_diff(_hunk(path)).unclassified


def _attention_hunk(path: str) -> str:
    """GeeeekExplorer/nano-vllm 1caeec8dfa9c (MIT): ``Attention.forward`` reads its two caches in
    one assignment, in the module that holds the ``store_kvcache_kernel`` Triton kernel it
    launches (tests/data/real_prs/GeeeekExplorer-nano-vllm-1caeec8dfa9c)."""
    return (
        f"diff --git a/{path} b/{path}\n"
        "index 5620b13..d036641 100644\n"
        f"--- a/{path}\n"
        f"+++ b/{path}\n"
        "@@ -61,8 +61,7 @@ class Attention(nn.Module):\n"
        "         k = k.view(-1, self.num_kv_heads, self.head_dim)\n"
        "         v = v.view(-1, self.num_kv_heads, self.head_dim)\n"
        "         context = get_context()\n"
        "-        k_cache = self.k_cache\n"
        "-        v_cache = self.v_cache\n"
        "+        k_cache, v_cache = self.k_cache, self.v_cache\n"
        "         if k_cache.numel() and v_cache.numel():\n"
        "             store_kvcache(k, v, k_cache, v_cache, context.slot_mapping)\n"
        "         if context.is_prefill:\n"
    )


@pytest.mark.parametrize(
    "path", ["nanovllm/layers/attention.py", "src/paged_attn.py", "ops/mla-attention.cu.h"]
)
def test_a_file_named_for_attention_is_named_when_its_lines_show_none(path: str) -> None:
    said = {u.path: u.why for u in analyze_diff(_attention_hunk(path)).unclassified}
    assert "named like a file of GPU kernels" in said[path]


@pytest.mark.parametrize(
    "path", ["ring_attention_pytorch/layers/cache.py", "src/flag_attn/model.py", "attentions.py"]
)
def test_a_package_named_for_attention_does_not_name_its_other_files(path: str) -> None:
    assert not analyze_diff(_attention_hunk(path)).unclassified
