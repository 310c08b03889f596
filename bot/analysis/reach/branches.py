"""Launch parameters chosen by vendor or by GPU architecture, on each changed kernel's launch path.

``num_warps = 16 if is_hip() else 32``, ``if torch.version.hip: ...``, a warp-size test,
``torch.cuda.get_device_capability() >= (10, 0)``, ``'Tesla' in get_device_name()``: a measured
runner takes one side of such a branch only, so the other is never measured on it. For a Python
kernel the launch path is its autotune decorator (the config list and the module-level names and
functions it uses), the host functions that launch it and the functions they call, and the
functions it is handed to (``autotune_kernel(k)``); a module-level flag (``TESLA = 'Tesla' in
torch.cuda.get_device_name(0)``) counts as the test it is made of. For a C++ kernel it is the
changed lines of the files its change came from, with the ``#if`` around them.

Each branch becomes a :class:`LaunchBranch` naming what the measured runners (the policy's
vendors, its compiler targets) will and will not take.
"""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_right
from typing import TYPE_CHECKING

from bot.analysis.model import Context, FileSides, KernelChange, LaunchBranch
from bot.analysis.text import collapse, module_bindings, parse_python, source_kind, walk

if TYPE_CHECKING:
    from bot.policy.model import Policy

# The GPU vendors a launch may be chosen by, as data: each with the words its predicates and
# device types are spelled with (``is_xpu()``, ``IS_HIP``, ``torch.npu``, ``device.type ==
# "xpu"``, ``SYSTEM == "ipex"``). NVIDIA's ``cuda`` is PyTorch's device type on ROCm too, so
# only its explicit tests (``torch.version.cuda``, ``IS_CUDA``, ``is_nvidia()``) name it.
VENDORS: dict[str, tuple[str, ...]] = {
    "nvidia": ("nvidia",),
    "amd": ("hip", "rocm", "amd", "cdna", "rdna"),
    "intel": ("xpu", "ipex", "intel", "sycl"),
    "ascend": ("npu", "ascend"),
    "cambricon": ("mlu",),
    "moore threads": ("musa", "mthreads"),
    "iluvatar": ("iluvatar", "corex"),
    "hygon": ("hygon", "dcu"),
    "metax": ("metax", "maca"),
    "apple": ("mps",),
}
_DEVICE_WORDS = "|".join(w for v, words in VENDORS.items() if v != "nvidia" for w in words)
_ALL_WORDS = "|".join(w for words in VENDORS.values() for w in words)
VENDOR = re.compile(
    rf"\b(?:is_(?:{_ALL_WORDS})|IS_(?:{_ALL_WORDS.upper()}|CUDA)|"
    rf"torch\.version\.(?:hip|cuda)|torch\.(?:{_DEVICE_WORDS})\b|"
    r"USE_ROCM|BNB_HIP|__HIP_PLATFORM_AMD__|__HIPCC__|__HIP__|__AMDGCN_WAVEFRONT_SIZE|__GFX\w*|"
    r"warp_size|WARP_SIZE|WARP_THREADS|hipDeviceAttributeWarpSize)\b"
    rf"|[\"'](?:{_DEVICE_WORDS})[\"']"
    # a project's macro or predicate: ``GGML_USE_HIP``, ``PADDLE_WITH_HIP``, ``..._CC_IS_AMD(cc)``
    rf"|\b(?:[A-Z][A-Z0-9]*_)+(?:USE|IS|WITH|PLATFORM)_(?:{_ALL_WORDS.upper()})\b"
    # a member of a vendor enum: ``gpu_vendor == GPUVendor.Iluvatar``
    rf"|\b\w*(?:Vendor|VENDOR|vendor)\w*\s*\.\s*(?i:{_ALL_WORDS})\b"
)

