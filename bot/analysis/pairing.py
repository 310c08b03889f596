"""Pair a new Python kernel with the kernel(s) it replaces: a ``rewrite``.

The old side is a CUDA/HIP kernel, or a Python kernel in another language (a Triton kernel
ported to Gluon, Helion, CuTe DSL or TileLang, or back), kept or deleted.

Evidence, strongest first (a pair needs a score of 2 or more):

- 4: one policy kernel's ``paths`` cover both files;
- 3: a Python hunk in the same diff stops calling the C++ op (its kernel, the host function that
  launches it, or the name a ``m.def("name", &fn)`` binding exports) and starts calling the
  Triton kernel or its wrapper (a kernel the diff leaves alone too, reached through a
  dispatcher on the path the call's literals take: an existing Triton op switched to);
- 2: the kernels' names mean the same once ``kernel``/``cuda``/``hip``/``triton``/``fwd``... are
  dropped (``softmax_kernel`` in csrc/softmax.cu and ``softmax_kernel`` in softmax.py);
- 1: the files' names do (``csrc/softmax.cu`` and ``softmax.py``); +0.5 for nearby directories.

A C++ kernel untouched by the diff can still be the old side of a rewrite (a flag keeps it, say):
the files the policy names for that kernel, and C++ files at base with the same name, are read
when the caller can read base (``old_source``, and ``old_files`` for globs and names).
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass

from bot.analysis.code_counts import part_a
from bot.analysis.compare import sources_for
from bot.analysis.languages import language_named, name_noise
from bot.analysis.model import (
    PYTHON_LANGUAGES,
    Context,
    KernelChange,
    KernelDef,
    KernelRef,
    PartA,
)
from bot.analysis.reach.call_sites import IMPORT_LINE as _IMPORT
from bot.analysis.reach.call_sites import from_imports as _from_imports
from bot.analysis.reach.choices import kept_beside
from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import COMMON_METHODS, Op, Side
from bot.analysis.reach.moved_calls import (
    MovedCall,
    keyed_kernels,
    moved_calls,
    sides,
    still_built,
)
from bot.analysis.reach.op_calls import op_kernels
from bot.analysis.scan import scan_source
from bot.analysis.text import parse_python_or_none, source_kind

_NOISE = {
    "kernel", "kernels", "kern", "cuda", "hip", "fwd", "forward", "impl",
    "launch", "launcher", "op", "ops", "fused", "naive", "gpu", "device", "dev", "global",
    "func", "fn", "cu", "rocm", "custom", "legacy", "old", "new", "v1", "v2", "torch",
} | name_noise()  # fmt: skip
_CALL = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?\(")
_DEF = re.compile(r"\s*(?:async\s+)?(?:def|class)\s")
_TOKENS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PY_KEYWORDS = {"if", "for", "while", "return", "print", "def", "with", "assert", "not", "and"}
_MAX_EXTRA_FILES = 24
_FILES_PER_OP = 4
_CPP_KERNEL_FILES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx")


def stem(name: str) -> str:
    """``vectorAdd`` / ``vector_add_kernel`` / ``_vector_add_cuda`` -> ``vector_add``."""
    tokens = _TOKENS.findall(name)
    kept = [t.lower() for t in tokens if t.lower() not in _NOISE]
    return "_".join(kept)


def _last(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def _file_stem(path: str) -> str:
    base = posixpath.basename(path)
    return stem(base.split(".", 1)[0])


@dataclass
class _Old:
    kernel: KernelDef
    kept: bool
    names: set[str]
    change: KernelChange | None


def pair_rewrites(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    switches = _call_switches(ctx)
    both = sides(ctx)
    moved = moved_calls(both, switches)
    keyed = keyed_kernels(both, switches) if moved else {}
    beside: list[MovedCall] = []  # choices beside a compiled op
    if any(c.kind == "new" and c.language in PYTHON_LANGUAGES for c in changes):
        beside = [k.moved for k in kept_beside(ctx, both)]  # only new kernels are paired so
    moved += beside
    switches += [
        (m.where, {("~" if m.kept else "") + o.name for o in m.ops}, set(m.kernels)) for m in moved
    ]
    # a choice's ops are matched to old kernels through their host calls only, not by name
    paired, declined = _pair(changes, ctx, switches, moved, beside, keyed)
    chosen = {k for m in beside for k in m.kernels}
    paired = _unseen_ops(paired, moved, ctx, both, declined)
    paired = _variants(paired, chosen)
    return [_unseen_old_note(c, ctx) for c in paired]


def _olds(c: KernelChange) -> set[tuple[str, str]]:
    return {(r.path, r.name) for r in [c.old, *c.old_variants] if r is not None}


def _undiscriminated(c: KernelChange, rewrites: list[KernelChange]) -> bool:
    """Whether ``c`` was paired only as one of many new kernels a broad role switched to: its
    old kernels are exactly another rewrite's, of another operation."""
    return any(
        r is not c and stem(r.name) != stem(c.name) and _olds(r) == _olds(c) for r in rewrites
    )


_PAIRING_NOTES = ("old kernel kept in", "old kernel deleted from", "no Part A table")


