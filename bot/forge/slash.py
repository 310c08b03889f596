"""``/bench`` comment text -> BenchCommand. Pure, bounded, allowlisted; never a shell.

A comment's ``/bench`` line is found by ``bench_line`` (markdown, whatever the forge); the line
is then read by ``parse_bench`` or ``parse_accept``.

Grammar (whitespace-separated words, read as data)::

    /bench [KERNEL ...] [--kernel K[,K...]] [--vendor V[,V...]] [--shape AxB[,CxD...]]
           [--dtype D[,D...]] [quick | full] [sha=COMMIT]

``--opt=value`` works too. ``sha=COMMIT`` (the full 40 hex digits: a short prefix can be matched
by a commit made to share it) binds the approval to that commit: the gate measures it only while
it is still the pull request's head, and the timeline check applies as without it.

``/bench accept KERNEL [AxB ...] -- REASON`` accepts the slowdown the last review measured for
KERNEL (at the shapes named, else at every shape it found slower), for the reason given; it is
recorded, not run. The words before ``--`` follow the rules below; the reason is free text,
kept as data (at most 500 characters, one line). Every word is checked against a small character set before it is
read; ``$(...)``, backticks, ``;``, pipes, quotes and ``@file`` are refused with the list of
what is allowed. Kernels, vendors and dtypes must be ones the policy names; shapes are bounded
by the policy's limits, and a request over a limit is refused with its computed cost.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from bot.contracts.accept import MAX_REASON_CHARS
from bot.errors import CommandError, LimitError
from bot.escape import strip_controls
from bot.forge.types import PERMISSION_LEVELS, permission_allows

if TYPE_CHECKING:
    from bot.policy.model import Policy

MAX_LINE_CHARS = 1_000
MAX_WORDS = 40
MAX_WORD_CHARS = 200
MAX_VALUES = 64  # values in one comma list
MAX_DIMS = 8
QUICK_SHAPES = 3  # quick: the heaviest served shapes, first dtype (as bot.plan does)

# An upper bound used to refuse before anything runs, not a prediction: per case (shape x
# dtype) on one vendor, the paired base/head rounds at the sequential test's cap plus
# correctness and warm-up; per kernel, the cold and warm first-call processes and compiles.
GPU_SECONDS_PER_CASE = {"quick": 4.0, "full": 12.0}
GPU_SECONDS_PER_KERNEL = 30.0

OPTIONS = ("--kernel", "--vendor", "--shape", "--dtype")
MODES = ("quick", "full")
_WORD = re.compile(r"[A-Za-z0-9_.,=-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHAPE = re.compile(r"[0-9]{1,12}(?:x[0-9]{1,12}){0,7}")
_BENCH_LINE = re.compile(r"^ {0,3}/bench(?:[ \t]|$)")  # 4 spaces or a tab: indented code
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# The line endings of markdown (GitHub's and GitLab's); str.splitlines also breaks at U+2028,
# U+2029, U+0085, \v, \f and \x1c-\x1e, which a reader sees inside a line (a quote's, a code
# block's).
_LINE_END = re.compile(r"\r\n|\r|\n")
_FORBIDDEN = (
    ("$(", "command substitution `$(...)`"),
    ("`", "backticks"),
    (";", "`;`"),
    ("|", "pipes"),
    ("&", "`&`"),
    ("<", "redirections"),
    (">", "redirections"),
    ("$", "variables (`$`)"),
    ('"', "quotes"),
    ("'", "quotes"),
    ("\\", "backslashes"),
)

USAGE = (
    "usage: /bench [KERNEL ...] [--vendor V[,V]] [--shape AxB[,CxD]] [--dtype D[,D]] [quick|full]"
    " [sha=COMMIT], or /bench accept KERNEL [AxB ...] -- REASON"
)
ACCEPT_USAGE = "usage: /bench accept KERNEL [AxB ...] -- REASON (e.g. /bench accept softmax 4096x4096 -- one kernel instead of two)"


def bench_line(body: str) -> str | None:
    """The first line of a comment that starts with ``/bench``, stripped; None if there is none.

    Only a line of the comment's own text counts: not one in an HTML comment, a fenced or
    indented code block, or a quote (``> /bench``). Lines end where markdown ends them (``\n``,
    ``\r\n``, ``\r``), never at a Unicode line or paragraph separator a reader does not see
    as a break.
    """
    fence: str | None = None
    for line in _LINE_END.split(_HTML_COMMENT.sub("", body)):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None if not line.strip().strip(fence[0]) else fence
        elif _BENCH_LINE.match(line):
            return line.strip()[:MAX_LINE_CHARS]
    return None


class BenchCommand(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kernels: tuple[str, ...] = ()  # empty: the kernels the diff touches
    vendors: tuple[str, ...] = ()  # empty: the policy's vendors
    shapes: tuple[tuple[int, ...], ...] = ()  # empty: the policy's served shapes
    dtypes: tuple[str, ...] = ()  # empty: each kernel's dtypes
    mode: Literal["quick", "full"] = "full"
    sha: str | None = None  # the commit the commenter approved, when named (40 hex digits)

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    def canonical(self) -> str:
        """The command rebuilt from the parsed values: safe to echo, it holds only allowed words."""
        words = ["/bench", *self.kernels]
        if self.vendors:
            words.append("--vendor " + ",".join(self.vendors))
        if self.shapes:
            words.append("--shape " + ",".join("x".join(map(str, s)) for s in self.shapes))
        if self.dtypes:
            words.append("--dtype " + ",".join(self.dtypes))
        words.append(self.mode)
        if self.sha:
            words.append(f"sha={self.sha}")
        return " ".join(words)


class AcceptCommand(BaseModel):
    """``/bench accept``: accept the measured slowdown of one kernel, for a reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kernel: str
    shapes: tuple[tuple[int, ...], ...] = ()  # empty: every shape the last review found slower
    reason: str

    def canonical(self) -> str:
        """The command rebuilt from the parsed words (the reason is left out: it is free text)."""
        return " ".join(
            ["/bench accept", self.kernel, *("x".join(map(str, s)) for s in self.shapes)]
        )


