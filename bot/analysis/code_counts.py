"""Part A of the review: count the code of the old C++ kernel against the new Triton one.

A pure function from source texts to a table. For each side it counts, over the kernels and the
host wrappers that launch them (blank and comment-only lines, and docstrings, never count):

- ``kernel_body_lines``: lines inside the kernel function, signature excluded, and inside the
  helpers it calls (``__device__`` functions of its file and of the local headers it includes,
  other ``@triton.jit`` ones);
- ``host_wrapper_lines``: lines of the function(s) that launch it (C++: the function holding the
  ``<<<>>>`` / ``hipLaunchKernelGGL``; Python: the function computing the grid and launching);
- ``memory_lines``: lines that allocate, copy or free (``cudaMalloc/Free/Memcpy/Memset``, their
  ``hip*`` twins, ``torch::empty*``, ``at::empty*``, and on the Python side ``torch.empty*``,
  because an allocation is an allocation whichever language spells it);
- ``error_check_lines``: lines that exist only to check (``TORCH_CHECK``, ``cudaGetLastError``,
  ``C10_CUDA_KERNEL_LAUNCH_CHECK``, ``C10_CUDA_CHECK``, ``AT_ASSERT``, ``if (err != cudaSuccess)``,
  ``assert``);
  ``error_checked_calls``: calls wrapped in a ``*_CHECK(...)`` macro; ``error_check_helper_lines``:
  the lines defining such macros in the same files;
- ``barriers``: ``__syncthreads``, ``__syncwarp``, ``__threadfence*``, and in Python each
  language's own (``tl.debug_barrier``, Gluon's ``mbarrier.wait``, CuTe's
  ``cute.arch.barrier``, TileLang's ``T.sync_threads``: ``bot.analysis.languages``);
- ``shared_memory_declarations``: ``__shared__`` (``extern __shared__`` too),
  ``HIP_DYNAMIC_SHARED``, Gluon's ``allocate_shared_memory``, CuTe's ``SmemAllocator``,
  TileLang's ``T.alloc_shared``;
- ``source_files``: the files holding the kernels and wrappers, with the vendors they cover.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping, Sequence

from bot.analysis.languages import language_named
from bot.analysis.languages.base import MEMORY_PY, NEVER
from bot.analysis.model import FileScan, KernelDef, PartA, PartASide
from bot.analysis.scan import scan_source
from bot.analysis.scan.cpp import mask
from bot.analysis.text import CALLED, called_helpers, source_kind

_CPP_VENDORS = {"cuda": ("nvidia",), "hip": ("amd",)}


def _vendors(language: str) -> tuple[str, ...]:
    found = language_named(language)
    return found.vendors if found is not None else _CPP_VENDORS.get(language, ())


def _python_rules(languages: list[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Barriers and shared-memory declarations in the Python languages of one side."""
    found = [lang for lang in map(language_named, languages) if lang is not None]
    barriers = "|".join(f"(?:{lang.barriers.pattern})" for lang in found) or NEVER.pattern
    shared = "|".join(f"(?:{lang.shared.pattern})" for lang in found) or NEVER.pattern
    return re.compile(barriers), re.compile(shared)


