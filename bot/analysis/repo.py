"""Kernel-change analysis of a range between two revisions (the I/O edge).

    analyze_range(base, head, diff_text, policy) -> Analysis    any two bot.revision readers
    analyze_repo(repo, base, head, policy=None) -> Analysis     a local git repository

``analyze_range`` is the one analysis of a range: the gate on GitHub runs it over the contents
API, ``kernel-review analyze --repo`` and the local review over git. The diff's lines are
classified with whole files read from ``base`` and ``head`` where a kernel may be.

``analyze_repo`` adds what git does cheaply: the diff with rename detection, every path at base
(for pairing a Triton kernel with a C++ kernel the diff leaves alone), one ``git grep`` per side
to pick the files worth reading whole (a diff of thousands of files costs a few git calls, not
thousands), and a budget of characters read. The policy, unless given, is the one at ``base``: a
pull request cannot change the rules it is judged by.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Sequence

from bot.analysis.classify import analyze_diff
from bot.analysis.diff import ParsedDiff, parse_diff
from bot.analysis.languages import MARKER_WORDS
from bot.analysis.model import Analysis
from bot.analysis.reach.branches import VENDOR_MARKERS
from bot.analysis.text import source_kind
from bot.gitutil import diff_text as git_diff
from bot.gitutil import git, list_files
from bot.policy.load import find_policy
from bot.policy.model import Policy
from bot.revision import GitRevision, Revision

__all__ = ["analyze_diff", "analyze_range", "analyze_repo"]

# Whatever a file needs to contain for a whole read to find more than its diff lines show (a
# Python file that builds or calls a compiled op too: its switched call sites are followed).
_MARKERS = (
    r"__global__|__device__|<<<|hipLaunchKernel|cudaLaunchKernel|PYBIND11_MODULE|TORCH_LIBRARY|\]\s*\(|"
    r"autograd\.Function|CUDAExtension|CppExtension|"
    + "|".join(MARKER_WORDS)
    + "|"
    + VENDOR_MARKERS
)


def _markers(policy: Policy | None) -> str:
    """The markers, with the last names of the policy's ``kernel_decorators``."""
    names = sorted({d.rsplit(".", 1)[-1] for d in (policy.kernel_decorators if policy else ())})
    return "|".join([_MARKERS, *(re.escape(n) for n in names)])


_CPP_HEADERS = (".h", ".hpp", ".cuh", ".hh", ".inl")
_GREP_BATCH = 400
MAX_READ_CHARS = 16 * 1024 * 1024


def analyze_range(
    base: Revision,
    head: Revision,
    diff_text: str | ParsedDiff,
    policy: Policy | None,
    *,
    old_files: Sequence[str] | None = None,
    thrifty: bool = True,
) -> Analysis:
    """The kernel changes of ``diff_text`` (base to head), whole files read from the revisions.

    ``old_files``: every path at base, where the reader can list them cheaply. ``thrifty``: read
    a file whole only when its diff lines could belong to a kernel (or the policy names it);
    False when the revisions already read only the files worth reading.
    """
    parsed = diff_text if isinstance(diff_text, ParsedDiff) else parse_diff(diff_text)
    in_diff = {p for f in parsed.files for p in (f.old_path, f.new_path) if p}
    return analyze_diff(
        parsed,
        policy=policy,
        old_source=_kernel_files(base, in_diff, _markers(policy)),
        new_source=_kernel_files(head, in_diff, _markers(policy)),
        old_files=old_files,
        thrifty=thrifty,
        toolchain_source=(base.read, head.read),
        whole_source=(_whole_reader(base), _whole_reader(head)),
    )


def _whole_reader(revision: Revision) -> Callable[[str], str | None]:
    """How ``revision`` reads a file whole, for the call graph: a file of the diff with no kernel
    marker too, which the analysis's own reader leaves empty."""
    return revision.read_whole if isinstance(revision, _Grepped) else revision.read


def _kernel_files(
    revision: Revision, in_diff: set[str], markers: str
) -> Callable[[str], str | None]:
    """``revision.read``, except that a file of the diff with no kernel marker reads as empty
    (its diff lines are all it is judged by), a C++ header (``_whole_cpp``) and a package's
    ``__init__.py`` excepted: every
    reader applies the rule ``analyze_repo``'s ``git grep`` applies, so the gate and
    ``analyze --repo`` see the same texts."""

    marked = re.compile(markers)

    def read(path: str) -> str | None:
        text = revision.read(path)
        if (
            text
            and path in in_diff
            and not marked.search(text)
            and not _whole_cpp(path, text)
            and not _package_init(path)
        ):
            return ""
        return text

    return read


_CPP_HEADER_CHARS = 256 * 1024


def _package_init(path: str) -> bool:
    """A package's ``__init__.py`` of the diff is read whole though it holds no kernel marker:
    its re-exports (``from .chunk import chunk_rwkv6``) are how other modules reach the
    kernels, and such files are small."""
    return posixpath.basename(path) == "__init__.py"