def _variants(changes: list[KernelChange], chosen: set[str] = frozenset()) -> list[KernelChange]:  # type: ignore[assignment]
    """A new Python kernel left unpaired whose operation is a paired rewrite's with a word
    added (``_bgmv_expand_slice_kernel`` beside ``_bgmv_expand_kernel``, in the same folder):
    a variant of that rewrite, replacing the same old kernels. A new kernel nothing paired is
    no variant of a rewrite a choice beside the compiled op paired (``chosen``): the choice
    says which kernels take the op's role, and it does not reach this one."""
    rewrites = [c for c in changes if c.kind == "rewrite" and c.language in PYTHON_LANGUAGES]
    if not rewrites:
        return changes
    out = list(changes)
    for i, c in enumerate(changes):
        if c.language not in PYTHON_LANGUAGES or not stem(c.name):
            continue
        paired = [r.name for r in [c.old, *c.old_variants] if r is not None]
        if c.kind == "rewrite" and (
            any(_words(c.name) & _words(n) for n in paired) or not _undiscriminated(c, rewrites)
        ):
            continue  # paired by name, or by a role of its own
        if c.kind not in ("new", "rewrite"):
            continue
        words = stem(c.name).split("_")
        base = [
            r
            for r in rewrites
            if r is not c
            and not (c.kind == "new" and r.name in chosen)
            and stem(r.name)
            and posixpath.dirname(r.path) == posixpath.dirname(c.path)
            and len(words) == len(stem(r.name).split("_")) + 1
            and words[: len(words) - 1] == stem(r.name).split("_")
        ]
        if len(base) != 1:
            continue
        r = base[0]
        out[i] = c.model_copy(
            update={
                "kind": "rewrite",
                "old": r.old,
                "old_variants": r.old_variants,
                "old_language": r.old_language,
                "old_kernel_kept": r.old_kernel_kept,
                "evidence": [f"a variant of {r.name} ({words[-1]}), which replaces {r.old.name}"]
                if r.old
                else [],
                "part_a": None,  # counted for the kernel it is a variant of
                "notes": [
                    *(n for n in c.notes if not n.startswith(_PAIRING_NOTES)),
                    f"a variant of {r.name}: paired as it is (no Part A table of its own)",
                ],
            }
        )
    return out


def _unseen_old_note(c: KernelChange, ctx: Context) -> KernelChange:
    """A new Triton kernel whose policy entry also names C++ files the diff does not show."""
    if c.kind != "new" or c.language != "triton" or ctx.policy is None or ctx.old_source:
        return c
    cpp = [
        p
        for kp in ctx.policy.kernels_for_path(c.path)
        for p in kp.paths
        if not p.endswith((".py", "/**", "/*")) and p not in ctx.diff_paths
    ]
    if not cpp:
        return c
    note = (
        f"the policy also lists {', '.join(cpp)} for this kernel, which the diff does not show: "
        "if this replaces a C++ kernel, analyze with --repo to pair the rewrite"
    )
    return c.model_copy(update={"notes": [*c.notes, note]})


