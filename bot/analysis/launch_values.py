"""What a launch passes, as values: each grid and argument expression with the host function's
own assignments substituted, under the tests that reach it.

``BLOCK_SIZE_K=BLOCK_SIZE_K_X`` where ``BLOCK_SIZE_K_X`` is ``64 if K <= 64 else 32`` and
``BLOCK_SIZE_K=BLOCK_SIZE_K`` where ``BLOCK_SIZE = 64 if K <= 64 else 32; BLOCK_SIZE_K =
BLOCK_SIZE`` launch the same values from the same inputs; as text they differ. A function is read
once, top to bottom: an assignment binds its name to its value with the names known so far
substituted, an ``if`` binds each name it assigns on either side to ``a if test else b``, a name
assigned in a loop or bound any other way stays opaque (``name__opaque<k>``), and a launch records its
grid, arguments and launch options so substituted, with the tests around it and the calls before
it that may change an argument in place (``out.zero_()``, ``fill(out)``). A launch's values are
read on its own path: a key set on a dict written out (``kwargs["num_warps"] = w``) is that
dict's key, a ``**kwargs`` of such a dict its keywords (in name order: they are passed by name),
and what the tests around the launch decide is their answer there (``16384 if is_distribution
else 32768`` is 32768 under ``if target_format == TargetFormat.labels`` where
``is_distribution = target_format != TargetFormat.labels``). Two launches with the same record
launch the same values. A function whose record grows past a bound gets none (the
launch is then compared as text, as before). The function's parameter defaults are part of each
record (what a caller omitting them hands it); for calls through a name (``calls``) only those
the call's values read, and not where a default only tests which of two values that are no
literals is handed on (``k.chunk(n)[rank] if shard_kv_seq else k``: each path hands what it
did, the default only picks the path, as a caller passing it does).
"""

from __future__ import annotations

import ast
import functools

from bot.analysis.text import digest, is_tuning_name, walk

Func = ast.FunctionDef | ast.AsyncFunctionDef
_MAX_TEXT = 4000  # characters of one substituted expression
_Env = dict[str, str]  # name -> its value as text


class _TooBig(Exception):
    pass


def _subst(expr: ast.expr, env: _Env) -> str:
    """``expr`` as text with each name ``env`` knows written as its value (in parentheses). The
    names are swapped in place and put back, which costs no copy of the tree."""
    swapped = []
    for n in walk(expr):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in env:
            swapped.append((n, n.id))
            n.id = f"({env[n.id]})"
    try:
        text = ast.unparse(expr)
    finally:
        for n, name in swapped:
            n.id = name
    return _norm(text)


def _norm(text: str) -> str:
    """``text`` parsed and written again: ``((64) if ((k) <= 64) else (32))`` and ``64 if k <=
    64 else 32`` read the same."""
    if len(text) > _MAX_TEXT:
        raise _TooBig
    return _normal(text)


@functools.lru_cache(maxsize=4096)
def _normal(text: str) -> str:
    """``_norm`` of a text within bounds, once per text: a file's two sides and its launches
    of one host function substitute the same expressions again and again."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return text
    if ".to(" in text:
        tree = _PlacedAtMaking().visit(tree)
    return ast.unparse(tree)


_PLACEMENT = {"device", "non_blocking"}


def _is_device(expr: ast.expr) -> bool:
    """A device as ``.to`` takes it by position: ``x.device``, ``device``, ``"cuda"``."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.split(":")[0] in ("cuda", "xpu", "npu")
    return ast.unparse(expr).rsplit(".", 1)[-1] in ("device", "dev")