# The same words for ``git grep -E`` (no Python-only syntax): a file of the diff that tests a
# vendor is read whole (an import it gates may decide where another file's kernels run).
VENDOR_MARKERS = (
    rf"\b(is|IS)_({_ALL_WORDS}|{_ALL_WORDS.upper()})\b|torch\.version\.|"
    rf"torch\.({_DEVICE_WORDS})\b|[\"']({_DEVICE_WORDS})[\"']"
)


def vendors_named(condition: str) -> list[str]:
    """The vendors a condition names, in ``VENDORS``' order."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", condition.replace("_", " "))}
    return [v for v, names in VENDORS.items() if words & set(names)]


ARCH = re.compile(
    r"\b(?:get_device_capability|device_capability|compute_capability|"
    r"cudaDevAttrComputeCapability\w*|__CUDA_ARCH__|IS_NVIDIA_(?:HOPPER|BLACKWELL|AMPERE)|"
    r"is_(?:hopper|blackwell|ampere|volta|sm\d+)|get_device_name|isSM\d+\w*|sm_?\d{2,3}[af]?|"
    r"SM\d{2,3}|gfx\d{1,4}\w*|gcnArchName|(?:[A-Z][A-Z0-9]*_)*(?:RDNA|CDNA)\d)\b"
    r"|(?:dprops|props|prop)\s*(?:->|\.)\s*major"
)
_CAPABILITY = re.compile(r"\(\s*(\d{1,2})\s*,\s*(\d)\s*\)|\bsm_?(\d{2,3})|major\s*[=!<>]=?\s*(\d+)")
_PP_IF = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b(.*)$")
_PP_END = re.compile(r"^\s*#\s*endif\b")
MAX_BRANCHES = 8  # per change


def add_branches(
    changes: list[KernelChange], ctx: Context, policy: Policy | None
) -> list[KernelChange]:
    """Each change with the vendor and architecture branches on its kernel's launch path."""
    trees: dict[str, LaunchPath | None] = {}
    cpp_files = {f.patch.path: f for f in ctx.files if source_kind(f.patch.path) == "cpp"}
    out = []
    for c in changes:
        ref = c.new or c.old
        path = ref.path if ref else c.path
        found: list[LaunchBranch] = []
        if source_kind(path) == "python":
            side_new = c.new is not None
            text = (ctx.texts_new if side_new else ctx.texts_old).get(path)
            key = f"{'new' if side_new else 'old'}:{path}"
            if key not in trees:
                trees[key] = LaunchPath.parse(text) if text is not None else None
            module = trees[key]
            if module is not None:
                found = module.branches(c.name, path)
        elif source_kind(path) == "cpp":
            found = _cpp_branches(c, cpp_files)
        if not found:
            out.append(c)
            continue
        found = [
            b.model_copy(update={"note": branch_note(b, policy)}) for b in found[:MAX_BRANCHES]
        ]
        out.append(c.model_copy(update={"branches": found}))
    return out


def test_kinds(text: str, flags: dict[str, set[str]] | None = None) -> list[str]:
    """``vendor`` and / or ``arch``: what a test as written chooses by; ``flags``: a module's
    names made of such tests (``LaunchPath.flags``)."""
    return _kinds(text, flags or {"vendor": set(), "arch": set()})


def _kinds(text: str, flags: dict[str, set[str]]) -> list[str]:
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    kinds = []
    if VENDOR.search(text) or words & flags["vendor"]:
        kinds.append("vendor")
    if ARCH.search(text) or words & flags["arch"]:
        kinds.append("arch")
    return kinds


