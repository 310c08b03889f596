"""Whether a kernel a bench entry launched is the checkout's own, by its name.

The launch record (``launches``) names every kernel a call ran. A kernel of the vendor's language
that no source file of the checkout spells came from elsewhere: torch's own, where its name keeps
none of torch's namespaces (torch.arange runs ``(anonymous namespace)::elementwise_kernel_with_index``,
which is ``elementwise_kernel_with_index`` once the anonymous namespace is dropped: torchmd-net's
neighbor lists on the H100, 2026-12-05, where the review listed it as each side's own CUDA
kernel), or an installed package's (a bench entry calling a library built elsewhere). The review
lists those as library kernels, never as the repository's. A kernel is the checkout's own where
its name's last component is a word of one of its sources (C, C++, CUDA, HIP, and Python, which
may hold a kernel's source in a string: ``load_inline``, ``RawKernel``). Standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

SUFFIXES = frozenset(
    {".cu", ".cuh", ".hip", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".inl", ".py"}
)
MAX_FILE_BYTES = 4 << 20  # a larger file is generated or vendored data, not read
MAX_BYTES = 256 << 20  # of a checkout's sources in all


class Sources:
    """A checkout's sources, read once when first asked (``spells``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._texts: list[str] | None = None
        self._known: dict[str, bool | None] = {}

    def spells(self, name: str) -> bool | None:
        """Whether a source of the checkout has ``name``'s last component (``ns::k`` -> ``k``)
        as a word; None where no source could be read (nothing to tell by)."""
        last = name.rsplit("::", 1)[-1].strip()
        if last not in self._known:
            texts = self._read()
            if not texts or not last:
                self._known[last] = None
            else:
                word = re.compile(rf"(?<!\w){re.escape(last)}(?!\w)")
                self._known[last] = any(last in t and word.search(t) for t in texts)
        return self._known[last]

    def _read(self) -> list[str]:
        if self._texts is None:
            self._texts, total = [], 0
            for path in _files(self.root):
                try:
                    if path.stat().st_size > MAX_FILE_BYTES:
                        continue
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                total += len(text)
                if total > MAX_BYTES:
                    break
                self._texts.append(text)
        return self._texts


def _files(root: Path) -> list[Path]:
    """The checkout's source files: those git tracks or would (a working tree's new file not
    added yet; not what it ignores, a build's output), else every file under ``root`` (hidden
    folders left out)."""
    try:
        listed = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout.decode("utf-8", "replace")
        names = [n for n in listed.split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            names += [os.path.relpath(os.path.join(folder, f), root) for f in files]
    return [root / n for n in names if Path(n).suffix.lower() in SUFFIXES]