class Cost(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cases_per_kernel: dict[str, int]
    vendors: int
    gpu_seconds_per_vendor: float

    @property
    def gpu_seconds_total(self) -> float:
        return self.gpu_seconds_per_vendor * self.vendors

    def describe(self) -> str:
        per = ", ".join(f"{k}: {n}" for k, n in self.cases_per_kernel.items())
        return (
            f"{sum(self.cases_per_kernel.values())} cases ({per}) on {self.vendors} vendor(s), "
            f"about {self.gpu_seconds_per_vendor:.0f} GPU-seconds per vendor "
            f"({self.gpu_seconds_total:.0f} in all)"
        )


def _refuse(message: str, policy: Policy) -> CommandError:
    allowed = (
        f"{USAGE}; kernels: {', '.join(k.name for k in policy.kernels)}; "
        f"vendors: {', '.join(policy.vendors)}; dtypes: {', '.join(_all_dtypes(policy))}; "
        "shapes like 4096x4096; modes: quick, full"
    )
    return CommandError(message, hint=allowed)


def _all_dtypes(policy: Policy) -> list[str]:
    return sorted({d for k in policy.kernels for d in k.dtypes})


def _check_word(word: str, policy: Policy) -> None:
    for needle, name in _FORBIDDEN:
        if needle in word:
            raise _refuse(
                f"/bench does not accept {name} (in {word[:40]!r}); it runs no shell", policy
            )
    if word.startswith("@"):
        raise _refuse(f"/bench does not read files ({word[:40]!r})", policy)
    if len(word) > MAX_WORD_CHARS or not _WORD.fullmatch(word):
        raise _refuse(f"{word[:40]!r} is not a word /bench understands", policy)


def _values(option: str, raw: str, policy: Policy) -> list[str]:
    values = [v for v in raw.split(",") if v]
    if not values:
        raise _refuse(f"{option} needs a value", policy)
    if len(values) > MAX_VALUES:
        raise _refuse(f"{option} takes at most {MAX_VALUES} values, got {len(values)}", policy)
    return values


def _shape(text: str, policy: Policy) -> tuple[int, ...]:
    if not _SHAPE.fullmatch(text):
        raise _refuse(
            f"shape {text[:40]!r}: write positive integers joined by x, at most {MAX_DIMS} "
            "dimensions (e.g. 1823x781)",
            policy,
        )
    dims = tuple(int(d) for d in text.split("x"))
    if any(d < 1 for d in dims):
        raise _refuse(f"shape {text}: every dimension must be at least 1", policy)
    n = math.prod(dims)
    limit = policy.limits.max_elements_per_tensor
    if n > limit:
        raise LimitError(
            f"shape {text} has {n:,} elements, over the policy's limit of {limit:,} "
            "(limits.max_elements_per_tensor)",
            hint="ask for a smaller shape; a maintainer can raise the limit in the base branch's policy",
        )
    return dims


def _commit(text: str, policy: Policy) -> str:
    sha = text.lower()
    if not _COMMIT.fullmatch(sha):
        raise _refuse(
            f"sha={text[:48]!r} is not a full commit sha: paste the full commit sha, all 40 hex "
            "digits (a short prefix can be matched by another commit)",
            policy,
        )
    return sha


def tokenize(line: str) -> list[str]:
    """The words of a ``/bench`` line after the ``/bench`` itself; bounded."""
    line = line.strip()
    if not line.startswith("/bench"):
        raise CommandError("not a /bench command", hint=USAGE)
    if len(line) > MAX_LINE_CHARS:
        raise CommandError(f"the /bench line is over {MAX_LINE_CHARS} characters", hint=USAGE)
    words = line[len("/bench") :].split()
    if len(words) > MAX_WORDS:
        raise CommandError(f"/bench takes at most {MAX_WORDS} words, got {len(words)}", hint=USAGE)
    return words


def is_accept(line: str) -> bool:
    """Whether a ``/bench`` line is ``/bench accept ...``."""
    words = line.split(None, 2)
    return len(words) >= 2 and words[0] == "/bench" and words[1] == "accept"


def parse_accept(line: str, policy: Policy) -> AcceptCommand:
    """Parse ``/bench accept KERNEL [AxB ...] -- REASON`` against the policy."""
    line = line.strip()
    if not is_accept(line):
        raise CommandError("not a /bench accept command", hint=ACCEPT_USAGE)
    if len(line) > MAX_LINE_CHARS:
        raise CommandError(
            f"the /bench line is over {MAX_LINE_CHARS} characters", hint=ACCEPT_USAGE
        )
    head, sep, reason = line[len("/bench accept") :].partition(" -- ")
    if not sep and head.rstrip().endswith(" --"):
        head, sep = head.rstrip()[:-3], "--"
    reason = " ".join(strip_controls(reason).split())
    if not sep or not reason:
        raise CommandError(
            "/bench accept needs a reason after ` -- `: say why the slowdown is worth paying",
            hint=ACCEPT_USAGE,
        )
    if len(reason) > MAX_REASON_CHARS:
        raise CommandError(
            f"the reason is {len(reason)} characters; at most {MAX_REASON_CHARS}",
            hint="say it in a sentence; link to a longer discussion",
        )
    words = head.split()
    for word in words:
        _check_word(word, policy)
    kernel_names = [k.name for k in policy.kernels]
    if not words or words[0] not in kernel_names:
        named = f"{words[0][:40]!r} is not a kernel in the policy" if words else "no kernel named"
        raise CommandError(
            f"/bench accept: {named}",
            hint=f"{ACCEPT_USAGE}; kernels: {', '.join(kernel_names)}",
        )
    if len(words) > MAX_WORDS:
        raise CommandError(f"/bench accept takes at most {MAX_WORDS} words", hint=ACCEPT_USAGE)
    shapes = _dedupe([_shape(w, policy) for w in words[1:]])
    return AcceptCommand(kernel=words[0], shapes=tuple(shapes), reason=reason)


def parse_bench(line: str, policy: Policy) -> BenchCommand:
    """Parse and check a ``/bench`` line against the policy (and its limits, for named kernels)."""
    words = tokenize(line)
    kernel_names = [k.name for k in policy.kernels]
    picked: dict[str, list[str]] = {o: [] for o in OPTIONS}
    mode: str | None = None
    sha: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        _check_word(word, policy)
        if word.startswith("sha="):
            sha = _commit(word[len("sha=") :], policy)
        elif word.startswith("-"):
            option, eq, value = word.partition("=")
            if option in ("--quick", "--full"):
                option, value, eq = "--mode", option[2:], "="
            if option not in (*OPTIONS, "--mode"):
                raise _refuse(
                    f"unknown option {option!r}; options are {', '.join(OPTIONS)}", policy
                )
            if not eq:
                if i + 1 >= len(words):
                    raise _refuse(f"{option} needs a value", policy)
                i += 1
                value = words[i]
                _check_word(value, policy)
            if option == "--mode":
                mode = value
            else:
                picked[option] += _values(option, value, policy)
        elif word in MODES:
            mode = word
        elif word in kernel_names:
            picked["--kernel"].append(word)
        else:
            raise _refuse(f"{word[:40]!r} is not a kernel in the policy, nor quick/full", policy)
        i += 1

    kernels = _dedupe(picked["--kernel"])
    for k in kernels:
        if k not in kernel_names:
            raise _refuse(f"unknown kernel {k[:40]!r}", policy)
    vendors = _dedupe(picked["--vendor"])
    for v in vendors:
        if v not in policy.vendors:
            raise _refuse(f"vendor {v[:40]!r} is not one the policy measures", policy)
    dtypes = _dedupe(picked["--dtype"])
    for d in dtypes:
        if d not in _all_dtypes(policy):
            raise _refuse(f"dtype {d[:40]!r} is not one the policy's kernels use", policy)
    shapes = _dedupe([_shape(s, policy) for s in picked["--shape"]])
    if mode is not None and mode not in MODES:
        raise _refuse(f"mode {mode[:20]!r}: use quick or full", policy)

    command = BenchCommand(
        kernels=tuple(kernels),
        vendors=tuple(vendors),
        shapes=tuple(shapes),
        dtypes=tuple(dtypes),
        mode=mode or "full",  # type: ignore[arg-type]
        sha=sha,
    )
    if kernels:
        check_request(command, policy, kernels)
    return command


def _dedupe(items: Sequence) -> list:
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def estimate(command: BenchCommand, policy: Policy, kernels: Sequence[str]) -> Cost:
    """What the command costs for these kernels (the named ones, or those the diff touches)."""
    cases: dict[str, int] = {}
    for name in kernels:
        kp = policy.kernel(name)
        n_shapes = len(command.shapes) if command.shapes else len(kp.shapes)
        n_dtypes = (
            len([d for d in kp.dtypes if d in command.dtypes]) if command.dtypes else len(kp.dtypes)
        )
        if command.quick:
            n_shapes, n_dtypes = min(n_shapes, QUICK_SHAPES), min(n_dtypes, 1)
        cases[name] = n_shapes * n_dtypes
    per_vendor = (
        sum(cases.values()) * GPU_SECONDS_PER_CASE[command.mode]
        + len(cases) * GPU_SECONDS_PER_KERNEL
    )
    vendors = len(command.vendors) if command.vendors else len(policy.vendors)
    return Cost(cases_per_kernel=cases, vendors=vendors, gpu_seconds_per_vendor=per_vendor)


def check_request(command: BenchCommand, policy: Policy, kernels: Sequence[str]) -> Cost:
    """Refuse, with the computed cost and the limit, what the policy does not allow."""
    for name in kernels:
        kp = policy.kernel(name)
        missing = [d for d in command.dtypes if d not in kp.dtypes]
        if missing:
            raise CommandError(
                f"kernel {name} is not measured in {', '.join(missing)}",
                hint=f"{name} takes dtypes: {', '.join(kp.dtypes)}",
            )
        ranks = {len(s.dims) for s in kp.shapes}
        wrong = [s for s in command.shapes if ranks and len(s) not in ranks]
        if wrong:
            raise CommandError(
                f"kernel {name} takes shapes with {' or '.join(map(str, sorted(ranks)))} "
                f"dimensions, not {'x'.join(map(str, wrong[0]))}",
                hint="served shapes: "
                + ", ".join("x".join(map(str, s.dims)) for s in kp.shapes[:8]),
            )
    cost = estimate(command, policy, kernels)
    limits = policy.limits
    over = {k: n for k, n in cost.cases_per_kernel.items() if n > limits.max_shapes}
    if over:
        raise LimitError(
            f"this asks for {cost.describe()}; "
            + ", ".join(f"{k} has {n} cases" for k, n in over.items())
            + f", over limits.max_shapes = {limits.max_shapes} per kernel",
            hint="name fewer shapes or dtypes, or use quick",
        )
    if cost.gpu_seconds_per_vendor > limits.max_gpu_seconds:
        raise LimitError(
            f"this asks for {cost.describe()}, over limits.max_gpu_seconds = "
            f"{limits.max_gpu_seconds} per run",
            hint="name fewer kernels, shapes or dtypes, or use quick",
        )
    return cost


def check_permission(login: str, role: str, policy: Policy, *, accept: bool = False) -> None:
    """Refuse a commenter whose repository role is under the policy's bar for ``/bench`` (or,
    with ``accept``, for ``/bench accept``)."""
    key = "accept_permission" if accept else "bench_permission"
    command = "/bench accept" if accept else "/bench"
    required = getattr(policy.github, key)
    if not permission_allows(role, required):
        higher = PERMISSION_LEVELS[PERMISSION_LEVELS.index(required) :]
        raise CommandError(
            f"@{login} has {role} permission on this repository; {command} needs {required} "
            f"({' or '.join(higher)})",
            hint=f"ask a maintainer to run {command}, or to lower github.{key} in the "
            "base branch's policy",
        )
