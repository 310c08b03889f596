"""A copy of the checkout's files as git sees them (tracked, and new files not ignored), for
tests that build or install kernel-review from source: a build writes into its source folder,
and the checkout's own leftovers (the editable install's ``*.egg-info``, whose file list
setuptools would reuse) must not reach the build."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.paths import ROOT


def copy_source(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    for rel in filter(None, listed.split("\0")):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest
