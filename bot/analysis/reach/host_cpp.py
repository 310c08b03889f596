"""C++ changes outside any ``__global__`` body that still change how kernels run.

Host code that picks a tile config, fills a launch table or instantiates a template, a check in
the entry point that feeds a launch, a local header whose ``__device__`` helpers, types or macros
the kernels use: no kernel body changed, yet the kernels run differently. Each changed line is
placed in the scope around it (function, ``struct``/``class``, multi-line ``#define``) or, at file
level, read for the macros it invokes. Then, over the C++ files of the diff and their neighbours
(same folder):

- device side: the kernels whose code (signature included) uses a changed ``__device__``
  function, type or macro, directly or through others, change ``body`` through it
  (``via_helpers`` names the changed scopes, less the names the new side alone defines and
  member type aliases; a member function is reached where it is called, and named with its
  type; a ``__device__`` function with the same code on both sides, moved to another file of
  the diff, is not changed);
- host side: the kernels launched or named in a changed host function, in its callers, in what
  those call, or in a changed launch macro, change ``launch`` (``host_changes`` says where). A
  launch macro that builds kernel names by token pasting affects the kernels of the headers the
  changed file includes.

A kernel whose body text is unchanged but whose launch path changed is ``launch`` even when a
header it uses changed too (the helper is still named). Host lines that only serve a new type (a
whole new ``else if constexpr (std::is_same...)`` branch, wherever the diff places its run of
lines, a call of one more instance of a template called already, a type alias that is ``T`` for
every type but the new one and the lines that read as before with it written ``T``) change no
existing instance and are no root; nor is a ``static_assert``, which decides whether the program
compiles, not what it runs with.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bot.analysis.compare import sources_for
from bot.analysis.diff import FilePatch, whole_text_from_diff
from bot.analysis.model import (
    MAX_SOURCE_CHARS,
    ChangeKind,
    Context,
    KernelChange,
    KernelDef,
)
from bot.analysis.reach.pickers import picked_kernels
from bot.analysis.scan import scan_source
from bot.analysis.scan.cpp import _IDENT, _function_header, _Text, mask
from bot.analysis.scan.kernel_classes import class_kernels
from bot.analysis.text import source_kind

_TYPE_HEADER = re.compile(r"\b(?:struct|class|union)\s+([A-Za-z_]\w*)[^;{}()]*$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
_ALIAS = re.compile(
    r"\busing\s+([A-Za-z_]\w*)\s*=([^;]{1,400});|\btypedef\b([^;]{1,400}?)\b([A-Za-z_]\w*)\s*;"
)
_INVOKE = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(")
_INSTANTIATE = re.compile(r"^\s*(?:extern\s+)?template\s+(?!<)")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_LAUNCH = re.compile(r"<<<|LaunchKernel|hipLaunchKernelGGL")
# Blocks that register functions as ops (``m.def("op", &fn)``), and what a line of one binds
_REGISTRATIONS = (
    "PYBIND11_MODULE",
    "TORCH_LIBRARY",
    "TORCH_LIBRARY_IMPL",
    "TORCH_LIBRARY_FRAGMENT",
)
_BOUND = re.compile(
    r"&\s*([A-Za-z_][\w:]*)|TORCH_FN\(\s*([A-Za-z_][\w:]*)"
    r"|\.(?:def|impl)\(\s*\S[^,]*,\s*([A-Za-z_][\w:]*)\s*[,)]"
)
_MAX_NEIGHBOURS = 40
_ROUNDS = 4


@dataclass
class _Scope:
    name: str
    kind: str  # kernel | device | host | type | macro
    path: str
    first: int
    last: int
    text: str
    refs: set[str] = field(default_factory=set)
    owner: str = ""  # a member type alias: the type that holds it


def _scopes(path: str, text: str) -> list[_Scope]:
    """Functions, types and multi-line macros of one C++ file, with the names they use."""
    t = _Text([line.rstrip("\r") for line in text.split("\n")], None)
    code_lines = t.code.split("\n")
    out: list[_Scope] = []
    for open_at in t.opens:
        close_at = t.pairs.get(open_at)
        if close_at is None:
            continue
        found = _function_header(t, open_at)
        if found is not None:
            name, header_at = found
            begin = max(t.bare.rfind(c, max(0, header_at - 2_000), header_at) for c in ";{}")
            header = t.bare[begin + 1 : open_at]
            kind = (
                "kernel"
                if "__global__" in header
                else "device"
                if "__device__" in header
                else "host"
            )
            first = t.line(header_at)
        else:
            begin = max(t.bare.rfind(c, 0, open_at) for c in ";{}")
            m = _TYPE_HEADER.search(t.bare[begin + 1 : open_at])
            if m is None:
                continue
            name, kind, first = m.group(1), "type", t.line(begin + 1 + m.start())
        last = t.line(close_at)
        body = "\n".join(code_lines[first - 1 : last])
        refs = set(_IDENT.findall(body))
        out.append(_Scope(name, kind, path, first, last, body, refs))
    aliases = []
    for m in _ALIAS.finditer(t.code):  # ``using BlockScanT = BlockScan<...>;``: a type too
        name = m.group(1) or m.group(4)
        words = set(_IDENT.findall(m.group(0))) - {name, "using", "typedef", "typename"}
        line = t.line(m.start())
        aliases.append(_Scope(name, "type", path, line, t.line(m.end()), m.group(0), words))
    index = 0
    while index < len(code_lines):
        m = _DEFINE.match(code_lines[index])
        first = index
        while code_lines[index].rstrip().endswith("\\") and index + 1 < len(code_lines):
            index += 1
        if m:
            body = "\n".join(code_lines[first : index + 1])
            out.append(_Scope(m.group(1), "macro", path, first + 1, index + 1, body,
                              set(_IDENT.findall(body)) - {m.group(1)}))  # fmt: skip
        index += 1
    for alias in aliases:
        around = _innermost(out, alias.first)
        if around is None:
            out.append(alias)
        elif around.kind == "type":  # ``typedef __bfloat16 type;`` in ``struct C10ToNvType``
            alias.owner = around.name
            out.append(alias)
        # else local to a function or a macro's expansion: part of that scope's text
    return out


# Macros defined only while a device pass compiles (nvcc's, hipcc's, SYCL's): a region that
# tests one of them is compiled for the device on one side and for the host on the other.
_DEVICE_PASS = ("__CUDA_ARCH__", "__HIP_DEVICE_COMPILE__", "__SYCL_DEVICE_ONLY__")
_PASS_TEST = re.compile(
    r"^\s*#\s*(?:(ifdef|ifndef)\s+(\w+)|if\s+(!?)\s*(?:defined\s*\(?\s*)?(\w+)\s*\)?\s*$)"
)
_PP_OPEN = re.compile(r"^\s*#\s*if(?:n?def)?\b")
_PP_ELIF = re.compile(r"^\s*#\s*elif\b")
_PP_ELSE = re.compile(r"^\s*#\s*else\b")
_PP_ENDIF = re.compile(r"^\s*#\s*endif\b")


def host_pass_only(lines: list[str], number: int) -> bool:
    """Whether line ``number`` (1-based) of a C++ file is compiled by the host pass alone: it
    lies in ``#else`` of ``#if defined(__CUDA_ARCH__)`` (or under ``#ifndef __CUDA_ARCH__``,
    hipcc's and SYCL's device macros alike). Device code never sees such a line, whatever it
    defines: a ``__device__`` function or a kernel there is the host pass's stub."""
    frames: list[bool | None] = []  # per open #if: True while its side is the host pass
    for line in lines[: max(0, number - 1)]:
        if _PP_ENDIF.match(line):
            if frames:
                frames.pop()
        elif _PP_ELIF.match(line):
            if frames:
                frames[-1] = None
        elif _PP_ELSE.match(line):
            if frames and frames[-1] is not None:
                frames[-1] = not frames[-1]
        elif _PP_OPEN.match(line):
            m = _PASS_TEST.match(line)
            name = (m.group(2) or m.group(4)) if m else None
            if m is None or name not in _DEVICE_PASS:
                frames.append(None)
            else:
                frames.append(m.group(1) == "ifndef" or m.group(3) == "!")
    return any(f is True for f in frames)


def _innermost(scopes: list[_Scope], line: int) -> _Scope | None:
    inside = [s for s in scopes if s.first <= line <= s.last]
    return min(inside, key=lambda s: s.last - s.first) if inside else None


@dataclass
class _Pool:
    texts: dict[str, str]
    scopes: dict[str, list[_Scope]]

    def all(self) -> Iterable[_Scope]:
        for found in self.scopes.values():
            yield from found


def _pool(ctx: Context, roots_paths: list[str]) -> _Pool:
    texts: dict[str, str] = {}
    for f in ctx.files:
        text = f.new_text if f.new_text else f.old_text
        if source_kind(f.patch.path) == "cpp" and text:
            texts[f.patch.path] = text
    folders = {posixpath.dirname(p) for p in roots_paths}
    wanted = [
        p
        for p in ctx.old_files or ()
        if source_kind(p) == "cpp" and posixpath.dirname(p) in folders and p not in texts
    ][:_MAX_NEIGHBOURS]
    texts.update(sources_for(wanted, ctx.texts_new, ctx.new_source))
    texts = {p: t for p, t in texts.items() if t and len(t) <= MAX_SOURCE_CHARS}
    return _Pool(texts, {p: _scopes(p, t) for p, t in texts.items()})


@dataclass
class _Roots:
    device: dict[str, str] = field(default_factory=dict)  # name -> the file it changed in
    host: dict[str, str] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)  # kernel names on changed file-level lines
    instantiating: set[str] = field(default_factory=set)  # files that invoke or instantiate
    members: dict[str, set[str]] = field(default_factory=dict)  # member alias -> its types
    owners: dict[str, set[str]] = field(default_factory=dict)  # member function -> its types
    added: set[str] = field(default_factory=set)  # defined by the new side alone


def _roots(ctx: Context) -> _Roots:
    roots = _Roots()
    sides: dict[bool, set[str]] = {True: set(), False: set()}  # names defined, by side: new?
    # each __device__ function's code over the files of the diff read whole, by side
    device_code: dict[bool, dict[str, set[str]]] = {True: {}, False: {}}
    for f in ctx.files:
        path = f.patch.path
        if source_kind(path) != "cpp" or f.patch.status == "deleted":
            continue  # a deleted file's kernels are deleted; its callers change elsewhere
        added, removed = f.patch.added_lines(), f.patch.removed_lines()
        both = {"".join(t.split()) for _, t in added} & {"".join(t.split()) for _, t in removed}
        # what the new side defines counts as added only where the old side was read too
        old_read = bool(f.old_text) or f.patch.status == "added"
        same = _SameLines()
        for new_side, text, changed in ((True, f.new_text, added), (False, f.old_text, removed)):
            changed = [(n, t) for n, t in changed if "".join(t.split()) not in both]  # re-indented
            if not text and f.patch.status == "added" and changed is not None:
                text = _added_text(ctx, path)
            if not text:
                _hunk_roots(f.patch, roots)
                continue
            scopes = _scopes(path, text)
            # in host code, what only adds a type's instance leaves the existing ones as they were
            if new_side:
                fresh = _new_type_code(text, {n for n, _ in changed})
                same = _same_for_old_types(text, f.old_text or "", fresh, changed, removed)
                fresh |= same.added
            else:
                fresh = same.removed
            if old_read and (new_side or f.patch.status != "added"):
                sides[new_side].update(s.name for s in scopes)
                for s in scopes:
                    if s.kind == "device":
                        device_code[new_side].setdefault(s.name, set()).add(
                            "".join(mask(s.text)[0].split())
                        )
            lines = text.split("\n")
            for number, line in changed:
                code = mask(line)[0].strip()
                if not code or _STATIC_ASSERT.match(code):
                    continue  # a static assertion decides whether it compiles, no run-time value
                scope = _innermost(scopes, number)
                if number in fresh and scope is not None and scope.kind == "host":
                    continue
                if host_pass_only(lines, number):
                    defined = _DEFINE.match(code)
                    if defined:  # a macro of the host pass: what host code uses it changed
                        roots.host.setdefault(defined.group(1), path)
                    elif scope is not None and scope.kind == "host":
                        roots.host.setdefault(scope.name, path)
                    continue
                if scope is None:
                    defined = _DEFINE.match(code)
                    invoked = _INVOKE.match(code)
                    if defined:
                        roots.device[defined.group(1)] = path
                    elif invoked or _INSTANTIATE.match(code):
                        if invoked:
                            roots.host[invoked.group(1)] = path
                        roots.instantiating.add(path)
                    for word in _IDENT.findall(code):
                        roots.named.setdefault(word, path)
                    continue
                if scope.kind == "kernel":
                    continue  # its own comparison saw it
                if scope.name in _REGISTRATIONS:
                    # a table of bindings: a line changes the functions it binds, not the rest
                    for bound in _BOUND.findall(code):
                        roots.host.setdefault(next(b for b in bound if b).split("::")[-1], path)
                    continue
                target = (
                    roots.host
                    if scope.kind == "host"
                    or (scope.kind == "macro" and _LAUNCH.search(scope.text))
                    else roots.device
                )
                target.setdefault(scope.name, path)
                if scope.owner:
                    roots.members.setdefault(scope.name, set()).add(scope.owner)
                # ``WarpScan::scan`` changed: so did ``WarpScan``, named with it; a __device__
                # member function reaches only the code that calls it (DeepGEMM's
                # ``Scheduler::get_global_idx``, not every kernel making a ``Scheduler``), an
                # operator or a member type whatever uses the type
                method = scope.kind == "device" and scope.name != "operator"
                for outer in scopes:
                    if (
                        outer.kind == "type"
                        and outer.first < scope.first <= scope.last < outer.last
                    ):
                        if method:
                            roots.owners.setdefault(scope.name, set()).add(outer.name)
                        else:
                            target.setdefault(outer.name, path)
    roots.added = sides[True] - sides[False]
    # a __device__ function with the same code on both sides was moved, not changed
    # (flash-fft-conv's set_value overloads, from the .cu files into a new shared.h)
    for name in [n for n in roots.device if device_code[True].get(n)]:
        if device_code[True][name] == device_code[False].get(name):
            del roots.device[name]
    return roots


