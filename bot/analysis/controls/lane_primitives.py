"""Part B-6: warp / wavefront primitives in the C++ a rewrite replaces.

A Triton kernel works on whole blocks: ``tl.sum``, ``tl.max``, ``tl.reduce``, ``tl.cumsum`` and
``tl.associative_scan`` are its only cross-lane operations, and the compiler picks the shuffles.
When the replaced kernel (or a ``__device__`` helper it calls, in its file or a local header)
uses lane-level primitives, the review says which and where: a shuffle reduction or scan has a
block spelling, so the Triton kernel must be checked to express the same algorithm with one; a
lane vote, a lane permutation, DPP / ``ds_swizzle`` or inline asm has none, and is the honest
reason to keep the C++ kernel.
"""

from __future__ import annotations

import re

from bot.analysis.code_counts import kernel_spans
from bot.analysis.compare import sources_for
from bot.analysis.model import Context, KernelChange, KernelRef
from bot.analysis.pairing import local_headers
from bot.analysis.scan import scan_source
from bot.analysis.scan.cpp import mask
from bot.contracts.review import ChangeFinding

# (family, pattern): what a Triton kernel can and cannot say instead
FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "shuffle",
        re.compile(
            r"\b__shfl(?:_up|_down|_xor)?(?:_sync)?\s*\(|\.shfl(?:_up|_down|_xor)?\s*\(|"
            r"\b__reduce_(?:add|min|max|and|or|xor)_sync\s*\(|\bcg::(?:reduce|inclusive_scan|"
            r"exclusive_scan)\s*\("
        ),
    ),
    (
        "vote",
        re.compile(
            r"\b__(?:ballot|any|all|match_any|match_all)(?:_sync)?\s*\(|\b__activemask\s*\(|"
            r"\.(?:ballot|any|all|match_any|match_all)\s*\("
        ),
    ),
    (
        "tile",
        re.compile(r"\b(?:tiled_partition|thread_block_tile|coalesced_threads|coalesced_group)\b"),
    ),
    (
        "isa",
        re.compile(
            r"\b__builtin_amdgcn_\w+\s*\(|\b__hip_move_dpp\w*\s*\(|\b__hip_ds_swizzle\w*\s*\(|"
            r"\b(?:__asm__|asm)\s*(?:volatile\s*|__volatile__\s*)?\("
        ),
    ),
)
ADVICE = {
    "shuffle": "a reduction or scan across lanes has a block spelling (tl.reduce, tl.sum, "
    "tl.max, tl.cumsum, tl.associative_scan): check that the Triton kernel computes the same "
    "thing with one; any other shuffle pattern (a lane permutation, a broadcast within a warp) "
    "has none",
    "vote": "a lane vote has no block spelling (a ballot-driven compaction becomes a tl.cumsum "
    "over a mask)",
    "tile": "Triton has no sub-block thread groups: the program is the smallest unit it names",
    "isa": "ISA-level code has no Triton spelling",
}
MAX_SITES = 6  # quoted per change; the rest are counted


def _name(match: str) -> str:
    return re.sub(r"\s*\($", "", match.strip()) + ("()" if match.rstrip().endswith("(") else "")


Site = tuple[str, str, str, int]  # (family, primitive, path, line)


def lane_sites(sources: dict[str, str], kernels: list[tuple[str, str]]) -> list[Site]:
    """``(family, primitive, path, line)`` for each lane-level primitive in the bodies of
    ``kernels`` (``(path, name)``) and of the helpers they call; comments and strings skipped."""
    scans = {p: scan_source(p, t) for p, t in sources.items()}
    code = {p: mask(t)[1].split("\n") for p, t in sources.items()}
    spans, _, _, _ = kernel_spans(scans, code, kernels)
    found: list[Site] = []
    seen: set[tuple[str, int, str]] = set()
    for path, first, last in sorted(set(spans)):
        for number in range(first, min(last, len(code[path])) + 1):
            for family, pattern in FAMILIES:
                for m in pattern.finditer(code[path][number - 1]):
                    key = (path, number, _name(m.group(0)))
                    if key not in seen:
                        seen.add(key)
                        found.append((family, _name(m.group(0)), path, number))
    return found


def _old_refs(c: KernelChange) -> list[KernelRef]:
    refs = [r for r in [c.old, *c.old_variants] if r is not None]
    return [r for r in refs if r.language in ("cuda", "hip")]


def add_lane_primitives(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """Each rewrite of C++ kernels with a finding naming the lane primitives they used."""
    out = []
    for c in changes:
        refs = _old_refs(c) if c.kind == "rewrite" else []
        if not refs:
            out.append(c)
            continue
        paths = list(dict.fromkeys(r.path for r in refs))
        sources = sources_for(paths, ctx.texts_old, ctx.old_source)
        headers = [h for p in paths for h in local_headers(sources.get(p, ""), p)]
        sources.update(sources_for(list(dict.fromkeys(headers)), ctx.texts_old, ctx.old_source))
        sites = lane_sites(sources, [(r.path, r.name) for r in refs if r.path in sources])
        if not sites:
            out.append(c)
            continue
        out.append(c.model_copy(update={"findings": [*c.findings, _finding(c, refs, sites)]}))
    return out


def _finding(c: KernelChange, refs: list[KernelRef], sites: list[Site]) -> ChangeFinding:
    families = list(dict.fromkeys(f for f, _, _, _ in sites))
    by_name: dict[str, list[tuple[str, int]]] = {}
    for _, name, path, line in sites:
        by_name.setdefault(name, []).append((path, line))
    quoted = []
    for name, where in list(by_name.items())[:MAX_SITES]:
        more = f", +{len(where) - 1} more" if len(where) > 1 else ""
        quoted.append(f"{name} ({where[0][0]}:{where[0][1]}{more})")
    rest = len(by_name) - MAX_SITES
    names = list(dict.fromkeys(r.name for r in refs))
    kernels = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    _, _, path, line = sites[0]
    return ChangeFinding(
        kind="lane_primitives",
        path=path,
        line=line,
        message=(
            f"the replaced C++ ({kernels}) uses warp/wavefront primitives: {', '.join(quoted)}"
            f"{f' and {rest} more' if rest > 0 else ''}. The Triton kernel must express the "
            "same algorithm with block operations: "
            + "; ".join(ADVICE[f] for f in families)
            + ". If it cannot, keep the C++ kernel."
        ),
    )
