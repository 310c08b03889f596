"""Unified diff text -> plain per-file records (paths, status, hunks with line numbers).

Parsing is done by ``unidiff``; this module bounds it (a cap on the whole diff and on each
file's part of it), locates its errors (``DiffError`` says which line of the diff and what was
expected there), and converts its objects into frozen records that carry no parser state:

    FilePatch(old_path, new_path, status, binary, old_mode, new_mode, hunks, ...)
    Hunk(old_start, old_count, new_start, new_count, section, removed, added, context)

Line texts never keep their line ending, so a diff of CRLF files reads like any other. A diff
whose own lines end in CRLF (saved on Windows) is read too.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Iterator
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from bot.contracts.base import Frozen
from bot.errors import DiffError

MAX_DIFF_BYTES = 50 * 1024 * 1024
MAX_FILE_DIFF_BYTES = 2 * 1024 * 1024

FileStatus = Literal["added", "deleted", "modified", "renamed", "copied"]

_GIT_HEADER = re.compile(r"^diff --git ", re.M)
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_PREFIX = re.compile(r"^[abciow12]/")
_HINT = (
    "pass a complete unified diff as `git diff` prints it; a hand-edited diff often has "
    "hunk line counts (@@ -a,b +c,d @@) that no longer match its lines"
)


class Hunk(Frozen):
    """One ``@@`` hunk. Line numbers are 1-based in the old and new file respectively."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str = ""
    removed: tuple[tuple[int, str], ...] = ()
    added: tuple[tuple[int, str], ...] = ()
    context: tuple[tuple[int, int, str], ...] = ()

    def old_lines(self) -> list[tuple[int, str]]:
        """The old file's lines this hunk shows (context and removed), in order."""
        return sorted([(o, t) for o, _, t in self.context] + list(self.removed))

    def new_lines(self) -> list[tuple[int, str]]:
        """The new file's lines this hunk shows (context and added), in order."""
        return sorted([(n, t) for _, n, t in self.context] + list(self.added))


class SkippedFile(Frozen):
    path: str
    reason: str


class FilePatch(Frozen):
    old_path: str | None
    new_path: str | None
    status: FileStatus
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    similarity_pct: int | None = None
    hunks: tuple[Hunk, ...] = ()
    crlf: bool = False
    diff_line: int = 1

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def mode_only(self) -> bool:
        return (
            not self.binary
            and not self.hunks
            and self.status == "modified"
            and self.old_mode != self.new_mode
        )

    def removed_lines(self) -> list[tuple[int, str]]:
        return [line for h in self.hunks for line in h.removed]

    def added_lines(self) -> list[tuple[int, str]]:
        return [line for h in self.hunks for line in h.added]


class ParsedDiff(Frozen):
    files: tuple[FilePatch, ...]
    skipped: tuple[SkippedFile, ...] = ()


def parse_diff(
    text: str,
    *,
    max_bytes: int = MAX_DIFF_BYTES,
    max_file_bytes: int = MAX_FILE_DIFF_BYTES,
) -> ParsedDiff:
    """Parse unified diff text. Raises DiffError for a diff that is too big or malformed."""
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > max_bytes else len(text)
    if size > max_bytes:
        raise DiffError(
            f"the diff is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB cap",
            hint="review a smaller range of commits, or split the pull request",
        )
    first_line_end = text.find("\n")
    if first_line_end > 0 and text[first_line_end - 1] == "\r":
        text = text.replace("\r\n", "\n")  # the diff itself was saved with CRLF line endings
    files: list[FilePatch] = []
    skipped: list[SkippedFile] = []
    # Files under the per-file cap are parsed together, in runs between the skipped ones.
    runs: list[tuple[int, list[str]]] = []
    run_open = False
    for start_line, chunk in _chunks(text):
        if chunk.startswith("diff --git ") and len(chunk) > max_file_bytes:
            path = _header_path(chunk) or chunk.split("\n", 1)[0][len("diff --git ") :]
            skipped.append(SkippedFile(path=path, reason=_too_big(len(chunk), max_file_bytes)))
            run_open = False
            continue
        if not run_open:
            runs.append((start_line, []))
            run_open = True
        runs[-1][1].append(chunk)
    for start_line, chunks in runs:
        run = "".join(chunks)
        for patch in _parse_run(run, start_line, run.startswith("diff --git ")):
            size = sum(len(t) + 2 for h in patch.hunks for _, t in (*h.removed, *h.added))
            if size > max_file_bytes:  # a plain (non-git) diff is only split after parsing
                skipped.append(SkippedFile(path=patch.path, reason=_too_big(size, max_file_bytes)))
            else:
                files.append(patch)
    if not files and not skipped:
        _refuse_non_diff(text)
    return ParsedDiff(files=tuple(files), skipped=tuple(skipped))