_TYPE_BRANCH = re.compile(r"^\}?\s*else\s+if\s+constexpr\s*\(\s*!?\s*std::is_same")
_INSTANCE_CALL = re.compile(r"^([A-Za-z_][\w:]*)\s*<[^;]*>\s*(?:::\s*\w+\s*)?\([^;]*\)\s*;$")


def _new_type_code(text: str, added: set[int]) -> set[int]:
    """The added lines of ``text`` that serve a new type only: a whole new ``else if constexpr
    (std::is_same...)`` branch (ThunderKittens' ``initialize`` gains one per new dtype), and a
    call of a template whose other instances are called on unchanged lines (a test's new
    ``sweep_size_2d<group_load_store<bool>, ...>::run(results);``): no existing instance runs
    otherwise. A run of added lines is read where a diff may equally place it: git shows the
    new branch from the middle of the one above (``i_ref[idx] = ...; }`` then ``else if
    constexpr (...bool) { i_t[idx] = ...;``), the same text as the whole branch slid down."""
    lines = text.split("\n")
    code = [mask(x)[0].strip() for x in lines]
    out: set[int] = set()
    called = {
        m.group(1)
        for n, c in enumerate(code, 1)
        if n not in added and (m := _INSTANCE_CALL.match(c))
    }
    for n in sorted(added):
        m = _INSTANCE_CALL.match(code[n - 1] if n <= len(code) else "")
        if m is not None and m.group(1) in called:
            out.add(n)
    out |= _type_branches(code, added)
    slid = _slid_down(code, added)
    if any(n != at for n, at in slid.items()):
        branches = _type_branches(code, set(slid.values()))
        out |= {n for n, at in slid.items() if at in branches}
    return out


def _slid_down(code: list[str], added: set[int]) -> dict[int, int]:
    """Each added line's number once its run of added lines is slid down as far as the same
    text allows (a run whose first line equals the line after it may equally end one lower)."""
    out: dict[int, int] = {}
    todo = sorted(added)
    while todo:
        first = last = todo.pop(0)
        while todo and todo[0] == last + 1:
            last = todo.pop(0)
        k = 0
        while (
            last + k < len(code)
            and last + k + 1 not in added
            and code[first + k - 1] == code[last + k]
        ):
            k += 1
        out.update({n: n + k for n in range(first, last + 1)})
    return out


