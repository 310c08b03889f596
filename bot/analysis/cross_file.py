"""Kernel changes seen across a diff's files, after each file's kernels were compared:

- launches: a kernel's grid, arguments, launch-time ``num_warps`` / ``BLOCK_*`` or host wrapper
  changed, wherever the launch is (``compare_launches``);
- ``triton.Config`` entries changed outside any kernel the diff's lines show (``loose_configs``);
- a kernel deleted from one file and added to another (``moved_kernels``): kind ``moved`` when
  its code is the same.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from bot.analysis.compare import compare_kernels
from bot.analysis.model import (
    PYTHON_LANGUAGES,
    ChangeKind,
    Context,
    KernelChange,
    KernelDef,
    LaunchSite,
    TritonConfig,
)
from bot.analysis.reach.pickers import Index, picked_kernels
from bot.analysis.text import source_kind
from bot.analysis.tuning.config_builders import lists_moved_into_builders, tuned_names


def _launch_text(site: LaunchSite) -> str:
    return f"{site.path}:{site.line} [{site.grid}] ({site.args})"


def _family(language: str) -> str:
    return "triton" if language in PYTHON_LANGUAGES else "cpp"


def _relevant(site: LaunchSite, known: set[str]) -> bool:
    """C++ launch syntax is unambiguous; ``x[i](...)`` in Python is a launch only when ``x``
    is a kernel found somewhere in the diff, or is named like one."""
    return site.language != "triton" or site.kernel in known or site.kernel.endswith("kernel")


def compare_launches(ctx: Context, changes: list[KernelChange]) -> list[KernelChange]:
    """Kernels whose launches changed: grid or arguments (``launch``), launch-time
    ``num_warps`` / ``BLOCK_*`` values (``tuning``), or the host wrapper around them."""
    known = {k.name for f in ctx.files for s in (f.old, f.new) if s for k in s.kernels}
    built = {  # a factory compiling a source-string kernel -> the kernel (cupy.RawKernel)
        k.built_by: k.name
        for f in ctx.files
        for s in (f.old, f.new)
        if s
        for k in s.kernels
        if k.built_by and k.language not in PYTHON_LANGUAGES
    }
    homes = _homes(ctx)
    olds: dict[tuple[str, str, str], list[LaunchSite]] = {}
    news: dict[tuple[str, str, str], list[LaunchSite]] = {}
    for site in _through_pickers(_built(ctx.old_launches(), built), known, ctx.old_source):
        if _relevant(site, known):
            olds.setdefault(_launched_key(site, homes), []).append(site)
    for site in _through_pickers(_built(ctx.new_launches(), built), known, ctx.new_source):
        if _relevant(site, known):
            news.setdefault(_launched_key(site, homes), []).append(site)
    out = []
    for name, language, home in sorted(set(olds) & set(news)):
        a, b = olds[(name, language, home)], news[(name, language, home)]
        if all(x.value_digest for x in a + b) and sorted(x.value_digest or "" for x in a) == sorted(
            x.value_digest or "" for x in b
        ):
            continue  # the same values launched, whatever the text
        # the same grid and arguments as values, whatever the text: only the options changed
        untuned_same = all(x.untuned_digest for x in a + b) and sorted(
            x.untuned_digest or "" for x in a
        ) == sorted(x.untuned_digest or "" for x in b)
        grid_changed = not untuned_same and sorted((x.grid, x.args) for x in a) != sorted(
            (x.grid, x.args) for x in b
        )
        if grid_changed and language in PYTHON_LANGUAGES:
            grid_changed = not _tuned_args_dropped(ctx, name, language, a, b)
            grid_changed = grid_changed and not _unread_args_dropped(ctx, name, a, b)
        t_old: dict[str, str] = {}
        t_new: dict[str, str] = {}
        for x in a:
            t_old.update(x.tuning)
        for x in b:
            t_new.update(x.tuning)
        keys = sorted(k for k in set(t_old) | set(t_new) if t_old.get(k) != t_new.get(k))
        wrapper_changed = (
            not untuned_same
            and all(x.wrapper_digest for x in a + b)
            and sorted(x.wrapper_digest or "" for x in a)
            != sorted(x.wrapper_digest or "" for x in b)
        )
        host_tuning = (
            not keys
            and all(x.tuning_digest for x in a + b)
            and sorted(x.tuning_digest or "" for x in a) != sorted(x.tuning_digest or "" for x in b)
        )  # the same option text, what it reads computed otherwise in the host
        if not (grid_changed or keys or wrapper_changed or host_tuning):
            continue
        kind: ChangeKind = "launch" if grid_changed or wrapper_changed else "tuning"
        notes = []
        if host_tuning:
            notes.append(
                "what its launch-time tuning values ("
                + ", ".join(sorted({k for x in b for k in x.tuning}))
                + ") read is computed differently in the host wrapper"
            )
        if wrapper_changed and not grid_changed and not keys:
            notes.append("host wrapper changed; grid and launch arguments did not")
        elif wrapper_changed and not grid_changed:
            notes.append("host wrapper changed, and launch-time tuning values with it")
        tuning_old = {k: t_old.get(k, "-") for k in keys}
        tuning_new = {k: t_new.get(k, "-") for k in keys}
        launches_old = [_launch_text(x) for x in a] if grid_changed else []
        launches_new = [_launch_text(x) for x in b] if grid_changed else []
        existing = next(
            (
                c
                for c in changes
                if c.name == name
                and _family(c.language) == _family(language)
                and home in ("", c.path)
            ),
            None,
        )
        if existing is None:
            old_k = _kernel_named(ctx, name, language, "old", home)
            new_k = _kernel_named(ctx, name, language, "new", home)
            out.append(
                KernelChange(
                    kind=kind,
                    name=name,
                    language=language,
                    path=new_k.path if new_k else b[0].path,
                    old=old_k.ref() if old_k else None,
                    new=new_k.ref() if new_k else None,
                    # a launch-made change still names the autotune it launches under
                    configs_old=_config_list(old_k),
                    configs_new=_config_list(new_k),
                    configs_old_computed=old_k is not None and old_k.configs_computed,
                    configs_new_computed=new_k is not None and new_k.configs_computed,
                    notes=notes,
                    tuning_old=tuning_old,
                    tuning_new=tuning_new,
                    launches_old=launches_old,
                    launches_new=launches_new,
                )
            )
        elif existing.kind not in ("new", "deleted"):
            merged_kind = existing.kind
            if existing.kind == "tuning" and kind == "launch":
                merged_kind = "launch"
            elif existing.kind == "body":
                notes.append("its launch changed too" if kind == "launch" else "")
            # where the host code that launches it changed: another file's launch, or for a
            # changed body any launch changed with it (a new constexpr passed, an output
            # allocated in another dtype: LightX2V's fp8_quantize_triton)
            elsewhere = sorted(
                {
                    x.path
                    for x in b
                    if (grid_changed and x.path != existing.path)
                    or (existing.kind == "body" and kind == "launch")
                }
            )
            changes[changes.index(existing)] = existing.model_copy(
                update={
                    "kind": merged_kind,
                    "host_changes": existing.host_changes
                    + [f"{p}: the host code that launches it changed" for p in elsewhere],
                    "notes": existing.notes + [n for n in notes if n],
                    "tuning_old": {**existing.tuning_old, **tuning_old},
                    "tuning_new": {**existing.tuning_new, **tuning_new},
                    "launches_old": launches_old,
                    "launches_new": launches_new,
                }
            )
    return out


def _by_parameter(site: LaunchSite, params: tuple[str, ...]) -> dict[str, str] | None:
    """A Triton launch's arguments by the kernel parameter each is passed for; ``None`` when
    they cannot be matched (``*args``, more positions than parameters)."""
    try:
        call = ast.parse(f"f({site.args})", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or len(call.args) > len(params):
        return None
    if any(isinstance(x, ast.Starred) for x in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    out = {p: ast.unparse(x) for p, x in zip(params, call.args, strict=False)}
    out.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
    return out


def _tuned_args_dropped(
    ctx: Context, name: str, language: str, a: list[LaunchSite], b: list[LaunchSite]
) -> bool:
    """Whether the launches differ only by arguments no longer passed for parameters the
    kernel's autotuner or heuristics now set (``triton.autotune`` added, and the launch stops
    passing the ``BLOCK`` it tunes): a tuning change, not a launch change. Each launch's
    arguments are matched to the parameters of its side's kernel (the order may change too)."""
    old_k = _kernel_named(ctx, name, language, "old")
    new_k = _kernel_named(ctx, name, language, "new")
    if old_k is None or new_k is None or not old_k.params or not new_k.params:
        return False
    text = next((f.new_text for f in ctx.files if f.new and new_k in f.new.kernels), None)
    tuned = tuned_names(new_k, text, ctx.new_source) & set(new_k.constexprs)
    if not tuned or len(a) != len(b):
        return False
    olds: list[tuple[str, list[tuple[str, str]]]] = []
    news: list[tuple[str, list[tuple[str, str]]]] = []
    for sites, k, out in ((a, old_k, olds), (b, new_k, news)):
        for x in sites:
            args = _by_parameter(x, k.params)
            if args is None:
                return False
            out.append((x.grid, sorted((p, v) for p, v in args.items() if p not in tuned)))
    dropped = {p for x in a for p in (_by_parameter(x, old_k.params) or {})} & tuned
    return bool(dropped) and sorted(olds) == sorted(news)


