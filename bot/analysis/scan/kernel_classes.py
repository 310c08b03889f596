"""Kernels written as C++ classes: a class whose ``operator()`` is the device code, launched
through a generic kernel template that takes the class as its argument.

CUTLASS 3 and the code built on it write a kernel as a class (``Params``, ``SharedStorageSize``,
``get_grid_shape``, a ``CUTLASS_DEVICE void operator()(Params const&, char*)``) and launch it
through CUTLASS's own ``__global__`` template, which runs ``Operator{}(params, smem)``:
``cutlass::device_kernel<AttnKernel><<<...>>>``, ``cutlass::kernel_launch<AttnKernel>(...)``,
``cudaFuncSetAttribute(cutlass::device_kernel<Kernel>, ...)``; CUTLASS 2 the same through
``cutlass::Kernel<GemmKernel>`` / ``cutlass::Kernel2<...>``. The ``__global__`` is not in the
repository; the class is, and it is the kernel.

A class is a kernel only where the program's structure says it is launched: it is named as
that template's argument (directly, or through the ``using AttnKernel = ...;`` aliases of the
launching file), as the argument's own template (``FlashAttnFwdSm90<Mainloop, ...>``) or the
first argument of a wrapper (``enable_sm90_or_later<FlashAttnFwdSm90<...>>``), and it defines a
device ``operator()``. A class that only derives from its own template parameter is a wrapper
(an architecture guard), not the kernel. A functor with an ``operator()`` that no such launch
names (an epilogue's ``LinearCombination``, a reduction op) is not a kernel.

Pure: text in, names or ``KernelDef`` records out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

from bot.analysis.model import FileScan, FileSides, KernelDef, Language
from bot.analysis.scan.cpp import _TEMPLATE_BEFORE, _balanced, _enclosing_function, _Text
from bot.analysis.scan.template_args import split_top
from bot.analysis.text import digest

# CUTLASS's generic kernel entries, each taking the kernel class as its template argument.
_ENTRY = re.compile(
    r"\b(?:(?:cutlass\s*::\s*)?(?:device_kernel|kernel_launch)|cutlass\s*::\s*Kernel2?)\s*<"
)
_ALIAS = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*(?:typename\s+)?([^;]{1,600});")
_HEAD = re.compile(r"\s*(?:typename\s+)?(?:::)?((?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*)\s*(<)?")
_DEVICE_CALL = re.compile(
    r"\b(?:__device__|CUTLASS_DEVICE|CUTE_DEVICE)\b[^;{}]*?\boperator\s*\(\s*\)\s*\("
)
_PARAM = re.compile(r"\b(?:class|typename)\s*(?:\.\.\.\s*)?([A-Za-z_]\w*)")
_MAX_DEPTH = 4


def may_hold(text: str) -> bool:
    """Whether ``text`` can name a class kernel's launch or define one (a cheap test first)."""
    return (
        "operator" in text
        or "device_kernel" in text
        or "kernel_launch" in text
        or ("Kernel" in text and "cutlass" in text)
    )


def launched_classes(text: str) -> set[str]:
    """The names a launch of CUTLASS's kernel entry in ``text`` may stand for: its template
    argument's head, through the file's type aliases, and the heads of each first argument
    below it (a wrapper's kernel). Where the argument is a template parameter of the function
    around the launch (``template <typename Kernel> void launch_kernel(...)``), the arguments
    the file's calls of that function give it."""
    if not _ENTRY.search(text):
        return set()
    t = _Text([line.rstrip("\r") for line in text.split("\n")], None)
    bare = t.bare
    aliases: dict[str, list[tuple[int, str]]] = {}
    for m in _ALIAS.finditer(bare):
        aliases.setdefault(m.group(1), []).append((m.start(), m.group(2)))
    out: set[str] = set()
    for m in _ENTRY.finditer(bare):
        close = _balanced(bare, m.end() - 1, "<>")
        if close is None:
            continue
        arg = bare[m.end() : close].strip()
        for call_at, given in _given(t, m.start(), arg):
            _heads(given, call_at, aliases, out, _MAX_DEPTH)
    return out


def _given(t: _Text, at: int, arg: str) -> list[tuple[int, str]]:
    """``[(at, arg)]``, or, where ``arg`` is a template parameter of the function around
    ``at``, the argument each call of that function in the file passes for it."""
    fn = _enclosing_function(t, at)
    if fn is None or not re.fullmatch(r"[A-Za-z_]\w*", arg):
        return [(at, arg)]
    name, first, _ = fn
    header_at = t.starts[first - 1]
    tpl = _TEMPLATE_BEFORE.search(t.code, max(0, header_at - 600), header_at + 1)
    params = _PARAM.findall(tpl.group(0)) if tpl else []
    if arg not in params:
        return [(at, arg)]
    index = params.index(arg)
    out = []
    for call in re.finditer(rf"\b{re.escape(name)}\s*<", t.bare):
        close = _balanced(t.bare, call.end() - 1, "<>")
        if close is None or t.bare[close + 1 : close + 40].lstrip()[:1] != "(":
            continue
        inner = t.bare[call.end() : close]
        parts = split_top(inner, 0)
        if index < len(parts):
            a, b = parts[index]
            out.append((call.start(), inner[a:b]))
    return out


# ``std::conditional_t<test, A, B>``: either type may be the one launched
_CHOICES = {"conditional_t": (1, 2), "conditional": (1, 2)}


