"""Triton kernels in the lines a diff shows, by patterns (``ast`` needs the whole file).

The lines come packed: one ``None`` stands for each run of lines the diff does not show.
A ``def`` is a kernel when ``@triton.jit`` sits above it, a parameter is ``tl.constexpr``, or a
hunk header names it and it looks like one; ``triton.Config(...)`` calls are parsed with ``ast``
one call at a time. A function that is a kernel by its name alone (``median_kernel``, no
decorator or ``constexpr`` parameter shown) is not one where its shown lines do what only host
code does: launch a kernel (``k[grid](...)``) or make one (``triton.JITFunction(fn)``,
``triton.jit(fn)``), as a factory or a launcher named for its kernel does.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Sequence

from bot.analysis.languages import MARKER_WORDS, UNRECOGNISED, decorator_role, kernel_like
from bot.analysis.model import MAX_PER_FILE, FileScan, KernelDef, LaunchSite, TritonConfig
from bot.analysis.scan.triton_config import parse_config
from bot.analysis.text import JIT_CALL, collapse, is_tuning_name

_DECO_LINE = re.compile(r"^(\s*)@\s*([\w.]+)")
_DEF_LINE = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
_SECTION_DEF = re.compile(r"(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\((.*)")
_LAUNCH = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\s*\[(.+?)\]\s*\((.*)$")
_CONSTEXPR = re.compile(r"(\w+)\s*:\s*(?:tl|triton\.language)\.constexpr(?:\s*=\s*([^,)]+))?")
_KWARG = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*([^,()]+)")
_MODULE_CONST = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(.+)$")
_KEY = re.compile(r"key\s*=\s*\[([^\]]*)\]")
_QUOTED = re.compile(r"['\"](\w+)['\"]")
_EMPTY_ARG = re.compile(r",\s*(?=,|$)")
_DSL_PREFIXES = ("triton.", "gluon.", "tilelang.", "cute.", "T.", "helion.")
_GPU_FILE = re.compile("|".join(MARKER_WORDS))
_CONFIG_CALL = re.compile(r"\b(?:triton\.)?Config\s*\(")
# What only host code does: launch a kernel (``k[grid](``, ``wrap(k)[grid](``) or make one.
_HOST_ONLY = re.compile(r"[\w)\]]\s*\[[^\[\]]+\]\s*\(|\bJITFunction\s*\(|" + JIT_CALL.pattern)


def scan_python_lines(
    path: str,
    sparse: Sequence[str | None],
    sections: Sequence[tuple[int, str]],
    line_at: Callable[[int], int] | None = None,
    markers: tuple[str, ...] = (),
) -> FileScan:
    """Scan Python lines (``None`` = unseen) with patterns. ``line_at`` maps list positions
    (1-based) to file lines; ``markers``: the policy's ``kernel_decorators``."""
    at = line_at or (lambda n: n)
    visible = "\n".join(line for line in sparse if line is not None)
    has_triton = "triton" in visible
    gpu_file = bool(_GPU_FILE.search(visible))
    kernels: list[KernelDef] = []
    covered: set[int] = set()
    n = len(sparse)
    runs = _section_runs(sparse, sections)
    # named like kernels, shown doing what host code does in a hunk of theirs
    host = {name for first, end, name, args in runs if _host_code(sparse[first - 1 : end + 1])}
    i = 0
    while i < n and len(kernels) < MAX_PER_FILE:
        line = sparse[i]
        m = _DEF_LINE.match(line) if line is not None else None
        if m is None:
            i += 1
            continue
        indent, name = len(m.group(1)), m.group(2)
        decos, deco_start = _decorators_above(sparse, i, indent)
        kinds, language = _kinds(decos, markers, has_triton, gpu_file)
        signature = _signature(sparse, i)
        constexprs = {c.group(1): c.group(2) for c in _CONSTEXPR.finditer(signature)}
        by_name = not decos and name.endswith("kernel") and has_triton
        if "jit" in kinds or constexprs or by_name:
            end = _block_end(sparse, i, indent)
            if by_name and not constexprs and (name in host or _host_code(sparse[i + 1 : end + 1])):
                host.add(name)
                i += 1
                continue
            run = "\n".join(t for t in sparse[deco_start:i] if t is not None)
            configs = configs_in(run) if "autotune" in kinds else None
            key = _KEY.search(run)
            kernels.append(
                KernelDef(
                    language=language,  # type: ignore[arg-type]
                    name=name,
                    path=path,
                    line_start=at(deco_start + 1),
                    line_end=at(end + 1),
                    body_start=at(min(i + 2, end + 1)),
                    body_end=at(end + 1),
                    decorators=tuple(decos),
                    configs=configs,
                    configs_source=run or None,
                    autotune_key=tuple(_QUOTED.findall(key.group(1))) if key else (),
                    constexprs=constexprs,
                    from_context=True,
                )
            )
            covered.update(range(deco_start, end + 1))
        i += 1
    for first, end, name, args in runs:
        if first - 1 in covered or any(k.name == name for k in kernels):
            continue
        if "constexpr" in args or (name.endswith("kernel") and name not in host):
            kernels.append(
                KernelDef(
                    language="triton",
                    name=name,
                    path=path,
                    line_start=at(first),
                    line_end=at(end + 1),
                    body_start=at(first),
                    body_end=at(end + 1),
                    constexprs={c.group(1): c.group(2) for c in _CONSTEXPR.finditer(args)},
                    from_context=True,
                )
            )
    launches: list[LaunchSite] = []
    constants: dict[str, str] = {}
    for number, line in enumerate(sparse, 1):
        if line is None:
            continue
        code = line.split("#", 1)[0]
        lm = _LAUNCH.search(code) if "](" in code or "] (" in code else None
        if lm and not code.lstrip().startswith(("def ", "@")) and len(launches) < MAX_PER_FILE:
            inner = _until_close(lm.group(3))
            tuning = {k: v.strip() for k, v in _KWARG.findall(inner) if is_tuning_name(k)}
            launches.append(
                LaunchSite(
                    kernel=lm.group(1).split(".")[-1],
                    language="triton",
                    path=path,
                    line=at(number),
                    grid=collapse(lm.group(2)),
                    args=_EMPTY_ARG.sub("", collapse(_KWARG.sub(_keep_non_tuning, inner))),
                    tuning=tuning,
                )
            )
        cm = _MODULE_CONST.match(code)
        if cm and is_tuning_name(cm.group(1)):
            constants[cm.group(1)] = cm.group(2).strip()
    return FileScan(
        path=path,
        kind="python",
        language="triton" if kernels else None,
        complete=False,
        kernels=tuple(kernels),
        launches=tuple(launches),
        tuning_constants=constants,
    )


