"""Turn one compile's output (PTX/AMDGCN text, ptxas log, Triton metadata) into record fields.

The units are the compiler report's (see ``checks.compiler.records``); what differs by vendor
(which text holds the instructions, where the resource usage is read from, the register cap)
is asked of the target's ``checks.compiler.targets`` implementation.
"""

from __future__ import annotations

import re
from typing import Any

from checks.compiler.layouts import kernel_layouts
from checks.compiler.targets import Compiled, parse_target

_DOT = re.compile(r"\btt\.dot(?:_scaled)?\b")


def measure(
    *,
    target: str,
    texts: dict[str, str],
    metadata: dict[str, Any],
    ptxas_log: str = "",
    cuobjdump_text: str = "",
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Record fields read from one Triton compile's texts (PTX or AMDGCN, TTIR, TTGIR) and
    metadata."""
    vendor, arch = parse_target(target)
    asm = texts.get(vendor.asm_stage, "")
    fields: dict[str, Any] = {"uses_dot": bool(_DOT.search(texts.get("ttir", "")))}
    matrix = vendor.matrix_instructions(asm)
    if matrix:
        fields["matrix_instr"], _ = matrix.most_common(1)[0]
        fields["matrix_instr_count"] = sum(matrix.values())
    loads = vendor.global_load_widths(asm)
    fields["load_width_hist"] = dict(sorted(loads.items()))
    fields["global_load_bits_max"] = max(loads) if loads else None
    fields["layouts"] = [x.model_dump(mode="json") for x in kernel_layouts(texts.get("ttgir", ""))]
    fields["max_regs_per_thread"] = vendor.max_regs(arch, options)
    compiled = Compiled(
        function=str(metadata.get("name", "")),
        num_warps=int(metadata.get("num_warps") or 4),
        dynamic_shared=int(metadata.get("shared") or 0),
        asm=asm,
        compile_log=ptxas_log,
        resource_dump=cuobjdump_text,
    )
    fields.update(vendor.usage_fields(arch, compiled))
    return fields