def _type_branches(code: list[str], added: set[int]) -> set[int]:
    """The lines of the whole ``else if constexpr (std::is_same...)`` branches ``added`` holds."""
    out: set[int] = set()
    for n in sorted(added):
        c = code[n - 1] if n <= len(code) else ""
        if not _TYPE_BRANCH.match(c) or not c.endswith("{"):
            continue
        depth, at, branch = 1, n, [n]
        while depth > 0 and at < len(code):
            at += 1
            line = code[at - 1]
            if line.startswith("}") and depth == 1:  # the branch ends, maybe where another opens
                depth = 0
                if line == "}" and at in added:
                    branch.append(at)
                break
            depth += line.count("{") - line.count("}")
            branch.append(at)
        if depth <= 0 and all(x in added for x in branch):
            out.update(branch)
    return out


_STATIC_ASSERT = re.compile(r"^static_assert\s*\(.*\)\s*;$")
_IS_SAME = re.compile(r"\bis_same(?:_v)?\s*<\s*([^<>,]+?)\s*,\s*([^<>,]+?)\s*>")
_SELECTED_ALIAS = re.compile(
    r"^using\s+([A-Za-z_]\w*)\s*=\s*(?:typename\s+)?std::conditional(?:_t)?\s*<\s*"
    r"std::(is_same(?:_v)?\s*<[^<>]+>)(?:::value)?\s*,\s*([^<>,]+?)\s*,\s*([^<>,]+?)\s*>"
    r"(?:::type)?\s*;$"
)


@dataclass
class _SameLines:
    added: set[int] = field(default_factory=set)  # line numbers of the new side
    removed: set[int] = field(default_factory=set)  # of the old side


def _same_for_old_types(
    text: str,
    old_text: str,
    fresh: set[int],
    added: list[tuple[int, str]],
    removed: list[tuple[int, str]],
) -> _SameLines:
    """The changed lines that read the same for every type the old side served, where a new
    type comes with its own branch (``fresh``): ``using host_t = std::conditional_t<
    std::is_same_v<T, bool>, uint8_t, T>`` is ``T`` for every type but the new ``bool``, so
    ``std::vector<host_t> i_t(n)`` replacing ``std::vector<T> i_t(n)`` (ThunderKittens'
    ``initialize``) hands no existing instance anything else. The alias's line and each line
    that reads as a removed one with the alias written as ``T`` count as the new type's only.
    A new type: one a new branch tests that the old side tests nowhere."""
    lines = text.split("\n")
    tested = {t for m in _IS_SAME.finditer(mask(old_text)[0]) for t in m.groups()}
    new_types = {
        t
        for n in fresh
        if n <= len(lines)
        for m in _IS_SAME.finditer(mask(lines[n - 1])[0])
        for t in m.groups()
    } - tested
    out = _SameLines()
    if not new_types:
        return out
    aliases: dict[str, str] = {}
    for n, line in added:
        m = _SELECTED_ALIAS.match(mask(line)[0].strip())
        test = _IS_SAME.search(m.group(2)) if m else None
        if m is None or test is None:
            continue
        a, b = test.groups()
        kept = b if a in new_types else a if b in new_types else None
        if kept is not None and m.group(4) == kept:  # the new type picks m.group(3)
            aliases[m.group(1)] = kept
            out.added.add(n)
    if not aliases:
        return out
    gone: dict[str, list[int]] = {}
    for n, line in removed:
        gone.setdefault("".join(mask(line)[0].split()), []).append(n)
    named = re.compile(r"\b(" + "|".join(map(re.escape, aliases)) + r")\b")
    for n, line in added:
        code = mask(line)[0]
        if n in out.added or not named.search(code):
            continue
        read = "".join(named.sub(lambda m: aliases[m.group(1)], code).split())
        if gone.get(read):
            out.added.add(n)
            out.removed.add(gone[read].pop(0))
    return out


_SCOPE_LINE = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:struct|class|union)\s+([A-Za-z_]\w*)"
    r"|^(?:[A-Za-z_].*?\b)?([A-Za-z_]\w*)\s*\("
)