def _section_runs(
    sparse: Sequence[str | None], sections: Sequence[tuple[int, str]]
) -> list[tuple[int, int, str, str]]:
    """``(first, last, name, rest of the def line)`` per hunk whose header is a ``def``: the
    positions (1-based first, 0-based last) of the hunk's lines inside that function, until a
    line as little indented as its ``def``; hunks with no line inside it are left out."""
    out = []
    for first, header in sections:
        s = _SECTION_DEF.search(header)
        if not s:
            continue
        indent = len(header) - len(header.lstrip())
        end = first - 2
        while end + 1 < len(sparse) and (line := sparse[end + 1]) is not None:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            end += 1
        while end >= first - 1 and not (sparse[end] or "").strip():
            end -= 1  # trailing blank lines belong to no one
        if end >= first - 1:
            out.append((first, end, s.group(1), s.group(2)))
    return out


def _host_code(lines: Sequence[str | None]) -> bool:
    """Whether a line of ``lines`` (comments aside) launches or makes a kernel."""
    return any(line is not None and _HOST_ONLY.search(line.split("#", 1)[0]) for line in lines)


def _kinds(
    decos: list[str], markers: tuple[str, ...], has_triton: bool, gpu_file: bool
) -> tuple[list[str], str]:
    """The decorators' kinds (``jit``, ``autotune``...) as written, and the kernel's language."""
    kinds: list[str] = []
    language = "triton"
    for d in decos:
        found = decorator_role(d, markers, d)
        if found is not None:
            role, lang = found
            if role in ("kernel", "factory", "host"):
                language = lang
            # a factory (``@tilelang.jit``) is its kernel's code, as far as diff lines show
            kinds.append(
                {"kernel": "jit", "factory": "jit", "tuner": d.split(".")[-1]}.get(role, role)
            )
        elif gpu_file and kernel_like(d) and not d.startswith(("triton.", "tl.")):
            kinds.append("jit")
            language = UNRECOGNISED.name
        elif d.startswith(_DSL_PREFIXES) or has_triton:
            kinds.append(d.split(".")[-1])
    return kinds, language


