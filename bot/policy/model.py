"""The policy's data model: what a maintainer may write in ``kernel-review.toml``, validated.

Every model is frozen and refuses unknown keys. Each field's ``description`` says what is
allowed; the loader quotes it in error messages, so it is written for the maintainer.
Checks that span several fields raise :func:`_problem` errors that carry the key path they are
about, so the loader can point at the right line. Reading files and locating lines is in
``bot.policy.load``; this module does no I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from datetime import date
from functools import lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bot.contracts.base import VENDORS, Vendor
from bot.contracts.review import DEFAULT_REWRITE_PRICE
from bot.errors import PolicyError
from bot.toolchain.requirements import parse as parse_requirement

DeploymentKind = Literal["long-lived", "cli", "serverless", "latency-slo"]
DType = Literal[
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "int8",
    "int32",
    "int64",
]
DEPLOYMENT_KINDS: tuple[str, ...] = get_args(DeploymentKind)
DTYPES: tuple[str, ...] = get_args(DType)
MAX_DIMS = 8

Permission = Literal["admin", "maintain", "write", "triage", "read"]
MergeGate = Literal["none", "status", "check"]

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
Tolerance = Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)]

ENTRY_POINT_RE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
# A benchmark the repository already has, named by file: ``perf_report:bench/x.py:name[@provider]``
# (a ``triton.testing.perf_report`` benchmark) or ``do_bench:bench/x.py:function`` (a function
# of the shape's dimensions that times its kernel with ``triton.testing.do_bench``).
# Other forms (docs/bench-entry.md): ``pytest_benchmark:tests/x.py:test[@value]``,
# ``asv:benchmarks/x.py:Class.time_method[@value]``, ``timer:bench/x.py:function``,
# ``run_input:bench/x.py:function[@value]``, ``bench_class:benchmark/test_x.py:test[@value]``,
# ``tritonbench:operators/x/operator.py:Operator.method``.
BENCH_FILE_RE = (
    r"^(?P<form>perf_report|do_bench|pytest_benchmark|asv|timer|run_input|bench_class|tritonbench):"
    r"(?P<path>[^:@\s]+):"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)(@(?P<provider>[^:@\s]+))?$"
)
BenchForm = Literal[
    "perf_report",
    "do_bench",
    "pytest_benchmark",
    "asv",
    "timer",
    "run_input",
    "bench_class",
    "tritonbench",
]
BENCH_FORMS: tuple[BenchForm, ...] = get_args(BenchForm)
ENTRY_DESCRIPTION = (
    "'module.path:function' (a bench entry point, docs/bench-entry.md), "
    "'perf_report:path/to/bench.py:name[@provider]' (a triton.testing.perf_report benchmark), "
    "'do_bench:path/to/bench.py:function' (a function of the shape that calls do_bench), "
    "'pytest_benchmark:path/to/test.py:test[@value]', 'asv:path/to/bench.py:Class.time_x[@value]'"
    ", 'timer:path/to/bench.py:function' (a torch.utils.benchmark.Timer script), "
    "'run_input:path/to/bench.py:function[@value]' (a function of one input object), "
    "'bench_class:path/to/test.py:test[@value]' (a test that runs a benchmark object) or "
    "'tritonbench:path/to/operator.py:Operator.method' (a tritonbench operator's benchmark)"
)
BENCH_FORM_USAGE = {
    "perf_report": "'perf_report:path/to/bench.py:name' or 'perf_report:path/to/bench.py:name@provider'",
    "do_bench": "'do_bench:path/to/bench.py:function'",
    "pytest_benchmark": "'pytest_benchmark:path/to/test.py:test' or '...:test@value'",
    "asv": "'asv:path/to/bench.py:Class.time_method' or '...:Class.time_method@value'",
    "timer": "'timer:path/to/bench.py:function'",
    "run_input": "'run_input:path/to/bench.py:function' or '...:function@value'",
    "bench_class": "'bench_class:path/to/test.py:test' or '...:test@value'",
    "tritonbench": "'tritonbench:path/to/operator.py:Operator.method'",
}
# What ``kernel-review init`` writes where it could not infer a value; refused until replaced.
PLACEHOLDER = "FILL-IN"
KERNEL_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
DOTTED_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
OWNER_RE = r"^(@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9._-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+)$"


def _problem(message: str, *at: str | int) -> PydanticCustomError:
    """An error about the key path ``at`` below the model that raises it."""
    return PydanticCustomError("policy", message, {"at": tuple(at)})


def _problems(found: list[tuple[tuple[str | int, ...], str]]) -> PydanticCustomError:
    """Several errors at once, each with the key path (below the raising model) it is about."""
    text = "; ".join(message for _, message in found)
    return PydanticCustomError("policy_many", text, {"problems": tuple(found)})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


# ---------------------------------------------------------------------------------------- globs


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = normalize_path(pattern).split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(part) + ("" if last else "/"))
    return re.compile("".join(out))


def normalize_path(path: str) -> str:
    """``./a//b\\c`` -> ``a/b/c``: the form paths and globs are compared in."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return re.sub(r"/{2,}", "/", path).rstrip("/")