def _unread_args_dropped(ctx: Context, name: str, a: list[LaunchSite], b: list[LaunchSite]) -> bool:
    """Whether the launches differ only by arguments no longer passed for parameters the
    kernel's lines remove and none of them reads (``compare.Comparison.dropped``): passed by
    keyword, or by position as a name that is the parameter's own."""
    dropped = ctx.unread_dropped.get(name)
    if not dropped or len(a) != len(b):
        return False
    olds = [_without_args(x, dropped) for x in a]
    passed = [_without_args(x, set()) for x in a]
    news = [_without_args(x, set()) for x in b]
    if None in olds or None in news or olds == passed:
        return False
    return sorted(map(str, olds)) == sorted(map(str, news))


def _without_args(site: LaunchSite, names: set[str]) -> tuple[str, str] | None:
    """``(grid, arguments)`` of a Triton launch with those passed for ``names`` left out;
    ``None`` when the arguments do not parse."""
    try:
        call = ast.parse(f"f({site.args})", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call):
        return None
    call.args = [x for x in call.args if not (isinstance(x, ast.Name) and x.id in names)]
    call.keywords = [k for k in call.keywords if k.arg not in names]
    return site.grid, ast.unparse(call)


def _built(sites: list[LaunchSite], built: dict[str, str]) -> list[LaunchSite]:
    """CuPy launches (named by the factory that compiled the kernel, ``scan.triton``) as
    launches of that kernel; one whose factory compiles no kernel read is no launch."""
    out = []
    for site in sites:
        python_file = source_kind(site.path) == "python"
        if site.language in PYTHON_LANGUAGES or not python_file:
            out.append(site)
        elif site.kernel in built:
            out.append(site.model_copy(update={"kernel": built[site.kernel]}))
    return out