def _until_close(text: str) -> str:
    """The arguments of a call whose ``(`` came just before ``text``, as far as the line goes."""
    depth = 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return text[:k]
            depth -= 1
    return text


def _keep_non_tuning(m: re.Match[str]) -> str:
    return "" if is_tuning_name(m.group(1)) else m.group(0)


def _decorators_above(sparse: Sequence[str | None], i: int, indent: int) -> tuple[list[str], int]:
    """Decorator names stacked above the ``def`` at index ``i`` (multi-line ones included)."""
    decos: list[str] = []
    start = i
    j = i - 1
    while j >= 0 and i - j < 400:
        line = sparse[j]
        if line is None:
            break
        m = _DECO_LINE.match(line)
        if m and len(m.group(1)) == indent:
            decos.insert(0, m.group(2))
            start = j
        elif (
            line.strip()
            and (len(line) - len(line.lstrip())) <= indent
            and not line.lstrip().startswith((")", "]", "}", "#"))
        ):
            break
        j -= 1
    return decos, start


def _signature(sparse: Sequence[str | None], i: int) -> str:
    parts = []
    for j in range(i, min(i + 40, len(sparse))):
        line = sparse[j]
        if line is None:
            break
        parts.append(line)
        if line.rstrip().endswith(":"):
            break
    return " ".join(parts)


def _block_end(sparse: Sequence[str | None], i: int, indent: int) -> int:
    end = i
    for j in range(i + 1, len(sparse)):
        line = sparse[j]
        if line is None:
            break
        if line.strip() and not line.lstrip().startswith("#"):
            if len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith(")"):
                break
            end = j
    return end


def config_calls(lines: Sequence[tuple[int, str]]) -> list[tuple[int, int, TritonConfig]]:
    """``(first_line, last_line, config)`` of each whole ``triton.Config(...)`` in the numbered
    lines (runs of consecutive numbers are read as one text; a call cut by a gap is skipped)."""
    out: list[tuple[int, int, TritonConfig]] = []
    runs: list[list[tuple[int, str]]] = []
    for number, text in sorted(lines):
        if runs and runs[-1][-1][0] + 1 == number:
            runs[-1].append((number, text))
        elif not runs or runs[-1][-1][0] != number:
            runs.append([(number, text)])
    for run in runs:
        text = "\n".join(t for _, t in run)
        for m in _CONFIG_CALL.finditer(text):
            expr = _balanced(text, m.start(), m.end() - 1)
            if expr is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    parsed = parse_config(ast.parse(expr, mode="eval").body)
            except SyntaxError:
                continue
            if parsed is not None:
                first = run[0][0] + text.count("\n", 0, m.start())
                out.append((first, first + expr.count("\n"), parsed))
    return out


def configs_in(text: str) -> tuple[TritonConfig, ...] | None:
    """Every ``triton.Config(...)`` written in ``text``; None if there is none or one is cut."""
    configs = []
    for m in _CONFIG_CALL.finditer(text):
        expr = _balanced(text, m.start(), m.end() - 1)
        if expr is None:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                node = ast.parse(expr, mode="eval").body
        except SyntaxError:
            return None
        parsed = parse_config(node)
        if parsed is None:
            return None
        configs.append(parsed)
    return tuple(configs) if configs else None


def _balanced(text: str, start: int, open_at: int) -> str | None:
    depth = 0
    for k in range(open_at, len(text)):
        ch = text[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[start : k + 1]
    return None
