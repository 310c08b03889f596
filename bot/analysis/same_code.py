"""Code that reads differently and runs the same: the forms two versions of a kernel are put in
before they are compared, so that a change of text alone is not a change of the kernel.

Python (a kernel's function, before its locals are given canonical names):

- a local that is assigned and never read, from a value that has no effect of its own (no call
  that stores, prints, synchronises or runs a function of the repository), is not there;
- ``if not C: A else: B`` is ``if C: B else: A``; ``if C: A`` followed by ``if not C: B`` (``A``
  not assigning a name ``C`` reads, ``C`` made of names, constants and operators) is ``if C: A else: B``;
- ``if C: x = a else: x = b`` is ``x = a if C else b``;
- assignments without effects that share no name (neither writes what the other reads or
  writes) are in one order, whatever order they are written in (``_ordered``);
- a kernel's parameter that its body never reads is not there, nor the argument its launches
  in the same file pass for it (``without_unread_parameters``): removing it compiles the same
  kernel (an autotune key or a heuristic naming it is compared on its own).

Python host code: an einops pattern with its axes renamed throughout is the same operation
(``with_einops_axes_named_in_order``).

The tree given is never changed: a statement list that changes is a new list, a statement that
changes a shallow copy, everything else shared.

C++ (a whole file): the file as the compiler sees it under each configuration of the macros
its ``#if`` lines test (three at most: eight configurations; an expression other than a
macro's name is one unknown), with the function-like
macros it defines expanded, comments and blank statements dropped, ``and`` / ``or`` / ``not``
read as ``&&`` / ``||`` / ``!``, and PyTorch's C++ spellings of one meaning read as one
(``AT_DISPATCH_...(x.type(), ...)`` as ``x.scalar_type()``, ``x.data<T>()`` as
``x.data_ptr<T>()``, ``AT_CHECK`` as ``TORCH_CHECK``, ``torch::optional`` as ``std::optional``,
``c10::cuda::MaybeSetDevice`` as ``cudaSetDevice``: the same scalar type, pointer, check, type
and device).
Two versions of a file that expand to the same tokens under every configuration are the same
program.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterator

from bot.analysis.scan.cpp import _balanced, _split_args
from bot.analysis.text import walk

# ------------------------------------------------------------------------------ Python

# The last name of a call with an effect beyond its value (a store, an atomic, a print or
# assert, a barrier, inline assembly): an assignment of such a call is kept even if unread.
_EFFECT = re.compile(r"(?i)atomic|store|print|assert|barrier|asm|debug|sync|wait|fence|signal")
_PURE_BUILTINS = frozenset({"min", "max", "abs", "int", "float", "bool", "len", "range"})
_ROUNDS = 4
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def normal_function(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef:
    """``func`` in the normal form above (a new node when anything changed, else ``func``)."""
    params = {a.arg for a in walk(func.args) if isinstance(a, ast.arg)}
    body = func.body
    for _ in range(_ROUNDS):
        loads = Counter(
            n.id for s in body for n in walk(s) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)
        )  # fmt: skip
        dead = _Dead(params, loads)
        pruned = dead.block(body)
        if not dead.removed:
            break
        body = pruned
    local = frozenset(_stored(body)) - params
    body = _ordered(_ifs(body), local)
    if body is func.body:
        return func  # type: ignore[return-value]
    out = copy.copy(func)
    out.body = body
    return out  # type: ignore[return-value]


@functools.lru_cache(maxsize=64)  # trees are shared (``parse_python`` caches them)
def without_unread_parameters(tree: ast.Module) -> ast.Module:
    """``tree`` with each jit function's unread parameters dropped, from its signature and from
    the ``k[grid](...)`` launches of the module that pass them (``tree`` itself when none is;
    else a copy, as ``tree`` may be shared). Jit functions of the module's level, inside ``if`` /
    ``try`` / ``with`` blocks too; only parameters without a default (their position is then the
    same in every launch), and launches without ``*args`` / ``**kwargs``."""
    unread: dict[str, tuple[set[int], set[str]] | None] = {}  # None: defined twice, apart
    for node in _module_functions(tree.body):
        if node.args.vararg or node.args.kwarg:
            continue
        if not any("jit" in ast.unparse(d) for d in node.decorator_list):
            continue
        read = {n.id for s in node.body for n in walk(s) if isinstance(n, ast.Name)}
        positional = [*node.args.posonlyargs, *node.args.args]
        plain = len(positional) - len(node.args.defaults)
        at = {i for i, a in enumerate(positional[:plain]) if a.arg not in read}
        found = (at, {positional[i].arg for i in at}) if at else None
        unread[node.name] = found if unread.get(node.name, found) == found else None
    drop = {name: found for name, found in unread.items() if found is not None}
    if not drop:
        return tree
    funcs = {id(f) for f in _module_functions(tree.body) if f.name in drop}
    out, copies = _copied_along(
        tree, lambda sub: id(sub) in funcs or _launch_of(sub, drop) is not None
    )
    for new in copies.values():
        if isinstance(new, (ast.FunctionDef, ast.AsyncFunctionDef)) and new.name in drop:
            names = drop[new.name][1]
            new.args = copy.copy(new.args)
            new.args.posonlyargs = [a for a in new.args.posonlyargs if a.arg not in names]
            new.args.args = [a for a in new.args.args if a.arg not in names]
        elif (kernel := _launch_of(new, drop)) is not None:
            assert isinstance(new, ast.Call)
            at, names = drop[kernel]
            new.args = [a for i, a in enumerate(new.args) if i not in at]
            new.keywords = [k for k in new.keywords if k.arg not in names]
    return out


_EINOPS = {"rearrange": 1, "repeat": 1, "reduce": 1}  # function -> its pattern's position
_AXIS_TOKEN = re.compile(r"\.\.\.|->|[()]|[A-Za-z_]\w*|\d+|\S")


def with_einops_axes_named_in_order(tree: ast.Module) -> ast.Module:
    """``tree`` with each einops pattern (``rearrange`` / ``repeat`` / ``reduce`` of ``einops``,
    resolved through the module's imports) written with its axis names renamed in the order they
    first appear (``a0``, ``a1``...), the keyword sizes that name axes (``h=heads``) with them:
    ``'b n h d -> b h n d'`` and ``'b h n d -> b n h d'`` both swap axes 1 and 2, one operation.
    ``tree`` itself when no pattern reads otherwise; else a copy, as ``tree`` may be shared."""
    einops = _einops_names(tree)
    found = [(n, r) for n in walk(tree) if (r := _renamed(n, einops)) is not None] if einops else []
    if not found:
        return tree
    held = {id(n) for n, _ in found}  # the calls, and the keywords of theirs that change
    for node, (at, _, names) in found:
        assert isinstance(node, ast.Call)
        held |= {
            id(k) for k in node.keywords if k.arg in names or (at is None and k.arg == "pattern")
        }
    tree, copies = _copied_along(tree, lambda sub: id(sub) in held)
    for node, (at, pattern, names) in found:
        new = copies[id(node)]
        assert isinstance(new, ast.Call)
        if at is None:
            next(k for k in new.keywords if k.arg == "pattern").value = ast.Constant(pattern)
        else:
            new.args[at] = ast.Constant(pattern)
        for k in new.keywords:
            if k.arg in names:
                k.arg = names[k.arg]
    return tree


def _einops_names(tree: ast.Module) -> dict[str, str]:
    """Local spellings of einops' pattern functions: ``rearrange``, ``einops.rearrange``."""
    out: dict[str, str] = {}
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "einops" and node.level == 0:
            for a in node.names:
                if a.name in _EINOPS:
                    out[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "einops":
                    for f in _EINOPS:
                        out[f"{a.asname or a.name}.{f}"] = f
    return out


def _renamed(
    node: ast.AST, einops: dict[str, str]
) -> tuple[int | None, str, dict[str, str]] | None:
    """``(position or None for a keyword, the pattern renamed, old axis name -> new)`` of an
    einops call whose pattern reads otherwise renamed, or None."""
    if not isinstance(node, ast.Call):
        return None
    func = ast.unparse(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else ""
    if func not in einops:
        return None
    at: int | None = _EINOPS[einops[func]]
    value: ast.expr | None = None
    if at is not None and len(node.args) > at:
        value = node.args[at]
    else:
        at, value = None, next((k.value for k in node.keywords if k.arg == "pattern"), None)
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    tokens = _AXIS_TOKEN.findall(value.value)
    if "->" not in tokens:
        return None
    names: dict[str, str] = {}
    for t in tokens:
        if t[0].isalpha() or t[0] == "_":
            names.setdefault(t, f"a{len(names)}")
    pattern = " ".join(names.get(t, t) for t in tokens)
    return (at, pattern, names) if pattern != value.value else None


def _launch_of(node: ast.AST, drop: dict[str, tuple[set[int], set[str]]]) -> str | None:
    """The kernel of ``drop`` that ``node`` launches (``k[grid](...)``, no ``*args`` or
    ``**kwargs``), else ``None``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in drop
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
    ):
        return node.func.value.id
    return None


def _copied_along(
    tree: ast.Module, changed: Callable[[ast.AST], bool]
) -> tuple[ast.Module, dict[int, ast.AST]]:
    """``tree`` with the nodes ``changed`` is true of, and every node that holds one, copied
    (shallowly, their lists anew), all else shared; and the copies, by the ``id`` of the node
    each copies. A copy is new: change it, never the nodes it shares with ``tree``."""
    parent: dict[int, ast.AST] = {}
    found: list[ast.AST] = []
    for sub in walk(tree):
        for child in ast.iter_child_nodes(sub):
            parent[id(child)] = sub
        if changed(sub):
            found.append(sub)
    on_path: set[int] = set()  # the changed nodes and what holds them: copied, the rest shared
    for held in found:
        while id(held) not in on_path:
            on_path.add(id(held))
            if id(held) not in parent:
                break
            held = parent[id(held)]
    copies: dict[int, ast.AST] = {}
    out = _copy_paths(tree, on_path, copies)
    assert isinstance(out, ast.Module)
    return out, copies


def _copy_paths(node: ast.AST, on_path: set[int], copies: dict[int, ast.AST]) -> ast.AST:
    """``node`` with the nodes in ``on_path`` (by ``id``) copied, shallowly and with their lists
    anew, and every other node shared; the copies are added to ``copies`` by the copied node's
    ``id``."""
    if id(node) not in on_path:
        return node
    new = copy.copy(node)
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            items = [
                _copy_paths(v, on_path, copies) if isinstance(v, ast.AST) else v for v in value
            ]
            setattr(new, name, items)
        elif isinstance(value, ast.AST):
            setattr(new, name, _copy_paths(value, on_path, copies))
    copies[id(node)] = new
    return new


def _module_functions(body: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions defined at a module's level, in its ``if`` / ``try`` / ``with`` blocks
    too (not those inside functions or classes)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody"):
                yield from _module_functions(getattr(stmt, part, []) or [])
            for handler in getattr(stmt, "handlers", []):
                yield from _module_functions(handler.body)


class _Dead:
    """Assignments of unread locals from values without effects, removed from a block."""

    def __init__(self, params: set[str], loads: Counter[str]) -> None:
        self.params = params
        self.loads = loads
        self.removed = 0

    def _unread(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            return False
        names = [t for t in targets if isinstance(t, ast.Name)]
        if len(names) != len(targets):
            return False
        if any(t.id in self.params or self.loads[t.id] for t in names):
            return False
        return _without_effects(value)

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        changed = False
        for s in stmts:
            if self._unread(s):
                self.removed += 1
                changed = True
                continue
            inner = _with_blocks(s, self.block)
            changed |= inner is not s
            out.append(inner)
        if not changed:
            return stmts
        return out or [ast.Pass()]


def _without_effects(value: ast.expr) -> bool:
    for n in walk(value):
        if isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        if isinstance(func, ast.Name):
            if func.id not in _PURE_BUILTINS:
                return False  # a function of the repository may store
            continue
        if not isinstance(func, ast.Attribute) or _EFFECT.search(func.attr):
            return False
    return True


def _with_blocks(stmt: ast.stmt, fix: Callable[[list[ast.stmt]], list[ast.stmt]]) -> ast.stmt:
    """``stmt`` with ``fix`` applied to each statement list it holds (a copy if any changed)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt  # a nested definition keeps its own locals
    fields = {}
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            fixed = fix(block)
            if fixed is not block:
                fields[name] = fixed
    handlers = getattr(stmt, "handlers", None)
    new_handlers: list[ast.ExceptHandler] | None = None
    if handlers:
        fixed_handlers = []
        for h in handlers:
            fixed = fix(h.body)
            if fixed is not h.body:
                h = copy.copy(h)
                h.body = fixed
            fixed_handlers.append(h)
        if any(a is not b for a, b in zip(fixed_handlers, handlers, strict=True)):
            new_handlers = fixed_handlers
    if not fields and new_handlers is None:
        return stmt
    out = copy.copy(stmt)
    for name, block in fields.items():
        setattr(out, name, block)
    if new_handlers is not None:
        out.handlers = new_handlers  # type: ignore[attr-defined]
    return out


def _movable(s: ast.stmt) -> tuple[set[str], set[str]] | None:
    """``(reads, writes)`` of an assignment to plain names from a value without effects (one
    that may be moved past another it shares no name with), else None."""
    if isinstance(s, ast.Assign):
        targets, value = s.targets, s.value
    elif isinstance(s, (ast.AugAssign, ast.AnnAssign)) and s.value is not None:
        targets, value = [s.target], s.value
    else:
        return None
    if not all(isinstance(t, ast.Name) for t in targets) or not _without_effects(value):
        return None
    writes = {t.id for t in targets if isinstance(t, ast.Name)}
    reads = {n.id for n in walk(value) if isinstance(n, ast.Name)}
    if isinstance(s, ast.AugAssign):
        reads |= writes
    return reads, writes


def _ordered(stmts: list[ast.stmt], local: frozenset[str]) -> list[ast.stmt]:
    """Each run of movable assignments (``_movable``) in one order: among those whose every
    predecessor it depends on (one writes a name the other reads or writes) is placed, the one
    whose text sorts first, the function's locals (``local``) written alike so that the order
    does not change with a local's name. ``acc += tl.dot(x, y)`` moved below ``x_ptrs +=
    BLOCK`` (which it does not read) is the same program, and reads the same."""
    out: list[ast.stmt] = []
    changed = False
    run: list[tuple[ast.stmt, set[str], set[str]]] = []

    def flush() -> None:
        nonlocal changed
        if len(run) > 1:
            placed = _sorted_run(run, local)
            changed |= any(a is not b for a, (b, _, _) in zip(placed, run, strict=True))
            out.extend(placed)
        else:
            out.extend(x for x, _, _ in run)
        run.clear()

    for stmt in stmts:
        inner = _with_blocks(stmt, lambda block: _ordered(block, local))
        changed |= inner is not stmt
        rw = _movable(inner)
        if rw is None:
            flush()
            out.append(inner)
        else:
            run.append((inner, *rw))
    flush()
    return out if changed else stmts


def _sorted_run(
    run: list[tuple[ast.stmt, set[str], set[str]]], local: frozenset[str]
) -> list[ast.stmt]:
    after: list[set[int]] = [set() for _ in run]  # i -> the statements that must follow it
    need = [0] * len(run)
    for i, (_, r1, w1) in enumerate(run):
        for j in range(i + 1, len(run)):
            _, r2, w2 = run[j]
            if w1 & (r2 | w2) or w2 & r1:
                after[i].add(j)
                need[j] += 1
    texts = [
        _IDENTIFIER.sub(lambda m: "_" if m.group() in local else m.group(), ast.unparse(x))
        for x, _, _ in run
    ]
    ready = [i for i in range(len(run)) if need[i] == 0]
    placed: list[ast.stmt] = []
    while ready:
        i = min(ready, key=lambda k: (texts[k], k))
        ready.remove(i)
        placed.append(run[i][0])
        for j in after[i]:
            need[j] -= 1
            if need[j] == 0:
                ready.append(j)
    return placed


def _negated(test: ast.expr) -> ast.expr | None:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return None


def _stored(stmts: list[ast.stmt]) -> set[str]:
    return {
        n.id for s in stmts for n in walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }  # fmt: skip


_PLAIN = (ast.Name, ast.Constant, ast.BoolOp, ast.UnaryOp, ast.Compare, ast.BinOp, ast.Load)
_OPERATOR = (ast.boolop, ast.unaryop, ast.cmpop, ast.operator)


def _plain_test(expr: ast.expr) -> bool:
    """A test made of names, constants and operators only (no call, attribute or index that
    the first branch could change without assigning a name)."""
    return all(isinstance(n, (*_PLAIN, *_OPERATOR)) for n in walk(expr))


def _ifs(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    changed = False
    for s in stmts:
        inner = _with_blocks(s, _ifs)
        changed |= inner is not s
        s = inner
        if isinstance(s, ast.If):
            merged = _merge(out[-1], s) if out else None
            if merged is not None:
                out[-1] = _canonical_if(merged)
                changed = True
                continue
            canonical = _canonical_if(s)
            changed |= canonical is not s
            s = canonical
        out.append(s)
    return out if changed else stmts


def _merge(first: ast.stmt, second: ast.If) -> ast.If | None:
    """``if C: A`` then ``if not C: B`` (either way round) as one ``if`` / ``else``."""
    if not isinstance(first, ast.If) or first.orelse or second.orelse:
        return None
    a, b = first.test, second.test
    pairs = ((a, _negated(b)), (_negated(a), b))
    for plain, negated in pairs:
        if plain is None or negated is None:
            continue
        if ast.dump(plain) != ast.dump(negated) or not _plain_test(plain):
            continue
        read = {n.id for n in walk(plain) if isinstance(n, ast.Name)}
        if read & _stored(first.body):
            return None
        merged = copy.copy(first)
        merged.orelse = second.body
        return merged
    return None


def _canonical_if(s: ast.If) -> ast.stmt:
    out: ast.stmt = s
    inner = _negated(s.test)
    if inner is not None and s.orelse:
        flipped = copy.copy(s)
        flipped.test, flipped.body, flipped.orelse = inner, s.orelse, s.body
        out = flipped
    assert isinstance(out, ast.If)
    one = _single_assign(out.body)
    other = _single_assign(out.orelse)
    if one is not None and other is not None and one[0] == other[0]:
        value = ast.IfExp(test=out.test, body=one[1], orelse=other[1])
        return ast.Assign(targets=[ast.Name(id=one[0], ctx=ast.Store())], value=value, lineno=0)
    return out


def _single_assign(stmts: list[ast.stmt]) -> tuple[str, ast.expr] | None:
    if len(stmts) != 1:
        return None
    s = stmts[0]
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id, s.value
    return None


_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)(.+)$")
_WORD = re.compile(r"[A-Za-z_]\w*")


def unread_assignments(removed: list[str], seen: list[str]) -> bool:
    """What the diff's lines show of an unread local removed: ``removed`` (lines of one kernel,
    nothing added) all assign a local from a value without effects, and no other line of the
    kernel the diff shows reads it. Whether a line the diff does not show reads it is unknown,
    so this is not "no change" either: the kernel is left to be named unclassified."""
    if not removed:
        return False
    names = set()
    for line in removed:
        m = _ASSIGNMENT.match(line)
        if m is None or m.group(2).rstrip().endswith(","):  # ``num_warps=4,``: a parameter
            return False
        value = parse_expression(m.group(2))
        if value is None or not _without_effects(value):
            return False
        names.add(m.group(1))
    others = list(seen)
    for line in removed:  # the removed lines themselves are among those seen
        if line in others:
            others.remove(line)
    return not any(names & set(_WORD.findall(line)) for line in others)


def parse_expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


# ------------------------------------------------------------------------------ C++

_COMMENT_OR_TEXT = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S
)
_CONDITION = re.compile(r"^\s*#\s*(ifdef|ifndef|if|elif)\b(.*)$")
_SIMPLE = re.compile(r"^\s*(!)?\s*(?:defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)|(\w+))\s*$")
_DEFINE_FN = re.compile(r"^\s*#\s*define\s+(\w+)\(([^)]*)\)[ \t]*(.*)$")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)")
_ALTERNATIVE = {"and": "&&", "or": "||", "not": "!"}
_ALTERNATIVE_WORD = re.compile(r"\b(and|or|not)\b")
_EMPTY_STATEMENT = re.compile(r"(?<=[;{}])\s*;")
# PyTorch C++ API spellings of the same meaning (mostly deprecated ones and their successors):
# (pattern, the one spelling). A dispatch macro's type argument (``AT_DISPATCH_FLOATING_TYPES``,
# or a project's own ``AT_DISPATCHER`` defined as one) reads the scalar type either way.
_SAME_API = (
    (re.compile(r"\.type\(\)\s*\.\s*(?:scalarType|scalar_type)\(\)"), ".scalar_type()"),
    (re.compile(r"(\b\w*DISPATCH\w*\s*\(\s*[^,()]*?)\.type\(\)(?=\s*,)"), r"\1.scalar_type()"),
    (re.compile(r"\.data\s*<"), ".data_ptr<"),
    (re.compile(r"\bAT_CHECK\s*\("), "TORCH_CHECK("),
    # ``torch::optional`` / ``c10::optional`` are ``std::optional`` in the PyTorch versions
    # that have it (and ``nullopt``, ``make_optional`` with them): the same type
    (re.compile(r"\b(?:torch|c10|at)::(optional|nullopt|make_optional)\b"), r"std::\1"),
    # ``c10::cuda::MaybeSetDevice(d)`` makes ``d`` the device the next launch runs on, as
    # ``cudaSetDevice(d)`` does (it defers only the creation of a context on ``d``)
    (re.compile(r"\b(?:c10::cuda::)?MaybeSetDevice\s*\("), "cudaSetDevice("),
)
_MAX_TESTED = 3
_MAX_CHARS = 400_000


def _strip_comments(text: str) -> str:
    return _COMMENT_OR_TEXT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)


