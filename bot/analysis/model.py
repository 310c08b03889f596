"""The analysis's data types: what a scan finds in one file, and what changed between two.

Types only, so every reader and comparer can import them without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.analysis.diff import FilePatch, SkippedFile
from bot.contracts.base import Frozen
from bot.contracts.review import ChangeFinding, ChangeLine

if TYPE_CHECKING:
    from bot.policy.model import Policy

Language = Literal[
    "triton", "cuda", "hip", "gluon", "helion", "cute", "tilelang", "custom", "unrecognised"
]

# Kernels written in Python (``bot.analysis.languages`` says how each is read); ``custom``: the
# policy's ``kernel_decorators``; ``unrecognised``: a kernel-like decorator no language claims.
PYTHON_LANGUAGES = ("triton", "gluon", "helion", "cute", "tilelang", "custom", "unrecognised")


SourceKind = Literal["python", "cpp"]


PYTHON_SUFFIXES = (".py", ".pyi")


CPP_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".inl")


MAX_SOURCE_CHARS = 512 * 1024  # a longer file is read from its diff lines only


MAX_PER_FILE = 1_000  # kernels, and launches, read from one file


class KernelRef(Frozen):
    language: Language
    name: str
    path: str
    line_start: int
    line_end: int


class TritonConfig(Frozen):
    """One ``triton.Config(kwargs, num_warps=..., num_stages=...)`` as data.

    Values that are not literals are kept as their source text."""

    kwargs: dict[str, int | float | bool | str] = Field(default_factory=dict)
    num_warps: int | str | None = None
    num_stages: int | str | None = None
    num_ctas: int | str | None = None
    maxnreg: int | str | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.kwargs.items()]
        for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        parts += [f"{k}={v}" for k, v in self.extra.items()]
        return ", ".join(parts)


class KernelDef(Frozen):
    """A kernel found in one version of one file."""

    language: Language
    name: str
    path: str
    line_start: int  # first decorator / template line
    line_end: int
    body_start: int  # first line of the body (after signature, docstring)
    body_end: int
    digest: str | None = None  # body and signature, normalised; None when seen partially
    # the same, less the defaults of its constexpr parameters (what an autotuner's configs set)
    digest_without_defaults: str | None = None
    decorators: tuple[str, ...] = ()
    configs: tuple[TritonConfig, ...] | None = None  # None: not autotuned, or not readable
    configs_source: str | None = None  # the configs expression as written (after resolution)
    autotune_key: tuple[str, ...] = ()
    heuristics: dict[str, str] = Field(default_factory=dict)
    constexprs: dict[str, str | None] = Field(default_factory=dict)  # name -> default
    params: tuple[str, ...] = ()  # a Python kernel's parameters in order (launch arguments map)
    configs_computed: bool = False  # autotuned over a list built at import time (not readable)
    configs_built_by: str | None = None  # then: the module-level code that builds it
    from_context: bool = False  # found in diff lines only: the range may be cut short
    launched: bool = True  # False: a jit function no launch reaches (a helper of kernels)
    built_by: str | None = None  # CUDA in a Python string: the function that compiles it

    def ref(self) -> KernelRef:
        return KernelRef(
            language=self.language,
            name=self.name,
            path=self.path,
            line_start=self.line_start,
            line_end=self.line_end,
        )


class LaunchSite(Frozen):
    """Where a kernel is launched: ``k[grid](...)``, ``k<<<g, b>>>(...)``, ``hipLaunchKernelGGL``."""

    kernel: str
    language: Language
    path: str
    line: int
    grid: str  # the grid / launch configuration as written, whitespace collapsed
    args: str  # the arguments that are not tuning knobs, whitespace collapsed
    tuning: dict[str, str] = Field(default_factory=dict)  # num_warps=, BLOCK_*= at the launch
    wrapper: str | None = None  # the enclosing host function
    wrapper_start: int | None = None
    wrapper_end: int | None = None
    # what of the host function decides the launch (Python: its backward slice, less tuning
    # lines; C++: the function less its tuning lines)
    wrapper_digest: str | None = None
    # the grid, arguments and options as values (``launch_values``): equal on both sides, the
    # launch is the same whatever its text
    value_digest: str | None = None
    # the same less the launch's tuning options: equal on both sides, only tuning changed
    untuned_digest: str | None = None
    # Python: what of the host function its tuning options (``num_warps=``, ``BLOCK_*=``) read
    tuning_digest: str | None = None


class FileScan(Frozen):
    path: str
    kind: SourceKind
    language: Language | None  # triton for Python with kernels; cuda or hip for C++
    complete: bool  # False: read from diff lines only
    kernels: tuple[KernelDef, ...] = ()
    helpers: tuple[KernelDef, ...] = ()  # C++ __device__ functions (Triton helpers are kernels)
    launches: tuple[LaunchSite, ...] = ()
    tuning_constants: dict[str, str] = Field(default_factory=dict)  # BLOCK_SIZE = 1024 ...
    bindings: tuple[tuple[str, str], ...] = ()  # (name exported to Python, C++ function)
    notes: tuple[str, ...] = ()

    def kernel(self, name: str) -> KernelDef | None:
        for k in self.kernels:
            if k.name == name:
                return k
        return None


ChangeKind = Literal["rewrite", "tuning", "body", "launch", "new", "deleted", "moved"]


class LaunchBranch(Frozen):
    """A launch parameter chosen by vendor (``is_hip()``, ``torch.version.hip``, warp size) or by
    architecture (``get_device_capability() >= (10, 0)``, the device's name)."""

    kind: Literal["vendor", "arch"]
    path: str
    line: int
    condition: str  # the test as written, whitespace collapsed
    where: str  # the function (or "module level") the test sits in
    note: str  # what the measured runners will and will not take


class UnclassifiedFile(Frozen):
    """A file holding kernels whose changed lines the analysis could not attribute."""

    path: str
    why: str


SourceFn = Callable[[str], "str | None"]


class KernelChange(Frozen):
    kind: ChangeKind
    name: str
    language: str  # of the new kernel (old for ``deleted``): triton | cuda | hip
    path: str
    old: KernelRef | None = None
    new: KernelRef | None = None
    old_language: str | None = None  # for a rewrite: "cuda+hip" when both are replaced
    old_variants: list[KernelRef] = Field(default_factory=list)  # more C++ kernels replaced
    old_kernel_kept: bool | None = None  # rewrite: the C++ kernel is still in head
    policy_kernels: list[str] = Field(default_factory=list)
    configs_old: list[TritonConfig] | None = None
    configs_new: list[TritonConfig] | None = None
    tuning_old: dict[str, str] = Field(default_factory=dict)  # changed knobs only
    tuning_new: dict[str, str] = Field(default_factory=dict)
    launches_old: list[str] = Field(default_factory=list)  # "path:line grid | args"
    launches_new: list[str] = Field(default_factory=list)
    part_a: PartA | None = None
    evidence: list[str] = Field(default_factory=list)  # why a rewrite was paired
    notes: list[str] = Field(default_factory=list)
    configs_old_computed: bool = False  # the list is built at import: read on the GPU runner
    configs_new_computed: bool = False
    via_helpers: list[str] = Field(default_factory=list)  # changed helpers it calls
    host_changes: list[str] = Field(default_factory=list)  # C++ host code / headers changed
    branches: list[LaunchBranch] = Field(default_factory=list)  # vendor / arch launch choices
    moved_from: str | None = None  # the file the kernel was in at base, when it moved
    findings: list[ChangeFinding] = Field(default_factory=list)  # lane primitives, async timing


class Analysis(Frozen):
    changes: list[KernelChange]
    skipped: list[SkippedFile] = Field(default_factory=list)
    files_seen: int = 0
    from_context_only: bool = False  # some kernels were read from diff lines, not whole files
    policy_kernels: list[str] = Field(default_factory=list)  # what to measure
    notes: list[str] = Field(default_factory=list)
    moved: list[KernelChange] = Field(default_factory=list)  # kind "moved": same code, new file
    unclassified: list[UnclassifiedFile] = Field(default_factory=list)
    toolchain: list[ChangeLine] = Field(default_factory=list)  # pins of triton, torch... moved


@dataclass
class FileSides:
    patch: FilePatch
    old: FileScan | None
    new: FileScan | None
    old_text: str | None = None
    new_text: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    """Everything read so far, shared by the comparison, the pairing and Part A."""

    files: list[FileSides]
    old_source: SourceFn | None
    new_source: SourceFn | None
    old_files: Sequence[str] | None
    policy: Policy | None
    extra_old: dict[str, FileScan] = field(default_factory=dict)  # outside the diff
    texts_old: dict[str, str] = field(default_factory=dict)
    texts_new: dict[str, str] = field(default_factory=dict)
    diff_paths: set[str] = field(default_factory=set)
    # Whole files for the call graph (``reach.follow.Side``): a module of the diff that
    # ``old_source`` / ``new_source`` read as empty for holding no kernel marker still has
    # imports and calls (a package's re-exports, a call switched to a dispatcher). None: the
    # sources above.
    old_whole: SourceFn | None = None
    new_whole: SourceFn | None = None
    # the choices between a compiled op and Python kernels (``reach.choices``), found once
    side_by_side: list[Any] | None = None
    # the names launches of a generic kernel template stand for (``scan.kernel_classes``)
    kernel_classes: set[str] = field(default_factory=set)
    # from the diff's lines alone: per file, "kernel: why" for each kernel they do not show as
    # changed or not (``compare.Comparison.undecided``)
    undecided: dict[str, list[str]] = field(default_factory=dict)
    # and per kernel, the parameters they remove that none of them reads (their launches'
    # arguments for them are dropped too: ``cross_file.compare_launches``)
    unread_dropped: dict[str, set[str]] = field(default_factory=dict)
    # per file read from its diff lines, the removed and added lines that moved a config list
    # into a builder (``tuning.config_builders.lists_moved_into_builders``), found once
    moved_lists: dict[str, tuple[set[int], set[int]]] | None = None

    def old_launches(self) -> list[LaunchSite]:
        return [x for f in self.files if f.old for x in f.old.launches] + [
            x for s in self.extra_old.values() for x in s.launches
        ]

    def new_launches(self) -> list[LaunchSite]:
        return [x for f in self.files if f.new for x in f.new.launches]

    def new_wrappers(self) -> dict[str, set[str]]:
        """Per kernel, the host functions that launch it at head."""
        out: dict[str, set[str]] = {}
        for x in self.new_launches():
            if x.wrapper:
                out.setdefault(x.kernel, set()).add(x.wrapper)
        return out


class PartASide(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    language: str  # "cuda+hip", "triton"
    kernels: list[str]
    helpers: list[str]  # functions the kernels call, counted as kernel body
    wrappers: list[str]
    files: list[str]
    kernel_body_lines: int
    host_wrapper_lines: int
    memory_lines: int
    error_check_lines: int
    error_checked_calls: int
    error_check_helper_lines: int
    barriers: int
    shared_memory_declarations: int
    source_files: int
    vendors_covered: list[str]


class PartA(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    old: PartASide
    new: PartASide
    notes: list[str] = []
    old_twins: list[str] = []  # old files of the same kernel for another vendor: not line-counted

    def rows(self) -> list[tuple[str, str, str]]:
        """The seed's table: (measure, old, new) as display strings."""
        o, n = self.old, self.new

        def checks(s: PartASide) -> str:
            text = f"{s.error_check_lines}"
            if s.error_checked_calls:
                text += f" + a check wrapper on {s.error_checked_calls} calls"
            if s.error_check_helper_lines:
                text += f" + {s.error_check_helper_lines}-line check macros"
            return text

        def files(s: PartASide) -> str:
            return f"{s.source_files} ({'+'.join(s.vendors_covered) or 'none'})"

        return [
            ("Lines in the kernel body", str(o.kernel_body_lines), str(n.kernel_body_lines)),
            (
                "Lines in the launch/host wrapper",
                str(o.host_wrapper_lines),
                str(n.host_wrapper_lines),
            ),
            ("Lines that exist only to manage memory", str(o.memory_lines), str(n.memory_lines)),
            ("Lines that exist only to check errors", checks(o), checks(n)),
            ("Explicit barriers", str(o.barriers), str(n.barriers)),
            (
                "Explicit shared-memory declarations",
                str(o.shared_memory_declarations),
                str(n.shared_memory_declarations),
            ),
            ("Source files to cover AMD and NVIDIA", files(o), files(n)),
        ]