class _PlacedAtMaking(ast.NodeTransformer):
    """``torch.tensor(x, dtype=d).to(device=D, non_blocking=True)`` as ``torch.tensor(x,
    dtype=d, device=D)``: a tensor made on the host and copied to the device holds the values a
    tensor made there holds, and the copy is ordered before the launch on the stream, so where
    it was made is no launch change (nor is ``pin_memory``, a host buffer's kind). Only a ``.to``
    of a call that names no device, given a device alone (by keyword or position) and
    ``non_blocking``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "to"
            and isinstance(func.value, ast.Call)
            and len(node.args) <= 1
            and all(k.arg in _PLACEMENT for k in node.keywords)
        ):
            return node
        made = func.value
        device = [k.value for k in node.keywords if k.arg == "device"] + list(node.args)
        if len(device) != 1 or (node.args and not _is_device(node.args[0])):
            return node
        if any(k.arg in (None, "device") for k in made.keywords):
            return node
        return ast.Call(
            func=made.func,
            args=made.args,
            keywords=[
                *(k for k in made.keywords if k.arg != "pin_memory"),
                ast.keyword(arg="device", value=device[0]),
            ],
        )


@functools.lru_cache(maxsize=4096)
def _values_read(text: str) -> frozenset[str]:
    """The names ``text`` reads as values: all but those read only by the test of a conditional
    expression between two values that are no literals (``k_shard if shard_kv_seq else k``:
    which of the function's own tensors is handed on, the same on each path; ``64 if fast
    else 32`` is a value of its own, and ``fast`` counts)."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return frozenset(text.split())
    out: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.IfExp) and not (_literal(node.body) or _literal(node.orelse)):
            todo += [node.body, node.orelse]
            continue
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(out)


def _literal(expr: ast.expr) -> bool:
    """Whether ``expr`` holds no name: a constant, or one computed from constants."""
    return not any(isinstance(n, ast.Name) for n in walk(expr))


def _keyed(target: ast.expr, env: _Env, value: str) -> tuple[str, str] | None:
    """``d["key"] = value`` where ``d`` holds a dict written out with string keys: ``(d, the
    dict with that key set)``; else None."""
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
    ):
        return None
    held = _dict(env.get(target.value.id, ""))
    if held is None:
        return None
    held[target.slice.value] = value
    body = ", ".join(f"{k!r}: ({v})" for k, v in held.items())
    return target.value.id, _norm("{" + body + "}")


def _dict(text: str) -> dict[str, str] | None:
    """A dict written out with string keys, as its keys and values' texts; else None."""
    if not text.startswith("{"):
        return None
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Dict) or not all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys
    ):
        return None
    return {k.value: ast.unparse(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[union-attr]


def _keywords(given: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """A call's keywords with each ``**d`` of a dict written out spread into its keys, in name
    order: keywords are passed by name, so neither where a key is set nor the order says
    anything of the values (``"num_warps": w`` in the dict or set on it in a branch)."""
    out: list[tuple[str | None, str]] = []
    for arg, value in given:
        spread = _dict(value) if arg is None else None
        out += list(spread.items()) if spread is not None else [(arg, value)]
    named = sorted((a, v) for a, v in out if a is not None)
    return [*named, *((a, v) for a, v in out if a is None)]


_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
            ast.In: ast.NotIn, ast.NotIn: ast.In}  # fmt: skip


def _facts(tests: tuple[str, ...]) -> dict[str, bool]:
    """What the tests around a launch say holds there: each test true, and a comparison's
    negation (``a != b`` under ``a == b``; ``t`` under ``not (t)``) false."""
    out: dict[str, bool] = {}
    for test in tests:
        try:
            node = ast.parse(test, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        holds = True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node, holds = node.operand, False
        out[ast.unparse(node)] = holds
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATED:
            flipped = ast.Compare(node.left, [_NEGATED[type(node.ops[0])]()], node.comparators)
            out[ast.unparse(flipped)] = not holds
    return out


def _assume(text: str, facts: dict[str, bool]) -> str:
    """``text`` read where ``facts`` hold: a test they decide is its answer, and a conditional
    expression on it the branch taken (``16384 if is_distribution else 32768``, with
    ``is_distribution = target_format != TargetFormat.labels``, is 32768 under ``if
    target_format == TargetFormat.labels``): a value that differs only on another path."""
    if not any(f in text for f in facts):
        return text
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return text
    return _norm(ast.unparse(_Assumed(facts).visit(tree)))


class _Assumed(ast.NodeTransformer):
    def __init__(self, facts: dict[str, bool]) -> None:
        self.facts = facts

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)):
            known = self.facts.get(ast.unparse(node))
            if known is not None:
                return ast.Constant(known)
        node = super().visit(node)
        if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node


def decided(test: ast.expr, values: _Env) -> bool | None:
    """Whether ``test`` holds where the names ``values`` knows hold those literals (texts:
    ``{"use_triton": "True"}``): ``use_triton``, ``not use_triton``, ``x.is_cuda and
    use_triton`` when false, ``backend == "triton"``, ``scale is None``; None where the names
    known do not settle it (``x.is_cuda and use_triton`` when true)."""
    if not any(isinstance(n, ast.Name) and n.id in values for n in walk(test)):
        return None
    try:
        tree = ast.parse(_subst(test, values), mode="eval")
    except (SyntaxError, ValueError, _TooBig):
        return None
    node = _Folded({}).visit(tree.body)
    return bool(node.value) if isinstance(node, ast.Constant) else None


_SAME = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
         ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}  # fmt: skip