def glob_match(pattern: str, path: str) -> bool:
    """Whether a repository-relative ``path`` is covered by ``pattern``.

    ``*`` and ``?`` stay inside one directory, ``[abc]`` is a character class, ``**`` as a whole
    segment spans any number of directories (``toyops/**/*.cu`` matches ``toyops/a.cu`` and
    ``toyops/csrc/a.cu``). Patterns are anchored at the repository root, and a pattern that
    names a directory covers everything inside it (``toyops/csrc`` matches ``toyops/csrc/a.cu``).
    """
    regex = _glob_regex(pattern)
    path = normalize_path(path)
    if regex.fullmatch(path):
        return True
    parts = path.split("/")
    return any(regex.fullmatch("/".join(parts[:n])) for n in range(1, len(parts)))


def covered(patterns: Iterable[str], path: str) -> bool:
    """Whether any of ``patterns`` (a kernel's ``paths``) covers ``path`` (``glob_match``)."""
    return any(glob_match(p, path) for p in patterns)


def _relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a path inside the repository, or None when it is one."""
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path):
        return f"{path!r} is absolute; paths are relative to the repo root"
    if ".." in parts:
        return f"{path!r} leaves the repository with '..'"
    return None


def inside_repository(paths: list[str]) -> list[str]:
    """``paths`` if each is relative and stays inside the repository; a policy error at the
    first one that does not."""
    for index, path in enumerate(paths):
        where = _relative_path_problem(path)
        if where:
            raise _problem(where, index)
    return paths


def check_entry(spec: str) -> str:
    """``spec`` if it names a bench entry point in one of the forms :data:`ENTRY_DESCRIPTION`
    lists; a policy error saying what is wrong otherwise."""
    if re.match(ENTRY_POINT_RE, spec):
        return spec
    form, sep, _ = spec.partition(":")
    if sep and form in BENCH_FORMS:
        match = re.match(BENCH_FILE_RE, spec)
        if match is None:
            raise _problem(f"{spec!r} is not a {form} benchmark; write {BENCH_FORM_USAGE[form]}")
        path = match["path"]
        if not path.endswith(".py"):
            raise _problem(f"{path!r} is not a Python file; name the benchmark's .py file")
        where = _relative_path_problem(path)
        if where:
            raise _problem(where)
        if form in ("do_bench", "timer") and match["provider"]:
            raise _problem(
                f"'@{match['provider']}' picks a perf_report line; a {form} function has none"
            )
        if ("." in match["name"]) != (form in ("asv", "tritonbench")):
            raise _problem(
                f"{match['name']!r}: an asv benchmark is named 'Class.time_method', a "
                "tritonbench one 'Operator.method', any other form by its function's name alone"
            )
        return spec
    close = difflib.get_close_matches(form, BENCH_FORMS, n=1, cutoff=0.7) if sep else []
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    raise _problem(f"{spec!r} is not a bench entry point{guess}; write {ENTRY_DESCRIPTION}")


EntryPoint = Annotated[str, AfterValidator(check_entry)]


def _placeholders(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().upper().startswith(PLACEHOLDER)
    if isinstance(value, (list, tuple)):
        return any(_placeholders(v) for v in value)
    if isinstance(value, dict):
        return any(_placeholders(v) for v in value.values())
    return False


FILL_IN = {
    "shapes": "fill in the shapes this op serves: a list like [[1823, 781], [4096, 4096]], "
    "one entry per input size you run in production",
    "dtypes": 'fill in the dtypes this op runs in, like ["float16", "bfloat16"]',
    "bench": "fill in the bench entry point: " + ENTRY_DESCRIPTION,
    "baseline": "fill in the reference entry point, or delete the line",
    "paths": 'fill in the files of this op, like ["mypkg/softmax.py", "mypkg/csrc/**"]',
    "tensors": "fill in which dimensions of a shape make up each tensor, like "
    "[[0, 2], [2, 1], [0, 1]] for a matmul shape [M, N, K], or delete the line",
}


def refuse_placeholders(data: Any, fields: dict[str, str]) -> Any:
    """Refuse every value ``kernel-review init`` left for the maintainer to fill in, each at its
    own key, with what to write there."""
    if not isinstance(data, dict):
        return data
    found: list[tuple[tuple[str | int, ...], str]] = [
        ((key,), fields.get(key, f"fill in {key} (kernel-review init could not infer it)"))
        for key, value in data.items()
        if _placeholders(value)
    ]
    if found:
        raise _problems(found)
    return data


# --------------------------------------------------------------------------------------- models


class Deployment(_Model):
    kind: DeploymentKind = Field(
        description="where the kernels run: long-lived | cli | serverless | latency-slo",
    )
    first_call_budget_ms: PositiveFloat | None = Field(
        default=None,
        description="the first-call cost (JIT + autotuning) you accept, in milliseconds, > 0; "
        "required unless kind = long-lived",
    )

    @model_validator(mode="after")
    def _budget_required(self) -> Deployment:
        if self.kind != "long-lived" and self.first_call_budget_ms is None:
            raise _problem(
                f"kind = {self.kind!r} needs first_call_budget_ms (a number of milliseconds "
                "> 0): a process that starts often pays JIT and autotuning each time; "
                "only kind = 'long-lived' may leave it out",
                "first_call_budget_ms",
            )
        return self


class Limits(_Model):
    max_shapes: PositiveInt = Field(
        default=64, description="the most shapes x dtypes measured per kernel, an integer > 0"
    )
    max_elements_per_tensor: PositiveInt = Field(
        default=2**30, description="the most elements one served shape may have, an integer > 0"
    )
    max_gpu_seconds: PositiveInt = Field(
        default=900, description="the most GPU-seconds one run may use, an integer > 0"
    )
    worker_memory_gib: PositiveInt | None = Field(
        default=None,
        description="the most memory one measured process may allocate, in GiB, an integer > 0 "
        "(default: a quarter of the runner's memory, at least 4)",
    )


class CompilerTargets(_Model):
    nvidia_targets: list[Annotated[str, Field(pattern=r"^sm_[0-9]{2,3}[af]?$")]] = Field(
        default_factory=lambda: ["sm_90"],
        min_length=1,
        description="NVIDIA architectures to compile for, like 'sm_90' or 'sm_90a'",
    )
    amd_targets: list[Annotated[str, Field(pattern=r"^gfx[0-9a-f]{3,4}$")]] = Field(
        default_factory=lambda: ["gfx942", "gfx90a"],
        min_length=1,
        description="AMD architectures to compile for, like 'gfx942' or 'gfx90a'",
    )

    def for_vendors(self, vendors: Iterable[str]) -> tuple[str, ...]:
        """The targets listed for ``vendors`` (each vendor's ``<vendor>_targets``), vendor by
        vendor in the order of ``VENDORS``."""
        wanted = set(vendors)
        return tuple(t for v in VENDORS if v in wanted for t in getattr(self, f"{v}_targets"))


class Profiling(_Model):
    shared_memory: bool = Field(
        default=False,
        description="profile each planned kernel's shared-memory (LDS) traffic and bank conflicts, "
        "old and new, on the GPU runners (Nsight Compute / rocprofv3): true or false",
    )
    shapes: PositiveInt = Field(
        default=2,
        description="served shapes profiled per kernel, the most-served first, an integer > 0",
    )
    max_seconds: PositiveInt = Field(
        default=120,
        description="the most seconds of profiled processes per runner, an integer > 0; never more "
        "than limits.max_gpu_seconds",
    )


class GitHubSettings(_Model):
    bench_permission: Permission = Field(
        default="write",
        description="the repository permission a commenter needs to run /bench: "
        "admin | maintain | write | triage | read",
    )
    accept_permission: Permission = Field(
        default="maintain",
        description="the repository permission a commenter needs for /bench accept (accepting "
        "a measured slowdown): admin | maintain | write | triage | read",
    )
    merge_gate: MergeGate = Field(
        default="check",
        description="'check' posts a check run with annotations (a commit status where the "
        "token may not write checks); 'status' posts only a commit status; 'none' posts neither",
    )


class Setup(_Model):
    command: str = Field(
        min_length=1,
        description="a shell command run in each checkout (base and head) before its workers "
        "start, like 'python setup.py build_ext --inplace' or 'pip install -e .'",
    )
    timeout_s: PositiveInt = Field(
        default=1800, le=4 * 3600, description="how long it may run, in seconds, 1 to 14400"
    )


class Toolchain(_Model):
    environments: Literal["per-side", "runner"] = Field(
        default="per-side",
        description="when a change moves the triton or torch pin: 'per-side' runs each side "
        "under its own pins (an environment made with uv), 'runner' under the runner's own",
    )
    index_urls: list[Annotated[str, Field(pattern=r"^(https?|file)://\S+$")]] = Field(
        default_factory=list,
        description="extra package indexes for those environments, like "
        "'https://download.pytorch.org/whl/cu128'",
    )
    upgrade: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["triton"],
        description="what a scheduled run tries at the newest release its pin allows, like "
        '["triton", "torch"]',
    )

    @field_validator("upgrade")
    @classmethod
    def _requirements(cls, upgrade: list[str]) -> list[str]:
        for text in upgrade:
            if parse_requirement(text) is None:
                raise _problem(
                    f"{text[:80]!r} is not a package requirement: write a name, optionally "
                    "with versions, like 'triton' or 'triton>=3.6,<3.8'"
                )
        return upgrade


class ServedShape(_Model):
    dims: tuple[PositiveInt, ...] = Field(
        alias="shape",
        description=f"a shape: a list of 1 to {MAX_DIMS} integers > 0 like [1823, 781], "
        "or a table { shape = [4096, 4096], weight = 10 }",
    )
    weight: PositiveFloat = Field(
        default=1.0, description="how much this shape counts against the others, a number > 0"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return {"shape": value}
        if isinstance(value, (dict, ServedShape)):
            return value
        raise _problem(
            "a shape is a list of integers like [1823, 781] or a table "
            "{ shape = [4096, 4096], weight = 10 }"
        )

    @field_validator("dims")
    @classmethod
    def _dims_count(cls, dims: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(dims) <= MAX_DIMS:
            raise _problem(f"a shape has 1 to {MAX_DIMS} dimensions, this one has {len(dims)}")
        return dims

    @property
    def elements(self) -> int:
        return math.prod(self.dims)


class KernelPolicy(_Model):
    name: str = Field(
        pattern=KERNEL_NAME_RE,
        description="a unique name of letters, digits, '_' and '-', starting with a letter or "
        "'_', at most 64 characters",
    )
    bench: EntryPoint = Field(
        description="the bench entry point: " + ENTRY_DESCRIPTION + "; modules and files are "
        "found from the repository root (and python_path)",
    )
    baseline: EntryPoint | None = Field(
        default=None,
        description="an optional reference entry point, in the same forms as bench",
    )
    paths: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1,
        description="the files that belong to this kernel: a non-empty list of globs relative "
        "to the repository root ('**' spans directories)",
    )
    dtypes: list[DType] = Field(
        min_length=1, description="the dtypes to measure: " + ", ".join(DTYPES)
    )
    tolerance: Tolerance | None = Field(
        default=None, description="this kernel's allowed slowdown, 0 < tolerance <= 1"
    )
    rewrite_price: Tolerance | None = Field(
        default=None,
        description="the slowdown this kernel's rewrite (hand-written CUDA/HIP replaced by "
        "Triton) may cost at each measured shape, 0 < rewrite_price <= 1, at least its tolerance",
    )
    shapes: list[ServedShape] = Field(
        min_length=1,
        description="the served shapes: a non-empty list of [dims...] or "
        "{ shape = [dims...], weight = w }",
    )

    tensors: list[list[Annotated[int, Field(strict=True, ge=0, lt=MAX_DIMS)]]] | None = Field(
        default=None,
        min_length=1,
        description="which dimensions of a shape make up each tensor, for the "
        "max_elements_per_tensor limit: e.g. a matmul shape [M, N, K] has "
        "tensors = [[0, 2], [2, 1], [0, 1]] (A is M x K, B is K x N, C is M x N); "
        "left out, the whole shape is one tensor",
    )

    @model_validator(mode="before")
    @classmethod
    def _filled_in(cls, data: Any) -> Any:
        return refuse_placeholders(data, FILL_IN)

    @model_validator(mode="after")
    def _tensor_dims_exist(self) -> KernelPolicy:
        if self.tensors is None:
            return self
        for s, shape in enumerate(self.shapes):
            for t, dims in enumerate(self.tensors):
                bad = [d for d in dims if d >= len(shape.dims)]
                if bad:
                    raise _problem(
                        f"names dimension {bad[0]}, but shapes[{s}] "
                        f"{list(shape.dims)} has only {len(shape.dims)} dimensions "
                        f"(numbered from 0)",
                        "tensors",
                        t,
                    )
        return self

    def largest_tensor(self, dims: tuple[int, ...]) -> int:
        """Elements of the largest tensor a shape implies (see ``tensors``)."""
        if not self.tensors:
            return math.prod(dims)
        return max(math.prod(dims[d] for d in t) for t in self.tensors)

    @field_validator("paths")
    @classmethod
    def _relative_globs(cls, paths: list[str]) -> list[str]:
        return inside_repository(paths)

    @field_validator("dtypes")
    @classmethod
    def _unique_dtypes(cls, dtypes: list[str]) -> list[str]:
        for index, dtype in enumerate(dtypes):
            if dtype in dtypes[:index]:
                raise _problem(f"dtype {dtype!r} is listed twice", index)
        return dtypes

    @field_validator("shapes")
    @classmethod
    def _unique_shapes(cls, shapes: list[ServedShape]) -> list[ServedShape]:
        seen: dict[tuple[int, ...], int] = {}
        for index, shape in enumerate(shapes):
            if shape.dims in seen:
                raise _problem(
                    f"shape {list(shape.dims)} is listed twice (also shapes[{seen[shape.dims]}]); "
                    "give it one entry with a larger weight instead",
                    index,
                )
            seen[shape.dims] = index
        return shapes

    def effective_tolerance(self, policy: Policy) -> float:
        """This kernel's tolerance if it sets one, else the policy's."""
        return policy.tolerance if self.tolerance is None else self.tolerance

    def effective_rewrite_price(self, policy: Policy) -> float:
        """This kernel's rewrite price if it sets one, else the policy's, never below this
        kernel's tolerance (a rewrite is not held to less than a tuning change)."""
        if self.rewrite_price is not None:
            return self.rewrite_price
        return max(policy.rewrite_price, self.effective_tolerance(policy))

    def covers(self, path: str) -> bool:
        return covered(self.paths, path)


class AcceptedEntry(_Model):
    kernel: str = Field(
        pattern=KERNEL_NAME_RE,
        description="the name of a kernel in [[kernels]] whose slowdown is accepted",
    )
    shapes: list[list[PositiveInt]] = Field(
        default_factory=list,
        description="the shapes it accepts, a list like [[4096, 4096]]; left out, every shape",
    )
    max_ratio: Annotated[float, Field(strict=True, gt=1, allow_inf_nan=False)] | None = Field(
        default=None, description="the largest head/base time accepted, a number > 1 like 1.08"
    )
    max_percent: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="the largest slowdown accepted in percent, like 8"
    )
    owner: Annotated[str, Field(pattern=OWNER_RE)] = Field(
        description="who answers for it: '@user', '@org/team' or an email"
    )
    reason: Annotated[str, Field(min_length=1, max_length=500)] = Field(
        description="why the slowdown is worth paying, at most 500 characters"
    )
    expires: date = Field(
        description="the last day it accepts, a TOML date like 2027-03-01 (no quotes)"
    )

    @model_validator(mode="after")
    def _one_bound(self) -> AcceptedEntry:
        if (self.max_ratio is None) == (self.max_percent is None):
            raise _problem(
                "give exactly one of max_ratio (like 1.08) or max_percent (like 8)", "max_ratio"
            )
        return self

    @property
    def ratio(self) -> float:
        """The largest head/base time accepted."""
        return self.max_ratio if self.max_ratio is not None else 1 + (self.max_percent or 0) / 100