def _through_pickers(
    sites: list[LaunchSite], known: set[str], read: Callable[[str], str | None] | None
) -> list[LaunchSite]:
    """C++ launches of a function pointer a picker returned, as launches of the kernels the
    picker can return (``reach.pickers``); other sites as they are."""
    if read is None:
        return sites
    out: list[LaunchSite] = []
    picked: dict[tuple[str, str], set[str]] = {}
    cache: dict[str, Index] = {}
    for site in sites:
        if site.language == "triton" or site.kernel in known:
            out.append(site)
            continue
        key = (site.path, site.kernel)
        if key not in picked:
            picked[key] = picked_kernels(site.path, site.kernel, read, cache)
        if not picked[key]:
            out.append(site)
        out += [site.model_copy(update={"kernel": k}) for k in sorted(picked[key])]
    return out


def _config_list(k: KernelDef | None) -> list[TritonConfig] | None:
    return list(k.configs) if k is not None and k.configs is not None else None


def _kernel_named(
    ctx: Context, name: str, language: str, side: str, home: str = ""
) -> KernelDef | None:
    """The kernel called ``name`` (same language family) in the files read (in ``home`` when
    given), if any."""
    for f in ctx.files:
        scan = f.old if side == "old" else f.new
        for k in scan.kernels if scan else ():
            if k.name == name and _family(k.language) == _family(language) and home in ("", k.path):
                return k
    return None


