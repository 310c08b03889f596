"""scripts/release-version: a release tag names the version bot/__init__.py writes, and
CHANGELOG.md has a dated section for it; anything else is refused with what to change."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bot
from tests.paths import ROOT

SCRIPT = ROOT / "scripts" / "release-version"


def _check(tag: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), tag, str(root)], capture_output=True, text=True, timeout=60
    )


def _release_tree(tmp_path: Path, changelog: str) -> Path:
    (tmp_path / "bot").mkdir(parents=True)
    shutil.copy(ROOT / "bot" / "__init__.py", tmp_path / "bot" / "__init__.py")
    (tmp_path / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    return tmp_path


def test_a_tag_of_the_codes_version_with_a_dated_section_is_released(tmp_path: Path) -> None:
    v = bot.__version__
    root = _release_tree(tmp_path, f"# Changelog\n\n## [Unreleased]\n\n## [{v}] - 2027-01-15\n")
    done = _check(f"v{v}", root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{v}\n"


def test_a_tag_of_another_version_is_refused_with_what_to_change() -> None:
    done = _check("v99.0.0")
    assert done.returncode == 1
    assert f"does not name the version the code says ({bot.__version__})" in done.stderr
    assert "__version__ in bot/__init__.py" in done.stderr
    assert _check(bot.__version__).returncode == 1  # the tag is v and the version


def test_an_undated_or_missing_changelog_section_is_refused(tmp_path: Path) -> None:
    v = bot.__version__
    undated = _release_tree(tmp_path / "undated", f"# Changelog\n\n## [{v}] - unreleased\n")
    done = _check(f"v{v}", undated)
    assert done.returncode == 1 and "give it the release's date" in done.stderr
    root = _release_tree(tmp_path / "missing", "# Changelog\n\n## [0.0.1] - 2020-01-01\n")
    missing = _check(f"v{v}", root)
    assert missing.returncode == 1 and f"no section '## [{v}] - YYYY-MM-DD'" in missing.stderr


def test_the_workflows_pin_kernel_review_to_a_commit_of_its_own_history() -> None:
    refs = {
        ref
        for path in (ROOT / "docs" / "workflows").glob("*.yml")
        for ref in re.findall(r"uses: kernel-review/kernel-review@([0-9a-f]{40})", path.read_text())
    }
    assert refs, "docs/workflows use the kernel-review action"
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    if shallow == "true":
        pytest.skip("a shallow clone: the pinned commit may be older than its history")
    for ref in refs:
        found = subprocess.run(
            ["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True
        )
        assert found.returncode == 0, f"kernel-review@{ref} is no commit of this repository"
