"""CUDA and HIP kernels in C++ source: ``__global__`` definitions, launches, host wrappers.

Comments are masked first (and, for brace matching, string contents too) without moving any
offset, so every position still maps to its line. A file is HIP when it is a ``.hip`` file,
includes a ``hip/`` header, or uses ``hipLaunchKernelGGL`` / ``HIP_DYNAMIC_SHARED``; otherwise its
kernels are CUDA. Launches: ``k<<<grid, block, shmem, stream>>>(args)``,
``hipLaunchKernelGGL(k, grid, block, shmem, stream, args...)``, ``cudaLaunchKernel(k, ...)``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from bot.analysis.model import MAX_PER_FILE, FileScan, KernelDef, Language, LaunchSite
from bot.analysis.scan.cpp_slice import launch_lines
from bot.analysis.scan.template_args import split_top, unread_argument_spans, unread_parameters
from bot.analysis.text import collapse, digest, is_tuning_line, is_tuning_name

_MASK = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_TEMPLATED = re.compile(r"([A-Za-z_][\w:]*)\s*<")
_HIP_MARK = re.compile(r"#\s*include\s*[<\"]hip/|\bhipLaunchKernelGGL\b|\bHIP_DYNAMIC_SHARED\b")
_TEMPLATE_BEFORE = re.compile(r"template\s*<[^;{}]*>\s*(?:(?:static|inline|extern\s+\"C\")\s+)*$")
_FUNC_HEADER_END = re.compile(
    r"\)\s*(?:(?:const|noexcept|override|final|mutable|__host__|__device__)\s*|->\s*[\w:<>,\s*&]+)*$"
)
# ``if constexpr (...) {`` heads a block, not a function named ``constexpr``
_NOT_FUNCS = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "defined", "constexpr"
}  # fmt: skip
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\S[^\n]*)$", re.M)
_CONST = re.compile(
    r"\b(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+)?[\w:]+\s+(\w+)\s*=\s*([^;{}]+);"
)
_VAR = re.compile(
    r"\b(?:int|unsigned|size_t|int64_t|int32_t|uint32_t|auto|dim3)\s+(\w+)\s*=\s*([^;{}]+);"
)
_DIM3 = re.compile(r"\bdim3\s+(\w+)\s*[({]([^;]*)[)}]\s*;")
# ``m.def("op", &fn)``, ``TORCH_FN(fn)``, ``torch::wrap_pybind_function(fn)``
_BINDING = re.compile(
    r"\.(?:def|impl)\(\s*\"(\w+)[^\"]*\"\s*,\s*"
    r"(?:(?:TORCH_FN|(?:torch::)?wrap_pybind_function)\(\s*)?&?\s*([\w:]+)"
)
_MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def binding_macros(text: str, uses: str | None = None) -> str:
    """The bindings a function-like macro of ``text`` writes, expanded at each of its uses in
    ``uses`` (default ``text``): ``#define DEF_OPS(_name, _dtype) m.def("qkv_gemm_" #_name,
    &ds_qkv_gemm<_dtype>)`` used as ``DEF_OPS(fp16, __half);`` gives ``m.def("qkv_gemm_fp16",
    &ds_qkv_gemm<__half>)``. Empty where no macro writes a ``.def(``."""
    if ".def(" not in text or "define" not in text:
        return ""
    out: list[str] = []
    for m in _MACRO_DEF.finditer(text):
        body = m.group(3).replace("\\\n", " ")
        if ".def(" not in body:
            continue
        params = [p.strip() for p in m.group(2).split(",")]
        for use in re.finditer(rf"\b{m.group(1)}\(([^()]*)\)", uses if uses is not None else text):
            args = [a.strip() for a in use.group(1).split(",")]
            if len(args) != len(params) or use.group(0) == f"{m.group(1)}({m.group(2)})":
                continue  # another arity, or the definition's own head
            expanded = body
            for param, arg in zip(params, args, strict=True):
                quoted, bare = f'{arg}"'.replace("\\", r"\\"), arg.replace("\\", r"\\")
                expanded = re.sub(rf'"\s*#\s*{re.escape(param)}\b', quoted, expanded)
                expanded = re.sub(rf"#\s*{re.escape(param)}\b", f'"{bare}"', expanded)
                expanded = re.sub(rf"\b{re.escape(param)}\b", bare, expanded)
            out.append(expanded)
    return "\n".join(out)


_LAUNCH_FUNCS = re.compile(
    r"\b(hipLaunchKernelGGL|cudaLaunchKernel(?:Ex)?|hipLaunchKernel|cudaLaunchCooperativeKernel)\s*\("
)
_TOP_LEVEL_SIGNATURE = re.compile(r"^[A-Za-z_][\w:<>,*& ]*\(")
_NOT_NEWLINE = re.compile(r"[^\n]")
_NEWLINE = re.compile("\n")
_BRACE = re.compile(r"[{}]")
_PARENS = re.compile(r"[()]")
_GLOBAL = re.compile(r"\b__global__\b")
_DEVICE = re.compile(r"\b__device__\b")
_TRIPLE = re.compile("<<<")
_OPEN_PAREN = re.compile(r"\s*\(")
_BODY_OPEN = re.compile(r"\s*(?:__launch_bounds__\s*\([^)]*\)\s*)?\{")
_PREPROCESSOR = re.compile(r"^[ \t]*#[^\n]*$", re.M)
_TRAILING_NAME = re.compile(r"([A-Za-z_~]\w*)\s*$")
_KERNEL_ARG_NOISE = re.compile(r"HIP_KERNEL_NAME|\(|\)|<.*>|\(void\s*\*\)|reinterpret_cast|&")


def mask(text: str) -> tuple[str, str]:
    """``(code, bare)``: comments blanked; and comments and string/char contents blanked."""
    code = []
    bare = []
    last = 0
    for m in _MASK.finditer(text):
        code.append(text[last : m.start()])
        bare.append(text[last : m.start()])
        token = m.group(0)
        blank = _NOT_NEWLINE.sub(" ", token)
        if token[0] in "\"'":
            code.append(token)
            bare.append(token[0] + blank[1:-1] + token[-1] if len(token) > 1 else blank)
        else:
            code.append(blank)
            bare.append(blank)
        last = m.end()
    code.append(text[last:])
    bare.append(text[last:])
    return "".join(code), "".join(bare)


def match_braces(bare: str, pattern: re.Pattern[str] | None = None) -> dict[int, int | None]:
    """Offsets of every ``{`` -> offset of its ``}`` (None when unclosed); with ``_PARENS``,
    the same for ``(`` and ``)``. One pass, so a file of unclosed brackets stays linear."""
    pairs: dict[int, int | None] = {}
    stack: list[int] = []
    for m in (pattern or _BRACE).finditer(bare):
        if m.group(0) in "{(":
            stack.append(m.start())
            pairs[m.start()] = None
        elif stack:
            pairs[stack.pop()] = m.start()
    return pairs


def _balanced(bare: str, open_at: int, pair: str = "()", limit: int = 2_000) -> int | None:
    """The offset closing the bracket at ``open_at``, looking at most ``limit`` characters on."""
    depth = 0
    for k in range(open_at, min(len(bare), open_at + limit)):
        ch = bare[k]
        if ch == pair[0]:
            depth += 1
        elif ch == pair[1]:
            depth -= 1
            if depth == 0:
                return k
        elif ch in ";{}" and pair == "<>":
            return None
    return None


def _split_args(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in split_top(text, 0)]


class _Text:
    def __init__(self, sparse: Sequence[str | None], line_at: Callable[[int], int] | None) -> None:
        self.at = line_at or (lambda n: n)
        self.known = [line is not None for line in sparse]
        self.text = "\n".join(line or "" for line in sparse)
        self.code, self.bare = mask(self.text)
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(self.text)]
        self.pairs = match_braces(self.bare)
        self.parens = match_braces(self.bare, _PARENS)
        self.opens = sorted(self.pairs)
        self.launch_at: list[int] = []  # where each ``<<<`` is, once the launches are read
        self._code_lines: list[str] | None = None

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def last_known(self, line: int) -> int:
        """The last line of the run of known lines that ``line`` is in."""
        while line < len(self.known) and self.known[line]:
            line += 1
        return line

    def code_lines(self, first: int, last: int) -> list[str]:
        if self._code_lines is None:
            self._code_lines = self.code.split("\n")
        return self._code_lines[first - 1 : last]


def scan_cpp(
    path: str,
    sparse: Sequence[str | None],
    *,
    complete: bool,
    line_at: Callable[[int], int] | None = None,
    sections: Sequence[tuple[int, str]] = (),
) -> FileScan:
    """Scan C++ lines (``None`` = unseen). ``line_at`` maps list positions to file lines;
    ``sections`` are ``(position, header)`` of hunks whose header names the enclosing function."""
    t = _Text(sparse, line_at)
    hip = path.lower().endswith(".hip") or bool(_HIP_MARK.search(t.code))
    language: Language = "hip" if hip else "cuda"
    kernels = _kernels(path, t, language, complete)
    kernels += _section_kernels(path, t, language, sections, kernels)
    helpers = _kernels(path, t, language, complete, _DEVICE) if "__device__" in t.bare else []
    # whether a kernel names a parameter is known only from its whole text
    launches = _launches(path, t, language, _unread_parameters(t, kernels) if complete else {})
    constants: dict[str, str] = {}
    seen: set[int] = set()
    counts: dict[str, int] = {}
    for regex in (_DEFINE, _CONST, _DIM3, _VAR):
        for m in regex.finditer(t.code):
            if len(constants) >= MAX_PER_FILE:
                break
            if is_tuning_name(m.group(1)) and m.start(1) not in seen:
                seen.add(m.start(1))
                # one inside a function is that function's (``blocks'launcher``): a function
                # added elsewhere in the file renumbers none of the others'
                scope = _enclosing_function(t, m.start(1))
                name = f"{m.group(1)}'{scope[0]}" if scope else m.group(1)
                counts[name] = counts.get(name, 0) + 1
                key = name if counts[name] == 1 else f"{name}'{counts[name]}"  # same name twice
                constants[key] = collapse(m.group(2))
    notes = tuple(
        f"{path}: only the first {MAX_PER_FILE} {what} were read"
        for what, found in (("kernels", kernels), ("launches", launches))
        if len(found) >= MAX_PER_FILE
    )
    bound = t.code + "\n" + binding_macros("\n".join(x for x in sparse if x is not None))
    bindings = tuple((m.group(1), m.group(2).split("::")[-1]) for m in _BINDING.finditer(bound))
    lower = path.lower()
    gpu_file = lower.endswith((".cu", ".cuh", ".hip"))
    return FileScan(
        path=path,
        kind="cpp",
        language=language if (kernels or launches or gpu_file or hip) else None,
        complete=complete,
        kernels=tuple(kernels),
        helpers=tuple(helpers),
        launches=tuple(launches),
        tuning_constants=constants,
        bindings=bindings,
        notes=notes,
    )


def _kernels(
    path: str, t: _Text, language: Language, complete: bool, marker: re.Pattern[str] = _GLOBAL
) -> list[KernelDef]:
    """Function definitions after ``__global__`` (kernels), or ``__device__`` (helpers)."""
    out: list[KernelDef] = []
    for m in marker.finditer(t.bare):
        if len(out) >= MAX_PER_FILE:
            break
        found = _kernel_name(t.bare, m.end())
        if found is None:
            continue
        name, params_open = found
        params_close = t.parens.get(params_open)
        if params_close is None:
            continue
        after = _BODY_OPEN.match(t.bare, params_close + 1)
        if after is None:
            continue  # a declaration, not a definition
        open_at = after.end() - 1
        close_at = t.pairs.get(open_at)
        start = m.start()
        tpl = _TEMPLATE_BEFORE.search(t.code, max(0, start - 400), start)
        if tpl:
            start = tpl.start()
        line_start = t.line(start)
        open_line = t.line(open_at)
        if close_at is None:
            if complete:
                continue
            line_end = t.last_known(open_line)
            body_end = line_end
        else:
            line_end = t.line(close_at)
            body_end = line_end - 1 if line_end > open_line else line_end
        body_start = open_line + 1 if line_end > open_line else open_line
        text = t.code[m.start() : (close_at + 1) if close_at is not None else len(t.code)]
        out.append(
            KernelDef(
                language=language,
                name=name,
                path=path,
                line_start=t.at(line_start),
                line_end=t.at(line_end),
                body_start=t.at(body_start),
                body_end=t.at(max(body_start, body_end)),
                digest=digest(text.split("\n")) if close_at is not None else None,
                from_context=not complete,
            )
        )
    return out


def _section_kernels(
    path: str,
    t: _Text,
    language: Language,
    sections: Sequence[tuple[int, str]],
    found: list[KernelDef],
) -> list[KernelDef]:
    """Kernels known only from a hunk header (``@@ ... @@ __global__ void k(``): the hunk sits
    in the kernel's body from its first line until the ``}`` that closes it at column 0."""
    out: list[KernelDef] = []
    lines = t.bare.split("\n")
    for first, header in sections:
        _, bare_header = mask(header)
        at = bare_header.find("__global__")
        got = _kernel_name(bare_header, at + len("__global__")) if at >= 0 else None
        if got is None or any(k.name == got[0] for k in found + out):
            continue
        # Formatted code closes a function at column 0; a signature at column 0 starts another.
        index, last = first - 1, None
        while 0 <= index < len(lines) and t.known[index]:
            if _TOP_LEVEL_SIGNATURE.match(lines[index]):
                break
            last = index
            if lines[index].startswith("}"):
                break
            index += 1
        if last is None:
            continue
        out.append(
            KernelDef(
                language=language,
                name=got[0],
                path=path,
                line_start=t.at(first),
                line_end=t.at(last + 1),
                body_start=t.at(first),
                body_end=t.at(last + 1),
                from_context=True,
            )
        )
    return out


def _kernel_name(bare: str, k: int) -> tuple[str, int] | None:
    """After ``__global__``: the kernel's name and the offset of its parameter list's ``(``."""
    end = min(len(bare), k + 2000)
    while k < end:
        while k < end and bare[k].isspace():
            k += 1
        if k >= end or bare[k] in ";{}":
            return None
        ident = _IDENT.match(bare, k)
        if ident:
            word = ident.group(0)
            j = ident.end()
            while j < end and bare[j].isspace():
                j += 1
            if word in ("__launch_bounds__", "__attribute__", "alignas", "__declspec"):
                close = _balanced(bare, j) if j < end and bare[j] == "(" else None
                k = (close + 1) if close is not None else j
                continue
            if j < end and bare[j] == "(":
                return word, j
            k = ident.end()
            continue
        if bare[k] == "<":
            close = _balanced(bare, k, "<>")
            k = (close + 1) if close is not None else k + 1
            continue
        k += 1
    return None


def _unread_parameters(t: _Text, kernels: list[KernelDef]) -> dict[str, list[bool]]:
    """Per template kernel of the file (read whole, so lines are positions), which of its
    template parameters it never names."""
    out = {}
    for k in kernels:
        if k.line_start > len(t.starts):
            continue
        start = t.starts[k.line_start - 1]
        named = re.compile(rf"\b{re.escape(k.name)}\s*\(").search(t.bare, start)
        end = t.starts[k.line_end] if k.line_end < len(t.starts) else len(t.bare)
        unread = unread_parameters(t.bare, named.start(), end) if named else None
        if unread is not None and any(unread):
            out[k.name] = unread
    return out


def _launches(
    path: str, t: _Text, language: Language, unread: dict[str, list[bool]]
) -> list[LaunchSite]:
    out: list[LaunchSite] = []
    t.launch_at = [m.start() for m in _TRIPLE.finditer(t.bare)]
    for m in _TRIPLE.finditer(t.bare):
        if len(out) >= MAX_PER_FILE:
            return out
        close = t.bare.find(">>>", m.end(), m.end() + 2_000)
        if close == -1:
            continue
        name = _name_before(t.bare, m.start())
        if name is None:
            continue
        name = _pointed_kernel(t.bare, m.start(), name)
        paren = _OPEN_PAREN.match(t.bare, close + 3)
        args = ""
        if paren:
            end = t.parens.get(paren.end() - 1)
            args = t.code[paren.end() : end if end is not None else paren.end() + 2_000]
        grid = t.code[m.end() : close]
        blank = unread_argument_spans(t.bare, m.start(), unread[name]) if name in unread else []
        out.append(_site(path, t, language, name, m.start(), grid, _split_args(args), blank))
    for m in _LAUNCH_FUNCS.finditer(t.bare):
        if len(out) >= MAX_PER_FILE:
            return out
        end = t.parens.get(m.end() - 1)
        inner = t.code[m.end() : end if end is not None else m.end() + 2_000]
        parts = _split_args(inner)
        if not parts:
            continue
        # ``cudaLaunchKernelEx(&config, kernel, args...)``: the launch configuration first
        ex = m.group(1) == "cudaLaunchKernelEx" and len(parts) > 1
        first = _KERNEL_ARG_NOISE.sub(" ", parts[1] if ex else parts[0])
        idents = _IDENT.findall(first)
        if not idents:
            continue
        n_cfg = 4 if m.group(1) == "hipLaunchKernelGGL" else 2
        kernel_lang: Language = "hip" if m.group(1).startswith("hip") else language
        grid = parts[0] if ex else ", ".join(parts[1 : 1 + n_cfg])
        passed = parts[2:] if ex else parts[1 + n_cfg :]
        name = _pointed_kernel(t.bare, m.start(), idents[-1])  # ``auto k = &kernel<...>``
        out.append(_site(path, t, kernel_lang, name, m.start(), grid, passed))
    return out


def _pointed_kernel(bare: str, pos: int, name: str) -> str:
    """``auto kernel = &selective_scan_fwd_kernel<...>; kernel<<<...>>>``: the kernel a local
    function pointer launched at ``pos`` points to (the last assignment within 3,000 characters)."""
    found = None
    at = bare.find(name, max(0, pos - 3_000), pos)
    while at != -1:
        end = at + len(name)
        rest = bare[end : end + 400].lstrip()
        whole = (at == 0 or not (bare[at - 1].isalnum() or bare[at - 1] == "_")) and (
            end < len(bare) and not (bare[end].isalnum() or bare[end] == "_")
        )
        if whole and rest.startswith("=") and not rest.startswith("=="):
            value = rest[1:].split(";", 1)[0]  # ``&k<T>``, ``c ? k<T, true> : k<T, false>``
            value = value.split("?", 1)[-1]
            target = _TEMPLATED.search(value) or _IDENT.search(value.replace("&", " "))
            if target is not None:
                found = target.group(1 if target.re is _TEMPLATED else 0).split("::")[-1]
        at = bare.find(name, end, pos)
    return found or name


def _name_before(bare: str, pos: int) -> str | None:
    """The kernel name before ``<<<`` (template arguments skipped), within 2,000 characters."""
    floor = max(0, pos - 2_000)
    k = pos - 1
    while k >= floor and bare[k].isspace():
        k -= 1
    if k >= floor and bare[k] == ">":  # template arguments: kernel<float, 128><<<...>>>
        depth = 0
        while k >= floor:
            if bare[k] == ">":
                depth += 1
            elif bare[k] == "<":
                depth -= 1
                if depth == 0:
                    break
            elif bare[k] in ";{}":
                return None
            k -= 1
        k -= 1
        while k >= floor and bare[k].isspace():
            k -= 1
    end = k + 1
    while k >= floor and (bare[k].isalnum() or bare[k] == "_"):
        k -= 1
    name = bare[k + 1 : end]
    return name if name and not name[0].isdigit() else None


_ELSE = re.compile(r"\s*else\b")
_BRANCH_BEFORE = re.compile(r"\}\s*else\s*(?:if\s*\([^{};]*\))?\s*$")


def _other_branches(t: _Text, pos: int) -> list[tuple[int, int]]:
    """The brace blocks of the ``if`` / ``else`` chains around ``pos`` that are not the branch
    holding it: code the path to the launch at ``pos`` does not run (one launch of a host
    function changes with its own branch, not with another launch's)."""
    closes = {c: o for o, c in t.pairs.items() if c is not None}
    out: list[tuple[int, int]] = []
    for open_at, close_at in t.pairs.items():
        if close_at is None or not open_at < pos < close_at:
            continue
        at = close_at  # later branches: ``} else {``, ``} else if (...) {``
        while (m := _ELSE.match(t.bare, at + 1)) is not None:
            nxt = t.bare.find("{", m.end())
            if nxt < 0 or t.pairs.get(nxt) is None or ";" in t.bare[m.end() : nxt]:
                break
            out.append((nxt, t.pairs[nxt] or nxt))
            at = t.pairs[nxt] or nxt
        at = open_at  # earlier branches
        while (m := _BRANCH_BEFORE.search(t.bare, max(0, at - 2_000), at)) is not None:
            prev = closes.get(m.start())
            if prev is None:
                break
            out.append((prev, m.start()))
            at = prev
    return out


def _other_launches(t: _Text, pos: int) -> list[tuple[int, int]]:
    """The brace blocks (a lambda's body, an ``if``'s) that hold another launch and not the one
    at ``pos``: that launch's own code, which this one does not run through (gsplat's
    ``launch_batch_scan`` lambda beside the partials and batch-replay launches)."""
    wrapper = _enclosing_function(t, pos)
    if wrapper is None:
        return []
    first, last = t.starts[wrapper[1] - 1], t.starts[min(wrapper[2], len(t.starts) - 1)]
    others = [at for at in t.launch_at if first <= at <= last and at != pos]
    if not others:
        return []
    out = []
    for o in t.opens[bisect.bisect_left(t.opens, first) : bisect.bisect_right(t.opens, last)]:
        c = t.pairs[o]
        if c is not None and not o < pos < c and any(o < at < c for at in others):
            out.append((o, c))
    return out


def _site(
    path: str,
    t: _Text,
    language: Language,
    kernel: str,
    pos: int,
    grid: str,
    args: list[str],
    blank: Sequence[tuple[int, int]] = (),
) -> LaunchSite:
    """``blank``: spans of the launch's text its launcher's fingerprint leaves out (template
    arguments the kernel never reads)."""
    wrapper = _enclosing_function(t, pos)
    w_name = w_start = w_end = w_digest = None
    if wrapper is not None:
        w_name, w_start, w_end = wrapper
        skipped = [
            (t.line(o), t.line(c)) for o, c in _other_branches(t, pos) + _other_launches(t, pos)
        ]
        lines = t.code_lines(w_start, w_end)
        end = t.starts[w_end] - 1 if w_end < len(t.starts) else len(t.bare)
        sliced = launch_lines(t.bare, (t.starts[w_start - 1], end), pos, t.line)
        if sliced is not None:
            skipped += [(n, n) for n in range(w_start, w_end + 1) if n not in sliced]
        if blank:
            code = t.code
            for a, b in sorted(blank, reverse=True):
                code = code[:a] + re.sub(r"[^\n]", " ", code[a:b]) + code[b:]
            lines = code.split("\n")[w_start - 1 : w_end]
        w_digest = digest(
            [
                ln
                for n, ln in enumerate(lines, w_start)
                if not is_tuning_line(ln) and not any(a <= n <= b for a, b in skipped)
            ]
        )
    return LaunchSite(
        kernel=kernel,
        language=language,
        path=path,
        line=t.at(t.line(pos)),
        grid=collapse(grid),
        args=collapse(", ".join(args)),
        wrapper=w_name,
        wrapper_start=t.at(w_start) if w_start is not None else None,
        wrapper_end=t.at(w_end) if w_end is not None else None,
        wrapper_digest=w_digest,
    )


def _enclosing_function(t: _Text, pos: int) -> tuple[str, int, int] | None:
    """The innermost function definition around ``pos``: ``(name, first_line, last_line)``."""
    index = bisect.bisect_left(t.opens, pos)
    for open_at in reversed(t.opens[:index]):
        close_at = t.pairs[open_at]
        if close_at is not None and close_at < pos:
            continue
        found = _function_header(t, open_at)
        if found is not None:
            name, header_at = found
            last = t.line(close_at) if close_at is not None else t.last_known(t.line(open_at))
            return name, t.line(header_at), last
    return None


def _function_header(t: _Text, open_at: int) -> tuple[str, int] | None:
    begin = max(
        t.bare.rfind(";", 0, open_at), t.bare.rfind("{", 0, open_at), t.bare.rfind("}", 0, open_at)
    )
    header = t.bare[begin + 1 : open_at]
    # blanked, not removed: the name's offset must stay its offset in the file
    header = _PREPROCESSOR.sub(lambda m: " " * len(m.group(0)), header)
    stripped = header.rstrip()
    if not _FUNC_HEADER_END.search(stripped):
        return None
    close = stripped.rfind(")")
    depth = 0
    k = close
    while k >= 0:
        if stripped[k] == ")":
            depth += 1
        elif stripped[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if k < 0:
        return None
    m = _TRAILING_NAME.search(stripped[:k])
    if m is None or m.group(1) in _NOT_FUNCS:
        return None
    before = stripped[: m.start()]
    if before.rstrip().endswith(("=", ",", "(", "return", ".", "->")):
        return None
    return m.group(1), begin + 1 + m.start()