_MEMORY_CPP = re.compile(
    r"\b(?:cuda|hip)(?:Malloc\w*|Free\w*|Memcpy\w*|Memset\w*|HostAlloc|HostMalloc|"
    r"HostRegister|MemPrefetch\w*)\s*\(|\b(?:torch|at)::(?:empty\w*|zeros\w*|ones\w*)\s*\(|"
    r"\.new_(?:empty|zeros)\s*\(|\bnew\s+[\w:]+\s*\[|\bdelete\s*\[\s*\]|\b(?:malloc|calloc|free)\s*\("
)
_CHECK_CPP = re.compile(
    r"^\s*(?:TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AT_ASSERT\w*|C10_(?:CUDA|HIP)_KERNEL_LAUNCH_CHECK|"
    r"C10_(?:CUDA|HIP)_CHECK\w*|"
    r"assert|static_assert)\b|\b(?:cuda|hip)(?:GetLastError|PeekAtLastError)\s*\(|"
    r"[!=]=\s*(?:cuda|hip)Success\b|\b(?:cuda|hip)Success\s*[!=]="
)
_CHECK_WRAPPED = re.compile(r"\b\w*(?:CUDA|HIP|C10_CUDA|C10_HIP)_CHECK\w*\s*\(\s*[\w:]+\s*\(")
_CHECK_PY = re.compile(r"^\s*(?:assert\b|torch\._assert\s*\()")
_CHECK_MACRO = re.compile(r"^\s*#\s*define\s+\w*CHECK\w*\b")
_BARRIER = re.compile(
    r"\b(?:__syncthreads(?:_count|_and|_or)?|__syncwarp|__threadfence(?:_block|_system)?|"
    r"__builtin_amdgcn_s_barrier)\s*\("
)
_SHARED = re.compile(r"\b__shared__\b|\bHIP_DYNAMIC_SHARED\s*\(")


def code_lines(text: str, kind: str) -> list[bool]:
    """Per line (index 0 = line 1): whether it holds code, not blank/comment/docstring."""
    lines = text.split("\n")
    if kind == "cpp":
        code, _ = mask(text)
        return [bool(line.strip()) for line in code.split("\n")]
    flags = [bool(line.strip()) and not line.lstrip().startswith("#") for line in lines]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return flags
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}
    first_of_line = True
    for index, tok in enumerate(tokens):
        if tok.type in skip:
            first_of_line = first_of_line or tok.type in (tokenize.NEWLINE, tokenize.NL)
            continue
        if tok.type == tokenize.STRING and first_of_line:
            nxt = next((t for t in tokens[index + 1 :] if t.type != tokenize.COMMENT), None)
            if nxt is None or nxt.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                for number in range(tok.start[0], tok.end[0] + 1):
                    flags[number - 1] = False  # a docstring or bare string statement
        first_of_line = False
    return flags


Span = tuple[str, int, int]  # (path, first line, last line) of a body


def kernel_spans(
    scans: Mapping[str, FileScan],
    text_lines: Mapping[str, list[str]],
    kernels: Sequence[tuple[str, str]],
) -> tuple[list[Span], list[str], list[str], list[Span]]:
    """The bodies one side is made of: its kernels' and those of the ``__device__`` / jit
    helpers they call (in their own file or a local header). Returns the spans, the kernels'
    languages, the helpers' names and the host code inside kernel functions (Helion)."""
    names = {name for _, name in kernels}
    kernel_ranges: list[Span] = []
    own_host: list[Span] = []  # host code inside the kernel function (Helion)
    languages: list[str] = []
    helpers: list[str] = []
    for path, name in kernels:
        k = scans[path].kernel(name) if path in scans else None
        if k is None:
            continue
        lang = language_named(k.language)
        if lang is not None and lang.device_loop is not None:
            device, host_spans = _device_loops(text_lines[path], k, lang.device_loop)
            kernel_ranges += device
            own_host += host_spans
        else:
            kernel_ranges.append((path, k.body_start, k.body_end))
        if k.language not in languages:
            languages.append(k.language)
        for h_path, h in [
            *((path, h) for h in called_helpers(scans[path], k, text_lines[path])),
            *_header_helpers(scans, text_lines, path, k),
        ]:
            span = (h_path, h.body_start, h.body_end)
            if span not in kernel_ranges and h.name not in names:
                kernel_ranges.append(span)
                helpers.append(h.name)
    return kernel_ranges, languages, helpers, own_host


