"""The layouts the compiler chose (Part C-1), read from a compile's Triton GPU IR (``ttgir``).

Triton decides how a block-wide tensor is spread over a program's warps (wavefronts on AMD):
``#ttg.blocked<{sizePerThread, threadsPerWarp, warpsPerCTA, order}>`` for loads, stores and
reductions, and a matrix-core layout (``#ttg.nvidia_mma``, ``#ttg.amd_mfma``, ``#ttg.amd_wmma``)
for the result of a ``tl.dot``. The IR declares each layout once at the top (``#blocked =
#ttg.blocked<{...}>``) and every tensor type names one; this module reads the declarations and
the layout of the kernel's main operations: each global load and store, each reduction (with
its axis) and each dot. The text is the same for every vendor: cross-compiling gives it without
a GPU.
"""

from __future__ import annotations

import re

from bot.contracts.evidence import TritonLayout

_DECL = re.compile(r"^#(?P<alias>[\w.]+) = #ttg\.(?P<kind>\w+)<\{(?P<body>.*)\}>\s*$", re.M)
_LIST = re.compile(r"(\w+) = \[([0-9, ]*)\]")
_SCALAR = re.compile(r"(\w+) = (\d+)\b(?! :)")
_TENSOR = re.compile(r"tensor<(?P<dims>(?:\d+x)+)[^,<>]*(?:<[^<>]*>)?[^,<>]*, #(?P<alias>[\w.]+)>")
_LOAD = re.compile(r"= (?:tt\.load|amdg\.buffer_load|tt\.descriptor_load)\b")
_STORE = re.compile(r"^\s*(?:tt\.store|amdg\.buffer_store|tt\.descriptor_store)\b")
_REDUCE = re.compile(r'"tt\.reduce"\(.*?<\{axis = (\d+) : i32\}>')
_REDUCE_END = re.compile(r"^\s*\}\) : \((?P<types>.*?)\) ->")
_DOT = re.compile(r"= (?:tt\.dot|ttng\.warp_group_dot|ttng\.tc_gen5_mma|tt\.dot_scaled)\b")
_RESULT = re.compile(r"-> (tensor<.*>)")

# the attribute names of the IR, as the model's fields
_FIELDS = {
    "sizePerThread": "size_per_thread",
    "threadsPerWarp": "threads_per_warp",
    "warpsPerCTA": "warps_per_cta",
    "order": "order",
    "instrShape": "instr_shape",
}
MAX_LAYOUTS = 12  # layouts kept per compile: a kernel's main operations, not every tensor


def declarations(ttgir: str) -> dict[str, TritonLayout]:
    """Each declared distributed layout by its alias (``blocked1``), role not yet set."""
    out: dict[str, TritonLayout] = {}
    for m in _DECL.finditer(ttgir):
        body = m.group("body")
        values: dict[str, object] = {"role": "load", "kind": m.group("kind")}
        for name, dims in _LIST.findall(body):
            if name in _FIELDS:
                values[_FIELDS[name]] = tuple(int(d) for d in dims.split(",") if d.strip())
        for name, number in _SCALAR.findall(body):
            if name in ("version", "versionMajor"):
                values["version"] = number
        out[m.group("alias")] = TritonLayout.model_validate(values)
    return out


def _tensor(text: str, decls: dict[str, TritonLayout]) -> tuple[tuple[int, ...], TritonLayout]:
    """The shape and declared layout of the last tensor type on ``text`` that names one."""
    found = [m for m in _TENSOR.finditer(text) if m.group("alias") in decls]
    if not found:
        return (), TritonLayout(role="load", kind="")
    last = found[-1]
    dims = tuple(int(d) for d in last.group("dims").split("x") if d)
    return dims, decls[last.group("alias")]


def _use(role: str, text: str, decls: dict[str, TritonLayout], axis: int | None = None):
    shape, layout = _tensor(text, decls)
    if not layout.kind:
        return None
    return layout.model_copy(update={"role": role, "shape": shape, "axis": axis})


def kernel_layouts(ttgir: str) -> tuple[TritonLayout, ...]:
    """The layouts of the main operations of one compiled kernel, each (role, layout, shape)
    once, in the order they first appear."""
    decls = declarations(ttgir)
    if not decls:
        return ()
    found: list[TritonLayout] = []
    lines = ttgir.splitlines()
    pending_axis: list[int] = []
    for line in lines:
        use = None
        if _LOAD.search(line):
            use = _use("load", line.split(" loc(")[0], decls)
        elif _STORE.search(line):
            use = _use("store", line.split(" loc(")[0], decls)
        elif _DOT.search(line):
            result = _RESULT.search(line.split(" loc(")[0])
            use = _use("dot", result.group(1), decls) if result else None
        elif m := _REDUCE.search(line):
            pending_axis.append(int(m.group(1)))
        elif pending_axis and (end := _REDUCE_END.match(line)):
            use = _use("reduce", end.group("types"), decls, axis=pending_axis.pop())
        if use is not None and use not in found:
            found.append(use)
    return tuple(found[:MAX_LAYOUTS])


def reduction_warps(layout: TritonLayout) -> int | None:
    """How many warps one reduction along ``layout.axis`` spans (more than one: the partial
    results meet in shared memory / LDS, after a barrier)."""
    if layout.role != "reduce" or layout.axis is None:
        return None
    if layout.axis >= len(layout.warps_per_cta):
        return None
    return layout.warps_per_cta[layout.axis]