_SINGLETONS = (None, True, False)  # what ``is`` compares by identity, as Python promises


class _Folded(_Assumed):
    """``_Assumed``, with the tests on literals answered: ``not True``, ``False and x``,
    ``True or x``, ``None is None``, ``"triton" == "cuda"``."""

    def visit(self, node: ast.AST) -> ast.AST:
        node = super().visit(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            if isinstance(node.operand, ast.Constant):
                return ast.Constant(not node.operand.value)
        elif isinstance(node, ast.BoolOp):
            known = [bool(v.value) for v in node.values if isinstance(v, ast.Constant)]
            settles = isinstance(node.op, ast.Or)  # ``or``: one true settles it; ``and``: false
            if settles in known:
                return ast.Constant(settles)
            if len(known) == len(node.values):
                return ast.Constant(not settles)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in _SAME
            and isinstance(node.left, ast.Constant)
            and isinstance(node.comparators[0], ast.Constant)
            and (
                isinstance(node.ops[0], (ast.Eq, ast.NotEq))
                or {node.left.value, node.comparators[0].value} <= set(_SINGLETONS)
            )
        ):
            same = _SAME[type(node.ops[0])]
            return ast.Constant(same(node.left.value, node.comparators[0].value))
        return node


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]


class LaunchValues:
    """One host function's launches, each as its substituted record (by the call's id);
    ``calls``: every call through a name (``launcher(q1, k1)``) recorded as a launch is."""

    def __init__(
        self, func: Func, calls: bool = False, renamed: dict[str, str] | None = None
    ) -> None:
        """``renamed``: parameters read under another name (``parameter_renames``), so that a
        function whose parameters were only renamed hands its calls the same values."""
        self.calls = calls
        renamed = renamed or {}
        self.records: dict[int, str] = {}
        self.untuned: dict[int, str] = {}  # the same, less the launch's tuning options
        self.options: dict[int, dict[str, str]] = {}  # the launch's options, substituted
        self._seen: dict[str, int] = {}
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        pairs = [
            *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        ]
        pairs += [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
        ]
        self._defaults = [(renamed.get(a.arg, a.arg), ast.unparse(d)) for a, d in pairs]
        try:
            self._block(func.body, dict(renamed), (), [])
        except (_TooBig, RecursionError):
            self.records, self.untuned, self.options = {}, {}, {}

    def _opaque(self, name: str) -> str:
        """A value not followed: the ``k``-th such binding of ``name`` (a count, not a line,
        so that code moved by lines added above it reads the same)."""
        self._seen[name] = self._seen.get(name, 0) + 1
        return f"{name}__opaque{self._seen[name]}"

    def digest(self, launch: ast.Call, untuned: bool = False) -> str | None:
        """The launch's record as a digest; ``untuned``: less its tuning options (``num_warps=``,
        ``BLOCK_*=``), so that two launches equal but for those differ only in tuning."""
        text = (self.untuned if untuned else self.records).get(id(launch))
        return digest([text]) if text is not None else None

    # -------------------------------------------------------------------------------- walk

    def _block(
        self, body: list[ast.stmt], env: _Env, tests: tuple[str, ...], effects: list[str]
    ) -> _Env:
        for stmt in body:
            env = self._stmt(stmt, env, tests, effects)
        return env

    def _stmt(self, stmt: ast.stmt, env: _Env, tests: tuple[str, ...], effects: list[str]) -> _Env:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return {k: v for k, v in env.items() if k != stmt.name}
        self._launches(stmt, env, tests, effects)
        if isinstance(stmt, ast.Assign):
            value = _subst(stmt.value, env)
            env = dict(env)
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    env[target.id] = value
                elif (keyed := _keyed(target, env, value)) is not None:
                    env[keyed[0]] = keyed[1]  # ``kwargs["num_warps"] = w``: the dict, one key set
                elif (
                    isinstance(target, (ast.Tuple, ast.List))
                    and isinstance(stmt.value, (ast.Tuple, ast.List))
                    and len(target.elts) == len(stmt.value.elts)
                ):
                    for t, v in zip(target.elts, stmt.value.elts, strict=True):
                        for n in _names(t):
                            env[n] = _subst(v, env) if isinstance(t, ast.Name) else self._opaque(n)
                elif (
                    not self.calls
                    and isinstance(target, (ast.Tuple, ast.List))
                    and not any(isinstance(t, ast.Starred) for t in target.elts)
                ):
                    # ``m, k = a.shape``: each name is its element of the value unpacked (a
                    # launch's shapes and tuning values); for calls through a name (``calls``,
                    # ``reach.call_gates``) unpacked names stay opaque, as that rule reads them
                    for i, t in enumerate(target.elts):
                        for n in _names(t):
                            env[n] = (
                                f"({value})[{i}]" if isinstance(t, ast.Name) else self._opaque(n)
                            )
                else:
                    for n in _names(target):
                        env[n] = self._opaque(n)
                    self._effect(target, env, effects)
            return env
        if isinstance(stmt, ast.AugAssign):
            env = dict(env)
            if isinstance(stmt.target, ast.Name):
                now = env.get(stmt.target.id, stmt.target.id)
                op = ast.unparse(ast.BinOp(left=ast.Name("a"), op=stmt.op, right=ast.Name("b")))
                env[stmt.target.id] = _norm(f"({now}) {op[2:-2]} ({_subst(stmt.value, env)})")
            else:
                self._effect(stmt.target, env, effects)
            return env
        if isinstance(stmt, ast.AnnAssign):
            env = dict(env)
            if isinstance(stmt.target, ast.Name) and stmt.value is not None:
                env[stmt.target.id] = _subst(stmt.value, env)
            return env
        if isinstance(stmt, ast.If):
            text = _subst(stmt.test, env)
            yes = self._block(stmt.body, dict(env), (*tests, text), effects)
            no = self._block(stmt.orelse, dict(env), (*tests, f"not ({text})"), effects)
            merged = dict(env)
            for name in yes.keys() | no.keys():
                a, b = yes.get(name, name), no.get(name, name)
                merged[name] = a if a == b else _norm(f"({a}) if ({text}) else ({b})")
            return merged
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            assigned = {
                n for s in stmt.body + stmt.orelse for sub in walk(s)
                for n in (_names(sub.target) if isinstance(sub, (ast.For, ast.AsyncFor)) else
                          [t.id for t in getattr(sub, "targets", [])
                           if isinstance(t, ast.Name)] +
                          ([sub.target.id] if isinstance(sub, (ast.AugAssign, ast.AnnAssign))
                           and isinstance(sub.target, ast.Name) else []))
            }  # fmt: skip
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                assigned |= set(_names(stmt.target))
                head = f"for {ast.unparse(stmt.target)} in {_subst(stmt.iter, env)}"
            else:
                head = f"while {_subst(stmt.test, env)}"
            inner = {k: v for k, v in env.items() if k not in assigned}
            inner |= {n: self._opaque(n) for n in assigned}
            self._block(stmt.body, inner, (*tests, head), effects)
            self._block(stmt.orelse, dict(inner), tests, effects)
            return {**env, **{n: self._opaque(n) for n in assigned}}
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            env = dict(env)
            inside = tests  # ``with torch.cuda.device(x):`` decides where the launches run
            for item in stmt.items:
                inside = (*inside, f"with {_subst(item.context_expr, env)}")
                if item.optional_vars is not None:
                    for n in _names(item.optional_vars):
                        env[n] = self._opaque(n)
            return self._block(stmt.body, env, inside, effects)
        if isinstance(stmt, ast.Try):
            env = self._block(stmt.body, dict(env), tests, effects)
            for h in stmt.handlers:
                self._block(h.body, dict(env), (*tests, "except"), effects)
            env = self._block(stmt.orelse, env, tests, effects)
            return self._block(stmt.finalbody, env, tests, effects)
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and not isinstance(stmt.value.func, ast.Subscript)  # a launch changes no name
        ):
            call = stmt.value
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                self._effect(call.func.value, env, effects, call)  # ``out.zero_()``
            for arg in call.args:
                if isinstance(arg, ast.Name):
                    self._effect(arg, env, effects, call)  # ``fill(out)``
        return env

    def _effect(
        self, target: ast.expr, env: _Env, effects: list[str], call: ast.Call | None = None
    ) -> None:
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name):
            what = call if call is not None else target
            effects.append(f"{root.id}: {_subst(what, env)}")

    def _launches(
        self, stmt: ast.stmt, env: _Env, tests: tuple[str, ...], effects: list[str]
    ) -> None:
        if isinstance(
            stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
        ):
            return  # the launches in its blocks are read when the walk reaches them
        for sub in walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            launch = isinstance(func, ast.Subscript) or (
                isinstance(func, ast.Attribute)
                and func.attr == "launch"
                and isinstance(func.value, ast.Call)
            )
            if not launch and not (self.calls and isinstance(func, (ast.Name, ast.Attribute))):
                continue
            if not launch:
                grid, call, options = "", sub, sub.keywords
            elif isinstance(func, ast.Subscript):
                grid, call = _subst(func.slice, env), sub
                options = sub.keywords
            else:
                assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                call = func.value
                grid = ", ".join(f"{k.arg}={_subst(k.value, env)}" for k in sub.keywords)
                options = call.keywords
            facts = _facts(tests)
            args = [_assume(_subst(a, env), facts) for a in call.args]
            given = _keywords([(k.arg, _assume(_subst(k.value, env), facts)) for k in options])
            kept = [f"{arg or '**'}={value}" for arg, value in given]
            reads = {n.id for n in walk(sub) if isinstance(n, ast.Name)}
            touched = sorted(e for e in effects if e.split(":", 1)[0] in reads)
            defaults = self._defaults
            if self.calls:  # a default counts where the call's values read it
                texts = [*args, *(v for _, v in given), *tests]
                texts += [e.split(": ", 1)[-1] for e in touched]
                read = set().union(*map(_values_read, texts))
                defaults = [(n, d) for n, d in defaults if n in read]
            rest = [*(f"if {t}" for t in tests), *touched, *(f"{n}={d}" for n, d in defaults)]
            self.records[id(sub)] = "\n".join([f"grid {grid}", *args, *kept, *rest])
            self.options[id(sub)] = {arg: value for arg, value in given if arg}
            untuned = [k for k in kept if not is_tuning_name(k.split("=", 1)[0])]
            self.untuned[id(sub)] = "\n".join([f"grid {grid}", *args, *untuned, *rest])