def _pair(
    changes: list[KernelChange],
    ctx: Context,
    switches: list[tuple[str, set[str], set[str]]],
    moved: list[MovedCall],
    side_by_side: list[MovedCall],
    keyed: dict[str, set[str]] | None = None,
) -> tuple[list[KernelChange], set[tuple[str, str]]]:
    """``side_by_side``: of ``moved``, the choices beside a compiled op; their ops are matched to old
    kernels through the host calls from their bindings only (``_unbuilt_ops``), not by the
    stems of their names (``backward`` is every backward kernel's). ``keyed``: per new kernel,
    the string literals whose tests lead to it (``moved_calls.keyed_kernels``); where the old
    op's host code picks its kernels by the same literals, a role pairs by them. Also returns
    the (new kernel, switch) pairs a role declined (``_named_roles``)."""
    exact = {m.where for m in side_by_side}
    helpers = _helpers_only(ctx)
    triton = [
        c
        for c in changes
        if c.kind == "new" and c.language in PYTHON_LANGUAGES and c.new and c.name not in helpers
    ]
    switched_in = {a.rsplit(".", 1)[-1] for _, _, added in switches for a in added}
    for f in ctx.files:
        for k in f.new.kernels if f.new else ():
            if k.name in switched_in - helpers and not any(
                c.new and c.name == k.name for c in triton
            ):
                triton.append(KernelChange(kind="new", name=k.name, language=k.language,
                                           path=k.path, new=k.ref()))  # fmt: skip
    triton += _outside(ctx, moved, triton, helpers)
    if not triton:
        return changes, set()
    _read_extra(
        ctx, triton, switches, [p for m in moved for o in m.ops for p in o.extension.sources]
    )
    old_keys: dict[str, set[str]] = {}
    olds = _old_candidates(changes, ctx, _unbuilt_ops(ctx, moved, side_by_side, old_keys))
    if not olds:
        return changes, set()
    # a wrapper named like every autograd Function's method (``forward``) says nothing of
    # which op its kernel stands for (``ext.forward`` of another extension)
    new_wrappers = {
        k: {w for w in ws if w not in COMMON_METHODS} for k, ws in ctx.new_wrappers().items()
    }
    best: dict[int, tuple[float, int, list[str]]] = {}
    by_role: dict[tuple[int, int], list[str]] = {}  # (old, triton) paired by a function's switch
    role_of: dict[tuple[int, int], str] = {}  # the switch that pairs them so
    new_names = {n for t in triton for n in {t.name} | new_wrappers.get(t.name, set())}
    beside = _same_named(ctx, triton)
    for ti, t in enumerate(triton):
        t_names = {t.name} | new_wrappers.get(t.name, set())
        for oi, old in enumerate(olds):
            if old.kernel.language == t.language:
                continue  # the same language: a new kernel beside it, not a port of it
            score, why, role = _score(t, t_names, old, ctx, switches, new_names, exact)
            twin = beside.get(t.name, {}).get(_file_stem(old.kernel.path))
            if twin:
                score += 2
                why.append(f"its wrapper has the name of {twin}, kept beside it")
            if role:
                by_role[(oi, ti)] = why
                role_of[(oi, ti)] = role
            if t.name in new_wrappers:
                score += 0.25
            if score >= 2 and (oi not in best or score > best[oi][0]):
                best[oi] = (score, ti, why)
    if not best:
        return changes, set()
    # An old kernel whose op a function switched is paired by role with every new kernel a
    # switching function now calls (N:M); any other old kernel with its best match.
    by_role, declined = _named_roles(by_role, role_of, olds, triton, ctx)
    roles = {oi for oi, _ in by_role}
    pairs = {(oi, ti): why for oi, (_, ti, why) in best.items() if oi not in roles}
    pairs.update(by_role)
    drop: set[int] = set()
    out = []
    for ti, t in enumerate(triton):
        mine = [(olds[oi], why) for (oi, tj), why in sorted(pairs.items()) if tj == ti]
        mine = _by_key(t.name, mine, keyed or {}, old_keys) or _closest(t.name, mine)
        if not mine:
            continue
        mine.sort(key=lambda x: (x[0].kernel.language != "cuda", x[0].kernel.path))
        for old, _ in mine:
            if old.change is not None:
                drop.add(id(old.change))
        drop.add(id(t))
        for c in changes:
            if c.kind == "new" and c.name == t.name and c.path == t.path:
                drop.add(id(c))
        rewrite = _rewrite(t, mine, ctx)
        if t.path not in ctx.diff_paths:  # its own file unchanged: the call site is the change
            rewrite = rewrite.model_copy(update={"host_changes": t.host_changes})
        out.append(rewrite)
    return [c for c in changes if id(c) not in drop] + out, declined


def _outside(
    ctx: Context, moved: list[MovedCall], have: list[KernelChange], helpers: set[str]
) -> list[KernelChange]:
    """The Python kernels a switched call site now reaches in files the diff leaves alone (an
    existing Triton op switched to, through a dispatcher whose flag's default picks it): a
    rewrite's new side where paired, nothing where not. The change that reaches them is the
    call site's, said as their host change."""
    out: list[KernelChange] = []
    source = ctx.new_whole or ctx.new_source
    for m in moved:
        for path, name in m.sites:
            if path in ctx.diff_paths or name in helpers:
                continue
            if any(c.name == name and c.path == path for c in [*have, *out]):
                continue
            text = sources_for([path], ctx.texts_new, source).get(path)
            found = [k for k in scan_source(path, text).kernels if k.name == name] if text else []
            if not found or found[0].language not in PYTHON_LANGUAGES:
                continue
            caller, _, func = m.where.partition("::")
            via = ", ".join(o.name for o in m.ops)
            note = (
                f"{caller}: {func.split('#', 1)[0].split('::', 1)[0]} now reaches it in place "
                f"of {via} (its own file is unchanged)"
            )
            k = found[0]
            out.append(KernelChange(kind="new", name=name, language=k.language, path=path,
                                    new=k.ref(), host_changes=[note]))  # fmt: skip
    return out