class LaunchPath:
    """One Python file's functions, module-level names, and vendor / arch flags."""

    def __init__(self, tree: ast.Module) -> None:
        self.funcs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs.setdefault(node.name, []).append(node)
        self.assigns = module_bindings(tree.body)
        self.flags: dict[str, set[str]] = {"vendor": set(), "arch": set()}
        for _ in range(2):  # a flag made of a flag
            for name, found in self.assigns.items():
                for stmt, _tests in found:
                    value = getattr(stmt, "value", None)
                    if value is None or isinstance(stmt, ast.If):
                        continue
                    for kind in _kinds(ast.unparse(value), self.flags):
                        self.flags[kind].add(name)
        self.tree = tree
        self.def_tests = _def_tests(tree.body, ())
        self._tests_of: dict[int, list[tuple[str, str, int]]] = {}  # by the region's id
        self._index()

    @staticmethod
    def parse(text: str) -> LaunchPath | None:
        try:
            return LaunchPath(parse_python(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def _index(self) -> None:
        """Per function, one walk: the names it launches (``k[...]``), hands on (``f(k)``) and
        refers to (calls and reads)."""
        self.launches: dict[str, set[int]] = {}
        self.handed: dict[str, set[int]] = {}
        self.refs: dict[int, set[str]] = {}
        self.referrers: dict[str, set[int]] = {}  # name: the functions that refer to it
        self.by_id: dict[int, ast.AST] = {}
        for defs in self.funcs.values():
            for f in defs:
                self.by_id[id(f)] = f
                refs: set[str] = set()
                for sub in walk(f):
                    if isinstance(sub, ast.Subscript):
                        name = _last(sub.value)
                        if name:
                            self.launches.setdefault(name, set()).add(id(f))
                    elif isinstance(sub, ast.Call):
                        name = _last(sub.func)
                        if name:
                            refs.add(name)
                        for a in sub.args:
                            if isinstance(a, ast.Name):
                                self.handed.setdefault(a.id, set()).add(id(f))
                    elif isinstance(sub, ast.Name):
                        refs.add(sub.id)
                self.refs[id(f)] = refs
                for name in refs:
                    self.referrers.setdefault(name, set()).add(id(f))
        self.module_handed: dict[str, set[str]] = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for sub in walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    for a in sub.args:
                        if isinstance(a, ast.Name):
                            self.module_handed.setdefault(a.id, set()).add(sub.func.id)
                        elif isinstance(a, ast.Call) and isinstance(a.func, ast.Name):
                            # ``autotune_kernel(_get_splitk_kernel(n))``: what a factory made
                            made = f"{a.func.id}()"
                            self.module_handed.setdefault(made, set()).add(sub.func.id)

    def regions(self, kernel: str) -> list[tuple[str, ast.AST]]:
        """``(where, node)`` of the code that decides how ``kernel`` is launched."""
        regions: list[tuple[str, ast.AST]] = []
        seen: set[int] = set()

        def add(where: str, node: ast.AST) -> None:
            if id(node) not in seen:
                seen.add(id(node))
                regions.append((where, node))

        own = {id(k) for k in self.funcs.get(kernel, [])}
        for k in self.funcs.get(kernel, []):
            for deco in k.decorator_list:
                add(f"the decorators of {kernel}", deco)
        named = self.referrers.get(kernel, set())  # ``k = kernel``
        found = self.launches.get(kernel, set()) | self.handed.get(kernel, set()) | named
        for fid in sorted(found, key=lambda fid: _position(self.by_id[fid])):
            if fid not in own:
                f = self.by_id[fid]
                add(getattr(f, "name", "?"), f)
        factories = {getattr(self.by_id[fid], "name", "") for fid in named}
        for name in sorted(
            self.module_handed.get(kernel, set()).union(
                *(self.module_handed.get(f"{m}()", set()) for m in factories)
            )
        ):
            for f in self.funcs.get(name, []):
                add(name, f)
        # a helper the body calls, defined twice under a module-level test (``if cap[0] >= 8:
        # def _convert(...)`` / ``else: def _convert(...)``): the test picks the kernel's code
        for k in self.funcs.get(kernel, []):
            for name in sorted(self.refs.get(id(k), set()) & self.def_tests.keys()):
                for test in self.def_tests[name]:
                    add(f"the definition of {name}", test)
        # one level down: what those regions call or read from the module
        for _where, node in list(regions):
            refs = self.refs.get(id(node))
            if refs is None:
                refs = {n.id for n in walk(node) if isinstance(n, ast.Name)}
                refs |= {_last(n.func) or "" for n in walk(node) if isinstance(n, ast.Call)}
            for name in sorted(refs - {kernel}):
                for f in self.funcs.get(name, []):
                    if id(f) not in own:
                        add(name, f)
                for stmt, tests in self.assigns.get(name, []):
                    add("module level", stmt)
                    for t in tests:
                        add("module level", t)
        return regions

    def branches(self, kernel: str, path: str) -> list[LaunchBranch]:
        out: list[LaunchBranch] = []
        seen: set[tuple[str, str]] = set()
        for where, region in self.regions(kernel):
            for kind, text, line in self._tests(region):
                if (kind, text) in seen:
                    continue
                seen.add((kind, text))
                out.append(
                    LaunchBranch(
                        kind=kind,  # type: ignore[arg-type]
                        path=path,
                        line=line,
                        condition=text,
                        where=where,
                        note="",
                    )
                )
        return out

    def _tests(self, region: ast.AST) -> list[tuple[str, str, int]]:
        """``(kind, condition, line)`` of each vendor or arch test in ``region``, once per
        region: one launcher of every kernel of a file is a region of each of them."""
        if id(region) in self._tests_of:
            return self._tests_of[id(region)]
        tests: list[ast.expr] = []
        if isinstance(region, ast.expr) and not isinstance(region, ast.Call):
            tests.append(region)  # a module-level if test
        for sub in walk(region):
            if isinstance(sub, (ast.If, ast.IfExp, ast.While)):
                tests.append(sub.test)
            elif isinstance(sub, ast.comprehension):
                tests.extend(sub.ifs)
            elif isinstance(sub, (ast.Assign, ast.AnnAssign)) and sub.value is not None:
                value_kinds = _kinds(ast.unparse(sub.value), self.flags)
                if value_kinds and isinstance(sub.value, ast.Call):
                    tests.append(sub.value)  # ``warps = 32 * get_warp_size()``
        found = []
        for test in tests:
            text = collapse(ast.unparse(test))
            found += [(kind, text, getattr(test, "lineno", 0)) for kind in _kinds(text, self.flags)]
        self._tests_of[id(region)] = found
        return found


def _def_tests(body: list[ast.stmt], tests: tuple[ast.expr, ...]) -> dict[str, list[ast.expr]]:
    """The functions a module defines under ``if`` tests, with those tests."""
    out: dict[str, list[ast.expr]] = {}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and tests:
            out.setdefault(stmt.name, []).extend(tests)
        elif isinstance(stmt, ast.If):
            for block in (stmt.body, stmt.orelse):
                for name, found in _def_tests(block, (*tests, stmt.test)).items():
                    out.setdefault(name, []).extend(t for t in found if t not in out.get(name, []))
        elif isinstance(stmt, (ast.Try, ast.With)):
            for name, found in _def_tests(stmt.body, tests).items():
                out.setdefault(name, []).extend(found)
    return out


def _position(node: ast.AST) -> tuple[int, int]:
    """Where ``node`` is in its file: an order of a file's functions that is the file's, not
    where they happen to lie in memory (which their ids would give)."""
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _last(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _cpp_branches(c: KernelChange, files: dict[str, FileSides]) -> list[LaunchBranch]:
    """Vendor / arch tests on the changed lines (and the ``#if`` around them) of the files the
    change came from: the kernel's own file and the files its host changes name."""
    paths = {c.path} | {r.path for r in (c.old, c.new) if r is not None}  # c.path: the launch's
    paths |= {h.split(":", 1)[0] for h in c.host_changes}  # file when the kernel's is not read
    out: list[LaunchBranch] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(paths & files.keys()):
        f = files[path]
        for text, changed in (
            (f.new_text, f.patch.added_lines()),
            (f.old_text, f.patch.removed_lines()),
        ):
            lines = (text or "").split("\n")
            for number, line in changed:
                candidates = [(number, line)]
                if text:
                    candidates += _enclosing_ifs(text, lines, number)
                for at, cond in candidates:
                    for kind in _kinds(cond, {"vendor": set(), "arch": set()}):
                        key = (kind, collapse(cond))
                        if key in seen:
                            continue
                        seen.add(key)
                        out.append(
                            LaunchBranch(
                                kind=kind,  # type: ignore[arg-type]
                                path=f.patch.path,
                                line=at,
                                condition=collapse(cond),
                                where=f.patch.path,
                                note="",
                            )
                        )
    return out


def _enclosing_ifs(text: str, lines: list[str], number: int) -> list[tuple[int, str]]:
    """The ``#if`` / ``#elif`` lines whose region holds line ``number`` (1-based), the
    nearest four; ``lines``: ``text``'s."""
    at, kinds = _preprocessor_lines(text)
    out = []
    depth = 0
    for i in range(bisect_right(at, min(number, len(lines)) - 2) - 1, -1, -1):
        if kinds[i] == "endif":
            depth += 1
        elif depth == 0:
            out.append((at[i] + 1, lines[at[i]].strip()))
            if len(out) == 4:
                break
        elif kinds[i] != "elif":
            depth -= 1
    return out


@functools.lru_cache(maxsize=8)
def _preprocessor_lines(text: str) -> tuple[list[int], list[str]]:
    """The indexes of a file's ``#if`` / ``#ifdef`` / ``#ifndef`` / ``#elif`` / ``#endif`` lines
    and which each is, once per file: each changed line looks back through them alone (every
    line of the file before each changed line was read again)."""
    at: list[int] = []
    kinds: list[str] = []
    for index, line in enumerate(text.split("\n")):
        if _PP_END.match(line):
            at.append(index)
            kinds.append("endif")
        elif m := _PP_IF.match(line):
            at.append(index)
            kinds.append(m.group(1))
    return at, kinds


def branch_note(b: LaunchBranch, policy: Policy | None) -> str:
    vendors = list(policy.vendors) if policy is not None else ["nvidia", "amd"]
    targets = (
        [*policy.compiler.nvidia_targets, *policy.compiler.amd_targets]
        if policy is not None
        else ["sm_90", "gfx942", "gfx90a"]
    )
    if b.kind == "vendor":
        others = [v for v in vendors_named(b.condition) if v not in vendors]
        if others:
            return (
                f"the measured runners ({', '.join(vendors)}) never take the side of "
                f"`{b.condition}` meant for {' and '.join(others)}"
            )
        if len(vendors) < 2:
            return (
                f"only {vendors[0]} is measured: the other vendor's side of `{b.condition}` "
                "is never measured"
            )
        return (
            f"`{b.condition}` picks a launch setting per vendor: each side runs only on its own "
            f"vendor's runner, so {' and '.join(vendors)} must be measured separately"
        )
    wanted = set()
    for m in _CAPABILITY.finditer(b.condition):
        if m.group(1):
            wanted.add(f"sm_{m.group(1)}{m.group(2)}")
        elif m.group(3):
            wanted.add(f"sm_{m.group(3)}")
    have = {t.rstrip("af") for t in targets if t.startswith("sm_")}
    outside = sorted(w for w in wanted if w not in have)
    if outside:
        return (
            f"`{b.condition}` selects {', '.join(outside)}, outside the compiler targets "
            f"({', '.join(targets)}): the measured runners never take that side"
        )
    return (
        f"`{b.condition}` picks a launch setting by GPU architecture: only the side of the "
        f"measured runners' architecture is measured (compiler targets: {', '.join(targets)})"
    )