def _homes(ctx: Context) -> dict[str, set[str]]:
    """The files that define a Python kernel of each name, for names defined in more than
    one file read."""
    out: dict[str, set[str]] = {}
    for f in ctx.files:
        for scan in (f.old, f.new):
            for k in scan.kernels if scan else ():
                if k.language in PYTHON_LANGUAGES and k.launched:
                    out.setdefault(k.name, set()).add(k.path)
    return {name: paths for name, paths in out.items() if len(paths) > 1}


def _launched_key(site: LaunchSite, homes: dict[str, set[str]]) -> tuple[str, str, str]:
    """Launches are compared per kernel: by name, and where kernels of one name are defined
    in several files (stickbreaking-attention's two ``_backward``), by the file whose own
    kernel a launch beside it launches; ``""`` where that is not known."""
    paths = homes.get(site.kernel, set())
    home = site.path if site.language in PYTHON_LANGUAGES and site.path in paths else ""
    return site.kernel, site.language, home


def loose_configs(ctx: Context, changes: list[KernelChange]) -> list[KernelChange]:
    """``triton.Config`` entries changed outside any kernel the diff's lines show (a config list
    in a helper or a module-level name, read without the whole file): still a tuning change."""
    from bot.analysis.scan.triton_lines import config_calls

    out = list(changes)
    same = lists_moved_into_builders(ctx)
    for f in ctx.files:
        complete = all(s is None or s.complete for s in (f.old, f.new))
        if complete or source_kind(f.patch.path) != "python":
            continue
        old_ks = f.old.kernels if f.old else ()
        new_ks = f.new.kernels if f.new else ()
        moved = same.get(f.patch.path, (set(), set()))
        removed = {n for n, _ in f.patch.removed_lines()} - moved[0]
        added = {n for n, _ in f.patch.added_lines()} - moved[1]

        def touched(calls, changed, kernels):
            return [
                cfg
                for first, last, cfg in calls
                if any(first <= n <= last for n in changed)
                and not any(k.line_start <= first <= k.line_end for k in kernels)
            ]

        before = touched(
            config_calls([x for h in f.patch.hunks for x in h.old_lines()]), removed, old_ks
        )
        after = touched(
            config_calls([x for h in f.patch.hunks for x in h.new_lines()]), added, new_ks
        )
        if before == after:
            continue
        names = sorted({k.name for k in (*old_ks, *new_ks)})
        name = names[0] if len(names) == 1 else f"autotune configs in {f.patch.path}"
        note = "only the changed triton.Config entries are in the diff: old/new list those"
        existing = next((c for c in out if c.name == name and c.path == f.patch.path), None)
        if existing is not None:
            if existing.kind in ("new", "deleted"):
                continue
            out[out.index(existing)] = existing.model_copy(
                update={
                    "configs_old": before,
                    "configs_new": after,
                    "notes": [*existing.notes, note],
                }
            )
            continue
        if len(names) != 1:
            note += "; the kernel they tune is outside the diff's lines"
        out.append(
            KernelChange(
                kind="tuning",
                name=name,
                language="triton",
                path=f.patch.path,
                configs_old=before,
                configs_new=after,
                notes=[note],
            )
        )
    return out