def part_a_side(sources: Mapping[str, str], kernels: Sequence[tuple[str, str]]) -> PartASide:
    """Count one side. ``sources``: path -> text of every file involved (kernels and wrappers);
    ``kernels``: ``(path, kernel_name)`` of the kernels this side is made of."""
    scans: dict[str, FileScan] = {p: scan_source(p, t) for p, t in sources.items()}
    is_code = {p: code_lines(t, source_kind(p) or "python") for p, t in sources.items()}
    text_lines = {p: t.split("\n") for p, t in sources.items()}
    names = {name for _, name in kernels}
    kernel_ranges, languages, helpers, own_host = kernel_spans(scans, text_lines, kernels)
    wrapper_ranges: list[tuple[str, int, int]] = []
    wrappers: list[str] = []
    for path, scan in scans.items():
        for launch in scan.launches:
            if launch.kernel in names and launch.wrapper and launch.wrapper_start:
                first = _after_signature(text_lines[path], launch.wrapper_start)
                span = (path, first, launch.wrapper_end or launch.wrapper_start)
                if span not in wrapper_ranges:
                    wrapper_ranges.append(span)
                    wrappers.append(launch.wrapper)

    def lines_in(spans: list[tuple[str, int, int]]) -> list[tuple[str, str]]:
        out = []
        for path, first, last in spans:
            flags, texts = is_code[path], text_lines[path]
            for number in range(first, min(last, len(texts)) + 1):
                if flags[number - 1] and texts[number - 1].strip() not in ("{", "}", "};"):
                    out.append((path, texts[number - 1]))
        return out

    body = lines_in(kernel_ranges)
    host = lines_in(wrapper_ranges + own_host)
    if own_host:
        wrappers += [name for _, name in kernels if name not in wrappers]
    counted = body + host
    memory = sum(1 for p, t in counted if _memory(p).search(_code(p, t)))
    checks = sum(
        1
        for p, t in counted
        if _check(p).search(_code(p, t)) and not _memory(p).search(_code(p, t))
    )
    wrapped = sum(len(_CHECK_WRAPPED.findall(_code(p, t))) for p, t in counted)
    helper = 0
    for path, text in sources.items():
        if source_kind(path) == "cpp":
            helper += _macro_lines(mask(text)[0].split("\n"))
    files = sorted({p for p, _, _ in kernel_ranges} | {p for p, _, _ in wrapper_ranges})
    vendors = sorted({v for lang in languages for v in _vendors(lang)}, reverse=True)
    py_barriers, py_shared = _python_rules(languages)

    def barriers(p: str) -> re.Pattern[str]:
        return _BARRIER if source_kind(p) == "cpp" else py_barriers

    def shared(p: str) -> re.Pattern[str]:
        return _SHARED if source_kind(p) == "cpp" else py_shared

    return PartASide(
        language="+".join(languages) or "unknown",
        kernels=sorted(names),
        helpers=list(dict.fromkeys(helpers)),
        wrappers=wrappers,
        files=files,
        kernel_body_lines=len(body),
        host_wrapper_lines=len(host),
        memory_lines=memory,
        error_check_lines=checks,
        error_checked_calls=wrapped,
        error_check_helper_lines=helper,
        barriers=sum(len(barriers(p).findall(_code(p, t))) for p, t in body),
        shared_memory_declarations=sum(len(shared(p).findall(_code(p, t))) for p, t in body),
        source_files=len(files),
        vendors_covered=vendors,
    )


_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\b")


def _after_signature(lines: list[str], start: int) -> int:
    """The first line after a Python function's decorators and signature (``start``: its first
    line); C++ and undecorated one-line signatures: the line after ``start``."""
    n = start
    while n <= len(lines) and n < start + 40 and lines[n - 1].lstrip().startswith("@"):
        n += 1
    if n > len(lines) or not _DEF_LINE.match(lines[n - 1]):
        return start + 1
    while n <= len(lines) and not lines[n - 1].split("#", 1)[0].rstrip().endswith(":"):
        n += 1
    return n + 1