def _named_roles(
    by_role: dict[tuple[int, int], list[str]],
    role_of: dict[tuple[int, int], str],
    olds: list[_Old],
    triton: list[KernelChange],
    ctx: Context,
) -> tuple[dict[tuple[int, int], list[str]], set[tuple[str, str]]]:
    """Of the new kernels one switch pairs by role with an old kernel, a matrix product
    (``tl.dot``) named like none of it is no port of it where another new kernel of the switch
    is named like it: the alternative that launches ``softmax_kernel`` and the batched-matmul
    ``matmul_4d_kernel`` where the other calls the op whose one kernel of the repository is
    ``attn_softmax_v2`` gave the softmax's part to the first, and the product's to the second,
    which the op did through a library (cuBLAS), not a kernel. Where no new kernel is named like
    the old one (``layer_norm_kernel`` and ``_fp_matmul`` for ``fused_ln``), or the unnamed one
    does no product (a second variant of the same work), the role pairs them all. Also returns
    the (new kernel, switch) pairs declined so: the op's kernels were read, so no unseen op of
    the switch is theirs either (``_unseen_ops``)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for oi, ti in by_role:
        groups.setdefault((oi, role_of[(oi, ti)]), []).append(ti)
    out = dict(by_role)
    declined: set[tuple[str, str]] = set()
    products: dict[int, bool] = {}
    for (oi, where), tis in groups.items():
        words = _words(olds[oi].kernel.name)
        if not any(words & _words(triton[ti].name) for ti in tis):
            continue
        for ti in tis:
            if words & _words(triton[ti].name):
                continue
            if ti not in products:
                products[ti] = _multiplies(triton[ti], ctx)
            if products[ti]:
                del out[(oi, ti)]
                declined.add((triton[ti].name, _place(where)))
    return out, declined


def _multiplies(t: KernelChange, ctx: Context) -> bool:
    """Whether the new kernel's body does a matrix product, in its language's terms."""
    lang = language_named(t.language)
    if t.new is None or lang is None:
        return False
    path = t.new.path
    text = sources_for([path], ctx.texts_new, ctx.new_source).get(path) or next(
        (f.new_text for f in ctx.files if f.patch.new_path == path and f.new_text), ""
    )
    body = "\n".join(text.split("\n")[t.new.line_start - 1 : t.new.line_end])
    return bool(lang.product.search(body))


def _place(where: str) -> str:
    """A switch's place without the choice's line (``path::Cls.f@81`` -> ``path::Cls.f``): the
    same function's choice, found as a role switch and as a choice beside the op."""
    return _AT_LINE.sub("", where)


_AT_LINE = re.compile(r"@\d+")


def _by_key(
    name: str,
    mine: list[tuple[_Old, list[str]]],
    keyed: dict[str, set[str]],
    old_keys: dict[str, set[str]],
) -> list[tuple[_Old, list[str]]]:
    """Of the old kernels paired with the new kernel ``name``, those its old op's host code
    picks by a string literal the new code picks ``name`` by (``strategy == "brute"`` on both
    sides), each with that literal said; none where no literal is shared."""
    mine_keys = keyed.get(name, set())
    out = []
    for old, why in mine:
        shared = sorted(mine_keys & old_keys.get(old.kernel.name, set()))
        if shared:
            out.append((old, [*why, f"both sides pick it by {shared[0]!r}"]))
    return out


def _helpers_only(ctx: Context) -> set[str]:
    """Names of the head's jit helpers: a name that some file of the head defines as a helper
    (another jit function there calls it, nothing launches it) and that no launch of the head
    names (``_tl_round``, defined in two modules, called from kernels in both). A helper does
    no kernel's work on its own, so it ports no old kernel."""
    sites = {x.kernel for x in ctx.new_launches()}
    return {
        k.name for f in ctx.files if f.new for k in f.new.kernels
        if k.language in PYTHON_LANGUAGES and not k.launched and k.name not in sites
    }  # fmt: skip


def _words(name: str) -> set[str]:
    return set(stem(name).split("_")) - {""}


def _closest(name: str, mine: list[tuple[_Old, list[str]]]) -> list[tuple[_Old, list[str]]]:
    """Of the old kernels paired with the new kernel ``name`` (a role switched from several
    ops to several kernels pairs them all), those whose names share the most words with it,
    where some share any: the shrink kernel with the shrink kernel, not with the expand one."""
    if len(mine) < 2:
        return mine
    words = _words(name)
    shared = [len(words & _words(o.kernel.name)) for o, _ in mine]
    top = max(shared)
    return [m for m, n in zip(mine, shared, strict=True) if n == top] if top else mine