def moved_kernels(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """A kernel deleted from one file and added to another (same name and language) moved."""
    deleted = {(c.name, c.language): c for c in changes if c.kind == "deleted"}
    out = []
    drop = set()
    for c in changes:
        key = (c.name, c.language)
        if c.kind != "new" or key not in deleted or deleted[key].path == c.path:
            continue
        gone = deleted[key]
        old_k = _find_kernel(ctx, gone.path, c.name, "old")
        new_k = _find_kernel(ctx, c.path, c.name, "new")
        if old_k is None or new_k is None:
            continue
        kind, notes, t_old, t_new, *_ = compare_kernels(old_k, new_k, None)
        drop.add(id(gone))
        drop.add(id(c))
        out.append(
            c.model_copy(
                update={
                    "kind": kind or "moved",
                    "old": old_k.ref(),
                    "configs_old": list(old_k.configs) if old_k.configs is not None else None,
                    "configs_old_computed": old_k.configs_computed,
                    "tuning_old": t_old,
                    "tuning_new": t_new,
                    "moved_from": gone.path,
                    "notes": [*notes, f"moved from {gone.path}"],
                }
            )
        )
    kept = [c for c in changes if id(c) not in drop]
    return _renamed(kept, ctx) + out


def _body_text(ctx: Context, c: KernelChange, side: str) -> str | None:
    ref = c.old if side == "old" else c.new
    texts = ctx.texts_old if side == "old" else ctx.texts_new
    text = texts.get(ref.path) if ref is not None else None
    if text is None or ref is None:
        return None
    k = _find_kernel(ctx, ref.path, ref.name, side)
    if k is None or k.from_context:
        return None
    return " ".join("\n".join(text.split("\n")[k.body_start - 1 : k.body_end]).split())


def _renamed(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """A kernel deleted and another added with the same body, once each: renamed (``moved``)."""
    gone: dict[tuple[str, str], list[KernelChange]] = {}
    for c in changes:
        body = _body_text(ctx, c, "old") if c.kind == "deleted" else None
        if body:
            gone.setdefault((c.language, body), []).append(c)
    if not gone:
        return changes
    drop: set[int] = set()
    out = []
    for c in changes:
        body = _body_text(ctx, c, "new") if c.kind == "new" else None
        match = gone.get((c.language, body or ""), [])
        if len(match) != 1 or id(match[0]) in drop:
            continue
        old = match[0]
        drop |= {id(old), id(c)}
        where = "" if old.path == c.path else f" in {old.path}"
        out.append(
            c.model_copy(
                update={
                    "kind": "moved",
                    "old": old.old,
                    "configs_old": old.configs_old,
                    "configs_old_computed": old.configs_old_computed,
                    "moved_from": old.path,
                    "notes": [*c.notes, f"renamed from {old.name}{where}; same body"],
                }
            )
        )
    kept = [c for c in changes if id(c) not in drop]
    return _renamed_and_changed(kept, ctx) + out


def _renamed_and_changed(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """A kernel deleted and another added in one file where each host function that launched
    the deleted one launches the new one instead, once each: the kernel renamed with its body
    changed (``body``, under the new name): the launches it took over say it is the same
    kernel, whatever its body now reads."""
    gone = [c for c in changes if c.kind == "deleted" and c.old is not None]
    came = [c for c in changes if c.kind == "new" and c.new is not None]
    if not gone or not came:
        return changes

    def hosts(launches: list[LaunchSite], name: str, path: str) -> frozenset[str]:
        return frozenset(
            x.wrapper for x in launches if x.kernel == name and x.path == path and x.wrapper
        )

    old_launches, new_launches = ctx.old_launches(), ctx.new_launches()
    pairs = [
        (old, new)
        for old in gone
        for new in came
        if old.path == new.path
        and old.language == new.language
        and (launched := hosts(old_launches, old.name, old.path))
        and launched == hosts(new_launches, new.name, new.path)
        and not hosts(new_launches, old.name, old.path)
    ]
    once = [
        (old, new)
        for old, new in pairs
        if sum(o is old for o, _ in pairs) == 1 and sum(n is new for _, n in pairs) == 1
    ]
    if not once:
        return changes
    drop = {id(c) for pair in once for c in pair}
    out = [
        new.model_copy(
            update={
                "kind": "body",
                "old": old.old,
                "configs_old": old.configs_old,
                "configs_old_computed": old.configs_old_computed,
                "notes": [*new.notes, f"renamed from {old.name}; its body changed too"],
            }
        )
        for old, new in once
    ]
    return [c for c in changes if id(c) not in drop] + out


def _find_kernel(ctx: Context, path: str, name: str, side: str) -> KernelDef | None:
    for f in ctx.files:
        scan = f.old if side == "old" else f.new
        if scan is not None and scan.path == path:
            return scan.kernel(name)
    return None