def _too_big(size: int, cap: int) -> str:
    return f"its diff is {size / 2**20:.1f} MiB, over the {cap / 2**20:.0f} MiB per-file cap"


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """Split at ``diff --git`` lines (one chunk per file); a plain diff is one chunk."""
    starts = [m.start() for m in _GIT_HEADER.finditer(text)]
    if not starts:
        yield 1, text
        return
    line = 1 + text.count("\n", 0, starts[0])
    bounds = [*starts, len(text)]
    for begin, end in itertools.pairwise(bounds):
        chunk = text[begin:end]
        yield line, chunk
        line += chunk.count("\n")


class _Lines:
    """Feeds lines to unidiff and remembers where it is, so errors can name the line."""

    def __init__(self, chunk: str, first_line: int) -> None:
        self.chunk = chunk
        self.line_no = first_line - 1
        self.hunk_header: tuple[int, str] | None = None

    def __iter__(self) -> Iterator[str]:
        for line in io.StringIO(self.chunk):
            self.line_no += 1
            if line.startswith("@@ "):
                self.hunk_header = (self.line_no, line.rstrip("\r\n"))
            yield line


def _parse_run(text: str, first_line: int, git_style: bool) -> list[FilePatch]:
    lines = _Lines(text, first_line)
    try:
        patch_set = PatchSet(lines)
    except UnidiffParseError as exc:
        raise _located(str(exc), lines) from None
    return [
        _convert(patched, git_style, first_line - 1 + (patched.diff_line_no or 1))
        for patched in patch_set
    ]


def _located(message: str, lines: _Lines) -> DiffError:
    where = f"diff line {lines.line_no}"
    hunk = ""
    if lines.hunk_header:
        at, header = lines.hunk_header
        m = _HUNK_HEADER.match(header)
        counts = ""
        if m:
            old_n = m.group(2) if m.group(2) is not None else "1"
            new_n = m.group(4) if m.group(4) is not None else "1"
            counts = f", which promises {old_n} old and {new_n} new lines"
        hunk = f"the hunk `{header}` at diff line {at}{counts}"
    if message.startswith("Hunk is shorter"):
        text = f"{where}: {hunk} ends early: expected more ' ', '-' or '+' lines"
    elif message.startswith("Hunk is longer"):
        text = f"{where}: {hunk} has more lines than its header counts"
    elif message.startswith("Hunk diff line expected"):
        found = message.split(":", 1)[1].strip()
        text = (
            f"{where}: expected a hunk line starting with ' ', '-', '+' or '\\' "
            f"(inside {hunk}), found {found[:80]!r}"
        )
    elif message.startswith("Unexpected hunk found"):
        text = f"{where}: a hunk header `@@ ... @@` before any file header ('--- a/...' and '+++ b/...')"
    elif message.startswith("Target without source"):
        text = f"{where}: a '+++' file header with no '---' header right before it"
    else:
        text = f"{where}: {message}"
    return DiffError(f"malformed diff: {text}", hint=_HINT)


def _refuse_non_diff(text: str) -> None:
    for number, line in enumerate(io.StringIO(text), 1):
        if line.strip():
            raise DiffError(
                f"not a unified diff: diff line {number}: expected a file header "
                f"('diff --git a/... b/...' or '--- a/...'), found {line.strip()[:80]!r}",
                hint="pass the output of `git diff BASE HEAD` (or `--repo` with --base/--head)",
            )


