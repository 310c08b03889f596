"""A checkout's pin files are read as untrusted files: regular files inside the checkout only,
and bounded, so a ``requirements.txt`` that is a link to ``/dev/zero``, a pipe or a huge file
cannot hang or exhaust the process that reads them."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.errors import ToolchainError
from bot.toolchain.pins import MAX_PIN_FILE_BYTES
from checks.toolchain_env import side_requirements

# side_requirements in a child with its memory and time bounded, so that reading without a bound
# fails that child instead of the test run
_CHILD = textwrap.dedent(
    """
    import sys
    from bot.errors import ToolchainError
    from checks.toolchain_env import side_requirements
    try:
        print("pins:", side_requirements(__import__("pathlib").Path(sys.argv[1])))
    except ToolchainError as exc:
        print("refused:", exc)
    """
)


def _bounded_child(tree: Path) -> str:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_pin_file_that_is_a_device_or_a_pipe_is_refused_at_once(tmp_path: Path, kind) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    if kind == "dev-zero":
        (tree / "requirements.txt").symlink_to("/dev/zero")
    else:
        os.mkfifo(tree / "requirements.txt")
    out = _bounded_child(tree)
    assert out.startswith("refused:") and "requirements.txt" in out
    assert "not a regular file" in out and "hint:" in out


def test_a_link_out_of_the_checkout_is_refused_and_one_inside_is_read(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "requirements").mkdir(parents=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("triton==3.4.0\n")
    (tree / "requirements.txt").symlink_to(outside)
    with pytest.raises(ToolchainError, match=r"requirements\.txt.*not a regular file"):
        side_requirements(tree)
    (tree / "requirements.txt").unlink()
    (tree / "requirements" / "base.txt").write_text("triton==3.5.1\n")
    (tree / "requirements.txt").symlink_to("requirements/base.txt")
    assert side_requirements(tree) == ["triton==3.5.1"]


def test_a_pin_file_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    with open(tree / "requirements.txt", "w") as f:
        f.write("triton==3.5.1\n")
        f.truncate(MAX_PIN_FILE_BYTES + 1)
    with pytest.raises(ToolchainError) as err:
        side_requirements(tree)
    assert "requirements.txt" in err.value.message
    assert f"{MAX_PIN_FILE_BYTES:,}" in err.value.message