def _same_named(ctx: Context, triton: list[KernelChange]) -> dict[str, dict[str, str]]:
    """A second implementation offered beside the first: per new kernel, the file names (as
    stems) of modules at base that define a function named as the new kernel's wrapper, in a
    file named as the wrapper's (``flashinfer/triton/activation.py``'s ``silu_and_mul`` beside
    ``flashinfer/activation.py``'s, which runs the CUDA kernel of ``activation.cuh``): an old
    kernel in a file of that name is the one the new kernel stands beside. Values: the old
    function, as ``path:name``."""
    if ctx.old_source is None or not ctx.old_files:
        return {}
    wanted = {t.name for t in triton}
    sites = [x for x in ctx.new_launches() if x.kernel in wanted and x.wrapper]
    by_base: dict[str, list[str]] = {}
    for p in ctx.old_files:
        if p.endswith(".py"):
            by_base.setdefault(posixpath.basename(p), []).append(p)
    out: dict[str, dict[str, str]] = {}
    read = 0
    for x in sites:
        for p in by_base.get(posixpath.basename(x.path), []):
            if p == x.path or read >= _MAX_EXTRA_FILES:
                continue
            text = sources_for([p], ctx.texts_old, ctx.old_source).get(p)
            read += 1
            tree = parse_python_or_none(text)
            if tree is None:
                continue
            names = {
                n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            if x.wrapper in names:
                out.setdefault(x.kernel, {})[_file_stem(p)] = f"{p}:{x.wrapper}"
    return out


def _score(
    t: KernelChange,
    t_names: set[str],
    old: _Old,
    ctx: Context,
    switches,
    new_names: set[str] = frozenset(),  # type: ignore[assignment]
    exact: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[float, list[str], str]:
    """``(score, why, by_role)``: by_role, the switch's place, when one function's call site
    switched (``exact``: those whose names match old kernels' as they are, see ``_pair``), else
    ``""``. ``new_names``: the new kernels of the diff and their wrappers (none of them is the
    compiled op kept beside ``t``, whatever its name)."""
    k = old.kernel
    score = 0.0
    why: list[str] = []
    by_role = ""
    if ctx.policy is not None:
        shared = [kp.name for kp in ctx.policy.kernels_for_path(t.path) if kp.covers(k.path)]
        if shared:
            score += 4
            why.append(f"policy kernel {shared[0]!r} covers both files")
    old_stems = {stem(n) for n in old.names} - {""}
    in_string = source_kind(k.path) == "python"  # CUDA source of a Python string (RawKernel)
    t_stems = {stem(n) for n in t_names} - {""}
    for where, removed, added in sorted(switches, key=lambda x: "::" not in x[0]):  # roles first
        a = sorted(n for n in added if _last(n) in t_names or stem(_last(n)) in t_stems)
        if not a:
            continue
        hits = sorted(
            n
            for n in removed
            if _last(n.lstrip("~")) in old.names
            or (where not in exact and stem(_last(n.lstrip("~"))) in old_stems)
        )
        path, _, role = where.partition("::")
        role = role.split("#", 1)[0]
        gone = [n for n in hits if not n.startswith("~")]
        kept = [n[1:] for n in hits if n.startswith("~")]
        kept += sorted(  # a new dispatcher that picks the Triton or the compiled op
            n
            for n in added
            if not in_string  # a source string's kernel is reached through calls, not names
            and stem(_last(n))
            and _last(n) not in t_names | new_names
            and (_last(n) in old.names or stem(_last(n)) in old_stems)
        )
        if gone:
            score += 3
            why.append(f"{path} switched from {gone[0]}() to {a[0]}")
            by_role = by_role or (where if role else "")
            break
        if kept:
            score += 2
            why.append(f"{path} calls {a[0]} beside {kept[0]}() (in {role or path})")
            by_role = by_role or (where if role else "")
            break
    if stem(k.name) and stem(k.name) == stem(t.name):
        score += 2
        why.append("same kernel name" if k.name == t.name else f"same operation ({k.name})")
    if _file_stem(k.path) and _file_stem(k.path) == _file_stem(t.path):
        score += 1
        why.append("same file name")
        k_dir, t_dir = posixpath.dirname(k.path), posixpath.dirname(t.path)
        if (
            k_dir == t_dir
            or k_dir.startswith(t_dir + "/")
            or t_dir.startswith(k_dir + "/")
            or not t_dir
        ):
            score += 0.5
    return score, why, by_role


def _called(lines: list[str], aliases: dict[str, str], with_imports: bool) -> set[str]:
    """Qualified names called (or, with ``with_imports``, imported) on ``lines``."""
    out: set[str] = set()
    for line in lines:
        code = line.split("#")[0]
        m = _IMPORT.match(code)
        if m:
            if with_imports:
                out.update(_from_imports([code]).values())
            continue
        if _DEF.match(code):
            continue
        for c in _CALL.finditer(code):
            head, dot, rest = c.group(1).partition(".")
            if head in _PY_KEYWORDS:
                continue
            out.add(aliases.get(head, head) + dot + rest)
    return out


def _call_switches(ctx: Context) -> list[tuple[str, set[str], set[str]]]:
    """Per Python function read whole (see ``call_sites``), else per Python file read from its
    diff lines: (where, names no longer called, names newly called or imported)."""
    from bot.analysis.reach.call_sites import hunk_switches, role_switches

    out = role_switches(ctx)
    whole = {f.patch.path for f in ctx.files if f.old_text and f.new_text}
    out += hunk_switches(ctx, whole)
    whole |= {where.split("::", 1)[0] for where, _, _ in out}
    for f in ctx.files:
        if source_kind(f.patch.path) != "python" or not f.patch.hunks or f.patch.path in whole:
            continue
        removed = [t for _, t in f.patch.removed_lines()]
        added = [t for _, t in f.patch.added_lines()]
        context = [t for h in f.patch.hunks for _, _, t in h.context]
        old_aliases = _from_imports((f.old_text or "").split("\n") + removed + context)
        new_aliases = _from_imports((f.new_text or "").split("\n") + added + context)
        before = _called(removed, old_aliases, with_imports=False)
        after = _called(added, new_aliases, with_imports=True)
        gone, new = before - after, after - before
        if gone and new:
            out.append((f.patch.path, gone, new))
    return out


def _module_files(ctx: Context, switches: list[tuple[str, set[str], set[str]]]) -> list[str]:
    """C++ files at base that may build an extension module a switched call site stopped
    calling (``semiring_cal_A.forward`` -> ``.../semiring/cal_A/*.cpp``, ``*.cu``): those whose
    path holds every word of the module's name, and the files beside them."""
    modules = {n.lstrip("~").split(".")[0] for _, gone, _ in switches for n in gone if "." in n}
    words = [set(_TOKENS.findall(m.lower())) for m in modules if "_" in m or m[:1].isupper()]
    words = [w for w in words if len(w) >= 2]
    if not words:
        return []
    cpp = [p for p in ctx.old_files or () if p.endswith(_CPP_KERNEL_FILES)]
    hits = [p for p in cpp if any(w <= set(_TOKENS.findall(p.lower())) for w in words)]
    folders = {posixpath.dirname(p) for p in hits}
    return hits + [p for p in cpp if posixpath.dirname(p) in folders and p not in hits]


def _op_files(ctx: Context, switches: list[tuple[str, set[str], set[str]]]) -> list[str]:
    """C++ files at base whose names share the most words with an op a function stopped
    calling (``torch.ops.mylib.index_select`` -> ``csrc/index.cu``), a few per op."""
    ops = {_last(n.lstrip("~")) for _, gone, _ in switches for n in gone if "_" in _last(n)}
    cpp = [p for p in ctx.old_files or () if p.endswith(_CPP_KERNEL_FILES)]
    out: list[str] = []
    for op in sorted(ops):
        words = set(stem(op).split("_")) - {""}
        scored = [(len(words & set(_file_stem(p).split("_"))), p) for p in cpp]
        out += [p for n, p in sorted(scored, key=lambda x: (-x[0], x[1])) if n][:_FILES_PER_OP]
    return out


def _read_extra(
    ctx: Context,
    triton: list[KernelChange],
    switches: list[tuple[str, set[str], set[str]]],
    sources: list[str],
) -> None:
    """Read C++ files outside the diff that may hold the old kernel (policy paths, same name,
    the extension module a switched call site used, the sources its build names)."""
    if ctx.old_source is None:
        return
    wanted: list[str] = sources + _module_files(ctx, switches) + _op_files(ctx, switches)
    ops = {  # the compiled ops switched call sites name: ``quantize_mx_cuda`` -> quantize_mx.cu
        stem(n.lstrip("~"))
        for _, gone, new in switches
        for n in gone | new
        if "." not in n and "_" in n.strip("_~")
    }
    for t in triton:
        for kp in ctx.policy.kernels_for_path(t.path) if ctx.policy is not None else []:
            for pattern in kp.paths:
                if not any(ch in pattern for ch in "*?["):
                    wanted.append(pattern)
            for p in ctx.old_files or ():
                if p.endswith(_CPP_KERNEL_FILES) and kp.covers(p):
                    wanted.append(p)
        stems = {_file_stem(t.path), stem(t.name)} | ops
        stems -= {""}
        for p in ctx.old_files or ():
            if p.endswith(_CPP_KERNEL_FILES) and _file_stem(p) in stems:
                wanted.append(p)
    raw = {p for p in sources if source_kind(p) == "python"}  # CUDA sources held as strings
    seen = set(ctx.diff_paths)
    for path in wanted:
        if path in seen or len(ctx.extra_old) >= _MAX_EXTRA_FILES:
            continue
        if source_kind(path) != "cpp" and path not in raw:
            continue
        seen.add(path)
        texts = sources_for([path], ctx.texts_old, ctx.old_source)
        if path in texts:
            scan = scan_source(path, texts[path])
            if path in raw:  # its string kernels only: its Python is no old kernel
                cuda = [k for k in scan.kernels if k.language not in PYTHON_LANGUAGES]
                scan = scan.model_copy(update={"kernels": cuda, "launches": []})
            ctx.extra_old[path] = scan


def _unbuilt_ops(
    ctx: Context,
    moved: list[MovedCall],
    side_by_side: list[MovedCall],
    keys: dict[str, set[str]] | None = None,
) -> dict[tuple[str, str], set[str]]:
    """Ops a switch moved away from whose extension lists no source (computed at build time)
    or that ``TORCH_LIBRARY`` registers (followed from the registering files and the local
    headers they include), and those a choice keeps beside new kernels: per kernel their host
    calls reach (``reach.op_calls``), those ops; its file is read. An extension that lists its
    sources is followed in them alone (wkv5, wkv6 and wkv6state each bind their own
    ``forward``). ``keys`` gets, per kernel of a registered op, the string literals its host
    code picks it by."""
    unbuilt = {o for m in moved for o in m.ops if not o.extension.sources}
    ops = sorted({o.name for o in unbuilt})
    if ctx.old_source is None or not ctx.old_files:
        return {}
    found: dict[tuple[str, str], set[str]] = {}  # (path, kernel) -> ops
    listed: dict[tuple[str, ...], set[str]] = {}  # an extension's sources -> its ops
    for m in side_by_side:
        for o in m.ops:
            if o.extension.sources:
                listed.setdefault(o.extension.sources, set()).add(o.name)
    registered: dict[tuple[str, ...], set[str]] = {}  # ``TORCH_LIBRARY`` files -> their ops
    for m in moved:
        for o in m.ops:
            if o.extension.sources and o.extension.how == "TORCH_LIBRARY":
                registered.setdefault(o.extension.sources, set()).add(o.name)
    for sources, names in sorted(listed.items()):
        cpp = [p for p in sources if source_kind(p) == "cpp" and p in ctx.old_files]
        for kernel, (path, by) in op_kernels(sorted(names), cpp, cpp, ctx.old_source).items():
            found.setdefault((path, kernel), set()).update(by)
    for sources, names in sorted(registered.items()):
        # the files that register the op, and the local headers they include: an op's
        # implementation is bound by one of them (``TORCH_LIBRARY_IMPL(ns, CUDA, m)``)
        cpp = [p for p in sources if source_kind(p) == "cpp" and p in ctx.old_files]
        texts = sources_for(cpp, ctx.texts_old, ctx.old_source)
        headers = [h for p in cpp for h in local_headers(texts.get(p, ""), p)]
        cpp += [h for h in dict.fromkeys(headers) if h in ctx.old_files and h not in cpp]
        reached = op_kernels(sorted(names), cpp, cpp, ctx.old_source, keys)
        for kernel, (path, by) in reached.items():
            found.setdefault((path, kernel), set()).update(by)
    if ops:
        index = ExtensionIndex(list(ctx.old_files), ctx.old_source)
        modules = sorted({o.extension.name for o in unbuilt})  # ``vsa_cuda``: csrc/attn/vsa.cpp
        held = [o.extension.where for o in unbuilt if source_kind(o.extension.where) == "cpp"]
        registering = list(
            dict.fromkeys(held + index.named_cpp(*ops)[:8] + index.named_cpp(*modules)[:4])
        )
        for kernel, (path, by) in op_kernels(
            ops, registering, list(ctx.old_files), ctx.old_source
        ).items():
            found.setdefault((path, kernel), set()).update(by)
    out: dict[tuple[str, str], set[str]] = {}
    scanned = {f.old.path for f in ctx.files if f.old is not None}  # a text-only change is not
    for (path, kernel), by in found.items():
        if path not in ctx.extra_old and len(ctx.extra_old) >= _MAX_EXTRA_FILES:
            continue
        if path not in ctx.extra_old and path not in scanned:
            texts = sources_for([path], ctx.texts_old, ctx.old_source)
            if path in texts:
                ctx.extra_old[path] = scan_source(path, texts[path])
        out[(path, kernel)] = by
    return out


def _old_candidates(
    changes: list[KernelChange], ctx: Context, ops: dict[tuple[str, str], set[str]] | None = None
) -> list[_Old]:
    """``ops``: per C++ kernel (its path and name), the compiled ops whose host calls reach
    it."""
    wrappers: dict[str, set[str]] = {}
    py_wrappers: dict[str, set[str]] = {}  # a Python kernel's launching functions
    bindings: dict[str, set[str]] = {}
    scans = [f.old for f in ctx.files if f.old] + list(ctx.extra_old.values())
    for launch in ctx.old_launches():
        if launch.wrapper:
            into = py_wrappers if launch.language in PYTHON_LANGUAGES else wrappers
            into.setdefault(launch.kernel, set()).add(launch.wrapper)
    for scan in scans:
        for exported, fn in scan.bindings:
            bindings.setdefault(fn, set()).add(exported)
    out = []
    for scan in scans:
        for k in scan.kernels:
            python = k.language in PYTHON_LANGUAGES
            if python and (not k.launched or not _ported(k, changes)):
                continue  # a jit helper, or a Python kernel no new kernel of the diff could port
            change = next(
                (
                    c
                    for c in changes
                    if c.kind == "deleted" and c.name == k.name and c.path == k.path
                ),
                None,
            )
            names = {k.name} | (py_wrappers if python else wrappers).get(k.name, set())
            names |= {k.built_by} if k.built_by else set()
            names |= (ops or {}).get((k.path, k.name), set()) if not python else set()
            for w in list(names):
                names |= bindings.get(w, set())
            out.append(_Old(kernel=k, kept=change is None, names=names, change=change))
    return out


def _unseen_ops(
    changes: list[KernelChange],
    moved: list[MovedCall],
    ctx: Context,
    both: tuple[Side, Side] | None,
    declined: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> list[KernelChange]:
    """New Triton kernels, still unpaired, that took the role of extension ops whose kernels
    the repository does not hold (built from a submodule, a download, generated sources):
    rewrites of those ops, with no old kernel to count. An op the repository neither builds
    nor registers (``torch.ops`` of an installed package) is a dependency's: a kernel taking
    its role is new to the repository. ``declined``: (kernel, switch) pairs whose op's
    kernels were read and given to other new kernels of the switch (``_named_roles``)."""
    scans = [f.old for f in ctx.files if f.old] + list(ctx.extra_old.values())
    seen = {s.path for s in scans if s.kernels}
    by_kernel: dict[str, list[tuple[MovedCall, Op]]] = {}
    for m in moved:
        for op in m.ops:
            if op.extension.where and not any(p in seen for p in op.extension.sources):
                for k in m.kernels:
                    if (k, _place(m.where)) not in declined:
                        by_kernel.setdefault(k, []).append((m, op))
    if not by_kernel:
        return changes
    built = still_built(both, {op.extension.name for v in by_kernel.values() for _, op in v})
    out = list(changes)
    for current in changes:
        found = by_kernel.get(current.name)
        if not found or current.kind != "new" or current.language not in PYTHON_LANGUAGES:
            continue
        t = current
        ops = list(dict.fromkeys(op for _, op in found))
        kept = any(m.kept for m, _ in found) or any(o.extension.name in built for o in ops)
        ext = ops[0].extension
        names = ", ".join(f"{o.extension.name}.{o.name}" for o in ops)
        note = (
            f"replaces {names}: the extension {ext.describe()}"
            + (
                " builds sources computed at build time or outside the repository"
                if ext.unresolved
                else ""
            )
            + ", so no CUDA kernel of it is read and no Part A table is made"
        )
        refs = [
            KernelRef(language="cuda", name=f"{o.extension.name}.{o.name}",
                      path=o.extension.where or t.path, line_start=1, line_end=1)
            for o in ops
        ]  # fmt: skip
        out[out.index(current)] = current.model_copy(
            update={
                "kind": "rewrite",
                "old": refs[0],
                "old_variants": refs[1:],
                "old_language": "cuda",
                "old_kernel_kept": kept,
                "evidence": [f"{m.where}: calls {names} moved to {t.name}" for m, _ in found[:1]],
                "notes": [*current.notes, note, "old kernel kept" if kept else "old op removed"],
            }
        )
    return out


def _ported(k: KernelDef, changes: list[KernelChange]) -> bool:
    """Whether a new Python kernel of another language is in the diff (a port's new side)."""
    return any(
        c.kind == "new" and c.language in PYTHON_LANGUAGES and c.language != k.language
        for c in changes
    )


def _by_file(olds: list[_Old]) -> dict[str, list[_Old]]:
    out: dict[str, list[_Old]] = {}
    for o in olds:
        out.setdefault(o.kernel.path, []).append(o)
    return out


def _rewrite(t: KernelChange, mine: list[tuple[_Old, list[str]]], ctx: Context) -> KernelChange:
    olds = [o for o, _ in mine]
    primary = olds[0]
    languages = sorted({o.kernel.language for o in olds}, key=lambda x: x != "cuda")
    evidence = []
    for path, group in _by_file(olds).items():
        why = next(w for o, w in mine if o.kernel.path == path)
        names = ", ".join(o.kernel.name for o in group)
        evidence.append(f"{path} ({names}): {'; '.join(why)}")
    kept = list(_by_file([o for o in olds if o.kept]))
    gone = list(_by_file([o for o in olds if not o.kept]))
    notes = list(t.notes)
    if kept:
        notes.append("old kernel kept in " + ", ".join(kept))
    if gone:
        notes.append("old kernel deleted from " + ", ".join(gone))
    table, why_not = _part_a(t, olds, ctx)
    if why_not:
        notes.append(why_not)
    return KernelChange(
        kind="rewrite",
        name=t.name,
        language=t.language,
        path=t.path,
        old=primary.kernel.ref(),
        new=t.new,
        old_language="+".join(languages),
        old_variants=[o.kernel.ref() for o in olds[1:]],
        old_kernel_kept=bool(kept),
        configs_new=t.configs_new,
        configs_new_computed=t.configs_new_computed,
        part_a=table,
        evidence=evidence,
        notes=notes,
    )


_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def local_headers(text: str, path: str) -> list[str]:
    """The local headers (``#include "..."``) a C++ file includes, as repository paths."""
    folder = posixpath.dirname(path)
    return [
        posixpath.normpath(posixpath.join(folder, name)) for name in _LOCAL_INCLUDE.findall(text)
    ][:_MAX_EXTRA_FILES]


def _part_a(t: KernelChange, olds: list[_Old], ctx: Context) -> tuple[PartA | None, str | None]:
    """Counted on the old kernels of one vendor (CUDA when there are CUDA ones) against the
    Triton one, as the seed counts one pair; the other vendor's files count as source files."""
    language = olds[0].kernel.language
    counted = [o.kernel for o in olds if o.kernel.language == language]
    names = {k.name for k in counted}
    old_paths = [k.path for k in counted] + [
        x.path for x in ctx.old_launches() if x.kernel in names and x.language == language
    ]
    new_paths = [t.path] + [x.path for x in ctx.new_launches() if x.kernel == t.name]
    old_src = sources_for(list(dict.fromkeys(old_paths)), ctx.texts_old, ctx.old_source)
    headers = [h for k in counted for h in local_headers(old_src.get(k.path, ""), k.path)]
    old_src.update(sources_for(list(dict.fromkeys(headers)), ctx.texts_old, ctx.old_source))
    new_src = sources_for(list(dict.fromkeys(new_paths)), ctx.texts_new, ctx.new_source)
    missing = sorted({k.path for k in counted if k.path not in old_src})
    missing += [] if t.path in new_src else [t.path]
    if missing:
        return None, (
            "no Part A table: the whole source of " + ", ".join(missing) + " is not in the diff "
            "(analyze with --repo to read it)"
        )
    twins = list(
        dict.fromkeys(
            (o.kernel.path, o.kernel.language) for o in olds if o.kernel.language != language
        )
    )
    table = part_a(old_src, [(k.path, k.name) for k in counted], new_src, [(t.path, t.name)], twins)
    return table, None