def _unquote(path: str) -> str:
    """Git quotes unusual paths C-style: ``"a/t\\303\\251st.py"``."""
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        try:
            return raw.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return raw
    return path


def _strip_prefix(path: str | None, git_style: bool) -> str | None:
    if path is None or path == "/dev/null":
        return None
    path = _unquote(path)
    if git_style and _PREFIX.match(path):
        return path[2:]
    if not git_style and path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def _header_path(chunk: str) -> str | None:
    """The path of ``diff --git a/P b/P`` (same path on both sides), else None."""
    first = chunk.split("\n", 1)[0].rstrip("\r")
    if not first.startswith("diff --git "):
        return None
    rest = first[len("diff --git ") :]
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        left, right = _unquote(rest[:half]), _unquote(rest[half + 1 :])
        if _PREFIX.match(left) and _PREFIX.match(right) and left[2:] == right[2:]:
            return left[2:]
    return None


def _info_value(info: list[str], key: str) -> str | None:
    for line in info:
        if line.startswith(key):
            return line[len(key) :].rstrip("\r\n")
    return None


def _convert(patched, git_style: bool, diff_line: int) -> FilePatch:
    info = list(patched.patch_info or [])
    old = _strip_prefix(patched.source_file, git_style)
    new = _strip_prefix(patched.target_file, git_style)
    rename_from = _info_value(info, "rename from ")
    rename_to = _info_value(info, "rename to ")
    copy_from = _info_value(info, "copy from ")
    copy_to = _info_value(info, "copy to ")
    similarity = _info_value(info, "similarity index ")
    status: FileStatus
    if rename_from is not None and rename_to is not None:
        status, old, new = "renamed", _unquote(rename_from), _unquote(rename_to)
    elif copy_from is not None and copy_to is not None:
        status, old, new = "copied", _unquote(copy_from), _unquote(copy_to)
    elif old is None:
        status = "added"
    elif new is None:
        status = "deleted"
    elif old != new:
        status = "renamed"
    else:
        status = "modified"
    if git_style and old is not None and new is not None and status == "modified":
        header = _header_path(info[0]) if info else None  # exact even with spaces in the path
        if header:
            old = new = header
    hunks: list[Hunk] = []
    crlf = False
    for h in patched:
        removed: list[tuple[int, str]] = []
        added: list[tuple[int, str]] = []
        context: list[tuple[int, int, str]] = []
        for line in h:
            value = line.value
            if value.endswith("\n"):
                value = value[:-1]
            if value.endswith("\r"):
                value = value[:-1]
                crlf = True
            kind = line.line_type
            if kind == "-":
                removed.append((line.source_line_no, value))
            elif kind == "+":
                added.append((line.target_line_no, value))
            elif kind == " ":
                context.append((line.source_line_no, line.target_line_no, value))
        hunks.append(
            Hunk.model_construct(
                old_start=h.source_start,
                old_count=h.source_length,
                new_start=h.target_start,
                new_count=h.target_length,
                section=(h.section_header or "").rstrip("\r"),
                removed=tuple(removed),
                added=tuple(added),
                context=tuple(context),
            )
        )
    return FilePatch(
        old_path=None if status == "added" else old,
        new_path=None if status == "deleted" else new,
        status=status,
        binary=bool(patched.is_binary_file),
        old_mode=patched.source_mode,
        new_mode=patched.target_mode,
        similarity_pct=int(similarity.rstrip("%")) if similarity else None,
        hunks=tuple(hunks),
        crlf=crlf,
        diff_line=diff_line,
    )


def whole_text_from_diff(patch: FilePatch, side: str) -> str | None:
    """An added (new side) or deleted (old side) file is whole in its diff."""
    if len(patch.hunks) != 1:
        return None
    h = patch.hunks[0]
    if side == "new" and patch.status == "added" and h.old_count == 0:
        lines = [t for _, t in h.added]
        return "\n".join(lines) + "\n" if len(lines) == h.new_count else None
    if side == "old" and patch.status == "deleted" and h.new_count == 0:
        lines = [t for _, t in h.removed]
        return "\n".join(lines) + "\n" if len(lines) == h.old_count else None
    return None
