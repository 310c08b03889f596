"""Kept bytecode (``checks/worker/zygote.py``'s ``keep_bytecode``), in fresh ``python -I -B``
processes (the zygote's flags) on a package written without any: the first process writes its
bytecode into the folder while it imports (and says it wrote it), a later one reads it from
there, nothing imported after ``stop_writing_bytecode`` is kept, and a package that ships its own
bytecode, or no folder (what the switch gives the zygote), leaves Python as it was; a run that
had to write it says what to do about it. A kept file changed or added between runs (as a pull
request's code could leave it) does not match the manifest written with the folder: the folder
is compiled afresh and the tampered code never runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.outputs import BYTECODE_SWITCH, bytecode_dir
from checks.sweep.zygote import _bytecode_args, bytecode_note
from checks.worker import zygote

ZYGOTE = Path(zygote.__file__).resolve()

PROGRAM = textwrap.dedent(
    """
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("zygote", sys.argv[1])
    z = importlib.util.module_from_spec(spec); spec.loader.exec_module(z)
    sys.path.insert(0, sys.argv[2])
    came = z.keep_bytecode(sys.argv[3] or None, "toolpkg")
    import toolpkg
    z.stop_writing_bytecode()
    import checkout_code
    print(json.dumps({"came": came, "prefix": sys.pycache_prefix,
                      "cached": toolpkg.__cached__, "value": toolpkg.VALUE + checkout_code.VALUE}))
    """
)


def _tree(root: Path) -> Path:
    src = root / "src"
    (src / "toolpkg").mkdir(parents=True)
    (src / "toolpkg" / "__init__.py").write_text("from toolpkg.part import VALUE\n")
    (src / "toolpkg" / "part.py").write_text("VALUE = 40\n")
    (src / "checkout_code.py").write_text("VALUE = 2\n")
    return src


def _run(src: Path, folder: Path | None) -> dict[str, object]:
    p = subprocess.run(
        [
            sys.executable,
            "-I",
            "-B",
            "-c",
            PROGRAM,
            str(ZYGOTE),
            str(src),
            str(folder or ""),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def _kept(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.pyc"))


def test_the_first_process_writes_the_toolchains_bytecode_and_a_later_one_reads_it(
    tmp_path: Path,
) -> None:
    src, folder = _tree(tmp_path), tmp_path / "kept"
    first = _run(src, folder)
    assert first["came"] == "written" and first["prefix"] == str(folder) and first["value"] == 42
    tag = sys.implementation.cache_tag
    # the package's modules, kept in a tree that mirrors their paths; the checkout's module,
    # imported after stop_writing, is not; nothing beside the sources
    assert _kept(folder) == [f"__init__.{tag}.pyc", f"part.{tag}.pyc"]
    assert str(first["cached"]).startswith(str(folder))
    assert not list(src.rglob("__pycache__"))
    assert (folder.stat().st_mode & 0o777) == 0o700
    written = {p: p.stat().st_mtime_ns for p in folder.rglob("*.pyc")}
    second = _run(src, folder)
    assert second["came"] == "kept" and second["value"] == 42
    # read, not written again
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.pyc")} == written
    # a changed source is compiled again: Python checks each kept file against its source
    (src / "toolpkg" / "part.py").write_text("VALUE = 41  # changed\n")
    changed = _run(src, folder)
    assert changed["value"] == 43 and changed["came"] == "kept"  # that file alone, again


def test_a_package_with_its_own_bytecode_the_switch_and_no_folder_leave_python_as_it_was(
    tmp_path: Path,
) -> None:
    src, folder = _tree(tmp_path), tmp_path / "kept"
    off = _run(src, None)
    assert off["came"] == "off" and off["prefix"] is None
    assert not folder.exists()
    # the package compiled beside its sources, as pip installs it
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "toolpkg")], check=True)
    installed = _run(src, folder)
    assert installed["came"] == "installed" and installed["prefix"] is None
    assert str(installed["cached"]).startswith(str(src))
    assert not folder.exists()


def test_the_switch_gives_the_zygote_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path))
    assert bytecode_dir() == tmp_path / "bytecode"
    assert _bytecode_args() == ["--bytecode-dir", str(tmp_path / "bytecode")]
    monkeypatch.setenv(BYTECODE_SWITCH, "0")
    assert bytecode_dir() is None and _bytecode_args() == []


def test_a_run_that_had_to_write_the_bytecode_says_what_to_do_about_it() -> None:
    note = bytecode_note("written")
    assert "no compiled bytecode" in note and "docs/repository-settings.md" in note
    for came in ("kept", "installed", "off", "absent", ""):
        assert bytecode_note(came) == ""


def test_ships_bytecode_says_none_for_a_module_that_is_not_python_source() -> None:
    assert zygote.ships_bytecode("no_such_module_here") is None
    assert zygote.ships_bytecode("sys") is None  # built in
    assert zygote.ships_bytecode("json") in (True, False)


def _tampered(pyc: Path, source: Path, text: str) -> None:
    """Rewrite ``pyc`` with the code of ``text`` under its own header, which Python checks
    against the source's time and size only: as a pull request's code could leave it."""
    import marshal

    header = pyc.read_bytes()[:16]
    pyc.write_bytes(header + marshal.dumps(compile(text, str(source), "exec")))


def test_kept_bytecode_changed_between_runs_is_refused_and_compiled_afresh(
    tmp_path: Path,
) -> None:
    src, folder = _tree(tmp_path), tmp_path / "kept"
    marker = tmp_path / "tampered-code-ran"
    assert _run(src, folder)["came"] == "written"
    tag = sys.implementation.cache_tag
    [part] = folder.rglob(f"part.{tag}.pyc")
    payload = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran'); VALUE = 1040\n"
    _tampered(part, src / "toolpkg" / "part.py", payload)
    second = _run(src, folder)
    assert not marker.exists(), "the tampered bytecode was imported"
    assert second["value"] == 42
    came = str(second["came"])
    assert came.startswith("rebuilt: ") and f"part.{tag}.pyc" in came, came
    note = bytecode_note(came)
    assert "did not match" in note and "nothing of it was imported" in note
    assert "docs/repository-settings.md" in note
    # compiled afresh and trusted again: the next run keeps it
    third = _run(src, folder)
    assert third["came"] == "kept" and third["value"] == 42


def test_bytecode_planted_beside_the_kept_files_is_refused(tmp_path: Path) -> None:
    """A ``.pyc`` for a module the first run never imported (one a later worker would) is no
    file trusted code wrote: the folder is compiled afresh."""
    src, folder = _tree(tmp_path), tmp_path / "kept"
    assert _run(src, folder)["came"] == "written"
    [init] = folder.rglob("__init__.*.pyc")
    planted = init.parent / init.name.replace("__init__", "extra")
    planted.write_bytes(init.read_bytes())
    came = str(_run(src, folder)["came"])
    assert came.startswith("rebuilt: ") and planted.name in came, came
    assert not planted.exists()