def _price_below(price: float, tolerance: float, which: str) -> str:
    """The message for a rewrite price below the tolerance it goes with."""
    return (
        f"{price:g} is below {which} {tolerance:g}: a rewrite would be held to a smaller "
        f"slowdown than a tuning change; write a rewrite_price of at least {tolerance:g} "
        f"({tolerance:g} holds rewrites to the tolerance), or leave it out"
    )


class Policy(_Model):
    tolerance: Tolerance = Field(
        default=0.03,
        description="the allowed slowdown: head/base time up to 1 + tolerance counts as the same; "
        "0 < tolerance <= 1",
    )
    rewrite_price: Tolerance = Field(
        default=DEFAULT_REWRITE_PRICE,
        description="the slowdown a rewrite (hand-written CUDA/HIP replaced by Triton) may cost "
        "at each measured shape, in return for the code it deletes: head/base time up to "
        "1 + rewrite_price; 0 < rewrite_price <= 1, at least the tolerance",
    )
    vendors: list[Vendor] = Field(
        default_factory=lambda: list(VENDORS),
        min_length=1,
        description="the vendors that must be measured, a non-empty subset of nvidia, amd",
    )
    owners: list[Annotated[str, Field(pattern=OWNER_RE)]] = Field(
        default_factory=list,
        description="who owns these kernels: GitHub handles '@user' or '@org/team', or emails",
    )
    deployment: Deployment = Field(
        description="a [deployment] table with kind (long-lived | cli | serverless | "
        "latency-slo) and first_call_budget_ms",
    )
    limits: Limits = Field(default_factory=Limits, description="a [limits] table")
    compiler: CompilerTargets = Field(
        default_factory=CompilerTargets, description="a [compiler] table"
    )
    profile: Profiling = Field(default_factory=Profiling, description="a [profile] table")
    github: GitHubSettings = Field(default_factory=GitHubSettings, description="a [github] table")
    python_path: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="folders, relative to the repository root, put on the import path before "
        'the root itself, like ["src"] for a src/ layout',
    )
    setup: Setup | None = Field(
        default=None, description="a [setup] table: the build step run in each checkout"
    )
    toolchain: Toolchain = Field(
        default_factory=Toolchain, description="a [toolchain] table: per-side environments"
    )
    kernel_decorators: list[str] = Field(
        default_factory=list,
        description="decorators (or functions called as k = name(k)) that mark a kernel in this "
        'repository, as dotted names written or imported: ["cuda.tile.kernel", "ct.kernel"]',
    )
    kernels: list[KernelPolicy] = Field(
        min_length=1, description="one [[kernels]] table per kernel to measure"
    )
    accepted: list[AcceptedEntry] = Field(
        default_factory=list,
        description="[[accepted]] tables: slowdowns the team decided to pay, each with an "
        "owner, a reason and an expiry date",
    )

    @field_validator("python_path")
    @classmethod
    def _python_path_inside(cls, folders: list[str]) -> list[str]:
        return inside_repository(folders)

    @field_validator("kernel_decorators")
    @classmethod
    def _dotted_names(cls, names: list[str]) -> list[str]:
        for index, name in enumerate(names):
            if not DOTTED_RE.match(name):
                raise _problem(
                    f"{name!r} is not a dotted name: write the decorator without '@' or "
                    'arguments, like "mylib.kernel" for @mylib.kernel(...)',
                    index,
                )
        return names

    @field_validator("vendors")
    @classmethod
    def _unique_vendors(cls, vendors: list[str]) -> list[str]:
        for index, vendor in enumerate(vendors):
            if vendor in vendors[:index]:
                raise _problem(f"vendor {vendor!r} is listed twice", index)
        return vendors

    @model_validator(mode="after")
    def _within_limits(self) -> Policy:
        found: list[tuple[tuple[str | int, ...], str]] = []
        first_index: dict[str, int] = {}
        limits = self.limits
        if "rewrite_price" in self.model_fields_set and self.rewrite_price < self.tolerance:
            found.append(
                (
                    ("rewrite_price",),
                    _price_below(
                        self.rewrite_price,
                        self.tolerance,
                        "the tolerance"
                        if "tolerance" in self.model_fields_set
                        else "the default tolerance",
                    ),
                )
            )
        for k, kernel in enumerate(self.kernels):
            own = kernel.effective_tolerance(self)
            if kernel.rewrite_price is not None and kernel.rewrite_price < own:
                which = "its tolerance" if kernel.tolerance is not None else "the tolerance"
                found.append(
                    (
                        ("kernels", k, "rewrite_price"),
                        _price_below(kernel.rewrite_price, own, which),
                    )
                )
            if kernel.name in first_index:
                found.append(
                    (
                        ("kernels", k, "name"),
                        f"kernel name {kernel.name!r} is already used by "
                        f"kernels[{first_index[kernel.name]}]; names must be unique",
                    )
                )
            first_index.setdefault(kernel.name, k)
            count = len(kernel.shapes) * len(kernel.dtypes)
            if count > limits.max_shapes:
                found.append(
                    (
                        ("kernels", k, "shapes"),
                        f"{len(kernel.shapes)} shapes x {len(kernel.dtypes)} dtypes = {count} "
                        f"measurements, over limits.max_shapes = {limits.max_shapes}; "
                        "drop shapes or dtypes, or raise limits.max_shapes",
                    )
                )
            for s, shape in enumerate(kernel.shapes):
                largest = kernel.largest_tensor(shape.dims)
                if largest > limits.max_elements_per_tensor:
                    dims = " x ".join(str(d) for d in shape.dims)
                    what = "elements" if not kernel.tensors else "elements in its largest tensor"
                    found.append(
                        (
                            ("kernels", k, "shapes", s),
                            f"{dims}: {largest:,} {what}, over "
                            f"limits.max_elements_per_tensor = {limits.max_elements_per_tensor:,}",
                        )
                    )
        for a, entry in enumerate(self.accepted):
            if entry.kernel not in first_index:
                close = difflib.get_close_matches(entry.kernel, list(first_index), n=1)
                guess = f"did you mean {close[0]!r}? " if close else ""
                found.append(
                    (
                        ("accepted", a, "kernel"),
                        f"accepted[{a}] names kernel {entry.kernel!r}, which is not in "
                        f"[[kernels]]; {guess}known kernels: {', '.join(first_index)}",
                    )
                )
        if found:
            raise _problems(found)
        return self

    def expired_acceptances(self, today: date) -> list[tuple[int, AcceptedEntry]]:
        """The ``[[accepted]]`` entries whose last day is before ``today``, with their index."""
        return [(i, e) for i, e in enumerate(self.accepted) if e.expires < today]

    def kernels_for_path(self, path: str) -> list[KernelPolicy]:
        """The kernels whose ``paths`` cover the repository-relative ``path``, in policy order."""
        return [kernel for kernel in self.kernels if kernel.covers(path)]

    def kernel(self, name: str) -> KernelPolicy:
        """The kernel called ``name``; a PolicyError naming the known kernels if there is none."""
        for kernel in self.kernels:
            if kernel.name == name:
                return kernel
        known = [kernel.name for kernel in self.kernels]
        close = difflib.get_close_matches(name, known, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise PolicyError(
            f"no kernel named {name!r} in the policy",
            hint=f"{guess}known kernels: {', '.join(known)}",
        )