def _heads(
    arg: str, at: int, aliases: dict[str, list[tuple[int, str]]], out: set[str], depth: int
) -> None:
    """Add the head of the type ``arg`` (written at offset ``at``) and of its first argument,
    each alias followed to the last definition before ``at`` (else the first one)."""
    if depth <= 0:
        return
    m = _HEAD.match(arg)
    if m is None:
        return
    name = m.group(2)
    if m.group(3) is None:
        defined = aliases.get(name) if not m.group(1) else None
        if defined:
            before = [text for pos, text in defined if pos < at]
            _heads(before[-1] if before else defined[0][1], at, aliases, out, depth - 1)
            return
        out.add(name)
        return
    inner = arg[m.end() :]
    parts = split_top(inner, 0)
    if name not in _CHOICES:
        out.add(name)
    for index in _CHOICES.get(name, (0,)):
        if index < len(parts):
            a, b = parts[index]
            _heads(inner[a:b], at, aliases, out, depth - 1)


_CLASS = re.compile(r"\b(?:class|struct)\s+(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\b")


def class_kernels(
    path: str, text: str, names: Iterable[str], language: Language = "cuda"
) -> list[KernelDef]:
    """The classes of ``text`` named in ``names`` that define a device ``operator()`` of their
    own and are no wrapper of their template parameter, as kernels."""
    wanted = {n for n in names if n in text}
    if not wanted or "operator" not in text:
        return []
    t = _Text([line.rstrip("\r") for line in text.split("\n")], None)
    out: list[KernelDef] = []
    seen: set[str] = set()
    for m in _CLASS.finditer(t.bare):
        name = m.group(1)
        if name not in wanted or name in seen:
            continue
        open_at = _body_open(t.bare, m.end())
        close_at = t.pairs.get(open_at) if open_at is not None else None
        if open_at is None or close_at is None:
            continue  # a declaration, or unclosed
        start = m.start()
        tpl = _TEMPLATE_BEFORE.search(t.code, max(0, start - 600), start)
        params = set(_PARAM.findall(tpl.group(0))) if tpl else set()
        if params & _base_heads(t.bare[m.end() : open_at]):
            continue  # ``struct enable_sm90_or_later : Kernel``: a guard around the kernel
        if not _own_device_call(t, open_at, close_at):
            continue
        seen.add(name)
        first = t.line(tpl.start() if tpl else start)
        open_line, last = t.line(open_at), t.line(close_at)
        out.append(
            KernelDef(
                language=language,
                name=name,
                path=path,
                line_start=first,
                line_end=last,
                body_start=min(open_line + 1, last),
                body_end=max(open_line + 1, last - 1),
                digest=digest(t.code[start : close_at + 1].split("\n")),
            )
        )
    return out


_ACCESS = re.compile(r"\b(?:public|protected|private|virtual)\b")
_BASE_LIST = re.compile(r"(?<!:):(?!:)")


def _base_heads(between: str) -> set[str]:
    """The names of the bases a class derives from (``: public Base<T>, T`` gives Base, T)."""
    colon = _BASE_LIST.search(between)
    if colon is None:
        return set()
    bases = _ACCESS.sub(" ", between[colon.end() :])
    heads = set()
    for a, b in split_top(bases, 0):
        m = _HEAD.match(bases[a:b])
        if m is not None:
            heads.add(m.group(2))
    return heads


def _body_open(bare: str, at: int) -> int | None:
    """The ``{`` opening the class body after its name (base list and ``final`` between), or
    None for a declaration or a use (``struct X x;``, ``class X*``)."""
    depth, based = 0, False  # inside a base's template arguments; after the ``:``
    for i in range(at, min(len(bare), at + 2_000)):
        ch = bare[i]
        if ch == "{":
            return i
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == ":":
            based = True  # a base list: its commas part bases
        elif ch in ";()=>" or (ch == "," and not depth and not based):
            return None
    return None


def _own_device_call(t: _Text, open_at: int, close_at: int) -> bool:
    """Whether the class body at ``open_at`` defines a device ``operator()`` itself (not a
    nested type's)."""
    for m in _DEVICE_CALL.finditer(t.bare, open_at, close_at):
        index = bisect.bisect_left(t.opens, m.start())
        inner = next(
            (o for o in reversed(t.opens[:index]) if (t.pairs.get(o) or 0) > m.start()), None
        )
        if inner == open_at:
            return True
    return False


def defines_device_call(text: str) -> bool:
    """Whether ``text`` defines a device ``operator()`` at all (a class kernel may be in it)."""
    return "operator" in text and _DEVICE_CALL.search(text) is not None


def add_class_kernels(files: list[FileSides], more: Iterable[str] = ()) -> set[str]:
    """Add to the whole-file C++ scans of ``files`` the class kernels their texts (and ``more``:
    other files' texts that may launch them) launch; the names such launches stand for."""
    names: set[str] = set()
    for text in (*(t for f in files for t in (f.old_text, f.new_text) if t), *more):
        if may_hold(text):
            names |= launched_classes(text)
    if not names:
        return names
    for f in files:
        for side in ("old", "new"):
            scan: FileScan | None = getattr(f, side)
            text = getattr(f, f"{side}_text")
            if scan is None or not text or scan.kind != "cpp" or not scan.complete:
                continue
            language: Language = scan.language if scan.language == "hip" else "cuda"
            found = [
                k
                for k in class_kernels(scan.path, text, names, language)
                if scan.kernel(k.name) is None
            ]
            if found:
                update = {"kernels": (*scan.kernels, *found), "language": language}
                setattr(f, side, scan.model_copy(update=update))
    return names