def _joined_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined (a multi-line ``#define`` is one line)."""
    return text.replace("\\\n", " ").split("\n")


def _key(kind: str, rest: str) -> str | None:
    """What a conditional line tests: a macro's name (``#ifdef X``, ``#if defined(X)``, ``#if
    !X``), a constant (``#if 0``) or, for any other expression, its text, read as one unknown
    that is either true or false (the same text is the same unknown in both versions)."""
    rest = rest.strip()
    if kind in ("ifdef", "ifndef"):
        return rest.split()[0] if rest else None
    simple = _SIMPLE.match(rest)
    if simple is not None:
        return simple.group(2) or simple.group(3) or simple.group(4)
    return "expr:" + "".join(rest.split()) if rest else None


def _tested(lines: list[str]) -> list[str] | None:
    """The unknowns the file's conditional lines test (constants left out), or None when one
    of them has no condition."""
    names: list[str] = []
    for line in lines:
        m = _CONDITION.match(line)
        if m is None:
            continue
        name = _key(m.group(1), m.group(2))
        if not name:
            return None
        if not name.isdigit() and name not in names:
            names.append(name)
    return names


def _truth(kind: str, rest: str, defined: set[str]) -> bool:
    name = _key(kind, rest) or "0"
    value = bool(int(name)) if name.isdigit() else name in defined
    simple = _SIMPLE.match(rest.strip())
    negated = kind == "ifndef" or bool(simple is not None and simple.group(1))
    return value != negated


def _expand_calls(line: str, macros: dict[str, tuple[list[str], str]]) -> str:
    for _ in range(_ROUNDS):
        found = False
        for name, (params, body) in macros.items():
            if name not in line:
                continue
            start = 0
            while True:
                m = _invocation(name).search(line, start)
                if m is None:
                    break
                close = _balanced(line, m.end() - 1)
                if close is None:
                    break
                args = _split_args(line[m.end() : close])
                value = _substitute(body, dict(zip(params, args, strict=False)))
                line = line[: m.start()] + value + line[close + 1 :]
                start = m.start() + len(value)
                found = True
        if not found:
            break
    return line


@functools.lru_cache(maxsize=256)
def _invocation(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}\s*\(")


def _substitute(body: str, values: dict[str, str]) -> str:
    if not values:
        return body
    names = re.compile(r"\b(" + "|".join(re.escape(p) for p in values) + r")\b")
    return names.sub(lambda m: values[m.group(1)], body)


def _expansions(lines: list[str], tested: list[str], whole: bool = True) -> Iterator[str]:
    """The file's tokens under each configuration of the names ``tested``; ``whole`` False
    (lines of a diff's hunks, the macros' uses possibly outside them): a function-like macro's
    definition is kept as written as well as expanded where used."""

    def one(defined: set[str]) -> str:
        macros: dict[str, tuple[list[str], str]] = {}
        active = [True]
        taken = [True]
        kept: list[str] = []
        for line in lines:
            directive = _DIRECTIVE.match(line)
            word = directive.group(1) if directive else ""
            cond = _CONDITION.match(line)
            if word in ("ifdef", "ifndef", "if") and cond:
                truth = active[-1] and _truth(cond.group(1), cond.group(2), defined)
                active.append(truth)
                taken.append(truth)
            elif word == "elif" and cond:
                truth = active[-2] and not taken[-1] and _truth("if", cond.group(2), defined)
                active[-1] = truth
                taken[-1] = taken[-1] or truth
            elif word == "else" and len(active) > 1:
                active[-1] = active[-2] and not taken[-1]
                taken[-1] = True
            elif word == "endif" and len(active) > 1:
                active.pop()
                taken.pop()
            elif not active[-1]:
                continue
            elif word == "define" and (fn := _DEFINE_FN.match(line)):
                params = [p.strip() for p in fn.group(2).split(",") if p.strip()]
                macros[fn.group(1)] = (params, fn.group(3).strip())
                if not whole:
                    kept.append(line)
            elif not word:
                kept.append(_expand_calls(line, macros) if macros else line)
            else:
                kept.append(line)  # includes, object-like defines, pragmas: as written
        code = " ".join(" ".join(kept).split())
        code = _ALTERNATIVE_WORD.sub(lambda m: _ALTERNATIVE[m.group(1)], code)
        for old, new in _SAME_API:
            code = old.sub(new, code)
        return "".join(_EMPTY_STATEMENT.sub("", code).split())

    configurations = itertools.product((False, True), repeat=len(tested))
    return (one({n for n, on in zip(tested, c, strict=True) if on}) for c in configurations)


def same_cpp_program(old: str, new: str, *, whole: bool = True) -> bool:
    """``old`` and ``new`` (a C++ file's whole text; ``whole`` False: the lines of its hunks)
    expand to the same tokens under every configuration of the macros either tests."""
    if old == new:
        return True
    if max(len(old), len(new)) > _MAX_CHARS:
        return False
    old_lines, new_lines = (_joined_lines(_strip_comments(t)) for t in (old, new))
    old_tested, new_tested = _tested(old_lines), _tested(new_lines)
    if old_tested is None or new_tested is None:
        return False  # a test not evaluated here: the texts differ, so they differ
    tested = list(dict.fromkeys([*old_tested, *new_tested]))
    if len(tested) > _MAX_TESTED:
        return False
    return all(
        a == b
        for a, b in zip(
            _expansions(old_lines, tested, whole),
            _expansions(new_lines, tested, whole),
            strict=True,
        )
    )