def _hunk_roots(patch: FilePatch, roots: _Roots) -> None:
    """Roots of a file known from its diff only: each changed line belongs to the last scope
    opened at column 0 above it in the hunk (its header line, else git's section header)."""
    for h in patch.hunks:
        for lines, changed in (
            (h.new_lines(), {n for n, _ in h.added}),
            (h.old_lines(), {n for n, _ in h.removed}),
        ):
            current = h.section
            shown = [t for _, t in lines]
            for index, (number, line) in enumerate(lines):
                if number not in changed:
                    if _SCOPE_LINE.match(line):
                        current = line
                    continue
                code = mask(line)[0].strip()
                defined = _DEFINE.match(code)
                host_only = host_pass_only(shown, index + 1)  # as far as the hunk shows
                if defined:
                    (roots.host if host_only else roots.device).setdefault(
                        defined.group(1), patch.path
                    )
                    continue
                if host_only and "__device__" in current:
                    continue
                invoked = _INVOKE.match(line)
                if invoked and not line[:1].isspace():  # a macro run at file level
                    roots.host.setdefault(invoked.group(1), patch.path)
                    roots.instantiating.add(patch.path)
                    continue
                m = _SCOPE_LINE.match(current or "")
                if not code or m is None or "__global__" in current:
                    continue
                name = m.group(1) or m.group(2)
                device = bool(m.group(1)) or "__device__" in current
                (roots.device if device else roots.host).setdefault(name, patch.path)