def _device_loops(
    lines: list[str], k: KernelDef, loop: re.Pattern[str]
) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    """A kernel that is its own host function: ``(device spans, host spans)`` of its body, the
    device spans being the ``loop`` blocks (``for tile in hl.tile(...)``) at their outermost."""
    device: list[tuple[str, int, int]] = []
    host: list[tuple[str, int, int]] = []
    n = k.body_start
    host_from = n
    while n <= min(k.body_end, len(lines)):
        line = lines[n - 1]
        if loop.match(line):
            indent = len(line) - len(line.lstrip())
            end = n
            for m in range(n + 1, min(k.body_end, len(lines)) + 1):
                text = lines[m - 1]
                if text.strip() and len(text) - len(text.lstrip()) <= indent:
                    break
                end = m
            if host_from < n:
                host.append((k.path, host_from, n - 1))
            device.append((k.path, n, end))
            n = host_from = end + 1
            continue
        n += 1
    if host_from <= k.body_end:
        host.append((k.path, host_from, k.body_end))
    return device, host


def _header_helpers(
    scans: Mapping[str, FileScan], text_lines: Mapping[str, list[str]], path: str, k: KernelDef
) -> list[tuple[str, KernelDef]]:
    """``__device__`` helpers of the other C++ sources (the local headers the kernel's file
    includes) that the kernel calls, directly or through each other."""
    pool = [(p, h) for p, scan in scans.items() if p != path for h in scan.helpers]
    if not pool:
        return []
    lines = text_lines[path]
    called = set(CALLED.findall("\n".join(lines[k.body_start - 1 : k.body_end])))
    out: list[tuple[str, KernelDef]] = []
    grew = True
    while grew:
        grew = False
        for p, h in pool:
            if h.name in called and (p, h) not in out:
                out.append((p, h))
                body = "\n".join(text_lines[p][h.body_start - 1 : h.body_end])
                called |= set(CALLED.findall(body))
                grew = True
    return out


def part_a(
    old_sources: Mapping[str, str],
    old_kernels: Sequence[tuple[str, str]],
    new_sources: Mapping[str, str],
    new_kernels: Sequence[tuple[str, str]],
    old_twins: Sequence[tuple[str, str]] = (),
) -> PartA:
    """The Part A table, old (C++) against new (Triton). ``old_twins``: ``(path, language)`` of
    more old sources of the same kernel (a HIP twin of a CUDA kernel): they count as source
    files and vendors covered, not as lines (the seed counts one pair)."""
    old = part_a_side(old_sources, old_kernels)
    new = part_a_side(new_sources, new_kernels)
    notes = []
    if old_twins:
        languages = old.language.split("+") + [lang for _, lang in old_twins]
        files = sorted(set(old.files) | {p for p, _ in old_twins})
        vendors = {v for lang in languages for v in _vendors(lang)}
        old = old.model_copy(
            update={
                "language": "+".join(dict.fromkeys(languages)),
                "files": files,
                "source_files": len(files),
                "vendors_covered": sorted(vendors, reverse=True),
            }
        )
        counted = ", ".join(dict.fromkeys(p for p, _ in old_kernels))
        twins = ", ".join(dict.fromkeys(p for p, _ in old_twins))
        notes.append(f"lines counted on {counted}; {twins}: the same kernel for another vendor")
    if not old.wrappers:
        notes.append("no launch of the old kernel was found in the files read: wrapper lines are 0")
    if not new.wrappers:
        notes.append("no launch of the new kernel was found in the files read: wrapper lines are 0")
    twin_files = list(dict.fromkeys(path for path, _ in old_twins))
    return PartA(old=old, new=new, notes=notes, old_twins=twin_files)


def _code(path: str, line: str) -> str:
    if source_kind(path) == "cpp":
        return mask(line)[0]
    return line.split("#", 1)[0] if "#" in line and "'" not in line and '"' not in line else line


def _memory(path: str) -> re.Pattern[str]:
    return _MEMORY_CPP if source_kind(path) == "cpp" else MEMORY_PY


def _check(path: str) -> re.Pattern[str]:
    return _CHECK_CPP if source_kind(path) == "cpp" else _CHECK_PY


def _macro_lines(lines: list[str]) -> int:
    count = 0
    inside = False
    for line in lines:
        if inside or _CHECK_MACRO.match(line):
            if line.strip():
                count += 1
            inside = line.rstrip().endswith("\\")
    return count