def _whole_cpp(path: str, text: str | None) -> bool:
    """A C++ header of the diff is read whole though it holds no kernel marker: its types,
    macros and helpers are what the kernels that include it compile (a struct's field
    changed in ``params.h``), and headers are small."""
    return (
        source_kind(path) == "cpp"
        and path.endswith(_CPP_HEADERS)
        and (text is None or len(text) <= _CPP_HEADER_CHARS)
    )


def analyze_repo(
    repo: str | os.PathLike[str],
    base: str,
    head: str,
    *,
    policy: Policy | None = None,
    use_base_policy: bool = True,
) -> Analysis:
    base_rev = GitRevision(repo, base)
    head_rev = GitRevision(repo, head)
    parsed = parse_diff(git_diff(repo, base_rev.sha, head_rev.sha, resolved=True))
    if policy is None and use_base_policy:
        found = find_policy(base_rev)
        policy = found[0] if found is not None else None
    old_paths = [f.old_path for f in parsed.files if f.old_path and source_kind(f.old_path)]
    new_paths = [f.new_path for f in parsed.files if f.new_path and source_kind(f.new_path)]
    budget = _Budget(MAX_READ_CHARS)
    analysis = analyze_range(
        _Grepped(base_rev, old_paths, budget, _markers(policy)),
        _Grepped(head_rev, new_paths, budget, _markers(policy)),
        parsed,
        policy,
        old_files=list_files(repo, base_rev.sha),
        thrifty=False,  # git grep already chose the files worth reading
    )
    if budget.refused:
        note = (
            f"read {MAX_READ_CHARS >> 20} MiB of whole files, the most one analysis reads; "
            f"{len(set(budget.refused))} more were read from their diff lines only"
        )
        analysis = analysis.model_copy(
            update={"notes": [*analysis.notes, note], "from_context_only": True}
        )
    return analysis


def _marked(revision: GitRevision, paths: Sequence[str], markers: str) -> set[str]:
    found: set[str] = set()
    sha = revision.sha
    for i in range(0, len(paths), _GREP_BATCH):
        batch = paths[i : i + _GREP_BATCH]
        out = git(
            revision.repo,
            "--literal-pathspecs",
            "grep",
            "-l",
            "-I",
            "-E",
            markers,
            sha,
            "--",
            *batch,
            check=False,
        )
        prefix = f"{sha}:"
        found.update(line[len(prefix) :] for line in out.splitlines() if line.startswith(prefix))
    return found


class _Budget:
    """Whole files read for one analysis, in characters: past it, files are left to their diff
    lines, so a pull request touching a thousand huge files costs bounded time."""

    def __init__(self, chars: int) -> None:
        self.left = chars
        self.refused: list[str] = []


class _Grepped:
    """A git revision read within a budget. A file of the diff that ``git grep`` found no
    kernel marker in reads as empty, a C++ header (``_whole_cpp``) and a package's
    ``__init__.py`` (``_package_init``) excepted: whatever else it
    holds, no kernel, launch or binding is made of it."""

    def __init__(
        self, revision: GitRevision, diff_paths: Sequence[str], budget: _Budget, markers: str
    ) -> None:
        self.revision = revision
        self.in_diff = set(diff_paths)
        self.marked = _marked(revision, diff_paths, markers)
        self.budget = budget
        self.cache: dict[str, str | None] = {}
        # what the analysis reads whole of the diff, in one git process
        ahead = [
            p for p in diff_paths if p in self.marked or _whole_cpp(p, None) or _package_init(p)
        ]
        revision.read_ahead(ahead, budget.left)

    def _cpp(self, path: str) -> bool:
        if not _whole_cpp(path, None):
            return False
        text = self.read_whole(path)
        return text is not None and len(text) <= _CPP_HEADER_CHARS

    def read_whole(self, path: str) -> str | None:
        if path not in self.cache:
            if self.budget.left <= 0:
                self.budget.refused.append(path)
                return None
            text = self.revision.read(path)
            self.budget.left -= len(text or "")
            self.cache[path] = text
        return self.cache[path]

    @property
    def sha(self) -> str:
        return self.revision.sha

    @property
    def label(self) -> str:
        return self.revision.label

    def where(self, path: str) -> str:
        return self.revision.where(path)

    def list_dir(self, path: str) -> list[str]:
        return self.revision.list_dir(path)

    def read(self, path: str, *, max_bytes: int | None = None) -> str | None:
        if (
            path in self.in_diff
            and path not in self.marked
            and not self._cpp(path)
            and not _package_init(path)
        ):
            return ""
        if path not in self.cache and max_bytes is not None:
            if self.budget.left <= 0:
                self.budget.refused.append(path)
                return None
            text = self.revision.read(path, max_bytes=max_bytes)
            self.budget.left -= len(text or "")
            self.cache[path] = text
        return self.read_whole(path)