def host_changes(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """``changes`` with the kernels C++ host code, launch macros and local headers changed."""
    if ctx.new_source is None and ctx.old_source is None:
        return changes  # whole files only; from diff lines, the file is reported unclassified
    if not any(source_kind(f.patch.path) == "cpp" for f in ctx.files):
        return changes
    roots = _roots(ctx)
    if not (roots.device or roots.host):
        return changes
    pool = _pool(ctx, sorted({*roots.device.values(), *roots.host.values()}))
    scopes = list(pool.all())
    # a function a new file defines whose name another file defines too is another function
    # (RWKV-PEFT's new wkv6infctx_cuda.cu beside wkv6_cuda.cu, each with its cuda_forward):
    # no root for the kernels of that other file, and the new file's own kernels are new
    added = {f.patch.path for f in ctx.files if f.patch.status == "added"}
    for found in (roots.host, roots.device):
        for name, path in list(found.items()):
            if path in added and any(x.name == name and x.path != path for x in scopes):
                del found[name]
    if not (roots.device or roots.host):
        return changes
    # device side: what uses a changed device function, type or macro
    device: dict[str, set[str]] = {name: {name} for name in roots.device}
    origin: dict[str, set[str]] = {name: {path} for name, path in roots.device.items()}
    sees = _Includes(pool, ctx)
    types = {s.name for s in scopes if s.kind == "type" and not s.owner}

    def uses(s: _Scope) -> set[str]:
        """The changed names ``s`` uses where it can see them: a member type alias only
        through its type (``TypeVec2<T>::type``) or a template parameter (``Ktraits::type``),
        not as another type's member of the same name; a member function not by the type
        whose body holds it."""
        return {
            h
            for h in s.refs & device.keys()
            if origin[h] & sees(s.path)
            and (h not in roots.members or _through_owner(s, h, roots.members[h], types))
            and s.name not in roots.owners.get(h, ())  # a type holds its member, not uses it
        }

    for _ in range(_ROUNDS):
        grew = False
        for s in scopes:
            if s.kind in ("device", "type", "macro") and s.name not in device:
                hit = uses(s)
                if hit:
                    device[s.name] = set().union(*(device[h] for h in hit))
                    origin[s.name] = {s.path}
                    grew = True
        if not grew:
            break
    # host side: callers of a changed host function, and what it calls; what those callers
    # call beside it only when it is a helper whose answer they use (a changed launcher's
    # effect is its own launches: llm.c's residual_forward changes no sibling launcher)
    by_name: dict[str, list[_Scope]] = {}
    for s in scopes:
        by_name.setdefault(s.name, []).append(s)
    launchers = {  # a changed launcher, or a type holding launches
        n
        for n in roots.host
        for s in by_name.get(n, [])
        if s.kind in ("host", "type") and "<<<" in s.text
    }

    def callers_of(names: set[str]) -> set[str]:
        found = set(names)
        for _ in range(_ROUNDS):
            more = {  # a registration binds its functions: it calls none of them
                s.name
                for s in scopes
                if s.kind == "host" and s.refs & found and s.name not in _REGISTRATIONS
            } - found
            if not more:
                break
            found |= more
        return found

    callers = callers_of(set(roots.host))
    host = set(roots.host) | callers_of(set(roots.host) - launchers)
    for _ in range(_ROUNDS):
        more = {
            r
            for name in host
            for s in by_name.get(name, [])
            for r in s.refs
            if any(x.kind in ("host", "macro") for x in by_name.get(r, []))
        } - host
        if not more:
            break
        host |= more
    host |= callers
    # a changed launcher's own launches are compared one by one with their branches
    # (``compare_launches``); what such a launcher, or a type holding one, names is only its
    # launches: not a change of a kernel whose launchers read the same on both sides
    # (``AllpairAdapter::call`` changed in ``allreduce7``'s branch, not ``allreduceAllPairs``')

    # a changed launcher that a changed host function calls may be called otherwise now
    # (mamba's selective_scan_bwd_cuda picks other template instances of its launcher)
    called = {
        r
        for n in set(roots.host) - launchers
        for x in by_name.get(n, [])
        if x.kind == "host"
        for r in x.refs & launchers
    }

    def judging(name: str, s: _Scope) -> bool:
        return (name in launchers - called and s.kind == "host") or (
            "<<<" in s.text and (s.kind == "type" or (s.kind == "macro" and name not in roots.host))
        )  # an unchanged launch macro: its launches are compared where it is invoked

    scoped = [(name, s) for name in host for s in by_name.get(name, [])]
    host_text = "\n".join(s.text for name, s in scoped if not judging(name, s))
    launcher_words = set(_IDENT.findall("\n".join(s.text for n, s in scoped if judging(n, s))))
    compared = _same_launchers(ctx)
    host_words = set(_IDENT.findall(host_text)) | set(roots.named)
    read = _reader(ctx, pool)
    for name in host:
        for s in by_name.get(name, []):
            if s.kind == "host" and "<<<" in s.text:
                host_words |= _picked(s, read)
    included: set[str] = set()
    for path in roots.instantiating:
        for inc in _INCLUDE.findall(pool.texts.get(path, "") or _added_text(ctx, path)):
            included.add(posixpath.normpath(posixpath.join(posixpath.dirname(path), inc)))
    out = list(changes)
    kernels = _kernel_defs(pool, ctx.kernel_classes)
    for path, k in kernels:
        scope = next(
            (s for s in pool.scopes[path] if s.kind == "kernel" and s.name == k.name), None
        )
        used = uses(scope) if scope else set()
        via = sorted({r for u in used for r in device[u]})
        # named as causes: neither a name the new side alone defines (what uses it changed its
        # own text) nor a member type alias (its type, a changed name too, is named)
        named = [r for r in via if r not in roots.added and r not in roots.members] or via
        named = sorted({*named, *(t for r in named for t in roots.owners.get(r, ()))})
        launched = k.name in host_words or path in included
        judged = not launched and k.name in launcher_words
        launched = launched or judged
        if not (via or launched):
            continue
        where = sorted(
            {roots.device[v] for v in via if roots.device.get(v) != path}
            | ({p for p in roots.host.values()} if launched else set())
        )
        notes = [f"{p}: host code or a header it uses changed" for p in where]
        kind: ChangeKind = "launch" if launched else "body"
        existing = next(
            (c for c in out if c.name == k.name and c.language in ("cuda", "hip")
             and (c.path == path or (c.new and c.new.path == path)
                  or (c.old is None and c.new is None))),  # a launch seen, its kernel not
            None,
        )  # fmt: skip
        if existing is not None and existing.old is None and existing.new is None:
            placed = existing.model_copy(update={"path": path, "old": k.ref(), "new": k.ref()})
            out[out.index(existing)] = existing = placed
        if existing is None and judged and not via and k.name in compared:
            continue
        if existing is None:
            out.append(
                KernelChange(
                    kind=kind,
                    name=k.name,
                    language=k.language,
                    path=path,
                    old=k.ref(),
                    new=k.ref(),
                    via_helpers=named,
                    host_changes=notes,
                    notes=[f"through {', '.join(named)}" if via else "its launch path changed"],
                )
            )
            continue
        if existing.kind in ("new", "deleted", "rewrite"):
            continue
        out[out.index(existing)] = existing.model_copy(
            update={
                "via_helpers": list(dict.fromkeys([*existing.via_helpers, *named])),
                "host_changes": list(dict.fromkeys([*existing.host_changes, *notes])),
            }
        )
    return out


_QUALIFIER = r"([A-Za-z_]\w*)\s*(?:<[^;{}]*?>)?\s*::\s*(?:template\s+)?"


def _through_owner(s: _Scope, member: str, owners: set[str], types: set[str]) -> bool:
    """Whether ``s`` reaches the member type alias ``member`` of one of ``owners``: it names an
    owner, or it is one, or it qualifies ``member`` by a name that is no type of the files read
    (a template parameter such as ``Ktraits``, which may stand for an owner)."""
    if s.name in owners or s.refs & owners:
        return True
    found = re.findall(_QUALIFIER + re.escape(member) + r"\b", s.text)
    return any(q not in types for q in found)


def _same_launchers(ctx: Context) -> set[str]:
    """Kernels launched on both sides whose host functions, each launch's own branch only, read
    the same (``LaunchSite.wrapper_digest``)."""
    old: dict[str, list[str | None]] = {}
    new: dict[str, list[str | None]] = {}
    for sites, into in ((ctx.old_launches(), old), (ctx.new_launches(), new)):
        for x in sites:
            into.setdefault(x.kernel, []).append(x.wrapper_digest)
    return {
        k
        for k, a in old.items()
        if k in new
        and None not in a + new[k]
        and sorted(d or "" for d in a) == sorted(d or "" for d in new[k])
    }


class _Includes:
    """The files a C++ file sees: itself and the local headers it includes, transitively (a
    changed helper reaches only the code that can see its definition; a name alone, such as
    ``WARP_THREADS``, is defined by many headers)."""

    def __init__(self, pool: _Pool, ctx: Context) -> None:
        self.read = _reader(ctx, pool)
        self.paths = set(ctx.old_files or ()) | ctx.diff_paths  # files not read whole too
        self.seen: dict[str, set[str]] = {}

    def __call__(self, path: str) -> set[str]:
        if path not in self.seen:
            out, todo = {path}, [path]
            while todo and len(out) < _MAX_NEIGHBOURS:
                current = todo.pop()
                folder = posixpath.dirname(current)
                for inc in _INCLUDE.findall(self.read(current) or ""):
                    for found in (posixpath.normpath(posixpath.join(folder, inc)), inc):
                        if found not in out and (found in self.paths or self.read(found)):
                            out.add(found)
                            todo.append(found)
                            break
            self.seen[path] = out
        return self.seen[path]


_POINTER_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*<<<")


def _picked(scope: _Scope, read: Callable[[str], str | None]) -> set[str]:
    """The kernels a host function launches through a pointer a picker returned
    (``k = pick(...); k<<<...>>>``, ``reach.pickers``)."""
    out: set[str] = set()
    for pointer in set(_POINTER_LAUNCH.findall(scope.text)):
        assigned = re.search(rf"\b{re.escape(pointer)}\s*=\s*&?\s*([A-Za-z_]\w*)\s*\(", scope.text)
        if assigned is not None:
            out |= picked_kernels(scope.path, assigned.group(1), read)
    return out


def _reader(ctx: Context, pool: _Pool) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        if path in pool.texts:
            return pool.texts[path]
        return ctx.new_source(path) if ctx.new_source is not None else None

    return read


def _added_text(ctx: Context, path: str) -> str:
    """The whole text of a file the diff adds (all of it is in the diff)."""
    for f in ctx.files:
        if f.patch.path == path and f.patch.status == "added":
            return whole_text_from_diff(f.patch, "new") or ""
    return ""


def _kernel_defs(pool: _Pool, classes: set[str]) -> list[tuple[str, KernelDef]]:
    """The kernels of the files read: ``__global__`` functions, and the classes launched
    through a generic kernel template (``classes``, ``scan.kernel_classes``)."""
    out = []
    for path, text in pool.texts.items():
        if "__global__" in text:
            out += [(path, k) for k in scan_source(path, text).kernels]
        if classes:
            out += [(path, k) for k in class_kernels(path, text, classes)]
    return out
