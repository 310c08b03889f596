"""Diff mode is not silent on a header that may hold kernels: a ``.h`` changed beside CUDA/HIP
sources of the same diff is listed as unclassified, though its changed lines show no kernel.

The hunks are from EleutherAI/gpt-neox 7a8fa2f013e7 (Apache-2.0): the copyright year of
megatron/fused_kernels/, whose ``scaled_masked_softmax.h`` holds the softmax kernels
(tests/data/real_prs/EleutherAI-gpt-neox-7a8fa2f013e7)."""

from __future__ import annotations

from bot.analysis.classify import analyze_diff


def _hunk(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n"
        "index 251337d6..88867dc7 100644\n"
        f"--- a/{path}\n"
        f"+++ b/{path}\n"
        "@@ -1,5 +1,5 @@\n"
        " /* coding=utf-8\n"
        "- * Copyright (c) 2020, NVIDIA CORPORATION.  All rights reserved.\n"
        "+ * Copyright (c) 2024, NVIDIA CORPORATION.  All rights reserved.\n"
        " *\n"
        ' * Licensed under the Apache License, Version 2.0 (the "License");\n'
        " * you may not use this file except in compliance with the License.\n"
    )


def test_a_header_beside_cuda_sources_is_named_and_one_alone_is_not() -> None:
    header = "megatron/fused_kernels/scaled_masked_softmax.h"
    beside = analyze_diff(
        _hunk(header) + _hunk("megatron/fused_kernels/scaled_masked_softmax_cuda.cu")
    )
    said = {u.path: u.why for u in beside.unclassified}
    assert "may hold their kernels" in said[header]
    alone = {u.path: u.why for u in analyze_diff(_hunk(header)).unclassified}
    assert "named like a file of GPU kernels" in alone[header]  # its folder's name is the sign
    assert not analyze_diff(_hunk("include/softmax.h")).unclassified  # no sign at all
    elsewhere = analyze_diff(_hunk("include/version.h") + _hunk("csrc/softmax_cuda.cu"))
    assert "include/version.h" not in {u.path for u in elsewhere.unclassified}
